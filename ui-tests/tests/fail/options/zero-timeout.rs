use tool_runtime::prelude::*;

/// Reads a file.
#[tool(timeout_ms = 0)]
async fn read(path: String) -> String {
    path
}

fn main() {}
