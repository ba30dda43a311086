use tool_runtime::prelude::*;

/// Reads a file.
#[tool(readonly)]
fn read(path: String) -> String {
    path
}

fn main() {}
