use tool_runtime::prelude::*;

/// Sends a message.
#[tool(resource, concurrency = 2)]
async fn send(text: String) -> String {
    text
}

fn main() {}
