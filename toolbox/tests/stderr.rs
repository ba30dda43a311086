//! Logging never holds up a request: `toolbox mcp --http` keeps answering when its standard
//! error is a pipe nobody reads (full after 64 KiB) or a pipe whose reader is gone (closed).
//! At `-vv` one `tools/list` logs about 40 KB (the listing, debug-printed), so a few requests
//! overflow the pipe. And nothing of the log reaches standard output, the MCP stream of `toolbox
//! mcp` on standard input and output, when its queue is still full at the end.

#[path = "task_rpc/mod.rs"]
mod task_rpc;

use std::io::{BufRead, BufReader};
use std::process::{ChildStderr, Command, Stdio};

use serde_json::json;
use task_rpc::request;
use test_support::process::{Running, TOOLBOX_SERVING};

/// How many `tools/list` requests each test sends: about 400 KB of logs at `-vv`.
const REQUESTS: u64 = 10;

/// Starts `toolbox mcp --http 127.0.0.1:0 -vv` on temporary directories, with its standard error
/// piped; reads it up to the line with the address and no further. Returns the process, the
/// unread rest of its standard error, its address and the directories (removed on drop).
fn serve_verbose() -> (Running, BufReader<ChildStderr>, String, [tempfile::TempDir; 2]) {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--http", "127.0.0.1:0", "-vv", "--root"])
        .arg(root.path())
        .arg("--state-dir")
        .arg(state.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let child = Running(child);
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "toolbox ended without saying its address");
        if let Some(url) = line.trim_end().strip_prefix(TOOLBOX_SERVING) {
            break url.to_owned();
        }
    };
    let addr = url.strip_prefix("http://").and_then(|u| u.strip_suffix("/mcp")).unwrap_or_else(|| panic!("{url}"));
    (child, stderr, addr.to_owned(), [root, state])
}

/// Sends [`REQUESTS`] `tools/list` requests (each waits at most 30 s for its answer) and checks
/// that each lists the standard tools.
fn list_tools_repeatedly(addr: &str) {
    for id in 0..REQUESTS {
        let listed = request(addr, id, "tools/list", "", json!({}));
        let first = &listed["result"]["tools"][0]["name"];
        assert_eq!(first, &json!("apply_patch"), "request {id}: {listed}");
    }
}

#[test]
fn a_server_whose_standard_error_nobody_reads_still_answers_every_request() {
    let (server, unread, addr, _dirs) = serve_verbose();
    list_tools_repeatedly(&addr);
    drop(server);
    drop(unread);
}

#[test]
fn a_server_whose_standard_error_is_closed_still_answers_every_request() {
    let (server, stderr, addr, _dirs) = serve_verbose();
    drop(stderr);
    list_tools_repeatedly(&addr);
    drop(server);
}

/// How many `tools/call` requests the stdio test sends: at `-vv` each logs two lines (1800 lines of
/// about 600 bytes), so the log outgrows the pipe (64 KiB) and the queue (1000 lines) while nobody
/// reads standard error.
const CALLS: usize = 900;

#[test]
fn a_full_standard_error_leaves_nothing_but_the_mcp_stream_on_standard_output() {
    use std::io::{Read, Write};
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "-vv", "--set", "fs", "--root"])
        .arg(root.path())
        .arg("--state-dir")
        .arg(state.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut stdin, mut stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    // Standard error stays open and unread until the end.
    let unread = child.stderr.take().unwrap();
    let child = Running(child);
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let mut frames = format!("{initialize}\n{}\n", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for id in 1..=CALLS {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "glob", "arguments": {"pattern": "*"}}});
        frames.push_str(&format!("{call}\n"));
    }
    // Written and closed on a thread (the server answers while it reads); then the server ends.
    std::thread::spawn(move || {
        let _ = stdin.write_all(frames.as_bytes());
    });
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        let _ = sender.send(text);
    });
    let text = receiver.recv_timeout(std::time::Duration::from_secs(120)).expect("the stream did not end within 120 s");
    drop((child, unread));

    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), CALLS + 1, "{}", lines.last().unwrap_or(&""));
    for line in lines {
        let message: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON-RPC message ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
}
