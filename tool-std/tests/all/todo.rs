//! The todo set: ids, the in_progress rule, strict items, clamped priorities, patches and the plan
//! text. Plans are kept by a real file session store in a temp directory.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tool_runtime::{FixedClock, Registry, ToolCall, ToolContext, ToolMessage};
use tool_std::session::{FileSessionStore, MemorySessionStore, SESSION_STORE, SessionStore};
use tool_std::todo::{APPLIED_KEY, APPLIED_TTL, MAX_APPLIED, MAX_KEPT_ANSWERS};

/// A registry of the todo tools whose session store is a file store in a temp directory.
struct Plans {
    _dir: tempfile::TempDir,
    registry: Registry,
    calls: AtomicUsize,
}

impl Plans {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn SessionStore> = Arc::new(FileSessionStore::new(dir.path().join("sessions")));
        let registry =
            tool_std::registry_builder().sets(["todo"]).override_dependency(&SESSION_STORE, store).build().unwrap();
        Self { _dir: dir, registry, calls: AtomicUsize::new(1) }
    }

    /// A call with a tool call id of its own (a call id is the retry key of a change).
    async fn call_in(&self, ctx: &ToolContext, tool: &str, arguments: Value) -> ToolMessage {
        let id = format!("call_{}", self.calls.fetch_add(1, Ordering::SeqCst));
        self.call_as(ctx, &id, tool, arguments).await
    }

    async fn call_as(&self, ctx: &ToolContext, call_id: &str, tool: &str, arguments: Value) -> ToolMessage {
        self.registry.call(&ToolCall::new(call_id, tool, arguments.to_string()), ctx).await
    }

    async fn ok(&self, tool: &str, arguments: Value) -> String {
        let message = self.call_in(&session("s1"), tool, arguments).await;
        assert!(!message.is_error, "expected success, got error: {}", message.text());
        message.text().into_owned()
    }

    async fn err(&self, tool: &str, arguments: Value) -> String {
        let message = self.call_in(&session("s1"), tool, arguments).await;
        assert!(message.is_error, "expected an error, got success: {}", message.text());
        message.text().into_owned()
    }

    async fn read(&self) -> String {
        self.ok("todo_read", json!({})).await
    }
}

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

/// The `(pN)` column of each plan line.
fn priorities(plan: &str) -> Vec<String> {
    plan.lines().skip(2).filter_map(|line| line.split_once(" (p").map(|(_, rest)| rest[..1].to_owned())).collect()
}

#[tokio::test]
async fn the_plan_lists_counts_next_and_one_line_per_item() {
    let plans = Plans::new();

    let plan = plans
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
    let plans = Plans::new();

    let plan = plans.ok("todo_new", json!({"todos": [item("Done", "completed"), item("Later", "pending")]})).await;

    assert_eq!(plan.lines().nth(1), Some("Next: [later]"));
}

#[tokio::test]
async fn next_is_none_when_everything_is_finished() {
    let plans = Plans::new();

    let plan = plans.ok("todo_new", json!({"todos": [item("Done", "completed")]})).await;

    assert_eq!(plan.lines().nth(1), Some("Next: none"));
}

#[tokio::test]
async fn ids_are_slugs_of_the_content() {
    let plans = Plans::new();

    let plan = plans.ok("todo_new", json!({"todos": [item("Fix the parser (again)!", "pending")]})).await;

    assert_eq!(ids(&plan), ["fix-the-parser-again"]);
}

#[tokio::test]
async fn a_given_id_is_slugged_too() {
    let plans = Plans::new();

    let plan =
        plans.ok("todo_new", json!({"todos": [{"id": "Parser Work", "content": "x", "status": "pending"}]})).await;

    assert_eq!(ids(&plan), ["parser-work"]);
}

