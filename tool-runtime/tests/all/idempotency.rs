//! Idempotent retries (`tool_runtime::idempotency`): a call with an idempotency key runs at most
//! once per key, principal and tool; a retry gets the first message; other arguments under the
//! same key are refused; a retry during the run waits for it, or is told so; a call that did not
//! run frees its key; a call dropped mid-run (its worker killed) holds the key until its lease ends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tool_runtime::ToolErrorKind;
use tool_runtime::idempotency::{Idempotency, MemoryIdempotencyStore};
use tool_runtime::prelude::*;

/// A ledger: each append is an effect that must happen once.
#[derive(Default)]
struct Ledger {
    lines: Mutex<Vec<String>>,
    runs: AtomicUsize,
    /// When set, an append waits for it before writing.
    gate: Option<Arc<Notify>>,
}

#[tools]
impl Ledger {
    /// Append a line; returns its number.
    #[tool]
    async fn append(
        &self,
        /// The line.
        line: String,
    ) -> String {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if let Some(gate) = &self.gate {
            gate.notified().await;
        }
        let mut lines = self.lines.lock().unwrap();
        lines.push(line.clone());
        format!("appended {line:?} as line {}", lines.len())
    }

    /// Count the lines.
    #[tool]
    async fn count(&self) -> String {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.lines.lock().unwrap().len().to_string()
    }
}

fn registry(ledger: Arc<Ledger>, idempotency: Idempotency) -> Registry {
    Registry::builder().tools_of(ledger).idempotency(idempotency).build().unwrap()
}

fn idempotent() -> Idempotency {
    Idempotency::new(MemoryIdempotencyStore::new())
}

fn append(id: &str, arguments: &str, key: &str) -> ToolCall {
    ToolCall::new(id, "append", arguments).with_idempotency_key(key)
}

