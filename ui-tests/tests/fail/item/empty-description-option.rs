use tool_runtime::prelude::*;

#[tool(description = "  ")]
fn mystery(input: String) -> String {
    input
}

fn main() {}
