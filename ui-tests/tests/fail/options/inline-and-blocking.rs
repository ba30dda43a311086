use tool_runtime::prelude::*;

/// Counts the lines of a text.
#[tool(inline, blocking)]
fn count_lines(text: String) -> usize {
    text.lines().count()
}

fn main() {}
