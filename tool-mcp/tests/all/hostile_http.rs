//! Streamable HTTP under hostile clients, on a real loopback server with raw sockets: the `Origin`
//! allow-list, slow request heads and bodies, idle connections against the connection cap, and
//! malformed JSON-RPC messages.

use crate::common;

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tool_mcp::{McpServer, McpServerBuilder};
use tool_runtime::{Registry, tool};

use common::{Running, parse_response, post, post_raw};

/// Echo a text.
#[tool]
fn echo(
    /// The text.
    text: String,
) -> String {
    text
}

/// Sleep for `ms` milliseconds, then say so.
#[tool]
async fn nap(
    /// How long, in milliseconds.
    ms: u64,
) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("slept {ms} ms")
}

fn builder() -> McpServerBuilder {
    McpServer::builder(Registry::builder().tool(echo::TOOL).tool(nap::TOOL).build().unwrap())
}

/// The bound on every wait of these tests: far above the limits they configure (300 ms).
const BOUND: Duration = Duration::from_secs(10);

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

fn text_of(response: &common::Response) -> Value {
    let message: Value = serde_json::from_str(&response.body).unwrap();
    message["result"]["content"][0]["text"].clone()
}

/// Reads until the server closes the connection (end of stream, or a reset); panics if it stays
/// open for [`BOUND`]. Returns what was read.
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut read = Vec::new();
    let closed = tokio::time::timeout(BOUND, async {
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => read.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the server kept the connection open for {BOUND:?}");
    read
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_outside_the_allow_list_is_forbidden_with_a_json_rpc_error() {
    let running = Running::start(builder().allow_origin("https://app.example").build()).await;
    let request = call(1, "echo", json!({"text": "hi"}));
    for origin in ["http://evil.example", "null", "http://localhost.evil.example", "https://app.example:8443"] {
        let refused = post(running.addr, "/mcp", "127.0.0.1", &[("Origin", origin)], &request).await;
        assert_eq!((refused.status, refused.header("content-type")), (403, Some("application/json")), "{origin}");
        assert_eq!(
            serde_json::from_str::<Value>(&refused.body).unwrap(),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": format!(
                "origin `{origin}` is not allowed: only loopback pages and the origins of the allow-list may call this \
                 server (DNS rebinding protection); to serve pages of that origin, add it to the allow-list \
                 (`allow_origin`, `toolbox mcp --allow-origin {origin}`)"
            )}})
        );
    }
    for origin in [
        None,
        Some("http://localhost:5173"),
        Some("http://127.0.0.1"),
        Some("https://[::1]:8443"),
        Some("https://app.example"),
    ] {
        let headers: Vec<(&str, &str)> = origin.map(|o| ("Origin", o)).into_iter().collect();
        let served = post(running.addr, "/mcp", "127.0.0.1", &headers, &request).await;
        assert_eq!((served.status, text_of(&served)), (200, json!("hi")), "{origin:?}");
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_request_head_is_closed_after_the_header_read_timeout() {
    let server = builder().header_read_timeout(Duration::from_millis(300)).idle_timeout(Duration::from_secs(600));
    let running = Running::start(server.build()).await;
    let mut slow = TcpStream::connect(running.addr).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0").await.unwrap();
    assert_eq!(read_until_closed(&mut slow).await, b"");
    // The server still answers.
    let served = post(running.addr, "/mcp", "127.0.0.1", &[], &call(1, "echo", json!({"text": "still here"}))).await;
    assert_eq!(text_of(&served), json!("still here"));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_over_the_cap_are_closed_and_do_not_lock_out_a_new_client() {
    let server = builder().max_connections(4).idle_timeout(Duration::from_millis(300));
    let running = Running::start(server.build()).await;
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(running.addr).await.unwrap());
    }
    // The fifth waits in the backlog until an idle one is closed, then is served.
    let served = tokio::time::timeout(
        BOUND,
        post(running.addr, "/mcp", "127.0.0.1", &[], &call(1, "echo", json!({"text": "let in"}))),
    )
    .await
    .expect("a new client was locked out by idle connections");
    assert_eq!(text_of(&served), json!("let in"));
    for stream in &mut idle {
        assert_eq!(read_until_closed(stream).await, b"");
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_longer_than_the_idle_timeout_is_answered_on_its_connection() {
    let running = Running::start(builder().idle_timeout(Duration::from_millis(300)).build()).await;
    let served = post(running.addr, "/mcp", "127.0.0.1", &[], &call(1, "nap", json!({"ms": 900}))).await;
    assert_eq!((served.status, text_of(&served)), (200, json!("slept 900 ms")));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_arrive_in_time_gets_408_and_the_connection_is_closed() {
    let running = Running::start(builder().request_body_timeout(Duration::from_millis(300)).build()).await;
    let mut slow = TcpStream::connect(running.addr).await.unwrap();
    slow.write_all(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n\
          Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":",
    )
    .await
    .unwrap();
    let response = parse_response(&String::from_utf8(read_until_closed(&mut slow).await).unwrap());
    assert_eq!((response.status, response.header("connection")), (408, Some("close")));
    assert_eq!(
        serde_json::from_str::<Value>(&response.body).unwrap(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700,
            "message": "the request body did not arrive within 300 ms; send the whole body at once"}})
    );
    running.stop().await;
}

/// Writes a POST of `body` with its `Content-Length`, the body in `pieces` writes 50 ms apart
/// (so that the server reads it in several frames), and reads the response until the server
/// closes the connection (the request says `Connection: close`).
async fn post_in_pieces(running: &Running, body: &[u8], pieces: usize) -> common::Response {
    let mut stream = TcpStream::connect(running.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    for piece in body.chunks(body.len().div_ceil(pieces)) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stream.write_all(piece).await.unwrap();
    }
    parse_response(&String::from_utf8(read_until_closed(&mut stream).await).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_sent_in_pieces_is_read_whole_and_held_to_the_limit_over_all_its_pieces() {
    let running = Running::start(builder().max_frame_bytes(1024).build()).await;
    let text = "piece ".repeat(100);
    let whole = serde_json::to_vec(&call(1, "echo", json!({"text": text}))).unwrap();
    assert_eq!(whole.len(), 695);
    let answered = post_in_pieces(&running, &whole, 3).await;
    assert_eq!((answered.status, text_of(&answered)), (200, json!(text)));
    // Three pieces of about 400 bytes each: every one is under the limit, the whole is not.
    let over = serde_json::to_vec(&call(2, "echo", json!({"text": "a".repeat(1100)}))).unwrap();
    let refused = post_in_pieces(&running, &over, 3).await;
    assert_eq!(refused.status, 413);
    assert_eq!(
        serde_json::from_str::<Value>(&refused.body).unwrap(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700,
            "message": "the message is over the limit of 1024 bytes; send a smaller one"}})
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_get_their_json_rpc_errors() {
    let running = Running::start(builder().max_frame_bytes(1024).build()).await;
    let error_of = |response: &common::Response| {
        let message: Value = serde_json::from_str(&response.body).unwrap();
        (response.status, message["id"].clone(), message["error"]["code"].clone())
    };
    let send = |body: &'static [u8]| post_raw(running.addr, "/mcp", "127.0.0.1", &[], body);
    for body in [
        &br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\ud800"}}"#[..],
        br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":1e400}}"#,
        br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
        br#"{"jsonrpc":"2.0","#,
    ] {
        assert_eq!(error_of(&send(body).await), (400, Value::Null, json!(-32700)));
    }
    assert_eq!(error_of(&send(b"[]").await), (400, Value::Null, json!(-32600)));
    let arguments =
        send(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":"{}"}}"#).await;
    assert_eq!(
        serde_json::from_str::<Value>(&arguments.body).unwrap(),
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602,
            "message": "`params.arguments` must be an object of the tool's arguments (or left out), not a string"}})
    );
    let name = send(br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","name":"nap"}}"#).await;
    assert_eq!(error_of(&name), (400, json!(8), json!(-32602)));
    let big = post(running.addr, "/mcp", "127.0.0.1", &[], &call(9, "echo", json!({"text": "a".repeat(2000)}))).await;
    assert_eq!(error_of(&big), (413, Value::Null, json!(-32700)));

    let marked = send(b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"after a byte order mark\"}}}").await;
    assert_eq!((marked.status, text_of(&marked)), (200, json!("after a byte order mark")));

    let twice = send(br#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","text":"b"}}}"#).await;
    let message: Value = serde_json::from_str(&twice.body).unwrap();
    assert_eq!(message["result"]["isError"], true, "{message}");
    assert_eq!(
        text_of(&twice),
        json!("invalid arguments for `echo`: `text`: the field is sent twice; send each field once")
    );
    running.stop().await;
}

#[test]
fn the_connection_cap_stays_below_the_file_descriptor_limit() {
    assert_eq!(tool_mcp::connection_cap(1024, Some(256)), 192);
    assert_eq!(tool_mcp::connection_cap(200, Some(256)), 192);
    assert_eq!(tool_mcp::connection_cap(100, Some(256)), 100);
    assert_eq!(tool_mcp::connection_cap(1024, Some(1024)), 896);
    assert_eq!(tool_mcp::connection_cap(1024, Some(1 << 20)), 1024);
    assert_eq!(tool_mcp::connection_cap(1024, None), 1024);
    assert_eq!(tool_mcp::connection_cap(1024, Some(10)), 1);
    assert_eq!(tool_mcp::connection_cap(0, None), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_that_never_send_a_byte_do_not_lock_out_a_new_client_at_the_default_idle_timeout() {
    // The default idle timeout (60 s) is far past BOUND: only closing idle sockets lets it in.
    let running = Running::start(builder().max_connections(8).build()).await;
    let mut silent = Vec::new();
    for _ in 0..20 {
        silent.push(TcpStream::connect(running.addr).await.unwrap());
    }
    for id in 1..=3 {
        let served = tokio::time::timeout(
            BOUND,
            post(running.addr, "/mcp", "127.0.0.1", &[], &call(id, "echo", json!({"text": "let in"}))),
        )
        .await
        .expect("a new client was locked out by silent sockets");
        assert_eq!(text_of(&served), json!("let in"));
    }
    // The oldest silent sockets were closed to make room.
    assert_eq!(read_until_closed(&mut silent[0]).await, b"");
    running.stop().await;
}

/// How many calls of `hold` have started (a tool of one test alone).
static HOLD_STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Count the items.
#[tool]
async fn hold(
    /// The items.
    items: Vec<String>,
) -> String {
    HOLD_STARTED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("{} items", items.len())
}

/// A stateless 2026-07-28 `tools/call` of `hold` whose body is about 14.4 MB (under the 16 MiB
/// limit), as the endpoint answers itself: sent whole (then `sent` is told), and its response read.
async fn post_fifteen_megabytes(
    addr: std::net::SocketAddr,
    id: u64,
    sent: tokio::sync::oneshot::Sender<()>,
) -> common::Response {
    let items: Vec<String> = (0..1_200_000).map(|i| format!("item{i:05}")[..9].to_owned()).collect();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "hold",
        "arguments": {"items": items}, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let body = body.to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\nContent-Type: \
         application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: hold\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let _ = sent.send(());
    // Parsing and decoding 14 MB three times takes seconds in a debug build beside the other
    // tests: a bound of its own, far above that.
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(120), stream.read_to_end(&mut raw)).await.unwrap().unwrap();
    parse_response(&String::from_utf8(raw).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_fifteen_megabyte_bodies_are_parsed_off_the_workers_and_a_ping_is_answered_first() {
    let registry = Registry::builder().tool(hold::TOOL).build().unwrap();
    let running = Running::start(McpServer::builder(registry).build()).await;
    let addr = running.addr;
    let (sent_1, sent_2) = (tokio::sync::oneshot::channel(), tokio::sync::oneshot::channel());
    let big = [
        tokio::spawn(post_fifteen_megabytes(addr, 1, sent_1.0)),
        tokio::spawn(post_fifteen_megabytes(addr, 2, sent_2.0)),
    ];
    // Once both bodies are sent whole, a ping.
    sent_1.1.await.unwrap();
    sent_2.1.await.unwrap();
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let pong = tokio::time::timeout(BOUND, post(addr, "/mcp", "127.0.0.1", &[], &ping)).await.unwrap();
    let started_before_the_pong = HOLD_STARTED.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(serde_json::from_str::<Value>(&pong.body).unwrap()["result"], json!({}));
    assert_eq!(started_before_the_pong, 0, "a big body's call started before the ping was answered");
    for call in big {
        assert_eq!(text_of(&call.await.unwrap()), json!("1200000 items"));
    }
    running.stop().await;
}
