//! The server over an in-memory stdio connection, seen message by message by a raw JSON-RPC
//! client: progress, cancellation, concurrency, the context hook, the listing filter and the
//! drain of a shutdown.

use crate::common;

use std::sync::OnceLock;
use std::time::Duration;

use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tool_mcp::McpServer;
use tool_runtime::{Registry, ToolContext, tool};

use common::{RawClient, label};

type Client = RawClient<ReadHalf<DuplexStream>, WriteHalf<DuplexStream>>;

/// Serves `server` on an in-memory connection and returns an initialized client of it.
async fn connect(server: McpServer) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move { server.serve(server_io).await.unwrap().waiting().await });
    let (reader, writer) = tokio::io::split(client_io);
    RawClient::initialize(reader, writer).await
}

/// Report 1, 1, 3, 2 then 5 of 5 steps.
#[tool]
fn uneven(ctx: &ToolContext) -> String {
    for done in [1, 1, 3, 2] {
        ctx.progress(done, None, "steps");
    }
    ctx.progress(5, Some(5), "steps");
    "done".to_owned()
}

/// Say hello.
#[tool]
fn hello() -> String {
    "hello".to_owned()
}

fn server_of(registry: Registry) -> McpServer {
    McpServer::builder(registry).build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_that_does_not_increase_is_dropped_and_the_rest_arrives_before_the_response() {
    let mut client = connect(server_of(Registry::builder().tool(uneven::TOOL).build().unwrap())).await;
    client.call(2, "uneven", json!({}), true).await;
    let mut received = Vec::new();
    while received.last().is_none_or(|m: &Value| m.get("id").is_none()) {
        received.push(client.recv().await);
    }
    let progress: Vec<Value> = received[..received.len() - 1].iter().map(|m| m["params"].clone()).collect();
    assert_eq!(
        progress,
        [
            json!({"progressToken": "p2", "progress": 1.0, "message": "steps"}),
            json!({"progressToken": "p2", "progress": 3.0, "message": "steps"}),
            json!({"progressToken": "p2", "progress": 5.0, "total": 5.0, "message": "steps"}),
        ]
    );
    assert_eq!(received.last().unwrap()["result"]["content"], json!([{"type": "text", "text": "done"}]));
}

static OPEN_STARTED: Notify = Notify::const_new();
static OPEN: Notify = Notify::const_new();

/// Wait until the test opens the gate.
#[tool]
async fn gate() -> String {
    OPEN_STARTED.notify_one();
    OPEN.notified().await;
    "opened".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_and_tools_list_are_answered_while_a_call_runs() {
    let mut client = connect(server_of(Registry::builder().tool(gate::TOOL).tool(hello::TOOL).build().unwrap())).await;
    client.call(2, "gate", json!({}), false).await;
    OPEN_STARTED.notified().await;
    client.ping(3).await;
    client.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})).await;
    client.call(5, "hello", json!({}), false).await;
    let mut answered: Vec<String> = Vec::new();
    for _ in 0..3 {
        answered.push(label(&client.recv().await));
    }
    answered.sort();
    assert_eq!(answered, ["response 3", "response 4", "response 5"]);
    OPEN.notify_one();
    let response = client.recv().await;
    assert_eq!(label(&response), "response 2");
    assert_eq!(response["result"]["content"], json!([{"type": "text", "text": "opened"}]));
}

static CANCELLED_TOKEN: OnceLock<CancellationToken> = OnceLock::new();

/// Report one step, then wait until the call is cancelled, then report more.
#[tool]
async fn until_cancelled(ctx: &ToolContext) -> String {
    ctx.progress(1, None, "started");
    CANCELLED_TOKEN.set(ctx.cancellation().clone()).expect("called once");
    ctx.cancellation().cancelled().await;
    ctx.progress(2, None, "after the cancel");
    "cancelled".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_stops_gets_no_response_and_sends_no_more_progress() {
    let registry = Registry::builder().tool(until_cancelled::TOOL).build().unwrap();
    let mut client = connect(server_of(registry)).await;
    client.call(2, "until_cancelled", json!({}), true).await;
    assert_eq!(client.recv().await["params"]["message"], "started");
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "stop"}}))
        .await;
    // Bounded: a token never cancelled fails here instead of hanging the suite.
    let token = loop {
        if let Some(token) = CANCELLED_TOKEN.get() {
            break token;
        }
        tokio::task::yield_now().await;
    };
    tokio::time::timeout(Duration::from_secs(60), token.cancelled()).await.expect("the call's token was not cancelled");
    client.ping(3).await;
    client.ping(4).await;
    // The next two messages are the pings' answers (in either order): nothing for the call.
    let mut next = [label(&client.recv().await), label(&client.recv().await)];
    next.sort();
    assert_eq!(next, ["response 3", "response 4"]);
}

