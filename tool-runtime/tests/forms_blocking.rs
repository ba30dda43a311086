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

/// The two ends a test holds: `go` lets the tool look at its token, `seen` gets what it saw.
struct Handshake {
    go: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
    seen: std::sync::mpsc::Sender<bool>,
}

static HANDSHAKE: std::sync::OnceLock<Handshake> = std::sync::OnceLock::new();

/// Waits for the test, then says whether its call's token is cancelled; it never asked for the
/// token before its call timed out.
#[tool(blocking, timeout_ms = 20)]
fn late_looker(ctx: &ToolContext) -> String {
    let handshake = HANDSHAKE.get().expect("the test sets the handshake");
    handshake.go.lock().unwrap().recv().expect("the test says go");
    handshake.seen.send(ctx.cancellation().is_cancelled()).expect("the test listens");
    String::new()
}

#[tokio::test]
async fn a_blocking_tool_that_asks_for_its_token_after_its_call_timed_out_finds_it_cancelled() {
    let (go, go_rx) = std::sync::mpsc::channel();
    let (seen_tx, seen) = std::sync::mpsc::channel();
    assert!(HANDSHAKE.set(Handshake { go: std::sync::Mutex::new(go_rx), seen: seen_tx }).is_ok());
    let message = run(late_looker::TOOL, "").await;
    assert_eq!(message, ToolMessage::error("call_1", "late_looker", "tool `late_looker` timed out after 20 ms"));
    go.send(()).unwrap();
    assert!(seen.recv().unwrap(), "the token of a timed-out call is cancelled");
}
