//! The import gateway treats an upstream MCP server as hostile: a small Streamable HTTP server on
//! a loopback port that answers `initialize` and then lists too many tools, lists pages that never
//! end, or never answers `tools/list` or a call; the import fails (or the call ends) with an error
//! naming the server and the limit, within a bound.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tool_mcp::import::{ImportError, ImportLimits, McpImport};
use tool_runtime::{Registry, ToolCall, ToolContext};

/// How the upstream answers `tools/list` and `tools/call`.
#[derive(Clone)]
enum Hostile {
    /// One tool `t0` declaring the output schema `{"n": integer}` required, whose calls answer
    /// with this `structuredContent` (`null`: none).
    Structured(Value),
    /// One page of this many tools.
    Many(usize),
    /// One tool whose input schema nests objects this deep.
    Deep(usize),
    /// Page after page of one tool, each with a next cursor.
    Endless,
    /// Never.
    Silent,
    /// One tool whose calls are never answered.
    SilentCall,
}

fn tool(i: usize) -> Value {
    json!({"name": format!("t{i}"), "description": "a tool", "inputSchema": {"type": "object"},
        "annotations": {"openWorldHint": false}})
}

/// Starts the upstream; its address, and how many `tools/list` requests it got.
async fn upstream(mode: Hostile) -> (SocketAddr, Arc<AtomicUsize>) {
    let listed = Arc::new(AtomicUsize::new(0));
    let counter = listed.clone();
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |body: String| {
            let (counter, mode) = (counter.clone(), mode.clone());
            async move {
                let message: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let id = message["id"].clone();
                let reply = |result: Value| {
                    (
                        [("content-type", "application/json")],
                        json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
                    )
                        .into_response()
                };
                match message["method"].as_str().unwrap_or("") {
                    "initialize" => reply(json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "hostile", "version": "0"}})),
                    "tools/list" => {
                        let page = counter.fetch_add(1, Ordering::SeqCst);
                        match &mode {
                            Hostile::Structured(_) => {
                                let mut listed = tool(0);
                                listed["outputSchema"] = json!({"type": "object",
                                    "properties": {"n": {"type": "integer"}}, "required": ["n"]});
                                reply(json!({"tools": [listed]}))
                            }
                            Hostile::Deep(depth) => {
                                let mut schema = json!({"type": "object"});
                                for _ in 0..*depth {
                                    schema = json!({"type": "object", "properties": {"a": schema}});
                                }
                                let mut listed = tool(0);
                                listed["inputSchema"] = schema;
                                reply(json!({"tools": [listed]}))
                            }
                            Hostile::Many(n) => reply(json!({"tools": (0..*n).map(tool).collect::<Vec<_>>()})),
                            Hostile::Endless => reply(json!({"tools": [tool(page)], "nextCursor": format!("c{page}")})),
                            Hostile::SilentCall => reply(json!({"tools": [tool(0)]})),
                            Hostile::Silent => std::future::pending().await,
                        }
                    }
                    "tools/call" => match &mode {
                        Hostile::Structured(value) => {
                            let mut result = json!({"content": [{"type": "text", "text": "n"}]});
                            if !value.is_null() {
                                result["structuredContent"] = value.clone();
                            }
                            reply(result)
                        }
                        _ => std::future::pending().await,
                    },
                    method if method.starts_with("notifications/") => StatusCode::ACCEPTED.into_response(),
                    _ => (
                        [("content-type", "application/json")],
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}})
                            .to_string(),
                    )
                        .into_response(),
                }
            }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, listed)
}

/// Connects an import of the upstream at `addr` with `limits`, within 20 s.
async fn connect(addr: SocketAddr, limits: ImportLimits) -> Result<tool_mcp::import::ImportedServer, ImportError> {
    let import = McpImport::http("hostile", format!("http://{addr}/mcp")).limits(limits);
    tokio::time::timeout(Duration::from_secs(20), import.connect()).await.expect("the import did not end")
}

