use tool_runtime::prelude::*;

/// Edits a file.
#[tool(resource = 3)]
async fn edit(file_path: String) -> String {
    file_path
}

fn main() {}
