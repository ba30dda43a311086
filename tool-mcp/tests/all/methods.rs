//! A `#[tools]` server over MCP: its `&self` methods are listed and called on one instance.

use crate::common;

use std::sync::{Arc, Mutex};

use rmcp::ServiceExt;
use serde_json::json;
use tool_mcp::McpServer;
use tool_runtime::{Registry, tool, tools};

use common::RawClient;

/// A notes server whose state is on `self`.
#[derive(Default)]
struct NotesServer {
    notes: Mutex<Vec<String>>,
}

#[tools]
impl NotesServer {
    /// Add a note; returns how many notes there are.
    #[tool]
    async fn add_note(
        &self,
        /// The note.
        text: String,
    ) -> String {
        let mut notes = self.notes.lock().unwrap();
        notes.push(text);
        notes.len().to_string()
    }

    /// Every note, one per line.
    #[tool(tags(read_only))]
    fn list_notes(&self) -> String {
        self.notes.lock().unwrap().join("\n")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_methods_of_one_instance_are_listed_and_share_its_state() {
    let server = Arc::new(NotesServer::default());
    let registry = Registry::builder().tools_of(server.clone()).build().unwrap();
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let mcp = McpServer::builder(registry).build();
    tokio::spawn(async move { mcp.serve(server_io).await.unwrap().waiting().await });
    let (reader, writer) = tokio::io::split(client_io);
    let mut client = RawClient::initialize(reader, writer).await;

    client.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    let listed = client.recv().await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["add_note", "list_notes"]);

    client.call(3, "add_note", json!({"text": "milk"}), false).await;
    assert_eq!(client.recv().await["result"]["content"], json!([{"type": "text", "text": "1"}]));
    client.call(4, "add_note", json!({"text": "eggs"}), false).await;
    assert_eq!(client.recv().await["result"]["content"], json!([{"type": "text", "text": "2"}]));
    client.call(5, "list_notes", json!({}), false).await;
    assert_eq!(client.recv().await["result"]["content"], json!([{"type": "text", "text": "milk\neggs"}]));
    assert_eq!(*server.notes.lock().unwrap(), ["milk", "eggs"]);
}
