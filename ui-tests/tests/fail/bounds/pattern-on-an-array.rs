use tool_runtime::prelude::*;

/// Tags.
#[tool]
fn tag(
    /// The tags.
    #[arg(pattern = "^[a-z]+$")]
    tags: Vec<String>,
) -> String {
    tags.join(",")
}

fn main() {}
