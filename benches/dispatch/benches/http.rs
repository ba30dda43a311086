//! Tool calls over Streamable HTTP: the `tool-mcp` server beside rmcp's own `#[tool_router]`
//! server on `StreamableHttpService` and beside the floor, the same trivial tool, the same load
//! generator, one run.
//!
//! The floor is the least any server of this call does: a bare service that collects the body,
//! parses the JSON-RPC request with serde_json, checks the method and the tool's name, and answers
//! the same result; no MCP checks, no registry, no decoding beyond serde's. ours/floor says what
//! the framework costs over that, ours/rmcp what it gains over the peer.
//!
//! The three servers are tower services served by the same hyper connection loop on free loopback
//! ports, stateless (MCP 2026-07-28: no `initialize`, no session) with plain JSON responses, in one
//! server process. The load generator runs in processes of its own: a set of clients, each with its
//! own keep-alive connection (one `reqwest` client each), sending `tools/call` requests one after
//! the other for a fixed time; a measurement gives calls per second over all clients and the p50
//! and p99 latency of one call. Where `taskset` is
//! there and the machine has two CPUs or more, the server process is pinned to CPU 0 (its runtime
//! has one worker thread, `--server-threads`) and the load generator to CPU 1, so that the two
//! do not take each other's time slices.
//!
//! One load generator process measures each row (1, 16, 64 clients): its clients hold a
//! connection to each server and measure the three in turn, `--seconds` (default 0.5) each, for
//! `--pairs` rounds (default 20), the order rotating from round to round (ours, rmcp, floor; then
//! rmcp, floor, ours; then floor, ours, rmcp), so that a change of the machine's load between
//! slices hits all alike. Each round gives one ratio ours/rmcp and one ours/floor; the table
//! reports the median of each and the spread of ours/rmcp (lowest and highest), and the calls per
//! second and p50/p99 of all slices of each server together.
//!
//! Head of line: the p50 latency of the same fast call while four long calls (each a
//! `#[tool_runtime::tool]` plain `fn` sleeping 3 s on the blocking pool) are in flight, beside
//! its p50 on an idle server.
//!
//! Run: `cargo bench -p tool-benches --features http --bench http -- --pairs 20 --seconds 0.5`
//! (release profile). Options: `--pairs N` (default 20), `--seconds N` (one slice, default 0.5),
//! `--clients 1,16,64`, `--server-threads N` (default 1).
//!
//! Telemetry: `cargo bench -p tool-benches --features telemetry --bench http -- --telemetry
//! --clients 1,16` compares our server with OpenTelemetry on (a `tracing-opentelemetry` layer
//! at INFO, as `toolbox` installs it, with a batch span exporter to a local sink that drops what
//! it gets, the metrics recorded on a meter provider) with the same server with it off, each in a process of its own, the same way:
//! the ratio on/off per pair.

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

/// The floor server (see the module docs): answers a `tools/call` of `add` and nothing else.
#[derive(Clone, Copy)]
struct Floor;

/// The parts of a `tools/call` request the floor reads.
#[derive(Deserialize)]
struct FloorRequest {
    id: serde_json::Value,
    method: String,
    params: FloorParams,
}

/// The params of [`FloorRequest`].
#[derive(Deserialize)]
struct FloorParams {
    name: String,
    arguments: AddArgs,
}

