//! The principal of a context: who the caller is, as the server knows it.

use tool_runtime::{Registry, ToolCall, ToolContext, tool};

/// Says who calls.
#[tool]
fn caller(ctx: &ToolContext) -> String {
    ctx.principal().unwrap_or("(nobody said)").to_owned()
}

#[test]
fn a_context_has_no_principal_unless_the_caller_sets_one() {
    assert_eq!(ToolContext::new().principal(), None);
    assert_eq!(ToolContext::builder().principal("alice").build().principal(), Some("alice"));
}

#[test]
fn a_clone_keeps_the_principal() {
    let ctx = ToolContext::builder().session_id("s1").principal("alice").build();
    assert_eq!(ctx.clone().principal(), Some("alice"));
}

#[tokio::test]
async fn the_per_call_context_a_tool_gets_keeps_the_principal() {
    let registry = Registry::builder().tool(caller::TOOL).build().unwrap();
    let ctx = ToolContext::builder().principal("alice").build();
    assert_eq!(registry.call(&ToolCall::new("c1", "caller", "{}"), &ctx).await.text(), "alice");
    assert_eq!(registry.call(&ToolCall::new("c2", "caller", "{}"), &ToolContext::new()).await.text(), "(nobody said)");
}
