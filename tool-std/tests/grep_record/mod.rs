//! `grep`'s own record of files searched: its `tracing` events of target `tool_std::fs::grep`.

#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};

use tool_runtime::{CancellationToken, Progress, ToolContext};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One event of the record: files searched so far, and at the end whether grep was cancelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Searched {
    pub searched: u64,
    /// `None` at a progress point, `Some` at the end.
    pub cancelled: Option<bool>,
}

/// A progress point of the record.
pub fn point(searched: u64) -> Searched {
    Searched { searched, cancelled: None }
}

/// The end of the record.
pub fn end(searched: u64, cancelled: bool) -> Searched {
    Searched { searched, cancelled: Some(cancelled) }
}

/// A subscriber that hands every event of grep's record to `sink`.
pub struct Recorder<F>(pub F);

impl<F: Fn(Searched) + Send + Sync + 'static> Subscriber for Recorder<F> {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "tool_std::fs::grep"
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        (self.0)(Searched {
            searched: fields.searched.expect("every event has `searched`"),
            cancelled: fields.cancelled,
        });
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

#[derive(Default)]
struct Fields {
    searched: Option<u64>,
    cancelled: Option<bool>,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "searched" {
            self.searched = Some(value);
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == "cancelled" {
            self.cancelled = Some(value);
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

/// Runs `work` on this thread with a recorder as the default subscriber; returns its result and
/// the record.
pub fn recorded<T>(work: impl FnOnce() -> T) -> (T, Vec<Searched>) {
    let record = Arc::new(Mutex::new(Vec::new()));
    let sink = record.clone();
    let out = tracing::subscriber::with_default(Recorder(move |s| sink.lock().unwrap().push(s)), work);
    let record = record.lock().unwrap().clone();
    (out, record)
}

/// Progress reports as `(done, total)`, in the order they came.
pub type Reports = Arc<Mutex<Vec<(u64, Option<u64>)>>>;

/// A context whose progress listener keeps every report and cancels the token at the first.
pub fn cancelling_at_first_report() -> (ToolContext, Reports) {
    let token = CancellationToken::new();
    let reports = Reports::default();
    let (sink, cancel) = (reports.clone(), token.clone());
    let ctx = ToolContext::builder()
        .cancellation(token)
        .on_progress(move |p: Progress| {
            sink.lock().unwrap().push((p.done, p.total));
            cancel.cancel();
        })
        .build();
    (ctx, reports)
}