impl tower_service::Service<http::Request<hyper::body::Incoming>> for Floor {
    type Response = http::Response<String>;
    type Error = Infallible;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<hyper::body::Incoming>) -> Self::Future {
        Box::pin(async move {
            use http_body_util::BodyExt;
            let answer = |status: u16, body: String| {
                let mut response = http::Response::new(body);
                *response.status_mut() = http::StatusCode::from_u16(status).expect("a status");
                response
                    .headers_mut()
                    .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
                Ok(response)
            };
            let Ok(body) = request.into_body().collect().await else { return answer(400, String::new()) };
            let Ok(call) = serde_json::from_slice::<FloorRequest>(&body.to_bytes()) else {
                return answer(400, String::new());
            };
            if call.method != "tools/call" || call.params.name != "add" {
                return answer(400, String::new());
            }
            let sum = (call.params.arguments.a + call.params.arguments.b).to_string();
            let result = serde_json::json!({
                "jsonrpc": "2.0",
                "id": call.id,
                "result": {"content": [{"type": "text", "text": sum}], "isError": false},
            });
            answer(200, result.to_string())
        })
    }
}

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
#[tool_runtime::tool(inline)]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> String {
    (a + b).to_string()
}

/// Wait 3 s on the blocking pool (a long call for the head-of-line row).
#[tool_runtime::tool]
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
    /// Takes `other` into this measurement: its calls and its measuring time.
    fn absorb(&mut self, other: Row) {
        self.latencies.extend(other.latencies);
        self.seconds += other.seconds;
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
/// 0.5 s that is not counted), each on a connection of its own.
async fn measure(address: SocketAddr, path: &str, clients: usize, seconds: f64) -> Row {
    let clients: Vec<Arc<Client>> = (0..clients).map(|_| Arc::new(Client::new(address, path))).collect();
    measure_with(&clients, Duration::from_millis(500), seconds).await
}

/// [`measure`] with clients made already (their connections kept between measurements).
async fn measure_with(clients: &[Arc<Client>], warm_up: Duration, seconds: f64) -> Row {
    let arguments = serde_json::json!({"a": 2, "b": 3});
    let window = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for (c, client) in clients.iter().enumerate() {
        let (client, arguments) = (client.clone(), arguments.clone());
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

/// The environment variable that makes this binary a server process (`serve`) or a load
/// generator (`generate`, `alternate`) of the run that started it.
const ROLE: &str = "TOOL_HTTP_BENCH_ROLE";
/// A load generator's servers (`ours`, and for `alternate` also `rmcp`), client count, seconds
/// (of a slice, for `alternate`), pairs of slices and number of long calls.
const OURS: &str = "TOOL_HTTP_BENCH_OURS";
const RMCP: &str = "TOOL_HTTP_BENCH_RMCP";
const FLOOR: &str = "TOOL_HTTP_BENCH_FLOOR";
const CLIENTS: &str = "TOOL_HTTP_BENCH_CLIENTS";
const SECONDS: &str = "TOOL_HTTP_BENCH_SECONDS";
const PAIRS: &str = "TOOL_HTTP_BENCH_PAIRS";
const LONG: &str = "TOOL_HTTP_BENCH_LONG";
/// The server's worker threads.
const THREADS: &str = "TOOL_HTTP_BENCH_THREADS";

fn env<T: std::str::FromStr>(name: &str) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name} is not set"))
}

/// The command-line options: `--pairs N`, `--seconds N`, `--clients a,b,c`, `--server-threads N`;
/// cargo's own `--bench` is ignored.
struct Options {
    pairs: usize,
    seconds: f64,
    clients: Vec<usize>,
    server_threads: usize,
}

fn options() -> Options {
    let mut options = Options { pairs: 20, seconds: 0.5, clients: vec![1, 16, 64], server_threads: 1 };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} takes a value"));
        match arg.as_str() {
            "--pairs" => options.pairs = value().parse().expect("--pairs takes a number"),
            "--seconds" => options.seconds = value().parse().expect("--seconds takes a number"),
            "--server-threads" => options.server_threads = value().parse().expect("--server-threads takes a number"),
            "--clients" => {
                options.clients = value().split(',').map(|n| n.parse().expect("--clients takes numbers")).collect();
            }
            _ => {}
        }
    }
    options
}

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("serve") => serve_both(env(THREADS)),
        #[cfg(feature = "telemetry")]
        Ok("serve-ours") => telemetry::serve_ours(env(THREADS), env(telemetry::ON)),
        #[cfg(feature = "telemetry")]
        _ if std::env::args().any(|a| a == "--telemetry") => telemetry::compare(&options()),
        Ok("generate") => generate(env(OURS), env(CLIENTS), env(SECONDS), env(LONG)),
        Ok("alternate") => alternate(&servers(), env(CLIENTS), env(SECONDS), env(PAIRS)),
        _ => compare(&options()),
    }
}

