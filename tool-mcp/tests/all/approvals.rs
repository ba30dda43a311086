//! Approvals bound to the call over MCP (Streamable HTTP, protocol 2026-07-28): a call of a
//! `confirm` tool from a client that cannot ask its user gets the preview in its content and the
//! token in the result's `_meta["tool-framework/approval"]` only (never where the model reads); the same
//! call with the token in `_meta["tool-framework/approval-token"]` runs once, on any worker sharing
//! the server key and the store; a replay, a changed argument and a value that is not a string
//! are refused.

use crate::common;

use std::sync::Arc;
use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};
use test_support::approvals::tokens_in;
use tool_mcp::{APPROVAL_META, APPROVAL_TOKEN_META, McpServer};
use tool_runtime::idempotency::MemoryIdempotencyStore;
use tool_runtime::{ApprovalTokens, Registry, tool};

use common::Running;

/// The paths `wipe_dir` ran on, across the servers of this test file (each test uses paths of
/// its own).
static WIPES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// How many times `wipe_dir` ran on `path`.
fn runs_of(path: &str) -> usize {
    WIPES.lock().unwrap_or_else(PoisonError::into_inner).iter().filter(|p| *p == path).count()
}

/// Wipe a directory (an effect that needs the user's approval; a task for a client that takes
/// tasks).
#[tool(tags(confirm, task))]
async fn wipe_dir(
    /// The directory.
    path: String,
) -> String {
    WIPES.lock().unwrap_or_else(PoisonError::into_inner).push(path.clone());
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

/// The token a refusal gives the client's host, in the result's `_meta`.
fn token_in(answer: &Value) -> String {
    answer["result"]["_meta"][APPROVAL_META]["token"].as_str().expect("a token for the host").to_owned()
}

const ASKED: &str = "tool `wipe_dir` did not run: it needs the user's approval. What it would do:\ncall `wipe_dir` \
                     with\n\"path\": \"build/\"\nThe approval is the user's to give, through the application, \
                     within 300 s; it is not in this result. Do not send the call again on your own: once the user \
                     approves, the application runs this exact call";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_gives_the_preview_in_content_and_the_token_only_in_meta() {
    let running = Running::start(server(&Arc::new(MemoryIdempotencyStore::new()))).await;
    let asked = call(&running, "build/", None).await;
    assert_eq!(asked["result"]["isError"], true);
    assert_eq!(asked["result"]["content"], json!([{"type": "text", "text": ASKED}]), "{asked}");
    assert_eq!(asked["result"].get("structuredContent"), None);
    let approval = &asked["result"]["_meta"][APPROVAL_META];
    assert_eq!(approval["tool"], "wipe_dir");
    assert_eq!(approval["preview"], "call `wipe_dir` with\n\"path\": \"build/\"");
    let token = token_in(&asked);
    let expiry: u64 = token.split('.').nth(1).unwrap().parse().unwrap();
    assert_eq!(approval["expiresAt"], expiry);
    assert_eq!(approval.as_object().unwrap().len(), 4, "{approval}");
    running.stop().await;
}

/// The attack over HTTP: a model loop that reads the tool result's content (all a model is
/// shown) and sends the call again with every `ap1.` token it finds. Before the token left the
/// content, its first replay ran the tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_replaying_what_it_reads_in_the_content_cannot_approve_its_own_call() {
    let running = Running::start(server(&Arc::new(MemoryIdempotencyStore::new()))).await;
    let mut answer = call(&running, "build-self/", None).await;
    for round in 1..=3 {
        let read = tokens_in(&answer["result"]["content"].to_string());
        assert_eq!(read, Vec::<String>::new(), "round {round}: {answer}");
        answer = call(&running, "build-self/", read.into_iter().next().map(Value::from)).await;
    }
    assert_eq!(text(&answer), ASKED.replace("\"build/\"", "\"build-self/\""));
    running.stop().await;
    assert_eq!(runs_of("build-self/"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_from_the_hosts_meta_runs_the_exact_call_once_on_another_worker() {
    let store = Arc::new(MemoryIdempotencyStore::new());
    let (one, two) = (Running::start(server(&store)).await, Running::start(server(&store)).await);
    let asked = call(&one, "build/", None).await;
    assert_eq!(text(&asked), ASKED);
    let token = token_in(&asked);
    let approved = call(&two, "build/", Some(json!(token))).await;
    assert_eq!(text(&approved), "wiped build/");
    assert_eq!(approved["result"]["isError"], false);
    assert_eq!(approved["result"]["_meta"].get(APPROVAL_META), None);
    let replay = call(&one, "build/", Some(json!(token))).await;
    assert_eq!(replay["result"]["isError"], true);
    assert_eq!(
        text(&replay),
        "tool `wipe_dir` did not run: its approval token was used already (an approval runs one call, once); send \
         the call without a token to get a new preview and token, and ask the user again"
    );
    one.stop().await;
    two.stop().await;
    assert_eq!(runs_of("build/"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_sent_with_a_changed_argument_is_refused() {
    let running = Running::start(server(&Arc::new(MemoryIdempotencyStore::new()))).await;
    let token = token_in(&call(&running, "build/", None).await);
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

/// The attack of a token as long as a frame: it would be forwarded upstream, and a task record
/// would keep it. It is refused before the call starts, saying the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_over_the_longest_approval_token_is_invalid_params() {
    let running = Running::start(server(&Arc::new(MemoryIdempotencyStore::new()))).await;
    let answer = call(&running, "build-long/", Some(json!("a".repeat(1025)))).await;
    assert_eq!(
        answer["error"],
        json!({"code": -32602, "message": "`_meta[\"tool-framework/approval-token\"]` is 1025 bytes, longer than \
                any approval token (1024); send the token a refused call of this tool gave, as it was given"})
    );
    running.stop().await;
    assert_eq!(runs_of("build-long/"), 0);
}

/// A client that takes tasks and cannot ask its user (no elicitation).
fn tasks_only() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// A `tools/call` of `wipe_dir` on `path` from [`tasks_only`], with `token` in `_meta` unless it
/// is `None`: the finished task's result.
async fn task(running: &Running, path: &str, token: Option<&str>) -> Value {
    let mut params = json!({"name": "wipe_dir", "arguments": {"path": path}});
    if let Some(token) = token {
        params["_meta"] = json!({ APPROVAL_TOKEN_META: token });
    }
    let created = common::rpc(running, "tools/call", params, &tasks_only(), None).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    common::task_until_not(running, &id, "working", &tasks_only()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_mode_call_carries_its_approval_token_into_the_run_once() {
    let running = Running::start(server(&Arc::new(MemoryIdempotencyStore::new()))).await;
    let asked = task(&running, "build-task/", None).await;
    assert_eq!(asked["status"], "completed", "{asked}");
    assert_eq!(asked["result"]["isError"], true);
    assert_eq!(asked["result"]["content"][0]["text"], ASKED.replace("\"build/\"", "\"build-task/\""));
    let token = asked["result"]["_meta"][APPROVAL_META]["token"].as_str().expect("a token for the host").to_owned();
    let approved = task(&running, "build-task/", Some(&token)).await;
    assert_eq!(approved["status"], "completed", "{approved}");
    assert_eq!(
        approved["result"],
        json!({"resultType": "complete", "content": [{"type": "text", "text": "wiped build-task/"}], "isError": false})
    );
    let replay = task(&running, "build-task/", Some(&token)).await;
    assert_eq!(replay["result"]["isError"], true);
    assert!(replay["result"]["content"][0]["text"].as_str().unwrap().contains("was used already"), "{replay}");
    running.stop().await;
    assert_eq!(runs_of("build-task/"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_store_keeps_the_approval_token_of_a_refused_run_sealed_and_tasks_get_gives_it_whole() {
    let written = Arc::new(Mutex::new(Vec::new()));
    let store = crate::secrets::Recording {
        store: Arc::new(tool_mcp::tasks::MemoryTaskStore::new(100, 1 << 20)),
        written: written.clone(),
    };
    let tokens = ApprovalTokens::new(Arc::new(MemoryIdempotencyStore::new())).server_key([5u8; 32]).unwrap();
    let registry = Registry::builder().tool(wipe_dir::TOOL).approval_tokens(tokens).build().unwrap();
    let running = Running::start(McpServer::builder(registry).task_store(store).build()).await;
    let asked = task(&running, "build-sealed/", None).await;
    let token = asked["result"]["_meta"][APPROVAL_META]["token"].as_str().expect("a token for the host").to_owned();
    // Every record the store was given holds the token sealed, never as sent.
    let records = written.lock().unwrap().clone();
    let finished = records.iter().find(|r| r.contains(APPROVAL_META)).expect("a record with the refused result");
    assert!(records.iter().all(|r| !r.contains(&token)), "{records:?}");
    let record: Value = serde_json::from_str(finished).unwrap();
    let stored = record["result"]["_meta"][APPROVAL_META]["token"].as_str().unwrap();
    assert!(stored.starts_with("sealed:v1:"), "{stored}");
    // The token `tasks/get` gave runs the call.
    let approved = task(&running, "build-sealed/", Some(&token)).await;
    assert_eq!(approved["result"]["content"][0]["text"], "wiped build-sealed/", "{approved}");
    running.stop().await;
    assert_eq!(runs_of("build-sealed/"), 1);
}
