use tool_runtime::prelude::*;

/// Lists.
#[tool]
fn list(
    /// How many.
    #[arg(range(min = 100, max = 10))]
    limit: u32,
) -> String {
    limit.to_string()
}

fn main() {}
