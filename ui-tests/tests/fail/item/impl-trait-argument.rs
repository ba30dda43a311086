use tool_runtime::prelude::*;

/// Echoes anything.
#[tool]
fn echo(value: impl ToString) -> String {
    value.to_string()
}

fn main() {}
