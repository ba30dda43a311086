//! Tools that talk back, driven by the official Python MCP SDK (`talk_back_client.py`): an
//! elicitation accepted and one declined, a sampling, and an approval accepted and one declined,
//! against `examples/conformance_server.rs`, over stdio (the server's requests on the connection,
//! protocol of the initialize handshake) and over Streamable HTTP on a free loopback port
//! (protocol 2026-07-28: input-required results with a sealed request state, and the client's
//! retries).
//!
//! The example's binary is the one `cargo test -p examples` builds beside this test. The
//! interpreter is `$TOOL_CONFORMANCE_PYTHON` (set by `scripts/test.sh`), else `python3`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

mod common;

use common::{example_binary, run_python};

/// Runs `talk_back_client.py` with `args`; returns its standard output.
fn run_client(args: &[&str]) -> String {
    run_python("tests/talk_back_client.py", args)
}

const CHECKS: [&str; 5] = [
    "ok elicitation accepted",
    "ok elicitation declined",
    "ok sampling",
    "ok approval accepted",
    "ok approval declined",
];

#[test]
fn the_python_mcp_sdk_answers_elicitation_sampling_and_approval_over_stdio() {
    let stdout = run_client(&["stdio", example_binary("conformance_server").to_str().unwrap()]);
    assert_eq!(stdout.lines().collect::<Vec<_>>(), CHECKS);
}

#[test]
fn the_python_mcp_sdk_answers_elicitation_sampling_and_approval_over_streamable_http() {
    let mut child = Command::new(example_binary("conformance_server"))
        .arg("127.0.0.1:0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The first line is the bound URL.
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut url).unwrap();
    let url = url.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");
    let stdout = run_client(&["http", &url]);
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(stdout.lines().collect::<Vec<_>>(), CHECKS);
}
