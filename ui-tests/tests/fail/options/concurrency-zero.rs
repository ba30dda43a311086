use tool_runtime::prelude::*;

/// Sends a message.
#[tool(concurrency = 0)]
async fn send(text: String) -> String {
    text
}

fn main() {}
