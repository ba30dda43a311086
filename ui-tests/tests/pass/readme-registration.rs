//! An example of tool-runtime's "Defining tools" (`tool-runtime/docs/defining-tools.md`), as
//! written there, and checks of what it defines.

use tool_runtime::prelude::*;

/// Add two integers.
#[tool]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> String {
    (a + b).to_string()
}

fn registry() -> Registry {
    // `add::TOOL` is the `&'static ToolSpec` that `#[tool]` generates beside the function.
    Registry::builder().tool(add::TOOL).build().expect("tool names are unique")
}

fn main() {
    assert_eq!(registry().names().collect::<Vec<_>>(), ["add"]);
}
