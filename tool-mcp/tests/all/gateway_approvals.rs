//! Approvals through a gateway: an upstream tool-mcp server over Streamable HTTP on 127.0.0.1,
//! whose registry binds approvals to the call, has a tool that needs approval; a gateway imports
//! it. The gateway passes the upstream's refusal on with the preview and the token for the host
//! (in process: `ToolMessage::approval`; over MCP: `_meta["tool-framework/approval"]`), never in
//! what the model reads or the output cache, and forwards a token sent with
//! the call upstream, where it runs the call once. The gateway's traces: `tests/gateway_traces.rs`.

use crate::common;

use std::io::Read;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use serde_json::json;
use test_support::approvals::tokens_in;
use tool_mcp::import::{ImportLimits, MIN_INLINE_RESULT_BYTES};
use tool_mcp::{APPROVAL_META, McpServer};
use tool_runtime::output::{MemoryStore, OutputLayer, OutputLimits, OutputStore};
use tool_runtime::{ToolErrorKind, ToolMessage};

use common::Running;
use common::gateway::{call_over_mcp, context, drop_call, gateway, gateway_with, note_call, now, runs_of, upstream};

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
    assert_eq!(approval.servers, ["up"], "the import's name of the server that asked");
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

/// A refusal too long for the import to take inline (its text and its preview, the tool's
/// preview of a long note, over `inline_result_bytes`, so both are cached as they arrive) and for
/// the gateway's output layer (its text cut, with a ref id) keeps its approval request: the host
/// gets the whole preview, and its token runs the call once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_too_long_to_take_inline_keeps_its_approval_request_with_the_whole_preview() {
    let at = now();
    let up = upstream(at).await;
    let store = Arc::new(MemoryStore::new());
    let limits = ImportLimits { inline_result_bytes: MIN_INLINE_RESULT_BYTES, ..ImportLimits::default() };
    let layer = OutputLayer::new().limits(OutputLimits { max_lines: 2000, max_bytes: 1024 });
    let (imported, registry) = gateway_with(&up, &store, limits, layer).await;
    let note = "n".repeat(MIN_INLINE_RESULT_BYTES + 1);
    let message = registry.call(&note_call(&note), &context(at)).await;
    assert_eq!((message.is_error, message.trimmed), (true, true), "{}", message.text());
    assert_eq!(message.error_kind, Some(ToolErrorKind::PermissionDenied));
    let approval = message.approval.as_deref().expect("the upstream's approval request, for the host");
    assert_eq!(approval.tool, "gw_write_note");
    assert_eq!(approval.preview, format!("write\n{note}"));
    let read = cached(&store, &message);
    assert!(
        read.starts_with(&format!(
            "tool `gw_write_note` did not run: it needs the user's approval. What it would do:\nwrite\n{note}\n"
        )),
        "{read}"
    );
    assert_eq!(tokens_in(&read), Vec::<String>::new());
    let approved = registry.call(&note_call(&note).with_approval_token(&approval.token), &context(at)).await;
    assert_eq!(approved.text(), format!("wrote {} bytes", note.len()));
    imported.close().await;
    up.stop().await;
    assert_eq!(runs_of(&format!("note {}", note.len())), 1);
}

/// The gateway's message for a call of `write_note` with `note`, its import taking strings of at
/// most 4096 bytes (`MIN_INLINE_RESULT_BYTES`) inline.
async fn note_through_the_least_inline_bytes(note: &str) -> ToolMessage {
    let at = now();
    let up = upstream(at).await;
    let limits = ImportLimits { inline_result_bytes: MIN_INLINE_RESULT_BYTES, ..ImportLimits::default() };
    let (imported, registry) = gateway_with(&up, &Arc::new(MemoryStore::new()), limits, OutputLayer::new()).await;
    let message = registry.call(&note_call(note), &context(at)).await;
    imported.close().await;
    up.stop().await;
    message
}

/// A preview longer than the stored text's own preview (16 KiB) and within the 64 KiB passed on
/// reaches the host whole, read back from where it was cached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_preview_within_the_bound_reaches_the_host_whole() {
    let note = "0123456789\n".repeat(4_000);
    let message = note_through_the_least_inline_bytes(&note).await;
    let approval = message.approval.as_deref().expect("the upstream's approval request, for the host");
    assert_eq!(approval.preview, format!("write\n{note}"));
}

