//! The approval previews of the file tools (`Tool::preview`): `write`, `edit` and `apply_patch`
//! show the unified diff of what they would change, the paths first, computed through the
//! workspace's sandbox without writing; a call the sandbox refuses gets the sandbox's error.

use crate::common;

use common::Workspace;
use serde_json::{Value, json};
use tool_runtime::{ApprovalRequest, ToolCall, ToolContext, ToolMessage};
use tool_std::fs::FsLimits;

/// The message of a call of `tool` on a workspace whose destructive tools need approval.
async fn asked(ws: &Workspace, tool: &str, arguments: &Value) -> ToolMessage {
    ws.registry().call(&ToolCall::new("c1", tool, arguments.to_string()), &ToolContext::new()).await
}

/// The host's approval request of a refused call.
async fn request(ws: &Workspace, tool: &str, arguments: &Value) -> ApprovalRequest {
    let message = asked(ws, tool, arguments).await;
    assert!(message.is_error, "{}", message.text());
    let text = message.text().into_owned();
    *message.approval.unwrap_or_else(|| panic!("an approval request: {text}"))
}

fn read(ws: &Workspace, path: &str) -> String {
    std::fs::read_to_string(ws.root.join(path)).unwrap()
}

#[tokio::test]
async fn the_preview_of_write_is_the_diff_of_the_file_to_the_new_content() {
    let ws = Workspace::with_approvals(FsLimits::default());
    ws.write("a.txt", "keep\nold\n");
    let arguments = json!({"file_path": "a.txt", "content": "keep\nnew\n"});
    let request = request(&ws, "write", &arguments).await;
    assert_eq!(request.preview, "write `a.txt`\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new");
    assert_eq!(read(&ws, "a.txt"), "keep\nold\n");
}

#[tokio::test]
async fn the_model_reads_the_same_diff_as_the_preview_without_the_token() {
    let ws = Workspace::with_approvals(FsLimits::default());
    ws.write("a.txt", "keep\nold\n");
    let message = asked(&ws, "write", &json!({"file_path": "a.txt", "content": "keep\nnew\n"})).await;
    assert_eq!(
        message.text(),
        "tool `write` did not run: it needs the user's approval. What it would do:\nwrite `a.txt`\n--- a/a.txt\n+++ \
         b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\nThe approval is the user's to give, through the application, \
         within 300 s; it is not in this result. Do not send the call again on your own: once the user approves, the \
         application runs this exact call"
    );
}

#[tokio::test]
async fn the_preview_of_write_to_a_new_file_says_so_and_creates_nothing() {
    let ws = Workspace::with_approvals(FsLimits::default());
    let request = request(&ws, "write", &json!({"file_path": "new/b.txt", "content": "x\ny\n"})).await;
    assert_eq!(
        request.preview,
        "write `new/b.txt` (new file)\n--- a/new/b.txt\n+++ b/new/b.txt\n@@ -0,0 +1,2 @@\n+x\n+y"
    );
    assert!(!ws.root.join("new").exists());
}

#[tokio::test]
async fn the_preview_of_edit_is_the_diff_of_the_replacement() {
    let ws = Workspace::with_approvals(FsLimits::default());
    ws.write("a.txt", "one\ntwo\nthree\n");
    let arguments = json!({"file_path": "a.txt", "old_string": "two", "new_string": "2"});
    let request = request(&ws, "edit", &arguments).await;
    assert_eq!(request.preview, "edit `a.txt`\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three");
    assert_eq!(read(&ws, "a.txt"), "one\ntwo\nthree\n");
}

#[tokio::test]
async fn the_preview_of_apply_patch_names_every_file_then_gives_the_diff() {
    let ws = Workspace::with_approvals(FsLimits::default());
    ws.write("a.txt", "one\ntwo\nthree\n");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n*** Add File: n.txt\n+new\n+line\n*** \
                 End Patch\n";
    let request = request(&ws, "apply_patch", &json!({ "patch": patch })).await;
    assert_eq!(
        request.preview,
        "apply_patch: M a.txt, A n.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n--- \
         /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+new\n+line"
    );
    assert_eq!(read(&ws, "a.txt"), "one\ntwo\nthree\n");
    assert!(!ws.root.join("n.txt").exists());
}

#[tokio::test]
async fn a_path_outside_the_workspace_gets_the_sandbox_error_not_a_diff() {
    let ws = Workspace::with_approvals(FsLimits::default());
    let plain = Workspace::new();
    let cases = [
        ("write", json!({"file_path": "../outside.txt", "content": "x\n"})),
        ("edit", json!({"file_path": "../outside.txt", "old_string": "", "new_string": "x\n"})),
        ("apply_patch", json!({"patch": "*** Begin Patch\n*** Add File: ../outside.txt\n+x\n*** End Patch\n"})),
    ];
    for (tool, arguments) in cases {
        let message = asked(&ws, tool, &arguments).await;
        // The error a call without approvals meets, word for word (on a workspace of its own,
        // whose path differs: the message names the path as given).
        let unapproved = plain.call(tool, arguments.clone()).await;
        assert!(message.is_error, "{tool}");
        assert_eq!(message.text(), unapproved.text(), "{tool}");
        assert!(message.text().contains("Path escapes workspace: ../outside.txt"), "{tool}: {}", message.text());
        assert!(message.approval.is_none(), "{tool}");
    }
    assert!(!ws.parent.join("outside.txt").exists());
}

#[tokio::test]
async fn control_and_bidirectional_characters_in_a_preview_are_written_out() {
    let ws = Workspace::with_approvals(FsLimits::default());
    let request = request(&ws, "write", &json!({"file_path": "c.txt", "content": "a\u{202E}b\u{7}\nc\n"})).await;
    assert_eq!(
        request.preview,
        "write `c.txt` (new file)\n--- a/c.txt\n+++ b/c.txt\n@@ -0,0 +1,2 @@\n+a⟦U+202E⟧b⟦U+0007⟧\n+c"
    );
}

#[tokio::test]
async fn a_long_preview_is_cut_with_the_cut_stated() {
    let ws = Workspace::with_approvals(FsLimits { diff_max_lines: 5, ..FsLimits::default() });
    let content: String = (1..=20).map(|n| format!("{n}\n")).collect();
    let request = request(&ws, "write", &json!({"file_path": "big.txt", "content": content})).await;
    assert_eq!(
        request.preview,
        "write `big.txt` (new file)\n--- a/big.txt\n+++ b/big.txt\n...[19 lines omitted]...\n+19\n+20"
    );
}

#[tokio::test]
async fn the_approved_call_writes_what_its_preview_showed() {
    let ws = Workspace::with_approvals(FsLimits::default());
    ws.write("a.txt", "keep\nold\n");
    let arguments = json!({"file_path": "a.txt", "content": "keep\nnew\n"});
    let token = request(&ws, "write", &arguments).await.token;
    let call = ToolCall::new("c2", "write", arguments.to_string()).with_approval_token(token);
    let message = ws.registry().call(&call, &ToolContext::new()).await;
    assert!(!message.is_error, "{}", message.text());
    assert_eq!(read(&ws, "a.txt"), "keep\nnew\n");
}
