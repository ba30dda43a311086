//! Streamable HTTP on a real loopback server, with raw HTTP/1.1 requests: stateless, plain JSON
//! or server-sent events, the `Host` allow-list, and request headers reaching the context hook.

use crate::common;

use serde_json::{Value, json};
use tokio::net::TcpListener;
use tool_mcp::{McpServer, McpServerBuilder};
use tool_runtime::{Registry, ToolContext, tool};

use common::{Running, post};

/// Report two steps.
#[tool]
fn two_steps(ctx: &ToolContext) -> String {
    ctx.progress(1, Some(2), "first");
    ctx.progress(2, Some(2), "second");
    "stepped".to_owned()
}

/// Who the call is for.
#[tool]
fn whoami(ctx: &ToolContext) -> String {
    ctx.principal().unwrap_or("nobody").to_owned()
}

fn builder() -> McpServerBuilder {
    McpServer::builder(Registry::builder().tool(two_steps::TOOL).tool(whoami::TOOL).build().unwrap())
}

fn call(id: u64, name: &str, progress: bool) -> Value {
    let mut params = json!({"name": name, "arguments": {}});
    if progress {
        params["_meta"] = json!({"progressToken": "t1"});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_sends_no_notification_gets_a_plain_json_response() {
    let running = Running::start(builder().build()).await;
    let response = post(running.addr, "/mcp", "127.0.0.1", &[], &call(1, "whoami", false)).await;
    assert_eq!((response.status, response.header("content-type")), (200, Some("application/json")));
    let mut message: Value = serde_json::from_str(&response.body).unwrap();
    message["result"].as_object_mut().unwrap().remove("_meta");
    assert_eq!(
        message,
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "nobody"}], "isError": false}})
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_reports_progress_streams_events_with_the_response_last() {
    let running = Running::start(builder().build()).await;
    let response = post(running.addr, "/mcp", "127.0.0.1", &[], &call(1, "two_steps", true)).await;
    assert_eq!((response.status, response.header("content-type")), (200, Some("text/event-stream")));
    let events = response.events();
    let methods: Vec<&str> = events.iter().map(|e| e["method"].as_str().unwrap_or("response")).collect();
    assert_eq!(methods, ["notifications/progress", "notifications/progress", "response"]);
    assert_eq!(events[1]["params"], json!({"progressToken": "t1", "progress": 2.0, "total": 2.0, "message": "second"}));
    assert_eq!(events[2]["result"]["content"], json!([{"type": "text", "text": "stepped"}]));
    running.stop().await;
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_keeps_no_session() {
    let running = Running::start(builder().build()).await;
    let response = post(running.addr, "/mcp", "localhost", &[], &initialize()).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("mcp-session-id"), None);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_session_mode_gives_an_older_client_a_session() {
    let running = Running::start(builder().legacy_session_mode(true).build()).await;
    let response = post(running.addr, "/mcp", "localhost", &[], &initialize()).await;
    assert_eq!(response.status, 200);
    assert!(response.header("mcp-session-id").is_some_and(|id| !id.is_empty()), "{:?}", response.headers);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_outside_the_allow_list_is_forbidden_and_allow_host_widens_it() {
    let running = Running::start(builder().allow_host("tools.example").build()).await;
    let refused = post(running.addr, "/mcp", "attacker.example", &[], &call(1, "whoami", false)).await;
    assert_eq!((refused.status, refused.body.as_str()), (403, "Forbidden: Host header is not allowed"));
    let allowed = post(running.addr, "/mcp", "tools.example:8080", &[], &call(2, "whoami", false)).await;
    assert_eq!(allowed.status, 200);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_paths_are_not_found() {
    let running = Running::start(builder().build()).await;
    let response = post(running.addr, "/", "127.0.0.1", &[], &call(1, "whoami", false)).await;
    assert_eq!(response.status, 404);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_hook_reads_the_authorization_header() {
    let server = builder()
        .context(|request, ctx| {
            let header = request.http.and_then(|parts| parts.headers.get("authorization"));
            match header.and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")) {
                Some("key-of-ana") => Ok(ctx.principal("ana")),
                _ => Err("send `Authorization: Bearer <key>` with a known key".to_owned()),
            }
        })
        .build();
    let running = Running::start(server).await;
    let response =
        post(running.addr, "/mcp", "127.0.0.1", &[("Authorization", "Bearer key-of-ana")], &call(1, "whoami", false))
            .await;
    let message: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(message["result"]["content"], json!([{"type": "text", "text": "ana"}]));
    let refused = post(running.addr, "/mcp", "127.0.0.1", &[], &call(2, "whoami", false)).await;
    assert_eq!(
        serde_json::from_str::<Value>(&refused.body).unwrap()["error"],
        json!({"code": -32600, "message": "send `Authorization: Bearer <key>` with a known key"})
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_service_mounts_in_an_axum_router_at_any_path() {
    let app = axum::Router::new().route_service("/tools/mcp", builder().build().http_service());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move { axum::serve(listener, app).await });
    let response = post(addr, "/tools/mcp", "localhost", &[], &call(1, "whoami", false)).await;
    let message: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(message["result"]["content"], json!([{"type": "text", "text": "nobody"}]));
    serving.abort();
}
