use tool_runtime::prelude::*;

#[tool]
fn mystery(input: String) -> String {
    input
}

fn main() {}
