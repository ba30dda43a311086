use tool_runtime::prelude::*;

/// Reads a file.
#[tool(name = read_file)]
fn read(path: String) -> String {
    path
}

fn main() {}
