//! The JSON-RPC client of the task tests: one POST of protocol 2026-07-28 whose client declares
//! the tasks extension, over a fresh HTTP/1.1 connection (shared by `tasks.rs`,
//! `task_cluster.rs` and `idempotency_cluster.rs`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

/// POSTs a JSON-RPC request of protocol 2026-07-28 whose client declares the tasks extension to
/// `addr`; the JSON-RPC response (the last event of a stream).
pub(crate) fn request(addr: &str, id: u64, method: &str, name: &str, params: Value) -> Value {
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    request_of(addr, id, method, name, params, tasks)
}

/// As [`request`], from a client of these `capabilities`.
#[allow(dead_code)] // `idempotency_cluster.rs` asks with the tasks extension only
pub(crate) fn request_of(
    addr: &str,
    id: u64,
    method: &str,
    name: &str,
    mut params: Value,
    capabilities: Value,
) -> Value {
    // Beside any `_meta` the caller gave (an idempotency key).
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\nContent-Type: \
         application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nMcp-Name: {name}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (_, rest) = raw.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP response: {raw}"));
    let json_of = |text: &str| serde_json::from_str::<Value>(text.trim()).ok();
    rest.lines()
        .filter_map(|line| line.strip_prefix("data: ").and_then(json_of))
        .rfind(|message| message.get("id") == Some(&json!(id)))
        .or_else(|| rest.lines().find_map(|line| json_of(line).filter(|m| m.get("id").is_some())))
        .unwrap_or_else(|| panic!("no response in {raw}"))
}

/// The lines of the file at `path` (none when it does not exist).
#[allow(dead_code)] // `tasks.rs` counts no lines
pub(crate) fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// Waits (at most 500 times 20 ms) until the file at `path` has `count` lines.
#[allow(dead_code)] // `tasks.rs` counts no lines
pub(crate) fn until_lines(path: &std::path::Path, count: usize) {
    for _ in 0..500 {
        if lines(path).len() >= count {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} never had {count} lines: {:?}", path.display(), lines(path));
}
