use tool_runtime::prelude::*;

/// Reads the name.
#[tool]
fn name(#[depends] name: String) -> String {
    name
}

fn main() {}