#[tokio::test]
async fn repeated_ids_get_2_and_3_suffixes() {
    let plans = Plans::new();

    let plan = plans
        .ok(
            "todo_new",
            json!({"todos": [item("Run tests", "pending"), item("Run tests", "pending"),
                             {"id": "run tests", "content": "again", "status": "pending"}]}),
        )
        .await;

    assert_eq!(ids(&plan), ["run-tests", "run-tests-2", "run-tests-3"]);
}

#[tokio::test]
async fn thousands_of_identical_items_get_every_suffix_in_order_in_new_and_in_append() {
    let plans = Plans::new();
    let same = |n: usize| json!({"todos": vec![item("Run tests", "pending"); n]});

    let plan = plans.ok("todo_new", same(3_000)).await;
    let appended = plans.ok("todo_append", same(1_000)).await;

    let expected: Vec<String> =
        std::iter::once("run-tests".to_owned()).chain((2..=4_000).map(|n| format!("run-tests-{n}"))).collect();
    assert_eq!(ids(&plan), expected[..3_000]);
    assert_eq!(ids(&appended), expected);
}

#[tokio::test]
async fn an_id_given_by_hand_is_skipped_by_the_suffixes_of_its_base() {
    let plans = Plans::new();
    let by_hand = json!({"id": "run-tests-3", "content": "by hand", "status": "pending"});
    let plan = plans
        .ok(
            "todo_new",
            json!({"todos": [by_hand, item("Run tests", "pending"), item("Run tests", "pending"),
                                          item("Run tests", "pending")]}),
        )
        .await;
    assert_eq!(ids(&plan), ["run-tests-3", "run-tests", "run-tests-2", "run-tests-4"]);
}

#[tokio::test]
async fn two_items_in_progress_are_refused_naming_them_and_nothing_is_saved() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("Old plan", "pending")]})).await;

    let error = plans
        .err(
            "todo_new",
            json!({"todos": [item("Write code", "in_progress"), item("Review", "pending"), item("Test", "in_progress")]}),
        )
        .await;

    assert_eq!(
        error,
        "At most one item may be in_progress, got 2: write-code, test. Nothing was saved; keep one in_progress and set \
         the others to pending or completed (one todo_patch may change several items)"
    );
    assert_eq!(
        plans.read().await,
        "Todos: 1 total, 1 pending, 0 in_progress, 0 completed, 0 cancelled\nNext: [old-plan]\n1. [ ] [old-plan] (p3) Old plan"
    );
}

#[test]
fn every_changing_tool_states_the_in_progress_rule_in_its_description() {
    let registry = tool_std::registry_builder().sets(["todo"]).build().unwrap();

    for name in ["todo_new", "todo_append", "todo_patch"] {
        let description =
            registry.get(name).unwrap().definition().description.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(description.contains("one item may be in_progress"), "{name}: {description}");
    }
}

#[tokio::test]
async fn a_bad_status_is_refused_listing_the_four_statuses() {
    let plans = Plans::new();

    assert_eq!(
        plans.err("todo_new", json!({"todos": [item("Write code", "done")]})).await,
        "invalid arguments for `todo_new`: `todos[0].status`: unknown variant `done`, expected one of `pending`, \
         `in_progress`, `completed`, `cancelled`"
    );
}

#[tokio::test]
async fn a_bad_status_in_a_patch_is_refused_listing_the_four_statuses() {
    let plans = Plans::new();

    assert_eq!(
        plans.err("todo_patch", json!({"updates": [{"id": "a", "status": "finished"}]})).await,
        "invalid arguments for `todo_patch`: `updates[0].status`: unknown variant `finished`, expected one of \
         `pending`, `in_progress`, `completed`, `cancelled`"
    );
}

#[tokio::test]
async fn an_unknown_key_in_an_item_is_refused() {
    let plans = Plans::new();

    assert_eq!(
        plans.err("todo_new", json!({"todos": [{"content": "x", "status": "pending", "title": "x"}]})).await,
        "invalid arguments for `todo_new`: unknown field `todos[0].title`; expected one of `active_form`, `content`, \
         `id`, `notes`, `priority`, `status`"
    );
}

