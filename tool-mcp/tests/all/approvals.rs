//! Approvals bound to the call over MCP (Streamable HTTP, protocol 2026-07-28): a call of a
//! `confirm` tool from a client that cannot ask its user gets the preview and a token; the same
//! call with the token in `_meta["tool-framework/approval-token"]` runs once, on any worker sharing
//! the server key and the store; a replay, a changed argument and a value that is not a string
//! are refused.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tool_mcp::{APPROVAL_TOKEN_META, McpServer};
use tool_runtime::idempotency::MemoryIdempotencyStore;
use tool_runtime::{ApprovalTokens, Registry, tool};

use common::Running;

/// How many times `wipe_dir` ran, across the servers of this test file.
static WIPES: AtomicUsize = AtomicUsize::new(0);

/// Wipe a directory (an effect that needs the user's approval).
#[tool(tags(confirm))]
async fn wipe_dir(
    /// The directory.
    path: String,
) -> String {
    WIPES.fetch_add(1, Ordering::SeqCst);
    format!("wiped {path}")
}

fn server(store: &Arc<MemoryIdempotencyStore>) -> McpServer {
    let tokens = ApprovalTokens::new(store.clone()).server_key([5u8; 32]).unwrap();
    let registry = Registry::builder().tool(wipe_dir::TOOL).approval_tokens(tokens).build().unwrap();
    McpServer::builder(registry).build()
}

/// A `tools/call` of `wipe_dir` on `path` from a client without elicitation, with `token` in
/// `_meta` unless it is `None`.
async fn call(running: &Running, path: &str, token: Option<Value>) -> Value {
    let mut params = json!({"name": "wipe_dir", "arguments": {"path": path}});
    if let Some(token) = token {
        params["_meta"] = json!({ APPROVAL_TOKEN_META: token });
    }
    common::rpc(running, "tools/call", params, &json!({}), None).await
}

fn text(message: &Value) -> &str {
    message["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

/// The token in the text of a refusal without one.
fn token_in(text: &str) -> String {
    let start = text.find("token `").expect("a token") + "token `".len();
    let end = start + text[start..].find('`').expect("a closing backquote");
    text[start..end].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_from_the_preview_runs_the_exact_call_once_on_another_worker() {
    let store = Arc::new(MemoryIdempotencyStore::new());
    let (one, two) = (Running::start(server(&store)).await, Running::start(server(&store)).await);
    let before = WIPES.load(Ordering::SeqCst);
    let asked = call(&one, "build/", None).await;
    assert_eq!(asked["result"]["isError"], true);
    assert!(
        text(&asked).starts_with(
            "tool `wipe_dir` did not run: it needs the user's approval and carried no approval token. What it would \
             do:\ncall `wipe_dir` with\n\"path\": \"build/\"\n"
        ),
        "{asked}"
    );
    let token = token_in(text(&asked));
    let approved = call(&two, "build/", Some(json!(token))).await;
    assert_eq!(text(&approved), "wiped build/");
    assert_eq!(approved["result"]["isError"], false);
    let replay = call(&one, "build/", Some(json!(token))).await;
    assert_eq!(replay["result"]["isError"], true);
    assert_eq!(
        text(&replay),
        "tool `wipe_dir` did not run: its approval token was used already (an approval runs one call, once); send \
         the call without a token to get a new preview and token, and ask the user again"
    );
    one.stop().await;
    two.stop().await;
    assert_eq!(WIPES.load(Ordering::SeqCst) - before, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_sent_with_a_changed_argument_is_refused() {
    let running = Running::start(server(&Arc::new(MemoryIdempotencyStore::new()))).await;
    let token = token_in(text(&call(&running, "build/", None).await));
    let changed = call(&running, "/", Some(json!(token))).await;
    assert_eq!(changed["result"]["isError"], true);
    assert_eq!(
        text(&changed),
        "tool `wipe_dir` did not run: its approval token was not issued for this call (an approval holds only for \
         the tool, arguments and caller approved); send the call without a token to get a preview and a token for \
         these arguments, and ask the user again"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_is_not_a_string_is_invalid_params() {
    let running = Running::start(server(&Arc::new(MemoryIdempotencyStore::new()))).await;
    let answer = call(&running, "build/", Some(json!(17))).await;
    assert_eq!(
        answer["error"],
        json!({"code": -32602, "message": "`_meta[\"tool-framework/approval-token\"]` must be the approval token \
                string a refused call of this tool gave, not a number; send it as it was given"})
    );
    running.stop().await;
}
