//! Idempotency keys through a gateway: an upstream tool-mcp server over Streamable HTTP on
//! 127.0.0.1, whose registry runs a keyed call once per key, serves `charge`, an effect counted per
//! test; a gateway imports it (prefix `gw_`) and is served over Streamable HTTP to clients that
//! each send a bearer key of their own (`key-of-ann`, `key-of-bob`: the gateway's context hook
//! makes it the call's principal). A client's retry of a keyed call reaches the upstream with the
//! same forwarded key, through the same gateway or one started again, so the effect runs once;
//! two clients sending the same key and arguments each get their own execution and result, since
//! the key forwarded is derived from the client's principal (at the upstream, every client of the
//! gateway is one principal). The upstream never gets the client's key as sent.

use crate::common;

use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tool_mcp::import::{ImportedServer, McpImport};
use tool_mcp::{IDEMPOTENCY_KEY_META, McpServer};
use tool_runtime::idempotency::{Idempotency, MemoryIdempotencyStore};
use tool_runtime::{Registry, tool};

use common::{Running, post};

const BOUND: Duration = Duration::from_secs(20);

/// The tests `charge` ran for, one entry a run.
static CHARGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// How many times `charge` ran for `test`.
fn runs_of(test: &str) -> usize {
    CHARGED.lock().unwrap_or_else(PoisonError::into_inner).iter().filter(|t| *t == test).count()
}

/// Charge an amount (an effect that must happen once per key).
#[tool]
async fn charge(
    /// The amount in cents.
    cents: u64,
    /// Unique per test, so that the tests' counts do not mix.
    test: String,
) -> String {
    let mut charged = CHARGED.lock().unwrap_or_else(PoisonError::into_inner);
    charged.push(test.clone());
    let n = charged.iter().filter(|t| **t == test).count();
    format!("charged {cents} cents for {test} (run {n})")
}

/// Opened once by each test of `hold` when its first call may end.
static HOLD_GATE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);
/// Told once each time `hold` starts.
static HOLD_STARTED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Hold a charge until the test lets it end (an effect that is still running when a retry comes).
#[tool]
async fn hold(
    /// Unique per test.
    test: String,
) -> String {
    let n = {
        let mut charged = CHARGED.lock().unwrap_or_else(PoisonError::into_inner);
        charged.push(test.clone());
        charged.iter().filter(|t| **t == test).count()
    };
    HOLD_STARTED.notify_one();
    HOLD_GATE.acquire().await.unwrap().forget();
    format!("held for {test} (run {n})")
}

/// Decline a charge: the tool runs (counted) and fails.
#[tool]
async fn decline(
    /// Unique per test.
    test: String,
) -> Result<String, String> {
    let mut charged = CHARGED.lock().unwrap_or_else(PoisonError::into_inner);
    charged.push(test.clone());
    let n = charged.iter().filter(|t| **t == test).count();
    Err(format!("card declined for {test} (run {n})"))
}

/// The upstream: `charge`, `hold` and `decline` with idempotency on (its own store and server
/// key; a retry while the first call runs is refused at once).
async fn upstream() -> Running {
    upstream_on(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(), true).await
}

/// [`upstream`] on `listener`, with idempotency on when `idempotent`.
async fn upstream_on(listener: tokio::net::TcpListener, idempotent: bool) -> Running {
    let mut builder = Registry::builder().tool(charge::TOOL).tool(hold::TOOL).tool(decline::TOOL);
    if idempotent {
        let idempotency =
            Idempotency::new(MemoryIdempotencyStore::new()).server_key([9u8; 32]).unwrap().wait(Duration::ZERO);
        builder = builder.idempotency(idempotency);
    }
    Running::start_on(McpServer::builder(builder.build().unwrap()).build(), listener).await
}

