//! Raw clients, so that tests see every message the server sends, in order: JSON-RPC over
//! newline-delimited messages (the stdio transport), and HTTP/1.1 POSTs.

#![allow(dead_code, unreachable_pub)]

#[cfg(feature = "auth")]
pub mod auth;
#[cfg(feature = "client")]
pub mod gateway;

use std::net::SocketAddr;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, Lines};
use tokio::net::{TcpListener, TcpStream};
use tool_mcp::McpServer;

/// One side of a stdio MCP connection.
pub struct RawClient<R, W> {
    lines: Lines<BufReader<R>>,
    writer: W,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> RawClient<R, W> {
    /// Initializes the session (protocol 2025-06-18, which has `ping`) and returns the client.
    pub async fn initialize(reader: R, writer: W) -> Self {
        Self::initialize_with(reader, writer, json!({})).await
    }

    /// As [`RawClient::initialize`], declaring the client `capabilities`.
    pub async fn initialize_with(reader: R, writer: W, capabilities: Value) -> Self {
        let mut client = Self { lines: BufReader::new(reader).lines(), writer };
        client
            .send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": capabilities,
                "clientInfo": {"name": "raw", "version": "0"}}}))
            .await;
        let response = client.recv().await;
        assert_eq!(response["id"], 0, "{response}");
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        client
    }

    /// The writer, for raw bytes.
    pub fn writer_mut(&mut self) -> &mut W {
        &mut self.writer
    }

    pub async fn send(&mut self, message: Value) {
        self.writer.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// The next message; panics when the server closed the stream.
    pub async fn recv(&mut self) -> Value {
        let line = self.lines.next_line().await.unwrap().expect("the server closed the stream");
        serde_json::from_str(&line).unwrap()
    }

    /// The next message, or `None` once the server closed the stream.
    pub async fn try_recv(&mut self) -> Option<Value> {
        let line = self.lines.next_line().await.unwrap()?;
        Some(serde_json::from_str(&line).unwrap())
    }

    /// Sends `tools/call` of `name` with `arguments` as request `id`, with a progress token
    /// (`"p<id>"`) when `progress`.
    pub async fn call(&mut self, id: u64, name: &str, arguments: Value, progress: bool) {
        let mut params = json!({"name": name, "arguments": arguments});
        if progress {
            params["_meta"] = json!({"progressToken": format!("p{id}")});
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})).await;
    }

    pub async fn ping(&mut self, id: u64) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).await;
    }
}

/// A message as a short label: `response N`, `error N`, or the notification's method.
pub fn label(message: &Value) -> String {
    match message.get("method") {
        Some(method) => method.as_str().unwrap().to_owned(),
        None if message.get("error").is_some() => format!("error {}", message["id"]),
        None => format!("response {}", message["id"]),
    }
}

/// An HTTP response: status, lowercase header names with their values, and the body (de-chunked).
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The JSON messages of a server-sent event stream, in order.
    pub fn events(&self) -> Vec<Value> {
        self.body.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect()
    }
}

/// POSTs `body` to `path` with `Host: host` and the extra `headers`, and reads the whole response.
pub async fn post(addr: SocketAddr, path: &str, host: &str, headers: &[(&str, &str)], body: &Value) -> Response {
    post_raw(addr, path, host, headers, body.to_string().as_bytes()).await
}

/// GETs `path` with `Host: host` and reads the whole response.
pub async fn get(addr: SocketAddr, path: &str, host: &str) -> Response {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    parse_response(&raw)
}

/// As [`post`], with the body's bytes as given.
pub async fn post_raw(addr: SocketAddr, path: &str, host: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    // A server that refuses the head (`431`) answers and closes before the body is read: the
    // write then fails (a broken pipe or a reset), and the answer already sent is read anyway.
    let written = async { stream.write_all(request.as_bytes()).await.and(stream.write_all(body).await) };
    let _ = written.await;
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw).await;
    parse_response(&String::from_utf8_lossy(&raw))
}

/// An HTTP/1.1 response as read from the wire.
pub fn parse_response(raw: &str) -> Response {
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| l.split_once(':').unwrap())
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v == "chunked");
    let body = if chunked { dechunk(rest) } else { rest.to_owned() };
    Response { status, headers, body }
}

fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return body;
        }
        body.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

/// A server on a free loopback port; stopped (and checked to stop cleanly) by [`Running::stop`].
pub struct Running {
    pub addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<Result<(), tool_mcp::ServeError>>,
}