/// The server process: the three servers on one runtime of `threads` workers; prints their
/// addresses (`ours ADDR`, `rmcp ADDR`, `floor ADDR`) and serves until its standard input ends (the run that
/// started it closes it, or ends).
fn serve_both(threads: usize) {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let config = StreamableHttpServerConfig::default().with_json_response(true).with_legacy_session_mode(false);
        let rmcp = StreamableHttpService::new(|| Ok(RmcpServer), Arc::new(LocalSessionManager::default()), config);
        let rmcp_address = serve(rmcp).await;
        let registry = Registry::builder().tool(add::TOOL).tool(slow::TOOL).build().expect("unique names");
        let ours = tool_mcp::McpServer::builder(registry).build().http_service();
        let our_address = serve(ours).await;
        let floor_address = serve(Floor).await;
        println!("ours {our_address}\nrmcp {rmcp_address}\nfloor {floor_address}");
        let stdin = tokio::task::spawn_blocking(|| std::io::copy(&mut std::io::stdin(), &mut std::io::sink()));
        let _ = stdin.await;
    });
}

/// Prints a row's result as `calls seconds p50_ns p99_ns`.
fn print_row(mut row: Row) {
    let (p50, p99) = (row.percentile(0.50), row.percentile(0.99));
    println!("{} {} {} {}", row.latencies.len(), row.seconds, p50.as_nanos(), p99.as_nanos());
}

/// A load generator process for the head-of-line figure: `clients` clients call `add` on `address`
/// for `seconds`, while `long` calls of `slow` are in flight (started 200 ms before); prints the
/// row ([`print_row`]).
fn generate(address: SocketAddr, clients: usize, seconds: f64, long: u64) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let long: Vec<_> = (0..long)
            .map(|i| {
                let client = Client::new(address, "/");
                tokio::spawn(async move { client.call(1_000 + i, "slow", &serde_json::json!({}), "done").await })
            })
            .collect();
        if !long.is_empty() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let row = measure(address, "/", clients, seconds).await;
        for call in long {
            call.await.expect("a long call");
        }
        print_row(row);
    });
}

/// The servers a load generator measures: `OURS`, `RMCP` (the second server: rmcp's, or ours with
/// telemetry off) and, when set, `FLOOR`.
fn servers() -> Vec<SocketAddr> {
    let mut servers = vec![env(OURS), env(RMCP)];
    if std::env::var_os(FLOOR).is_some() {
        servers.push(env(FLOOR));
    }
    servers
}