fn list_error(result: Result<tool_mcp::import::ImportedServer, ImportError>) -> String {
    match result {
        Err(ImportError::List { server, message }) => format!("{server}: {message}"),
        Err(other) => panic!("not a listing error: {other}"),
        Ok(_) => panic!("the import was accepted"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_of_more_tools_than_the_cap_fails_naming_the_server_and_the_cap() {
    let (addr, _) = upstream(Hostile::Many(1_500)).await;
    assert_eq!(
        list_error(connect(addr, ImportLimits::default()).await),
        "hostile: it lists more than 1000 tools (the import's cap); import a server with fewer tools or raise \
         ImportLimits::max_tools"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_whose_pages_never_end_stops_at_the_page_cap() {
    let (addr, listed) = upstream(Hostile::Endless).await;
    let limits = ImportLimits { max_pages: 20, ..ImportLimits::default() };
    assert_eq!(
        list_error(connect(addr, limits).await),
        "hostile: its listing goes on past 20 pages (the import's cap); raise ImportLimits::max_pages"
    );
    assert_eq!(listed.load(Ordering::SeqCst), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_over_the_byte_cap_fails() {
    let (addr, _) = upstream(Hostile::Many(100)).await;
    let limits = ImportLimits { max_listing_bytes: 1_000, ..ImportLimits::default() };
    assert_eq!(
        list_error(connect(addr, limits).await),
        "hostile: its tools take more than 1000 bytes as JSON (the import's cap); raise ImportLimits::max_listing_bytes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_that_is_never_answered_fails_at_the_request_timeout() {
    let (addr, _) = upstream(Hostile::Silent).await;
    let limits = ImportLimits { request_timeout: Duration::from_millis(300), ..ImportLimits::default() };
    assert_eq!(
        list_error(connect(addr, limits).await),
        "hostile: a `tools/list` page was not answered within 300 ms (the import's request timeout)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_is_never_answered_ends_at_the_call_timeout() {
    let (addr, _) = upstream(Hostile::SilentCall).await;
    let limits = ImportLimits { call_timeout: Duration::from_millis(300), ..ImportLimits::default() };
    let imported = connect(addr, limits).await.unwrap();
    let registry = imported.add_to(Registry::builder()).unwrap().build().unwrap();
    let call = ToolCall::new("c1", "t0", "{}");
    let message =
        tokio::time::timeout(Duration::from_secs(20), registry.call(&call, &ToolContext::new())).await.unwrap();
    assert_eq!(
        (message.is_error, message.text().into_owned()),
        (
            true,
            "MCP server `hostile` did not answer the call of `t0` within 300 ms (the import's call timeout); try again \
             later or with less work"
                .to_owned()
        )
    );
    imported.close().await;
}

/// Calls `t0` of an upstream whose calls answer with `structured` (see [`Hostile::Structured`]).
async fn call_structured(structured: Value) -> tool_runtime::ToolMessage {
    let (addr, _) = upstream(Hostile::Structured(structured)).await;
    let imported = connect(addr, ImportLimits::default()).await.unwrap();
    let registry = imported.add_to(Registry::builder()).unwrap().build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "t0", "{}"), &ToolContext::new()).await;
    imported.close().await;
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_content_that_breaks_the_declared_output_schema_is_not_passed_on() {
    let message = call_structured(json!({"n": "seven"})).await;
    assert_eq!(
        (message.is_error, message.text().into_owned(), message.structured_content),
        (
            true,
            "MCP server `hostile` answered the call of `t0` with `structuredContent` that breaks its declared \
             `outputSchema` (at `/n`: \"seven\" is not of type \"integer\"); the result is not passed on"
                .to_owned(),
            None
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_without_the_structured_content_its_output_schema_requires_is_not_passed_on() {
    let message = call_structured(Value::Null).await;
    assert_eq!(
        (message.is_error, message.text().into_owned()),
        (
            true,
            "MCP server `hostile` answered the call of `t0` without `structuredContent`, which its declared \
             `outputSchema` requires; the result is not passed on"
                .to_owned()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_content_that_conforms_to_the_output_schema_is_passed_on() {
    let message = call_structured(json!({"n": 7})).await;
    assert_eq!((message.is_error, message.structured_content), (false, Some(json!({"n": 7}))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_nested_past_the_parsers_depth_fails_at_once_naming_the_server() {
    let (addr, _) = upstream(Hostile::Deep(70)).await;
    // The request timeout is far past the test's bound (20 s): only failing at once ends it.
    let limits = ImportLimits { request_timeout: Duration::from_secs(600), ..ImportLimits::default() };
    assert_eq!(
        list_error(connect(addr, limits).await),
        "hostile: it sent an answer nested deeper than the 128 levels the JSON parser reads, so it cannot be read"
    );
}
