use std::path::Path;

use tool_runtime::prelude::*;

/// Reads a file.
#[tool]
fn read(
    /// The file.
    path: &Path,
) -> String {
    path.display().to_string()
}

fn main() {}
