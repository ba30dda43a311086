use tool_runtime::prelude::*;

/// Hashes a file.
#[tool(inline)]
async fn hash(path: String) -> String {
    path
}

fn main() {}
