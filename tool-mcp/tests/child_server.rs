//! Tests that need a process of their own. An imported server that is this binary run again
//! (`TOOL_MCP_CHILD_SERVER` says what it does): one exits during a call, one before it answers the
//! initialization; the errors say what happened and what to do, in plain words. And a call its
//! client cancels, with the process's global tracing subscriber recording what rmcp logs: no
//! warning. And approvals through a stdio import: the child's request reaches the host, and its
//! token goes back with the call. And idempotency keys through a stdio import: the key forwarded
//! is the same for a retry and another for another principal.
//!
//! `harness = false` (Cargo.toml): `main` runs the tests one after the other, and run as a child
//! writes nothing on its standard output but MCP.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;
use tool_mcp::McpServer;
use tool_mcp::import::McpImport;
use tool_runtime::{Registry, ToolCall, ToolContext, tool};

use common::{Piped, RawClient};

/// What the child does: `serve` (the tools below, over standard input and output) or `exit` (at
/// once, before the initialization).
const CHILD: &str = "TOOL_MCP_CHILD_SERVER";

/// Stop the server process in the middle of the call.
#[tool]
fn exit_now() -> String {
    std::process::exit(3)
}

static STARTED: Notify = Notify::const_new();

/// Wait until the call is cancelled.
#[tool]
async fn wait_for_cancel(ctx: &ToolContext) -> String {
    STARTED.notify_one();
    ctx.cancellation().cancelled().await;
    "cancelled".to_owned()
}

/// Wipe a cache (an effect that needs the user's approval).
#[tool(tags(confirm))]
fn wipe_cache(
    /// The cache.
    name: String,
) -> String {
    format!("wiped {name}")
}

/// How many times `charge` ran in this process.
static CHARGES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Charge an amount (an effect that must happen once per key).
#[tool]
fn charge(
    /// The amount in cents.
    cents: u64,
) -> String {
    let n = CHARGES.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    format!("charged {cents} cents (run {n})")
}

