//! `toolbox mcp` options, seen by an rmcp client over the child's standard input and output.

use std::path::Path;
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, ProgressNotificationParam, ProgressToken};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;

/// Starts `toolbox mcp` with `args` and lists its tools, calls `call` with no arguments, and
/// returns the tool names and the call's result as JSON.
async fn list_and_call(args: &[&str], call: &str) -> (Vec<String>, serde_json::Value) {
    let state_home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .arg("mcp")
        .args(args)
        .env("XDG_STATE_HOME", state_home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = ().serve(transport).await.unwrap();
    let names = client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.into_owned()).collect();
    let result = client.call_tool(CallToolRequestParams::new(call.to_owned())).await.unwrap();
    client.cancel().await.unwrap();
    assert!(child.wait().await.unwrap().success());
    let mut result = serde_json::to_value(result).unwrap();
    // The ref id differs between server processes: check its shape, then compare the rest.
    let ref_id = result["_meta"]["ref_id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(ref_id.len(), 22, "{ref_id}");
    result.as_object_mut().unwrap().remove("_meta");
    (names, result)
}

#[tokio::test]
async fn set_limits_the_served_tools() {
    let root = tempfile::tempdir().unwrap();
    let (names, result) = list_and_call(&["--set", "todo", "--root", root.path().to_str().unwrap()], "todo_read").await;
    assert_eq!(names, ["todo_append", "todo_clear", "todo_new", "todo_patch", "todo_read"]);
    assert_eq!(
        result,
        json!({
            "content": [{"type": "text", "text": "No todos yet. Use todo_new to write a plan."}],
            "isError": false
        })
    );
}

#[tokio::test]
async fn a_call_without_arguments_to_a_tool_that_needs_them_is_an_error_result() {
    let root = tempfile::tempdir().unwrap();
    let (_, result) = list_and_call(&["--set", "fs", "--root", root.path().to_str().unwrap()], "read").await;
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"][0]["text"], "invalid arguments for `read`: missing field `file_path`");
}

/// An MCP client that keeps every `notifications/progress` it receives.
#[derive(Clone, Default)]
struct ProgressRecorder {
    received: std::sync::Arc<std::sync::Mutex<Vec<ProgressNotificationParam>>>,
    finished: std::sync::Arc<tokio::sync::Notify>,
}

impl ClientHandler for ProgressRecorder {
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let last = params.total.is_some();
        self.received.lock().unwrap().push(params);
        if last {
            self.finished.notify_one();
        }
    }
}

/// A workspace of `n` files, each holding one line `needle N`.
fn tree_of(n: usize) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for i in 0..n {
        std::fs::write(root.path().join(format!("f{i:03}.txt")), format!("needle {i}\n")).unwrap();
    }
    root
}

/// `toolbox mcp --set fs` on `root`, served to a [`ProgressRecorder`].
async fn serve_fs(
    root: &Path,
    state: &Path,
) -> (RunningService<RoleClient, ProgressRecorder>, ProgressRecorder, tokio::process::Child) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--set", "fs", "--root", root.to_str().unwrap(), "--state-dir", state.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let recorder = ProgressRecorder::default();
    let client = recorder.clone().serve(transport).await.unwrap();
    (client, recorder, child)
}

#[tokio::test]
async fn a_grep_call_with_a_progress_token_gets_files_searched_notifications_before_its_result() {
    let root = tree_of(40);
    let state = tempfile::tempdir().unwrap();
    let (client, recorder, mut child) = serve_fs(root.path(), state.path()).await;
    // The rmcp client gives every request a progress token of its own.
    let arguments = json!({"pattern": "needle", "limit": 1}).as_object().unwrap().clone();
    let result = client.call_tool(CallToolRequestParams::new("grep").with_arguments(arguments)).await.unwrap();
    assert_eq!(result.is_error, Some(false));
    recorder.finished.notified().await;
    let received: Vec<Value> = recorder
        .received
        .lock()
        .unwrap()
        .iter()
        .map(|p| {
            let mut value = serde_json::to_value(p).unwrap();
            value.as_object_mut().unwrap().remove("progressToken");
            value
        })
        .collect();
    assert_eq!(
        received,
        [
            json!({"progress": 1.0, "message": "1 file searched"}),
            json!({"progress": 32.0, "message": "32 files searched"}),
            json!({"progress": 40.0, "total": 40.0, "message": "40 files searched"}),
        ]
    );
    let tokens: Vec<ProgressToken> =
        recorder.received.lock().unwrap().iter().map(|p| p.progress_token.clone()).collect();
    assert!(tokens.iter().all(|t| *t == tokens[0]), "{tokens:?}");
    client.cancel().await.unwrap();
    assert!(child.wait().await.unwrap().success());
}

/// Sends `tools/call` of grep on `root` as raw JSON-RPC lines (the rmcp client always adds a
/// progress token; this request has the `_meta` given, or none), and returns every message the
/// server sent after initialization, up to and including the call's response.
async fn raw_grep_call(root: &Path, meta: Option<Value>) -> Vec<Value> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let state = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--set", "fs", "--root", root.to_str().unwrap(), "--state-dir", state.path().to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    stdin.write_all(format!("{initialize}\n").as_bytes()).await.unwrap();
    let response: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(response["id"], 1, "{response}");
    let mut params = json!({"name": "grep", "arguments": {"pattern": "needle", "limit": 1}});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params});
    stdin.write_all(format!("{initialized}\n{call}\n").as_bytes()).await.unwrap();
    let mut received = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        let message: Value = serde_json::from_str(&line).unwrap();
        let done = message["id"] == 2;
        received.push(message);
        if done {
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().await.unwrap().success());
    received
}

fn methods(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m.get("method").map_or_else(|| format!("response {}", m["id"]), ToString::to_string))
        .collect()
}

#[tokio::test]
async fn a_call_without_a_progress_token_gets_no_progress_notifications() {
    let root = tree_of(40);
    let received = raw_grep_call(root.path(), None).await;
    assert_eq!(methods(&received), ["response 2"]);
    assert_eq!(received[0]["result"]["isError"], false);
}

#[tokio::test]
async fn a_raw_call_with_a_progress_token_gets_the_notifications_with_that_token_before_the_response() {
    let root = tree_of(40);
    let received = raw_grep_call(root.path(), Some(json!({"progressToken": "grep-1"}))).await;
    assert_eq!(
        methods(&received),
        ["\"notifications/progress\"", "\"notifications/progress\"", "\"notifications/progress\"", "response 2"]
    );
    assert_eq!(
        received[2]["params"],
        json!({"progressToken": "grep-1", "progress": 40.0, "total": 40.0, "message": "40 files searched"})
    );
}
