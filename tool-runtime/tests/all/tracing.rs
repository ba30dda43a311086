//! What a call tells `tracing`: one `tool_call` span per call with the tool, the call id, the
//! session, the outcome and the duration; and close failures of a dropped registry as error events.
//!
//! One test function: the subscriber is installed for this thread only, and tracing's per-callsite
//! interest is simplest to reason about with a single subscriber in the binary.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tool_runtime::prelude::*;
use tool_runtime::{BoxError, Permission, PermissionRequest};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use crate::fields;
use fields::Fields;

/// Field names and their values as text.
type FieldMap = BTreeMap<String, String>;

/// A span's name and fields.
type SpanSeen = (String, FieldMap);

/// An event's level, target and fields.
type EventSeen = (String, String, FieldMap);

/// The fields of every span and event seen, by span id and in event order.
#[derive(Default)]
struct Seen {
    spans: Mutex<BTreeMap<u64, SpanSeen>>,
    events: Mutex<Vec<EventSeen>>,
    next: AtomicU64,
}

#[derive(Clone, Default)]
struct Capture(Arc<Seen>);

impl Subscriber for Capture {
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
        let mut spans = self.0.spans.lock().unwrap();
        if let Some((_, fields)) = spans.get_mut(&span.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let level = event.metadata().level().to_string();
        self.0.events.lock().unwrap().push((level, event.metadata().target().to_owned(), fields));
    }

    fn enter(&self, _span: &Id) {}

    fn exit(&self, _span: &Id) {}
}

/// Answers after 40 ms.
#[tool]
async fn lookup(
    /// What to look up.
    word: String,
) -> String {
    tokio::time::sleep(Duration::from_millis(40)).await;
    format!("{word}: found")
}

/// Always fails.
#[tool]
fn broken() -> Result<String, String> {
    Err("disk full".to_owned())
}

/// Never allowed by the policy below.
#[tool]
fn forbidden() -> String {
    "ran".to_owned()
}

/// Takes too long.
#[tool(timeout_ms = 5)]
async fn slow() -> String {
    tokio::time::sleep(Duration::from_secs(1)).await;
    "late".to_owned()
}

fn open_handle(_ctx: &ToolContext) -> Result<u32, DependencyError> {
    Ok(7)
}

fn close_handle(_handle: &u32) -> Result<(), BoxError> {
    Err("handle 7 is still in use".into())
}

/// A registry-scoped handle whose close fails.
static HANDLE: DependencyKey<u32> = DependencyKey::shared("handle", open_handle).on_close(close_handle);

/// Uses the handle.
#[tool]
fn touch(#[depends(HANDLE)] handle: u32) -> String {
    format!("touched {handle}")
}

fn spans_named(seen: &Seen, name: &str) -> Vec<BTreeMap<String, String>> {
    seen.spans.lock().unwrap().values().filter(|(n, _)| n == name).map(|(_, fields)| fields.clone()).collect()
}

fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

#[test]
fn every_call_has_a_span_and_a_dropped_registry_reports_close_failures() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();

    let registry = Registry::builder()
        .tool(lookup::TOOL)
        .tool(broken::TOOL)
        .tool(forbidden::TOOL)
        .tool(slow::TOOL)
        .tool(touch::TOOL)
        .policy(|request: PermissionRequest<'_>| {
            if request.call.name == "forbidden" { Permission::Deny("not today".to_owned()) } else { Permission::Allow }
        })
        .build()
        .unwrap();
    let ctx = ToolContext::builder().session_id("s-1").build();
    let calls = [
        ToolCall::new("call_1", "lookup", r#"{"word":"tide"}"#),
        ToolCall::new("call_2", "broken", "{}"),
        ToolCall::new("call_3", "forbidden", "{}"),
        ToolCall::new("call_4", "slow", "{}"),
        ToolCall::new("call_5", "touch", "{}"),
    ];
    let batch = runtime.block_on(registry.call_batch(&calls, &ctx));
    assert_eq!(batch.messages[4].text(), "touched 7");

    // The OpenTelemetry fields (`otel.*`, `gen_ai.*`, `error.type`) are tests/all/telemetry.rs's.
    let span = |tool: &str, id: &str, outcome: &str, ms: &str| {
        let mut seen = fields(&[
            ("gen_ai.tool.call.id", id),
            ("duration_ms", ms),
            ("outcome", outcome),
            ("session_id", "s-1"),
            ("gen_ai.tool.name", tool),
        ]);
        seen.insert("otel.name".to_owned(), format!("execute_tool {tool}"));
        seen
    };
    let plain = |mut seen: BTreeMap<String, String>| {
        seen.retain(|key, _| {
            !matches!(
                key.as_str(),
                "otel.kind"
                    | "otel.status_code"
                    | "gen_ai.operation.name"
                    | "gen_ai.tool.type"
                    | "gen_ai.tool.description"
                    | "error.type"
            )
        });
        seen
    };
    assert_eq!(
        spans_named(&capture.0, "tool_call").into_iter().map(plain).collect::<Vec<_>>(),
        [
            span("lookup", "call_1", "ok", "40"),
            span("broken", "call_2", "error", "0"),
            span("forbidden", "call_3", "denied", "0"),
            span("slow", "call_4", "timed_out", "5"),
            span("touch", "call_5", "ok", "0"),
        ]
    );

    drop(registry);
    let errors: Vec<_> =
        capture.0.events.lock().unwrap().iter().filter(|(level, _, _)| level == "ERROR").cloned().collect();
    assert_eq!(
        errors,
        [(
            "ERROR".to_owned(),
            "tool_runtime::lifecycle".to_owned(),
            fields(&[
                ("cause", "handle 7 is still in use"),
                (
                    "message",
                    "dependency `HANDLE` (key id \"handle\") failed to close when its registry was dropped: handle 7 \
                     is still in use"
                ),
                ("resource", "dependency `HANDLE` (key id \"handle\")"),
            ])
        )]
    );
}
