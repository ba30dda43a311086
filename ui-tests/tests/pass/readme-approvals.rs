//! An example of tool-runtime's "Defining tools" (`tool-runtime/docs/defining-tools.md`), as
//! written there, run.

use tool_runtime::ApprovalTokens;
use tool_runtime::idempotency::MemoryIdempotencyStore;
use tool_runtime::prelude::*;

/// Delete a directory.
#[tool(tags(confirm))]
fn delete_dir(
    /// The directory.
    path: String,
) -> String {
    format!("deleted {path}")
}

async fn approve_once() {
    let registry = Registry::builder()
        .tool(delete_dir::TOOL)
        .approval_tokens(ApprovalTokens::new(MemoryIdempotencyStore::new()))
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let call = ToolCall::new("c1", "delete_dir", r#"{"path":"build/"}"#);
    let asked = registry.call(&call, &ctx).await; // the model reads `asked.text()`: no token there
    let request = asked.approval.as_deref().expect("the host's approval request");
    assert_eq!(request.preview, "call `delete_dir` with\n\"path\": \"build/\"");
    assert!(!asked.text().contains(&request.token));
    // ... the host shows `request.preview` to the person, who approves ...
    let approved = call.clone().with_approval_token(&request.token);
    assert_eq!(registry.call(&approved, &ctx).await.text(), "deleted build/");
    assert!(registry.call(&approved, &ctx).await.text().contains("was used already"));
}

fn main() {
    tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(approve_once());
}
