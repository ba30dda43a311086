use tool_runtime::prelude::*;

#[derive(Debug)]
struct Silent;

/// Fails without a message.
#[tool]
fn fail() -> Result<String, Silent> {
    Err(Silent)
}

fn main() {}
