//! `toolbox --allow exec`: the shell tools turned on, a secret of toolbox's environment kept from
//! the command, and a call cancelled over MCP stopping the command's process group.

use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

#[path = "../../tool-std/tests/support/procs.rs"]
mod procs;

use procs::{gone, pid_in, running};

/// Runs `toolbox ARGS` with its state in `state` and the variable `TOOL_TEST_SECRET` set; its
/// standard output as JSON.
fn toolbox(args: &[&str], state: &Path) -> Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(args)
        .args(["--state-dir", state.to_str().unwrap()])
        .env("TOOL_TEST_SECRET", "hunter2")
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stderr)))
}

fn names(definitions: &Value) -> Vec<&str> {
    definitions.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect()
}

#[test]
fn the_exec_set_is_listed_only_with_allow_exec() {
    let state = tempfile::tempdir().unwrap();
    assert_eq!(names(&toolbox(&["list", "--set", "exec"], state.path())), Vec::<&str>::new());
    assert_eq!(
        names(&toolbox(&["list", "--set", "exec", "--allow", "exec"], state.path())),
        ["bash", "bash_kill", "bash_output"]
    );
}

/// The MCP annotations of the exec tools as `toolbox list --format mcp` gives them.
fn annotations(allow: &str, state: &Path) -> Vec<(String, Value)> {
    let entries = toolbox(&["list", "--format", "mcp", "--set", "exec", "--allow", allow], state);
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_owned(), e["annotations"].clone()))
        .collect()
}

#[test]
fn the_exec_tools_are_open_world_for_mcp_only_when_the_network_is_allowed() {
    let state = tempfile::tempdir().unwrap();
    let closed = annotations("exec", state.path());
    assert_eq!(
        closed,
        [
            ("bash".to_owned(), json!({"destructiveHint": true, "openWorldHint": false})),
            ("bash_kill".to_owned(), json!({"destructiveHint": true, "openWorldHint": false})),
            ("bash_output".to_owned(), json!({"readOnlyHint": true, "openWorldHint": false})),
        ]
    );
    let open = annotations("exec,external", state.path());
    assert_eq!(
        open,
        [
            ("bash".to_owned(), json!({"destructiveHint": true, "openWorldHint": true})),
            ("bash_kill".to_owned(), json!({"destructiveHint": true, "openWorldHint": true})),
            ("bash_output".to_owned(), json!({"readOnlyHint": true, "openWorldHint": true})),
        ]
    );
}

#[test]
fn a_call_to_bash_without_allow_exec_says_how_to_turn_it_on() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let message =
        toolbox(&["call", "bash", r#"{"command":"true"}"#, "--root", root.path().to_str().unwrap()], state.path());
    assert_eq!(message["is_error"], true);
    assert_eq!(
        message["content"],
        "Permission denied: tool `bash` is tagged `exec` (it runs commands on this machine) and is off; run toolbox \
         with `--allow exec` to turn it on"
    );
}

#[test]
fn a_secret_in_the_environment_of_toolbox_does_not_reach_the_command() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = root.path().to_str().unwrap();
    let command =
        json!({"command": "echo \"secret=${TOOL_TEST_SECRET:-unset}\"; env | cut -d= -f1 | sort | tr '\\n' ' '"});
    let message = toolbox(&["call", "bash", &command.to_string(), "--allow", "exec", "--root", root], state.path());
    assert_eq!(message["is_error"], false, "{message}");
    let text = message["content"].as_str().unwrap();
    assert_eq!(text.splitn(3, '\n').nth(2).unwrap(), "secret=unset\nHOME LANG PATH PWD SHLVL _ ");
}

/// `toolbox call bash` connecting to a listener on 127.0.0.1 with `--allow ALLOW`: the command's
/// output and whether the listener got the connection.
fn connect_with(allow: &str) -> (String, bool) {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = json!({ "command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected") });
    let root = root.path().to_str().unwrap();
    let message = toolbox(&["call", "bash", &command.to_string(), "--allow", allow, "--root", root], state.path());
    let text = message["content"].as_str().unwrap().to_owned();
    (text.splitn(3, '\n').nth(2).unwrap_or_default().to_owned(), listener.accept().is_ok())
}

#[test]
fn commands_open_tcp_connections_only_with_allow_exec_and_external() {
    let (output, accepted) = connect_with("exec");
    assert!(!accepted);
    assert!(output.contains("Permission denied"), "{output}");
    assert_eq!(connect_with("exec,external"), ("connected\n".to_owned(), true));
}

#[tokio::test]
async fn cancelling_a_bash_call_over_mcp_stops_its_process_group() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--set", "exec", "--allow", "exec", "--root", root.path().to_str().unwrap()])
        .args(["--state-dir", state.path().to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (server.stdout.take().unwrap(), server.stdin.take().unwrap());
    let client = ().serve(transport).await.unwrap();
    let command = "echo $$ > shell.pid; sleep 60 & echo $! > child.pid; wait";
    let arguments = json!({ "command": command }).as_object().unwrap().clone();
    let request =
        ClientRequest::CallToolRequest(Request::new(CallToolRequestParams::new("bash").with_arguments(arguments)));
    let handle = client.peer().send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
    let shell = pid_in(&root.path().join("shell.pid")).await;
    let child = pid_in(&root.path().join("child.pid")).await;
    assert!(running(shell) && running(child));
    handle.cancel(Some("the user pressed stop".to_owned())).await.unwrap();
    assert!(gone(&[shell, child]).await, "{shell} or {child} survived");
    // The server goes on serving.
    let arguments = json!({"command": "echo still here"}).as_object().unwrap().clone();
    let result = client.call_tool(CallToolRequestParams::new("bash").with_arguments(arguments)).await.unwrap();
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned();
    assert!(text.ends_with("\nstill here\n"), "{text}");
    client.cancel().await.unwrap();
    assert!(server.wait().await.unwrap().success());
}