/// A gateway importing `upstream` as `up` (prefix `gw_`), served over Streamable HTTP; its
/// registry has idempotency under `[server_key; 32]` (a memory store of its own) when given.
async fn gateway(upstream: &Running, server_key: Option<u8>) -> (ImportedServer, Running) {
    let imported =
        McpImport::http("up", format!("http://{}/mcp", upstream.addr)).prefix("gw_").connect().await.unwrap();
    let mut builder = imported.add_to(Registry::builder()).unwrap();
    if let Some(byte) = server_key {
        builder = builder.idempotency(Idempotency::new(MemoryIdempotencyStore::new()).server_key([byte; 32]).unwrap());
    }
    let server = McpServer::builder(builder.build().unwrap())
        .context(|request, ctx| {
            let bearer = request.http.and_then(|parts| parts.headers.get("authorization")?.to_str().ok());
            match bearer.and_then(|value| value.strip_prefix("Bearer key-of-")) {
                Some(who @ ("ann" | "bob")) => Ok(ctx.principal(who)),
                _ => Err("send `Authorization: Bearer <key>` with a known key".to_owned()),
            }
        })
        .build();
    (imported, Running::start(server).await)
}

/// A `tools/call` of `tool` on `server` with `arguments`, the bearer key `bearer` (none: no
/// `Authorization`) and the idempotency key `key` in `_meta` (none: no key); the answer.
async fn call(server: &Running, tool: &str, arguments: Value, bearer: Option<&str>, key: Option<&str>) -> Value {
    call_at(server.addr, tool, arguments, bearer, key).await
}

/// [`call`] of the server at `addr`.
async fn call_at(addr: SocketAddr, tool: &str, arguments: Value, bearer: Option<&str>, key: Option<&str>) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let Some(key) = key {
        meta[IDEMPOTENCY_KEY_META] = json!(key);
    }
    let params = json!({"name": tool, "arguments": arguments, "_meta": meta});
    let authorization = bearer.map(|bearer| format!("Bearer {bearer}"));
    let mut headers = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", tool)];
    if let Some(authorization) = &authorization {
        headers.push(("Authorization", authorization));
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let response = tokio::time::timeout(BOUND, post(addr, "/mcp", "127.0.0.1", &headers, &body)).await.unwrap();
    match response.header("content-type") {
        Some("text/event-stream") => response.events().pop().unwrap(),
        _ => serde_json::from_str(&response.body).unwrap_or_else(|_| panic!("{}", response.body)),
    }
}

/// The text of a successful call's result.
fn text(answer: &Value) -> String {
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{answer}")).to_owned()
}

/// A charge of 500 cents for `test`.
fn charge_of(test: &str) -> Value {
    json!({"cents": 500, "test": test})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_retrying_a_keyed_call_through_the_gateway_runs_the_upstreams_effect_once() {
    let up = upstream().await;
    let (imported, gw) = gateway(&up, None).await;
    let arguments = charge_of("retry");
    let first = call(&gw, "gw_charge", arguments.clone(), Some("key-of-ann"), Some("order-1")).await;
    let retry = call(&gw, "gw_charge", arguments, Some("key-of-ann"), Some("order-1")).await;
    assert_eq!(text(&first), "charged 500 cents for retry (run 1)");
    assert_eq!(text(&retry), "charged 500 cents for retry (run 1)");
    assert_eq!(runs_of("retry"), 1);
    gw.stop().await;
    imported.close().await;
    up.stop().await;
}

/// The gateway's own record of the key is gone (a memory store, started again, or another
/// replica without a shared store): the retry reaches the upstream with the same forwarded key,
/// since the gateway's server key is the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_through_a_gateway_started_again_with_its_server_key_runs_the_upstreams_effect_once() {
    let up = upstream().await;
    let (imported, gw) = gateway(&up, Some(5)).await;
    let first = call(&gw, "gw_charge", charge_of("restart"), Some("key-of-ann"), Some("order-2")).await;
    assert_eq!(text(&first), "charged 500 cents for restart (run 1)");
    gw.stop().await;
    imported.close().await;
    let (imported, gw) = gateway(&up, Some(5)).await;
    let retry = call(&gw, "gw_charge", charge_of("restart"), Some("key-of-ann"), Some("order-2")).await;
    assert_eq!(text(&retry), "charged 500 cents for restart (run 1)");
    assert_eq!(runs_of("restart"), 1);
    gw.stop().await;
    imported.close().await;
    up.stop().await;
}

