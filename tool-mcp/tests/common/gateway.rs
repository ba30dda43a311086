//! A gateway and its upstream on 127.0.0.1, for the tests of approvals through a gateway: the
//! upstream serves `drop_table` and `write_note` (tools that need approval) under approval tokens over
//! Streamable HTTP; the gateway imports it with the prefix `gw_`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tool_mcp::import::{ImportLimits, ImportedServer, McpImport};
use tool_mcp::{APPROVAL_TOKEN_META, McpServer};
use tool_runtime::idempotency::MemoryIdempotencyStore;
use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputLayer, OutputStore};
use tool_runtime::{ApprovalTokens, FixedClock, Registry, ToolCall, ToolContext, tool};

use super::Running;

/// The tables `drop_table` dropped, across the upstreams of this file (each test drops tables
/// of its own).
static DROPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// How many times `drop_table` ran on `table`.
pub fn runs_of(table: &str) -> usize {
    DROPPED.lock().unwrap_or_else(PoisonError::into_inner).iter().filter(|t| *t == table).count()
}

/// Drop a table (an effect that needs the user's approval).
#[tool(tags(confirm))]
async fn drop_table(
    /// The table.
    table: String,
) -> String {
    DROPPED.lock().unwrap_or_else(PoisonError::into_inner).push(table.clone());
    format!("dropped {table}")
}

/// Write a note (needs the user's approval; the preview shows the whole note, however long).
#[tool(tags(confirm), preview = note_preview)]
async fn write_note(
    /// The note.
    text: String,
) -> String {
    DROPPED.lock().unwrap_or_else(PoisonError::into_inner).push(format!("note {}", text.len()));
    format!("wrote {} bytes", text.len())
}

/// The preview of `write_note`: `write` and the whole note on the lines after it.
fn note_preview<'a>(
    arguments: &'a str,
    _ctx: &'a ToolContext,
) -> tool_runtime::BoxFuture<'a, Result<String, tool_runtime::ToolError>> {
    Box::pin(async move {
        let value: Value = serde_json::from_str(arguments).map_err(tool_runtime::ToolError::failed)?;
        Ok(format!("write\n{}", value["text"].as_str().unwrap_or_default()))
    })
}

/// A call of `gw_write_note` with `text`.
pub fn note_call(text: &str) -> ToolCall {
    ToolCall::new("call_1", "gw_write_note", json!({"text": text}).to_string())
}

/// The instant both clocks of these tests stand at (a whole second, so that expiries are exact).
pub fn now() -> SystemTime {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// The upstream: `drop_table` under approval tokens on the clock `at`.
pub async fn upstream(at: SystemTime) -> Running {
    let tokens = ApprovalTokens::new(Arc::new(MemoryIdempotencyStore::new()))
        .server_key([7u8; 32])
        .unwrap()
        .clock(Arc::new(FixedClock::new(at)));
    let registry =
        Registry::builder().tool(drop_table::TOOL).tool(write_note::TOOL).approval_tokens(tokens).build().unwrap();
    Running::start(McpServer::builder(registry).build()).await
}

/// The gateway's import of `upstream` (prefix `gw_`) and its registry, whose output layer stores
/// every message in `store`.
pub async fn gateway(upstream: &Running, store: &Arc<MemoryStore>) -> (ImportedServer, Registry) {
    gateway_with(upstream, store, ImportLimits::default(), OutputLayer::new()).await
}

/// [`gateway`] with the import's `limits` and the output layer `layer`.
pub async fn gateway_with(
    upstream: &Running,
    store: &Arc<MemoryStore>,
    limits: ImportLimits,
    layer: OutputLayer,
) -> (ImportedServer, Registry) {
    let imported = McpImport::http("up", format!("http://{}/mcp", upstream.addr))
        .prefix("gw_")
        .limits(limits)
        .connect()
        .await
        .unwrap();
    let builder =
        Registry::builder().override_dependency(&OUTPUT_STORE, store.clone() as Arc<dyn OutputStore>).output(layer);
    let registry = imported.add_to(builder).unwrap().build().unwrap();
    (imported, registry)
}

/// A call of `gw_drop_table` on `table`.
pub fn drop_call(table: &str) -> ToolCall {
    ToolCall::new("call_1", "gw_drop_table", json!({"table": table}).to_string())
}

/// The context of the gateway's calls, its clock at `at`.
pub fn context(at: SystemTime) -> ToolContext {
    ToolContext::builder().clock(Arc::new(FixedClock::new(at))).build()
}

/// A `tools/call` of `gw_drop_table` on `table` to the gateway served over MCP, with `token` in
/// `_meta` unless it is `None`.
pub async fn call_over_mcp(gateway: &Running, table: &str, token: Option<&str>) -> Value {
    let mut params = json!({"name": "gw_drop_table", "arguments": {"table": table}});
    if let Some(token) = token {
        params["_meta"] = json!({ APPROVAL_TOKEN_META: token });
    }
    super::rpc(gateway, "tools/call", params, &json!({}), None).await
}
