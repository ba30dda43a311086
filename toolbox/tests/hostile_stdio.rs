//! `toolbox mcp` on standard input and output under a hostile client: raw bytes written to the
//! real process, each bad frame answered with the JSON-RPC 2.0 error the specification names, and
//! a `ping` after it still answered.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout, Command};

/// How long a reply may take before the test fails (the server answers in milliseconds).
const REPLY: Duration = Duration::from_secs(20);

struct Raw {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_ping: u64,
}

impl Raw {
    async fn write(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(REPLY, self.lines.next_line())
            .await
            .expect("no reply within the bound: the server stays silent")
            .unwrap()
            .expect("the server closed the stream");
        serde_json::from_str(&line).unwrap()
    }

    /// Writes `frame` and a newline, returns the reply, then checks that a `ping` is answered.
    async fn exchange(&mut self, frame: &[u8]) -> Value {
        self.write(frame).await;
        self.write(b"\n").await;
        let reply = self.recv().await;
        self.next_ping += 1;
        let id = 1000 + self.next_ping;
        self.write(format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).as_bytes()).await;
        assert_eq!(self.recv().await, json!({"jsonrpc": "2.0", "id": id, "result": {}}));
        reply
    }
}

async fn start(root: &std::path::Path, state: &std::path::Path) -> (tokio::process::Child, Raw) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--set", "fs", "--root", root.to_str().unwrap(), "--state-dir", state.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut raw = Raw {
        stdin: child.stdin.take().unwrap(),
        lines: BufReader::new(child.stdout.take().unwrap()).lines(),
        next_ping: 0,
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    raw.write(format!("{initialize}\n").as_bytes()).await;
    assert_eq!(raw.recv().await["id"], 1);
    raw.write(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n").await;
    (child, raw)
}

fn error_of(reply: &Value) -> (Value, i64) {
    (reply["id"].clone(), reply["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {reply}")))
}

#[tokio::test]
async fn every_malformed_frame_gets_its_json_rpc_error_and_the_stream_goes_on() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut child, mut raw) = start(root.path(), state.path()).await;

    let parse_errors: [&[u8]; 5] = [
        br#"{"jsonrpc":"2.0","id":2,"method":"#,
        br#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"\ud800"}}"#,
        br#"{"jsonrpc":"2.0","id":4,"method":"ping","params":{"n":1e400}}"#,
        br#"{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}"#,
        b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"\xff\"}",
    ];
    for frame in parse_errors {
        let reply = raw.exchange(frame).await;
        assert_eq!(error_of(&reply), (Value::Null, -32700), "{reply}");
    }
    let duplicate = raw.exchange(br#"{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}"#).await;
    assert_eq!(
        duplicate["error"]["message"],
        "the member `id` is sent twice in the JSON-RPC message; send each member once"
    );

    for frame in [&b"42"[..], b"[]", br#"{"jsonrpc":"2.0"}"#] {
        let reply = raw.exchange(frame).await;
        assert_eq!(error_of(&reply), (Value::Null, -32600), "{reply}");
    }

    // Over the 16 MiB frame cap: refused, and the stream goes on.
    let mut huge = br#"{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":""#.to_vec();
    huge.resize(17 * 1024 * 1024, b'a');
    huge.extend_from_slice(br#""}}"#);
    let reply = raw.exchange(&huge).await;
    assert_eq!(error_of(&reply), (Value::Null, -32700), "{reply}");
    assert_eq!(reply["error"]["message"], "the message is over the limit of 16777216 bytes; send a smaller one");

    child.kill().await.unwrap();
}

#[tokio::test]
async fn invalid_tools_call_params_get_invalid_params_naming_the_member() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut child, mut raw) = start(root.path(), state.path()).await;
    let cases: [(&[u8], &str); 4] = [
        (
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":"{}"}}"#,
            "`params.arguments` must be an object of the tool's arguments (or left out), not a string",
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","name":"glob","arguments":{}}}"#,
            "`params.name` is sent twice; send each member once",
        ),
        (
            br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}"#,
            "`params.name` is missing; give the name of the tool to call",
        ),
        (
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":7}}"#,
            "`params.name` must be a string (the name of the tool to call), not a number",
        ),
    ];
    for (id, (frame, message)) in (2..).zip(cases) {
        let reply = raw.exchange(frame).await;
        assert_eq!(reply, json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": message}}));
    }
    child.kill().await.unwrap();
}

