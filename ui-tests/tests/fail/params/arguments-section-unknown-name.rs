use tool_runtime::prelude::*;

/// Reads a file.
///
/// # Arguments
///
/// * `file_path` - The path.
#[tool]
fn read(path: String) -> String {
    path
}

fn main() {}
