use tool_runtime::prelude::*;

/// Lists entries.
#[tool]
fn list(#[arg(defualt)] limit: u32) -> String {
    limit.to_string()
}

fn main() {}
