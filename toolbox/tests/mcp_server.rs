//! `toolbox mcp` options, seen by an rmcp client over the child's standard input and output.

use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
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
    let output_ref = result["_meta"]["output_ref"].as_str().unwrap_or_default().to_owned();
    assert!(output_ref.starts_with("mcp_") && output_ref.len() == "mcp_01234567_2".len(), "{output_ref}");
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
