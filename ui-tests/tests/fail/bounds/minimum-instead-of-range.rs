use tool_runtime::prelude::*;

/// Lists.
#[tool]
fn list(
    /// How many.
    #[arg(minimum = 1)]
    limit: u32,
) -> String {
    limit.to_string()
}

fn main() {}