#[tokio::test]
async fn an_unknown_key_in_a_patch_is_refused() {
    let plans = Plans::new();

    assert_eq!(
        plans.err("todo_patch", json!({"updates": [{"id": "a", "state": "completed"}]})).await,
        "invalid arguments for `todo_patch`: unknown field `updates[0].state`; expected one of `active_form`, \
         `content`, `id`, `notes`, `priority`, `remove`, `status`"
    );
}

#[tokio::test]
async fn an_empty_list_is_refused() {
    let plans = Plans::new();

    assert_eq!(
        plans.err("todo_new", json!({"todos": []})).await,
        "invalid arguments for `todo_new`: `todos`: must hold at least 1 item; got 0"
    );
    assert_eq!(
        plans.err("todo_append", json!({"todos": []})).await,
        "invalid arguments for `todo_append`: `todos`: must hold at least 1 item; got 0"
    );
    assert_eq!(
        plans.err("todo_patch", json!({"updates": []})).await,
        "invalid arguments for `todo_patch`: `updates`: must hold at least 1 item; got 0"
    );
}

#[tokio::test]
async fn priorities_from_1_to_5_are_kept_and_a_missing_one_is_3() {
    let plans = Plans::new();

    let plan = plans
        .ok(
            "todo_new",
            json!({"todos": [
                {"content": "a", "status": "pending", "priority": 1},
                {"content": "b", "status": "pending", "priority": 5},
                {"content": "c", "status": "pending"},
            ]}),
        )
        .await;

    assert_eq!(priorities(&plan), ["1", "5", "3"]);
}

#[tokio::test]
async fn a_priority_outside_1_to_5_is_refused_and_nothing_is_saved() {
    let plans = Plans::new();

    assert_eq!(
        plans.err("todo_new", json!({"todos": [{"content": "a", "status": "pending", "priority": 0}]})).await,
        "invalid arguments for `todo_new`: `todos[0].priority`: must be at least 1; got 0"
    );
    assert_eq!(
        plans.err("todo_new", json!({"todos": [{"content": "a", "status": "pending", "priority": 6}]})).await,
        "invalid arguments for `todo_new`: `todos[0].priority`: must be at most 5; got 6"
    );
    assert_eq!(plans.read().await, "No todos yet. Use todo_new to write a plan.");
}

#[tokio::test]
async fn a_patched_priority_outside_1_to_5_is_refused() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("a", "pending")]})).await;

    assert_eq!(
        plans.err("todo_patch", json!({"updates": [{"id": "a", "priority": 12}]})).await,
        "invalid arguments for `todo_patch`: `updates[0].priority`: must be at most 5; got 12"
    );
}

#[tokio::test]
async fn an_empty_content_is_refused() {
    let plans = Plans::new();

    assert_eq!(
        plans.err("todo_new", json!({"todos": [item("  ", "pending")]})).await,
        "todos[0].content is empty; give each item the text of its task. Nothing was saved"
    );
}

#[tokio::test]
async fn todo_read_without_a_plan_says_how_to_make_one() {
    let plans = Plans::new();

    assert_eq!(plans.read().await, "No todos yet. Use todo_new to write a plan.");
}

#[tokio::test]
async fn the_plan_is_kept_across_calls_in_one_session() {
    let plans = Plans::new();

    let written = plans.ok("todo_new", json!({"todos": [item("Write code", "in_progress")]})).await;
    let read = plans.read().await;

    assert_eq!(
        read,
        "Todos: 1 total, 0 pending, 1 in_progress, 0 completed, 0 cancelled\nNext: [write-code]\n1. [>] [write-code] (p3) Write code"
    );
    assert_eq!(read, written);
}

#[tokio::test]
async fn sessions_have_separate_plans() {
    let plans = Plans::new();
    plans.call_in(&session("s1"), "todo_new", json!({"todos": [item("Write code", "pending")]})).await;

    let other = plans.call_in(&session("s2"), "todo_read", json!({})).await;
    let unnamed = plans.call_in(&ToolContext::new(), "todo_read", json!({})).await;

    assert_eq!(other.text(), "No todos yet. Use todo_new to write a plan.");
    assert_eq!(unnamed.text(), "No todos yet. Use todo_new to write a plan.");
}