/// Forwarding the client's key as it is would make both calls one at the upstream (the gateway is
/// one principal there), and Bob would read Ann's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_sending_the_same_key_and_arguments_through_the_gateway_each_get_their_own_execution() {
    let up = upstream().await;
    let (imported, gw) = gateway(&up, None).await;
    let ann = call(&gw, "gw_charge", charge_of("two"), Some("key-of-ann"), Some("order-3")).await;
    let bob = call(&gw, "gw_charge", charge_of("two"), Some("key-of-bob"), Some("order-3")).await;
    assert_eq!(text(&ann), "charged 500 cents for two (run 1)");
    assert_eq!(text(&bob), "charged 500 cents for two (run 2)");
    assert_eq!(runs_of("two"), 2);
    gw.stop().await;
    imported.close().await;
    up.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_clients_retry_through_the_gateway_gets_its_own_result() {
    let up = upstream().await;
    let (imported, gw) = gateway(&up, None).await;
    let ann = call(&gw, "gw_charge", charge_of("own"), Some("key-of-ann"), Some("order-4")).await;
    let bob = call(&gw, "gw_charge", charge_of("own"), Some("key-of-bob"), Some("order-4")).await;
    let bob_again = call(&gw, "gw_charge", charge_of("own"), Some("key-of-bob"), Some("order-4")).await;
    let ann_again = call(&gw, "gw_charge", charge_of("own"), Some("key-of-ann"), Some("order-4")).await;
    assert_eq!((text(&ann), text(&ann_again)), (text(&ann), "charged 500 cents for own (run 1)".to_owned()));
    assert_eq!((text(&bob), text(&bob_again)), (text(&bob), "charged 500 cents for own (run 2)".to_owned()));
    assert_eq!(runs_of("own"), 2);
    gw.stop().await;
    imported.close().await;
    up.stop().await;
}

/// A caller of the upstream who learns a client's key (the gateway's principal there is none, as
/// is this caller's) cannot read that client's result with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_never_gets_the_clients_key_as_sent() {
    let up = upstream().await;
    let (imported, gw) = gateway(&up, None).await;
    let through = call(&gw, "gw_charge", charge_of("raw"), Some("key-of-ann"), Some("order-5")).await;
    let direct = call(&up, "charge", charge_of("raw"), None, Some("order-5")).await;
    assert_eq!(text(&through), "charged 500 cents for raw (run 1)");
    assert_eq!(text(&direct), "charged 500 cents for raw (run 2)");
    gw.stop().await;
    imported.close().await;
    up.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_without_a_key_through_the_gateway_run_every_time() {
    let up = upstream().await;
    let (imported, gw) = gateway(&up, None).await;
    let first = call(&gw, "gw_charge", charge_of("keyless"), Some("key-of-ann"), None).await;
    let second = call(&gw, "gw_charge", charge_of("keyless"), Some("key-of-ann"), None).await;
    assert_eq!(text(&first), "charged 500 cents for keyless (run 1)");
    assert_eq!(text(&second), "charged 500 cents for keyless (run 2)");
    gw.stop().await;
    imported.close().await;
    up.stop().await;
}

/// A text and `_meta` of an error result.
fn error_of(answer: &Value) -> (String, Value) {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{answer}")).to_owned();
    (text, answer["result"]["_meta"].clone())
}

