use tool_runtime::prelude::*;

/// Adds a pair.
#[tool]
fn add((a, b): (i64, i64)) -> String {
    (a + b).to_string()
}

fn main() {}
