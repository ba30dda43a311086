use tool_runtime::prelude::*;

/// Greets.
#[tool]
fn greet(
    /// Who.
    #[arg(range(min = 1, max = 10))]
    name: String,
) -> String {
    name
}

fn main() {}