#[tokio::test]
async fn a_context_without_a_session_id_keeps_its_plan_between_calls() {
    let plans = Plans::new();
    let ctx = ToolContext::new();
    plans.call_in(&ctx, "todo_new", json!({"todos": [item("Write code", "pending")]})).await;

    let read = plans.call_in(&ctx, "todo_read", json!({})).await;

    assert_eq!(ids(&read.text()), ["write-code"]);
}

#[tokio::test]
async fn todo_new_replaces_the_previous_plan() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("First", "pending")]})).await;

    plans.ok("todo_new", json!({"todos": [item("Second", "pending")]})).await;

    assert_eq!(ids(&plans.read().await), ["second"]);
}

#[tokio::test]
async fn todo_append_keeps_the_plan_and_adds_at_the_end() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("Write code", "in_progress")]})).await;

    let plan = plans.ok("todo_append", json!({"todos": [item("Add tests", "pending"), item("Ship", "pending")]})).await;

    assert_eq!(ids(&plan), ["write-code", "add-tests", "ship"]);
    assert_eq!(plan, plans.read().await);
}

#[tokio::test]
async fn appended_ids_are_unique_against_the_existing_plan() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("Run tests", "completed")]})).await;

    let plan = plans.ok("todo_append", json!({"todos": [item("Run tests", "pending")]})).await;

    assert_eq!(ids(&plan), ["run-tests", "run-tests-2"]);
}

#[tokio::test]
async fn appending_a_second_in_progress_item_is_refused_naming_both_and_nothing_is_saved() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("Write code", "in_progress")]})).await;
    let before = plans.read().await;

    let error = plans.err("todo_append", json!({"todos": [item("Review", "in_progress")]})).await;

    assert_eq!(
        error,
        "At most one item may be in_progress, got 2: write-code, review. Nothing was saved; keep one in_progress and \
         set the others to pending or completed (one todo_patch may change several items)"
    );
    assert_eq!(plans.read().await, before);
}

#[tokio::test]
async fn a_patch_changes_only_the_given_fields() {
    let plans = Plans::new();
    plans
        .ok(
            "todo_new",
            json!({"todos": [{"content": "Write code", "status": "pending", "priority": 2, "notes": "in src/"}]}),
        )
        .await;

    let plan = plans.ok("todo_patch", json!({"updates": [{"id": "write-code", "status": "completed"}]})).await;

    assert_eq!(
        plan,
        "Todos: 1 total, 0 pending, 0 in_progress, 1 completed, 0 cancelled\nNext: none\n\
         1. [x] [write-code] (p2) Write code\n   notes: in src/"
    );
}

#[tokio::test]
async fn an_empty_text_in_a_patch_clears_notes_and_active_form() {
    let plans = Plans::new();
    plans
        .ok(
            "todo_new",
            json!({"todos": [{"content": "Write code", "status": "in_progress", "notes": "n",
                              "active_form": "Writing code"}]}),
        )
        .await;

    let plan = plans.ok("todo_patch", json!({"updates": [{"id": "write-code", "notes": "", "active_form": ""}]})).await;

    assert_eq!(
        plan,
        "Todos: 1 total, 0 pending, 1 in_progress, 0 completed, 0 cancelled\nNext: [write-code]\n\
         1. [>] [write-code] (p3) Write code"
    );
}

#[tokio::test]
async fn a_patch_can_replace_the_content_and_keeps_the_id() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("Write code", "pending")]})).await;

    let plan = plans.ok("todo_patch", json!({"updates": [{"id": "write-code", "content": "Write the lexer"}]})).await;

    assert_eq!(plan.lines().nth(2), Some("1. [ ] [write-code] (p3) Write the lexer"));
}

