//! An example of tool-runtime's "Defining tools" (`tool-runtime/docs/defining-tools.md`), as
//! written there, run.

use tool_runtime::prelude::*;

/// Check a deploy token.
#[tool]
fn check_token(
    /// The deploy token.
    token: Secret<String>,
) -> String {
    if token.expose().starts_with("dt_") { format!("token {} accepted", token.expose()) } else { "refused".to_owned() }
}

async fn check() {
    let registry = Registry::builder().tool(check_token::TOOL).build().unwrap();
    let call = ToolCall::new("c1", "check_token", r#"{"token":"dt_4f9a"}"#);
    let message = registry.call(&call, &ToolContext::new()).await;
    assert_eq!(message.text(), "token [redacted] accepted"); // the result never carries the value
}

fn main() {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(check());
}
