//! The call paths of the registry: a context-free tool (no `&ToolContext`, no dependency) runs
//! with the caller's context and, when nothing else has to happen around it, on the first poll of
//! `Registry::call` or inline in a batch. These tests pin what a caller sees on every path:
//! cancellation, time limits that end only their own call, panics on the first or a later poll,
//! the policy asked once, `tracing`, the output store made on first use, a closed registry,
//! sequential groups, concurrent dependency creation, dropped call futures and tools written by
//! hand. Time runs on tokio's paused clock.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tool_runtime::decode::RepairPolicy;
use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputLayer, OutputStore};
use tool_runtime::prelude::*;
use tool_runtime::{CancellationToken, Permission, PermissionPolicy, PermissionRequest, Tool, TurnStop};

// ---------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------

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

/// Waits ten seconds, then answers; reads no context.
#[tool]
async fn wait_long() -> String {
    tokio::time::sleep(Duration::from_secs(10)).await;
    "waited".to_owned()
}

/// Waits the given number of milliseconds, then answers; reads no context.
#[tool]
async fn wait_ms(
    /// How long, in milliseconds.
    ms: u64,
) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("waited {ms} ms")
}

/// Panics before its first await.
#[tool]
async fn panic_first() -> String {
    panic!("boom on the first poll")
}

/// Panics after it was woken once.
#[tool]
async fn panic_later() -> String {
    tokio::time::sleep(Duration::from_millis(3)).await;
    panic!("boom on a later poll")
}

/// Says which call it runs in, inline.
#[tool(inline)]
fn call_id(ctx: &ToolContext) -> String {
    ctx.call_id().unwrap_or("none").to_owned()
}

fn call_text(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall::new(id, name, arguments)
}

fn texts(messages: &[ToolMessage]) -> Vec<String> {
    messages.iter().map(|m| m.text().into_owned()).collect()
}

