//! Tools that talk back, driven by the official Python MCP SDK (`talk_back_client.py`) and the
//! official TypeScript MCP SDK (`talk_back_client.mjs`, protocol 2025-11-25: over stdio, and over
//! Streamable HTTP with a legacy session): an
//! elicitation accepted and one declined, a sampling, and an approval accepted and one declined,
//! against `examples/conformance_server.rs`, over stdio (the server's requests on the connection,
//! protocol of the initialize handshake) and over Streamable HTTP on a free loopback port
//! (protocol 2026-07-28: input-required results with a sealed request state, and the client's
//! retries).
//!
//! The example's binary is the one `cargo test -p examples` builds beside this test. The
//! interpreter is `$TOOL_CONFORMANCE_PYTHON` (set by `scripts/test.sh`), else `python3`.

use std::process::Command;

mod common;

use common::{example_binary, run_python, spawn_serving};

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
    let (mut child, url) = spawn_serving("conformance_server", &["127.0.0.1:0"]);
    let stdout = run_client(&["http", &url]);
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(stdout.lines().collect::<Vec<_>>(), CHECKS);
}

/// Runs `talk_back_client.mjs` on the TypeScript SDK that `scripts/test.sh` installs
/// (`TOOL_MCP_TS_SDK`, its `node_modules`) with `args`; returns its standard output.
fn run_ts_client(args: &[&str]) -> String {
    let modules = std::env::var("TOOL_MCP_TS_SDK").unwrap_or_else(|_| {
        panic!("TOOL_MCP_TS_SDK is not set: run scripts/test.sh, which installs the TypeScript MCP SDK and sets it")
    });
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/talk_back_client.mjs");
    let output = Command::new("node")
        .arg(&script)
        .arg(&modules)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `node` ({e}); install node (scripts/test.sh needs it too)"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "talk_back_client.mjs failed ({}).\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    stdout
}

#[test]
fn the_typescript_mcp_sdk_answers_elicitation_sampling_and_approval_over_stdio() {
    let stdout = run_ts_client(&["stdio", example_binary("conformance_server").to_str().unwrap()]);
    assert_eq!(stdout.lines().collect::<Vec<_>>(), CHECKS);
}

#[test]
fn the_typescript_mcp_sdk_answers_elicitation_sampling_and_approval_over_streamable_http_sessions() {
    // The SDK speaks protocol 2025-11-25: the server keeps a session for it, on which its
    // questions are server-to-client requests.
    let (mut child, url) = spawn_serving("conformance_server", &["127.0.0.1:0", "--legacy-sessions"]);
    let stdout = run_ts_client(&["http", &url]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(stdout.lines().collect::<Vec<_>>(), CHECKS);
}