/// What the global subscriber wrote, one line an event.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    /// Forgets what was written (what the tests before logged).
    fn clear(&self) {
        self.0.lock().unwrap().clear();
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn exe() -> String {
    std::env::current_exe().unwrap().to_str().unwrap().to_owned()
}

fn main() {
    match std::env::var(CHILD).as_deref() {
        Ok("serve") => {
            let registry = Registry::builder().tool(exit_now::TOOL).build().unwrap();
            runtime().block_on(McpServer::builder(registry).build().serve_stdio()).unwrap();
            return;
        }
        Ok("approve") => {
            let tokens = tool_runtime::ApprovalTokens::new(tool_runtime::idempotency::MemoryIdempotencyStore::new());
            let registry = Registry::builder().tool(wipe_cache::TOOL).approval_tokens(tokens).build().unwrap();
            runtime().block_on(McpServer::builder(registry).build().serve_stdio()).unwrap();
            return;
        }
        Ok("charge") => {
            let store = tool_runtime::idempotency::MemoryIdempotencyStore::new();
            let idempotency = tool_runtime::idempotency::Idempotency::new(store);
            let registry = Registry::builder().tool(charge::TOOL).idempotency(idempotency).build().unwrap();
            runtime().block_on(McpServer::builder(registry).build().serve_stdio()).unwrap();
            return;
        }
        Ok("exit") => return,
        Ok(other) => panic!("unknown `{CHILD}` value `{other}`"),
        Err(_) => {}
    }
    let log = Log::default();
    tracing_subscriber::fmt()
        .with_writer({
            let log = log.clone();
            move || log.clone()
        })
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .init();
    let run = |name: &str, test: &dyn Fn()| {
        test();
        println!("test {name} ... ok");
    };
    run("a_server_that_exits_during_a_call_is_said_to_have_closed_its_connection", &exits_during_a_call);
    run("a_server_that_exits_before_the_initialization_is_said_to_have_exited", &exits_before_the_initialization);
    run("a_call_the_client_cancels_logs_no_warning", &|| cancelled_without_warning(&log));
    run("a_stdio_servers_approval_reaches_the_host_and_its_token_goes_back_with_the_call", &approves_over_stdio);
    run("a_keyed_call_through_a_stdio_import_runs_once_per_key_and_principal", &keyed_calls_over_stdio);
}

/// A gateway importing a stdio server whose registry runs a keyed call once per key: a retry by
/// the same principal gets the first result; another principal's call with the same key and
/// arguments runs on its own; a call without a key runs every time.
fn keyed_calls_over_stdio() {
    runtime().block_on(async {
        let imported =
            McpImport::stdio("child", exe(), Vec::<String>::new()).env(CHILD, "charge").connect().await.unwrap();
        let registry = imported.add_to(Registry::builder()).unwrap().build().unwrap();
        let (ann, bob) =
            (ToolContext::builder().principal("ann").build(), ToolContext::builder().principal("bob").build());
        let call = |key: Option<&str>| {
            let call = ToolCall::new("c1", "charge", r#"{"cents":500}"#);
            match key {
                Some(key) => call.with_idempotency_key(key),
                None => call,
            }
        };
        let mut texts = Vec::new();
        for (key, ctx) in [(Some("order-1"), &ann), (Some("order-1"), &ann), (Some("order-1"), &bob), (None, &ann)] {
            let message = registry.call(&call(key), ctx).await;
            assert!(!message.is_error, "{}", message.text());
            texts.push(message.text().into_owned());
        }
        assert_eq!(
            texts,
            [
                "charged 500 cents (run 1)",
                "charged 500 cents (run 1)",
                "charged 500 cents (run 2)",
                "charged 500 cents (run 3)"
            ]
        );
        imported.close().await;
    });
}

fn approves_over_stdio() {
    runtime().block_on(async {
        let imported =
            McpImport::stdio("child", exe(), Vec::<String>::new()).env(CHILD, "approve").connect().await.unwrap();
        let registry = imported.add_to(Registry::builder()).unwrap().build().unwrap();
        let call = ToolCall::new("c1", "wipe_cache", r#"{"name":"thumbs"}"#);
        let refused = registry.call(&call, &ToolContext::new()).await;
        let request = refused.approval.clone().expect("the child's approval request, for the host");
        assert_eq!(
            (request.tool.as_str(), request.preview.as_str()),
            ("wipe_cache", "call `wipe_cache` with\n\"name\": \"thumbs\"")
        );
        assert!(!refused.text().contains(&request.token));
        let approved = registry.call(&call.clone().with_approval_token(&request.token), &ToolContext::new()).await;
        assert_eq!((approved.is_error, approved.text().into_owned()), (false, "wiped thumbs".to_owned()));
        let replayed = registry.call(&call.with_approval_token(&request.token), &ToolContext::new()).await;
        assert!(replayed.text().contains("its approval token was used already"), "{}", replayed.text());
        imported.close().await;
    });
}

fn exits_during_a_call() {
    runtime().block_on(async {
        let imported = McpImport::stdio("dying", exe(), Vec::<String>::new()).env(CHILD, "serve").connect().await.unwrap();
        let registry = imported.add_to(Registry::builder()).unwrap().build().unwrap();
        let message = registry.call(&ToolCall::new("c1", "exit_now", "{}"), &ToolContext::new()).await;
        assert!(message.is_error);
        assert_eq!(
            message.text(),
            "MCP server `dying` closed its connection during the call of `exit_now`; the call may or may not have taken effect there; the next call starts it again (if it keeps stopping, look at its log: what it writes to standard error)"
        );
        assert_eq!(message.error_kind, Some(tool_runtime::ToolErrorKind::Unavailable));
        imported.close().await;
    });
}

fn exits_before_the_initialization() {
    runtime().block_on(async {
        let error = McpImport::stdio("gone", exe(), Vec::<String>::new()).env(CHILD, "exit").connect().await.unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "cannot connect to MCP server `gone`: `{}` exited, or closed its standard input or output, before it answered the MCP initialization; check that it serves MCP over standard input and output, and look at what it writes to standard error",
                exe()
            )
        );
    });
}

fn cancelled_without_warning(log: &Log) {
    log.clear();
    runtime().block_on(async {
        let server = McpServer::builder(Registry::builder().tool(wait_for_cancel::TOOL).build().unwrap()).build();
        let (piped, client_read, client_write) = Piped::start(server);
        let mut client = RawClient::initialize(client_read, client_write).await;
        client.call(1, "wait_for_cancel", json!({}), false).await;
        STARTED.notified().await;
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 1, "reason": "the user pressed stop"}}))
            .await;
        // rmcp logs this once the handler has returned: the call's end is in the log by then.
        let dropped = "dropping response for cancelled request";
        for _ in 0..1000 {
            if log.text().contains(dropped) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The cancelled call gets no response: the next message answers the ping.
        client.ping(2).await;
        assert_eq!(client.recv().await, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
        let text = log.text();
        assert!(text.contains(dropped), "{text}");
        let warnings: Vec<&str> = text.lines().filter(|line| line.contains(" WARN ")).collect();
        assert_eq!(warnings, Vec::<&str>::new());
        piped.stop().await;
    });
}
