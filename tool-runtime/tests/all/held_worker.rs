//! A tool that holds the thread polling its call: in a build with debug assertions, a stretch of
//! more than 10 ms (an `inline` plain `fn`, or one poll of a tool's future) is reported as a `tracing`
//! warning naming the tool and the milliseconds, on the fast path and on the general path alike.
//! (Release builds measure nothing: the whole file is for debug builds.)
#![cfg(debug_assertions)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tool_runtime::prelude::*;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

use crate::fields;
use fields::Fields;

/// Sleeps 30 ms on the thread that calls it: work that should not have been `inline`.
#[tool(inline)]
fn dawdle() -> &'static str {
    std::thread::sleep(Duration::from_millis(30));
    "late"
}

/// Sleeps 30 ms on the thread that polls it, without awaiting: an `async fn` that blocks.
#[tool]
async fn dawdle_async() -> &'static str {
    std::thread::sleep(Duration::from_millis(30));
    "late"
}

/// The fields of the warnings seen on this thread, in order. With `spans`, the subscriber records
/// spans too; without, it is interested in events only (the `tool_call` span is disabled). Either
/// way a call takes the fast path, unless the registry has a time limit.
#[derive(Default)]
struct Warnings {
    spans: bool,
    seen: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
    next: AtomicU64,
}

impl Subscriber for Warnings {
    fn register_callsite(&self, _metadata: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        // Each callsite asks the thread's own subscriber: the tests beside this one have theirs.
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.spans || metadata.is_event()
    }

    fn new_span(&self, _span: &Attributes<'_>) -> Id {
        Id::from_u64(self.next.fetch_add(1, Ordering::SeqCst) + 1)
    }

    fn record(&self, _span: &Id, _values: &Record<'_>) {}

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        if *event.metadata().level() == Level::WARN {
            let mut fields = BTreeMap::new();
            event.record(&mut Fields(&mut fields));
            self.seen.lock().unwrap().push(fields);
        }
    }

    fn enter(&self, _span: &Id) {}

    fn exit(&self, _span: &Id) {}
}

/// The warnings seen while `calls` ran through a registry of the two tools, on this thread, with
/// spans recorded or not, on the general path (a default time limit of 60 s) or not: for each, its
/// `tool` and whether its text is the expected one for its own `held_ms`, which is at least the
/// 30 ms the tool slept.
async fn warnings_of(spans: bool, calls: &[ToolCall], batch: bool, general: bool) -> Vec<(String, bool)> {
    let mut builder = Registry::builder().tool(dawdle::TOOL).tool(dawdle_async::TOOL);
    if general {
        builder = builder.default_timeout(Duration::from_secs(60));
    }
    let registry = builder.build().unwrap();
    let warnings = Warnings { spans, ..Warnings::default() };
    let seen = warnings.seen.clone();
    let messages = {
        let _default = tracing::dispatcher::set_default(&tracing::Dispatch::new(warnings));
        if batch {
            registry.call_batch(calls, &ToolContext::new()).await.into_messages()
        } else {
            let mut messages = Vec::new();
            for call in calls {
                messages.push(registry.call(call, &ToolContext::new()).await);
            }
            messages
        }
    };
    assert_eq!(messages.iter().map(|m| m.text().into_owned()).collect::<Vec<_>>(), vec!["late"; calls.len()]);
    let seen = seen.lock().unwrap().clone();
    seen.into_iter()
        .map(|fields| {
            let held_ms: u64 = fields["held_ms"].parse().unwrap();
            let tool = fields["tool"].clone();
            let expected = format!(
                "tool `{tool}` held the thread polling its call for {held_ms} ms, and every task of that thread waited; move work that waits on I/O or computes long to the blocking pool: remove `inline` from a plain `fn`, or have an `async fn` await it (`tokio::task::spawn_blocking`)"
            );
            (tool, held_ms >= 30 && fields["message"] == expected)
        })
        .collect()
}

fn calls() -> [ToolCall; 2] {
    [ToolCall::new("c1", "dawdle", ""), ToolCall::new("c2", "dawdle_async", "")]
}

#[tokio::test]
async fn a_tool_that_holds_the_polling_thread_for_30_ms_is_a_warning_on_the_fast_path() {
    assert_eq!(
        warnings_of(false, &calls(), false, false).await,
        [("dawdle".to_owned(), true), ("dawdle_async".to_owned(), true)]
    );
}

#[tokio::test]
async fn a_tool_that_holds_the_polling_thread_for_30_ms_is_a_warning_on_the_fast_path_with_spans_recorded() {
    assert_eq!(
        warnings_of(true, &calls(), false, false).await,
        [("dawdle".to_owned(), true), ("dawdle_async".to_owned(), true)]
    );
}

#[tokio::test]
async fn a_tool_that_holds_the_polling_thread_for_30_ms_is_a_warning_on_the_general_path() {
    assert_eq!(
        warnings_of(true, &calls(), false, true).await,
        [("dawdle".to_owned(), true), ("dawdle_async".to_owned(), true)]
    );
}

#[tokio::test]
async fn a_tool_that_holds_the_polling_thread_for_30_ms_is_a_warning_in_a_batch() {
    // The calls of a batch run at once: their warnings may come in either order.
    let mut warnings = warnings_of(false, &calls(), true, false).await;
    warnings.sort();
    assert_eq!(warnings, [("dawdle".to_owned(), true), ("dawdle_async".to_owned(), true)]);
}
