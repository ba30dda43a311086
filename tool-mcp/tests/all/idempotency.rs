//! Idempotency keys over MCP (Streamable HTTP, protocol 2026-07-28): a `tools/call` whose `_meta`
//! carries `tool-framework/idempotency-key` runs once per key; a retry, on the same server or on
//! another worker sharing the store and server key, gets the first result; other arguments under
//! the key are refused; a key that is not a string is -32602.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tool_mcp::{IDEMPOTENCY_KEY_META, McpServer};
use tool_runtime::idempotency::{Idempotency, MemoryIdempotencyStore};
use tool_runtime::{Registry, tool};

use common::{Running, post};

const BOUND: Duration = Duration::from_secs(10);

/// How many times `charge` ran, across the servers of this test file.
static CHARGES: AtomicUsize = AtomicUsize::new(0);

/// Charge an amount (an effect that must happen once per key).
#[tool]
async fn charge(
    /// The amount in cents.
    cents: u64,
    /// Unique per test, so that the tests' counts do not mix.
    test: String,
) -> String {
    let n = CHARGES.fetch_add(1, Ordering::SeqCst) + 1;
    format!("charged {cents} cents for {test} (charge #{n})")
}

fn server(idempotency: &Idempotency) -> McpServer {
    let registry = Registry::builder().tool(charge::TOOL).idempotency(idempotency.clone()).build().unwrap();
    McpServer::builder(registry).build()
}

fn shared() -> Idempotency {
    Idempotency::new(MemoryIdempotencyStore::new()).server_key([9u8; 32]).unwrap()
}

async fn call(running: &Running, arguments: Value, key: Value) -> Value {
    let params = json!({"name": "charge", "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        IDEMPOTENCY_KEY_META: key,
    }});
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "charge")];
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let response = tokio::time::timeout(BOUND, post(running.addr, "/mcp", "127.0.0.1", &headers, &body)).await.unwrap();
    match response.header("content-type") {
        Some("text/event-stream") => response.events().pop().unwrap(),
        _ => serde_json::from_str(&response.body).unwrap(),
    }
}

fn text(message: &Value) -> &str {
    message["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_on_another_worker_sharing_the_store_gets_the_first_result() {
    let idempotency = shared();
    let (one, two) = (Running::start(server(&idempotency)).await, Running::start(server(&idempotency)).await);
    let arguments = json!({"cents": 500, "test": "workers"});
    let first = call(&one, arguments.clone(), json!("order-17")).await;
    let retry = call(&two, arguments, json!("order-17")).await;
    assert!(text(&first).starts_with("charged 500 cents for workers (charge #"), "{first}");
    assert_eq!(text(&retry), text(&first));
    assert_eq!(retry["result"]["isError"], false);
    one.stop().await;
    two.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_arguments_under_the_same_key_are_refused() {
    let running = Running::start(server(&shared())).await;
    call(&running, json!({"cents": 500, "test": "other"}), json!("order-18")).await;
    let other = call(&running, json!({"cents": 50000, "test": "other"}), json!("order-18")).await;
    assert_eq!(other["result"]["isError"], true);
    assert_eq!(
        text(&other),
        "tool `charge` did not run: this idempotency key was used for a call with other arguments; send a new key \
         for new arguments, or the same arguments to get the first call's result"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_that_is_not_a_string_is_invalid_params() {
    let running = Running::start(server(&shared())).await;
    let answer = call(&running, json!({"cents": 1, "test": "number"}), json!(17)).await;
    assert_eq!(
        answer["error"],
        json!({"code": -32602, "message": "`_meta[\"tool-framework/idempotency-key\"]` must be a string of 1 to 256 \
                bytes (a UUID), not a number; send the same key with each retry of one call"})
    );
    running.stop().await;
}
