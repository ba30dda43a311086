//! What one served `tools/call`'s telemetry costs at the least, piece by piece, in CPU time
//! (`cargo bench -p tool-benches --features telemetry --bench span_floor`).
//!
//! The Streamable HTTP bench (`--bench http -- --telemetry`) compares whole calls with telemetry on
//! and off; this one takes the telemetry of one call apart, each piece in a process of its own
//! (pinned to CPU 0 with `taskset` where there is one), measured as the CPU time of every thread of
//! that process (`/proc/self/task/*/schedstat`, nanoseconds) over `ITERATIONS` rounds after a
//! warm-up, so the batch exporter's thread is counted too:
//!
//! - `none`: the call's SERVER span as `tool-mcp` makes it (the same `tracing` macro, field names
//!   and values), entered and left twice, its end recorded in one `record_all`, dropped, with no
//!   `tracing` subscriber: what telemetry off pays;
//! - `registry`: the same under `tracing-subscriber`'s registry with a layer that does nothing, at
//!   INFO: the cost of `tracing` itself (a slab slot, enter and exit, the per-layer filter);
//! - `otel`: the same under `tool_mcp::telemetry::otel_layer` at INFO into a batch span exporter to
//!   a sink that drops what it gets (as the HTTP bench's `on` server);
//! - `sdk`: no `tracing`: the OpenTelemetry SDK alone makes the same span (kind SERVER, the same
//!   eleven attributes given as `&'static str` values, three more set at the end) and ends it into
//!   the same batch exporter: what any bridge from `tracing` must still pay after `tracing`;
//! - `metrics`: the two histograms a `tools/call` records (`gen_ai.execute_tool.duration` and
//!   `mcp.server.operation.duration`, the conventions' buckets and attributes).
//!
//! With `TOOL_SPAN_FLOOR_POLLUTE_KIB` set, each round also touches that many KiB of other memory,
//! as the rest of a served call does, so the telemetry's data is no longer always in the CPU's
//! caches; each piece is then read as what it adds to `none` (which measures that other work).
//!
//! It prints each piece's nanoseconds a call and, given the CPU a whole call costs with telemetry
//! off (`TOOL_SPAN_FLOOR_OFF_NS`, default 25,000: the HTTP bench's `off` server at 16 clients,
//! BENCHMARKS.md "Sixth look"), what the 0.9x bound leaves for all of telemetry.

use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::{Span as _, SpanKind, Tracer as _, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use std::time::Instant;
use tracing_subscriber::layer::SubscriberExt;

/// Rounds measured per piece.
const ITERATIONS: u64 = 200_000;
/// Rounds run before measuring.
const WARM_UP: u64 = 20_000;
/// The environment variable that makes this process measure one piece.
const PIECE: &str = "TOOL_SPAN_FLOOR_PIECE";
/// The environment variable with the CPU nanoseconds a whole call costs with telemetry off.
const OFF_NS: &str = "TOOL_SPAN_FLOOR_OFF_NS";
/// The environment variable with the KiB of other memory each round touches (default 0).
const POLLUTE_KIB: &str = "TOOL_SPAN_FLOOR_POLLUTE_KIB";
/// The pieces, in the order printed.
const PIECES: [&str; 5] = ["none", "registry", "otel", "sdk", "metrics"];

/// A span exporter that drops what it gets (the local sink).
#[derive(Debug)]
struct Sink;

impl SpanExporter for Sink {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        drop(batch);
        std::future::ready(Ok(()))
    }
}

/// A layer that does nothing (the `registry` piece).
struct Nothing;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Nothing {}

/// The CPU nanoseconds every thread of this process has run.
fn process_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|text| text.split_whitespace().next().and_then(|ns| ns.parse::<u64>().ok()))
        .sum()
}

