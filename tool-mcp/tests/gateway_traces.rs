//! The traces of a gateway that passes approvals on (see `tests/all/gateway_approvals.rs`) at
//! the `TRACE` level hold no approval token: neither the one it passed to its host nor the one it
//! forwarded upstream, in its own spans and events or in rmcp's (which trace every message its
//! service handles). Nor an idempotency key: neither a client's nor the one derived from it and
//! forwarded upstream (`tests/all/gateway_idempotency.rs`).
//!
//! A binary of its own: it installs a global subscriber (a thread's own subscriber does not see
//! every callsite, since `tracing` caches a callsite's interest across threads). The upstream runs
//! in this process too, on threads named `upstream`, whose lines are not the gateway's.

#[path = "common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::json;
use tool_mcp::{APPROVAL_META, APPROVAL_TOKEN_META, IDEMPOTENCY_KEY_META, McpServer};
use tool_runtime::output::MemoryStore;

use common::Running;
use common::gateway::{call_over_mcp, context, drop_call, gateway, now, runs_of, upstream};

/// Every span (when it opens and closes, with its fields) and event at every level, as text.
#[derive(Clone, Default)]
struct Traces(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Traces {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The clients' idempotency keys of the approved calls: in process, then over MCP.
const KEYS: [&str; 2] = ["order-traced-4f1c", "order-traced-mcp-9a2e"];

/// The key the gateway forwards upstream (to `up`) for the client's `key` of a call of
/// `gw_drop_table` by no principal: what a tool of that name gets from
/// `ToolContext::idempotency_key_for("up")` in a registry of this process without idempotency, as
/// the gateway's registry is (the same secret of the process).
async fn forwarded_for(key: &str) -> String {
    let schema = json!({"type": "object", "properties": {}});
    let tool = tool_runtime::DynamicTool::new("gw_drop_table", "The gateway's tool.", schema, |_, ctx| async move {
        Ok(tool_runtime::ToolResult::text(ctx.idempotency_key_for("up").unwrap_or_default()))
    })
    .unwrap();
    let registry = tool_runtime::Registry::builder().tool_dyn(Arc::new(tool)).build().unwrap();
    let call = tool_runtime::ToolCall::new("c1", "gw_drop_table", "{}").with_idempotency_key(key);
    let derived = registry.call(&call, &tool_runtime::ToolContext::new()).await.text().into_owned();
    assert_eq!(derived.len(), 64, "{derived}");
    derived
}

/// The name of the upstream runtime's threads.
const UPSTREAM: &str = "upstream";

/// The gateway's traces at the `TRACE` level (its tool calls' spans, the import's CLIENT spans,
/// rmcp's events of the upstream connection, its MCP requests) hold neither the token it passed
/// to its host nor the one it forwarded upstream, nor the idempotency keys of the approved calls
/// or the keys it forwarded for them.
#[test]
fn the_gateways_traces_hold_no_token_or_idempotency_key_it_passed_on_or_forwarded() {
    use tracing_subscriber::fmt::format::FmtSpan;

    let traces = Traces::default();
    let writer = traces.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(FmtSpan::NEW | FmtSpan::CLOSE)
        .with_thread_names(true)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let at = now();
    let upstream_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(UPSTREAM)
        .enable_all()
        .build()
        .unwrap();
    let up = upstream_runtime.block_on(upstream(at));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tokens = runtime.block_on(async {
        let (imported, registry) = gateway(&up, &Arc::new(MemoryStore::new())).await;
        let refused = registry.call(&drop_call("traced"), &context(at)).await;
        let token = refused.approval.expect("an approval request").token;
        let approved = registry
            .call(&drop_call("traced").with_approval_token(&token).with_idempotency_key(KEYS[0]), &context(at))
            .await;
        assert_eq!(approved.text(), "dropped traced");
        let served = Running::start(McpServer::builder(registry).build()).await;
        let refused = call_over_mcp(&served, "traced-mcp", None).await;
        let served_token = refused["result"]["_meta"][APPROVAL_META]["token"].as_str().unwrap().to_owned();
        let params = json!({"name": "gw_drop_table", "arguments": {"table": "traced-mcp"},
            "_meta": {APPROVAL_TOKEN_META: served_token, IDEMPOTENCY_KEY_META: KEYS[1]}});
        let approved = common::rpc(&served, "tools/call", params, &json!({}), None).await;
        assert_eq!(approved["result"]["content"][0]["text"], "dropped traced-mcp", "{approved}");
        served.stop().await;
        imported.close().await;
        [token, served_token]
    });
    upstream_runtime.block_on(up.stop());
    let text = String::from_utf8_lossy(&traces.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned();
    let gateways: Vec<&str> = text.lines().filter(|line| !line.contains(&format!(" {UPSTREAM} "))).collect();
    let seen = |what: &str| gateways.iter().any(|line| line.contains(what));
    // What was traced: the gateway's tool calls, its CLIENT spans upstream, and rmcp's service
    // handing it the upstream's answers.
    assert!(seen("gen_ai.tool.name=\"gw_drop_table\""), "{text}");
    assert!(seen("tools/call drop_table"), "{text}");
    assert!(seen("new event evt=PeerMessage(Response"), "{text}");
    for token in tokens {
        let mac = token.rsplit('.').next().unwrap().to_owned();
        let leaks: Vec<&&str> = gateways.iter().filter(|line| line.contains(&mac)).collect();
        assert!(leaks.is_empty(), "a token's MAC in the gateway's traces: {leaks:#?}");
    }
    // Neither the clients' keys nor the keys forwarded upstream for them.
    let forwarded = runtime.block_on(async { [forwarded_for(KEYS[0]).await, forwarded_for(KEYS[1]).await] });
    assert_ne!(forwarded[0], forwarded[1]);
    for key in forwarded.iter().map(String::as_str).chain(KEYS) {
        let leaks: Vec<&&str> = gateways.iter().filter(|line| line.contains(key)).collect();
        assert!(leaks.is_empty(), "an idempotency key in the gateway's traces: {leaks:#?}");
    }
    assert_eq!((runs_of("traced"), runs_of("traced-mcp")), (1, 1));
}