impl Running {
    pub async fn start(server: McpServer) -> Self {
        Self::start_on(server, TcpListener::bind("127.0.0.1:0").await.unwrap()).await
    }

    /// As [`Running::start`], on a listener already bound.
    pub async fn start_on(server: McpServer, listener: TcpListener) -> Self {
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(async move {
            server
                .serve_http_on(listener, async {
                    let _ = stopped.await;
                })
                .await
        });
        Self { addr, stop, serving }
    }

    pub async fn stop(self) {
        self.stop.send(()).unwrap();
        stopped(self.serving).await;
    }
}

/// A server on the line transport (stdio's) over in-memory pipes; stopped (and checked to stop
/// cleanly) by [`Piped::stop`].
pub struct Piped {
    stop: tokio::sync::oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<Result<(), tool_mcp::ServeError>>,
}

impl Piped {
    /// Starts `server`; returns it with the client's ends of the pipes (read, write), each pipe
    /// buffering 64 KiB.
    pub fn start(server: McpServer) -> (Self, tokio::io::DuplexStream, tokio::io::DuplexStream) {
        let (server_read, client_write) = tokio::io::duplex(64 * 1024);
        let (client_read, server_write) = tokio::io::duplex(64 * 1024);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(async move {
            server
                .serve_lines_until(server_read, server_write, async {
                    let _ = stopped.await;
                })
                .await
        });
        (Self { stop, serving }, client_read, client_write)
    }

    pub async fn stop(self) {
        self.stop.send(()).unwrap();
        stopped(self.serving).await;
    }
}

/// How long a test waits for a server to stop: past the grace period (10 s), the stream linger
/// (1 s) and a task's last notification (5 s).
pub const STOP_BOUND: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits for `serving` to end cleanly; a server still serving after [`STOP_BOUND`] fails the test
/// (a call, task run or connection that a shutdown does not end) instead of hanging it.
async fn stopped(serving: tokio::task::JoinHandle<Result<(), tool_mcp::ServeError>>) {
    match tokio::time::timeout(STOP_BOUND, serving).await {
        Ok(ended) => ended.unwrap().unwrap(),
        Err(_) => panic!("the server did not stop within {STOP_BOUND:?} of its shutdown"),
    }
}

/// How long [`rpc`] waits for an answer.
pub const RPC_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// How many times [`task_until_not`] reads a task, 20 ms apart (10 s in all).
pub const TASK_POLLS: usize = 500;

/// Reads the task `id` (`tasks/get` with the client's `capabilities`) until its status is no
/// longer `from`, at most [`TASK_POLLS`] times; its result.
pub async fn task_until_not(running: &Running, id: &str, from: &str, capabilities: &Value) -> Value {
    for _ in 0..TASK_POLLS {
        let got = rpc(running, "tasks/get", json!({"taskId": id}), capabilities, None).await;
        if got["result"]["status"] != from {
            return got["result"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("task {id} stayed {from}");
}

/// A stateless request of protocol 2026-07-28 (the headers it requires, with `Mcp-Name` from the
/// params' `name`, `taskId` or `uri`) with the client's `capabilities` in `_meta` (beside what
/// the params' `_meta` carries already), sent as `user`
/// (an `X-User` header; none without), answered within [`RPC_BOUND`]; the JSON-RPC response (the
/// last event of a stream), or `{"status": N}` for an answer that is not JSON.
pub async fn rpc(
    running: &Running,
    method: &str,
    mut params: Value,
    capabilities: &Value,
    user: Option<&str>,
) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    // Keys the caller put in `_meta` (an idempotency key, an approval token) are kept.
    if let Some(Value::Object(given)) = params.get_mut("_meta").map(Value::take) {
        meta.as_object_mut().unwrap().extend(given);
    }
    params["_meta"] = meta;
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut headers = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method)];
    headers.push(("Mcp-Name", &name));
    if let Some(user) = user {
        headers.push(("X-User", user));
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response =
        tokio::time::timeout(RPC_BOUND, post(running.addr, "/mcp", "127.0.0.1", &headers, &body)).await.unwrap();
    match response.header("content-type") {
        Some("text/event-stream") => response.events().pop().unwrap(),
        _ => serde_json::from_str(&response.body).unwrap_or_else(|_| json!({"status": response.status})),
    }
}
