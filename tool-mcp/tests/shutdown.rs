//! SIGTERM to a real server process, over standard input and output and over Streamable HTTP:
//! no new call is admitted, a running call gets the grace period, then is cancelled; the process
//! exits 0.
//!
//! The server process is this test binary run again with only [`shutdown_child_server`]
//! selected and `TOOL_MCP_SHUTDOWN_CHILD` saying the transport; its tool `hold` runs until the
//! test writes a byte to the loopback connection the tool opens, so the test knows exactly when
//! the call runs and decides when it ends.

#![cfg(unix)]

mod common;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, ChildStderr, Command};
use tool_mcp::McpServer;
use tool_runtime::{Registry, tool};

use common::{RawClient, label, post};

const CHILD: &str = "TOOL_MCP_SHUTDOWN_CHILD";
const GRACE_MS: &str = "TOOL_MCP_SHUTDOWN_GRACE_MS";
/// A bound on every wait of these tests, so that a broken server fails them instead of hanging.
const BOUND: Duration = Duration::from_secs(60);

/// Hold until a byte arrives on a connection to the loopback port.
#[tool]
async fn hold(
    /// The loopback port to connect to.
    port: u16,
) -> Result<String, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.map_err(|e| e.to_string())?;
    let mut byte = [0u8; 1];
    stream.read_exact(&mut byte).await.map_err(|e| e.to_string())?;
    Ok("released".to_owned())
}

/// Say hello.
#[tool]
fn hello() -> String {
    "hello".to_owned()
}

/// The server process of the tests below (they run it; alone it serves nothing).
#[test]
#[ignore = "the server process of the SIGTERM tests, which run it"]
fn shutdown_child_server() {
    let Ok(transport) = std::env::var(CHILD) else {
        return;
    };
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).with_max_level(tracing::Level::INFO).init();
    let grace = Duration::from_millis(std::env::var(GRACE_MS).unwrap().parse().unwrap());
    let registry = Registry::builder().tool(hold::TOOL).tool(hello::TOOL).build().unwrap();
    let server = McpServer::builder(registry).grace_period(grace).build();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime
        .block_on(async {
            if transport == "http" {
                // Logs `serving MCP on http://ADDR/mcp` once it listens for signals.
                server.serve_http("127.0.0.1:0").await
            } else {
                server.serve_stdio().await
            }
        })
        .unwrap();
    runtime.shutdown_background();
}

/// Starts the server process on `transport` with a grace period of `grace_ms`.
fn start_child(transport: &str, grace_ms: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "shutdown_child_server", "--ignored", "--quiet"])
        .env(CHILD, transport)
        .env(GRACE_MS, grace_ms.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

fn sigterm(child: &Child) {
    let status = std::process::Command::new("kill").args(["-TERM", &child.id().unwrap().to_string()]).status().unwrap();
    assert!(status.success());
}

/// Reads the child's log lines until one contains `text`; returns that line.
async fn wait_for_log(stderr: &mut tokio::io::Lines<BufReader<ChildStderr>>, text: &str) -> String {
    tokio::time::timeout(BOUND, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains(text) {
                return line;
            }
        }
        panic!("the server's log ended without `{text}`")
    })
    .await
    .unwrap()
}

/// The stdio client of the child: libtest writes `running 1 test` on the same standard output
/// before the protocol starts.
async fn stdio_client(
    child: &mut Child,
) -> RawClient<BufReader<tokio::process::ChildStdout>, tokio::process::ChildStdin> {
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("running 1 test") {
        line.clear();
        assert_ne!(stdout.read_line(&mut line).await.unwrap(), 0, "the server process ended before serving");
    }
    RawClient::initialize(stdout, child.stdin.take().unwrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_refuses_new_calls_lets_a_running_one_finish_within_the_grace_period_and_exits_0() {
    let release = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut child = start_child("stdio", 3_600_000);
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut client = stdio_client(&mut child).await;
    client.call(2, "hold", json!({"port": release.local_addr().unwrap().port()}), false).await;
    let (mut held, _) = tokio::time::timeout(BOUND, release.accept()).await.unwrap().unwrap();
    sigterm(&child);
    wait_for_log(&mut stderr, "shutting down: no new calls admitted").await;
    client.call(3, "hello", json!({}), false).await;
    let refused = client.recv().await;
    assert_eq!((label(&refused), refused["error"]["code"].as_i64()), ("error 3".to_owned(), Some(-32603)));
    held.write_all(b"x").await.unwrap();
    let response = client.recv().await;
    assert_eq!(label(&response), "response 2");
    assert_eq!(response["result"]["content"], json!([{"type": "text", "text": "released"}]));
    let status = tokio::time::timeout(BOUND, child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_cancels_a_call_still_running_when_the_grace_period_ends_and_exits_0() {
    let release = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut child = start_child("stdio", 0);
    let mut client = stdio_client(&mut child).await;
    client.call(2, "hold", json!({"port": release.local_addr().unwrap().port()}), false).await;
    let _held = tokio::time::timeout(BOUND, release.accept()).await.unwrap().unwrap();
    sigterm(&child);
    let response = client.recv().await;
    assert_eq!(label(&response), "response 2");
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(response["result"]["content"], json!([{"type": "text", "text": "tool `hold` was cancelled"}]));
    let status = tokio::time::timeout(BOUND, child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_over_http_lets_a_running_call_finish_within_the_grace_period_and_exits_0() {
    let release = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut child = start_child("http", 3_600_000);
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = wait_for_log(&mut stderr, "serving MCP on http://").await;
    let addr = line.split("http://").nth(1).unwrap().trim_end_matches("/mcp").parse().unwrap();
    let port = release.local_addr().unwrap().port();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hold", "arguments": {"port": port}}});
    let calling = tokio::spawn(async move { post(addr, "/mcp", "127.0.0.1", &[], &call).await });
    let (mut held, _) = tokio::time::timeout(BOUND, release.accept()).await.unwrap().unwrap();
    sigterm(&child);
    wait_for_log(&mut stderr, "shutting down: no new calls admitted").await;
    held.write_all(b"x").await.unwrap();
    let response = tokio::time::timeout(BOUND, calling).await.unwrap().unwrap();
    let message: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(message["result"]["content"], json!([{"type": "text", "text": "released"}]));
    let status = tokio::time::timeout(BOUND, child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(0));
}
