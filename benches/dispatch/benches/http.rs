//! Tool calls over Streamable HTTP: the `tool-mcp` server beside rmcp's own `#[tool_router]`
//! server on `StreamableHttpService`, the same trivial tool, the same load generator, one run.
//!
//! Both servers are tower services served by the same hyper connection loop on a free loopback
//! port, stateless (MCP 2026-07-28: no `initialize`, no session) with plain JSON responses. The
//! load generator is a set of clients, each with its own keep-alive connection (one `reqwest`
//! client each), sending `tools/call` requests one after the other for a fixed time; it reports
//! calls per second over all clients and the p50 and p99 latency of one call, at 1, 16 and 64
//! clients.
//!
//! Head of line: the p50 latency of the same fast call while four long calls (each a
//! `#[tool_runtime::tool(blocking)]` tool sleeping 3 s on the blocking pool) are in flight, beside its p50 on an
//! idle server.
//!
//! Each row measures each server twice for half of `--seconds`, in the order ours, rmcp, rmcp,
//! ours, and reports both halves together.
//!
//! Run: `cargo bench -p tool-benches --features http --bench http` (release profile). Optional
//! arguments: `--seconds N` (measuring time per server and row, default 3), `--clients 1,16,64`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnectionBuilder;
use hyper_util::service::TowerToHyperService;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::tool_router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::net::TcpListener;
use tool_runtime::Registry;

/// The arguments of `add`, for rmcp's side.
#[derive(Debug, Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

/// rmcp's server: the same tool with rmcp's macros.
#[derive(Clone)]
struct RmcpServer;

#[tool_router(server_handler)]
impl RmcpServer {
    #[rmcp::tool(description = "Add two integers.")]
    async fn add(&self, Parameters(args): Parameters<AddArgs>) -> String {
        (args.a + args.b).to_string()
    }
}

/// Add two integers.
#[tool_runtime::tool]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> String {
    (a + b).to_string()
}

/// Wait 3 s on the blocking pool (a long call for the head-of-line row).
#[tool_runtime::tool(blocking)]
fn slow() -> String {
    std::thread::sleep(Duration::from_secs(3));
    "done".to_owned()
}

/// Serves `service` on a free loopback port until the process ends; returns the address.
async fn serve<S, B>(service: S) -> SocketAddr
where
    S: tower_service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free loopback port");
    let address = listener.local_addr().expect("bound");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let service = TowerToHyperService::new(service.clone());
            tokio::spawn(async move {
                let _ =
                    ConnectionBuilder::new(TokioExecutor::new()).serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    address
}

/// The body of a stateless `tools/call` request (MCP 2026-07-28: the protocol version and the
/// client's capabilities travel in every request's `_meta`).
fn call_body(id: u64, name: &str, arguments: &serde_json::Value) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    })
    .to_string()
}

/// One client of the load generator: its own connection.
struct Client {
    http: reqwest::Client,
    url: String,
}

impl Client {
    fn new(address: SocketAddr, path: &str) -> Self {
        let http = reqwest::Client::builder().pool_max_idle_per_host(1).build().expect("a client");
        Self { http, url: format!("http://{address}{path}") }
    }

    /// One `tools/call`; panics unless the response is the expected result (a benchmark of
    /// failing calls would measure nothing).
    async fn call(&self, id: u64, name: &str, arguments: &serde_json::Value, expected: &str) {
        let response = self
            .http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", name)
            .body(call_body(id, name, arguments))
            .send()
            .await
            .expect("the server answers");
        let status = response.status();
        let text = response.text().await.expect("a body");
        assert!(status.is_success() && text.contains(expected), "unexpected answer ({status}): {text}");
    }
}

/// What one row measured: every call's latency over `seconds` of measuring.
struct Row {
    latencies: Vec<Duration>,
    seconds: f64,
}

impl Row {
    /// Two measurements as one: their calls and their measuring time together.
    fn and(mut self, other: Row) -> Row {
        self.latencies.extend(other.latencies);
        self.seconds += other.seconds;
        self
    }

    fn calls_per_second(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let calls = self.latencies.len() as f64;
        calls / self.seconds
    }

