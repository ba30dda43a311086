//! How the registry runs a call. A tool that reads neither its context nor a dependency runs with
//! the caller's context (no per-call context is made for it), and a call whose tool finishes on
//! its first poll is answered on the first poll of `Registry::call`. These tests pin what must not
//! change on those paths: the outcome of every call, the policy asked once, and a time limit that
//! ends only its own call. Time runs on tokio's paused clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use futures::future::BoxFuture;
use tool_runtime::prelude::*;
use tool_runtime::{Permission, PermissionPolicy, PermissionRequest, Tool};

/// Adds two numbers.
#[tool]
async fn add(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> String {
    (a + b).to_string()
}

/// Says which call it runs in.
#[tool]
fn call_id(ctx: &ToolContext) -> String {
    ctx.call_id().unwrap_or("none").to_owned()
}

fn no_greeting(_ctx: &ToolContext) -> Result<String, DependencyError> {
    Ok("hello".to_owned())
}

static GREETING: DependencyKey<String> = DependencyKey::new("greeting", no_greeting);

/// Greets with the greeting dependency.
#[tool]
fn greet(#[depends(GREETING)] greeting: String) -> String {
    greeting
}

/// Sleeps for ten seconds with its own limit of 100 ms; reads no context.
#[tool(timeout_ms = 100)]
async fn hasty() -> String {
    tokio::time::sleep(Duration::from_secs(10)).await;
    "finished".to_owned()
}

/// The registry `outer` calls into.
static INNER: LazyLock<Registry> = LazyLock::new(|| Registry::builder().tool(hasty::TOOL).build().expect("one tool"));

/// Calls `hasty` through another registry with its own context, then says whether its own call
/// was cancelled.
#[tool]
async fn outer(ctx: &ToolContext) -> String {
    let inner = INNER.call(&ToolCall::new("call_inner", "hasty", "{}"), ctx).await;
    format!("{}; outer cancelled: {}", inner.text(), ctx.is_cancelled())
}

/// A tool written by hand, which says nothing about its context.
struct ByHand(ToolDefinition);

impl Tool for ByHand {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }

    fn call<'a>(&'a self, _arguments: &'a str, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        Box::pin(async { Ok(ToolResult::text("by hand")) })
    }
}

#[test]
fn only_a_tool_without_context_or_dependencies_is_context_free() {
    let by_hand = ByHand(ToolDefinition {
        name: "by_hand".to_owned(),
        description: "A tool.".to_owned(),
        input_schema: serde_json::json!({"type": "object"}),
        set: None,
        tags: Vec::new(),
        strict: None,
        output_schema: None,
    });
    let reads = |tool: &dyn Tool| tool.reads_context();
    assert_eq!(
        [reads(add::TOOL), reads(hasty::TOOL), reads(call_id::TOOL), reads(greet::TOOL), reads(&by_hand)],
        [false, false, true, true, true]
    );
}

#[tokio::test]
async fn a_tool_that_reads_its_context_still_gets_a_context_of_its_own_call() {
    let registry = Registry::builder().tool(call_id::TOOL).tool(add::TOOL).build().unwrap();
    let ctx = ToolContext::new();
    let message = registry.call(&ToolCall::new("call_7", "call_id", "{}"), &ctx).await;
    assert_eq!(message.text(), "call_7");
    let batch = registry
        .call_batch(
            &[ToolCall::new("call_8", "add", r#"{"a":1,"b":2}"#), ToolCall::new("call_9", "call_id", "{}")],
            &ctx,
        )
        .await;
    let texts: Vec<String> = batch.into_messages().iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(texts, ["3", "call_9"]);
}

#[tokio::test]
async fn a_dependency_is_resolved_in_the_call_of_the_tool_that_asks_for_it() {
    let registry = Registry::builder().tool(greet::TOOL).build().unwrap();
    let message = registry.call(&ToolCall::new("call_1", "greet", "{}"), &ToolContext::new()).await;
    assert_eq!((message.text().into_owned(), message.is_error), ("hello".to_owned(), false));
}

#[tokio::test(start_paused = true)]
async fn a_context_free_call_that_times_out_ends_only_its_own_call() {
    let registry = Registry::builder().tool(outer::TOOL).build().unwrap();
    let message = registry.call(&ToolCall::new("call_outer", "outer", "{}"), &ToolContext::new()).await;
    assert_eq!(message.text(), "tool `hasty` timed out after 100 ms; outer cancelled: false");
}

/// How many times each question was asked of a [`Slow`] policy.
#[derive(Default)]
struct Asked {
    now: AtomicUsize,
    checks: AtomicUsize,
}

/// Allows every call, but only after a wait (`check_now` has no answer); counts both questions.
struct Slow(Arc<Asked>);

impl PermissionPolicy for Slow {
    fn check<'a>(&'a self, _request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        self.0.checks.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Permission::Allow
        })
    }

    fn check_now(&self, _request: PermissionRequest<'_>) -> Option<Permission> {
        self.0.now.fetch_add(1, Ordering::SeqCst);
        None
    }
}

#[tokio::test(start_paused = true)]
async fn a_policy_that_must_be_awaited_is_asked_once_a_call() {
    let asked = Arc::new(Asked::default());
    let registry = Registry::builder().tool(add::TOOL).policy(Slow(asked.clone())).build().unwrap();
    let ctx = ToolContext::new();
    let message = registry.call(&ToolCall::new("call_1", "add", r#"{"a":2,"b":3}"#), &ctx).await;
    assert_eq!(message.text(), "5");
    let calls =
        [ToolCall::new("call_2", "add", r#"{"a":1,"b":1}"#), ToolCall::new("call_3", "add", r#"{"a":0,"b":0}"#)];
    let batch = registry.call_batch(&calls, &ctx).await;
    let texts: Vec<String> = batch.into_messages().iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(texts, ["2", "0"]);
    assert_eq!((asked.now.load(Ordering::SeqCst), asked.checks.load(Ordering::SeqCst)), (3, 3));
}

#[tokio::test]
async fn a_context_free_tool_gives_the_same_errors_as_any_other() {
    let registry = Registry::builder().tool(add::TOOL).build().unwrap();
    let ctx = ToolContext::new();
    let bad = registry.call(&ToolCall::new("call_1", "add", r#"{"a":1}"#), &ctx).await;
    assert_eq!(bad.text(), "invalid arguments for `add`: missing field `b`");
    let unknown = registry.call(&ToolCall::new("call_2", "sub", "{}"), &ctx).await;
    assert_eq!(unknown.text(), "unknown tool `sub`; available tools: add");
    let token = tokio_util::sync::CancellationToken::new();
    token.cancel();
    let cancelled = ToolContext::builder().cancellation(token).build();
    let message = registry.call(&ToolCall::new("call_3", "add", r#"{"a":1,"b":2}"#), &cancelled).await;
    assert_eq!((message.text().into_owned(), message.is_error), ("tool `add` was cancelled".to_owned(), true));
}
