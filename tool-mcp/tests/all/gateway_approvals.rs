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
use tool_mcp::{APPROVAL_META, McpServer};
use tool_runtime::output::{MemoryStore, OutputStore};
use tool_runtime::{ToolErrorKind, ToolMessage};

use common::Running;
use common::gateway::{call_over_mcp, context, drop_call, gateway, now, runs_of, upstream};

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
