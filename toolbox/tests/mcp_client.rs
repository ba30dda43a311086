//! `toolbox mcp` driven by the official Python MCP SDK (`mcp` on PyPI, pinned in
//! `conformance/requirements.txt`) as a client, over stdio and over Streamable HTTP on a free
//! loopback port: `mcp_client.py` beside this file makes the calls; this side starts and stops
//! the HTTP server and reads the server's log for grep's own record of the files it searched.
//!
//! The interpreter is `$TOOL_CONFORMANCE_PYTHON` (set by `scripts/test.sh` to the python of
//! `target/conformance-venv`), else `python3`. A missing `mcp` package fails the test with a
//! message saying how to install it; it never passes silently.

use std::path::Path;
use std::process::Command;

use std::sync::mpsc;
use test_support::process::{Output, Running, TOOLBOX_SERVING, start_saying};
use test_support::python;

/// The files of the tree the long grep walks (as `mcp_client.py` makes it).
const BIG_TREE_FILES: u64 = 20_000;

/// Runs `mcp_client.py` with `args`; returns its standard output and standard error.
fn run_client(args: &[&str]) -> (String, String) {
    python::run_outputs(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py"), args)
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

/// grep's own records of the files it searched (`tool_std::fs::grep` debug records), in log
/// order: `(searched, None)` at a progress point, `(searched, Some(cancelled))` at the end of a call.
fn grep_records(log: &str) -> Vec<(u64, Option<bool>)> {
    let field = |line: &str, name: &str| line.split_whitespace().find_map(|w| w.strip_prefix(name)).map(str::to_owned);
    log.lines()
        .filter(|line| line.contains(" tool_std::fs::grep: "))
        .filter_map(|line| {
            Some((field(line, "searched=")?.parse().ok()?, field(line, "cancelled=").map(|c| c == "true")))
        })
        .collect()
}

/// The cancelled grep stopped before the end of the tree, by the server's own count, and its
/// count stopped growing there (the next record is the next call's first); the other greps (one
/// with progress, two with a request sent while they ran) searched every file. The script's greps
/// run one at a time.
fn assert_the_cancelled_grep_stopped(log: &str) {
    let records = grep_records(log);
    let ends: Vec<usize> = records.iter().enumerate().filter(|(_, r)| r.1.is_some()).map(|(i, _)| i).collect();
    let cancelled: Vec<usize> = ends.iter().copied().filter(|&i| records[i].1 == Some(true)).collect();
    assert_eq!(cancelled.len(), 1, "grep records (searched, cancelled): {records:?}");
    let at = cancelled[0];
    let stopped_at = records[at].0;
    assert!(stopped_at < BIG_TREE_FILES, "the cancelled grep searched every file: {records:?}");
    let start = ends.iter().copied().filter(|&i| i < at).max().map_or(0, |i| i + 1);
    let counts: Vec<u64> = records[start..=at].iter().map(|r| r.0).collect();
    assert!(counts.windows(2).all(|w| w[0] < w[1] || (w[0] == w[1] && w[1] == stopped_at)), "{counts:?}");
    assert!(records.get(at + 1).is_none_or(|next| *next == (1, None)), "after the cancel: {:?}", &records[at..]);
    let finished: Vec<u64> = ends.iter().filter(|&&i| records[i].1 == Some(false)).map(|&i| records[i].0).collect();
    assert_eq!(finished, [BIG_TREE_FILES; 3], "grep records (searched, cancelled): {records:?}");
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

/// `toolbox mcp --http 127.0.0.1:0` with `args`; returns the process, its URL, and the receiver
/// of its later log lines.
fn start_http_server(args: &[&str]) -> (Running, String, mpsc::Receiver<String>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbox"));
    command.args(["mcp", "--http", "127.0.0.1:0"]).args(args);
    let started = start_saying(command, Output::Stderr, TOOLBOX_SERVING);
    (started.process, started.said, started.lines)
}

/// Sends SIGTERM, checks the exit code 0, and returns the rest of the log.
fn stop(mut process: Running, lines: mpsc::Receiver<String>) -> String {
    let status = Command::new("kill").args(["-TERM", &process.id().to_string()]).status().unwrap();
    assert!(status.success());
    assert_eq!(process.0.wait().unwrap().code(), Some(0));
    lines.iter().collect::<Vec<_>>().join("\n")
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
    assert_eq!(status_line(addr, "rebound.example", ""), "HTTP/1.1 403 Forbidden");
    assert_eq!(status_line(addr, "tools.example", ""), "HTTP/1.1 200 OK");
    assert_eq!(status_line(addr, "localhost", ""), "HTTP/1.1 200 OK");
    stop(child, log);
}

/// The status line of the response to a `tools/list` POSTed to `addr` with `Host: host` and the
/// `extra` header lines (each ending in `\r\n`).
fn status_line(addr: &str, host: &str, extra: &str) -> String {
    use std::io::{Read, Write};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.lines().next().unwrap_or_default().to_owned()
}

#[test]
fn the_http_flags_set_the_origin_allow_list_the_idle_timeout_and_the_connection_cap() {
    use std::io::Read;
    let root = tempfile::tempdir().unwrap();
    let state_dir = tempfile::tempdir().unwrap();
    let (child, url, log) = start_http_server(&[
        "--allow-origin",
        "https://app.example",
        "--idle-timeout-ms",
        "300",
        "--max-connections",
        "2",
        "--root",
        root.path().to_str().unwrap(),
        "--state-dir",
        state_dir.path().to_str().unwrap(),
    ]);
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut idle: Vec<std::net::TcpStream> = (0..2).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
    // Over the cap of 2: served once the idle connections are closed (300 ms).
    assert_eq!(status_line(addr, "127.0.0.1", "Origin: https://app.example\r\n"), "HTTP/1.1 200 OK");
    for stream in &mut idle {
        stream.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
        assert_eq!(stream.read(&mut [0u8; 64]).unwrap_or(0), 0, "an idle connection was not closed");
    }
    assert_eq!(status_line(addr, "127.0.0.1", "Origin: http://evil.example\r\n"), "HTTP/1.1 403 Forbidden");
    assert_eq!(status_line(addr, "127.0.0.1", "Origin: http://localhost:5173\r\n"), "HTTP/1.1 200 OK");
    stop(child, log);
}

#[test]
fn an_allow_origin_that_is_not_an_origin_is_a_usage_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--http", "127.0.0.1:0", "--allow-origin", "app.example"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "`app.example` is not an origin; give `http://HOST[:PORT]` or `https://HOST[:PORT]` (`:*` for any port, \
             no path), or `null`"
        ),
        "{stderr}"
    );
}