#[tokio::test]
async fn a_retry_with_the_same_key_and_arguments_gets_the_first_result_without_running_again() {
    let ledger = Arc::new(Ledger::default());
    let registry = registry(ledger.clone(), idempotent());
    let ctx = ToolContext::new();
    let first = registry.call(&append("c1", r#"{"line":"pay 5"}"#, "k-1"), &ctx).await;
    let retry = registry.call(&append("c2", r#"{ "line" : "pay 5" }"#, "k-1"), &ctx).await;
    assert_eq!(first.text(), r#"appended "pay 5" as line 1"#);
    assert_eq!(retry.text(), r#"appended "pay 5" as line 1"#);
    assert_eq!(retry.tool_call_id, "c2");
    assert!(!retry.is_error);
    assert_eq!(ledger.runs.load(Ordering::SeqCst), 1);
    assert_eq!(*ledger.lines.lock().unwrap(), vec!["pay 5".to_owned()]);
}

#[tokio::test]
async fn the_same_key_with_other_arguments_is_refused_before_the_tool_runs() {
    let ledger = Arc::new(Ledger::default());
    let registry = registry(ledger.clone(), idempotent());
    let ctx = ToolContext::new();
    registry.call(&append("c1", r#"{"line":"pay 5"}"#, "k-1"), &ctx).await;
    let other = registry.call(&append("c2", r#"{"line":"pay 500"}"#, "k-1"), &ctx).await;
    assert!(other.is_error);
    assert_eq!(other.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert_eq!(
        other.text(),
        "tool `append` did not run: this idempotency key was used for a call with other arguments; send a new key \
         for new arguments, or the same arguments to get the first call's result"
    );
    assert_eq!(ledger.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn calls_without_a_key_run_every_time() {
    let ledger = Arc::new(Ledger::default());
    let registry = registry(ledger.clone(), idempotent());
    let ctx = ToolContext::new();
    for id in ["c1", "c2"] {
        registry.call(&ToolCall::new(id, "append", r#"{"line":"x"}"#), &ctx).await;
    }
    assert_eq!(ledger.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_key_is_scoped_to_its_principal_and_its_tool() {
    let ledger = Arc::new(Ledger::default());
    let registry = registry(ledger.clone(), idempotent());
    let ann = ToolContext::builder().principal("ann").build();
    let bob = ToolContext::builder().principal("bob").build();
    let first = registry.call(&append("c1", r#"{"line":"x"}"#, "k-1"), &ann).await;
    let other_principal = registry.call(&append("c2", r#"{"line":"x"}"#, "k-1"), &bob).await;
    let other_tool = registry.call(&ToolCall::new("c3", "count", "{}").with_idempotency_key("k-1"), &ann).await;
    assert_eq!(first.text(), r#"appended "x" as line 1"#);
    assert_eq!(other_principal.text(), r#"appended "x" as line 2"#);
    assert_eq!(other_tool.text(), "2");
    assert_eq!(ledger.runs.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn a_retry_while_the_first_call_runs_waits_for_its_result() {
    let gate = Arc::new(Notify::new());
    let ledger = Arc::new(Ledger { gate: Some(gate.clone()), ..Ledger::default() });
    let registry = registry(ledger.clone(), idempotent());
    let ctx = ToolContext::new();
    let (first_call, retry_call) = (append("c1", r#"{"line":"x"}"#, "k-1"), append("c2", r#"{"line":"x"}"#, "k-1"));
    let (first, retry, ()) = tokio::join!(registry.call(&first_call, &ctx), registry.call(&retry_call, &ctx), async {
        // The retry has read the store at least once (it polls every 50 ms) before the first ends.
        tokio::time::sleep(Duration::from_millis(120)).await;
        gate.notify_one();
    });
    assert_eq!(first.text(), r#"appended "x" as line 1"#);
    assert_eq!(retry.text(), r#"appended "x" as line 1"#);
    assert_eq!(retry.tool_call_id, "c2");
    assert_eq!(ledger.runs.load(Ordering::SeqCst), 1);
}

const STILL_RUNNING: &str = "tool `append` did not run again: the first call with this idempotency key is still \
                             running; retry later with the same key to get its result";

#[tokio::test(start_paused = true)]
async fn a_retry_that_may_not_wait_is_told_the_first_call_still_runs() {
    let gate = Arc::new(Notify::new());
    let ledger = Arc::new(Ledger { gate: Some(gate.clone()), ..Ledger::default() });
    let registry = registry(ledger.clone(), idempotent().wait(Duration::ZERO));
    let ctx = ToolContext::new();
    let (first_call, retry_call) = (append("c1", r#"{"line":"x"}"#, "k-1"), append("c2", r#"{"line":"x"}"#, "k-1"));
    let (first, retry) = tokio::join!(registry.call(&first_call, &ctx), async {
        let retry = registry.call(&retry_call, &ctx).await;
        gate.notify_one();
        retry
    });
    assert_eq!(first.text(), r#"appended "x" as line 1"#);
    assert_eq!(retry.text(), STILL_RUNNING);
    assert_eq!(retry.error_kind, Some(ToolErrorKind::Unavailable));
    assert_eq!(ledger.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_call_whose_arguments_do_not_decode_frees_its_key() {
    let ledger = Arc::new(Ledger::default());
    let registry = registry(ledger.clone(), idempotent());
    let ctx = ToolContext::new();
    let bad = registry.call(&append("c1", r#"{"line":5}"#, "k-1"), &ctx).await;
    assert_eq!(bad.error_kind, Some(ToolErrorKind::InvalidArguments));
    let good = registry.call(&append("c2", r#"{"line":"x"}"#, "k-1"), &ctx).await;
    assert_eq!(good.text(), r#"appended "x" as line 1"#);
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_mid_run_holds_its_key_until_the_lease_ends_then_a_retry_runs() {
    let gate = Arc::new(Notify::new());
    let ledger = Arc::new(Ledger { gate: Some(gate), ..Ledger::default() });
    let lease = Duration::from_secs(60);
    let registry = registry(ledger.clone(), idempotent().lease(lease).wait(Duration::ZERO));
    let ctx = ToolContext::new();
    let call = append("c1", r#"{"line":"x"}"#, "k-1");
    // The worker dies mid-call: its future is dropped while the tool waits.
    let dropped = tokio::time::timeout(Duration::from_millis(10), registry.call(&call, &ctx)).await;
    assert!(dropped.is_err());
    let during = registry.call(&append("c2", r#"{"line":"x"}"#, "k-1"), &ctx).await;
    assert_eq!(during.text(), STILL_RUNNING);
    tokio::time::advance(lease).await;
    let after =
        tokio::time::timeout(Duration::from_millis(10), registry.call(&append("c3", r#"{"line":"x"}"#, "k-1"), &ctx))
            .await;
    // It ran (the tool started and waits at its gate again): the run count says so.
    assert!(after.is_err());
    assert_eq!(ledger.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_principal_over_its_quota_of_keys_is_refused_with_the_stores_error() {
    let ledger = Arc::new(Ledger::default());
    let store = MemoryIdempotencyStore::with_caps(100, 2, 1 << 20);
    let registry = registry(ledger.clone(), Idempotency::new(store));
    let ctx = ToolContext::builder().principal("ann").build();
    for key in ["k-1", "k-2"] {
        registry.call(&append(key, r#"{"line":"x"}"#, key), &ctx).await;
    }
    let third = registry.call(&append("c3", r#"{"line":"x"}"#, "k-3"), &ctx).await;
    assert_eq!(
        third.text(),
        "tool `append` did not run: its idempotency record could not be kept: this caller holds its most records in \
         the idempotency store (2: idempotency keys and used approval tokens); retry once older ones expire"
    );
    assert_eq!(ledger.runs.load(Ordering::SeqCst), 2);
}

#[test]
fn a_calls_debug_form_hides_its_idempotency_key() {
    let call = ToolCall::new("c1", "append", "{}").with_idempotency_key("k-secret-1");
    let shown = format!("{call:?}");
    assert!(!shown.contains("k-secret-1"), "{shown}");
    assert!(shown.contains(r#"idempotency_key: Some("[redacted]")"#), "{shown}");
}

#[tokio::test]
async fn a_key_sent_with_the_call_tool_meta_tool_holds_for_the_tool_it_calls() {
    let ledger = Arc::new(Ledger::default());
    let registry = registry(ledger.clone(), idempotent());
    let ctx = ToolContext::new();
    let through = |id: &str| {
        let arguments = serde_json::json!({"name": "append", "arguments": {"line": "x"}}).to_string();
        ToolCall::new(id, tool_runtime::search::CALL_TOOL, arguments).with_idempotency_key("k-1")
    };
    let first = registry.call_with_search(&through("c1"), &ctx).await;
    let retry = registry.call_with_search(&through("c2"), &ctx).await;
    assert_eq!(first.text(), r#"appended "x" as line 1"#);
    assert_eq!(retry.text(), r#"appended "x" as line 1"#);
    assert_eq!(ledger.runs.load(Ordering::SeqCst), 1);
}

/// Payments made, one line each: a tool whose argument `request_id` is its idempotency key.
static PAYMENTS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Pay an amount once per request id.
#[tool(idempotency_key = "request_id")]
fn pay(
    /// The caller's id of this payment request.
    #[arg(rename = "requestId")]
    request_id: Option<String>,
    /// The payee.
    payee: String,
    /// The amount in cents.
    cents: u64,
) -> String {
    let mut payments = PAYMENTS.lock().unwrap();
    payments.push(format!("{payee} {cents} {request_id:?}"));
    format!("payment {} of {cents} cents to {payee}", payments.len())
}

/// The payments to `payee` made so far.
fn payments_to(payee: &str) -> Vec<String> {
    PAYMENTS.lock().unwrap().iter().filter(|line| line.starts_with(&format!("{payee} "))).cloned().collect()
}

fn pay_registry() -> Registry {
    Registry::builder().tool(pay::TOOL).idempotency(idempotent()).build().unwrap()
}

#[test]
fn a_tool_declares_the_property_of_its_idempotency_key_argument() {
    assert_eq!(pay::TOOL.idempotency_key_argument(), Some("requestId"));
    assert_eq!(Tool::idempotency_key_argument(&append_spec()), None);
}

/// A tool without `idempotency_key`, for comparison.
fn append_spec() -> impl Tool {
    /// Say hello.
    #[tool]
    fn hello() -> String {
        "hello".to_owned()
    }
    hello::TOOL
}

#[tokio::test]
async fn the_declared_argument_is_the_key_so_a_repeated_request_id_runs_once_without_a_call_key() {
    let registry = pay_registry();
    let ctx = ToolContext::new();
    let arguments = r#"{"requestId":"r-1","payee":"ann","cents":500}"#;
    let first = registry.call(&ToolCall::new("c1", "pay", arguments), &ctx).await;
    let again = registry.call(&ToolCall::new("c2", "pay", arguments), &ctx).await;
    assert!(!first.is_error, "{}", first.text());
    assert_eq!(again.text(), first.text());
    assert_eq!(again.tool_call_id, "c2");
    assert_eq!(payments_to("ann"), ["ann 500 Some(\"r-1\")"]);
}

#[tokio::test]
async fn the_declared_argument_wins_over_the_calls_own_key() {
    let registry = pay_registry();
    let ctx = ToolContext::new();
    let arguments = r#"{"requestId":"r-2","payee":"bob","cents":300}"#;
    let first = registry.call(&ToolCall::new("c1", "pay", arguments).with_idempotency_key("k-a"), &ctx).await;
    let again = registry.call(&ToolCall::new("c2", "pay", arguments).with_idempotency_key("k-b"), &ctx).await;
    assert_eq!(again.text(), first.text());
    assert_eq!(payments_to("bob"), ["bob 300 Some(\"r-2\")"]);
}

#[tokio::test]
async fn the_declared_key_with_other_arguments_is_refused_before_the_tool_runs() {
    let registry = pay_registry();
    let ctx = ToolContext::new();
    let first = registry.call(&ToolCall::new("c1", "pay", r#"{"requestId":"r-3","payee":"cy","cents":1}"#), &ctx).await;
    let other = registry.call(&ToolCall::new("c2", "pay", r#"{"requestId":"r-3","payee":"cy","cents":2}"#), &ctx).await;
    assert!(!first.is_error);
    assert_eq!(other.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert_eq!(
        other.text(),
        "tool `pay` did not run: this idempotency key was used for a call with other arguments; send a new key for \
         new arguments, or the same arguments to get the first call's result"
    );
    assert_eq!(payments_to("cy"), ["cy 1 Some(\"r-3\")"]);
}

#[tokio::test]
async fn without_the_declared_argument_the_calls_own_key_counts_and_without_both_every_call_runs() {
    let registry = pay_registry();
    let ctx = ToolContext::new();
    let arguments = r#"{"payee":"dee","cents":7}"#;
    registry.call(&ToolCall::new("c1", "pay", arguments).with_idempotency_key("k-d"), &ctx).await;
    registry.call(&ToolCall::new("c2", "pay", arguments).with_idempotency_key("k-d"), &ctx).await;
    assert_eq!(payments_to("dee"), ["dee 7 None"]);
    let null_id = r#"{"requestId":null,"payee":"dee","cents":7}"#;
    registry.call(&ToolCall::new("c3", "pay", null_id), &ctx).await;
    registry.call(&ToolCall::new("c4", "pay", null_id), &ctx).await;
    assert_eq!(payments_to("dee"), ["dee 7 None", "dee 7 None", "dee 7 None"]);
}

/// The idempotency key this call would forward to `audience` (`none` without one).
#[tool]
fn forward(
    /// Who the key is for.
    audience: String,
    ctx: &ToolContext,
) -> String {
    ctx.idempotency_key_for(&audience).unwrap_or_else(|| "none".to_owned())
}

/// What `forward` gives for `audience` with `key` by `principal`, in a new registry with
/// idempotency under the server key `[server_key; 32]` (none: without idempotency).
async fn forwarded(server_key: Option<u8>, principal: Option<&str>, audience: &str, key: Option<&str>) -> String {
    let mut builder = Registry::builder().tool(forward::TOOL);
    if let Some(byte) = server_key {
        builder = builder.idempotency(Idempotency::new(MemoryIdempotencyStore::new()).server_key([byte; 32]).unwrap());
    }
    let registry = builder.build().unwrap();
    let mut call = ToolCall::new("c1", "forward", format!(r#"{{"audience":"{audience}"}}"#));
    call.idempotency_key = key.map(str::to_owned);
    let ctx = match principal {
        Some(principal) => ToolContext::builder().principal(principal).build(),
        None => ToolContext::new(),
    };
    let message = registry.call(&call, &ctx).await;
    assert!(!message.is_error, "{}", message.text());
    message.text().into_owned()
}

/// Known answers, computed apart from this crate (Python's `hmac` with SHA-256, each part
/// preceded by its length as 8 big-endian bytes).
#[tokio::test]
async fn the_forwarded_key_is_the_hmac_under_the_server_key_of_principal_tool_audience_and_key() {
    assert_eq!(
        forwarded(Some(7), Some("ann"), "up", Some("order-17")).await,
        "21e1582d94e88f562e834286e4d0c7f06e3ba6c74eea3f3855af12569bd5cc40"
    );
    assert_eq!(
        forwarded(Some(7), None, "up", Some("order-17")).await,
        "b49f70eea6302be6a55d31ae2578d6d8eac783f315a6fe4c4329371492077bed"
    );
}

#[tokio::test]
async fn another_principal_audience_key_or_server_key_forwards_an_unrelated_key() {
    let ann = forwarded(Some(7), Some("ann"), "up", Some("order-17")).await;
    let others = [
        forwarded(Some(7), Some("bob"), "up", Some("order-17")).await,
        forwarded(Some(7), Some("ann"), "other", Some("order-17")).await,
        forwarded(Some(7), Some("ann"), "up", Some("order-18")).await,
        forwarded(Some(8), Some("ann"), "up", Some("order-17")).await,
    ];
    for other in &others {
        assert_ne!(other, &ann);
        assert_eq!(other.len(), 64);
    }
    assert!(!ann.contains("order-17") && !ann.contains("ann"));
}

#[tokio::test]
async fn a_call_without_a_key_or_with_an_empty_one_forwards_none() {
    assert_eq!(forwarded(Some(7), Some("ann"), "up", None).await, "none");
    assert_eq!(forwarded(None, Some("ann"), "up", None).await, "none");
    assert_eq!(forwarded(None, Some("ann"), "up", Some("")).await, "none");
}

#[tokio::test]
async fn without_idempotency_the_forwarded_key_is_under_a_secret_of_the_process() {
    let first = forwarded(None, Some("ann"), "up", Some("order-17")).await;
    assert_eq!(first.len(), 64);
    assert!(first.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{first}");
    // Another registry of this process forwards the same key; one with a server key another.
    assert_eq!(forwarded(None, Some("ann"), "up", Some("order-17")).await, first);
    assert_ne!(forwarded(Some(7), Some("ann"), "up", Some("order-17")).await, first);
}

/// A tool that forwards the key of its declared `request_id` argument.
#[tool(idempotency_key = "request_id")]
fn forward_request(
    /// The request's id.
    request_id: String,
    ctx: &ToolContext,
) -> String {
    ctx.idempotency_key_for("up").unwrap_or_else(|| format!("none for {request_id}"))
}

#[tokio::test]
async fn the_declared_argument_is_the_key_forwarded() {
    let registry = Registry::builder().tool(forward_request::TOOL).build().unwrap();
    let ctx = ToolContext::builder().principal("ann").build();
    let call = |id: &str| ToolCall::new("c1", "forward_request", format!(r#"{{"request_id":"{id}"}}"#));
    let r1 = registry.call(&call("r-1"), &ctx).await.text().into_owned();
    let r1_again = registry.call(&call("r-1").with_idempotency_key("ignored"), &ctx).await.text().into_owned();
    let r2 = registry.call(&call("r-2"), &ctx).await.text().into_owned();
    assert_eq!(r1.len(), 64, "{r1}");
    assert_eq!(r1_again, r1);
    assert_ne!(r2, r1);
}

/// How many times the tool `reach` of [`service`] ran.
type Runs = Arc<AtomicUsize>;

/// A registry with idempotency on and a tool `reach` of a service: `answers` says, one entry a
/// call, whether the service answered (`Some(Ok)`: ran and succeeded, `Some(Err)`: ran and
/// failed) or was not reached (`None`: [`ToolError::Unavailable`]). A `DynamicTool`, whose
/// handler's `ToolError` is the call's (a `#[tool]` function's `Err` is its text).
fn service(answers: Vec<Option<Result<&'static str, &'static str>>>) -> (Runs, Registry) {
    let (runs, answers) = (Runs::default(), Arc::new(Mutex::new(answers)));
    let counted = runs.clone();
    let schema = serde_json::json!({"type": "object", "properties": {}});
    let tool = tool_runtime::DynamicTool::new("reach", "Reach the service.", schema, move |_, _| {
        counted.fetch_add(1, Ordering::SeqCst);
        let answer = answers.lock().unwrap().remove(0);
        async move {
            match answer {
                Some(Ok(text)) => Ok(ToolResult::text(text)),
                Some(Err(text)) => Err(ToolError::failed(text)),
                None => {
                    Err(ToolError::Unavailable("the service could not be reached; try the call again later".to_owned()))
                }
            }
        }
    })
    .unwrap();
    (runs, Registry::builder().tool_dyn(Arc::new(tool)).idempotency(idempotent()).build().unwrap())
}

fn reach(id: &str) -> ToolCall {
    ToolCall::new(id, "reach", "{}").with_idempotency_key("k-1")
}

#[tokio::test]
async fn a_call_answered_unavailable_frees_its_key_so_a_retry_runs_the_tool_again() {
    let (runs, registry) = service(vec![None, Some(Ok("done"))]);
    let ctx = ToolContext::new();
    let first = registry.call(&reach("c1"), &ctx).await;
    let retry = registry.call(&reach("c2"), &ctx).await;
    let again = registry.call(&reach("c3"), &ctx).await;
    assert_eq!(first.text(), "the service could not be reached; try the call again later");
    assert_eq!(first.error_kind, Some(ToolErrorKind::Unavailable));
    assert_eq!((retry.text().into_owned(), retry.is_error), ("done".to_owned(), false));
    assert_eq!((again.text().into_owned(), again.tool_call_id.as_str()), ("done".to_owned(), "c3"));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_call_that_ran_and_failed_is_kept_and_replayed_without_running_again() {
    let (runs, registry) = service(vec![Some(Err("card declined")), Some(Ok("done"))]);
    let ctx = ToolContext::new();
    let first = registry.call(&reach("c1"), &ctx).await;
    let retry = registry.call(&reach("c2"), &ctx).await;
    assert_eq!(
        (first.text().into_owned(), first.error_kind),
        ("card declined".to_owned(), Some(ToolErrorKind::Failed))
    );
    assert_eq!(
        (retry.text().into_owned(), retry.is_error, retry.tool_call_id.as_str()),
        ("card declined".to_owned(), true, "c2")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
