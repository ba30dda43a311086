use schemars::JsonSchema;
use tool_runtime::prelude::*;

#[derive(JsonSchema)]
struct Opaque;

/// Takes something a model cannot send.
#[tool]
fn take(
    /// The value.
    value: Opaque,
) -> String {
    let _ = value;
    String::new()
}

fn main() {}
