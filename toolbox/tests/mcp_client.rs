//! `toolbox mcp` driven by the official Python MCP SDK (`mcp` on PyPI, pinned in
//! `conformance/requirements.txt`) as a client, over stdio and over Streamable HTTP on a free
//! loopback port: `mcp_client.py` beside this file makes the calls; this side starts and stops
//! the HTTP server and reads the server's log for grep's own record of the files it searched.
//!
//! The interpreter is `$TOOL_CONFORMANCE_PYTHON` (set by `scripts/test.sh` to the python of
//! `target/conformance-venv`), else `python3`. A missing `mcp` package fails the test with a
//! message saying how to install it; it never passes silently.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

/// The files of the tree the long grep walks (as `mcp_client.py` makes it).
const BIG_TREE_FILES: u64 = 20_000;

/// Runs `mcp_client.py` with `args`; returns its standard output and standard error.
fn run_client(args: &[&str]) -> (String, String) {
    let python = std::env::var("TOOL_CONFORMANCE_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let output = Command::new(&python).arg(&script).args(args).output().unwrap_or_else(|e| {
        panic!("cannot run `{python}` ({e}); run scripts/test.sh, or set TOOL_CONFORMANCE_PYTHON to a python with `mcp` installed")
    });
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if output.status.code() == Some(3) {
        panic!("{stderr}");
    }
    assert!(output.status.success(), "mcp_client.py failed ({}).\nstdout:\n{stdout}\nstderr:\n{stderr}", output.status);
    (stdout, stderr)
}

/// The checks `mcp_client.py toolbox ...` prints, in order, when all pass.
const TOOLBOX_CHECKS: [&str; 14] = [
    "ok initialize",
    "ok list_tools",
    "ok call read",
    "ok call with an unknown field",
    "ok call outside the workspace",
    "ok grep reports strictly increasing progress before its result",
    "ok write has an output schema and its result validates as structured content",
    "ok call a missing tool",
    "ok call view_image",
    "ok todo_new then todo_read in one session",
    "ok tools/list during a long grep is answered before the grep ends",
    "ok grep cancelled mid-way",
    "ok ping during a long grep is answered before the grep ends",
    "ok 50 concurrent calls from 5 clients each get their own result and call id",
];

fn checks(stdout: &str) -> Vec<&str> {
    stdout.lines().map(|l| l.split(" (").next().unwrap_or(l)).collect()
}

/// grep's records of the files it searched (`tool_std::fs::grep` debug records): `(searched,
/// cancelled)` for each grep call, in log order.
fn grep_records(log: &str) -> Vec<(u64, bool)> {
    let field = |line: &str, name: &str| {
        line.split_whitespace().find_map(|w| w.strip_prefix(name)).map(|v| v.trim_matches('"').to_owned())
    };
    log.lines()
        .filter(|line| line.contains("tool_std::fs::grep"))
        .filter_map(|line| {
            let searched = field(line, "searched=")?.parse().ok()?;
            Some((searched, field(line, "cancelled=")? == "true"))
        })
        .collect()
}

/// The cancelled grep stopped before the end of the tree, by the server's own count; the other
/// greps (one with progress, two with a request sent while they ran) searched every file.
fn assert_the_cancelled_grep_stopped(log: &str) {
    let records = grep_records(log);
    let cancelled: Vec<u64> = records.iter().filter(|(_, cancelled)| *cancelled).map(|(n, _)| *n).collect();
    assert_eq!(cancelled.len(), 1, "grep records (searched, cancelled): {records:?}");
    assert!(cancelled[0] < BIG_TREE_FILES, "the cancelled grep searched all {} files: {records:?}", cancelled[0]);
    let finished: Vec<u64> = records.iter().filter(|(_, cancelled)| !*cancelled).map(|(n, _)| *n).collect();
    assert_eq!(finished, [BIG_TREE_FILES; 4], "grep records (searched, cancelled): {records:?}");
}

#[test]
fn the_python_mcp_sdk_drives_toolbox_over_stdio() {
    let workspace = tempfile::tempdir().unwrap();
    let state_dir = tempfile::tempdir().unwrap();
    let (stdout, stderr) = run_client(&[
        "toolbox",
        "stdio",
        env!("CARGO_BIN_EXE_toolbox"),
        workspace.path().to_str().unwrap(),
        state_dir.path().to_str().unwrap(),
    ]);
    assert_eq!(checks(&stdout), TOOLBOX_CHECKS, "stderr:\n{stderr}");
    // The servers run with `-v` and log to the client's standard error.
    assert_the_cancelled_grep_stopped(&stderr);
}

/// `toolbox mcp --http 127.0.0.1:0` with `args`; returns the child, its URL, and the receiver of
/// its log lines (read on a thread until the process ends).
fn start_http_server(args: &[&str]) -> (Child, String, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--http", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, received) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let url = received
        .iter()
        .find_map(|line| line.strip_prefix("toolbox: serving MCP on ").map(str::to_owned))
        .expect("the server ended without saying its address");
    (child, url, received)
}

/// Sends SIGTERM, checks the exit code 0, and returns the rest of the log.
fn stop(mut child: Child, log: mpsc::Receiver<String>) -> String {
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    log.iter().collect::<Vec<_>>().join("\n")
}

#[test]
fn the_python_mcp_sdk_drives_toolbox_over_streamable_http() {
    let workspace = tempfile::tempdir().unwrap();
    let state_dir = tempfile::tempdir().unwrap();
    let root = workspace.path().to_str().unwrap();
    let (child, url, log) =
        start_http_server(&["-v", "--root", root, "--state-dir", state_dir.path().to_str().unwrap()]);
    let (stdout, stderr) = run_client(&["toolbox", "http", &url, root]);
    let log = stop(child, log);
    assert_eq!(checks(&stdout), TOOLBOX_CHECKS, "stderr:\n{stderr}");
    assert_the_cancelled_grep_stopped(&log);
}

#[test]
fn the_http_server_refuses_a_host_outside_the_allow_list_unless_allowed_host_names_it() {
    let root = tempfile::tempdir().unwrap();
    let state_dir = tempfile::tempdir().unwrap();
    let (child, url, log) = start_http_server(&[
        "--allowed-host",
        "tools.example",
        "--root",
        root.path().to_str().unwrap(),
        "--state-dir",
        state_dir.path().to_str().unwrap(),
    ]);
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let status_for = |host: &str| {
        use std::io::{Read, Write};
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream\r\nContent-Type: \
             application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response.lines().next().unwrap_or_default().to_owned()
    };
    assert_eq!(status_for("rebound.example"), "HTTP/1.1 403 Forbidden");
    assert_eq!(status_for("tools.example"), "HTTP/1.1 200 OK");
    assert_eq!(status_for("localhost"), "HTTP/1.1 200 OK");
    stop(child, log);
}
