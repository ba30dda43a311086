//! A plain `fn` tool that computes for 2 s, written without any option, served over MCP on a
//! multi-thread runtime of 2 workers and of 1: while it computes, `ping` and a call of a fast
//! tool are answered (before the busy call's response, while the function is still computing),
//! and the busy call's progress notifications arrive as they are reported, not in one burst at
//! its end. The function runs on tokio's blocking pool, not on the worker that polls the call; run
//! inline (`#[tool(inline)]`) on one worker, it would hold up every one of these.
//!
//! Nothing is timed: the tool computes for 2 s and then on until the test has seen what it waits
//! for (at most 20 s), so that a loaded machine cannot end the call before the pings are sent;
//! every read is bounded by 10 s.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tool_mcp::McpServer;
use tool_runtime::{Registry, ToolContext, tool};

use common::{RawClient, label};

type Client = RawClient<ReadHalf<DuplexStream>, WriteHalf<DuplexStream>>;

/// Per test (the tool's `run` argument): the tool started computing, the test has seen what it
/// waits for, the tool finished computing.
static STARTED: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];
static RELEASED: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];
static FINISHED: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];

/// How many progress notifications the test waits for while the tool computes.
const PROGRESS_SEEN: usize = 3;

/// Computes on the thread it runs on for 2 s, and on until the test of `run` releases it (at
/// most 20 s), reporting progress every 100 ms.
#[tool]
fn crunch(
    /// Which test runs it: 0 or 1.
    run: usize,
    ctx: &ToolContext,
) -> String {
    STARTED[run].store(true, Ordering::SeqCst);
    let start = Instant::now();
    let mut state: u64 = 1;
    let mut reported = 0;
    loop {
        let elapsed = start.elapsed();
        if (elapsed >= Duration::from_secs(2) && RELEASED[run].load(Ordering::SeqCst))
            || elapsed >= Duration::from_secs(20)
        {
            break;
        }
        for _ in 0..10_000 {
            state = std::hint::black_box(state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
        let tenths = u64::try_from(start.elapsed().as_millis() / 100).unwrap_or(u64::MAX);
        if tenths > reported {
            reported = tenths;
            ctx.progress(tenths, None, "tenths of a second computed");
        }
    }
    FINISHED[run].store(true, Ordering::SeqCst);
    "crunched".to_owned()
}

/// Echoes a word: a fast tool, run inline on the worker that polls its call.
#[tool(inline)]
fn echo(
    /// The word.
    word: String,
) -> String {
    word
}

/// Serves a registry of `crunch` and `echo` on an in-memory connection and returns an
/// initialized client.
async fn connect() -> Client {
    let registry = Registry::builder().tool(crunch::TOOL).tool(echo::TOOL).build().unwrap();
    let server = McpServer::builder(registry).build();
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move { server.serve(server_io).await.unwrap().waiting().await });
    let (reader, writer) = tokio::io::split(client_io);
    RawClient::initialize(reader, writer).await
}

/// What the client saw of the test `run`: the ids of the responses in the order they arrived,
/// each with whether the tool was still computing then; the progress notifications, counted by
/// the same.
#[derive(Default)]
struct Seen {
    responses: Vec<(u64, bool, Value)>,
    progress_while_computing: usize,
    progress_after: usize,
}

impl Seen {
    /// Reads one message (bounded by 10 s) and records it.
    async fn read(&mut self, client: &mut Client, run: usize, waiting_for: &str) {
        let message = tokio::time::timeout(Duration::from_secs(10), client.recv())
            .await
            .unwrap_or_else(|_| panic!("nothing arrived within 10 s while waiting for {waiting_for}"));
        let computing = !FINISHED[run].load(Ordering::SeqCst);
        match label(&message).as_str() {
            "notifications/progress" if computing => self.progress_while_computing += 1,
            "notifications/progress" => self.progress_after += 1,
            _ if message["id"].is_u64() => self.responses.push((message["id"].as_u64().unwrap(), computing, message)),
            other => panic!("unexpected message {other}: {message}"),
        }
    }

    fn has_response(&self, id: u64) -> bool {
        self.responses.iter().any(|(seen, ..)| *seen == id)
    }

    /// Reads until the response to `id`.
    async fn until_response(&mut self, client: &mut Client, run: usize, id: u64) {
        while !self.has_response(id) {
            self.read(client, run, &format!("the response to {id}")).await;
        }
    }
}

/// Runs the scenario of the test `run` and returns what the client saw.
async fn scenario(run: usize) -> Seen {
    let mut client = connect().await;
    let mut seen = Seen::default();
    client.call(10, "crunch", json!({ "run": run }), true).await;
    // Bounded: 500 tries, 10 ms apart, for the tool to start.
    for _ in 0..500 {
        if STARTED[run].load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(STARTED[run].load(Ordering::SeqCst), "the tool did not start within 500 tries");
    for id in 11..=13 {
        client.ping(id).await;
        seen.until_response(&mut client, run, id).await;
    }
    client.call(20, "echo", json!({"word": "quick"}), false).await;
    seen.until_response(&mut client, run, 20).await;
    while seen.progress_while_computing + seen.progress_after < PROGRESS_SEEN && !seen.has_response(10) {
        seen.read(&mut client, run, "progress of the busy call").await;
    }
    RELEASED[run].store(true, Ordering::SeqCst);
    seen.until_response(&mut client, run, 10).await;
    seen
}

/// Asserts what `scenario` gives on any runtime.
fn assert_responsive(seen: &Seen) {
    let order: Vec<(u64, bool)> = seen.responses.iter().map(|(id, computing, _)| (*id, *computing)).collect();
    // Every ping and the fast call answered while the tool still computed, the busy call last.
    assert_eq!(order, [(11, true), (12, true), (13, true), (20, true), (10, false)]);
    let texts: Vec<&Value> = seen.responses.iter().map(|(_, _, message)| &message["result"]).collect();
    assert_eq!(
        texts,
        [
            &json!({}),
            &json!({}),
            &json!({}),
            &json!({"content": [{"type": "text", "text": "quick"}], "isError": false}),
            &json!({"content": [{"type": "text", "text": "crunched"}], "isError": false}),
        ]
    );
    assert!(
        seen.progress_while_computing >= PROGRESS_SEEN,
        "{} progress notifications arrived while the tool computed, {} after it finished",
        seen.progress_while_computing,
        seen.progress_after
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_two_workers_a_computing_plain_fn_holds_up_neither_ping_nor_a_fast_call_nor_its_progress() {
    assert_responsive(&scenario(0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn on_one_worker_a_computing_plain_fn_holds_up_neither_ping_nor_a_fast_call_nor_its_progress() {
    assert_responsive(&scenario(1).await);
}
