use tool_runtime::prelude::*;

/// Names.
#[tool]
fn name(
    /// The name.
    #[arg(length(min = 8, max = 2))]
    name: String,
) -> String {
    name
}

fn main() {}
