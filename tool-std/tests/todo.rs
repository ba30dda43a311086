//! The todo set: ids, the in_progress rule, strict items, the plan text and per-session state.

mod common;

use common::Workspace;
use serde_json::{Value, json};
use tool_runtime::ToolContext;

fn item(content: &str, status: &str) -> Value {
    json!({"content": content, "status": status})
}

fn session(id: &str) -> ToolContext {
    ToolContext::builder().session_id(id).build()
}

/// The id column of each plan line (`n. [ ] [id] (pN) label`).
fn ids(plan: &str) -> Vec<String> {
    plan.lines()
        .skip(2)
        .filter_map(|line| {
            line.split_once("] [").and_then(|(_, rest)| rest.split_once(']')).map(|(id, _)| id.to_owned())
        })
        .collect()
}

#[tokio::test]
async fn the_plan_lists_counts_next_and_one_line_per_item() {
    let ws = Workspace::new();

    let plan = ws
        .ok(
            "todo_new",
            json!({"todos": [
                {"content": "Set up the crate", "status": "completed"},
                {"content": "Write the parser", "status": "in_progress", "priority": 1,
                 "active_form": "Writing the parser", "notes": "handle CRLF"},
                {"content": "Add tests", "status": "pending", "priority": 2},
                {"content": "Port to Windows", "status": "cancelled", "priority": 5},
            ]}),
        )
        .await;

    assert_eq!(
        plan,
        "Todos: 4 total, 1 pending, 1 in_progress, 1 completed, 1 cancelled\n\
         Next: [write-the-parser]\n\
         1. [x] [set-up-the-crate] (p3) Set up the crate\n\
         2. [>] [write-the-parser] (p1) Writing the parser\n   \
         notes: handle CRLF\n\
         3. [ ] [add-tests] (p2) Add tests\n\
         4. [-] [port-to-windows] (p5) Port to Windows"
    );
}

#[tokio::test]
async fn next_is_the_first_pending_item_when_none_is_in_progress() {
    let ws = Workspace::new();

    let plan = ws.ok("todo_new", json!({"todos": [item("Done", "completed"), item("Later", "pending")]})).await;

    assert_eq!(plan.lines().nth(1), Some("Next: [later]"));
}

#[tokio::test]
async fn next_is_none_when_everything_is_finished() {
    let ws = Workspace::new();

    let plan = ws.ok("todo_new", json!({"todos": [item("Done", "completed")]})).await;

    assert_eq!(plan.lines().nth(1), Some("Next: none"));
}

#[tokio::test]
async fn ids_are_slugs_of_the_content() {
    let ws = Workspace::new();

    let plan = ws.ok("todo_new", json!({"todos": [item("Fix the parser (again)!", "pending")]})).await;

    assert_eq!(ids(&plan), ["fix-the-parser-again"]);
}

#[tokio::test]
async fn a_given_id_is_slugged_too() {
    let ws = Workspace::new();

    let plan = ws.ok("todo_new", json!({"todos": [{"id": "Parser Work", "content": "x", "status": "pending"}]})).await;

    assert_eq!(ids(&plan), ["parser-work"]);
}

#[tokio::test]
async fn repeated_ids_get_2_and_3_suffixes() {
    let ws = Workspace::new();

    let plan = ws
        .ok(
            "todo_new",
            json!({"todos": [item("Run tests", "pending"), item("Run tests", "pending"),
                             {"id": "run tests", "content": "again", "status": "pending"}]}),
        )
        .await;

    assert_eq!(ids(&plan), ["run-tests", "run-tests-2", "run-tests-3"]);
}

#[tokio::test]
async fn two_items_in_progress_are_refused_naming_them_and_nothing_is_saved() {
    let ws = Workspace::new();
    ws.ok("todo_new", json!({"todos": [item("Old plan", "pending")]})).await;

    let error = ws
        .err(
            "todo_new",
            json!({"todos": [item("Write code", "in_progress"), item("Review", "pending"), item("Test", "in_progress")]}),
        )
        .await;

    assert_eq!(
        error,
        "At most one item may be in_progress, got 2: write-code, test. Nothing was saved; keep one in_progress and \
         make the others pending"
    );
    assert_eq!(
        ws.ok("todo_read", json!({})).await,
        "Todos: 1 total, 1 pending, 0 in_progress, 0 completed, 0 cancelled\nNext: [old-plan]\n1. [ ] [old-plan] (p3) Old plan"
    );
}