/// A preview over the 64 KiB passed on is not passed on, cached or not: the model reads why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_preview_over_the_bound_is_not_passed_on_and_the_model_reads_why() {
    let message = note_through_the_least_inline_bytes(&"n".repeat(70_000)).await;
    assert_eq!((message.approval.is_none(), message.error_kind), (true, Some(ToolErrorKind::Failed)));
    let why = "\n[MCP server `up` asked for the user's approval with a request this registry does not pass on (its \
               preview is 70006 bytes, over the 65536 passed on); the call cannot be approved through this registry]";
    assert!(message.text().ends_with(why), "{}", message.text());
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
    assert_eq!(approval["servers"], json!(["up"]));
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

/// The tables `purge_table` purged.
static PURGED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Purge a table: needs approval, and says it destroys (so that a gateway may ask too).
#[tool_runtime::tool(tags(confirm, destructive))]
async fn purge_table(
    /// The table.
    table: String,
) -> String {
    PURGED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(table.clone());
    format!("purged {table}")
}

/// How many times `purge_table` ran on `table`.
fn purges_of(table: &str) -> usize {
    PURGED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().filter(|t| *t == table).count()
}

/// Approval tokens under `key` on the clock `at`.
fn tokens(key: u8, at: std::time::SystemTime) -> tool_runtime::ApprovalTokens {
    tool_runtime::ApprovalTokens::new(Arc::new(tool_runtime::idempotency::MemoryIdempotencyStore::new()))
        .server_key([key; 32])
        .unwrap()
        .clock(Arc::new(tool_runtime::FixedClock::new(at)))
}

/// An upstream serving `purge_table` under approval tokens, and a gateway importing it (prefix
/// `gw_`) that approves it too, with tokens of its own (`confirm_tag("destructive")`).
async fn both_approve(
    at: std::time::SystemTime,
) -> (Running, tool_mcp::import::ImportedServer, tool_runtime::Registry) {
    let upstream = tool_runtime::Registry::builder().tool(purge_table::TOOL).approval_tokens(tokens(7, at));
    let up = Running::start(McpServer::builder(upstream.build().unwrap()).build()).await;
    let imported = tool_mcp::import::McpImport::http("up", format!("http://{}/mcp", up.addr))
        .prefix("gw_")
        .connect()
        .await
        .unwrap();
    let builder = tool_runtime::Registry::builder().confirm_tag("destructive").approval_tokens(tokens(9, at));
    let registry = imported.add_to(builder).unwrap().build().unwrap();
    (up, imported, registry)
}

