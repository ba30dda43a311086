use tool_runtime::prelude::*;

/// Counts.
#[tool]
fn count(
    /// How many.
    #[arg(length(max = 10))]
    n: u32,
) -> String {
    n.to_string()
}

fn main() {}
