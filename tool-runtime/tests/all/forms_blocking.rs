//! A plain `fn` tool runs on tokio's blocking thread pool (`#[tool(blocking)]` says so
//! explicitly); `#[tool(inline)]` runs one on the thread that polls its call.

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

/// Reports the thread it runs on, without any option.
#[tool]
fn where_by_default(ctx: &ToolContext) -> String {
    format!("{} {}", ctx.call_id().unwrap_or("-"), thread_of(std::thread::current().id()))
}

/// Reports the thread it runs on, inline.
#[tool(inline)]
fn where_inline(ctx: &ToolContext) -> String {
    format!("{} {}", ctx.call_id().unwrap_or("-"), thread_of(std::thread::current().id()))
}

#[tokio::test]
async fn a_plain_fn_runs_on_the_blocking_pool_by_default_and_an_inline_one_on_the_polling_thread() {
    let async_thread = thread_of(std::thread::current().id());
    let by_default = run(where_by_default::TOOL, "").await.text().into_owned();
    let inline = run(where_inline::TOOL, "").await.text().into_owned();
    assert!(by_default.starts_with("call_1 "), "{by_default}");
    assert_ne!(by_default, format!("call_1 {async_thread}"));
    assert_eq!(inline, format!("call_1 {async_thread}"));
}

#[test]
fn a_plain_fn_is_blocking_unless_inline_and_an_async_fn_never_is() {
    assert_eq!(
        [where_by_default::TOOL.meta().blocking, where_inline::TOOL.meta().blocking, async_tool::TOOL.meta().blocking],
        [true, false, false]
    );
}

/// An async tool.
#[tool]
async fn async_tool() -> &'static str {
    "async"
}

/// Computes until its 20 ms time limit ends the call, then a little longer; says when it ends.
#[tool(timeout_ms = 20)]
fn overrun(ctx: &ToolContext) -> String {
    let start = std::time::Instant::now();
    // Bounded: 2 s at most, however the token behaves.
    while !ctx.cancellation().is_cancelled() && start.elapsed() < std::time::Duration::from_secs(2) {
        std::hint::spin_loop();
    }
    String::new()
}

#[tokio::test]
async fn a_time_limit_on_a_plain_fn_ends_its_call() {
    let message = run(overrun::TOOL, "").await;
    assert_eq!(message, ToolMessage::error("call_1", "overrun", "tool `overrun` timed out after 20 ms"));
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
