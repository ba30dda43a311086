use tool_runtime::prelude::*;

/// Reads a file.
#[tool(name = "read", name = "open")]
fn read(path: String) -> String {
    path
}

fn main() {}