/// One served `tools/call`'s span through `tracing`, as `tool-mcp`'s `server_span` makes it and
/// the registry and the request record its end.
fn traced_call(id: u64) {
    let span = tracing::info_span!(
        parent: None,
        "mcp_request",
        otel.name = %format_args!("tools/call {}", "add"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = "tools/call",
        jsonrpc.request.id = id.to_string(),
        network.transport = "tcp",
        mcp.protocol.version = "2025-11-25",
        gen_ai.tool.name = "add",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.type = "function",
        gen_ai.tool.description = "Adds two integers",
        gen_ai.tool.call.id = tracing::field::Empty,
        gen_ai.prompt.name = tracing::field::Empty,
        error.type = tracing::field::Empty,
        rpc.response.status_code = tracing::field::Empty,
        gen_ai.tool.call.arguments = tracing::field::Empty,
        gen_ai.tool.call.result = tracing::field::Empty,
        outcome = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    );
    // Two polls of the request's future.
    drop(span.enter());
    drop(span.enter());
    span.record("gen_ai.tool.call.id", "call-1").record("outcome", "ok").record("duration_ms", 0_u64);
}

/// The same span made by the OpenTelemetry SDK alone.
fn sdk_call(tracer: &opentelemetry_sdk::trace::SdkTracer, id: u64) {
    let mut span = tracer
        .span_builder("tools/call add")
        .with_kind(SpanKind::Server)
        .with_attributes([
            KeyValue::new("mcp.method.name", "tools/call"),
            KeyValue::new("jsonrpc.request.id", id.to_string()),
            KeyValue::new("network.transport", "tcp"),
            KeyValue::new("mcp.protocol.version", "2025-11-25"),
            KeyValue::new("gen_ai.tool.name", "add"),
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.type", "function"),
            KeyValue::new("gen_ai.tool.description", "Adds two integers"),
        ])
        .start(tracer);
    span.set_attribute(KeyValue::new("gen_ai.tool.call.id", "call-1"));
    span.set_attribute(KeyValue::new("outcome", "ok"));
    span.set_attribute(KeyValue::new("duration_ms", 0_i64));
    span.end();
}

/// A batch span exporter to the sink.
fn tracer_provider() -> opentelemetry_sdk::trace::SdkTracerProvider {
    opentelemetry_sdk::trace::SdkTracerProvider::builder().with_batch_exporter(Sink).build()
}

/// Measures `piece` in this process and prints `PIECE NS` (nanoseconds a round).
fn measure(piece: &str) {
    let mut round: Box<dyn FnMut(u64)> = match piece {
        "none" => Box::new(traced_call),
        "registry" => {
            let layer = tracing_subscriber::Layer::with_filter(Nothing, tracing_subscriber::filter::LevelFilter::INFO);
            tracing_subscriber::util::SubscriberInitExt::init(tracing_subscriber::registry().with(layer));
            Box::new(traced_call)
        }
        "otel" => {
            let provider = tracer_provider();
            let layer = tracing_subscriber::Layer::with_filter(
                tool_mcp::telemetry::otel_layer(provider.tracer("span_floor")),
                tracing_subscriber::filter::LevelFilter::INFO,
            );
            tracing_subscriber::util::SubscriberInitExt::init(tracing_subscriber::registry().with(layer));
            std::mem::forget(provider);
            Box::new(traced_call)
        }
        "sdk" => {
            let provider = tracer_provider();
            let tracer = provider.tracer("span_floor");
            std::mem::forget(provider);
            Box::new(move |id| sdk_call(&tracer, id))
        }
        "metrics" => {
            let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
                .with_reader(
                    opentelemetry_sdk::metrics::PeriodicReader::builder(
                        opentelemetry_sdk::metrics::InMemoryMetricExporter::default(),
                    )
                    .build(),
                )
                .build();
            let meter = provider.meter("span_floor");
            std::mem::forget(provider);
            let tool = meter
                .f64_histogram("gen_ai.execute_tool.duration")
                .with_unit("s")
                .with_boundaries(vec![
                    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
                ])
                .build();
            let operation = meter
                .f64_histogram("mcp.server.operation.duration")
                .with_unit("s")
                .with_boundaries(vec![0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0])
                .build();
            Box::new(move |_| {
                let started = Instant::now();
                tool.record(
                    started.elapsed().as_secs_f64(),
                    &[
                        KeyValue::new("gen_ai.operation.name", "execute_tool"),
                        KeyValue::new("gen_ai.tool.name", "add".to_owned()),
                        KeyValue::new("gen_ai.tool.type", "function"),
                    ],
                );
                operation.record(
                    started.elapsed().as_secs_f64(),
                    &[
                        KeyValue::new("mcp.method.name", "tools/call"),
                        KeyValue::new("network.transport", "tcp"),
                        KeyValue::new("mcp.protocol.version", "2025-11-25"),
                        KeyValue::new("gen_ai.tool.name", "add".to_owned()),
                    ],
                );
            })
        }
        other => panic!("no piece {other}: one of {PIECES:?}"),
    };
    // Between rounds, the rest of a served call: its HTTP, JSON-RPC and tool work touches this
    // much memory, which takes the telemetry's data out of the CPU's caches as a real server does.
    let pollute_kib: usize = std::env::var(POLLUTE_KIB).ok().and_then(|kib| kib.parse().ok()).unwrap_or(0);
    let mut rest = vec![0u8; pollute_kib * 1024];
    let mut other_work = |id: u64| {
        for line in rest.chunks_mut(64) {
            line[0] = line[0].wrapping_add(id as u8);
        }
    };
    for id in 0..WARM_UP {
        round(id);
        other_work(id);
    }
    let before = process_cpu_ns();
    for id in 0..ITERATIONS {
        round(id);
        other_work(id);
    }
    std::hint::black_box(&rest);
    // The batch exporter's thread drains what the rounds queued within its delay (5 s by default);
    // the rounds above are measured with what it has done so far, which is the steady state's share.
    let spent = process_cpu_ns() - before;
    println!("{piece} {}", spent / ITERATIONS);
}

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    if let Ok(piece) = std::env::var(PIECE) {
        measure(&piece);
        return;
    }
    let off_ns: f64 = std::env::var(OFF_NS).ok().and_then(|ns| ns.parse().ok()).unwrap_or(25_000.0);
    let me = std::env::current_exe().expect("this binary");
    let taskset = std::process::Command::new("taskset").arg("--version").output().is_ok()
        && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let mut ns = std::collections::BTreeMap::new();
    for piece in PIECES {
        let mut command = if taskset {
            let mut command = std::process::Command::new("taskset");
            command.args(["-c", "0"]).arg(&me);
            command
        } else {
            std::process::Command::new(&me)
        };
        let out = command.env(PIECE, piece).output().expect("a measuring process");
        let text = String::from_utf8_lossy(&out.stdout);
        let value: f64 = text
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{piece}: {text} {}", String::from_utf8_lossy(&out.stderr)));
        ns.insert(piece, value);
    }
    let budget = off_ns / 0.9 - off_ns;
    println!("One served `tools/call`'s telemetry, CPU ns a call ({ITERATIONS} rounds a piece, pinned: {taskset})");
    println!("| piece | ns a call |");
    println!("|---|---|");
    for piece in PIECES {
        println!("| {piece} | {:.0} |", ns[piece]);
    }
    // Each piece beyond `none` is what it adds to the same rounds (with the same other memory).
    let added = |piece: &str| ns[piece] - ns["none"];
    println!();
    println!("whole call with telemetry off: {off_ns:.0} ns; the 0.9x bound leaves {budget:.0} ns for all telemetry");
    println!(
        "as shipped: otel {:.0} + metrics {:.0} = {:.0} ns; the floor of any bridge after `tracing`: \
         registry {:.0} + sdk {:.0} + metrics {:.0} = {:.0} ns",
        added("otel"),
        added("metrics"),
        added("otel") + added("metrics"),
        added("registry"),
        added("sdk"),
        added("metrics"),
        added("registry") + added("sdk") + added("metrics")
    );
}
