//! Approvals through a gateway: an upstream tool-mcp server over Streamable HTTP on 127.0.0.1,
//! whose registry binds approvals to the call, has a tool that needs approval; a gateway imports
//! it. The gateway passes the upstream's refusal on with the preview and the token for the host
//! (in process: `ToolMessage::approval`; over MCP: `_meta["tool-framework/approval"]`), never in
//! what the model reads, the output cache or the gateway's traces, and forwards a token sent with
//! the call upstream, where it runs the call once.

use crate::common;

use std::io::Read;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use test_support::approvals::tokens_in;
use tool_mcp::import::{ImportedServer, McpImport};
use tool_mcp::{APPROVAL_META, APPROVAL_TOKEN_META, McpServer};
use tool_runtime::idempotency::MemoryIdempotencyStore;
use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputLayer, OutputStore};
use tool_runtime::{ApprovalTokens, FixedClock, Registry, ToolCall, ToolContext, ToolErrorKind, ToolMessage, tool};

use common::Running;

/// The tables `drop_table` dropped, across the upstreams of this file (each test drops tables
/// of its own).
static DROPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// How many times `drop_table` ran on `table`.
fn runs_of(table: &str) -> usize {
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

/// The instant both clocks of these tests stand at (a whole second, so that expiries are exact).
fn now() -> SystemTime {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// The upstream: `drop_table` under approval tokens on the clock `at`.
async fn upstream(at: SystemTime) -> Running {
    let tokens = ApprovalTokens::new(Arc::new(MemoryIdempotencyStore::new()))
        .server_key([7u8; 32])
        .unwrap()
        .clock(Arc::new(FixedClock::new(at)));
    let registry = Registry::builder().tool(drop_table::TOOL).approval_tokens(tokens).build().unwrap();
    Running::start(McpServer::builder(registry).build()).await
}

/// The gateway's import of `upstream` (prefix `gw_`) and its registry, whose output layer stores
/// every message in `store`.
async fn gateway(upstream: &Running, store: &Arc<MemoryStore>) -> (ImportedServer, Registry) {
    let imported =
        McpImport::http("up", format!("http://{}/mcp", upstream.addr)).prefix("gw_").connect().await.unwrap();
    let builder = Registry::builder()
        .override_dependency(&OUTPUT_STORE, store.clone() as Arc<dyn OutputStore>)
        .output(OutputLayer::new());
    let registry = imported.add_to(builder).unwrap().build().unwrap();
    (imported, registry)
}

/// A call of `gw_drop_table` on `table`.
fn drop_call(table: &str) -> ToolCall {
    ToolCall::new("call_1", "gw_drop_table", json!({"table": table}).to_string())
}

/// The context of the gateway's calls, its clock at `at`.
fn context(at: SystemTime) -> ToolContext {
    ToolContext::builder().clock(Arc::new(FixedClock::new(at))).build()
}

/// What the model reads of the gateway's refusal of `drop_table` on `table`.
fn asked(table: &str) -> String {
    format!(
        "tool `gw_drop_table` did not run: it needs the user's approval. What it would do:\ncall `drop_table` with\n\
         \"table\": \"{table}\"\nThe approval is the user's to give, through the application, within 300 s; it is \
         not in this result. Do not send the call again on your own: once the user approves, the application runs \
         this exact call"
    )
}

/// The text the output cache holds for `message`.
fn cached(store: &MemoryStore, message: &ToolMessage) -> String {
    let ref_id = message.ref_id.as_deref().expect("the gateway's output layer stored the message");
    let mut text = String::new();
    store.open_at(ref_id, 0).unwrap().read_to_string(&mut text).unwrap();
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_process_call_at_the_gateway_is_refused_with_the_upstreams_preview_and_token_for_the_host() {
    let at = now();
    let up = upstream(at).await;
    let store = Arc::new(MemoryStore::new());
    let (imported, registry) = gateway(&up, &store).await;
    let message = registry.call(&drop_call("users"), &context(at)).await;
    assert!(message.is_error);
    assert_eq!(message.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert_eq!(message.text(), asked("users"));
    let approval = message.approval.as_deref().expect("the upstream's approval request, for the host");
    assert_eq!(approval.tool, "gw_drop_table");
    assert_eq!(approval.preview, "call `drop_table` with\n\"table\": \"users\"");
    let expiry = at.duration_since(UNIX_EPOCH).unwrap().as_secs() + 300;
    assert_eq!(approval.expires_at, expiry);
    assert!(approval.token.starts_with(&format!("ap1.{expiry}.")), "{:?}", approval.token.get(..16));
    // Where the model reads, and in the cache it reads from, no token.
    assert_eq!(tokens_in(&message.text()), Vec::<String>::new());
    assert_eq!(cached(&store, &message), asked("users"));
    imported.close().await;
    up.stop().await;
    assert_eq!(runs_of("users"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_call_with_the_hosts_token_runs_upstream_once_and_gives_its_result() {
    let at = now();
    let up = upstream(at).await;
    let (imported, registry) = gateway(&up, &Arc::new(MemoryStore::new())).await;
    let refused = registry.call(&drop_call("orders"), &context(at)).await;
    let token = refused.approval.expect("an approval request").token;
    let approved = registry.call(&drop_call("orders").with_approval_token(&token), &context(at)).await;
    assert!(!approved.is_error, "{}", approved.text());
    assert_eq!(approved.text(), "dropped orders");
    assert_eq!(approved.approval, None);
    imported.close().await;
    up.stop().await;
    assert_eq!(runs_of("orders"), 1);
}

/// The upstream's refusal of a token that ran its call already.
const USED: &str = "tool `drop_table` did not run: its approval token was used already (an approval runs one call, \
                    once); send the call without a token to get a new preview and token, and ask the user again";

/// The upstream's refusal of a token minted for another call.
const MISMATCH: &str = "tool `drop_table` did not run: its approval token was not issued for this call (an approval \
                        holds only for the tool, arguments and caller approved); send the call without a token to \
                        get a preview and a token for these arguments, and ask the user again";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_token_is_refused_with_the_upstreams_error() {
    let at = now();
    let up = upstream(at).await;
    let (imported, registry) = gateway(&up, &Arc::new(MemoryStore::new())).await;
    let token = registry.call(&drop_call("carts"), &context(at)).await.approval.expect("an approval request").token;
    let approved = registry.call(&drop_call("carts").with_approval_token(&token), &context(at)).await;
    assert_eq!(approved.text(), "dropped carts");
    let replay = registry.call(&drop_call("carts").with_approval_token(&token), &context(at)).await;
    assert!(replay.is_error);
    assert_eq!(replay.text(), USED);
    assert_eq!(replay.approval, None);
    imported.close().await;
    up.stop().await;
    assert_eq!(runs_of("carts"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_other_arguments_or_a_made_up_one_is_refused_with_the_upstreams_error() {
    let at = now();
    let up = upstream(at).await;
    let (imported, registry) = gateway(&up, &Arc::new(MemoryStore::new())).await;
    let token = registry.call(&drop_call("logs"), &context(at)).await.approval.expect("an approval request").token;
    let other = registry.call(&drop_call("payments").with_approval_token(&token), &context(at)).await;
    assert_eq!(other.text(), MISMATCH);
    let made_up = registry.call(&drop_call("logs").with_approval_token("ap1.1.00.00"), &context(at)).await;
    assert_eq!(made_up.text(), MISMATCH);
    assert_eq!((other.approval, made_up.approval), (None, None));
    imported.close().await;
    up.stop().await;
    assert_eq!((runs_of("logs"), runs_of("payments")), (0, 0));
}

/// The attack through the gateway: a model loop that reads what the gateway's result shows it
/// and sends the call again with every `ap1.` token it finds never runs the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_replaying_what_it_reads_at_the_gateway_cannot_approve_its_own_call() {
    let at = now();
    let up = upstream(at).await;
    let (imported, registry) = gateway(&up, &Arc::new(MemoryStore::new())).await;
    let mut message = registry.call(&drop_call("sessions"), &context(at)).await;
    for round in 1..=3 {
        let read = tokens_in(&message.text());
        assert_eq!(read, Vec::<String>::new(), "round {round}");
        let mut call = drop_call("sessions");
        call.approval_token = read.into_iter().next();
        message = registry.call(&call, &context(at)).await;
    }
    assert_eq!(message.text(), asked("sessions"));
    imported.close().await;
    up.stop().await;
    assert_eq!(runs_of("sessions"), 0);
}

/// A `tools/call` of `gw_drop_table` on `table` to the gateway served over MCP, with `token` in
/// `_meta` unless it is `None`.
async fn call_over_mcp(gateway: &Running, table: &str, token: Option<&str>) -> Value {
    let mut params = json!({"name": "gw_drop_table", "arguments": {"table": table}});
    if let Some(token) = token {
        params["_meta"] = json!({ APPROVAL_TOKEN_META: token });
    }
    common::rpc(gateway, "tools/call", params, &json!({}), None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_the_gateway_over_mcp_gets_the_approval_in_meta_and_runs_the_call_with_its_token() {
    let at = now();
    let up = upstream(at).await;
    let (imported, registry) = gateway(&up, &Arc::new(MemoryStore::new())).await;
    let served = Running::start(McpServer::builder(registry).build()).await;
    let refused = call_over_mcp(&served, "invoices", None).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(tokens_in(&refused["result"]["content"].to_string()), Vec::<String>::new());
    let approval = &refused["result"]["_meta"][APPROVAL_META];
    assert_eq!(approval["tool"], "gw_drop_table");
    assert_eq!(approval["preview"], "call `drop_table` with\n\"table\": \"invoices\"");
    let token = approval["token"].as_str().expect("a token for the host").to_owned();
    let approved = call_over_mcp(&served, "invoices", Some(&token)).await;
    assert_eq!(approved["result"]["content"], json!([{"type": "text", "text": "dropped invoices"}]), "{approved}");
    assert_eq!(approved["result"]["isError"], false);
    assert_eq!(approved["result"]["_meta"].get(APPROVAL_META), None);
    served.stop().await;
    imported.close().await;
    up.stop().await;
    assert_eq!(runs_of("invoices"), 1);
}

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