/// Who the call is for, and in which session.
#[tool]
fn whoami(ctx: &ToolContext) -> String {
    format!("{} in {}", ctx.principal().unwrap_or("nobody"), ctx.session_id().unwrap_or("no session"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_hook_gives_the_call_its_principal_and_session() {
    let server = McpServer::builder(Registry::builder().tool(whoami::TOOL).build().unwrap())
        .context(|request, ctx| {
            let who = if request.http.is_none() { "the local user" } else { "a remote user" };
            Ok(ctx.principal(who).session_id(format!("session of {}", request.tool)))
        })
        .build();
    let mut client = connect(server).await;
    client.call(2, "whoami", json!({}), false).await;
    assert_eq!(
        client.recv().await["result"]["content"],
        json!([{"type": "text", "text": "the local user in session of whoami"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_context_hook_refuses_is_an_invalid_request_error() {
    let server = McpServer::builder(Registry::builder().tool(whoami::TOOL).build().unwrap())
        .context(|_, _| Err("no credentials: send `Authorization: Bearer <key>`".to_owned()))
        .build();
    let mut client = connect(server).await;
    client.call(2, "whoami", json!({}), false).await;
    assert_eq!(
        client.recv().await,
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32600, "message": "no credentials: send `Authorization: Bearer <key>`"}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_hook_that_panics_refuses_the_call_and_the_server_keeps_serving() {
    let server = McpServer::builder(Registry::builder().tool(whoami::TOOL).build().unwrap())
        .context(|_, _| panic!("no key store"))
        .build();
    let mut client = connect(server).await;
    client.call(2, "whoami", json!({}), false).await;
    assert_eq!(
        client.recv().await["error"],
        json!({"code": -32600, "message": "the server could not prepare the call: its context hook panicked: no key store"})
    );
    client.ping(3).await;
    assert_eq!(label(&client.recv().await), "response 3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_filter_hides_tools_from_the_list_and_from_the_unknown_tool_answer() {
    let registry = Registry::builder().tool(hello::TOOL).tool(whoami::TOOL).build().unwrap();
    let server = McpServer::builder(registry).list_filter(|definition| definition.name != "whoami").build();
    let mut client = connect(server).await;
    client.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    let listed = client.recv().await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["hello"]);
    client.call(3, "nope", json!({}), false).await;
    assert_eq!(
        client.recv().await["error"],
        json!({"code": -32602, "message": "unknown tool `nope`; available tools: hello"})
    );
}

static HOLD_STARTED: Notify = Notify::const_new();
static RELEASE: Notify = Notify::const_new();

/// Hold until the test releases it.
#[tool]
async fn hold() -> String {
    HOLD_STARTED.notify_one();
    RELEASE.notified().await;
    "released".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_refuses_new_calls_and_lets_running_ones_finish_within_the_grace_period() {
    let registry = Registry::builder().tool(hold::TOOL).tool(hello::TOOL).build().unwrap();
    let server = McpServer::builder(registry).grace_period(Duration::from_secs(3600)).build();
    let mut client = connect(server.clone()).await;
    client.call(2, "hold", json!({}), false).await;
    HOLD_STARTED.notified().await;
    let mut drain = std::pin::pin!(server.drain());
    assert!(futures::poll!(&mut drain).is_pending());
    client.call(3, "hello", json!({}), false).await;
    assert_eq!(
        client.recv().await["error"],
        json!({"code": -32603, "message": "the server is shutting down and takes no new calls; send the call again to a running server"})
    );
    RELEASE.notify_one();
    assert_eq!(client.recv().await["result"]["content"], json!([{"type": "text", "text": "released"}]));
    drain.await;
}

/// Wait for ever (until cancelled).
#[tool]
async fn forever() -> String {
    std::future::pending::<()>().await;
    unreachable!()
}

// Paused clock: the idle runtime jumps to the end of the grace period instead of waiting for it.
#[tokio::test(start_paused = true)]
async fn a_drain_cancels_the_calls_still_running_when_the_grace_period_ends() {
    let server = McpServer::builder(Registry::builder().tool(forever::TOOL).build().unwrap())
        .grace_period(Duration::from_secs(10))
        .build();
    let mut client = connect(server.clone()).await;
    client.call(2, "forever", json!({}), false).await;
    client.ping(3).await;
    assert_eq!(label(&client.recv().await), "response 3");
    server.drain().await;
    let response = client.recv().await;
    assert_eq!(label(&response), "response 2");
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(response["result"]["content"], json!([{"type": "text", "text": "tool `forever` was cancelled"}]));
}

/// Say goodbye.
#[tool(defer)]
fn goodbye() -> String {
    "goodbye".to_owned()
}

#[tokio::test]
async fn a_registry_with_deferred_tools_lists_the_loaded_ones_and_the_meta_tools_and_answers_them() {
    let registry = Registry::builder().tool(hello::TOOL).tool(goodbye::TOOL).build().unwrap();
    let server = server_of(registry);
    let tools = server.tools();
    let listed: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(listed, ["hello", "search_tools", "call_tool"]);
    let mut client = connect(server).await;
    client.call(2, "search_tools", json!({"query": "goodbye"}), false).await;
    let found: Value =
        serde_json::from_str(client.recv().await["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(found["tools"][0]["name"], "goodbye");
    client.call(3, "call_tool", json!({"name": "goodbye"}), false).await;
    assert_eq!(client.recv().await["result"]["content"][0]["text"], "goodbye");
    client.call(4, "goodbye", json!({}), false).await;
    assert_eq!(client.recv().await["result"]["content"][0]["text"], "goodbye");
}

/// Say goodbye loudly.
#[tool(defer)]
fn goodbye_loudly() -> String {
    "GOODBYE".to_owned()
}

#[tokio::test]
async fn search_tools_does_not_find_a_deferred_tool_the_listing_filter_hides() {
    let registry =
        Registry::builder().tool(hello::TOOL).tool(goodbye::TOOL).tool(goodbye_loudly::TOOL).build().unwrap();
    let server = McpServer::builder(registry).list_filter(|d| d.name != "goodbye_loudly").build();
    let mut client = connect(server).await;
    client.call(2, "search_tools", json!({"query": "goodbye loudly"}), false).await;
    let found: Value =
        serde_json::from_str(client.recv().await["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    let names: Vec<&str> = found["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["goodbye"]);
}
