use tool_runtime::prelude::*;

/// Counts the lines of a text.
#[tool(inline, timeout_ms = 500)]
fn count_lines(text: String) -> usize {
    text.lines().count()
}

fn main() {}