    /// The nearest-rank percentile `p` (0 to 1) of the latencies.
    fn percentile(&mut self, p: f64) -> Duration {
        self.latencies.sort_unstable();
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
        let rank = ((p * self.latencies.len() as f64).ceil() as usize).clamp(1, self.latencies.len());
        self.latencies[rank - 1]
    }
}

/// `clients` clients call `add` one call after the other for `seconds` (after a warm-up of
/// 0.5 s that is not counted).
async fn measure(address: SocketAddr, path: &str, clients: usize, seconds: f64) -> Row {
    let arguments = serde_json::json!({"a": 2, "b": 3});
    let warm_up = Duration::from_millis(500);
    let window = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let client = Client::new(address, path);
        let arguments = arguments.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut id = (c as u64) << 32;
            loop {
                let sent = Instant::now();
                if sent.duration_since(start) >= warm_up + window {
                    break;
                }
                id += 1;
                client.call(id, "add", &arguments, "\"5\"").await;
                if sent.duration_since(start) >= warm_up {
                    latencies.push(sent.elapsed());
                }
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("a client task"));
    }
    Row { latencies, seconds }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The command-line options: `--seconds N`, `--clients a,b,c`; cargo's own `--bench` is ignored.
fn options() -> (f64, Vec<usize>) {
    let mut seconds = 3.0;
    let mut clients = vec![1, 16, 64];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => seconds = args.next().and_then(|s| s.parse().ok()).expect("--seconds takes a number"),
            "--clients" => {
                clients = args
                    .next()
                    .map(|s| s.split(',').map(|n| n.parse().expect("--clients takes numbers")).collect())
                    .expect("--clients takes a list")
            }
            _ => {}
        }
    }
    (seconds, clients)
}

fn main() {
    let (seconds, client_counts) = options();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let config = StreamableHttpServerConfig::default().with_json_response(true).with_legacy_session_mode(false);
        let rmcp = StreamableHttpService::new(|| Ok(RmcpServer), Arc::new(LocalSessionManager::default()), config);
        let rmcp_address = serve(rmcp).await;

        let registry = Registry::builder().tool(add::TOOL).tool(slow::TOOL).build().expect("unique names");
        let ours = tool_mcp::McpServer::builder(registry).build().http_service();
        let our_address = serve(ours).await;

        println!("Streamable HTTP, `add` (stateless, JSON responses), {seconds} s per row");
        println!("| clients | ours calls/s | rmcp calls/s | ours/rmcp | ours p50 / p99 (ms) | rmcp p50 / p99 (ms) |");
        println!("|---|---|---|---|---|---|");
        for &clients in &client_counts {
            // Each server measured twice, in the order ours, rmcp, rmcp, ours, so that neither
            // gains from going first (a warmer machine, a quieter neighbour).
            let ours_first = measure(our_address, "/", clients, seconds / 2.0).await;
            let theirs_first = measure(rmcp_address, "/", clients, seconds / 2.0).await;
            let mut theirs = theirs_first.and(measure(rmcp_address, "/", clients, seconds / 2.0).await);
            let mut ours = measure(our_address, "/", clients, seconds / 2.0).await.and(ours_first);
            println!(
                "| {clients} | {:.0} | {:.0} | {:.2} | {:.3} / {:.3} | {:.3} / {:.3} |",
                ours.calls_per_second(),
                theirs.calls_per_second(),
                ours.calls_per_second() / theirs.calls_per_second(),
                ms(ours.percentile(0.50)),
                ms(ours.percentile(0.99)),
                ms(theirs.percentile(0.50)),
                ms(theirs.percentile(0.99)),
            );
        }

        let mut idle = measure(our_address, "/", 1, 1.5).await;
        let long: Vec<_> = (0..4)
            .map(|i| {
                let client = Client::new(our_address, "/");
                tokio::spawn(async move { client.call(1_000 + i, "slow", &serde_json::json!({}), "done").await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut busy = measure(our_address, "/", 1, 1.5).await;
        for call in long {
            call.await.expect("a long call");
        }
        println!();
        println!(
            "Head of line: `add` p50 {:.3} ms idle, {:.3} ms while 4 long calls run: {:+.3} ms",
            ms(idle.percentile(0.50)),
            ms(busy.percentile(0.50)),
            ms(busy.percentile(0.50)) - ms(idle.percentile(0.50))
        );
    });
}
