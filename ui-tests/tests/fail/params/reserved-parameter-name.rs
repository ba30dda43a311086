use tool_runtime::prelude::*;

/// Echoes.
#[tool]
fn echo(__ctx: String) -> String {
    __ctx
}

fn main() {}