// ---------------------------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_pending_context_free_call_ends_when_the_callers_token_is_cancelled() {
    let registry = Registry::builder().tool(wait_long::TOOL).build().unwrap();
    let token = CancellationToken::new();
    let ctx = ToolContext::builder().cancellation(token.clone()).build();
    let call = call_text("call_1", "wait_long", "{}");
    let started = tokio::time::Instant::now();
    let (message, ()) = tokio::join!(registry.call(&call, &ctx), async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        token.cancel();
    });
    assert_eq!((message.text().into_owned(), message.is_error), ("tool `wait_long` was cancelled".to_owned(), true));
    // On the paused clock: the call ended at the cancel, not when the tool would have finished.
    assert_eq!(started.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn a_pending_context_free_call_of_a_batch_ends_when_the_callers_token_is_cancelled() {
    let registry = Registry::builder().tool(wait_long::TOOL).tool(add::TOOL).tool(call_id::TOOL).build().unwrap();
    let token = CancellationToken::new();
    let ctx = ToolContext::builder().cancellation(token.clone()).build();
    let calls = [
        call_text("call_1", "wait_long", "{}"),
        call_text("call_2", "add", r#"{"a":1,"b":2}"#),
        call_text("call_3", "call_id", "{}"),
    ];
    let (batch, ()) = tokio::join!(registry.call_batch(&calls, &ctx), async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        token.cancel();
    });
    assert_eq!(texts(&batch.messages), ["tool `wait_long` was cancelled", "3", "call_3"]);
    assert_eq!(batch.stop, None);
}

#[tokio::test(start_paused = true)]
async fn a_context_free_call_with_a_cancelled_token_does_not_start_in_a_batch() {
    let registry = Registry::builder().tool(add::TOOL).tool(call_id::TOOL).build().unwrap();
    let token = CancellationToken::new();
    token.cancel();
    let ctx = ToolContext::builder().cancellation(token).build();
    let calls = [call_text("call_1", "add", r#"{"a":1,"b":2}"#), call_text("call_2", "call_id", "{}")];
    let batch = registry.call_batch(&calls, &ctx).await;
    assert_eq!(texts(&batch.messages), ["tool `add` was cancelled", "tool `call_id` was cancelled"]);
}

// ---------------------------------------------------------------------------------------------
// Time limits
// ---------------------------------------------------------------------------------------------

/// Sleeps for ten seconds with its own limit of 100 ms; reads no context.
#[tool(timeout_ms = 100)]
async fn hasty() -> String {
    tokio::time::sleep(Duration::from_secs(10)).await;
    "finished".to_owned()
}

/// The registry `outer_batch` calls into.
static INNER: LazyLock<Registry> =
    LazyLock::new(|| Registry::builder().tool(hasty::TOOL).tool(add::TOOL).build().expect("two tools"));

/// Runs a batch of `hasty` and `add` through another registry with its own context, then says
/// whether its own call was cancelled.
#[tool]
async fn outer_batch(ctx: &ToolContext) -> String {
    let calls = [call_text("call_in_1", "hasty", "{}"), call_text("call_in_2", "add", r#"{"a":2,"b":2}"#)];
    let batch = INNER.call_batch(&calls, ctx).await;
    format!("{}; outer cancelled: {}", texts(&batch.messages).join(" | "), ctx.is_cancelled())
}

/// Calls `hasty` through another registry with its own context, then says whether its own call
/// was cancelled.
#[tool]
async fn outer(ctx: &ToolContext) -> String {
    let inner = INNER.call(&call_text("call_inner", "hasty", "{}"), ctx).await;
    format!("{}; outer cancelled: {}", inner.text(), ctx.is_cancelled())
}

#[tokio::test(start_paused = true)]
async fn a_context_free_call_that_times_out_ends_only_its_own_call() {
    let registry = Registry::builder().tool(outer::TOOL).build().unwrap();
    let message = registry.call(&call_text("call_outer", "outer", "{}"), &ToolContext::new()).await;
    assert_eq!(message.text(), "tool `hasty` timed out after 100 ms; outer cancelled: false");
}

#[tokio::test(start_paused = true)]
async fn a_context_free_call_timed_out_in_an_inner_batch_leaves_the_outer_call_running() {
    let registry = Registry::builder().tool(outer_batch::TOOL).build().unwrap();
    let message = registry.call(&call_text("call_outer", "outer_batch", "{}"), &ToolContext::new()).await;
    assert_eq!(message.text(), "tool `hasty` timed out after 100 ms | 4; outer cancelled: false");
}

#[tokio::test(start_paused = true)]
async fn a_default_time_limit_on_a_context_free_call_leaves_the_callers_token_alone() {
    let registry = Registry::builder()
        .tool(wait_long::TOOL)
        .tool(add::TOOL)
        .default_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let timed_out = registry.call(&call_text("call_1", "wait_long", "{}"), &ctx).await;
    assert_eq!(timed_out.text(), "tool `wait_long` timed out after 50 ms");
    assert!(!ctx.is_cancelled());
    let next = registry.call(&call_text("call_2", "add", r#"{"a":4,"b":5}"#), &ctx).await;
    assert_eq!((next.text().into_owned(), next.is_error), ("9".to_owned(), false));
}

// ---------------------------------------------------------------------------------------------
// Panics
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_panic_on_the_first_poll_becomes_the_message_of_its_call() {
    let registry = Registry::builder().tool(panic_first::TOOL).build().unwrap();
    let message = registry.call(&call_text("call_1", "panic_first", "{}"), &ToolContext::new()).await;
    assert_eq!(
        (message.text().into_owned(), message.is_error),
        ("tool `panic_first` panicked: boom on the first poll".to_owned(), true)
    );
}

#[tokio::test(start_paused = true)]
async fn a_panic_on_a_later_poll_becomes_the_message_of_its_call() {
    let registry = Registry::builder().tool(panic_later::TOOL).build().unwrap();
    let message = registry.call(&call_text("call_1", "panic_later", "{}"), &ToolContext::new()).await;
    assert_eq!(
        (message.text().into_owned(), message.is_error),
        ("tool `panic_later` panicked: boom on a later poll".to_owned(), true)
    );
}

#[tokio::test(start_paused = true)]
async fn panics_on_the_first_and_a_later_poll_in_a_batch_touch_only_their_own_calls() {
    let registry = Registry::builder()
        .tool(panic_first::TOOL)
        .tool(panic_later::TOOL)
        .tool(add::TOOL)
        .tool(wait_ms::TOOL)
        .build()
        .unwrap();
    let calls = [
        call_text("call_1", "panic_later", "{}"),
        call_text("call_2", "add", r#"{"a":1,"b":1}"#),
        call_text("call_3", "panic_first", "{}"),
        call_text("call_4", "wait_ms", r#"{"ms":7}"#),
    ];
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(
        texts(&batch.messages),
        [
            "tool `panic_later` panicked: boom on a later poll",
            "2",
            "tool `panic_first` panicked: boom on the first poll",
            "waited 7 ms",
        ]
    );
    let ids: Vec<&str> = batch.messages.iter().map(|m| m.tool_call_id.as_str()).collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3", "call_4"]);
}

// ---------------------------------------------------------------------------------------------
// The permission policy
// ---------------------------------------------------------------------------------------------

/// How many times each question was asked of a policy.
#[derive(Default)]
struct Asked {
    now: AtomicUsize,
    checks: AtomicUsize,
}

impl Asked {
    fn counts(&self) -> (usize, usize) {
        (self.now.load(Ordering::SeqCst), self.checks.load(Ordering::SeqCst))
    }
}

/// Has no answer at once (`check_now` gives `None`); `check` allows every call but `call_id` after
/// a wait of 5 ms. Counts both questions.
struct Awaited(Arc<Asked>);

impl PermissionPolicy for Awaited {
    fn check<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        self.0.checks.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            if request.call.name == "call_id" { Permission::Deny("no ids".to_owned()) } else { Permission::Allow }
        })
    }

    fn check_now(&self, _request: PermissionRequest<'_>) -> Option<Permission> {
        self.0.now.fetch_add(1, Ordering::SeqCst);
        None
    }
}

#[tokio::test(start_paused = true)]
async fn a_policy_without_an_answer_at_once_is_asked_once_a_call_in_a_mixed_batch() {
    let asked = Arc::new(Asked::default());
    let registry = Registry::builder()
        .tool(add::TOOL)
        .tool(wait_ms::TOOL)
        .tool(call_id::TOOL)
        .policy(Awaited(asked.clone()))
        .build()
        .unwrap();
    let calls = [
        call_text("call_1", "add", r#"{"a":1,"b":2}"#),
        call_text("call_2", "wait_ms", r#"{"ms":3}"#),
        call_text("call_3", "call_id", "{}"),
        call_text("call_4", "nope", "{}"),
    ];
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(
        texts(&batch.messages),
        [
            "3",
            "waited 3 ms",
            "Permission denied: no ids",
            "unknown tool `nope`; available tools: add, call_id, wait_ms"
        ]
    );
    // The unknown tool is refused before the policy is asked.
    assert_eq!(asked.counts(), (3, 3));
    let message = registry.call(&call_text("call_5", "wait_ms", r#"{"ms":1}"#), &ToolContext::new()).await;
    assert_eq!(message.text(), "waited 1 ms");
    assert_eq!(asked.counts(), (4, 4));
}

/// Panics in `check_now`; `check` is counted and would allow.
struct PanicsAtOnce(Arc<Asked>);

impl PermissionPolicy for PanicsAtOnce {
    fn check<'a>(&'a self, _request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        self.0.checks.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Permission::Allow })
    }

    fn check_now(&self, _request: PermissionRequest<'_>) -> Option<Permission> {
        self.0.now.fetch_add(1, Ordering::SeqCst);
        panic!("rule table missing")
    }
}

#[tokio::test(start_paused = true)]
async fn a_policy_that_panics_in_check_now_refuses_the_call_and_is_not_asked_again() {
    let asked = Arc::new(Asked::default());
    let registry =
        Registry::builder().tool(add::TOOL).tool(call_id::TOOL).policy(PanicsAtOnce(asked.clone())).build().unwrap();
    let ctx = ToolContext::new();
    let message = registry.call(&call_text("call_1", "add", r#"{"a":1,"b":2}"#), &ctx).await;
    assert_eq!(
        (message.text().into_owned(), message.is_error),
        ("Permission denied: the permission policy panicked: rule table missing".to_owned(), true)
    );
    let calls = [call_text("call_2", "call_id", "{}"), call_text("call_3", "add", r#"{"a":0,"b":0}"#)];
    let batch = registry.call_batch(&calls, &ctx).await;
    assert_eq!(
        texts(&batch.messages),
        [
            "Permission denied: the permission policy panicked: rule table missing",
            "Permission denied: the permission policy panicked: rule table missing"
        ]
    );
    assert_eq!(asked.counts(), (3, 0));
}

/// How many times `counted` ran.
static COUNTED_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Counts its runs (only the stop test calls it).
#[tool]
fn counted() -> String {
    COUNTED_RUNS.fetch_add(1, Ordering::SeqCst);
    "counted".to_owned()
}

#[tokio::test(start_paused = true)]
async fn deny_and_stop_in_a_batch_of_context_free_calls_runs_none_of_them() {
    let registry = Registry::builder()
        .tool(counted::TOOL)
        .tool(add::TOOL)
        .policy(|request: PermissionRequest<'_>| {
            if request.call.name == "add" {
                Permission::DenyAndStop("ask the user".to_owned())
            } else {
                Permission::Allow
            }
        })
        .output(OutputLayer::new())
        .override_dependency(&OUTPUT_STORE, Arc::new(MemoryStore::new()) as Arc<dyn OutputStore>)
        .build()
        .unwrap();
    let calls = [
        call_text("call_1", "counted", "{}"),
        call_text("call_2", "add", r#"{"a":1,"b":2}"#),
        call_text("call_3", "counted", "{}"),
    ];
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(
        texts(&batch.messages),
        [
            "tool `counted` did not run: the turn was stopped because the call of `add` was denied: ask the user",
            "Permission denied: ask the user",
            "tool `counted` did not run: the turn was stopped because the call of `add` was denied: ask the user",
        ]
    );
    assert_eq!(minted_refs(&batch.messages).len(), 3);
    assert_eq!(
        batch.stop,
        Some(TurnStop::Denied {
            tool_call_id: "call_2".to_owned(),
            tool_name: "add".to_owned(),
            reason: "ask the user".to_owned()
        })
    );
    assert_eq!(COUNTED_RUNS.load(Ordering::SeqCst), 0);
}

// ---------------------------------------------------------------------------------------------
// A closed registry
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_registry_closed_between_calls_refuses_context_free_calls() {
    let registry = Registry::builder().tool(add::TOOL).tool(call_id::TOOL).build().unwrap();
    let ctx = ToolContext::new();
    let before = registry.call(&call_text("call_1", "add", r#"{"a":1,"b":2}"#), &ctx).await;
    assert_eq!(before.text(), "3");
    registry.close().await.unwrap();
    let after = registry.call(&call_text("call_2", "add", r#"{"a":1,"b":2}"#), &ctx).await;
    assert_eq!(
        (after.text().into_owned(), after.is_error),
        ("tool `add` did not run: the registry is closed; build a new registry to serve more calls".to_owned(), true)
    );
    let calls = [call_text("call_3", "add", r#"{"a":1,"b":2}"#), call_text("call_4", "call_id", "{}")];
    let batch = registry.call_batch(&calls, &ctx).await;
    assert_eq!(
        texts(&batch.messages),
        [
            "tool `add` did not run: the registry is closed; build a new registry to serve more calls",
            "tool `call_id` did not run: the registry is closed; build a new registry to serve more calls",
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Sequential groups
// ---------------------------------------------------------------------------------------------

/// What `logged` and `logged_alone` did, in order (only the sequential test calls them).
static STEPS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn step(line: String) {
    STEPS.lock().unwrap().push(line);
}

/// Logs its start, waits `ms` milliseconds, logs its end; reads no context.
#[tool]
async fn logged(
    /// Its name in the log.
    name: String,
    /// How long to wait, in milliseconds.
    ms: u64,
) -> String {
    step(format!("start {name}"));
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    step(format!("end {name}"));
    name
}

/// Logs its start and end around a wait of `ms` milliseconds, alone in its turn; reads its context.
#[tool(sequential)]
async fn logged_alone(
    /// How long to wait, in milliseconds.
    ms: u64,
    ctx: &ToolContext,
) -> String {
    let id = ctx.call_id().unwrap_or("none").to_owned();
    step(format!("start {id}"));
    tokio::time::sleep(Duration::from_millis(ms)).await;
    step(format!("end {id}"));
    id
}

#[tokio::test(start_paused = true)]
async fn sequential_calls_split_a_batch_of_context_free_and_context_reading_calls() {
    let registry = Registry::builder().tool(logged::TOOL).tool(logged_alone::TOOL).tool(call_id::TOOL).build().unwrap();
    let logged_call = |id: &str, name: &str, ms: u64| {
        ToolCall::new(id, "logged", serde_json::json!({ "name": name, "ms": ms }).to_string())
    };
    let calls = [
        logged_call("call_1", "a", 20),
        logged_call("call_2", "b", 0),
        call_text("call_3", "logged_alone", r#"{"ms":5}"#),
        logged_call("call_4", "c", 0),
        call_text("call_5", "call_id", "{}"),
        logged_call("call_6", "d", 10),
        call_text("call_7", "logged_alone", r#"{"ms":0}"#),
    ];
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(texts(&batch.messages), ["a", "b", "call_3", "c", "call_5", "d", "call_7"]);
    assert_eq!(
        *STEPS.lock().unwrap(),
        [
            "start a",
            "start b",
            "end b",
            "end a",
            "start call_3",
            "end call_3",
            "start c",
            "end c",
            "start d",
            "end d",
            "start call_7",
            "end call_7",
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Dependencies resolved concurrently
// ---------------------------------------------------------------------------------------------

/// How many times `make_shared_slowly` started, and finished.
static SHARED_STARTED: AtomicUsize = AtomicUsize::new(0);
static SHARED_MADE: AtomicUsize = AtomicUsize::new(0);

fn make_shared_slowly(_ctx: &ToolContext) -> BoxFuture<'_, Result<Arc<String>, DependencyError>> {
    Box::pin(async {
        let n = SHARED_STARTED.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::time::sleep(Duration::from_millis(30)).await;
        SHARED_MADE.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(format!("value {n}")))
    })
}

/// A registry-scoped value that takes 30 ms to make (only the concurrency tests use it, one
/// registry each).
static SHARED: DependencyKey<Arc<String>> = DependencyKey::shared_async("review_shared", make_shared_slowly);

/// Reads the shared value.
#[tool]
async fn read_shared(#[depends(SHARED)] shared: Arc<String>) -> String {
    format!("{shared} at {:p}", Arc::as_ptr(&shared))
}

/// One test body: the other test on `SHARED` must not run at the same time.
static SHARED_TESTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(start_paused = true)]
async fn a_value_in_creation_is_never_handed_out_and_is_made_once_for_concurrent_calls() {
    let _only = SHARED_TESTS.lock().await;
    let (started, made) = (SHARED_STARTED.load(Ordering::SeqCst), SHARED_MADE.load(Ordering::SeqCst));
    let registry = Registry::builder().tool(read_shared::TOOL).build().unwrap();
    let ctx = ToolContext::new();
    let (first, second) = (call_text("call_1", "read_shared", "{}"), call_text("call_2", "read_shared", "{}"));
    let (one, two) = tokio::join!(registry.call(&first, &ctx), registry.call(&second, &ctx));
    let third = registry.call(&call_text("call_3", "read_shared", "{}"), &ctx).await;
    let expected = format!("value {}", started + 1);
    assert!(one.text().starts_with(&expected), "{}", one.text());
    assert_eq!((two.text(), third.text()), (one.text(), one.text()));
    assert_eq!((SHARED_STARTED.load(Ordering::SeqCst), SHARED_MADE.load(Ordering::SeqCst)), (started + 1, made + 1));
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_while_its_dependency_is_made_leaves_no_lock_behind() {
    let _only = SHARED_TESTS.lock().await;
    let started = SHARED_STARTED.load(Ordering::SeqCst);
    let registry = Registry::builder().tool(read_shared::TOOL).build().unwrap();
    let ctx = ToolContext::new();
    let first_call = call_text("call_1", "read_shared", "{}");
    {
        let mut first = std::pin::pin!(registry.call(&first_call, &ctx));
        assert!(futures::poll!(first.as_mut()).is_pending());
        assert_eq!(SHARED_STARTED.load(Ordering::SeqCst), started + 1);
    }
    // The slot the dropped call was filling is free: the next call makes the value again, and
    // does not wait forever.
    let next =
        tokio::time::timeout(Duration::from_secs(60), registry.call(&call_text("call_2", "read_shared", "{}"), &ctx))
            .await
            .expect("the next call finishes");
    assert!(next.text().starts_with(&format!("value {}", started + 2)), "{}", next.text());
}

// ---------------------------------------------------------------------------------------------
// Dropped call futures
// ---------------------------------------------------------------------------------------------

/// How many times `counted_drop` ran (only the drop test calls it).
static DROP_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Counts its runs.
#[tool]
fn counted_drop() -> String {
    DROP_RUNS.fetch_add(1, Ordering::SeqCst);
    "ran".to_owned()
}

#[tokio::test(start_paused = true)]
async fn a_call_future_dropped_before_its_first_poll_runs_nothing() {
    let registry = Registry::builder().tool(counted_drop::TOOL).build().unwrap();
    let ctx = ToolContext::new();
    let call = call_text("call_1", "counted_drop", "{}");
    drop(registry.call(&call, &ctx));
    assert_eq!(DROP_RUNS.load(Ordering::SeqCst), 0);
    let message = registry.call(&call, &ctx).await;
    assert_eq!((message.text().into_owned(), DROP_RUNS.load(Ordering::SeqCst)), ("ran".to_owned(), 1));
}

#[tokio::test(start_paused = true)]
async fn a_pending_context_free_call_future_can_be_dropped_and_the_registry_keeps_serving() {
    let store = Arc::new(MemoryStore::new());
    let registry = Registry::builder()
        .tool(wait_long::TOOL)
        .tool(add::TOOL)
        .output(OutputLayer::new())
        .override_dependency(&OUTPUT_STORE, store.clone() as Arc<dyn OutputStore>)
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let call = call_text("call_1", "wait_long", "{}");
    {
        let mut pending = std::pin::pin!(registry.call(&call, &ctx));
        assert!(futures::poll!(pending.as_mut()).is_pending());
    }
    let message = registry.call(&call_text("call_2", "add", r#"{"a":2,"b":2}"#), &ctx).await;
    assert_eq!(message.text(), "4");
    assert_eq!(minted_refs(std::slice::from_ref(&message)).len(), 1);
    assert!(!ctx.is_cancelled());
}

// ---------------------------------------------------------------------------------------------
// The output layer
// ---------------------------------------------------------------------------------------------

/// The `ref_id`s of `messages`, in order; each must be a minted ref id (22 characters of
/// `[A-Za-z0-9_-]`, not the call id) and no two alike.
fn minted_refs(messages: &[ToolMessage]) -> Vec<String> {
    let refs: Vec<String> = messages.iter().map(|m| m.ref_id.clone().expect("a ref_id")).collect();
    for (r, m) in refs.iter().zip(messages) {
        assert_eq!(tool_runtime::output::validate_ref_id(r), Ok(()));
        assert_eq!(r.len(), tool_runtime::output::REF_ID_LEN, "{r}");
        assert_ne!(r, &m.tool_call_id);
    }
    let distinct: std::collections::HashSet<&String> = refs.iter().collect();
    assert_eq!(distinct.len(), refs.len(), "{refs:?}");
    refs
}

#[tokio::test(start_paused = true)]
async fn a_context_free_call_that_finishes_later_is_stored_under_its_ref() {
    let store = Arc::new(MemoryStore::new());
    let registry = Registry::builder()
        .tool(wait_ms::TOOL)
        .tool(add::TOOL)
        .output(OutputLayer::new())
        .override_dependency(&OUTPUT_STORE, store.clone() as Arc<dyn OutputStore>)
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let message = registry.call(&call_text("call.1", "wait_ms", r#"{"ms":8}"#), &ctx).await;
    assert_eq!(message.text(), "waited 8 ms");
    let calls = [call_text("call_2", "wait_ms", r#"{"ms":2}"#), call_text("call_3", "add", r#"{"a":1,"b":1}"#)];
    let batch = registry.call_batch(&calls, &ctx).await;
    let mut messages = vec![message];
    messages.extend(batch.messages);
    let stored: Vec<String> = minted_refs(&messages)
        .iter()
        .map(|r| {
            let mut text = String::new();
            store.open_at(r, 0).expect("stored").read_to_string(&mut text).unwrap();
            text
        })
        .collect();
    assert_eq!(stored, ["waited 8 ms", "waited 2 ms", "2"]);
}

// ---------------------------------------------------------------------------------------------
// Tools written by hand
// ---------------------------------------------------------------------------------------------

fn definition(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.to_owned(),
        description: "A tool written by hand.".to_owned(),
        input_schema: serde_json::json!({"type": "object"}),
        set: None,
        tags: Vec::new(),
        strict: None,
        output_schema: None,
        callers: tool_runtime::Callers::Direct,
    }
}

/// Says which call its context belongs to; `reads` is what it answers to `reads_context`.
struct SaysCallId {
    definition: ToolDefinition,
    reads: Option<bool>,
}

impl Tool for SaysCallId {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn reads_context(&self) -> bool {
        self.reads.unwrap_or(true)
    }

    fn call<'a>(&'a self, _arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        Box::pin(async move { Ok(ToolResult::text(ctx.call_id().unwrap_or("none"))) })
    }
}

/// Says which call its context belongs to, keeping `Tool::reads_context`'s default.
struct DefaultReads(ToolDefinition);

impl Tool for DefaultReads {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }

    fn call<'a>(&'a self, _arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        Box::pin(async move { Ok(ToolResult::text(ctx.call_id().unwrap_or("none"))) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_tool_written_by_hand_gets_a_context_of_its_own_call_by_default() {
    let registry = Registry::builder()
        .tool_dyn(Arc::new(DefaultReads(definition("default_reads"))))
        .tool_dyn(Arc::new(SaysCallId { definition: definition("says_free"), reads: Some(false) }))
        .build()
        .unwrap();
    assert!(registry.get("default_reads").unwrap().reads_context());
    let ctx = ToolContext::new();
    let own = registry.call(&call_text("call_1", "default_reads", "{}"), &ctx).await;
    // A tool that declares it does not read its context is handed the caller's as it is.
    let free = registry.call(&call_text("call_2", "says_free", "{}"), &ctx).await;
    assert_eq!((own.text(), free.text()), ("call_1".into(), "none".into()));
    let calls = [call_text("call_3", "says_free", "{}"), call_text("call_4", "default_reads", "{}")];
    let batch = registry.call_batch(&calls, &ctx).await;
    assert_eq!(texts(&batch.messages), ["none", "call_4"]);
}

/// Decodes its arguments before it returns its future, and panics on bad ones (as a tool written
/// by hand may).
struct PanicsBeforeItsFuture {
    definition: ToolDefinition,
    reads: bool,
}

impl Tool for PanicsBeforeItsFuture {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn reads_context(&self) -> bool {
        self.reads
    }

    fn call<'a>(&'a self, arguments: &'a str, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        let value: serde_json::Value = serde_json::from_str(arguments).expect("arguments are JSON");
        Box::pin(async move { Ok(ToolResult::text(value.to_string())) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_panics_before_returning_its_future_gives_a_panicked_message() {
    let registry = Registry::builder()
        .tool_dyn(Arc::new(PanicsBeforeItsFuture { definition: definition("eager_free"), reads: false }))
        .tool_dyn(Arc::new(PanicsBeforeItsFuture { definition: definition("eager_own"), reads: true }))
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let free = registry.call(&call_text("call_1", "eager_free", "{oops"), &ctx).await;
    let own = registry.call(&call_text("call_2", "eager_own", "{oops"), &ctx).await;
    let calls = [
        call_text("call_3", "eager_free", "{oops"),
        call_text("call_4", "eager_own", "{oops"),
        call_text("call_5", "eager_free", r#"{"a":1}"#),
    ];
    let batch = registry.call_batch(&calls, &ctx).await;
    let panicked = |tool: &str| {
        format!("tool `{tool}` panicked: arguments are JSON: Error(\"key must be a string\", line: 1, column: 2)")
    };
    assert_eq!(
        [texts(&[free, own]), texts(&batch.messages)].concat(),
        [
            panicked("eager_free"),
            panicked("eager_own"),
            panicked("eager_free"),
            panicked("eager_own"),
            r#"{"a":1}"#.to_owned()
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// tracing
// ---------------------------------------------------------------------------------------------

#[path = "support/fields.rs"]
mod fields;

mod capture {
    use super::fields::Fields;
    use super::{BTreeMap, Mutex};
    use std::sync::atomic::{AtomicU64, Ordering};
    use tracing::span::{Attributes, Id, Record};
    use tracing::subscriber::Interest;
    use tracing::{Event, Metadata, Subscriber};

    /// A span's name and fields.
    pub(crate) type SpanSeen = (String, BTreeMap<String, String>);

    /// What a [`Capture`] saw: spans by id, and each event's message with the span it was inside.
    #[derive(Default)]
    pub(crate) struct Seen {
        pub(crate) spans: Mutex<BTreeMap<u64, SpanSeen>>,
        pub(crate) events: Mutex<Vec<(String, Option<u64>)>>,
        entered: Mutex<Vec<u64>>,
        next: AtomicU64,
    }

    /// Records every span and event of the thread it is the default of. Its interest is
    /// `sometimes`, so threads without it still see every span disabled.
    #[derive(Clone, Default)]
    pub(crate) struct Capture(pub(crate) std::sync::Arc<Seen>);

    impl Subscriber for Capture {
        fn register_callsite(&self, _metadata: &'static Metadata<'static>) -> Interest {
            Interest::sometimes()
        }

        fn enabled(&self, _metadata: &Metadata<'_>) -> bool {
            true
        }

        fn new_span(&self, span: &Attributes<'_>) -> Id {
            let id = self.0.next.fetch_add(1, Ordering::SeqCst) + 1;
            let mut fields = BTreeMap::new();
            span.record(&mut Fields(&mut fields));
            self.0.spans.lock().unwrap().insert(id, (span.metadata().name().to_owned(), fields));
            Id::from_u64(id)
        }

        fn record(&self, span: &Id, values: &Record<'_>) {
            if let Some((_, fields)) = self.0.spans.lock().unwrap().get_mut(&span.into_u64()) {
                values.record(&mut Fields(fields));
            }
        }

        fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

        fn event(&self, event: &Event<'_>) {
            let mut fields = BTreeMap::new();
            event.record(&mut Fields(&mut fields));
            let parent = match event.parent() {
                Some(id) => Some(id.into_u64()),
                None => self.0.entered.lock().unwrap().last().copied(),
            };
            self.0.events.lock().unwrap().push((fields.remove("message").unwrap_or_default(), parent));
        }

        fn enter(&self, span: &Id) {
            self.0.entered.lock().unwrap().push(span.into_u64());
        }

        fn exit(&self, _span: &Id) {
            self.0.entered.lock().unwrap().pop();
        }
    }
}

/// Adds two numbers and says so to `tracing`; reads no context.
#[tool]
async fn add_traced(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> String {
    tracing::info!("adding {a} and {b}");
    (a + b).to_string()
}

/// Waits `ms` milliseconds and says so to `tracing` before and after; reads no context.
#[tool]
async fn wait_traced(
    /// How long, in milliseconds.
    ms: u64,
) -> String {
    tracing::info!("waiting {ms} ms");
    tokio::time::sleep(Duration::from_millis(ms)).await;
    tracing::info!("waited {ms} ms");
    "done waiting".to_owned()
}

#[test]
fn with_a_subscriber_context_free_calls_record_their_outcome_and_duration_and_log_inside_their_span() {
    let capture = capture::Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    let registry = Registry::builder().tool(add_traced::TOOL).tool(wait_traced::TOOL).build().unwrap();
    let ctx = ToolContext::builder().session_id("s-9").build();

    let one = runtime.block_on(registry.call(&call_text("call_1", "add_traced", r#"{"a":1,"b":2}"#), &ctx));
    let two = runtime.block_on(registry.call(&call_text("call_2", "wait_traced", r#"{"ms":25}"#), &ctx));
    let calls =
        [call_text("call_3", "wait_traced", r#"{"ms":4}"#), call_text("call_4", "add_traced", r#"{"a":5,"b":5}"#)];
    let batch = runtime.block_on(registry.call_batch(&calls, &ctx));
    assert_eq!([texts(&[one, two]), texts(&batch.messages)].concat(), ["3", "done waiting", "done waiting", "10"]);

    let spans = capture.0.spans.lock().unwrap().clone();
    let call_spans: BTreeMap<String, (u64, BTreeMap<String, String>)> = spans
        .iter()
        .filter(|(_, (name, _))| name == "tool_call")
        .map(|(id, (_, fields))| (fields["gen_ai.tool.call.id"].clone(), (*id, fields.clone())))
        .collect();
    let summary: Vec<(String, String, String, String)> = call_spans
        .values()
        .map(|(_, f)| {
            (f["gen_ai.tool.name"].clone(), f["session_id"].clone(), f["outcome"].clone(), f["duration_ms"].clone())
        })
        .collect();
    let row = |tool: &str, ms: &str| (tool.to_owned(), "s-9".to_owned(), "ok".to_owned(), ms.to_owned());
    assert_eq!(
        summary,
        [row("add_traced", "0"), row("wait_traced", "25"), row("wait_traced", "4"), row("add_traced", "0")]
    );

    let span_of = |call: &str| Some(call_spans[call].0);
    let tool_events: Vec<(String, Option<u64>)> =
        capture.0.events.lock().unwrap().iter().filter(|(m, _)| m != "tool call finished").cloned().collect();
    assert_eq!(
        tool_events,
        [
            ("adding 1 and 2".to_owned(), span_of("call_1")),
            ("waiting 25 ms".to_owned(), span_of("call_2")),
            ("waited 25 ms".to_owned(), span_of("call_2")),
            ("waiting 4 ms".to_owned(), span_of("call_3")),
            ("adding 5 and 5".to_owned(), span_of("call_4")),
            ("waited 4 ms".to_owned(), span_of("call_3")),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// More of the policy, the output layer and the inline path
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_policy_without_an_answer_at_once_is_not_awaited_for_a_cancelled_call() {
    let asked = Arc::new(Asked::default());
    let registry = Registry::builder().tool(add::TOOL).policy(Awaited(asked.clone())).build().unwrap();
    let token = CancellationToken::new();
    token.cancel();
    let ctx = ToolContext::builder().cancellation(token).build();
    let message = registry.call(&call_text("call_1", "add", r#"{"a":1,"b":2}"#), &ctx).await;
    let batch = registry.call_batch(&[call_text("call_2", "add", r#"{"a":1,"b":2}"#)], &ctx).await;
    assert_eq!(
        [texts(&[message]), texts(&batch.messages)].concat(),
        ["tool `add` was cancelled", "tool `add` was cancelled"]
    );
    assert_eq!(asked.counts(), (2, 0));
}

#[tokio::test(start_paused = true)]
async fn a_context_free_call_with_argument_repair_is_repaired_and_runs() {
    let registry = Registry::builder().tool(add::TOOL).repair(RepairPolicy::all()).build().unwrap();
    let message = registry.call(&call_text("call_1", "add", r#"{"a":"4","b":"5"}"#), &ToolContext::new()).await;
    assert_eq!((message.text().into_owned(), message.is_error), ("9".to_owned(), false));
}

#[tokio::test(start_paused = true)]
async fn the_callers_output_store_wins_over_the_registrys_for_a_context_free_call() {
    let (ours, registrys) = (Arc::new(MemoryStore::new()), Arc::new(MemoryStore::new()));
    let registry = Registry::builder()
        .tool(add::TOOL)
        .tool(wait_ms::TOOL)
        .output(OutputLayer::new())
        .override_dependency(&OUTPUT_STORE, registrys.clone() as Arc<dyn OutputStore>)
        .build()
        .unwrap();
    let ctx = ToolContext::builder().override_dependency(&OUTPUT_STORE, ours.clone() as Arc<dyn OutputStore>).build();
    let now = registry.call(&call_text("call_1", "add", r#"{"a":1,"b":2}"#), &ctx).await;
    let later = registry.call(&call_text("call_2", "wait_ms", r#"{"ms":1}"#), &ctx).await;
    let refs = minted_refs(&[now, later]);
    let found = |store: &MemoryStore| [0, 1].map(|i| store.info(&refs[i]).is_ok());
    assert_eq!((found(&ours), found(&registrys)), ([true, true], [false, false]));
}

#[tokio::test(start_paused = true)]
async fn a_batch_of_more_calls_than_join_all_polls_together_keeps_call_order() {
    let registry = Registry::builder().tool(wait_ms::TOOL).tool(add::TOOL).build().unwrap();
    // 40 calls (join_all switches to a different strategy above 30), every third finishes on its
    // first poll, the others after waits that end in reverse call order.
    let calls: Vec<ToolCall> = (0..40u64)
        .map(|i| {
            if i % 3 == 0 {
                ToolCall::new(format!("call_{i}"), "add", format!(r#"{{"a":{i},"b":0}}"#))
            } else {
                ToolCall::new(format!("call_{i}"), "wait_ms", format!(r#"{{"ms":{}}}"#, 100 - i))
            }
        })
        .collect();
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    let expected: Vec<String> =
        (0..40u64).map(|i| if i % 3 == 0 { i.to_string() } else { format!("waited {} ms", 100 - i) }).collect();
    assert_eq!(texts(&batch.messages), expected);
    let ids: Vec<String> = batch.messages.iter().map(|m| m.tool_call_id.clone()).collect();
    assert_eq!(ids, (0..40).map(|i| format!("call_{i}")).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_future_can_be_spawned_on_another_thread() {
    let registry = Arc::new(Registry::builder().tool(add::TOOL).tool(call_id::TOOL).build().unwrap());
    let ctx = ToolContext::new();
    let tasks: Vec<_> = (0..8i64)
        .map(|i| {
            let (registry, ctx) = (registry.clone(), ctx.clone());
            tokio::spawn(async move {
                let name = if i % 2 == 0 { "add" } else { "call_id" };
                let arguments = if i % 2 == 0 { format!(r#"{{"a":{i},"b":{i}}}"#) } else { "{}".to_owned() };
                let call = ToolCall::new(format!("call_{i}"), name, arguments);
                registry.call(&call, &ctx).await.text().into_owned()
            })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    assert_eq!(answers, ["0", "call_1", "4", "call_3", "8", "call_5", "12", "call_7"]);
}

/// Calls `add` through `OUTER_SELF` itself with its own context (a tool calling the registry that
/// runs it).
#[tool]
async fn add_through_registry(ctx: &ToolContext) -> String {
    let message = OUTER_SELF.call(&ToolCall::new("call_nested", "add", r#"{"a":20,"b":22}"#), ctx).await;
    format!("{} in {}", message.text(), ctx.call_id().unwrap_or("none"))
}

/// The registry `add_through_registry` runs in and calls into.
static OUTER_SELF: LazyLock<Registry> =
    LazyLock::new(|| Registry::builder().tool(add::TOOL).tool(add_through_registry::TOOL).build().expect("two tools"));

#[tokio::test(start_paused = true)]
async fn a_tool_can_call_a_context_free_tool_of_its_own_registry() {
    let message = OUTER_SELF.call(&call_text("call_1", "add_through_registry", "{}"), &ToolContext::new()).await;
    assert_eq!(message.text(), "42 in call_1");
}

// ---------------------------------------------------------------------------------------------
// The output store made by the first call (in a child process whose cache directory is a
// temporary one: the user's is never written)
// ---------------------------------------------------------------------------------------------

/// The environment variable that makes `child_makes_the_output_store_on_first_use` run.
const STORE_CHILD: &str = "CALL_PATHS_REVIEW_STORE_CHILD";

#[test]
fn child_makes_the_output_store_on_first_use() {
    let Some(cache) = std::env::var_os(STORE_CHILD) else { return };
    let root = std::path::Path::new(&cache).join("tool-runtime").join("output-cache");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    let registry = Registry::builder()
        .tool(add::TOOL)
        .tool(wait_ms::TOOL)
        .tool(tool_output_cache::TOOL)
        .output(OutputLayer::new())
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let refs = std::cell::RefCell::new(Vec::new());
    let report = |what: &str, message: &ToolMessage| {
        let shown = message.ref_id.as_ref().map(|r| format!("minted({})", r.len()));
        println!("STORE {what}: {} ref={} root={}", message.text(), shown.unwrap_or("none".to_owned()), root.is_dir());
        refs.borrow_mut().extend(message.ref_id.clone());
    };
    let exempt = runtime.block_on(registry.call(&call_text("call_0", "tool_output_cache", r#"{"ref_id":"x"}"#), &ctx));
    report("exempt", &exempt);
    let first = runtime.block_on(registry.call(&call_text("call_1", "add", r#"{"a":1,"b":2}"#), &ctx));
    report("first", &first);
    let second = runtime.block_on(registry.call(&call_text("call_2", "wait_ms", r#"{"ms":3}"#), &ctx));
    report("second", &second);
    let batch = runtime.block_on(registry.call_batch(&[call_text("call_3", "add", r#"{"a":2,"b":2}"#)], &ctx));
    report("batch", &batch.messages[0]);
    // Fresh registries (nothing made yet): first used by a call that finishes after its first
    // poll, and by a batch.
    let fresh = || Registry::builder().tool(add::TOOL).tool(wait_ms::TOOL).output(OutputLayer::new()).build().unwrap();
    let later = runtime.block_on(fresh().call(&call_text("call_4", "wait_ms", r#"{"ms":2}"#), &ctx));
    report("fresh later", &later);
    let calls = [call_text("call_5", "wait_ms", r#"{"ms":1}"#), call_text("call_6", "add", r#"{"a":3,"b":3}"#)];
    let fresh_batch = runtime.block_on(fresh().call_batch(&calls, &ctx));
    report("fresh batch", &fresh_batch.messages[0]);
    report("fresh batch", &fresh_batch.messages[1]);
    let mut stored: Vec<String> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    stored.sort();
    let mut refs = refs.take();
    refs.sort();
    println!("STORE dirs: {} of the {} refs", if stored == refs { "all" } else { "not all" }, refs.len());
}

/// Stands in for the cache reader (same name, so the output layer exempts it); reads no context.
#[tool]
fn tool_output_cache(
    /// Ignored.
    ref_id: String,
) -> String {
    format!("cached {ref_id}")
}

#[test]
fn the_first_context_free_call_makes_the_output_store_and_an_exempt_call_does_not() {
    if std::env::var_os(STORE_CHILD).is_some() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_makes_the_output_store_on_first_use", "--nocapture", "--test-threads=1"])
        .env(STORE_CHILD, cache.path())
        .env("XDG_CACHE_HOME", cache.path())
        .env("HOME", cache.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    // The harness may print the test's name on the line the first report starts.
    let lines: Vec<&str> = stdout.lines().filter_map(|l| l.find("STORE ").map(|at| &l[at..])).collect();
    assert_eq!(
        lines,
        [
            "STORE exempt: cached x ref=none root=false",
            "STORE first: 3 ref=minted(22) root=true",
            "STORE second: waited 3 ms ref=minted(22) root=true",
            "STORE batch: 4 ref=minted(22) root=true",
            "STORE fresh later: waited 2 ms ref=minted(22) root=true",
            "STORE fresh batch: waited 1 ms ref=minted(22) root=true",
            "STORE fresh batch: 6 ref=minted(22) root=true",
            "STORE dirs: all of the 6 refs",
        ],
        "child stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

// ---------------------------------------------------------------------------------------------
// The output layer's shortcuts
// ---------------------------------------------------------------------------------------------

#[test]
fn a_turn_exactly_at_its_budget_is_left_whole_and_one_byte_over_is_cut() {
    let message = |id: &str, text: &str| {
        let mut message = ToolMessage::success(id, "add", ToolResult::text(text));
        message.ref_id = Some(id.to_owned());
        message
    };
    let parts = ToolMessage::success(
        "call_3",
        "add",
        ToolResult::Parts(vec![ContentPart::text("x".repeat(100)), ContentPart::text("y".repeat(100))]),
    );
    let turn = vec![message("call_1", &"a".repeat(300)), message("call_2", &"b".repeat(300)), parts];
    // 300 + 300 + 100 + 100 bytes of text.
    let mut at_budget = turn.clone();
    OutputLayer::new().turn_bytes(800).apply_turn(&mut at_budget);
    assert_eq!(at_budget, turn);
    let mut over = turn.clone();
    OutputLayer::new().turn_bytes(799).apply_turn(&mut over);
    let trimmed: Vec<bool> = over.iter().map(|m| m.trimmed).collect();
    // Max-min fairness: both parts fit; 599 bytes left for two texts of 300, the odd byte to the
    // first, so only the second is cut, to at most its 299 bytes.
    assert_eq!(trimmed, [false, true, false]);
    assert_eq!((&over[0], &over[2]), (&turn[0], &turn[2]));
    // 78 bytes each side of the marker, 144 omitted: 300 in all.
    let marker = "\n[... 144 bytes omitted by the turn output budget; read them with tool_output_cache \
                  {\"ref_id\":\"call_2\"} or search with tool_output_cache_grep]\n";
    assert_eq!(over[1].text(), format!("{}{marker}{}", "b".repeat(78), "b".repeat(78)));
}

// ---------------------------------------------------------------------------------------------
// More of resolution, `Done` and tracing
// ---------------------------------------------------------------------------------------------

/// How many times `make_per_call_slowly` ran (only the per-call resolution test uses it).
static PER_CALL_MADE: AtomicUsize = AtomicUsize::new(0);

fn make_per_call_slowly(_ctx: &ToolContext) -> BoxFuture<'_, Result<usize, DependencyError>> {
    Box::pin(async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        Ok(PER_CALL_MADE.fetch_add(1, Ordering::SeqCst) + 1)
    })
}

/// A call-scoped number that takes 10 ms to make.
static PER_CALL: DependencyKey<usize> = DependencyKey::per_call_async("review_per_call", make_per_call_slowly);

/// Resolves `PER_CALL` twice at the same time, then once more.
#[tool]
async fn resolve_thrice(ctx: &ToolContext) -> String {
    let (one, two) = tokio::join!(ctx.resolve(&PER_CALL), ctx.resolve(&PER_CALL));
    let three = ctx.resolve(&PER_CALL).await;
    format!("{} {} {}", one.unwrap(), two.unwrap(), three.unwrap())
}

#[tokio::test(start_paused = true)]
async fn a_call_scoped_value_is_made_once_a_call_even_when_resolved_concurrently() {
    let registry = Registry::builder().tool(resolve_thrice::TOOL).build().unwrap();
    let ctx = ToolContext::new();
    let first = registry.call(&call_text("call_1", "resolve_thrice", "{}"), &ctx).await;
    let second = registry.call(&call_text("call_2", "resolve_thrice", "{}"), &ctx).await;
    assert_eq!((first.text().into_owned(), second.text().into_owned()), ("1 1 1".to_owned(), "2 2 2".to_owned()));
}

/// Ends the run; reads no context.
#[tool]
fn finish_run(
    /// The final message.
    summary: String,
) -> ToolResult {
    ToolResult::done(summary)
}

#[tokio::test(start_paused = true)]
async fn a_context_free_call_that_ends_the_run_inline_stops_the_turn_after_the_others() {
    let registry = Registry::builder().tool(finish_run::TOOL).tool(wait_ms::TOOL).build().unwrap();
    let calls = [
        call_text("call_1", "wait_ms", r#"{"ms":9}"#),
        call_text("call_2", "finish_run", r#"{"summary":"all done"}"#),
        call_text("call_3", "finish_run", r#"{"summary":"second"}"#),
    ];
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(texts(&batch.messages), ["waited 9 ms", "all done", "second"]);
    assert_eq!(batch.stop, Some(TurnStop::Done { tool_call_id: "call_2".to_owned(), message: "all done".to_owned() }));
}

#[test]
fn with_a_subscriber_a_policy_without_an_answer_at_once_is_still_asked_once_a_call() {
    let capture = capture::Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    let asked = Arc::new(Asked::default());
    let registry =
        Registry::builder().tool(add::TOOL).tool(call_id::TOOL).policy(Awaited(asked.clone())).build().unwrap();
    let ctx = ToolContext::new();
    let one = runtime.block_on(registry.call(&call_text("call_1", "add", r#"{"a":1,"b":2}"#), &ctx));
    let calls = [call_text("call_2", "call_id", "{}"), call_text("call_3", "add", r#"{"a":3,"b":3}"#)];
    let batch = runtime.block_on(registry.call_batch(&calls, &ctx));
    assert_eq!([texts(&[one]), texts(&batch.messages)].concat(), ["3", "Permission denied: no ids", "6"]);
    assert_eq!(asked.counts(), (3, 3));
    let outcomes: Vec<(String, String)> = capture
        .0
        .spans
        .lock()
        .unwrap()
        .values()
        .filter(|(name, _)| name == "tool_call")
        .map(|(_, f)| (f["gen_ai.tool.call.id"].clone(), f["outcome"].clone()))
        .collect();
    let pair = |id: &str, outcome: &str| (id.to_owned(), outcome.to_owned());
    assert_eq!(outcomes, [pair("call_1", "ok"), pair("call_2", "denied"), pair("call_3", "ok")]);
}

// ---------------------------------------------------------------------------------------------
// What a registered tool says about its context
// ---------------------------------------------------------------------------------------------

/// Adds two numbers on the blocking pool; reads no context.
#[tool(blocking)]
fn add_blocking(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> String {
    (a + b).to_string()
}

/// Says its call id on the blocking pool.
#[tool(blocking)]
fn call_id_blocking(ctx: &ToolContext) -> String {
    ctx.call_id().unwrap_or("none").to_owned()
}

fn hello(_ctx: &ToolContext) -> Result<String, DependencyError> {
    Ok("hello".to_owned())
}

static GREETING: DependencyKey<String> = DependencyKey::per_call("greeting", hello);

/// Greets with the greeting dependency (and takes no context).
#[tool]
fn greet(#[depends(GREETING)] greeting: String) -> String {
    greeting
}

#[test]
fn a_registered_tool_keeps_what_it_says_about_its_context() {
    let registry = Registry::builder()
        .tool(add::TOOL)
        .tool(add_blocking::TOOL)
        .tool(call_id::TOOL)
        .tool(call_id_blocking::TOOL)
        .tool(greet::TOOL)
        .tool_dyn(Arc::new(DefaultReads(definition("default_reads"))))
        .build()
        .unwrap();
    let reads: Vec<(&str, bool)> = registry.names().map(|n| (n, registry.get(n).unwrap().reads_context())).collect();
    assert_eq!(
        reads,
        [
            ("add", false),
            ("add_blocking", false),
            ("call_id", true),
            ("call_id_blocking", true),
            ("default_reads", true),
            ("greet", true)
        ]
    );
}

#[tokio::test]
async fn a_dependency_is_resolved_in_the_call_of_the_tool_that_asks_for_it() {
    let registry = Registry::builder().tool(greet::TOOL).build().unwrap();
    let message = registry.call(&call_text("call_1", "greet", "{}"), &ToolContext::new()).await;
    assert_eq!((message.text().into_owned(), message.is_error), ("hello".to_owned(), false));
}

#[tokio::test]
async fn a_context_free_tool_gives_the_same_errors_as_any_other() {
    let registry = Registry::builder().tool(add::TOOL).build().unwrap();
    let ctx = ToolContext::new();
    let bad = registry.call(&call_text("call_1", "add", r#"{"a":1}"#), &ctx).await;
    assert_eq!(bad.text(), "invalid arguments for `add`: missing field `b`");
    let unknown = registry.call(&call_text("call_2", "sub", "{}"), &ctx).await;
    assert_eq!(unknown.text(), "unknown tool `sub`; available tools: add");
    let token = CancellationToken::new();
    token.cancel();
    let cancelled = ToolContext::builder().cancellation(token).build();
    let message = registry.call(&call_text("call_3", "add", r#"{"a":1,"b":2}"#), &cancelled).await;
    assert_eq!((message.text().into_owned(), message.is_error), ("tool `add` was cancelled".to_owned(), true));
}

#[tokio::test(start_paused = true)]
async fn a_context_free_blocking_tool_finishes_after_its_first_poll_in_a_call_and_a_batch() {
    let registry =
        Registry::builder().tool(add_blocking::TOOL).tool(call_id_blocking::TOOL).tool(add::TOOL).build().unwrap();
    let ctx = ToolContext::new();
    let one = registry.call(&call_text("call_1", "add_blocking", r#"{"a":20,"b":1}"#), &ctx).await;
    let calls = [
        call_text("call_2", "add_blocking", r#"{"a":1,"b":1}"#),
        call_text("call_3", "call_id_blocking", "{}"),
        call_text("call_4", "add", r#"{"a":0,"b":1}"#),
        call_text("call_5", "add_blocking", r#"{"a":"x","b":1}"#),
    ];
    let batch = registry.call_batch(&calls, &ctx).await;
    assert_eq!(
        [texts(&[one]), texts(&batch.messages)].concat(),
        [
            "21",
            "2",
            "call_3",
            "1",
            "invalid arguments for `add_blocking`: `a`: invalid type: string \"x\", expected an integer from -9223372036854775808 to 9223372036854775807"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Synchronous tools (`Tool::call_now`)
// ---------------------------------------------------------------------------------------------

/// Multiplies two numbers; an `inline` plain `fn`.
#[tool(inline)]
fn times(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> String {
    (a * b).to_string()
}

#[tokio::test]
async fn an_inline_plain_fn_tool_runs_at_once_and_an_async_blocking_or_dependent_one_does_not() {
    let ctx = ToolContext::new();
    assert_eq!(times::TOOL.call_now(r#"{"a":6,"b":7}"#, &ctx), Some(Ok(ToolResult::text("42"))));
    let bad = times::TOOL.call_now(r#"{"a":6}"#, &ctx).expect("an inline fn runs at once").unwrap_err();
    assert_eq!(bad.to_string(), "invalid arguments for `times`: missing field `b`");
    // An inline `fn` that takes the context runs at once too (the registry gives it its own first).
    assert_eq!(call_id::TOOL.call_now("{}", &ctx), Some(Ok(ToolResult::text("none"))));
    // An `async fn`, a `blocking` one and one with a dependency have a future only.
    assert_eq!(add::TOOL.call_now(r#"{"a":1,"b":2}"#, &ctx), None);
    assert_eq!(add_blocking::TOOL.call_now(r#"{"a":1,"b":2}"#, &ctx), None);
    assert_eq!(greet::TOOL.call_now("{}", &ctx), None);
    // Their futures give what `call_now` gives.
    assert_eq!(Tool::call(times::TOOL, r#"{"a":6,"b":7}"#, &ctx).await, Ok(ToolResult::text("42")));
}

static COUNTED_NOW_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Counts its runs; an `inline` plain `fn`.
#[tool(inline)]
fn counted_now() -> String {
    COUNTED_NOW_RUNS.fetch_add(1, Ordering::SeqCst).to_string()
}

#[tokio::test]
async fn the_future_of_a_plain_fn_tool_runs_it_when_first_polled_not_when_made() {
    let ctx = ToolContext::new();
    let future = Tool::call(counted_now::TOOL, "{}", &ctx);
    assert_eq!(COUNTED_NOW_RUNS.load(Ordering::SeqCst), 0);
    assert_eq!(future.await, Ok(ToolResult::text("0")));
    assert_eq!(COUNTED_NOW_RUNS.load(Ordering::SeqCst), 1);
}

/// Answers `now` from `call_now` and `future` from `call`'s future, so a test sees which one the
/// registry took; panics in `call_now` when `panics`.
struct NowOrFuture {
    definition: ToolDefinition,
    reads: bool,
    panics: bool,
}

impl NowOrFuture {
    fn shared(name: &str, reads: bool, panics: bool) -> Arc<dyn Tool> {
        Arc::new(Self { definition: definition(name), reads, panics })
    }
}

impl Tool for NowOrFuture {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn reads_context(&self) -> bool {
        self.reads
    }

    fn call<'a>(&'a self, _arguments: &'a str, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        Box::pin(async { Ok(ToolResult::text("future")) })
    }

    fn call_now(&self, _arguments: &str, _ctx: &ToolContext) -> Option<Result<ToolResult, ToolError>> {
        assert!(!self.panics, "boom in call_now");
        Some(Ok(ToolResult::text("now")))
    }
}

#[tokio::test(start_paused = true)]
async fn the_registry_runs_a_call_at_once_only_where_nothing_has_to_happen_around_it() {
    let plain = || {
        Registry::builder()
            .tool_dyn(NowOrFuture::shared("free", false, false))
            .tool_dyn(NowOrFuture::shared("own", true, false))
    };
    let registry = plain().build().unwrap();
    let ctx = ToolContext::new();
    let free = registry.call(&call_text("call_1", "free", "{}"), &ctx).await;
    // A tool that reads its context gets one of its own call: the future path.
    let own = registry.call(&call_text("call_2", "own", "{}"), &ctx).await;
    let calls = [call_text("call_3", "free", "{}"), call_text("call_4", "own", "{}")];
    let batch = registry.call_batch(&calls, &ctx).await;
    assert_eq!(texts(&[[free, own].as_slice(), &batch.messages].concat()), ["now", "future", "now", "future"]);

    // A time limit, or argument repair, takes the future path.
    let limited = plain().default_timeout(Duration::from_secs(5)).build().unwrap();
    let repaired = plain().repair(RepairPolicy::all()).build().unwrap();
    let limited = limited.call(&call_text("call_5", "free", "{}"), &ctx).await;
    let repaired = repaired.call(&call_text("call_6", "free", "{}"), &ctx).await;
    assert_eq!(texts(&[limited, repaired]), ["future", "future"]);
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_call_now_becomes_the_message_of_its_call() {
    let registry = Registry::builder()
        .tool_dyn(NowOrFuture::shared("boom", false, true))
        .tool_dyn(NowOrFuture::shared("fine", false, false))
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let one = registry.call(&call_text("call_1", "boom", "{}"), &ctx).await;
    let calls = [call_text("call_2", "boom", "{}"), call_text("call_3", "fine", "{}")];
    let batch = registry.call_batch(&calls, &ctx).await;
    let panicked = "tool `boom` panicked: boom in call_now";
    assert_eq!(texts(&[[one].as_slice(), &batch.messages].concat()), [panicked, panicked, "now"]);
    assert_eq!(batch.messages.iter().map(|m| m.is_error).collect::<Vec<_>>(), [true, false]);
}
