//! The notes server of [`catalog`](crate::catalog) driven by the official Python MCP SDK over
//! stateless Streamable HTTP on a free loopback port (protocol 2026-07-28), with the checks of
//! `catalog_client.py`, and a listen stream following a resource. The interpreter is
//! `$TOOL_CONFORMANCE_PYTHON` (set by `scripts/test.sh`), else `python3`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::common::Running;

const CHECKS: [&str; 6] = [
    "ok list resources and templates, with caching hints",
    "ok read a text resource, a blob resource and a template's resource",
    "ok an unknown resource and a refused template value are -32602 with the uri",
    "ok list prompts and get one",
    "ok a missing required argument is -32602 naming it",
    "ok complete a prompt argument, and an unknown template variable is -32602",
];

/// `catalog_client.py URL [args]` started on the interpreter, its output piped.
fn spawn_client(url: &str, args: &[&str]) -> tokio::process::Child {
    let python = std::env::var("TOOL_CONFORMANCE_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/catalog_client.py");
    tokio::process::Command::new(&python)
        .arg(script)
        .arg(url)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `{python}` ({e}); run scripts/test.sh, or set TOOL_CONFORMANCE_PYTHON to a python with \
                 `mcp` installed"
            )
        })
}

/// The rest of the client's standard output once it exited; panics with its output unless it
/// exited 0.
async fn finished(child: tokio::process::Child) -> String {
    let output = child.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(3), "{stderr}");
    assert!(
        output.status.success(),
        "catalog_client.py failed ({}).\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_mcp_sdk_lists_reads_gets_and_completes_over_streamable_http() {
    let running = Running::start(crate::catalog::notes_server()).await;
    let stdout = finished(spawn_client(&format!("http://{}/mcp", running.addr), &[])).await;
    assert_eq!(stdout.lines().collect::<Vec<_>>(), CHECKS);
    running.stop().await;
}

/// Runs `catalog_client.py URL mode` against `server`: once the client prints `ready`, announces
/// updates of `notes://index` and `notes://note/1` until it prints its next line (at most 200
/// rounds: a listen stream is acknowledged before the server follows it), and returns that line.
async fn updated_line(server: tool_mcp::McpServer, mode: &str, ready: &str) -> Option<String> {
    let running = Running::start(server.clone()).await;
    let mut child = spawn_client(&format!("http://{}/mcp", running.addr), &[mode]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some(ready));
    let mut line = None;
    for _ in 0..200 {
        server.notify_resource_updated("notes://index");
        server.notify_resource_updated("notes://note/1");
        if let Ok(next) = tokio::time::timeout(Duration::from_millis(50), lines.next_line()).await {
            line = next.unwrap();
            break;
        }
    }
    assert_eq!(finished(child).await, "");
    running.stop().await;
    line
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_stream_following_a_resource_gets_its_updates_and_no_others() {
    // `notes://index` is not followed, so it never reaches the client.
    assert_eq!(
        updated_line(crate::catalog::notes_server(), "listen", "listening").await.as_deref(),
        Some("ok a listen stream follows a template's resource and gets only its updates")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_subscribes_with_resources_subscribe_and_gets_the_updates() {
    let server = crate::catalog::notes_builder().legacy_session_mode(true).build();
    assert_eq!(
        updated_line(server, "legacy", "subscribed").await.as_deref(),
        Some("ok a legacy session subscribes to a template's resource and gets its updates")
    );
}
