//! `#[tool(inline)]` on a plain `fn`: a synchronous tool, run at once ([`Tool::call_now`]) where the
//! registry can, and through its future everywhere else. Every form of a plain `fn` is tried
//! against its `async fn` twin on every path a call can take (the future, `call_now` directly and
//! through `&'static`, the registry with and without a batch, a time limit, argument repair, a
//! `tracing` subscriber, a policy that waits, a `sequential` tool, an output layer), with good and
//! bad arguments: every path gives the same answer, and the twins give the same answers.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime as rt;
use tool_runtime::decode::RepairPolicy;
use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputLayer, OutputStore};
use tool_runtime::prelude::*;
use tool_runtime::{CancellationToken, ContentPart, Permission, PermissionPolicy, PermissionRequest, Tool, ToolSpec};

// ---------------------------------------------------------------------------------------------
// Every path a call can take.
// ---------------------------------------------------------------------------------------------

/// What a message says: `ok: <text>`, `done: <text>` or `error: <text>`, then
/// ` +structured <json>` when it carries structured content.
fn said(message: &ToolMessage) -> String {
    let kind = match (message.is_error, message.done) {
        (true, _) => "error",
        (false, true) => "done",
        (false, false) => "ok",
    };
    let structured = message.structured_content.as_ref().map(|v| format!(" +structured {v}")).unwrap_or_default();
    format!("{kind}: {}{structured}", message.text())
}

/// The text of a panic's payload, as the registry words it.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "Box<dyn Any>".to_owned())
}

/// What a direct run of the tool `name` gives, in the words of the message the registry would make
/// of it (a panic as the registry's panicked message).
fn said_direct(name: &str, outcome: std::thread::Result<Result<ToolResult, ToolError>>) -> String {
    let message = match outcome {
        Ok(Ok(result)) => ToolMessage::success("c1", name, result),
        Ok(Err(error)) => ToolMessage::error("c1", name, error.to_string()),
        Err(payload) => ToolMessage::error("c1", name, format!("tool `{name}` panicked: {}", panic_text(&*payload))),
    };
    said(&message)
}

/// The session every call runs in: a tool that reads its context says it, on every path.
fn caller() -> ToolContext {
    ToolContext::builder().session_id("s1").build()
}

/// A `tracing` subscriber that records every span and counts the `tool_call` ones. Its interest in
/// a callsite is "sometimes", so each span asks the thread's own subscriber: the tests of this file
/// that run beside it on other threads, without one, still see their calls unrecorded.
#[derive(Default)]
struct CountCalls {
    next: AtomicU64,
    tool_calls: Arc<AtomicUsize>,
}

impl tracing::Subscriber for CountCalls {
    fn register_callsite(&self, _metadata: &'static tracing::Metadata<'static>) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, _metadata: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        if span.metadata().name() == "tool_call" {
            self.tool_calls.fetch_add(1, Ordering::SeqCst);
        }
        tracing::span::Id::from_u64(self.next.fetch_add(1, Ordering::SeqCst) + 1)
    }

    fn record(&self, _span: &tracing::span::Id, _values: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _span: &tracing::span::Id, _follows: &tracing::span::Id) {}

    fn event(&self, _event: &tracing::Event<'_>) {}

    fn enter(&self, _span: &tracing::span::Id) {}

    fn exit(&self, _span: &tracing::span::Id) {}
}

/// A policy that allows every call after waiting once (no answer through `check_now`).
struct AllowLater;

impl PermissionPolicy for AllowLater {
    fn check<'a>(&'a self, _request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        Box::pin(async {
            tokio::task::yield_now().await;
            Permission::Allow
        })
    }
}