/// A call of `gw_purge_table` on `table` carrying `token`.
fn purge_call(table: &str, token: Option<&str>) -> tool_runtime::ToolCall {
    let mut call = tool_runtime::ToolCall::new("call_1", "gw_purge_table", json!({"table": table}).to_string());
    call.approval_token = token.map(str::to_owned);
    call
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_both_the_gateway_and_the_upstream_approve_runs_once_after_both_approvals() {
    let at = now();
    let (up, imported, registry) = both_approve(at).await;
    // The gateway asks first, with its own preview.
    let gateway = registry.call(&purge_call("accounts", None), &context(at)).await;
    let gateway = gateway.approval.expect("the gateway's approval request");
    assert_eq!(gateway.preview, "call `gw_purge_table` with\n\"table\": \"accounts\"");
    // Approved there, the call reaches the upstream, which asks in turn: its preview, and a token
    // of the gateway's that carries the upstream's.
    let upstream = registry.call(&purge_call("accounts", Some(&gateway.token)), &context(at)).await;
    assert_eq!(upstream.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert_eq!(tokens_in(&upstream.text()), Vec::<String>::new());
    let upstream = upstream.approval.expect("the upstream's approval request, passed on");
    assert_eq!(
        (upstream.tool.as_str(), upstream.preview.as_str()),
        ("gw_purge_table", "call `purge_table` with\n\"table\": \"accounts\"")
    );
    assert!(upstream.token.starts_with("ap1p."), "{:?}", upstream.token.get(..5));
    assert_eq!(purges_of("accounts"), 0);
    let approved = registry.call(&purge_call("accounts", Some(&upstream.token)), &context(at)).await;
    assert_eq!((approved.is_error, approved.text().into_owned()), (false, "purged accounts".to_owned()));
    imported.close().await;
    up.stop().await;
    assert_eq!(purges_of("accounts"), 1);
}

/// The other server's token a passed-on token of the gateway carries (its part after the MAC).
fn carried(passed_on: &str) -> String {
    passed_on.splitn(4, '.').nth(3).expect("a passed-on token").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passed_on_token_approves_its_one_call_once_and_the_upstreams_token_alone_not_at_all() {
    let at = now();
    let (up, imported, registry) = both_approve(at).await;
    let gateway = registry.call(&purge_call("ledger", None), &context(at)).await.approval.expect("asked").token;
    let passed_on =
        registry.call(&purge_call("ledger", Some(&gateway)), &context(at)).await.approval.expect("asked").token;
    // The upstream's token alone skips no approval of the gateway's: it is no token of the gateway.
    let alone = registry.call(&purge_call("ledger", Some(&carried(&passed_on))), &context(at)).await;
    assert_eq!(alone.text(), MISMATCH.replace("`drop_table`", "`gw_purge_table`"));
    // Nor does the passed-on token with other arguments, or carrying another token.
    let other = registry.call(&purge_call("ledgers", Some(&passed_on)), &context(at)).await;
    assert_eq!(other.text(), MISMATCH.replace("`drop_table`", "`gw_purge_table`"));
    let swapped = format!("{}ap1.1.00.00", passed_on.strip_suffix(&carried(&passed_on)).unwrap());
    let swapped = registry.call(&purge_call("ledger", Some(&swapped)), &context(at)).await;
    assert_eq!(swapped.text(), MISMATCH.replace("`drop_table`", "`gw_purge_table`"));
    let approved = registry.call(&purge_call("ledger", Some(&passed_on)), &context(at)).await;
    assert_eq!(approved.text(), "purged ledger");
    let replay = registry.call(&purge_call("ledger", Some(&passed_on)), &context(at)).await;
    assert_eq!(replay.text(), USED.replace("`drop_table`", "`gw_purge_table`"));
    imported.close().await;
    up.stop().await;
    assert_eq!((purges_of("ledger"), purges_of("ledgers")), (1, 0));
}

/// A gateway importing `upstream` (prefix `gw_`) that approves its destructive tools with tokens
/// of its own (server key `key`), served over Streamable HTTP on 127.0.0.1.
async fn approving_gateway(
    upstream: &Running,
    name: &str,
    key: u8,
    at: std::time::SystemTime,
) -> (tool_mcp::import::ImportedServer, Running) {
    let imported = tool_mcp::import::McpImport::http(name, format!("http://{}/mcp", upstream.addr))
        .prefix("gw_")
        .connect()
        .await
        .unwrap();
    let builder = tool_runtime::Registry::builder().confirm_tag("destructive").approval_tokens(tokens(key, at));
    let registry = imported.add_to(builder).unwrap().build().unwrap();
    (imported, Running::start(McpServer::builder(registry).build()).await)
}

/// A chain of servers that each approve the call (an upstream, then two gateways over it, each
/// over the one before) and a last gateway the host calls: the host approves three times, each
/// time with the token the last request gave (every approving gateway wraps the token of the
/// server behind it, 81 bytes a layer: 112, 193, then 274 bytes), and the call then runs once.
/// Each request names the servers it came through (`servers`), so the host tells them apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_through_two_approving_gateways_over_an_approving_upstream_runs_after_three_approvals() {
    let at = now();
    let upstream = tool_runtime::Registry::builder().tool(purge_table::TOOL).approval_tokens(tokens(7, at));
    let up = Running::start(McpServer::builder(upstream.build().unwrap()).build()).await;
    let (first, first_served) = approving_gateway(&up, "origin", 9, at).await;
    let (second, second_served) = approving_gateway(&first_served, "middle", 11, at).await;
    let last = tool_mcp::import::McpImport::http("edge", format!("http://{}/mcp", second_served.addr))
        .prefix("gw_")
        .connect()
        .await
        .unwrap();
    let registry = last.add_to(tool_runtime::Registry::builder()).unwrap().build().unwrap();
    let call = || tool_runtime::ToolCall::new("call_1", "gw_gw_gw_purge_table", json!({"table": "chain"}).to_string());
    let mut message = registry.call(&call(), &context(at)).await;
    let mut asked = Vec::new();
    for _ in 0..4 {
        let Some(request) = message.approval.take() else { break };
        asked.push((request.preview.clone(), request.token.len(), request.servers.join(" > ")));
        message = registry.call(&call().with_approval_token(&request.token), &context(at)).await;
    }
    assert_eq!(
        asked,
        [
            ("call `gw_gw_purge_table` with\n\"table\": \"chain\"".to_owned(), 112, "edge".to_owned()),
            ("call `gw_purge_table` with\n\"table\": \"chain\"".to_owned(), 193, "edge > middle".to_owned()),
            ("call `purge_table` with\n\"table\": \"chain\"".to_owned(), 274, "edge > middle > origin".to_owned()),
        ]
    );
    assert_eq!((message.is_error, message.text().into_owned()), (false, "purged chain".to_owned()));
    last.close().await;
    second_served.stop().await;
    second.close().await;
    first_served.stop().await;
    first.close().await;
    up.stop().await;
    assert_eq!(purges_of("chain"), 1);
}
