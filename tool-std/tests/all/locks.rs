//! The standard tools' resource locks: the calls of one turn on one file (however it is spelled)
//! run one after the other, so parallel edits all apply; the todo tools lock the session's plan.

use crate::common::Workspace;

use serde_json::{Value, json};
use tool_runtime::locks::ResourceResolver;
use tool_runtime::{ToolCall, ToolContext};
use tool_std::resources::WorkspaceResources;
use tool_std::sandbox::{SANDBOX, Sandbox};

/// `count` lines `line 0\n`, `line 1\n`, ...
fn numbered(count: usize) -> String {
    (0..count).map(|i| format!("line {i}\n")).collect()
}

/// The edit that upper-cases line `i` of `path`.
fn edit_line(i: usize, path: &str) -> ToolCall {
    let arguments =
        json!({"file_path": path, "old_string": format!("line {i}\n"), "new_string": format!("LINE {i}\n")});
    ToolCall::new(format!("call_{i}"), "edit", arguments.to_string())
}

/// The errors among a turn's messages, as `call id: text`.
fn errors(batch: &tool_runtime::Batch) -> Vec<String> {
    batch.iter().filter(|m| m.is_error).map(|m| format!("{}: {}", m.tool_call_id, m.text())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_parallel_edits_of_one_file_in_one_turn_all_apply() {
    let ws = Workspace::new();
    ws.write("notes.txt", numbered(20));
    let calls: Vec<ToolCall> = (0..20).map(|i| edit_line(i, "notes.txt")).collect();
    let batch = ws.registry().call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(errors(&batch), Vec::<String>::new());
    let expected: String = (0..20).map(|i| format!("LINE {i}\n")).collect();
    assert_eq!(std::fs::read_to_string(ws.root.join("notes.txt")).unwrap(), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_through_three_spellings_of_one_file_all_apply() {
    let ws = Workspace::new();
    ws.write("notes.txt", numbered(12));
    std::fs::create_dir(ws.root.join("sub")).unwrap();
    let spellings = ["notes.txt", "./notes.txt", "sub/../notes.txt"];
    let calls: Vec<ToolCall> = (0..12).map(|i| edit_line(i, spellings[i % 3])).collect();
    let batch = ws.registry().call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(errors(&batch), Vec::<String>::new());
    let expected: String = (0..12).map(|i| format!("LINE {i}\n")).collect();
    assert_eq!(std::fs::read_to_string(ws.root.join("notes.txt")).unwrap(), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_and_edits_of_one_file_in_one_turn_all_apply() {
    let ws = Workspace::new();
    ws.write("a.txt", numbered(10));
    let calls: Vec<ToolCall> = (0..10)
        .map(|i| {
            if i % 2 == 0 {
                let patch =
                    format!("*** Begin Patch\n*** Update File: a.txt\n@@\n-line {i}\n+LINE {i}\n*** End Patch\n");
                ToolCall::new(format!("call_{i}"), "apply_patch", json!({"patch": patch}).to_string())
            } else {
                edit_line(i, "a.txt")
            }
        })
        .collect();
    let batch = ws.registry().call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(errors(&batch), Vec::<String>::new());
    let expected: String = (0..10).map(|i| format!("LINE {i}\n")).collect();
    assert_eq!(std::fs::read_to_string(ws.root.join("a.txt")).unwrap(), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_parallel_appends_to_the_plan_all_apply() {
    let ws = Workspace::new();
    let calls: Vec<ToolCall> = (0..10)
        .map(|i| {
            let arguments = json!({"todos": [{"content": format!("step {i}"), "status": "pending"}]});
            ToolCall::new(format!("call_{i}"), "todo_append", arguments.to_string())
        })
        .collect();
    let ctx = ToolContext::builder().session_id("plan-session").build();
    let batch = ws.registry().call_batch(&calls, &ctx).await;
    assert_eq!(errors(&batch), Vec::<String>::new());
    let plan = ws.call_in(&ctx, "todo_read", json!({})).await.text().into_owned();
    let steps: Vec<usize> = (0..10).filter(|i| plan.contains(&format!("step {i}"))).collect();
    assert_eq!(steps, (0..10).collect::<Vec<_>>(), "{plan}");
}

/// The keys the resolver gives a `kind` and `value` in a context whose sandbox is rooted at `root`.
async fn keys(root: &std::path::Path, kind: &str, value: Option<Value>) -> Option<Vec<String>> {
    let ctx =
        ToolContext::builder().override_dependency(&SANDBOX, Sandbox::new(root).unwrap()).session_id("s1").build();
    match WorkspaceResources.resolve(kind, value.as_ref(), &ctx) {
        Some(resolving) => Some(resolving.await),
        None => None,
    }
}

#[tokio::test]
async fn a_path_is_its_real_path_in_the_sandbox_however_it_is_spelled() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.root.join("sub")).unwrap();
    let real = format!("path:{}", ws.root.join("notes.txt").display());
    for spelling in ["notes.txt", "./notes.txt", "sub/../notes.txt", "sub/.././/notes.txt"] {
        assert_eq!(keys(&ws.root, "path", Some(json!(spelling))).await, Some(vec![real.clone()]), "{spelling}");
    }
}

#[tokio::test]
async fn a_path_through_a_symlink_is_the_file_it_points_to() {
    let ws = Workspace::new();
    ws.write("real.txt", "x");
    std::os::unix::fs::symlink(ws.root.join("real.txt"), ws.root.join("alias.txt")).unwrap();
    let real = format!("path:{}", ws.root.join("real.txt").display());
    assert_eq!(keys(&ws.root, "path", Some(json!("alias.txt"))).await, Some(vec![real]));
}

#[tokio::test]
async fn a_path_the_sandbox_refuses_keeps_its_text() {
    let ws = Workspace::new();
    assert_eq!(
        keys(&ws.root, "path", Some(json!("../../etc/passwd"))).await,
        Some(vec!["path:../../etc/passwd".to_owned()])
    );
}

#[tokio::test]
async fn a_patch_is_every_path_it_adds_deletes_updates_or_moves_to() {
    let ws = Workspace::new();
    let patch = "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** Delete File: old.txt\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y\n*** End Patch\n";
    let in_root = |name: &str| format!("path:{}", ws.root.join(name).display());
    assert_eq!(
        keys(&ws.root, "patch", Some(json!(patch))).await,
        Some(vec![in_root("new.txt"), in_root("old.txt"), in_root("a.txt"), in_root("b.txt")])
    );
}

#[tokio::test]
async fn the_plan_is_the_sessions_and_other_kinds_are_left_to_the_default() {
    let ws = Workspace::new();
    assert_eq!(keys(&ws.root, "todo_plan", None).await, Some(vec!["todo_plan:s1".to_owned()]));
    assert_eq!(keys(&ws.root, "id", Some(json!("x"))).await, None);
}

#[tokio::test]
async fn a_patch_naming_more_files_than_a_call_may_lock_is_refused_before_it_writes() {
    let ws = Workspace::new();
    let sections: String = (0..1025).map(|i| format!("*** Add File: f{i}.txt\n+x\n")).collect();
    let patch = format!("*** Begin Patch\n{sections}*** End Patch\n");
    let message = ws.call("apply_patch", json!({"patch": patch})).await;
    assert!(message.is_error);
    assert_eq!(
        message.text(),
        "tool `apply_patch` did not run: its arguments name 1025 resources, more than the 1024 one call may hold; split the change into smaller calls"
    );
    assert!(!ws.root.join("f0.txt").exists());
}