/// The upstream is down for the first call (its port refuses connections) and up again for the
/// retry: the gateway's answer to the first call has no outcome, so its key is released, and the
/// retry reaches the upstream, where the charge runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_the_upstream_could_not_be_reached_reaches_it_and_runs_once() {
    let up = upstream().await;
    let addr = up.addr;
    let (imported, gw) = gateway(&up, Some(6)).await;
    up.stop().await;
    // The port stays bound, not listening: connections to it are refused until the upstream is back.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_reuseaddr(true).unwrap();
    socket.bind(addr).unwrap();
    let first = call(&gw, "gw_charge", charge_of("down"), Some("key-of-ann"), Some("order-7")).await;
    let (text_of_first, meta) = error_of(&first);
    // Lost during the call, or no connection opened (as the connection pool met the stopped
    // server): the text names the server either way.
    assert!(
        text_of_first.starts_with("MCP server `up` could not be reached (")
            || text_of_first.starts_with("cannot connect to MCP server `up`: "),
        "{text_of_first}"
    );
    assert_eq!(meta, json!({tool_mcp::UNAVAILABLE_META: true}));
    assert_eq!(runs_of("down"), 0);
    let up = upstream_on(socket.listen(64).unwrap(), true).await;
    let retry = call(&gw, "gw_charge", charge_of("down"), Some("key-of-ann"), Some("order-7")).await;
    let again = call(&gw, "gw_charge", charge_of("down"), Some("key-of-ann"), Some("order-7")).await;
    assert_eq!(text(&retry), "charged 500 cents for down (run 1)");
    assert_eq!(text(&again), "charged 500 cents for down (run 1)");
    assert_eq!(runs_of("down"), 1);
    gw.stop().await;
    imported.close().await;
    up.stop().await;
}

/// Two replicas of a gateway with the same server key but stores of their own: a retry through
/// the second while the first call still runs upstream gets the upstream's refusal, marked as
/// having no outcome; the second replica releases its key, so a later retry through it reaches
/// the upstream and gets the first call's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_refused_upstream_while_the_first_call_runs_is_not_kept_and_a_later_retry_gets_the_result() {
    let up = upstream().await;
    let (imported_a, gw_a) = gateway(&up, Some(7)).await;
    let (imported_b, gw_b) = gateway(&up, Some(7)).await;
    let arguments = json!({"test": "inflight"});
    let first = tokio::spawn({
        let (addr, arguments) = (gw_a.addr, arguments.clone());
        async move { call_at(addr, "gw_hold", arguments, Some("key-of-ann"), Some("order-8")).await }
    });
    tokio::time::timeout(BOUND, HOLD_STARTED.notified()).await.unwrap();
    let during = call(&gw_b, "gw_hold", arguments.clone(), Some("key-of-ann"), Some("order-8")).await;
    HOLD_GATE.add_permits(1);
    let first = tokio::time::timeout(BOUND, first).await.unwrap().unwrap();
    let later = call(&gw_b, "gw_hold", arguments, Some("key-of-ann"), Some("order-8")).await;
    assert_eq!(
        error_of(&during),
        (
            "tool `hold` did not run again: the first call with this idempotency key is still running; retry later \
             with the same key to get its result"
                .to_owned(),
            json!({tool_mcp::UNAVAILABLE_META: true})
        )
    );
    assert_eq!(text(&first), "held for inflight (run 1)");
    assert_eq!(text(&later), "held for inflight (run 1)");
    assert_eq!(runs_of("inflight"), 1);
    for (gw, imported) in [(gw_a, imported_a), (gw_b, imported_b)] {
        gw.stop().await;
        imported.close().await;
    }
    up.stop().await;
}

/// An upstream without idempotency would run a retry that reached it again: the gateway keeps
/// the error of a call that ran upstream and failed, and replays it without calling upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_ran_upstream_and_failed_is_kept_and_replayed_by_the_gateway() {
    let up = upstream_on(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(), false).await;
    let (imported, gw) = gateway(&up, Some(8)).await;
    let first = call(&gw, "gw_decline", json!({"test": "declined"}), Some("key-of-ann"), Some("order-9")).await;
    let retry = call(&gw, "gw_decline", json!({"test": "declined"}), Some("key-of-ann"), Some("order-9")).await;
    assert_eq!(error_of(&first), ("card declined for declined (run 1)".to_owned(), Value::Null));
    assert_eq!(error_of(&retry), ("card declined for declined (run 1)".to_owned(), Value::Null));
    assert_eq!(runs_of("declined"), 1);
    gw.stop().await;
    imported.close().await;
    up.stop().await;
}
