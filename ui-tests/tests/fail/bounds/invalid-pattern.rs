use tool_runtime::prelude::*;

/// Names.
#[tool]
fn name(
    /// The name.
    #[arg(pattern = "^[a-z+$")]
    name: String,
) -> String {
    name
}

fn main() {}
