//! A grep cancelled through the registry: the caller gets the cancelled error at once, and the
//! tool, on its blocking-pool thread, stops before its next file (its own record says so).
//!
//! The record is read through the process's global subscriber, so this binary holds this one test.

mod grep_record;

use std::sync::mpsc;

use grep_record::{Recorder, cancelling_at_first_report, end, point};
use serde_json::json;
use tool_runtime::ToolCall;
use tool_std::sandbox::{SANDBOX, Sandbox};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grep_cancelled_through_the_registry_stops_searching_and_reports_nothing_more() {
    let (records, record) = mpsc::channel();
    tracing::subscriber::set_global_default(Recorder(move |s| records.send(s).unwrap())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for i in 0..20_000 {
        std::fs::write(dir.path().join(format!("f{i:05}.txt")), "needle\n").unwrap();
    }
    let registry = tool_std::registry_builder()
        .sets(["fs"])
        .override_dependency(&SANDBOX, Sandbox::new(dir.path()).unwrap())
        .build()
        .unwrap();
    let (ctx, reports) = cancelling_at_first_report();

    let message = registry.call(&ToolCall::new("call_1", "grep", json!({"pattern": "needle"}).to_string()), &ctx).await;
    // The tool's thread ends with the record's last event: wait for it.
    let first = record.recv().unwrap();
    let last = record.recv().unwrap();

    assert_eq!((message.is_error, message.text().into_owned()), (true, "tool `grep` was cancelled".to_owned()));
    assert_eq!((first, last), (point(1), end(1, true)));
    assert_eq!(*reports.lock().unwrap(), [(1, None)]);
}
