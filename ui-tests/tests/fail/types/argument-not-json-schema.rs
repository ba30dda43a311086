use serde::Deserialize;
use tool_runtime::prelude::*;

#[derive(Deserialize)]
struct Undescribed {
    id: u32,
}

/// Takes something without a schema.
#[tool]
fn take(
    /// The value.
    value: Undescribed,
) -> String {
    value.id.to_string()
}

fn main() {}