/// The checks `mcp_client.py toolbox-search ...` prints, in order, when all pass.
const SEARCH_CHECKS: [&str; 6] = [
    "ok list_tools gives the loaded tools and the two meta-tools, no deferred tool",
    "ok search_tools returns the definitions of deferred tools, read among them",
    "ok search_tools in regex mode, and a pattern over 200 characters refused",
    "ok call_tool runs the deferred read",
    "ok call_tool applies read's strict decoding",
    "ok the deferred read is callable by its own name",
];

#[test]
fn the_python_mcp_sdk_reaches_deferred_tools_through_the_meta_tools_over_stdio() {
    let workspace = tempfile::tempdir().unwrap();
    let state_dir = tempfile::tempdir().unwrap();
    let (stdout, stderr) = run_client(&[
        "toolbox-search",
        "stdio",
        env!("CARGO_BIN_EXE_toolbox"),
        workspace.path().to_str().unwrap(),
        state_dir.path().to_str().unwrap(),
    ]);
    assert_eq!(checks(&stdout), SEARCH_CHECKS, "stderr:\n{stderr}");
}

#[test]
fn the_python_mcp_sdk_reaches_deferred_tools_through_the_meta_tools_over_streamable_http() {
    let workspace = tempfile::tempdir().unwrap();
    let state_dir = tempfile::tempdir().unwrap();
    let root = workspace.path().to_str().unwrap();
    let (child, url, log) = start_http_server(&[
        "--defer",
        "fs",
        "--set",
        "fs,todo",
        "--root",
        root,
        "--state-dir",
        state_dir.path().to_str().unwrap(),
    ]);
    let (stdout, stderr) = run_client(&["toolbox-search", "http", &url, root]);
    stop(child, log);
    assert_eq!(checks(&stdout), SEARCH_CHECKS, "stderr:\n{stderr}");
}