#[tokio::test]
async fn a_key_sent_twice_in_the_arguments_is_refused_as_toolbox_call_refuses_it() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let arguments = r#"{"file_path":"a.txt","file_path":"b.txt"}"#;
    let output = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["call", "read", arguments, "--root", root.path().to_str().unwrap()])
        .args(["--state-dir", state.path().to_str().unwrap()])
        .output()
        .await
        .unwrap();
    let message: Value = serde_json::from_slice(&output.stdout).unwrap();
    let refusal = "invalid arguments for `read`: `file_path`: the field is sent twice; send each field once";
    assert_eq!(message["content"], refusal);

    let (mut child, mut raw) = start(root.path(), state.path()).await;
    let frame = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"read","arguments":{arguments}}}}}"#
    );
    let reply = raw.exchange(frame.as_bytes()).await;
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(reply["result"]["content"], json!([{"type": "text", "text": refusal}]));
    child.kill().await.unwrap();
}

/// Runs `toolbox mcp --set fs` on standard input and output, writes `frames` (one a line), reads
/// `replies` answers, closes standard input and waits for the end (each step at most [`REPLY`]):
/// the answers, the exit status and standard error, each line without its time (from the level
/// on).
async fn served(frames: &[Value], replies: usize) -> (Vec<Value>, std::process::ExitStatus, Vec<String>) {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--set", "fs", "--root", root.path().to_str().unwrap()])
        .args(["--state-dir", state.path().to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for frame in frames {
        stdin.write_all(format!("{frame}\n").as_bytes()).await.unwrap();
    }
    stdin.flush().await.unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answers = Vec::new();
    for _ in 0..replies {
        let line = tokio::time::timeout(REPLY, lines.next_line()).await.expect("no reply within the bound").unwrap();
        answers.push(serde_json::from_str(&line.expect("the server closed the stream")).unwrap());
    }
    drop(stdin);
    let output = tokio::time::timeout(REPLY, child.wait_with_output()).await.expect("toolbox did not end").unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    let stderr =
        stderr.lines().map(|line| line.split_once("Z ").map_or(line, |(_, rest)| rest).trim_start().to_owned());
    (answers, output.status, stderr.collect())
}

fn initialize() -> [Value; 2] {
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

#[tokio::test]
async fn an_error_answered_to_a_client_is_logged_with_its_code_but_not_what_the_client_sent() {
    let [init, initialized] = initialize();
    let frames = [
        init,
        initialized,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hunter2-tool", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "hunter2-method/x", "params": {"a": "hunter2-custom"}}),
    ];
    let (answers, status, mut stderr) = served(&frames, 3).await;
    // The client is told what it sent (its own text comes back to it) ...
    assert!(answers.iter().any(|a| a["error"]["message"].as_str().is_some_and(|m| m.contains("hunter2-tool"))));
    assert!(status.success());
    // ... and standard error keeps the fact of each refusal, not the client's text.
    stderr.sort();
    assert_eq!(
        stderr,
        [
            "WARN rmcp::service: response error id=2 error.code=-32602",
            "WARN rmcp::service: response error id=3 error.code=-32601"
        ]
    );
}

#[tokio::test]
async fn a_request_id_with_a_newline_cannot_forge_a_line_on_standard_error() {
    let [init, initialized] = initialize();
    let id = format!("7\n2026-12-06T20:00:00.000000Z ERROR toolbox: forged{}", "x".repeat(200));
    let frames = [
        init,
        initialized,
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "no-such-tool", "arguments": {}}}),
    ];
    let (answers, status, stderr) = served(&frames, 2).await;
    assert_eq!(answers[1]["id"], json!(id));
    assert!(status.success());
    // One line, the id escaped and cut to 128 bytes (the 51 before the x's, then 77 x's).
    let kept = format!(r"7\n2026-12-06T20:00:00.000000Z ERROR toolbox: forged{}", "x".repeat(77));
    assert_eq!(stderr, [format!("WARN rmcp::service: response error id={kept} error.code=-32602")]);
}

#[tokio::test]
async fn a_notification_before_initialize_is_refused_without_its_content_on_standard_error() {
    let early = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
        "progressToken": "t", "progress": 1, "message": "hunter2-early"}});
    let (_, status, stderr) = served(&[early], 0).await;
    assert_eq!(status.code(), Some(1));
    assert_eq!(
        stderr,
        ["toolbox: the MCP client did not initialize the session: its first message was a notification, not an \
          `initialize` request; send `initialize` first"]
    );
}