/// A tool as it is, but `sequential`: every other method is forwarded, `call_now` included.
struct Sequential(&'static ToolSpec);

impl Tool for Sequential {
    fn definition(&self) -> &ToolDefinition {
        self.0.definition()
    }

    fn sequential(&self) -> bool {
        true
    }

    fn reads_context(&self) -> bool {
        Tool::reads_context(self.0)
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        Tool::call(self.0, arguments, ctx)
    }

    fn call_now(&self, arguments: &str, ctx: &ToolContext) -> Option<Result<ToolResult, ToolError>> {
        Tool::call_now(self.0, arguments, ctx)
    }
}

/// A tool as it is, written by hand before `call_now` existed: only `call` is forwarded.
struct FutureOnly(&'static ToolSpec);

impl Tool for FutureOnly {
    fn definition(&self) -> &ToolDefinition {
        self.0.definition()
    }

    fn reads_context(&self) -> bool {
        Tool::reads_context(self.0)
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        Tool::call(self.0, arguments, ctx)
    }
}

/// What `spec` answers to `arguments` on every path, by path. `"call_now"` is `none` for a tool
/// without a synchronous form. The registry paths whose message would differ by design (argument
/// repair changes what is decoded) are named `"repaired ..."`.
async fn every_path(spec: &'static ToolSpec, arguments: &str) -> BTreeMap<&'static str, String> {
    let name = spec.name();
    let ctx = caller();
    let mut got = BTreeMap::new();

    let now = std::panic::catch_unwind(AssertUnwindSafe(|| Tool::call_now(spec, arguments, &ctx)));
    let now = match now {
        Ok(Some(outcome)) => said_direct(name, Ok(outcome)),
        Ok(None) => "none".to_owned(),
        Err(payload) => said_direct(name, Err(payload)),
    };
    got.insert("call_now", now);
    // Through `&'static ToolSpec` behind `dyn Tool`, as a registry holds it.
    let shared: Arc<dyn Tool> = Arc::new(spec);
    let now = std::panic::catch_unwind(AssertUnwindSafe(|| shared.call_now(arguments, &ctx)));
    let now = match now {
        Ok(Some(outcome)) => said_direct(name, Ok(outcome)),
        Ok(None) => "none".to_owned(),
        Err(payload) => said_direct(name, Err(payload)),
    };
    got.insert("call_now through &'static", now);
    let future = AssertUnwindSafe(Tool::call(spec, arguments, &ctx)).catch_unwind().await;
    got.insert("call's future", said_direct(name, future));

    let call = ToolCall::new("c1", name, arguments);
    let plain = Registry::builder().tool(spec).build().unwrap();
    got.insert("registry", said(&plain.call(&call, &ctx).await));
    let batch = plain.call_batch(std::slice::from_ref(&call), &ctx).await;
    got.insert("batch", said(&batch.messages[0]));
    let twice = plain.call_batch(&[call.clone(), ToolCall::new("c2", name, arguments)], &ctx).await;
    assert_eq!(said(&twice.messages[0]), said(&twice.messages[1]), "two calls of one batch differ on {arguments:?}");
    got.insert("batch of two", said(&twice.messages[1]));
    let limited = Registry::builder().tool(spec).default_timeout(Duration::from_secs(60)).build().unwrap();
    got.insert("time limit", said(&limited.call(&call, &ctx).await));
    got.insert("time limit, batch", said(&limited.call_batch(std::slice::from_ref(&call), &ctx).await.messages[0]));
    let waits = Registry::builder().tool(spec).policy(AllowLater).build().unwrap();
    got.insert("policy that waits", said(&waits.call(&call, &ctx).await));
    let sequential = Registry::builder().tool_dyn(Arc::new(Sequential(spec))).build().unwrap();
    let calls = [call.clone(), ToolCall::new("c2", name, arguments)];
    got.insert("sequential, batch", said(&sequential.call_batch(&calls, &ctx).await.messages[1]));
    let store = Arc::new(MemoryStore::new());
    let output = Registry::builder()
        .tool(spec)
        .output(OutputLayer::new())
        .override_dependency(&OUTPUT_STORE, store.clone() as Arc<dyn OutputStore>)
        .build()
        .unwrap();
    got.insert("output layer", said(&output.call(&call, &ctx).await));
    got.insert("output layer, batch", said(&output.call_batch(std::slice::from_ref(&call), &ctx).await.messages[0]));
    // Two calls of one call id: two outputs, each under a ref id of its own.
    assert_eq!(store.len(), 2, "the output layer did not store both calls of {arguments:?}");
    let future_only = Registry::builder().tool_dyn(Arc::new(FutureOnly(spec))).build().unwrap();
    got.insert("without call_now", said(&future_only.call(&call, &ctx).await));

    let counted = CountCalls::default();
    let tool_calls = counted.tool_calls.clone();
    {
        let _traced = tracing::dispatcher::set_default(&tracing::Dispatch::new(counted));
        got.insert("traced", said(&plain.call(&call, &ctx).await));
        got.insert("traced, batch", said(&plain.call_batch(std::slice::from_ref(&call), &ctx).await.messages[0]));
    }
    assert_eq!(tool_calls.load(Ordering::SeqCst), 2, "the subscriber did not see the traced calls");

    let repaired = Registry::builder().tool(spec).repair(RepairPolicy::all()).build().unwrap();
    got.insert("repaired", said(&repaired.call(&call, &ctx).await));
    got.insert("repaired, batch", said(&repaired.call_batch(std::slice::from_ref(&call), &ctx).await.messages[0]));
    got
}

/// Asserts that `sync` (a plain `fn`) answers `inputs` alike on every path, that its `async`
/// twin answers exactly as it does on every path (but has no `call_now`), and returns the one
/// answer per input; a repaired call's answer follows ` | repaired: ` when repair changed it.
async fn twins(sync: &'static ToolSpec, asynchronous: &'static ToolSpec, inputs: &[&str]) -> Vec<String> {
    let mut answers = Vec::new();
    for input in inputs {
        let s = every_path(sync, input).await;
        let mut a = every_path(asynchronous, input).await;
        assert_eq!(a.remove("call_now"), Some("none".to_owned()), "an async tool ran at once on {input:?}");
        assert_eq!(a.remove("call_now through &'static"), Some("none".to_owned()));
        for (path, answer) in &a {
            let answer = answer.replace(&format!("`{}`", asynchronous.name()), &format!("`{}`", sync.name()));
            assert_eq!(&s[path], &answer, "the sync and async forms differ on {input:?} along `{path}`");
        }
        let answer = &s["registry"];
        for (path, other) in &s {
            if !path.starts_with("repaired") {
                assert_eq!(other, answer, "`{}` differs from the registry along `{path}` on {input:?}", sync.name());
            }
        }
        assert_eq!(s["repaired"], s["repaired, batch"]);
        answers.push(if s["repaired"] == *answer {
            answer.clone()
        } else {
            format!("{answer} | repaired: {}", s["repaired"])
        });
    }
    answers
}

// ---------------------------------------------------------------------------------------------
// Borrowed arguments, and a result that borrows one.
// ---------------------------------------------------------------------------------------------

/// Joins borrowed arguments.
#[tool(inline)]
fn borrowed_sync(
    /// A text.
    text: &str,
    /// Numbers.
    items: &[u32],
) -> String {
    format!("{text}|{items:?}")
}

/// Joins borrowed arguments.
#[tool]
async fn borrowed_async(
    /// A text.
    text: &str,
    /// Numbers.
    items: &[u32],
) -> String {
    format!("{text}|{items:?}")
}

#[tokio::test]
async fn borrowed_arguments_reach_a_plain_fn_on_every_path_as_they_reach_an_async_fn() {
    let inputs = [
        r#"{"text":"a","items":[1,2]}"#,
        r#"{"text":"","items":[]}"#,
        r#"{"text":"a","items":"[1]"}"#,
        r#"{"text":"a","items":["1"]}"#,
        r#"{"text":"a","items":[-1]}"#,
        r#"{"text":"a"}"#,
        r#"{"text":"a","items":[],"x":1}"#,
        r#""{\"text\":\"b\",\"items\":[3]}""#,
        "",
        "{",
    ];
    assert_eq!(
        twins(borrowed_sync::TOOL, borrowed_async::TOOL, &inputs).await,
        [
            "ok: a|[1, 2]",
            "ok: |[]",
            "error: invalid arguments for `borrowed_sync`: `items`: invalid type: string \"[1]\", expected a sequence | repaired: ok: a|[1]",
            "error: invalid arguments for `borrowed_sync`: `items[0]`: invalid type: string \"1\", expected an integer from 0 to 4294967295 | repaired: ok: a|[1]",
            "error: invalid arguments for `borrowed_sync`: `items[0]`: must be at least 0; got -1",
            "error: invalid arguments for `borrowed_sync`: missing field `items`",
            "error: invalid arguments for `borrowed_sync`: unknown field `x`; expected one of `items`, `text`",
            "error: invalid arguments for `borrowed_sync`: expected a JSON object of arguments, got a string | repaired: ok: b|[3]",
            "error: invalid arguments for `borrowed_sync`: missing fields `text`, `items`",
            "error: invalid arguments for `borrowed_sync`: not valid JSON: EOF while parsing an object at line 1 column 1; send one JSON object",
        ]
    );
}

/// The first word of a text, borrowed from it.
#[tool(inline)]
fn first_word_sync(
    /// A text.
    text: &str,
) -> &str {
    text.split_whitespace().next().unwrap_or_default()
}

/// The first word of a text, borrowed from it.
#[tool]
async fn first_word_async(
    /// A text.
    text: &str,
) -> &str {
    text.split_whitespace().next().unwrap_or_default()
}

/// The first word of a text, borrowed from it, or why there is none.
#[tool(inline)]
fn first_word_or_sync(
    /// A text.
    text: &str,
) -> Result<&str, String> {
    text.split_whitespace().next().ok_or_else(|| format!("{text:?} has no word; send some text"))
}

/// The first word of a text, borrowed from it, or why there is none.
#[tool]
async fn first_word_or_async(
    /// A text.
    text: &str,
) -> Result<&str, String> {
    text.split_whitespace().next().ok_or_else(|| format!("{text:?} has no word; send some text"))
}

#[tokio::test]
async fn a_plain_fn_returning_a_borrow_of_its_argument_answers_as_its_async_twin() {
    let inputs = [r#"{"text":"  hello world"}"#, r#"{"text":" "}"#, r#"{"text":1}"#];
    assert_eq!(
        twins(first_word_sync::TOOL, first_word_async::TOOL, &inputs).await,
        [
            "ok: hello",
            "ok: ",
            "error: invalid arguments for `first_word_sync`: `text`: invalid type: integer `1`, expected a string"
        ]
    );
    assert_eq!(
        twins(first_word_or_sync::TOOL, first_word_or_async::TOOL, &inputs).await,
        [
            "ok: hello",
            "error: \" \" has no word; send some text",
            "error: invalid arguments for `first_word_or_sync`: `text`: invalid type: integer `1`, expected a string"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Return forms.
// ---------------------------------------------------------------------------------------------

/// A serialisable result.
#[derive(Serialize, JsonSchema)]
struct Sum {
    /// The total.
    total: i64,
    /// The terms.
    terms: Vec<i64>,
}

/// An error like anyhow's: `Display` and `Debug`, not `std::error::Error`.
#[derive(Debug)]
struct Oops(String);

impl std::fmt::Display for Oops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if f.alternate() { write!(f, "oops: {}: the whole chain", self.0) } else { write!(f, "oops: {}", self.0) }
    }
}

fn sum(terms: Vec<i64>) -> Result<Sum, Oops> {
    if terms.is_empty() {
        return Err(Oops("no terms".to_owned()));
    }
    Ok(Sum { total: terms.iter().sum(), terms })
}

/// Adds terms as JSON text.
#[tool(inline)]
fn sum_json_sync(
    /// The terms.
    terms: Vec<i64>,
) -> Result<Sum, Oops> {
    sum(terms)
}

/// Adds terms as JSON text.
#[tool]
async fn sum_json_async(
    /// The terms.
    terms: Vec<i64>,
) -> Result<Sum, Oops> {
    sum(terms)
}

/// Adds terms as a JSON value with its schema.
#[tool(inline, output_schema)]
fn sum_structured_sync(
    /// The terms.
    terms: Vec<i64>,
) -> Result<Sum, Oops> {
    sum(terms)
}

/// Adds terms as a JSON value with its schema.
#[tool(output_schema)]
async fn sum_structured_async(
    /// The terms.
    terms: Vec<i64>,
) -> Result<Sum, Oops> {
    sum(terms)
}

/// Adds terms; the sum alone, never failing.
#[tool(inline, output_schema)]
fn sum_plain_sync(
    /// The terms.
    terms: Vec<i64>,
) -> Sum {
    Sum { total: terms.iter().sum(), terms }
}

/// Adds terms; the sum alone, never failing.
#[tool(output_schema)]
async fn sum_plain_async(
    /// The terms.
    terms: Vec<i64>,
) -> Sum {
    Sum { total: terms.iter().sum(), terms }
}

const SUM_INPUTS: &[&str] = &[r#"{"terms":[1,2]}"#, r#"{"terms":[]}"#, r#"{"terms":["3"]}"#, r#"{"terms":1}"#];

#[tokio::test]
async fn a_plain_fn_returning_serialize_answers_as_its_async_twin_with_and_without_an_output_schema() {
    assert_eq!(
        twins(sum_json_sync::TOOL, sum_json_async::TOOL, SUM_INPUTS).await,
        [
            r#"ok: {"total":3,"terms":[1,2]}"#,
            "error: oops: no terms: the whole chain",
            "error: invalid arguments for `sum_json_sync`: `terms[0]`: invalid type: string \"3\", expected an integer from -9223372036854775808 to 9223372036854775807 | repaired: ok: {\"total\":3,\"terms\":[3]}",
            "error: invalid arguments for `sum_json_sync`: `terms`: invalid type: integer `1`, expected a sequence"
        ]
    );
    assert_eq!(
        twins(sum_structured_sync::TOOL, sum_structured_async::TOOL, SUM_INPUTS).await,
        [
            r#"ok: {"total":3,"terms":[1,2]} +structured {"terms":[1,2],"total":3}"#,
            "error: oops: no terms: the whole chain",
            "error: invalid arguments for `sum_structured_sync`: `terms[0]`: invalid type: string \"3\", expected an integer from -9223372036854775808 to 9223372036854775807 | repaired: ok: {\"total\":3,\"terms\":[3]} +structured {\"terms\":[3],\"total\":3}",
            "error: invalid arguments for `sum_structured_sync`: `terms`: invalid type: integer `1`, expected a sequence"
        ]
    );
    assert_eq!(
        twins(sum_plain_sync::TOOL, sum_plain_async::TOOL, &SUM_INPUTS[..2]).await,
        [
            r#"ok: {"total":3,"terms":[1,2]} +structured {"terms":[1,2],"total":3}"#,
            r#"ok: {"total":0,"terms":[]} +structured {"terms":[],"total":0}"#
        ]
    );
    assert_eq!(
        sum_structured_sync::TOOL.definition().output_schema,
        sum_structured_async::TOOL.definition().output_schema
    );
    assert_eq!(sum_plain_sync::TOOL.definition().output_schema, sum_structured_sync::TOOL.definition().output_schema);
}

/// Ends the run, or refuses an empty summary.
#[tool(inline)]
fn finish_sync(
    /// The summary.
    summary: String,
) -> Result<ToolResult, ToolError> {
    if summary.is_empty() {
        return Err(ToolError::Failed("the summary is empty; say what was done".into()));
    }
    Ok(ToolResult::done(summary))
}

/// Ends the run, or refuses an empty summary.
#[tool]
async fn finish_async(
    /// The summary.
    summary: String,
) -> Result<ToolResult, ToolError> {
    if summary.is_empty() {
        return Err(ToolError::Failed("the summary is empty; say what was done".into()));
    }
    Ok(ToolResult::done(summary))
}

#[tokio::test]
async fn a_plain_fn_that_ends_the_run_answers_as_its_async_twin_and_stops_its_batch() {
    assert_eq!(
        twins(finish_sync::TOOL, finish_async::TOOL, &[r#"{"summary":"all done"}"#, r#"{"summary":""}"#]).await,
        ["done: all done", "error: the summary is empty; say what was done"]
    );
    let registry = Registry::builder().tool(finish_sync::TOOL).tool(borrowed_sync::TOOL).build().unwrap();
    let calls = [
        ToolCall::new("c1", "borrowed_sync", r#"{"text":"a","items":[]}"#),
        ToolCall::new("c2", "finish_sync", r#"{"summary":"over"}"#),
    ];
    let batch = registry.call_batch(&calls, &caller()).await;
    assert_eq!(batch.messages.iter().map(said).collect::<Vec<_>>(), ["ok: a|[]", "done: over"]);
    assert_eq!(batch.stop, Some(rt::TurnStop::Done { tool_call_id: "c2".to_owned(), message: "over".to_owned() }));
}

/// Nothing to say.
#[tool(inline)]
fn unit_sync(
    /// Ignored.
    _ignored: Option<u8>,
) {
}

/// Nothing to say.
#[tool]
async fn unit_async(
    /// Ignored.
    _ignored: Option<u8>,
) {
}

/// Parts: a text and an image.
#[tool(inline)]
fn parts_sync(
    /// The caption.
    caption: String,
) -> Vec<ContentPart> {
    vec![
        ContentPart::text(caption),
        ContentPart::Image { data: "AAAA".into(), media_type: "image/png".into(), detail: None },
    ]
}

/// Parts: a text and an image.
#[tool]
async fn parts_async(
    /// The caption.
    caption: String,
) -> Vec<ContentPart> {
    vec![
        ContentPart::text(caption),
        ContentPart::Image { data: "AAAA".into(), media_type: "image/png".into(), detail: None },
    ]
}

#[tokio::test]
async fn a_plain_fn_returning_nothing_or_parts_answers_as_its_async_twin() {
    assert_eq!(
        twins(unit_sync::TOOL, unit_async::TOOL, &["", r#"{"_ignored":null}"#, r#"{"_ignored":256}"#]).await,
        ["ok: ", "ok: ", "error: invalid arguments for `unit_sync`: `_ignored`: must be at most 255; got 256"]
    );
    assert_eq!(twins(parts_sync::TOOL, parts_async::TOOL, &[r#"{"caption":"a cat"}"#]).await, ["ok: a cat\n[image]"]);
}

// ---------------------------------------------------------------------------------------------
// Argument forms: `#[input]`, defaults, the context.
// ---------------------------------------------------------------------------------------------

/// A search.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Search {
    /// What to look for.
    pattern: String,
    /// At most this many.
    #[serde(default)]
    limit: Option<u32>,
    /// Where.
    #[serde(default)]
    scope: Scope,
}

/// Where a search looks.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Scope {
    /// Everywhere.
    #[default]
    All,
    /// One directory.
    Dir {
        /// The directory.
        path: String,
    },
}

impl Search {
    /// `<pattern>|<limit>|<scope>`.
    fn said(&self) -> String {
        let scope = match &self.scope {
            Scope::All => "all".to_owned(),
            Scope::Dir { path } => format!("dir {path}"),
        };
        format!("{}|{:?}|{scope}", self.pattern, self.limit)
    }
}

/// Echoes a search.
#[tool(inline)]
fn input_sync(#[input] search: Search) -> String {
    search.said()
}

/// Echoes a search.
#[tool]
async fn input_async(#[input] search: Search) -> String {
    search.said()
}

#[tokio::test]
async fn a_plain_fn_with_an_input_type_answers_as_its_async_twin() {
    let inputs = [
        r#"{"pattern":"p"}"#,
        r#"{"pattern":"p","limit":"5","scope":{"dir":{"path":"src"}}}"#,
        r#"{"pattern":"p","scope":"dir"}"#,
        r#"{"pattern":"p","scope":{"dir":{"path":"src","x":1}}}"#,
        r#"{"limit":1}"#,
    ];
    assert_eq!(
        twins(input_sync::TOOL, input_async::TOOL, &inputs).await,
        [
            "ok: p|None|all",
            "error: invalid arguments for `input_sync`: `limit`: invalid type: string \"5\", expected an integer from 0 to 4294967295 | repaired: ok: p|Some(5)|dir src",
            "error: invalid arguments for `input_sync`: invalid type: unit variant, expected struct variant",
            "error: invalid arguments for `input_sync`: unknown field `scope.dir.x`; expected one of `path`",
            "error: invalid arguments for `input_sync`: missing field `pattern`"
        ]
    );
}

fn three() -> u32 {
    3
}

/// Defaults of every kind.
#[tool(inline)]
fn defaults_sync(
    /// A count.
    #[arg(default)]
    n: u32,
    /// A word.
    #[arg(default = "x")]
    word: String,
    /// A number.
    #[arg(default = three())]
    m: u32,
    /// A kind.
    #[arg(rename = "type")]
    kind: Option<String>,
) -> String {
    format!("{n}|{word}|{m}|{kind:?}")
}

/// Defaults of every kind.
#[tool]
async fn defaults_async(
    /// A count.
    #[arg(default)]
    n: u32,
    /// A word.
    #[arg(default = "x")]
    word: String,
    /// A number.
    #[arg(default = three())]
    m: u32,
    /// A kind.
    #[arg(rename = "type")]
    kind: Option<String>,
) -> String {
    format!("{n}|{word}|{m}|{kind:?}")
}

#[tokio::test]
async fn a_plain_fn_with_defaults_answers_as_its_async_twin() {
    let inputs = [
        "",
        r#"{"n":null,"word":null,"m":null,"type":null}"#,
        r#"{"n":1,"word":"w","m":2,"type":"t"}"#,
        r#"{"n":"7"}"#,
        r#"{"kind":"t"}"#,
        r#"{"m":-1}"#,
    ];
    assert_eq!(
        twins(defaults_sync::TOOL, defaults_async::TOOL, &inputs).await,
        [
            "ok: 0|x|3|None",
            "ok: 0|x|3|None",
            "ok: 1|w|2|Some(\"t\")",
            "error: invalid arguments for `defaults_sync`: `n`: invalid type: string \"7\", expected an integer from 0 to 4294967295 | repaired: ok: 7|x|3|None",
            "error: invalid arguments for `defaults_sync`: unknown field `kind`; expected one of `m`, `n`, `type`, `word`",
            "error: invalid arguments for `defaults_sync`: `m`: must be at least 0; got -1"
        ]
    );
}

/// Says its session.
#[tool(inline)]
fn context_sync(
    /// A word.
    word: String,
    ctx: &ToolContext,
) -> String {
    format!("{word}@{}", ctx.session_id().unwrap_or("none"))
}

/// Says its session.
#[tool]
async fn context_async(
    /// A word.
    word: String,
    ctx: &ToolContext,
) -> String {
    format!("{word}@{}", ctx.session_id().unwrap_or("none"))
}

#[tokio::test]
async fn a_plain_fn_that_takes_the_context_answers_as_its_async_twin() {
    assert_eq!(
        twins(context_sync::TOOL, context_async::TOOL, &[r#"{"word":"hi"}"#, "{}"]).await,
        ["ok: hi@s1", "error: invalid arguments for `context_sync`: missing field `word`"]
    );
}

/// Says the id of its call.
#[tool(inline)]
fn call_id_sync(ctx: &ToolContext) -> String {
    ctx.call_id().unwrap_or("none").to_owned()
}

#[tokio::test]
async fn a_plain_fn_that_takes_the_context_gets_its_call_id_through_the_registry_and_none_when_called_at_once() {
    let registry = Registry::builder().tool(call_id_sync::TOOL).build().unwrap();
    let message = registry.call(&ToolCall::new("call_9", "call_id_sync", ""), &caller()).await;
    let now = call_id_sync::TOOL.call_now("", &caller());
    assert_eq!((said(&message), now), ("ok: call_9".to_owned(), Some(Ok(ToolResult::text("none")))));
}

// ---------------------------------------------------------------------------------------------
// Names and attributes: `crate = ..`, `#[deprecated]`, a parameter named like the function, raw
// identifiers, a `const fn`, a tool in a function body.
// ---------------------------------------------------------------------------------------------

/// Through the runtime's alias.
#[tool(inline, crate = rt)]
fn aliased_sync(
    /// A.
    a: u8,
) -> u8 {
    a.wrapping_mul(2)
}

/// Through the runtime's alias.
#[tool(crate = rt)]
async fn aliased_async(
    /// A.
    a: u8,
) -> u8 {
    a.wrapping_mul(2)
}

/// Through the runtime's absolute path.
#[tool(inline, crate = ::tool_runtime)]
fn absolute_sync(
    /// A.
    a: u8,
) -> u8 {
    a.wrapping_mul(2)
}

/// Through the runtime's absolute path.
#[tool(crate = ::tool_runtime)]
async fn absolute_async(
    /// A.
    a: u8,
) -> u8 {
    a.wrapping_mul(2)
}

#[tokio::test]
async fn a_plain_fn_naming_the_runtime_through_an_alias_or_a_path_answers_as_its_async_twin() {
    let inputs = [r#"{"a":200}"#, r#"{"a":"2"}"#, r#"{"a":300}"#];
    let expected = |name: &str| {
        [
            "ok: 144".to_owned(),
            format!(
                "error: invalid arguments for `{name}`: `a`: invalid type: string \"2\", expected an integer from 0 to 255 | repaired: ok: 4"
            ),
            format!("error: invalid arguments for `{name}`: `a`: must be at most 255; got 300"),
        ]
    };
    assert_eq!(twins(aliased_sync::TOOL, aliased_async::TOOL, &inputs).await, expected("aliased_sync"));
    assert_eq!(twins(absolute_sync::TOOL, absolute_async::TOOL, &inputs).await, expected("absolute_sync"));
}

/// Kept for old prompts.
#[deprecated = "use borrowed_sync"]
#[tool(inline)]
fn deprecated_sync(
    /// A.
    a: String,
) -> String {
    a
}

/// Kept for old prompts.
#[deprecated = "use borrowed_async"]
#[tool]
async fn deprecated_async(
    /// A.
    a: String,
) -> String {
    a
}

/// A parameter named like the function.
#[tool(inline)]
fn shadow_sync(
    /// The same name.
    shadow_sync: String,
) -> String {
    shadow_sync.to_uppercase()
}

/// A parameter named like the function.
#[tool(name = "shadow_sync_async")]
async fn shadow_async(
    /// The same name.
    #[arg(rename = "shadow_sync")]
    shadow_async: String,
) -> String {
    shadow_async.to_uppercase()
}

/// Raw identifiers.
#[tool(inline)]
fn r#match(
    /// The type.
    r#type: String,
    /// Whether it is a loop.
    r#loop: bool,
) -> String {
    format!("{type}/{loop}", type = r#type, loop = r#loop)
}

/// Raw identifiers.
#[tool]
async fn r#async(
    /// The type.
    r#type: String,
    /// Whether it is a loop.
    r#loop: bool,
) -> String {
    format!("{type}/{loop}", type = r#type, loop = r#loop)
}

/// A constant.
#[tool(inline)]
const fn constant_sync() -> &'static str {
    "forty-two"
}

/// A constant.
#[tool]
async fn constant_async() -> &'static str {
    "forty-two"
}

#[tokio::test]
async fn deprecated_shadowed_raw_and_const_plain_fns_answer_as_their_async_twins() {
    assert_eq!(
        twins(deprecated_sync::TOOL, deprecated_async::TOOL, &[r#"{"a":"x"}"#, r#"{"b":"x"}"#]).await,
        ["ok: x", "error: invalid arguments for `deprecated_sync`: unknown field `b`; expected one of `a`"]
    );
    assert_eq!(
        twins(shadow_sync::TOOL, shadow_async::TOOL, &[r#"{"shadow_sync":"x"}"#, "{}"]).await,
        ["ok: X", "error: invalid arguments for `shadow_sync`: missing field `shadow_sync`"]
    );
    assert_eq!(
        twins(r#match::TOOL, r#async::TOOL, &[r#"{"type":"t","loop":true}"#, r#"{"r#type":"t","loop":true}"#]).await,
        ["ok: t/true", "error: invalid arguments for `match`: unknown field `r#type`; expected one of `loop`, `type`"]
    );
    assert_eq!(
        twins(constant_sync::TOOL, constant_async::TOOL, &["", r#"{"a":1}"#]).await,
        [
            "ok: forty-two",
            "error: invalid arguments for `constant_sync`: unknown field `a`; no fields are accepted there"
        ]
    );
}

#[tokio::test]
async fn a_plain_fn_in_a_function_body_answers_as_its_async_twin() {
    /// In a body.
    #[tool(inline)]
    fn in_body_sync(
        /// A.
        a: &str,
    ) -> String {
        format!("sync {a}")
    }

    /// In a body.
    #[tool(name = "in_body_sync_async")]
    async fn in_body_async(
        /// A.
        a: &str,
    ) -> String {
        format!("sync {a}")
    }

    assert_eq!(
        twins(in_body_sync::TOOL, in_body_async::TOOL, &[r#"{"a":"x"}"#, r#"{"a":["x"]}"#]).await,
        ["ok: sync x", "error: invalid arguments for `in_body_sync`: `a`: invalid type: sequence, expected a string"]
    );
}

// ---------------------------------------------------------------------------------------------
// Panics: in the body, and in decoding.
// ---------------------------------------------------------------------------------------------

/// Panics with the message, or with a value that is not text for `"any"`.
#[tool(inline)]
fn panics_sync(
    /// What to say.
    message: String,
) -> String {
    if message == "any" {
        std::panic::panic_any(7_u8);
    }
    panic!("it broke: {message}")
}

/// Panics with the message, or with a value that is not text for `"any"`.
#[tool]
async fn panics_async(
    /// What to say.
    message: String,
) -> String {
    if message == "any" {
        std::panic::panic_any(7_u8);
    }
    panic!("it broke: {message}")
}

/// A value whose decoding panics on `"boom"`.
#[derive(Debug, JsonSchema)]
struct Fragile(String);

impl<'de> Deserialize<'de> for Fragile {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        assert_ne!(text, "boom", "decoding broke");
        Ok(Self(text))
    }
}

/// Echoes a fragile value.
#[tool(inline)]
fn fragile_sync(
    /// The value.
    value: Fragile,
) -> String {
    value.0
}

/// Echoes a fragile value.
#[tool]
async fn fragile_async(
    /// The value.
    value: Fragile,
) -> String {
    value.0
}

#[tokio::test]
async fn a_panic_in_a_plain_fn_is_its_calls_panicked_message_on_every_path() {
    assert_eq!(
        twins(panics_sync::TOOL, panics_async::TOOL, &[r#"{"message":"m"}"#, r#"{"message":"any"}"#, "{}"]).await,
        [
            "error: tool `panics_sync` panicked: it broke: m",
            "error: tool `panics_sync` panicked: Box<dyn Any>",
            "error: invalid arguments for `panics_sync`: missing field `message`"
        ]
    );
}

#[tokio::test]
async fn a_panic_while_decoding_the_arguments_of_a_plain_fn_is_its_calls_panicked_message_on_every_path() {
    assert_eq!(
        twins(fragile_sync::TOOL, fragile_async::TOOL, &[r#"{"value":"ok"}"#, r#"{"value":"boom"}"#]).await,
        [
            "ok: ok",
            "error: tool `fragile_sync` panicked: assertion `left != right` failed: decoding broke\n  left: \"boom\"\n right: \"boom\""
        ]
    );
}

#[tokio::test]
async fn a_panic_in_a_plain_fn_leaves_the_other_calls_of_its_batch_and_the_registry_serving() {
    let registry = Registry::builder().tool(panics_sync::TOOL).tool(borrowed_sync::TOOL).build().unwrap();
    let calls = [
        ToolCall::new("c1", "panics_sync", r#"{"message":"first"}"#),
        ToolCall::new("c2", "borrowed_sync", r#"{"text":"b","items":[]}"#),
        ToolCall::new("c3", "panics_sync", r#"{"message":"third"}"#),
    ];
    let batch = registry.call_batch(&calls, &caller()).await;
    let after = registry.call(&ToolCall::new("c4", "borrowed_sync", r#"{"text":"d","items":[4]}"#), &caller()).await;
    assert_eq!(
        [batch.messages.iter().map(said).collect::<Vec<_>>(), vec![said(&after)]].concat(),
        [
            "error: tool `panics_sync` panicked: it broke: first",
            "ok: b|[]",
            "error: tool `panics_sync` panicked: it broke: third",
            "ok: d|[4]"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Cancellation before the start.
// ---------------------------------------------------------------------------------------------

static COUNTED_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Counts its runs.
#[tool(inline)]
fn counted_sync() -> String {
    COUNTED_RUNS.fetch_add(1, Ordering::SeqCst).to_string()
}

#[tokio::test]
async fn a_plain_fn_called_with_a_cancelled_token_does_not_run_on_any_path() {
    let token = CancellationToken::new();
    token.cancel();
    let ctx = ToolContext::builder().cancellation(token).build();
    let call = ToolCall::new("c1", "counted_sync", "");
    let plain = Registry::builder().tool(counted_sync::TOOL).build().unwrap();
    let limited = Registry::builder().tool(counted_sync::TOOL).default_timeout(Duration::from_secs(1)).build().unwrap();
    let repaired = Registry::builder().tool(counted_sync::TOOL).repair(RepairPolicy::all()).build().unwrap();
    let waits = Registry::builder().tool(counted_sync::TOOL).policy(AllowLater).build().unwrap();
    let sequential = Registry::builder().tool_dyn(Arc::new(Sequential(counted_sync::TOOL))).build().unwrap();
    let mut got = Vec::new();
    for registry in [&plain, &limited, &repaired, &waits, &sequential] {
        got.push(said(&registry.call(&call, &ctx).await));
        got.push(said(&registry.call_batch(std::slice::from_ref(&call), &ctx).await.messages[0]));
    }
    {
        let _traced = tracing::dispatcher::set_default(&tracing::Dispatch::new(CountCalls::default()));
        got.push(said(&plain.call(&call, &ctx).await));
    }
    assert_eq!(got, vec!["error: tool `counted_sync` was cancelled"; 11]);
    assert_eq!(COUNTED_RUNS.load(Ordering::SeqCst), 0);
}

// ---------------------------------------------------------------------------------------------
// Tools written by hand: `call_now` and `call` that disagree or panic.
// ---------------------------------------------------------------------------------------------

/// Answers `now` from `call_now` and `future` from `call`'s future, so that a test sees which one
/// the registry took; panics in the one named by `panics`.
struct Disagrees {
    definition: ToolDefinition,
    sequential: bool,
    panics: Option<&'static str>,
}

impl Disagrees {
    fn shared(name: &str, sequential: bool, panics: Option<&'static str>) -> Arc<dyn Tool> {
        let definition = ToolDefinition {
            name: name.to_owned(),
            description: "Disagrees.".to_owned(),
            input_schema: serde_json::json!({"type": "object", "properties": {}}),
            set: None,
            tags: Vec::new(),
            strict: None,
            output_schema: None,
            callers: tool_runtime::Callers::Direct,
        };
        Arc::new(Self { definition, sequential, panics })
    }
}

impl Tool for Disagrees {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn sequential(&self) -> bool {
        self.sequential
    }

    fn reads_context(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, _arguments: &'a str, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        if self.panics == Some("call") {
            panic!("boom in call");
        }
        Box::pin(async {
            if self.panics == Some("future") {
                panic!("boom in the future");
            }
            Ok(ToolResult::text("future"))
        })
    }

    fn call_now(&self, _arguments: &str, _ctx: &ToolContext) -> Option<Result<ToolResult, ToolError>> {
        if self.panics == Some("call_now") {
            panic!("boom in call_now");
        }
        Some(Ok(ToolResult::text("now")))
    }
}

#[tokio::test]
async fn a_sequential_tool_written_by_hand_runs_at_once_in_a_batch_and_its_panic_is_its_message() {
    let registry = Registry::builder()
        .tool_dyn(Disagrees::shared("alone", true, None))
        .tool_dyn(Disagrees::shared("alone_boom", true, Some("call_now")))
        .tool_dyn(Disagrees::shared("together", false, None))
        .build()
        .unwrap();
    let calls = [
        ToolCall::new("c1", "together", ""),
        ToolCall::new("c2", "alone_boom", ""),
        ToolCall::new("c3", "alone", ""),
        ToolCall::new("c4", "together", ""),
    ];
    let batch = registry.call_batch(&calls, &caller()).await;
    assert_eq!(
        batch.messages.iter().map(said).collect::<Vec<_>>(),
        ["ok: now", "error: tool `alone_boom` panicked: boom in call_now", "ok: now", "ok: now"]
    );
}

#[tokio::test]
async fn where_a_call_cannot_run_at_once_the_future_of_a_tool_written_by_hand_answers_and_its_panics_are_messages() {
    let tools = || {
        Registry::builder()
            .tool_dyn(Disagrees::shared("fine", false, None))
            .tool_dyn(Disagrees::shared("call_boom", false, Some("call")))
            .tool_dyn(Disagrees::shared("future_boom", false, Some("future")))
    };
    let limited = tools().default_timeout(Duration::from_secs(1)).build().unwrap();
    let calls =
        [ToolCall::new("c1", "fine", ""), ToolCall::new("c2", "call_boom", ""), ToolCall::new("c3", "future_boom", "")];
    let mut got: Vec<String> = limited.call_batch(&calls, &caller()).await.messages.iter().map(said).collect();
    for call in &calls {
        got.push(said(&limited.call(call, &caller()).await));
    }
    assert_eq!(
        got,
        [
            "ok: future",
            "error: tool `call_boom` panicked: boom in call",
            "error: tool `future_boom` panicked: boom in the future",
            "ok: future",
            "error: tool `call_boom` panicked: boom in call",
            "error: tool `future_boom` panicked: boom in the future"
        ]
    );
}

#[tokio::test]
async fn a_subscriber_recording_the_calls_spans_leaves_the_calls_on_the_fast_path() {
    let registry = Registry::builder()
        .tool_dyn(Disagrees::shared("fine", false, None))
        .tool_dyn(Disagrees::shared("call_boom", false, Some("call")))
        .tool_dyn(Disagrees::shared("future_boom", false, Some("future")))
        .build()
        .unwrap();
    let calls =
        [ToolCall::new("c1", "fine", ""), ToolCall::new("c2", "call_boom", ""), ToolCall::new("c3", "future_boom", "")];
    let counter = CountCalls::default();
    let spans = counter.tool_calls.clone();
    let mut got = Vec::new();
    {
        let _traced = tracing::dispatcher::set_default(&tracing::Dispatch::new(counter));
        for call in &calls {
            got.push(said(&registry.call(call, &caller()).await));
        }
    }
    // `call_now` answers (the fast path), not the future (the general path), and each call had
    // its span.
    assert_eq!(got, ["ok: now", "ok: now", "ok: now"]);
    assert_eq!(spans.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_plain_fn_tool_has_a_synchronous_form_through_every_reference_the_registry_holds() {
    let ctx = caller();
    let arguments = r#"{"text":"a","items":[1]}"#;
    let direct = borrowed_sync::TOOL.call_now(arguments, &ctx);
    let through_static = <&'static ToolSpec as Tool>::call_now(&borrowed_sync::TOOL, arguments, &ctx);
    let shared: Arc<dyn Tool> = Arc::new(borrowed_sync::TOOL);
    let through_dyn = shared.call_now(arguments, &ctx);
    let static_dyn: &'static dyn Tool = borrowed_sync::TOOL;
    let through_static_dyn = <&'static dyn Tool as Tool>::call_now(&static_dyn, arguments, &ctx);
    let expected = Some(Ok(ToolResult::text("a|[1]")));
    assert_eq!(
        [direct, through_static, through_dyn, through_static_dyn],
        [expected.clone(), expected.clone(), expected.clone(), expected]
    );
}

#[tokio::test]
async fn a_blocking_a_dependent_and_an_async_tool_have_no_synchronous_form() {
    let ctx = caller();
    assert_eq!(
        [
            blocking_plain::TOOL.call_now(r#"{"word":"a"}"#, &ctx),
            depends_plain::TOOL.call_now("", &ctx),
            borrowed_async::TOOL.call_now(r#"{"text":"a","items":[1]}"#, &ctx)
        ],
        [None, None, None]
    );
}

/// Uppercases, on the blocking pool.
#[tool(blocking)]
fn blocking_plain(
    /// A word.
    word: &str,
) -> String {
    word.to_uppercase()
}

static NUMBER: rt::DependencyKey<u32> = rt::DependencyKey::per_call("number", |_| Ok(5));

/// Says a dependency.
#[tool]
fn depends_plain(#[depends(NUMBER)] number: u32) -> String {
    number.to_string()
}

/// Runs alone.
#[tool(inline, sequential)]
fn alone_sync(
    /// A word.
    word: &str,
) -> Result<String, String> {
    if word.is_empty() { Err("the word is empty; send one".to_owned()) } else { Ok(word.repeat(2)) }
}

/// Runs alone, with a time limit of its own.
#[tool(sequential, timeout_ms = 60000)]
async fn alone_async(
    /// A word.
    word: &str,
) -> Result<String, String> {
    if word.is_empty() { Err("the word is empty; send one".to_owned()) } else { Ok(word.repeat(2)) }
}

#[tokio::test]
async fn a_sequential_plain_fn_answers_as_its_async_twin_with_a_time_limit_of_its_own() {
    assert_eq!(
        twins(alone_sync::TOOL, alone_async::TOOL, &[r#"{"word":"ab"}"#, r#"{"word":""}"#, "{}"]).await,
        [
            "ok: abab",
            "error: the word is empty; send one",
            "error: invalid arguments for `alone_sync`: missing field `word`"
        ]
    );
    assert_eq!(
        [
            (alone_sync::TOOL.meta().sequential, Tool::timeout(alone_sync::TOOL)),
            (alone_async::TOOL.meta().sequential, Tool::timeout(alone_async::TOOL))
        ],
        [(true, None), (true, Some(Duration::from_secs(60)))]
    );
}

/// Sleeps 5 ms on the thread that calls it, then answers.
#[tool(inline)]
fn nap_sync() -> &'static str {
    std::thread::sleep(Duration::from_millis(5));
    "rested"
}

#[tokio::test]
async fn a_default_time_limit_does_not_end_a_plain_fn_that_runs_past_it() {
    let registry = Registry::builder().tool(nap_sync::TOOL).default_timeout(Duration::from_millis(1)).build().unwrap();
    let call = ToolCall::new("c1", "nap_sync", "");
    let one = registry.call(&call, &caller()).await;
    let batch = registry.call_batch(std::slice::from_ref(&call), &caller()).await;
    assert_eq!([said(&one), said(&batch.messages[0])], ["ok: rested", "ok: rested"]);
}
