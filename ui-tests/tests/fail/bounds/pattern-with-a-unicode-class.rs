use tool_runtime::prelude::*;

/// Names in any script.
#[tool]
fn name(
    /// The name.
    #[arg(pattern = "^\\p{L}+$")]
    name: String,
) -> String {
    name
}

fn main() {}
