//! The line transport under a hostile client, over a pipe: the frame limit, and the stream going
//! on after each refused line.

use crate::common;

use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncWriteExt;
use tool_mcp::McpServer;
use tool_runtime::Registry;

use common::{Piped, RawClient};

const BOUND: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_over_the_frame_limit_is_a_parse_error_and_the_next_line_is_served() {
    let server = McpServer::builder(Registry::builder().build().unwrap()).max_frame_bytes(1024).build();
    let (piped, client_read, client_write) = Piped::start(server);
    let mut client = RawClient::initialize(client_read, client_write).await;

    // 4 MiB on one line, past a 1 KiB limit: written while the server reads and drops it.
    let mut line = br#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":""#.to_vec();
    line.resize(4 * 1024 * 1024, b' ');
    line.extend_from_slice(b"\"}}\n");
    client.writer_mut().write_all(&line).await.unwrap();
    let reply = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700,
            "message": "the message is over the limit of 1024 bytes; send a smaller one"}})
    );
    // A line of exactly 1024 bytes is served.
    let mut at_limit = br#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":{"pad":""#.to_vec();
    at_limit.resize(1024 - 4, b'a');
    at_limit.extend_from_slice(b"\"}}}\n");
    assert_eq!(at_limit.len(), 1025);
    client.writer_mut().write_all(&at_limit).await.unwrap();
    assert_eq!(
        tokio::time::timeout(BOUND, client.recv()).await.unwrap(),
        json!({"jsonrpc": "2.0", "id": 3, "result": {}})
    );
    // Blank lines are skipped; the next request is answered.
    client.writer_mut().write_all(b"\n  \r\n").await.unwrap();
    client.ping(4).await;
    assert_eq!(
        tokio::time::timeout(BOUND, client.recv()).await.unwrap(),
        json!({"jsonrpc": "2.0", "id": 4, "result": {}})
    );

    piped.stop().await;
}
