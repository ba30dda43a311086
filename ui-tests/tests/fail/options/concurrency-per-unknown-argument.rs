use tool_runtime::prelude::*;

/// Sends a message.
#[tool(concurrency(limit = 1, per = "user"))]
async fn send(text: String) -> String {
    text
}

fn main() {}
