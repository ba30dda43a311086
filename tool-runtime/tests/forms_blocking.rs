//! `#[tool(blocking)]`: a sync function run on tokio's blocking thread pool.

use std::thread::ThreadId;

use tool_runtime::prelude::*;

async fn run(spec: &'static tool_runtime::ToolSpec, arguments: &str) -> ToolMessage {
    let registry = Registry::builder().tool(spec).build().unwrap();
    registry.call(&ToolCall::new("call_1", spec.name(), arguments), &ToolContext::new()).await
}

fn thread_of(id: ThreadId) -> String {
    format!("{id:?}")
}

/// Reports the thread it runs on.
#[tool(blocking)]
fn where_am_i(
    /// A label.
    label: &str,
    ctx: &ToolContext,
) -> String {
    format!("{label} {} {}", ctx.call_id().unwrap_or("-"), thread_of(std::thread::current().id()))
}

#[tokio::test]
async fn a_blocking_tool_runs_off_the_async_thread_with_its_arguments_and_context() {
    let message = run(where_am_i::TOOL, r#"{"label":"here"}"#).await;
    let text = message.text().into_owned();
    let async_thread = thread_of(std::thread::current().id());
    assert!(text.starts_with("here call_1 "), "{text}");
    assert_ne!(text, format!("here call_1 {async_thread}"));
}

#[test]
fn a_blocking_tool_says_so_in_its_meta() {
    assert!(where_am_i::TOOL.meta().blocking);
}

/// Panics.
#[tool(blocking)]
fn explode(
    /// What to say.
    message: String,
) -> String {
    panic!("{message}")
}

#[tokio::test]
async fn a_panic_in_a_blocking_tool_is_an_error_result() {
    let message = run(explode::TOOL, r#"{"message":"boom"}"#).await;
    assert_eq!(message, ToolMessage::error("call_1", "explode", "tool `explode` panicked: boom"));
}

/// A non-blocking sync tool.
#[tool]
fn inline() -> &'static str {
    "inline"
}

#[test]
fn a_tool_is_not_blocking_unless_asked() {
    assert!(!inline::TOOL.meta().blocking);
}
