use tool_runtime::prelude::*;

/// Lists entries.
#[tool]
fn list(#[arg(default)] limit: Option<u32>) -> String {
    format!("{limit:?}")
}

fn main() {}
