use tool_runtime::prelude::*;

/// Names in either case.
#[tool]
fn name(
    /// The name.
    #[arg(pattern = "(?i)^[a-z]+$")]
    name: String,
) -> String {
    name
}

fn main() {}
