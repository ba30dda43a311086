//! `grep`'s progress reports (strictly increasing, the end with its total), its cancellation
//! between files, and its own record of files searched.

use crate::common;
use crate::grep_record;

use std::sync::{Arc, Mutex};

use common::Workspace;
use grep_record::{Reports, Searched, cancelling_at_first_report, end, point, recorded};
use serde_json::json;
use tool_runtime::{CancellationToken, Progress, ToolContext};
use tool_std::fs::{FsError, FsLimits, grep};
use tool_std::sandbox::Sandbox;

/// A workspace of `count` one-line files holding `needle`.
fn tree(count: usize) -> Workspace {
    let ws = Workspace::new();
    std::fs::create_dir(ws.root.join("tree")).unwrap();
    for i in 0..count {
        std::fs::write(ws.root.join(format!("tree/f{i:05}.txt")), "needle\n").unwrap();
    }
    ws
}

/// A context whose listener keeps every report.
fn listening() -> (ToolContext, Reports) {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    let ctx =
        ToolContext::builder().on_progress(move |p: Progress| sink.lock().unwrap().push((p.done, p.total))).build();
    (ctx, reports)
}

/// The reports of a grep over `count` files, through the registry.
async fn reports_for(count: usize) -> Vec<(u64, Option<u64>)> {
    let ws = tree(count);
    let (ctx, reports) = listening();
    let message = ws.call_in(&ctx, "grep", json!({"pattern": "needle", "path": "tree", "limit": 1})).await;
    assert!(!message.is_error, "{}", message.text());
    reports.lock().unwrap().clone()
}

/// `grep` called as a function over the workspace, with `ctx`.
fn grep_in(ws: &Workspace, ctx: &ToolContext) -> Result<String, FsError> {
    let sandbox = Sandbox::new(&ws.root).unwrap();
    let limit = Some(1);
    grep("needle".to_owned(), None, None, None, None, None, None, limit, None, sandbox, FsLimits::default(), ctx)
}

#[tokio::test]
async fn one_file_gets_one_report_with_its_total() {
    assert_eq!(reports_for(1).await, [(1, Some(1))]);
}

#[tokio::test]
async fn thirty_one_files_get_the_first_file_then_the_end() {
    assert_eq!(reports_for(31).await, [(1, None), (31, Some(31))]);
}

#[tokio::test]
async fn thirty_two_files_end_with_the_total_in_place_of_the_32nd_report() {
    assert_eq!(reports_for(32).await, [(1, None), (32, Some(32))]);
}

#[tokio::test]
async fn thirty_three_files_get_the_32nd_report_then_the_end() {
    assert_eq!(reports_for(33).await, [(1, None), (32, None), (33, Some(33))]);
}

#[tokio::test]
async fn sixty_four_files_end_with_the_total_in_place_of_the_64th_report() {
    assert_eq!(reports_for(64).await, [(1, None), (32, None), (64, Some(64))]);
}

#[tokio::test]
async fn reports_over_2048_files_strictly_increase_and_end_with_the_total() {
    let mut expected = vec![(1, None)];
    expected.extend((32..2048).step_by(32).map(|n| (n, None)));
    expected.push((2048, Some(2048)));

    assert_eq!(reports_for(2048).await, expected);
}

#[tokio::test]
async fn no_file_gets_one_report_of_zero_of_zero() {
    assert_eq!(reports_for(0).await, [(0, Some(0))]);
}

#[test]
fn a_grep_cancelled_at_its_first_report_stops_before_the_next_file_and_reports_nothing_more() {
    // (`grep_cancel.rs` does the same over 20,000 files through the registry.)
    let ws = tree(100);
    let (ctx, reports) = cancelling_at_first_report();

    let (result, record) = recorded(|| grep_in(&ws, &ctx));

    assert_eq!(result, Err(FsError::Cancelled { tool: "grep" }));
    assert_eq!(*reports.lock().unwrap(), [(1, None)]);
    assert_eq!(record, [point(1), end(1, true)]);
}

#[test]
fn a_grep_cancelled_before_it_starts_searches_no_file() {
    let ws = tree(3);
    let token = CancellationToken::new();
    token.cancel();
    let ctx = ToolContext::builder().cancellation(token).build();

    let (result, record) = recorded(|| grep_in(&ws, &ctx));

    assert_eq!(result, Err(FsError::Cancelled { tool: "grep" }));
    assert_eq!(record, [end(0, true)]);
}

#[test]
fn the_record_of_files_searched_is_kept_without_a_progress_listener() {
    let ws = tree(40);

    let (result, record): (_, Vec<Searched>) = recorded(|| grep_in(&ws, &ToolContext::new()));

    assert!(result.is_ok(), "{result:?}");
    assert_eq!(record, [point(1), point(32), end(40, false)]);
}

#[test]
fn the_cancelled_error_names_the_tool_and_says_to_call_it_again() {
    assert_eq!(
        FsError::Cancelled { tool: "grep" }.to_string(),
        "`grep` was cancelled before it finished; call it again to run it to its end"
    );
}
