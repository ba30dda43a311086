use std::path::Path;

use tool_runtime::prelude::*;

/// Counts files.
#[tool]
async fn count(
    /// The files.
    paths: Vec<(&Path, [&[u8]; 2])>,
) -> String {
    paths.len().to_string()
}

fn main() {}