#[tokio::test]
async fn a_bad_status_is_refused_listing_the_four_statuses() {
    let ws = Workspace::new();

    assert_eq!(
        ws.err("todo_new", json!({"todos": [item("Write code", "done")]})).await,
        "invalid arguments for `todo_new`: `todos[0].status`: unknown variant `done`, expected one of `pending`, \
         `in_progress`, `completed`, `cancelled`"
    );
}

#[tokio::test]
async fn an_unknown_key_in_an_item_is_refused() {
    let ws = Workspace::new();

    assert_eq!(
        ws.err("todo_new", json!({"todos": [{"content": "x", "status": "pending", "title": "x"}]})).await,
        "invalid arguments for `todo_new`: unknown field `todos[0].title`; expected one of `active_form`, `content`, \
         `id`, `notes`, `priority`, `status`"
    );
}

#[tokio::test]
async fn an_empty_list_is_refused() {
    let ws = Workspace::new();

    assert_eq!(ws.err("todo_new", json!({"todos": []})).await, "todos must hold at least one item; nothing was saved");
}

#[tokio::test]
async fn a_priority_outside_1_to_5_is_refused() {
    let ws = Workspace::new();

    assert_eq!(
        ws.err(
            "todo_new",
            json!({"todos": [item("a", "pending"), {"content": "b", "status": "pending", "priority": 0}]})
        )
        .await,
        "todos[1].priority must be 1 to 5 (1 = most important), got 0. Nothing was saved"
    );
}

#[tokio::test]
async fn an_empty_content_is_refused() {
    let ws = Workspace::new();

    assert_eq!(
        ws.err("todo_new", json!({"todos": [item("  ", "pending")]})).await,
        "todos[0].content is empty; give each item the text of its task. Nothing was saved"
    );
}

#[tokio::test]
async fn todo_read_without_a_plan_says_how_to_make_one() {
    let ws = Workspace::new();

    assert_eq!(ws.ok("todo_read", json!({})).await, "No todos yet. Use todo_new to write a plan.");
}

#[tokio::test]
async fn the_plan_is_kept_across_calls_in_one_session() {
    let ws = Workspace::new();
    let ctx = session("s1");

    let written = ws.call_in(&ctx, "todo_new", json!({"todos": [item("Write code", "in_progress")]})).await;
    let read = ws.call_in(&ctx, "todo_read", json!({})).await;

    assert!(!written.is_error && !read.is_error);
    assert_eq!(
        read.text(),
        "Todos: 1 total, 0 pending, 1 in_progress, 0 completed, 0 cancelled\nNext: [write-code]\n1. [>] [write-code] (p3) Write code"
    );
    assert_eq!(read.text(), written.text());
}

#[tokio::test]
async fn sessions_have_separate_plans() {
    let ws = Workspace::new();
    ws.call_in(&session("s1"), "todo_new", json!({"todos": [item("Write code", "pending")]})).await;

    let other = ws.call_in(&session("s2"), "todo_read", json!({})).await;
    let default = ws.call("todo_read", json!({})).await;

    assert_eq!(other.text(), "No todos yet. Use todo_new to write a plan.");
    assert_eq!(default.text(), "No todos yet. Use todo_new to write a plan.");
}

#[tokio::test]
async fn todo_new_replaces_the_previous_plan() {
    let ws = Workspace::new();
    ws.ok("todo_new", json!({"todos": [item("First", "pending")]})).await;

    ws.ok("todo_new", json!({"todos": [item("Second", "pending")]})).await;

    assert_eq!(ids(&ws.ok("todo_read", json!({})).await), ["second"]);
}
