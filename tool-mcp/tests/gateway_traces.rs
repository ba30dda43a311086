//! The traces of a gateway that passes approvals on (see `tests/all/gateway_approvals.rs`) at
//! the `TRACE` level hold no approval token: neither the one it passed to its host nor the one it
//! forwarded upstream.
//!
//! A binary of its own: its subscriber records every callsite, which `tracing`'s per-callsite
//! interest does not promise beside the other tests of a shared binary, whose threads have none.

#[path = "common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex, PoisonError};

use tool_mcp::{APPROVAL_META, McpServer};
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

/// The gateway's traces at the `TRACE` level (its tool calls' spans, the import's CLIENT spans
/// and rmcp's own events of the upstream connection, the SERVER spans of its MCP requests) hold
/// neither the token it passed to its host nor the one it forwarded upstream. The upstream runs
/// on a runtime of its own, outside the recording.
#[test]
fn the_gateways_traces_hold_no_token_it_passed_on_or_forwarded() {
    use tracing_subscriber::fmt::format::FmtSpan;

    let at = now();
    let upstream_runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let up = upstream_runtime.block_on(upstream(at));
    let traces = Traces::default();
    let writer = traces.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(FmtSpan::NEW | FmtSpan::CLOSE)
        .with_writer(move || writer.clone())
        .finish();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tokens = tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(async {
            let (imported, registry) = gateway(&up, &Arc::new(MemoryStore::new())).await;
            let refused = registry.call(&drop_call("traced"), &context(at)).await;
            let token = refused.approval.expect("an approval request").token;
            let approved = registry.call(&drop_call("traced").with_approval_token(&token), &context(at)).await;
            assert_eq!(approved.text(), "dropped traced");
            let served = Running::start(McpServer::builder(registry).build()).await;
            let refused = call_over_mcp(&served, "traced-mcp", None).await;
            let served_token = refused["result"]["_meta"][APPROVAL_META]["token"].as_str().unwrap().to_owned();
            let approved = call_over_mcp(&served, "traced-mcp", Some(&served_token)).await;
            assert_eq!(approved["result"]["content"][0]["text"], "dropped traced-mcp", "{approved}");
            served.stop().await;
            imported.close().await;
            [token, served_token]
        })
    });
    upstream_runtime.block_on(up.stop());
    let text = String::from_utf8_lossy(&traces.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned();
    // The calls were traced: the tool call spans of the gateway and its CLIENT spans upstream.
    assert!(text.contains("gw_drop_table"), "{text}");
    assert!(text.contains("tools/call drop_table"), "{text}");
    for token in tokens {
        let mac = token.rsplit('.').next().unwrap().to_owned();
        assert!(!text.contains(&mac), "a token's MAC in the traces:\n{text}");
    }
    assert_eq!((runs_of("traced"), runs_of("traced-mcp")), (1, 1));
}