#[tokio::test]
async fn a_patch_with_remove_deletes_the_item() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("a", "pending"), item("b", "pending")]})).await;

    let plan = plans.ok("todo_patch", json!({"updates": [{"id": "a", "remove": true}]})).await;

    assert_eq!(ids(&plan), ["b"]);
}

#[tokio::test]
async fn an_unknown_id_in_a_patch_lists_the_existing_ids_and_nothing_is_saved() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("Write code", "pending"), item("Add tests", "pending")]})).await;
    let before = plans.read().await;

    let error = plans
        .err(
            "todo_patch",
            json!({"updates": [{"id": "write-code", "status": "completed"}, {"id": "deploy", "status": "completed"}]}),
        )
        .await;

    assert_eq!(
        error,
        "Unknown todo id `deploy` in updates[1]; existing ids: write-code, add-tests. Nothing was saved; use one of \
         these ids (todo_read shows the plan)"
    );
    assert_eq!(plans.read().await, before);
}

#[tokio::test]
async fn an_unknown_id_on_an_empty_plan_says_the_plan_is_empty() {
    let plans = Plans::new();

    assert_eq!(
        plans.err("todo_patch", json!({"updates": [{"id": "x", "remove": true}]})).await,
        "Unknown todo id `x` in updates[0]; existing ids: none, the plan is empty. Nothing was saved; use one of these \
         ids (todo_read shows the plan)"
    );
}

#[tokio::test]
async fn a_patch_finds_an_item_by_the_slug_of_the_given_id() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("Write code", "pending")]})).await;

    let plan = plans.ok("todo_patch", json!({"updates": [{"id": "Write Code", "status": "completed"}]})).await;

    assert_eq!(plan.lines().nth(2), Some("1. [x] [write-code] (p3) Write code"));
}

#[tokio::test]
async fn a_patch_that_makes_a_second_item_in_progress_is_refused_and_nothing_is_saved() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("Write code", "in_progress"), item("Add tests", "pending")]})).await;
    let before = plans.read().await;

    let error = plans.err("todo_patch", json!({"updates": [{"id": "add-tests", "status": "in_progress"}]})).await;

    assert_eq!(
        error,
        "At most one item may be in_progress, got 2: write-code, add-tests. Nothing was saved; keep one in_progress \
         and set the others to pending or completed (one todo_patch may change several items)"
    );
    assert_eq!(plans.read().await, before);
}

#[tokio::test]
async fn one_patch_can_finish_the_current_item_and_start_the_next() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("Write code", "in_progress"), item("Add tests", "pending")]})).await;

    let plan = plans
        .ok(
            "todo_patch",
            json!({"updates": [{"id": "add-tests", "status": "in_progress"}, {"id": "write-code", "status": "completed"}]}),
        )
        .await;

    assert_eq!(plan.lines().nth(1), Some("Next: [add-tests]"));
}

#[tokio::test]
async fn a_patch_with_an_empty_content_is_refused() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("a", "pending")]})).await;

    assert_eq!(
        plans.err("todo_patch", json!({"updates": [{"id": "a", "content": " "}]})).await,
        "updates[0].content is empty; give each item the text of its task. Nothing was saved"
    );
}

#[tokio::test]
async fn todo_clear_empties_the_plan_and_says_how_many_items_went() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("a", "pending"), item("b", "pending")]})).await;

    let cleared = plans.ok("todo_clear", json!({})).await;

    assert_eq!(cleared, "Cleared the plan (2 items removed). Use todo_new to write a new one.");
    assert_eq!(plans.read().await, "No todos yet. Use todo_new to write a plan.");
}

// ---------------------------------------------------------------------------------------------
// Retries: a change is applied at most once per retry key.
// ---------------------------------------------------------------------------------------------

/// The plan's item contents, in order.
fn contents(plan: &str) -> Vec<String> {
    plan.lines()
        .skip(2)
        .filter_map(|line| {
            line.split_once("] (p").and_then(|(_, rest)| rest.split_once(") ")).map(|(_, c)| c.to_owned())
        })
        .collect()
}

