use tool_runtime::prelude::*;

/// Reads raw memory.
#[tool]
unsafe fn peek(address: usize) -> String {
    address.to_string()
}

fn main() {}
