use tool_runtime::prelude::*;

/// Reads a file.
#[tool(name = "read file")]
fn read(path: String) -> String {
    path
}

fn main() {}