#[tokio::test]
async fn a_retried_append_with_the_same_idempotency_key_is_applied_once_and_answers_as_the_first() {
    let plans = Plans::new();
    plans.ok("todo_new", json!({"todos": [item("Base", "pending")]})).await;
    let append = json!({"todos": [item("Once", "pending")], "idempotency_key": "k-1"});

    let first = plans.ok("todo_append", append.clone()).await;
    // The client retries on a new connection: a new tool call id, the same key.
    let retried = plans.ok("todo_append", append).await;

    assert_eq!(retried, first);
    assert_eq!(contents(&plans.read().await), ["Base", "Once"]);
}

#[tokio::test]
async fn a_change_retried_under_the_same_tool_call_id_is_applied_once_in_the_file_and_memory_stores() {
    let memory: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let in_memory =
        tool_std::registry_builder().sets(["todo"]).override_dependency(&SESSION_STORE, memory).build().unwrap();
    let file = Plans::new();
    for registry in [&file.registry, &in_memory] {
        let ctx = &session("s1");
        let call = |id: &str, tool: &str, arguments: Value| {
            let call = ToolCall::new(id, tool, arguments.to_string());
            async move { registry.call(&call, ctx).await.text().into_owned() }
        };
        call("c1", "todo_new", json!({"todos": [item("Base", "pending")]})).await;
        let append = json!({"todos": [item("Once", "pending")]});
        let first = call("c2", "todo_append", append.clone()).await;
        assert_eq!(call("c2", "todo_append", append).await, first);
        // A removal retried answers as the first time, instead of refusing the id it removed.
        let patch = json!({"updates": [{"id": "once", "remove": true}]});
        let removed = call("c3", "todo_patch", patch.clone()).await;
        assert_eq!(call("c3", "todo_patch", patch).await, removed);
        let cleared = call("c4", "todo_clear", json!({})).await;
        assert_eq!(cleared, "Cleared the plan (1 item removed). Use todo_new to write a new one.");
        call("c5", "todo_append", json!({"todos": [item("After", "pending")]})).await;
        // A late retry of the clear neither wipes the later item nor changes its answer.
        assert_eq!(call("c4", "todo_clear", json!({})).await, cleared);
        assert_eq!(contents(&call("c6", "todo_read", json!({})).await), ["After"]);
    }
}

#[tokio::test]
async fn a_retry_key_used_again_for_other_items_is_refused_and_nothing_is_saved() {
    let plans = Plans::new();
    plans.ok("todo_append", json!({"todos": [item("First", "pending")], "idempotency_key": "k"})).await;

    let error = plans.err("todo_append", json!({"todos": [item("Second", "pending")], "idempotency_key": "k"})).await;

    assert_eq!(
        error,
        "the key `k` was already used for another todo_append call of this session, with other arguments. Nothing \
         was saved; give a new idempotency_key (or tool call id) for a new change, and the same one only to retry \
         the same change"
    );
    assert_eq!(contents(&plans.read().await), ["First"]);
}

#[tokio::test]
async fn a_blank_or_overlong_idempotency_key_is_refused() {
    let plans = Plans::new();
    let with_key = |key: String| json!({"todos": [item("X", "pending")], "idempotency_key": key});

    let blank = plans.err("todo_append", with_key(" ".to_owned())).await;
    let long = plans.err("todo_append", with_key("k".repeat(201))).await;

    assert_eq!(
        [blank, long],
        [1, 201].map(|n| format!(
            "idempotency_key must be 1 to 200 bytes of text, got {n} bytes; give a short key unique to this change \
             (the same key again on a retry). Nothing was saved"
        ))
    );
    assert_eq!(plans.read().await, tool_std::todo::EMPTY_PLAN);
}

