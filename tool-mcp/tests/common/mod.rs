//! A raw JSON-RPC client over newline-delimited messages (the stdio transport), so that tests see
//! every message the server sends, in order.

#![allow(dead_code, unreachable_pub)]

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};

/// One side of a stdio MCP connection.
pub struct RawClient<R, W> {
    lines: Lines<BufReader<R>>,
    writer: W,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> RawClient<R, W> {
    /// Initializes the session (protocol 2025-06-18, which has `ping`) and returns the client.
    pub async fn initialize(reader: R, writer: W) -> Self {
        let mut client = Self { lines: BufReader::new(reader).lines(), writer };
        client
            .send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}))
            .await;
        let response = client.recv().await;
        assert_eq!(response["id"], 0, "{response}");
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        client
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
