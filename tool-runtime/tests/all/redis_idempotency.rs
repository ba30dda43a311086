//! The Redis idempotency store against a real `redis-server`: two registries on one Redis (two
//! workers) run a keyed call once and redeem an approval token once; other arguments are
//! refused; a worker killed mid-call holds the key until its lease ends, then a retry on the
//! other worker runs it; no key or token is stored in clear.

use crate::redis_server;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use redis_server::RedisServer;
use tokio::sync::Notify;
use tool_runtime::idempotency::{IDEMPOTENCY_NAMESPACE, Idempotency, RedisIdempotencyStore};
use tool_runtime::prelude::*;
use tool_runtime::redis::RedisConnection;

/// A counter of effects.
#[derive(Default)]
struct Effects {
    runs: AtomicUsize,
    /// When set, a run waits for it.
    gate: Option<Arc<Notify>>,
}

#[tools]
impl Effects {
    /// Send an e-mail (an effect that must happen once).
    #[tool]
    async fn send(
        &self,
        /// The recipient.
        to: String,
    ) -> String {
        let n = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(gate) = &self.gate {
            gate.notified().await;
        }
        format!("sent to {to} (run {n})")
    }
}

fn worker(server: &RedisServer, effects: Arc<Effects>, lease: Duration) -> Registry {
    let store = RedisIdempotencyStore::new(RedisConnection::open(&server.url(0)).unwrap(), IDEMPOTENCY_NAMESPACE);
    let idempotency = Idempotency::new(store).server_key([3u8; 32]).unwrap().lease(lease).wait(Duration::ZERO);
    Registry::builder().tools_of(effects).idempotency(idempotency).build().unwrap()
}

fn send(id: &str, to: &str, key: &str) -> ToolCall {
    ToolCall::new(id, "send", format!(r#"{{"to":"{to}"}}"#)).with_idempotency_key(key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_on_one_redis_run_a_keyed_call_once() {
    let server = RedisServer::start();
    let effects = Arc::new(Effects::default());
    let (one, two) = (
        worker(&server, effects.clone(), Duration::from_secs(60)),
        worker(&server, effects.clone(), Duration::from_secs(60)),
    );
    let ctx = ToolContext::builder().principal("ann").build();
    let first = one.call(&send("c1", "bob@example.com", "mail-1"), &ctx).await;
    let retry = two.call(&send("c2", "bob@example.com", "mail-1"), &ctx).await;
    let other = two.call(&send("c3", "eve@example.com", "mail-1"), &ctx).await;
    assert_eq!(first.text(), "sent to bob@example.com (run 1)");
    assert_eq!(retry.text(), "sent to bob@example.com (run 1)");
    assert_eq!(retry.tool_call_id, "c2");
    assert!(other.is_error);
    assert!(
        other
            .text()
            .starts_with("tool `send` did not run: this idempotency key was used for a call with other arguments")
    );
    assert_eq!(effects.runs.load(Ordering::SeqCst), 1);
    // The key is stored as an HMAC only.
    let keys = server.cli(&["KEYS", "*"]);
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(
        keys.iter().all(|k| k.starts_with("tool:idem:") && !k.contains("mail-1") && !k.contains("ann")),
        "{keys:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_of_a_worker_killed_mid_call_is_free_again_once_its_lease_ends() {
    let server = RedisServer::start();
    let effects = Arc::new(Effects { gate: Some(Arc::new(Notify::new())), ..Effects::default() });
    let lease = Duration::from_secs(2);
    let killed = worker(&server, effects.clone(), lease);
    let ctx = ToolContext::new();
    // The first worker dies mid-call: its future is dropped while the tool waits at its gate.
    let dropped =
        tokio::time::timeout(Duration::from_millis(100), killed.call(&send("c1", "bob", "mail-2"), &ctx)).await;
    assert!(dropped.is_err());
    drop(killed);
    let survivor = worker(&server, Arc::new(Effects::default()), lease);
    let during = survivor.call(&send("c2", "bob", "mail-2"), &ctx).await;
    assert!(during.text().contains("is still running"), "{}", during.text());
    // Retries until the lease has ended (bounded: 60 tries, 100 ms apart).
    let mut ran = None;
    for _ in 0..60 {
        let retry = survivor.call(&send("c3", "bob", "mail-2"), &ctx).await;
        if !retry.is_error {
            ran = Some(retry);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(ran.expect("the lease ended").text(), "sent to bob (run 1)");
}

/// Delete a branch (a tool that needs approval).
#[tool(tags(confirm))]
fn delete_branch(
    /// The branch.
    name: String,
) -> String {
    format!("deleted branch {name}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_on_one_redis_redeem_an_approval_token_once() {
    let server = RedisServer::start();
    let worker = || {
        let store = RedisIdempotencyStore::new(RedisConnection::open(&server.url(0)).unwrap(), IDEMPOTENCY_NAMESPACE);
        let tokens = tool_runtime::ApprovalTokens::new(store).server_key([4u8; 32]).unwrap();
        Registry::builder().tool(delete_branch::TOOL).approval_tokens(tokens).build().unwrap()
    };
    let (one, two) = (worker(), worker());
    let ctx = ToolContext::builder().principal("ann").build();
    let call = ToolCall::new("c1", "delete_branch", r#"{"name":"old"}"#);
    // The host reads the token from the refusal's approval request (the model's text has none).
    let asked = one.call(&call, &ctx).await;
    assert!(!asked.text().contains("ap1."));
    let token = asked.approval.expect("an approval request for the host").token;
    let approved = call.clone().with_approval_token(&token);
    assert_eq!(two.call(&approved, &ctx).await.text(), "deleted branch old");
    assert_eq!(
        one.call(&approved, &ctx).await.text(),
        "tool `delete_branch` did not run: its approval token was used already (an approval runs one call, once); \
         send the call without a token to get a new preview and token, and ask the user again"
    );
    // The token is not stored in clear.
    let keys = server.cli(&["KEYS", "*"]);
    let mac = token.rsplit('.').next().unwrap();
    assert!(!keys.is_empty());
    assert!(
        keys.iter().all(|key| key.starts_with("tool:idem:") && !key.contains(mac) && !key.contains("ann")),
        "{keys:?}"
    );
}