/// A load generator process for one row of the table: `clients` clients on each server (ours
/// first), their connections kept, measure them in turn for `seconds` each, `rounds` times, the
/// order rotating by one each round (after a warm-up of 0.5 s on each). Prints the ratios of ours
/// to the second server for each round on one line (`ratios r1 r2 ...`), those of ours to the
/// third (the floor) on the next when there is one (`floor_ratios ...`), then each server's row of
/// all its slices ([`print_row`]).
fn alternate(servers: &[SocketAddr], clients: usize, seconds: f64, rounds: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let connect = |address| (0..clients).map(|_| Arc::new(Client::new(address, "/"))).collect::<Vec<_>>();
        let connected: Vec<_> = servers.iter().map(|&address| connect(address)).collect();
        let warm_up = Duration::from_millis(500);
        let mut all = Vec::new();
        for server in &connected {
            all.push(measure_with(server, warm_up, 0.0).await);
        }
        let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); servers.len() - 1];
        for round in 0..rounds {
            let mut slices: Vec<Option<Row>> = (0..servers.len()).map(|_| None).collect();
            for step in 0..servers.len() {
                let server = (round + step) % servers.len();
                slices[server] = Some(measure_with(&connected[server], Duration::ZERO, seconds).await);
            }
            let slices: Vec<Row> = slices.into_iter().map(|slice| slice.expect("every server measured")).collect();
            for (other, ratio) in slices[1..].iter().zip(&mut ratios) {
                ratio.push(slices[0].calls_per_second() / other.calls_per_second());
            }
            for (total, slice) in all.iter_mut().zip(slices) {
                total.absorb(slice);
            }
        }
        let line = |values: &[f64]| values.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
        println!("ratios {}", line(&ratios[0]));
        if let Some(floor) = ratios.get(1) {
            println!("floor_ratios {}", line(floor));
        }
        for row in all {
            print_row(row);
        }
    });
}

/// What one load generator row measured.
#[derive(Clone, Copy)]
struct Run {
    calls_per_second: f64,
    p50: Duration,
    p99: Duration,
}

impl Run {
    /// A row as [`print_row`] prints it.
    fn parse(line: &str) -> Self {
        let fields: Vec<f64> = line.split_whitespace().map(|f| f.parse().expect("a number")).collect();
        let [calls, seconds, p50, p99] = fields[..] else { panic!("unexpected load generator output: {line}") };
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let nanos = |n: f64| Duration::from_nanos(n as u64);
        Self { calls_per_second: calls / seconds, p50: nanos(p50), p99: nanos(p99) }
    }
}

/// How the run pins its processes: `taskset -c CPU` where it can, else nothing.
struct Pinning {
    taskset: bool,
}

impl Pinning {
    fn detect() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let taskset = cpus >= 2
            && std::process::Command::new("taskset")
                .arg("-V")
                .stdout(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
        Self { taskset }
    }

    /// This binary as a process of `role`, on `cpu` when pinned.
    fn command(&self, cpu: usize, role: &str) -> std::process::Command {
        let exe = std::env::current_exe().expect("this binary");
        let mut command = if self.taskset {
            let mut taskset = std::process::Command::new("taskset");
            taskset.arg("-c").arg(cpu.to_string()).arg(exe);
            taskset
        } else {
            std::process::Command::new(exe)
        };
        command.env(ROLE, role);
        command
    }

    /// Runs a load generator of `role` on CPU 1 with `vars`; its output lines.
    fn generator(&self, role: &str, vars: &[(&str, String)]) -> Vec<String> {
        let mut command = self.command(1, role);
        command.envs(vars.iter().map(|(k, v)| (*k, v))).stderr(std::process::Stdio::inherit());
        let output = command.output().expect("a load generator");
        assert!(output.status.success(), "the load generator failed");
        String::from_utf8(output.stdout).expect("text").lines().map(str::to_owned).collect()
    }
}

/// The median of `values` (the mean of the two middle ones for an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 { values[n / 2] } else { f64::midpoint(values[n / 2 - 1], values[n / 2]) }
}

/// The numbers of a load generator's line that starts with `prefix` (`ratios r1 r2 ...`).
fn numbers(line: &str, prefix: &str) -> Vec<f64> {
    line.strip_prefix(prefix)
        .unwrap_or_else(|| panic!("not {prefix}: {line}"))
        .split_whitespace()
        .map(|r| r.parse().expect("a number"))
        .collect()
}

/// The lowest and the highest of `values`.
fn spread(values: &[f64]) -> (f64, f64) {
    values.iter().fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)))
}

