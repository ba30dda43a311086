use tool_runtime::prelude::*;

const MAX: u32 = 10;

/// Lists.
#[tool]
fn list(
    /// How many.
    #[arg(range(max = MAX))]
    limit: u32,
) -> String {
    limit.to_string()
}

fn main() {}