#[tokio::test]
async fn a_session_remembers_its_64_latest_keyed_changes_for_24_hours() {
    let store = Arc::new(MemorySessionStore::new());
    let registry = tool_std::registry_builder()
        .sets(["todo"])
        .override_dependency(&SESSION_STORE, store.clone() as Arc<dyn SessionStore>)
        .build()
        .unwrap();
    let clock = Arc::new(FixedClock::new(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)));
    let ctx = ToolContext::builder().session_id("s1").clock(clock.clone()).build();
    let append = |n: usize| {
        let call = ToolCall::new(
            format!("c{n}"),
            "todo_append",
            json!({"todos": [item(&format!("i{n}"), "pending")]}).to_string(),
        );
        let (registry, ctx) = (&registry, &ctx);
        async move { registry.call(&call, ctx).await }
    };
    for n in 0..=MAX_APPLIED {
        assert!(!append(n).await.is_error);
    }
    let records = |store: &MemorySessionStore| store.load("s1", None).unwrap()[APPLIED_KEY].as_array().unwrap().len();
    assert_eq!(records(&store), MAX_APPLIED);
    // Of 65 keyed changes, c1 is remembered (its retry changes nothing) and c0 is forgotten: its
    // retry applies again.
    append(1).await;
    append(0).await;
    clock.advance(APPLIED_TTL);
    // A day later c2 is forgotten too.
    append(2).await;
    let plan = registry.call(&ToolCall::new("r", "todo_read", "{}"), &ctx).await.text().into_owned();
    let mut expected: Vec<String> = (0..=MAX_APPLIED).map(|n| format!("i{n}")).collect();
    expected.extend(["i0".to_owned(), "i2".to_owned()]);
    assert_eq!(contents(&plan), expected);
    // The records past their day are dropped at the next save: only c2's is left.
    assert_eq!(records(&store), 1);
}

#[tokio::test]
async fn the_answers_of_the_8_latest_keyed_changes_are_kept_and_an_older_retry_gets_the_plan_as_it_is() {
    let store = Arc::new(MemorySessionStore::new());
    let registry = tool_std::registry_builder()
        .sets(["todo"])
        .override_dependency(&SESSION_STORE, store.clone() as Arc<dyn SessionStore>)
        .build()
        .unwrap();
    let ctx = session("s1");
    let append = |n: usize| {
        let arguments = json!({"todos": [item(&format!("i{n}"), "pending")], "idempotency_key": format!("k{n}")});
        let call = ToolCall::new(fresh_call_id(), "todo_append", arguments.to_string());
        let (registry, ctx) = (&registry, &ctx);
        async move { registry.call(&call, ctx).await.text().into_owned() }
    };
    let mut first = Vec::new();
    for n in 0..=MAX_KEPT_ANSWERS {
        first.push(append(n).await);
    }
    let kept = |store: &MemorySessionStore| {
        let records = store.load("s1", None).unwrap()[APPLIED_KEY].as_array().unwrap().clone();
        records.iter().map(|r| r.get("text").is_some()).collect::<Vec<bool>>()
    };
    let mut expected_kept = vec![false];
    expected_kept.extend([true; MAX_KEPT_ANSWERS]);
    assert_eq!(kept(&store), expected_kept);
    let now = plans_text(&registry, &ctx).await;
    // k0's answer is forgotten: its retry gets the plan as it is, and adds nothing.
    assert_eq!(append(0).await, now);
    // k1's is kept: its retry answers as the first time (the plan of i0 and i1).
    assert_eq!(append(1).await, first[1]);
    assert_eq!(
        contents(&plans_text(&registry, &ctx).await),
        (0..=MAX_KEPT_ANSWERS).map(|n| format!("i{n}")).collect::<Vec<_>>()
    );
    // Replays save nothing: the records are as they were.
    assert_eq!(kept(&store), expected_kept);
}

/// A call id no other call of this file has.
fn fresh_call_id() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("fresh_{}", NEXT.fetch_add(1, Ordering::SeqCst))
}

async fn plans_text(registry: &Registry, ctx: &ToolContext) -> String {
    registry.call(&ToolCall::new("read", "todo_read", "{}"), ctx).await.text().into_owned()
}