/// Prints one row of a table from the output of an `alternate` load generator: the ratios of its
/// pairs (first server / second), then each server's run. (The telemetry comparison's table.)
#[cfg(feature = "telemetry")]
fn print_pair_row(clients: usize, out: &[String]) {
    let ratios = numbers(&out[0], "ratios ");
    let (a, b) = (Run::parse(&out[1]), Run::parse(&out[2]));
    let (low, high) = spread(&ratios);
    println!(
        "| {clients} | {:.0} | {:.0} | {:.3} | {low:.3} - {high:.3} | {:.3} / {:.3} | {:.3} / {:.3} |",
        a.calls_per_second,
        b.calls_per_second,
        median(ratios),
        ms(a.p50),
        ms(a.p99),
        ms(b.p50),
        ms(b.p99),
    );
}

/// Starts the server process, runs a load generator per row and prints the table.
fn compare(options: &Options) {
    let pinning = Pinning::detect();
    let mut server = pinning
        .command(0, "serve")
        .env(THREADS, options.server_threads.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the server process");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(server.stdout.take().expect("its output")));
    let mut address = |name: &str| -> SocketAddr {
        let line = lines.next().expect("an address line").expect("text");
        line.strip_prefix(name).and_then(|a| a.trim().parse().ok()).unwrap_or_else(|| panic!("not {name}: {line}"))
    };
    let (ours, rmcp, floor) = (address("ours"), address("rmcp"), address("floor"));
    let Options { pairs, seconds, .. } = *options;
    println!(
        "Streamable HTTP, `add` (stateless, JSON responses): per row {pairs} rounds of {seconds} s on each server, \
         {}",
        if pinning.taskset {
            format!("server process on CPU 0 ({} worker thread(s)), load generator on CPU 1", options.server_threads)
        } else {
            "not pinned (no `taskset` or one CPU)".to_owned()
        }
    );
    println!(
        "| clients | ours calls/s | rmcp calls/s | floor calls/s | ours/rmcp (median of {pairs} rounds) | lowest - \
         highest | ours/floor (median) | ours p50 / p99 (ms) | rmcp p50 / p99 (ms) | floor p50 / p99 (ms) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &clients in &options.clients {
        let vars = [
            (OURS, ours.to_string()),
            (RMCP, rmcp.to_string()),
            (FLOOR, floor.to_string()),
            (CLIENTS, clients.to_string()),
            (SECONDS, seconds.to_string()),
            (PAIRS, pairs.to_string()),
        ];
        let out = pinning.generator("alternate", &vars);
        let (ratios, floor_ratios) = (numbers(&out[0], "ratios "), numbers(&out[1], "floor_ratios "));
        let (o, r, f) = (Run::parse(&out[2]), Run::parse(&out[3]), Run::parse(&out[4]));
        let (low, high) = spread(&ratios);
        println!(
            "| {clients} | {:.0} | {:.0} | {:.0} | {:.3} | {low:.3} - {high:.3} | {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | \
             {:.3} / {:.3} |",
            o.calls_per_second,
            r.calls_per_second,
            f.calls_per_second,
            median(ratios),
            median(floor_ratios),
            ms(o.p50),
            ms(o.p99),
            ms(r.p50),
            ms(r.p99),
            ms(f.p50),
            ms(f.p99),
        );
    }
    let head_of_line = |long: u64| {
        let vars = [
            (OURS, ours.to_string()),
            (CLIENTS, "1".to_owned()),
            (SECONDS, "1.5".to_owned()),
            (LONG, long.to_string()),
        ];
        Run::parse(&pinning.generator("generate", &vars)[0])
    };
    let (idle, busy) = (head_of_line(0), head_of_line(4));
    println!();
    println!(
        "Head of line: `add` p50 {:.3} ms idle, {:.3} ms while 4 long calls run: {:+.3} ms",
        ms(idle.p50),
        ms(busy.p50),
        ms(busy.p50) - ms(idle.p50)
    );
    // Its input closed, the server process ends; it is waited for.
    drop(server.stdin.take());
    let _ = server.wait();
}

/// Our server with OpenTelemetry on beside off (`--telemetry`).
#[cfg(feature = "telemetry")]
mod telemetry {
    use super::{Options, Pinning};
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::trace::{SpanData, SpanExporter};
    use std::net::SocketAddr;
    use tracing_subscriber::layer::SubscriberExt;

    /// `1`: the server process installs telemetry.
    pub(super) const ON: &str = "TOOL_HTTP_BENCH_TELEMETRY";

    /// A span exporter that drops what it gets (the local sink).
    #[derive(Debug)]
    struct Sink;

    impl SpanExporter for Sink {
        fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
            drop(batch);
            std::future::ready(Ok(()))
        }
    }

    /// A server process of ours alone, telemetry `on` (1) or off (0); prints `ours ADDR`.
    pub(super) fn serve_ours(threads: usize, on: u8) {
        let _providers = (on == 1).then(|| {
            let spans = opentelemetry_sdk::trace::SdkTracerProvider::builder().with_batch_exporter(Sink).build();
            // INFO, as `toolbox` installs it: the spans of calls and requests, not rmcp's debug events.
            let layer = tracing_subscriber::Layer::with_filter(
                tool_mcp::telemetry::otel_layer(spans.tracer("bench")),
                tracing_subscriber::filter::LevelFilter::INFO,
            );
            tracing_subscriber::util::SubscriberInitExt::init(tracing_subscriber::registry().with(layer));
            let metrics = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
                .with_reader(
                    opentelemetry_sdk::metrics::PeriodicReader::builder(
                        opentelemetry_sdk::metrics::InMemoryMetricExporter::default(),
                    )
                    .build(),
                )
                .build();
            opentelemetry::global::set_meter_provider(metrics.clone());
            (spans, metrics)
        });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let registry = tool_runtime::Registry::builder()
                .tool(super::add::TOOL)
                .tool(super::slow::TOOL)
                .build()
                .expect("unique");
            let address = super::serve(tool_mcp::McpServer::builder(registry).build().http_service()).await;
            println!("ours {address}");
            let stdin = tokio::task::spawn_blocking(|| std::io::copy(&mut std::io::stdin(), &mut std::io::sink()));
            let _ = stdin.await;
        });
    }

    /// Starts the two server processes, runs a load generator per row and prints the table.
    pub(super) fn compare(options: &Options) {
        let pinning = Pinning::detect();
        let start = |on: u8| {
            let mut server = pinning
                .command(0, "serve-ours")
                .env(super::THREADS, options.server_threads.to_string())
                .env(ON, on.to_string())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("a server process");
            let mut lines = std::io::BufRead::lines(std::io::BufReader::new(server.stdout.take().expect("its output")));
            let line = lines.next().expect("an address line").expect("text");
            let address: SocketAddr =
                line.strip_prefix("ours").and_then(|a| a.trim().parse().ok()).unwrap_or_else(|| panic!("{line}"));
            (server, address)
        };
        let ((mut on_server, on), (mut off_server, off)) = (start(1), start(0));
        let Options { pairs, seconds, .. } = *options;
        println!("Streamable HTTP, `add`, telemetry on beside off: per row {pairs} pairs of {seconds} s on each");
        println!(
            "| clients | on calls/s | off calls/s | on/off (median of {pairs} pairs) | lowest - highest | on p50 / p99 (ms) | off p50 / p99 (ms) |"
        );
        println!("|---|---|---|---|---|---|---|");
        for &clients in &options.clients {
            let vars = [
                (super::OURS, on.to_string()),
                (super::RMCP, off.to_string()),
                (super::CLIENTS, clients.to_string()),
                (super::SECONDS, seconds.to_string()),
                (super::PAIRS, pairs.to_string()),
            ];
            super::print_pair_row(clients, &pinning.generator("alternate", &vars));
        }
        for server in [&mut on_server, &mut off_server] {
            drop(server.stdin.take());
            let _ = server.wait();
        }
    }
}
