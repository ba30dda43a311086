//! What serving tells OpenTelemetry (`tool_mcp::telemetry`, feature `otel`): the SERVER span of
//! each request by the MCP conventions, its parent from `params._meta`, its link to the HTTP
//! request's context, and `mcp.server.operation.duration`, read back through the SDK's in-memory
//! span and metric exporters.
//!
//! A binary of its own: it installs a global `tracing` subscriber (the HTTP server runs on a
//! multi-threaded runtime) and the global meter provider. Each test calls tools of its own names
//! and finds its spans by them.

#[path = "common/mod.rs"]
mod common;

use std::sync::OnceLock;

use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId, TracerProvider};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, HistogramDataPoint, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use test_support::log::Log;
use tool_mcp::McpServer;
use tool_mcp::telemetry::OPERATION_DURATION_BUCKETS;
use tool_runtime::{Registry, tool};
use tracing_subscriber::layer::SubscriberExt;

use common::{RawClient, Running, post};

/// The exporters every test reads.
struct Otel {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    meters: SdkMeterProvider,
}

fn otel() -> &'static Otel {
    static OTEL: OnceLock<Otel> = OnceLock::new();
    OTEL.get_or_init(|| {
        let spans = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
        let layer = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("test"))
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false);
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).unwrap();
        let metrics = InMemoryMetricExporter::default();
        let meters = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(metrics.clone()).build()).build();
        opentelemetry::global::set_meter_provider(meters.clone());
        Otel { spans, metrics, meters }
    })
}

impl Otel {
    /// The finished spans of the trace of the span named `name` (exactly one such span).
    fn trace_of(&self, name: &str) -> (SpanData, Vec<SpanData>) {
        let spans = self.spans.get_finished_spans().unwrap();
        let named: Vec<&SpanData> = spans.iter().filter(|s| s.name == name).collect();
        assert_eq!(named.len(), 1, "spans named {name}: {named:?}");
        let found = named[0].clone();
        let trace =
            spans.iter().filter(|s| s.span_context.trace_id() == found.span_context.trace_id()).cloned().collect();
        (found, trace)
    }

    /// The data points of the histogram `name` whose `gen_ai.tool.name` is `tool`.
    fn durations_of(&self, name: &str, tool: &str) -> Vec<HistogramDataPoint<f64>> {
        self.meters.force_flush().unwrap();
        let exported = self.metrics.get_finished_metrics().unwrap();
        let mut points = Vec::new();
        for scope in exported.last().expect("one export").scope_metrics() {
            for metric in scope.metrics().filter(|m| m.name() == name) {
                assert_eq!(metric.unit(), "s");
                let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() else {
                    panic!("{name} is not a histogram of f64");
                };
                points.extend(
                    histogram
                        .data_points()
                        .filter(|p| {
                            p.attributes().any(|kv| kv.key.as_str() == "gen_ai.tool.name" && kv.value.as_str() == tool)
                        })
                        .cloned(),
                );
            }
        }
        points
    }
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

fn attribute_map(span: &SpanData, keys: &[&str]) -> Vec<(String, Option<String>)> {
    keys.iter().map(|k| ((*k).to_owned(), attribute(span, k))).collect()
}

fn pairs(pairs: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.map(str::to_owned))).collect()
}

/// Says hello.
#[tool]
fn hello_pipe() -> String {
    "hello".to_owned()
}

/// Says hello over HTTP.
#[tool]
fn hello_http() -> String {
    "hello".to_owned()
}

/// Says hello, with a trace from `_meta`.
#[tool]
fn hello_traced() -> String {
    "hello".to_owned()
}

/// Says hello, with a bad `traceparent`.
#[tool]
fn hello_forged() -> String {
    "hello".to_owned()
}

/// Greets someone.
#[tool]
fn greet_captured(name: String) -> String {
    format!("hello {name}")
}

/// Fails.
#[tool]
fn fails_for_metrics() -> Result<String, String> {
    Err("no".to_owned())
}

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT: &str = "b7ad6b7169203331";
const AMBIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const AMBIENT_PARENT: &str = "00f067aa0ba902b7";

fn traceparent(trace: &str, parent: &str) -> String {
    format!("00-{trace}-{parent}-01")
}

fn piped(registry: Registry) -> (common::Piped, tokio::io::DuplexStream, tokio::io::DuplexStream) {
    common::Piped::start(McpServer::builder(registry).build())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_call_on_a_pipe_is_one_server_span_named_by_the_tool_that_is_also_the_tools_execution_span() {
    let otel = otel();
    let (piped, read, write) = piped(Registry::builder().tool(hello_pipe::TOOL).build().unwrap());
    let mut client = RawClient::initialize(read, write).await;
    client.call(7, "hello_pipe", json!({}), false).await;
    let answer = client.recv().await;
    assert_eq!(answer["result"]["content"][0]["text"], "hello");
    piped.stop().await;
    drop(client);

    let (server, trace) = otel.trace_of("tools/call hello_pipe");
    assert_eq!(server.span_kind, SpanKind::Server);
    assert_eq!(server.status, Status::Unset);
    assert_eq!(
        attribute_map(
            &server,
            &[
                "mcp.method.name",
                "jsonrpc.request.id",
                "network.transport",
                "gen_ai.tool.name",
                "gen_ai.operation.name",
                "gen_ai.tool.type",
                "gen_ai.tool.description",
                "outcome",
                "error.type",
                "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result",
                "mcp.session.id",
                "session_id",
            ]
        ),
        pairs(&[
            ("mcp.method.name", Some("tools/call")),
            ("jsonrpc.request.id", Some("7")),
            ("network.transport", Some("pipe")),
            ("gen_ai.tool.name", Some("hello_pipe")),
            ("gen_ai.operation.name", Some("execute_tool")),
            ("gen_ai.tool.type", Some("function")),
            ("gen_ai.tool.description", Some("Says hello.")),
            ("outcome", Some("ok")),
            ("error.type", None),
            ("gen_ai.tool.call.arguments", None),
            ("gen_ai.tool.call.result", None),
            ("mcp.session.id", None),
            ("session_id", None),
        ])
    );
    assert!(attribute(&server, "mcp.protocol.version").is_some_and(|v| v.starts_with("20")));
    // The id the tool saw (`mcp_`, the process's tag, the sequence number).
    let id = attribute(&server, "gen_ai.tool.call.id").expect("the call's id");
    assert!(id.starts_with("mcp_") && id.split('_').count() == 3, "{id}");
    assert!(attribute(&server, "duration_ms").is_some());
    let names: Vec<(&str, SpanKind)> = trace.iter().map(|s| (&*s.name, s.span_kind.clone())).collect();
    assert_eq!(names, [("tools/call hello_pipe", SpanKind::Server)], "one span a call, no `execute_tool` beside it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_call_parents_on_the_traceparent_in_meta_and_links_the_http_requests_context() {
    let otel = otel();
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(hello_traced::TOOL).build().unwrap()).build()).await;
    let body = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "hello_traced", "arguments": {}, "_meta": {"traceparent": traceparent(TRACE, PARENT)}},
    });
    let ambient = traceparent(AMBIENT_TRACE, AMBIENT_PARENT);
    let response = post(running.addr, "/mcp", "127.0.0.1", &[("traceparent", &ambient)], &body).await;
    assert_eq!(response.status, 200, "{}", response.body);
    running.stop().await;

    let (server, _) = otel.trace_of("tools/call hello_traced");
    assert_eq!(server.span_context.trace_id(), TraceId::from_hex(TRACE).unwrap());
    assert_eq!(server.parent_span_id, SpanId::from_hex(PARENT).unwrap());
    assert!(server.parent_span_is_remote);
    assert_eq!(attribute(&server, "network.transport").as_deref(), Some("tcp"));
    let links: Vec<(TraceId, SpanId)> =
        server.links.iter().map(|l| (l.span_context.trace_id(), l.span_context.span_id())).collect();
    assert_eq!(links, [(TraceId::from_hex(AMBIENT_TRACE).unwrap(), SpanId::from_hex(AMBIENT_PARENT).unwrap())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_traceparent_in_meta_is_ignored_and_the_span_starts_a_trace_of_its_own() {
    let otel = otel();
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(hello_forged::TOOL).build().unwrap()).build()).await;
    let body = json!({
        "jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "hello_forged", "arguments": {}, "_meta": {"traceparent": "00-zz-'; DROP TABLE spans-01", "baggage": 7}},
    });
    let response = post(running.addr, "/mcp", "127.0.0.1", &[], &body).await;
    assert_eq!(response.status, 200, "{}", response.body);
    running.stop().await;

    let (server, _) = otel.trace_of("tools/call hello_forged");
    assert_eq!(server.parent_span_id, SpanId::INVALID);
    assert!(server.span_context.trace_id() != TraceId::INVALID);
    assert!(server.links.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_content_capture_a_served_call_has_its_arguments_and_result_on_its_server_span() {
    let otel = otel();
    let registry = Registry::builder().tool(greet_captured::TOOL).capture_content(true).build().unwrap();
    let (piped, read, write) = piped(registry);
    let mut client = RawClient::initialize(read, write).await;
    client.call(3, "greet_captured", json!({"name": "Ana"}), false).await;
    assert_eq!(client.recv().await["result"]["content"][0]["text"], "hello Ana");
    piped.stop().await;
    drop(client);

    let (server, trace) = otel.trace_of("tools/call greet_captured");
    assert_eq!(
        attribute_map(&server, &["gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "outcome"]),
        pairs(&[
            ("gen_ai.tool.call.arguments", Some(r#"{"name":"Ana"}"#)),
            ("gen_ai.tool.call.result", Some("hello Ana")),
            ("outcome", Some("ok")),
        ])
    );
    assert_eq!(trace.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_with_is_error_is_error_type_tool_error_with_status_error() {
    let otel = otel();
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(fails_for_metrics::TOOL).build().unwrap()).build())
            .await;
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "fails_for_metrics", "arguments": {}}});
    let response = post(running.addr, "/mcp", "127.0.0.1", &[], &body).await;
    let answer: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(answer["result"]["isError"], true);
    running.stop().await;

    let (server, _) = otel.trace_of("tools/call fails_for_metrics");
    assert_eq!(attribute(&server, "error.type").as_deref(), Some("tool_error"));
    // The MCP layer's view of the failure, once: the registry leaves a host's span's failure to it.
    assert_eq!(server.attributes.iter().filter(|kv| kv.key.as_str() == "error.type").count(), 1);
    assert_eq!(attribute(&server, "outcome").as_deref(), Some("error"));
    assert_eq!(attribute(&server, "rpc.response.status_code"), None);
    assert_eq!(server.status, Status::error(""));

    let points = otel.durations_of("mcp.server.operation.duration", "fails_for_metrics");
    assert_eq!(points.len(), 1);
    assert_eq!(points[0].count(), 1);
    assert_eq!(points[0].bounds().collect::<Vec<_>>(), OPERATION_DURATION_BUCKETS);
    let mut attributes: Vec<(String, String)> =
        points[0].attributes().map(|kv| (kv.key.to_string(), kv.value.to_string())).collect();
    attributes.sort();
    let version = attributes.iter().find(|(k, _)| k == "mcp.protocol.version").map(|(_, v)| v.clone());
    let mut expected = vec![
        ("error.type".to_owned(), "tool_error".to_owned()),
        ("gen_ai.tool.name".to_owned(), "fails_for_metrics".to_owned()),
        ("mcp.method.name".to_owned(), "tools/call".to_owned()),
        ("network.transport".to_owned(), "tcp".to_owned()),
    ];
    if let Some(version) = version {
        expected.push(("mcp.protocol.version".to_owned(), version));
    }
    expected.sort();
    assert_eq!(attributes, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_tool_is_error_type_32602_a_clients_error_named_by_the_method_alone() {
    let otel = otel();
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(hello_http::TOOL).build().unwrap()).build()).await;
    let name = "made_up_tool_for_telemetry";
    let body =
        json!({"jsonrpc": "2.0", "id": "unknown-1", "method": "tools/call", "params": {"name": name, "arguments": {}}});
    let response = post(running.addr, "/mcp", "127.0.0.1", &[], &body).await;
    let answer: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(answer["error"]["code"], -32602);
    running.stop().await;

    let spans = otel.spans.get_finished_spans().unwrap();
    let server = spans
        .iter()
        .find(|s| attribute(s, "jsonrpc.request.id").as_deref() == Some("unknown-1"))
        .expect("the request's span");
    assert_eq!(server.name, "tools/call");
    assert_eq!(attribute(server, "error.type").as_deref(), Some("-32602"));
    assert_eq!(attribute(server, "rpc.response.status_code").as_deref(), Some("-32602"));
    assert_eq!(attribute(server, "gen_ai.tool.name"), None);
    assert_eq!(server.status, Status::Unset);
    assert!(!spans.iter().any(|s| s.name.contains(name)), "a made-up name became a span name");
}

/// Says hello from the upstream of a gateway.
#[tool]
fn hello_upstream() -> String {
    "hello from upstream".to_owned()
}

#[cfg(feature = "client")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_call_is_one_trace_from_the_callers_traceparent_through_the_upstream() {
    use tool_mcp::import::McpImport;

    let otel = otel();
    let upstream =
        Running::start(McpServer::builder(Registry::builder().tool(hello_upstream::TOOL).build().unwrap()).build())
            .await;
    let imported =
        McpImport::http("up", format!("http://{}/mcp", upstream.addr)).prefix("gw_").connect().await.unwrap();
    let registry = imported.add_to(Registry::builder()).unwrap().build().unwrap();
    let gateway = Running::start(McpServer::builder(registry).build()).await;
    const GATEWAY_TRACE: &str = "5bf92f3577b34da6a3ce929d0e0e4736";
    let body = json!({
        "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "gw_hello_upstream", "arguments": {}, "_meta": {"traceparent": traceparent(GATEWAY_TRACE, PARENT)}},
    });
    let response = post(gateway.addr, "/mcp", "127.0.0.1", &[], &body).await;
    let answer: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "hello from upstream");
    gateway.stop().await;
    imported.close().await;
    upstream.stop().await;

    let (gateway_server, trace) = otel.trace_of("tools/call gw_hello_upstream");
    assert_eq!(gateway_server.span_context.trace_id(), TraceId::from_hex(GATEWAY_TRACE).unwrap());
    assert_eq!(gateway_server.parent_span_id, SpanId::from_hex(PARENT).unwrap());
    let upstream_server = trace
        .iter()
        .find(|s| s.name == "tools/call hello_upstream" && s.span_kind == SpanKind::Server)
        .expect("the upstream's SERVER span is in the caller's trace");
    let client = trace
        .iter()
        .find(|s| s.name == "tools/call hello_upstream" && s.span_kind == SpanKind::Client)
        .expect("the gateway's CLIENT span is in the caller's trace");
    // Each side's SERVER span is its tool's execution span: no `execute_tool` span beside it.
    assert_eq!(attribute(&gateway_server, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
    assert_eq!(attribute(upstream_server, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
    assert_eq!(client.parent_span_id, gateway_server.span_context.span_id());
    assert_eq!(upstream_server.parent_span_id, client.span_context.span_id());
    assert_eq!(attribute(client, "network.transport").as_deref(), Some("tcp"));
    assert_eq!(attribute(client, "server.address").as_deref(), Some("127.0.0.1"));
    assert_eq!(attribute(client, "gen_ai.tool.name").as_deref(), Some("hello_upstream"));
    assert_eq!(trace.len(), 3, "{:?}", trace.iter().map(|s| &s.name).collect::<Vec<_>>());

    let points = otel.durations_of("mcp.client.operation.duration", "hello_upstream");
    assert_eq!(points.len(), 1);
    assert_eq!(points[0].count(), 1);
    assert_eq!(points[0].bounds().collect::<Vec<_>>(), OPERATION_DURATION_BUCKETS);
    let mut attributes: Vec<(String, String)> =
        points[0].attributes().map(|kv| (kv.key.to_string(), kv.value.to_string())).collect();
    attributes.sort();
    assert_eq!(
        attributes,
        [
            ("gen_ai.tool.name".to_owned(), "hello_upstream".to_owned()),
            ("mcp.method.name".to_owned(), "tools/call".to_owned()),
            ("network.transport".to_owned(), "tcp".to_owned()),
        ]
    );
}

/// Says hello as a task.
#[tool(tags(task))]
fn task_hello() -> String {
    "hello from a task".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_run_is_a_root_span_linked_to_the_request_that_created_it() {
    let otel = otel();
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(task_hello::TOOL).build().unwrap()).build()).await;
    const TASK_TRACE: &str = "6bf92f3577b34da6a3ce929d0e0e4736";
    let body = json!({
        "jsonrpc": "2.0", "id": 11, "method": "tools/call",
        "params": {"name": "task_hello", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
            "traceparent": traceparent(TASK_TRACE, PARENT),
        }},
    });
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "task_hello")];
    let response = post(running.addr, "/mcp", "127.0.0.1", &headers, &body).await;
    // A plain JSON answer, or, when the task finished first and its notification went ahead of
    // the answer, an event stream whose message of id 11 is the answer.
    let answer: Value = if response.header("content-type") == Some("text/event-stream") {
        response.events().into_iter().find(|event| event["id"] == 11).expect("the answer among the events")
    } else {
        serde_json::from_str(&response.body)
            .unwrap_or_else(|e| panic!("{e}: {} {:?} {}", response.status, response.headers, response.body))
    };
    assert_eq!(answer["result"]["resultType"], "task", "{answer}");
    // The run ends on its own; its span is exported when it does (500 looks, 20 ms apart).
    let mut run = None;
    for _ in 0..500 {
        let spans = otel.spans.get_finished_spans().unwrap();
        run = spans.into_iter().find(|s| s.name == "task_run task_hello");
        if run.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    running.stop().await;

    let run = run.expect("the task's run span");
    let (request, _) = otel.trace_of("tools/call task_hello");
    assert_eq!(request.span_kind, SpanKind::Server);
    assert_eq!(request.span_context.trace_id(), TraceId::from_hex(TASK_TRACE).unwrap());
    assert_eq!(attribute(&request, "mcp.protocol.version").as_deref(), Some("2026-07-28"));
    assert_eq!(run.span_kind, SpanKind::Internal);
    assert_eq!(run.parent_span_id, SpanId::INVALID);
    let links: Vec<(TraceId, SpanId)> =
        run.links.iter().map(|l| (l.span_context.trace_id(), l.span_context.span_id())).collect();
    assert_eq!(links, [(request.span_context.trace_id(), request.span_context.span_id())]);
    let (tool, _) = otel.trace_of("execute_tool task_hello");
    assert_eq!(tool.parent_span_id, run.span_context.span_id());
}

/// Says hello to an import's listing.
#[tool]
fn hello_listed() -> String {
    "hello".to_owned()
}

/// The finished spans whose parent is `parent`, as (name, kind), sorted.
fn children_of(parent: &SpanData) -> Vec<(String, SpanKind)> {
    let mut children: Vec<(String, SpanKind)> = otel()
        .spans
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.parent_span_id == parent.span_context.span_id())
        .map(|s| (s.name.to_string(), s.span_kind))
        .collect();
    children.sort_by(|a, b| a.0.cmp(&b.0));
    children
}

/// The one finished span named `name` whose parent is `parent`.
fn child_named(parent: &SpanData, name: &str) -> SpanData {
    let spans: Vec<SpanData> = otel()
        .spans
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.name == name && s.parent_span_id == parent.span_context.span_id())
        .collect();
    assert_eq!(spans.len(), 1, "{name} under {}: {spans:?}", parent.name);
    spans.into_iter().next().unwrap()
}

#[cfg(feature = "client")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_import_discovers_and_lists_in_client_spans_whose_context_the_upstream_continues() {
    use tool_mcp::import::McpImport;
    use tracing::Instrument;

    let otel = otel();
    let upstream =
        Running::start(McpServer::builder(Registry::builder().tool(hello_listed::TOOL).build().unwrap()).build()).await;
    let imported = McpImport::http("up", format!("http://{}/mcp", upstream.addr))
        .connect()
        .instrument(tracing::info_span!("connect_listed_http"))
        .await
        .unwrap();
    let port = upstream.addr.port().to_string();
    imported.close().await;
    upstream.stop().await;

    let (parent, _) = otel.trace_of("connect_listed_http");
    assert_eq!(
        children_of(&parent),
        [("server/discover".to_owned(), SpanKind::Client), ("tools/list".to_owned(), SpanKind::Client)]
    );
    let discover = child_named(&parent, "server/discover");
    let list = child_named(&parent, "tools/list");
    for client in [&discover, &list] {
        assert_eq!(client.status, Status::Unset);
        assert_eq!(
            attribute_map(
                client,
                &["network.transport", "server.address", "server.port", "gen_ai.tool.name", "error.type"]
            ),
            pairs(&[
                ("network.transport", Some("tcp")),
                ("server.address", Some("127.0.0.1")),
                ("server.port", Some(&port)),
                ("gen_ai.tool.name", None),
                ("error.type", None),
            ])
        );
    }
    assert_eq!(attribute(&discover, "mcp.method.name").as_deref(), Some("server/discover"));
    assert_eq!(attribute(&list, "mcp.method.name").as_deref(), Some("tools/list"));
    // The upstream's SERVER spans of the handshake and the listing continue the CLIENT spans'
    // contexts: the handshake's went in the `_meta` rmcp wrote.
    assert_eq!(children_of(&discover), [("server/discover".to_owned(), SpanKind::Server)]);
    assert_eq!(children_of(&list), [("tools/list".to_owned(), SpanKind::Server)]);
    assert_eq!(child_named(&list, "tools/list").span_context.trace_id(), list.span_context.trace_id());
}

/// A stdio MCP server of the standard library only: it writes every message it reads, one a line,
/// to the file of its first argument, answers `initialize` and `tools/list` (no tools), and ends
/// when its standard input closes.
const RECORDING_SERVER: &str = r#"
import json, sys
log = open(sys.argv[1], "a")
for line in sys.stdin:
    log.write(line); log.flush()
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "recording", "version": "1"}}
        reply = {"result": result}
    elif message["method"] == "tools/list":
        reply = {"result": {"tools": []}}
    else:
        reply = {"error": {"code": -32601, "message": "no"}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}) + "\n"); sys.stdout.flush()
"#;

#[cfg(feature = "client")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_import_initializes_and_lists_in_client_spans_whose_context_is_in_meta() {
    use tool_mcp::import::McpImport;
    use tracing::Instrument;

    let otel = otel();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let imported =
        McpImport::stdio("rec", "python3", ["-c".to_owned(), RECORDING_SERVER.to_owned(), log.display().to_string()])
            .connect()
            .instrument(tracing::info_span!("connect_recording_stdio"))
            .await
            .unwrap();
    imported.close().await;

    let (parent, _) = otel.trace_of("connect_recording_stdio");
    assert_eq!(
        children_of(&parent),
        [("initialize".to_owned(), SpanKind::Client), ("tools/list".to_owned(), SpanKind::Client)]
    );
    let initialize = child_named(&parent, "initialize");
    let list = child_named(&parent, "tools/list");
    for (client, method) in [(&initialize, "initialize"), (&list, "tools/list")] {
        assert_eq!(
            attribute_map(client, &["mcp.method.name", "network.transport", "server.address", "error.type"]),
            pairs(&[
                ("mcp.method.name", Some(method)),
                ("network.transport", Some("pipe")),
                ("server.address", None),
                ("error.type", None)
            ])
        );
    }
    let received: Vec<Value> =
        std::fs::read_to_string(&log).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let traceparent_of = |method: &str| {
        let requests: Vec<&Value> = received.iter().filter(|m| m["method"] == method).collect();
        assert_eq!(requests.len(), 1, "{method}: {received:?}");
        requests[0]["params"]["_meta"]["traceparent"].clone()
    };
    let expected =
        |span: &SpanData| json!(format!("00-{}-{}-01", span.span_context.trace_id(), span.span_context.span_id()));
    assert_eq!(traceparent_of("initialize"), expected(&initialize));
    assert_eq!(traceparent_of("tools/list"), expected(&list));
}

/// The one finished span whose `jsonrpc.request.id` is `id`.
fn span_of_request(id: &str) -> SpanData {
    let spans: Vec<SpanData> = otel()
        .spans
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| attribute(s, "jsonrpc.request.id").as_deref() == Some(id))
        .collect();
    assert_eq!(spans.len(), 1, "spans of request {id}: {spans:?}");
    spans.into_iter().next().unwrap()
}

/// The attributes of the measurements of `mcp.server.operation.duration` with `error.type`
/// `error`, each with its count.
fn refusals_measured(error: &str) -> Vec<(Vec<(String, String)>, u64)> {
    let otel = otel();
    otel.meters.force_flush().unwrap();
    let exported = otel.metrics.get_finished_metrics().unwrap();
    let mut found = Vec::new();
    for scope in exported.last().expect("one export").scope_metrics() {
        for metric in scope.metrics().filter(|m| m.name() == "mcp.server.operation.duration") {
            let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() else { panic!() };
            for point in histogram.data_points() {
                let mut attributes: Vec<(String, String)> =
                    point.attributes().map(|kv| (kv.key.to_string(), kv.value.to_string())).collect();
                attributes.sort();
                if attributes.iter().any(|(k, v)| k == "error.type" && v == error) {
                    found.push((attributes, point.count()));
                }
            }
        }
    }
    found
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

const REFUSED_KEYS: [&str; 5] =
    ["mcp.method.name", "network.transport", "error.type", "rpc.response.status_code", "gen_ai.tool.name"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_method_mcp_does_not_name_is_a_server_span_named_other_with_error_type_32601() {
    otel();
    let (piped, read, write) = piped(Registry::builder().build().unwrap());
    let mut client = RawClient::initialize(read, write).await;
    client.send(json!({"jsonrpc": "2.0", "id": "refused-pipe-1", "method": "tools/destroy_everything"})).await;
    let answer = client.recv().await;
    assert_eq!(answer["error"]["code"], -32601);
    piped.stop().await;
    drop(client);

    let span = span_of_request("refused-pipe-1");
    assert_eq!((&*span.name, span.span_kind.clone(), span.status.clone()), ("_OTHER", SpanKind::Server, Status::Unset));
    assert_eq!(
        attribute_map(&span, &REFUSED_KEYS),
        pairs(&[
            ("mcp.method.name", Some("_OTHER")),
            ("network.transport", Some("pipe")),
            ("error.type", Some("-32601")),
            ("rpc.response.status_code", Some("-32601")),
            ("gen_ai.tool.name", None),
        ])
    );
    let measured = refusals_measured("-32601");
    assert!(
        measured.iter().any(|(attributes, _)| attributes
            .iter()
            .filter(|(k, _)| k != "mcp.protocol.version")
            .cloned()
            .collect::<Vec<_>>()
            == owned(&[("error.type", "-32601"), ("mcp.method.name", "_OTHER"), ("network.transport", "pipe")])),
        "{measured:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_the_transport_check_refuses_on_a_pipe_is_a_root_server_span_with_its_json_rpc_code() {
    otel();
    let (piped, read, write) = piped(Registry::builder().build().unwrap());
    let mut client = RawClient::initialize(read, write).await;
    client.send(json!({"jsonrpc": "1.0", "id": "refused-pipe-2", "method": "tools/list"})).await;
    let answer = client.recv().await;
    assert_eq!(answer["error"]["code"], -32600);
    piped.stop().await;
    drop(client);

    let span = span_of_request("refused-pipe-2");
    assert_eq!((&*span.name, span.span_kind.clone(), span.status.clone()), ("_OTHER", SpanKind::Server, Status::Unset));
    assert_eq!(span.parent_span_id, SpanId::INVALID);
    assert_eq!(
        attribute_map(&span, &REFUSED_KEYS),
        pairs(&[
            ("mcp.method.name", Some("_OTHER")),
            ("network.transport", Some("pipe")),
            ("error.type", Some("-32600")),
            ("rpc.response.status_code", Some("-32600")),
            ("gen_ai.tool.name", None),
        ])
    );
    let measured = refusals_measured("-32600");
    assert!(
        measured.iter().any(|(attributes, count)| *count >= 1
            && *attributes
                == owned(&[("error.type", "-32600"), ("mcp.method.name", "_OTHER"), ("network.transport", "pipe")])),
        "{measured:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_call_the_transport_check_refuses_over_http_is_a_tools_call_span_with_error_type_32602() {
    otel();
    let running = Running::start(McpServer::builder(Registry::builder().build().unwrap()).build()).await;
    let body = br#"{"jsonrpc":"2.0","id":"refused-http-1","method":"tools/call","params":{"name":"a","name":"b"}}"#;
    let response = common::post_raw(running.addr, "/mcp", "127.0.0.1", &[], body).await;
    assert_eq!(response.status, 400, "{}", response.body);
    running.stop().await;

    let span = span_of_request("refused-http-1");
    assert_eq!(
        (&*span.name, span.span_kind.clone(), span.status.clone()),
        ("tools/call", SpanKind::Server, Status::Unset)
    );
    assert_eq!(
        attribute_map(&span, &REFUSED_KEYS),
        pairs(&[
            ("mcp.method.name", Some("tools/call")),
            ("network.transport", Some("tcp")),
            ("error.type", Some("-32602")),
            ("rpc.response.status_code", Some("-32602")),
            ("gen_ai.tool.name", None),
        ])
    );
    let measured = refusals_measured("-32602");
    assert!(
        measured.iter().any(|(attributes, _)| *attributes
            == owned(&[("error.type", "-32602"), ("mcp.method.name", "tools/call"), ("network.transport", "tcp")])),
        "{measured:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_rmcp_refuses_over_http_is_a_server_span_with_the_http_status_as_error_type() {
    otel();
    let running = Running::start(McpServer::builder(Registry::builder().build().unwrap()).build()).await;
    let body = json!({"jsonrpc": "2.0", "id": "refused-http-2", "method": "tools/list"});
    let response = post(running.addr, "/mcp", "127.0.0.1", &[("MCP-Protocol-Version", "1999-01-01")], &body).await;
    let status = response.status.to_string();
    assert!(response.status >= 400, "{status}: {}", response.body);
    running.stop().await;

    let span = span_of_request("refused-http-2");
    assert_eq!(
        (&*span.name, span.span_kind.clone(), span.status.clone()),
        ("tools/list", SpanKind::Server, Status::Unset)
    );
    assert_eq!(
        attribute_map(&span, &REFUSED_KEYS),
        pairs(&[
            ("mcp.method.name", Some("tools/list")),
            ("network.transport", Some("tcp")),
            ("error.type", Some(&status)),
            ("rpc.response.status_code", None),
            ("gen_ai.tool.name", None),
        ])
    );
}

// Attacks on "one span a call": each execution has exactly one span carrying it, no span has a
// key twice, and every SERVER span ends with its request.

/// Every attribute key of `span`, each once (`tracing-opentelemetry` appends a value recorded
/// twice as a second attribute of the same key).
fn assert_keys_once(span: &SpanData) {
    let mut keys: Vec<&str> = span.attributes.iter().map(|kv| kv.key.as_str()).collect();
    let all = keys.len();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), all, "a key twice on {}: {:?}", span.name, span.attributes);
}

/// The names and kinds of a trace's spans, sorted.
fn shape(trace: &[SpanData]) -> Vec<(String, SpanKind)> {
    let mut names: Vec<(String, SpanKind)> = trace.iter().map(|s| (s.name.to_string(), s.span_kind.clone())).collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    names
}

/// The span named `name` once it is exported (500 looks, 20 ms apart).
async fn exported(name: &str) -> SpanData {
    for _ in 0..500 {
        if let Some(span) = otel().spans.get_finished_spans().unwrap().into_iter().find(|s| s.name == name) {
            return span;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("no span named {name} was exported");
}

/// Counts (pipe).
#[tool]
fn counts_pipe(count: u32) -> String {
    count.to_string()
}

/// Counts (HTTP).
#[tool]
fn counts_http(count: u32) -> String {
    count.to_string()
}

/// Panics (pipe).
#[tool]
fn panics_pipe() -> String {
    panic!("boom")
}

/// Panics (HTTP).
#[tool]
fn panics_http() -> String {
    panic!("boom")
}

/// The attributes a served call's execution leaves on its SERVER span.
const EXECUTION: [&str; 6] = [
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "outcome",
    "error.type",
    "rpc.response.status_code",
    "jsonrpc.request.id",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_arguments_do_not_decode_is_one_server_span_with_outcome_error_and_error_type_tool_error() {
    let otel = otel();
    let (piped, read, write) = piped(Registry::builder().tool(counts_pipe::TOOL).build().unwrap());
    let mut client = RawClient::initialize(read, write).await;
    client.call(5, "counts_pipe", json!({"count": "many"}), false).await;
    assert_eq!(client.recv().await["result"]["isError"], true);
    piped.stop().await;
    drop(client);

    let (server, trace) = otel.trace_of("tools/call counts_pipe");
    assert_eq!(shape(&trace), [("tools/call counts_pipe".to_owned(), SpanKind::Server)]);
    assert_keys_once(&server);
    assert_eq!(server.status, Status::error(""));
    assert_eq!(
        attribute_map(&server, &EXECUTION),
        pairs(&[
            ("gen_ai.operation.name", Some("execute_tool")),
            ("gen_ai.tool.name", Some("counts_pipe")),
            ("outcome", Some("error")),
            ("error.type", Some("tool_error")),
            ("rpc.response.status_code", None),
            ("jsonrpc.request.id", Some("5")),
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_arguments_do_not_decode_over_http_is_one_server_span_with_outcome_error() {
    let otel = otel();
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(counts_http::TOOL).build().unwrap()).build()).await;
    let body = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "counts_http", "arguments": {"count": -1}}});
    let response = post(running.addr, "/mcp", "127.0.0.1", &[], &body).await;
    assert_eq!(response.status, 200, "{}", response.body);
    running.stop().await;

    let (server, trace) = otel.trace_of("tools/call counts_http");
    assert_eq!(shape(&trace), [("tools/call counts_http".to_owned(), SpanKind::Server)]);
    assert_keys_once(&server);
    assert_eq!(
        attribute_map(&server, &EXECUTION),
        pairs(&[
            ("gen_ai.operation.name", Some("execute_tool")),
            ("gen_ai.tool.name", Some("counts_http")),
            ("outcome", Some("error")),
            ("error.type", Some("tool_error")),
            ("rpc.response.status_code", None),
            ("jsonrpc.request.id", Some("6")),
        ])
    );
    assert_eq!(attribute(&server, "network.transport").as_deref(), Some("tcp"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_panics_on_a_pipe_is_one_server_span_with_outcome_panicked() {
    let otel = otel();
    let (piped, read, write) = piped(Registry::builder().tool(panics_pipe::TOOL).build().unwrap());
    let mut client = RawClient::initialize(read, write).await;
    client.call(8, "panics_pipe", json!({}), false).await;
    assert_eq!(client.recv().await["result"]["isError"], true);
    piped.stop().await;
    drop(client);

    let (server, trace) = otel.trace_of("tools/call panics_pipe");
    assert_eq!(shape(&trace), [("tools/call panics_pipe".to_owned(), SpanKind::Server)]);
    assert_keys_once(&server);
    assert_eq!(server.status, Status::error(""));
    assert_eq!(attribute(&server, "outcome").as_deref(), Some("panicked"));
    assert_eq!(attribute(&server, "error.type").as_deref(), Some("tool_error"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_panics_over_http_is_one_server_span_with_outcome_panicked() {
    let otel = otel();
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(panics_http::TOOL).build().unwrap()).build()).await;
    let body =
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "panics_http", "arguments": {}}});
    let response = post(running.addr, "/mcp", "127.0.0.1", &[], &body).await;
    assert_eq!(response.status, 200, "{}", response.body);
    running.stop().await;

    let (server, trace) = otel.trace_of("tools/call panics_http");
    assert_eq!(shape(&trace), [("tools/call panics_http".to_owned(), SpanKind::Server)]);
    assert_keys_once(&server);
    assert_eq!(attribute(&server, "outcome").as_deref(), Some("panicked"));
    assert_eq!(attribute(&server, "error.type").as_deref(), Some("tool_error"));
}

/// Waits, without end, until its call is dropped (it reports one step when it starts).
#[tool]
async fn waits_cancelled(ctx: &tool_runtime::ToolContext) -> String {
    ctx.progress(1, None, "started");
    std::future::pending::<()>().await;
    "never".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_client_cancels_ends_its_server_span_with_outcome_cancelled() {
    let _ = otel();
    let (piped, read, write) = piped(Registry::builder().tool(waits_cancelled::TOOL).build().unwrap());
    let mut client = RawClient::initialize(read, write).await;
    client.call(2, "waits_cancelled", json!({}), true).await;
    assert_eq!(client.recv().await["params"]["message"], "started");
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})).await;
    let server = exported("tools/call waits_cancelled").await;
    piped.stop().await;
    drop(client);

    assert_keys_once(&server);
    // The client's act: `error.type` says it, the status stays unset.
    assert_eq!(server.status, Status::Unset);
    assert_eq!(
        attribute_map(&server, &["outcome", "error.type"]),
        pairs(&[("outcome", Some("cancelled")), ("error.type", Some("cancelled"))])
    );
    assert!(attribute(&server, "duration_ms").is_some());
    assert!(attribute(&server, "gen_ai.tool.call.id").is_some_and(|id| id.starts_with("mcp_")));
    let trace: Vec<SpanData> = otel()
        .spans
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.span_context.trace_id() == server.span_context.trace_id())
        .collect();
    assert_eq!(shape(&trace), [("tools/call waits_cancelled".to_owned(), SpanKind::Server)]);
}

/// Says hello, deferred behind tool search.
#[tool]
fn hello_deferred() -> String {
    "hello, found".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_tool_meta_tool_is_a_server_span_whose_inner_call_has_its_own_execute_tool_span() {
    let otel = otel();
    let registry = Registry::builder().tool(hello_deferred::TOOL).defer_tools(["hello_deferred"]).build().unwrap();
    let (piped, read, write) = piped(registry);
    let mut client = RawClient::initialize(read, write).await;
    client.call(4, "call_tool", json!({"name": "hello_deferred", "arguments": {}}), false).await;
    let answer = client.recv().await;
    assert_eq!(answer["result"]["content"][0]["text"], "hello, found", "{answer}");
    piped.stop().await;
    drop(client);

    let (inner, trace) = otel.trace_of("execute_tool hello_deferred");
    let server = trace.iter().find(|s| s.name == "tools/call call_tool").expect("the request's SERVER span");
    assert_eq!(
        shape(&trace),
        [
            ("execute_tool hello_deferred".to_owned(), SpanKind::Internal),
            ("tools/call call_tool".to_owned(), SpanKind::Server)
        ]
    );
    assert_eq!(inner.parent_span_id, server.span_context.span_id());
    assert_keys_once(server);
    assert_keys_once(&inner);
    assert_eq!(
        attribute_map(&inner, &["gen_ai.tool.name", "outcome", "error.type"]),
        pairs(&[("gen_ai.tool.name", Some("hello_deferred")), ("outcome", Some("ok")), ("error.type", None)])
    );
    // The execution is the inner span's: the SERVER span carries none of it.
    assert_eq!(
        attribute_map(server, &["outcome", "duration_ms", "gen_ai.tool.call.id"]),
        pairs(&[("outcome", None), ("duration_ms", None), ("gen_ai.tool.call.id", None)])
    );
}

/// Never runs: its calls carry a request state the server did not seal.
#[tool]
fn refused_state() -> String {
    "never run".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_refused_before_the_registry_runs_ends_its_server_span_with_the_error_code() {
    let _ = otel();
    // The request state is checked after the call's context (which holds the span) is made.
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(refused_state::TOOL).build().unwrap()).build())
            .await;
    let body = json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {
        "name": "refused_state", "arguments": {}, "requestState": "forged-state",
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "refused_state")];
    let response = post(running.addr, "/mcp", "127.0.0.1", &headers, &body).await;
    let answer: Value = serde_json::from_str(&response.body).unwrap_or_else(|e| panic!("{e}: {}", response.body));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let span = exported("tools/call refused_state").await;
    running.stop().await;

    assert_keys_once(&span);
    assert_eq!(attribute(&span, "error.type"), answer["error"]["code"].as_i64().map(|c| c.to_string()), "{answer}");
    assert_eq!(attribute(&span, "outcome"), None);
}

/// Logs in with a secret token.
#[tool]
fn login_traced(
    /// Who.
    user: String,
    /// The token.
    token: tool_runtime::Secret<String>,
) -> String {
    format!("{user} in ({} bytes)", token.expose().len())
}

const SECRET_TOKEN: &str = "tok-5ecret-otel-77a1";
const IDEMPOTENCY_KEY: &str = "idem-5ecret-otel-0b3e";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_capture_a_secret_argument_and_the_idempotency_key_appear_in_no_exported_span() {
    use tool_runtime::idempotency::{Idempotency, MemoryIdempotencyStore};

    let otel = otel();
    let idempotency = Idempotency::new(MemoryIdempotencyStore::new()).server_key([3u8; 32]).unwrap();
    let registry =
        Registry::builder().tool(login_traced::TOOL).capture_content(true).idempotency(idempotency).build().unwrap();
    let running = Running::start(McpServer::builder(registry).build()).await;
    let body = json!({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {
        "name": "login_traced", "arguments": {"user": "ana", "token": SECRET_TOKEN},
        "_meta": {tool_mcp::IDEMPOTENCY_KEY_META: IDEMPOTENCY_KEY}}});
    let response = post(running.addr, "/mcp", "127.0.0.1", &[], &body).await;
    assert!(response.body.contains("ana in (20 bytes)"), "{}", response.body);
    running.stop().await;

    let (server, trace) = otel.trace_of("tools/call login_traced");
    assert_eq!(shape(&trace), [("tools/call login_traced".to_owned(), SpanKind::Server)]);
    assert_keys_once(&server);
    assert_eq!(
        attribute_map(&server, &["gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "outcome"]),
        pairs(&[
            ("gen_ai.tool.call.arguments", Some(r#"{"token":"[redacted]","user":"ana"}"#)),
            ("gen_ai.tool.call.result", Some("ana in (20 bytes)")),
            ("outcome", Some("ok")),
        ])
    );
    // Nowhere in the call's trace, and in no attribute of any span. (This subscriber is
    // tracing-opentelemetry's own layer, not `otel_layer`: rmcp's DEBUG events, `received request`
    // with the whole request, are exported as events of its connection span, so only attributes
    // are looked at outside the call's trace. `otel_layer` leaves rmcp out: see
    // `with_otel_layer_and_no_level_filter_no_span_or_event_of_rmcp_is_exported`.)
    for span in otel.spans.get_finished_spans().unwrap() {
        let text = if span.span_context.trace_id() == server.span_context.trace_id() {
            format!("{span:?}")
        } else {
            format!("{:?}", span.attributes)
        };
        assert!(!text.contains(SECRET_TOKEN), "the secret in {}", span.name);
        assert!(!text.contains(IDEMPOTENCY_KEY), "the idempotency key in {}", span.name);
    }
}

// `otel_layer` turns off tracing-opentelemetry's context activation: parents must still come
// from `tracing`'s tree, and trace context must still cross to an imported server. These tests
// install `otel_layer` for their own thread (a current-thread runtime: the server's tasks and the
// tool run on it) over a span exporter of their own.

/// A subscriber of `otel_layer` alone for this thread, and its exporter.
fn otel_layer_here() -> (InMemorySpanExporter, tracing::subscriber::DefaultGuard) {
    let spans = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
    let layer = tool_mcp::telemetry::otel_layer(provider.tracer("otel_layer"));
    let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    (spans, guard)
}

/// The spans exported while a client calls the one tool of `registry`, `name`, with `arguments`
/// once over a pipe, with `otel_layer` alone (no level filter) for this thread; the call's text
/// must be `text`.
async fn called_with_otel_layer(registry: Registry, name: &str, arguments: Value, text: &str) -> Vec<SpanData> {
    let (spans, _guard) = otel_layer_here();
    let (piped, read, write) = piped(registry);
    let mut client = RawClient::initialize(read, write).await;
    client.call(3, name, arguments, false).await;
    assert_eq!(client.recv().await["result"]["content"][0]["text"], text);
    piped.stop().await;
    drop(client);
    spans.get_finished_spans().unwrap()
}

/// Works in a span of its own.
#[tool]
async fn works_in_a_span() -> String {
    use tracing::Instrument;
    async {
        tokio::task::yield_now().await;
        tracing::info!(step = 1, "inner work done");
    }
    .instrument(tracing::info_span!("inner_work"))
    .await;
    "worked".to_owned()
}

/// The spans exported by one call of `works_in_a_span` ([`called_with_otel_layer`]).
async fn worked_in_a_span() -> Vec<SpanData> {
    let registry = Registry::builder().tool(works_in_a_span::TOOL).build().unwrap();
    called_with_otel_layer(registry, "works_in_a_span", json!({}), "worked").await
}

#[tokio::test(flavor = "current_thread")]
async fn with_otel_layer_a_span_made_in_a_tools_body_is_a_child_of_the_calls_server_span() {
    let finished = worked_in_a_span().await;
    let server = finished.iter().find(|s| s.name == "tools/call works_in_a_span").expect("the SERVER span");
    let inner = finished.iter().find(|s| s.name == "inner_work").expect("the tool's own span");
    assert_eq!(inner.parent_span_id, server.span_context.span_id());
    assert_eq!(inner.span_context.trace_id(), server.span_context.trace_id());
    assert_keys_once(server);
    // `otel_layer` adds none of tracing-opentelemetry's own attributes.
    for key in ["busy_ns", "idle_ns", "thread.id", "code.file.path", "target"] {
        assert_eq!(attribute(server, key), None, "{key}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn with_otel_layer_and_no_level_filter_no_span_or_event_of_rmcp_is_exported() {
    let finished = called_with_otel_layer(
        Registry::builder().tool(login_traced::TOOL).build().unwrap(),
        "login_traced",
        json!({"user": "ana", "token": SECRET_TOKEN}),
        "ana in (20 bytes)",
    )
    .await;
    let names: Vec<&str> = finished.iter().map(|s| s.name.as_ref()).collect();
    assert!(names.contains(&"tools/call login_traced"), "{names:?}");
    // rmcp's DEBUG events `received request` and `response message` hold whole requests and
    // answers.
    for span in &finished {
        assert!(!format!("{span:?}").contains(SECRET_TOKEN), "the secret in {}: {span:?}", span.name);
    }
    // Nor its connection span `serve_inner`, whose INFO events hold the peer's `initialize`.
    assert!(!names.contains(&"serve_inner"), "{names:?}");
}

/// A server of `task_hello` on HTTP, and the id of the task a call of it created (its run goes on).
async fn a_task_hello() -> (Running, String) {
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(task_hello::TOOL).build().unwrap()).build()).await;
    let capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let created =
        common::rpc(&running, "tools/call", json!({"name": "task_hello", "arguments": {}}), &capabilities, None).await;
    let task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task id: {created}")).to_owned();
    (running, task)
}

#[tokio::test(flavor = "current_thread")]
async fn with_otel_layer_and_no_level_filter_a_tasks_id_is_in_no_exported_span_or_event() {
    let (spans, _guard) = otel_layer_here();
    let (running, task) = a_task_hello().await;
    // The run ends on its own; its span is exported when it does (500 looks, 20 ms apart).
    for _ in 0..500 {
        if spans.get_finished_spans().unwrap().iter().any(|s| s.name == "execute_tool task_hello") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    running.stop().await;

    let finished = spans.get_finished_spans().unwrap();
    let names: Vec<&str> = finished.iter().map(|s| s.name.as_ref()).collect();
    assert!(names.contains(&"tools/call task_hello") && names.contains(&"task_run task_hello"), "{names:?}");
    for span in &finished {
        assert!(!format!("{span:?}").contains(&task), "the task id in {}: {span:?}", span.name);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn with_otel_layer_an_event_of_a_tools_body_is_exported_on_its_span() {
    let finished = worked_in_a_span().await;
    let inner = finished.iter().find(|s| s.name == "inner_work").expect("the tool's own span");
    let events: Vec<(String, Vec<String>)> = inner
        .events
        .iter()
        .map(|e| (e.name.to_string(), e.attributes.iter().map(|kv| format!("{}={}", kv.key, kv.value)).collect()))
        .collect();
    assert_eq!(
        events,
        [(
            "inner work done".to_owned(),
            vec!["level=INFO".to_owned(), "target=telemetry".to_owned(), "step=1".to_owned()]
        )]
    );
}

/// This thread's log, as `toolbox` writes it: every line of the framework at TRACE, rmcp's at
/// WARN (its others hold whole messages: its own rule); written while the guard lives.
fn framework_log() -> (Log, tracing::subscriber::DefaultGuard) {
    let log = Log::default();
    let writer = log.clone();
    let targets = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::Level::TRACE)
        .with_target(tool_mcp::telemetry::RMCP_TARGET, tracing::Level::WARN);
    let lines = tracing_subscriber::fmt::layer().with_ansi(false).with_writer(move || writer.clone());
    let guard = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(tracing_subscriber::Layer::with_filter(lines, targets)),
    );
    (log, guard)
}

#[tokio::test(flavor = "current_thread")]
async fn a_tasks_id_is_never_written_whole_to_the_log() {
    let (log, _guard) = framework_log();
    let (running, task) = a_task_hello().await;
    let logged = || log.text();
    // The run ends on its own (500 looks, 20 ms apart).
    for _ in 0..500 {
        if logged().contains("tool call finished") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    running.stop().await;

    let logged = logged();
    assert!(!logged.contains(&task), "the task id {task} in the log:\n{logged}");
    // The log still tells the task's lines apart: by the id's first 8 hex digits.
    assert!(logged.contains(&format!("task={}…", &task[..8])), "{logged}");
}

/// Says hello to an in-process caller through an import.
#[tool]
fn hello_in_process() -> String {
    "hello in process".to_owned()
}

#[cfg(feature = "client")]
#[tokio::test(flavor = "current_thread")]
async fn with_otel_layer_an_in_process_call_of_an_imported_tool_carries_its_trace_to_the_upstream() {
    use tool_mcp::import::McpImport;
    use tool_runtime::{ToolCall, ToolContext};
    use tracing::Instrument;

    let (spans, _guard) = otel_layer_here();
    let upstream =
        Running::start(McpServer::builder(Registry::builder().tool(hello_in_process::TOOL).build().unwrap()).build())
            .await;
    let imported =
        McpImport::http("up", format!("http://{}/mcp", upstream.addr)).prefix("ip_").connect().await.unwrap();
    let registry = imported.add_to(Registry::builder()).unwrap().build().unwrap();
    let call = ToolCall::new("call_1", "ip_hello_in_process", "{}");
    let message = registry.call(&call, &ToolContext::new()).instrument(tracing::info_span!("agent_turn")).await;
    assert_eq!(message.text(), "hello in process");
    imported.close().await;
    upstream.stop().await;

    let finished = spans.get_finished_spans().unwrap();
    let named = |name: &str, kind: SpanKind| {
        finished.iter().find(|s| s.name == name && s.span_kind == kind).unwrap_or_else(|| {
            panic!("no {kind:?} span {name}: {:?}", finished.iter().map(|s| &s.name).collect::<Vec<_>>())
        })
    };
    let turn = named("agent_turn", SpanKind::Internal);
    let execution = named("execute_tool ip_hello_in_process", SpanKind::Internal);
    let client = named("tools/call hello_in_process", SpanKind::Client);
    let server = named("tools/call hello_in_process", SpanKind::Server);
    assert_eq!(execution.parent_span_id, turn.span_context.span_id());
    assert_eq!(client.parent_span_id, execution.span_context.span_id());
    // Through `_meta`'s traceparent: the upstream's SERVER span continues the caller's trace.
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    assert!(server.parent_span_is_remote);
    for span in [turn, execution, client, server] {
        assert_eq!(span.span_context.trace_id(), turn.span_context.trace_id(), "{}", span.name);
        assert_keys_once(span);
    }
}

/// A name, as the user gives it.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct GivenName {
    name: String,
}

/// Asks the user's name, then greets.
#[tool]
async fn asks_traced(ctx: &tool_runtime::ToolContext) -> Result<String, tool_runtime::TalkBackError> {
    Ok(match ctx.elicit::<GivenName>("Your name?").key("user_name").await? {
        tool_runtime::talk::Elicitation::Accept(GivenName { name }) => format!("Hello, {name}!"),
        _ => "no name".to_owned(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_round_of_a_call_that_asks_for_input_is_one_server_span_that_says_how_its_round_ended() {
    let otel = otel();
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(asks_traced::TOOL).build().unwrap()).build()).await;
    let capabilities = json!({"elicitation": {}});
    let first =
        common::rpc(&running, "tools/call", json!({"name": "asks_traced", "arguments": {}}), &capabilities, None).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap();
    let retry = json!({"name": "asks_traced", "arguments": {}, "requestState": state,
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ana"}}}});
    let second = common::rpc(&running, "tools/call", retry, &capabilities, None).await;
    assert_eq!(second["result"]["content"][0]["text"], "Hello, Ana!", "{second}");
    running.stop().await;

    let mut rounds: Vec<SpanData> =
        otel.spans.get_finished_spans().unwrap().into_iter().filter(|s| s.name == "tools/call asks_traced").collect();
    rounds.sort_by_key(|s| s.start_time);
    assert_eq!(rounds.len(), 2, "one SERVER span a round");
    for round in &rounds {
        assert_keys_once(round);
        assert_eq!(round.status, Status::Unset);
        let beside: Vec<String> = otel
            .spans
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .filter(|s| {
                s.span_context.trace_id() == round.span_context.trace_id() && s.name.starts_with("execute_tool")
            })
            .map(|s| s.name.to_string())
            .collect();
        assert_eq!(beside, Vec::<String>::new(), "no execute_tool span beside the SERVER span");
    }
    // The first round stopped when the tool asked (its future dropped), the second ran to the end.
    assert_eq!(
        rounds.iter().map(|r| attribute_map(r, &["outcome", "error.type"])).collect::<Vec<_>>(),
        [
            pairs(&[("outcome", Some("cancelled")), ("error.type", None)]),
            pairs(&[("outcome", Some("ok")), ("error.type", None)]),
        ]
    );
    assert!(rounds.iter().all(|r| attribute(r, "duration_ms").is_some()));
}

/// Waits, without end, until its call is dropped (HTTP; it reports one step when it starts).
#[tool]
async fn waits_dropped_http(ctx: &tool_runtime::ToolContext) -> String {
    ctx.progress(1, None, "started");
    std::future::pending::<()>().await;
    "never".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_http_client_goes_away_ends_its_server_span_with_outcome_cancelled() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let _ = otel();
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(waits_dropped_http::TOOL).build().unwrap()).build())
            .await;
    let body = json!({"jsonrpc": "2.0", "id": 14, "method": "tools/call",
        "params": {"name": "waits_dropped_http", "arguments": {}, "_meta": {"progressToken": "p1"}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(running.addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    // Read until the progress report shows the tool started (at most 64 KiB, 10 s), then go away.
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("started") {
        let read = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut buffer))
            .await
            .expect("the progress report")
            .unwrap();
        assert!(read > 0 && seen.len() < 64 * 1024, "{}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buffer[..read]);
    }
    drop(stream);
    let server = exported("tools/call waits_dropped_http").await;
    running.stop().await;

    assert_keys_once(&server);
    assert_eq!(server.status, Status::Unset);
    assert_eq!(
        attribute_map(&server, &["outcome", "error.type", "network.transport", "gen_ai.tool.name"]),
        pairs(&[
            ("outcome", Some("cancelled")),
            ("error.type", Some("cancelled")),
            ("network.transport", Some("tcp")),
            ("gen_ai.tool.name", Some("waits_dropped_http")),
        ])
    );
    assert!(attribute(&server, "duration_ms").is_some());
    // Measured as a request that ended, cancelled.
    let points = otel().durations_of("mcp.server.operation.duration", "waits_dropped_http");
    let measured: Vec<(Option<String>, u64)> = points
        .iter()
        .map(|p| (p.attributes().find(|kv| kv.key.as_str() == "error.type").map(|kv| kv.value.to_string()), p.count()))
        .collect();
    assert_eq!(measured, [(Some("cancelled".to_owned()), 1)]);
}

/// Says hello, deferred behind tool search (HTTP).
#[tool]
fn hello_deferred_http() -> String {
    "hello, found over http".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_tool_meta_tool_over_http_has_its_inner_calls_execute_tool_span_under_its_server_span() {
    let otel = otel();
    let registry =
        Registry::builder().tool(hello_deferred_http::TOOL).defer_tools(["hello_deferred_http"]).build().unwrap();
    let running = Running::start(McpServer::builder(registry).build()).await;
    let body = json!({"jsonrpc": "2.0", "id": 15, "method": "tools/call",
        "params": {"name": "call_tool", "arguments": {"name": "hello_deferred_http", "arguments": {}}}});
    let response = post(running.addr, "/mcp", "127.0.0.1", &[], &body).await;
    assert!(response.body.contains("hello, found over http"), "{}", response.body);
    running.stop().await;

    let (inner, trace) = otel.trace_of("execute_tool hello_deferred_http");
    let server = trace
        .iter()
        .find(|s| s.name == "tools/call call_tool" && s.span_context.trace_id() == inner.span_context.trace_id())
        .expect("the request's SERVER span");
    assert_eq!(trace.len(), 2, "{:?}", shape(&trace));
    assert_eq!(inner.parent_span_id, server.span_context.span_id());
    assert_keys_once(server);
    assert_keys_once(&inner);
    assert_eq!(attribute(&inner, "outcome").as_deref(), Some("ok"));
    assert_eq!(attribute(server, "network.transport").as_deref(), Some("tcp"));
}

/// Logs in with a secret token (for arguments of the wrong shape).
#[tool]
fn login_misshapen(
    /// Who.
    user: String,
    /// The token.
    token: tool_runtime::Secret<String>,
) -> String {
    format!("{user} in ({} bytes)", token.expose().len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_capture_a_secret_of_the_wrong_type_appears_in_no_exported_span() {
    let otel = otel();
    let registry = Registry::builder().tool(login_misshapen::TOOL).capture_content(true).build().unwrap();
    let (piped, read, write) = piped(registry);
    let mut client = RawClient::initialize(read, write).await;
    let shapes = [
        json!({"user": "ana", "token": 99887766}),
        json!({"user": "ana", "token": {"inner": "tok-5ecret-shape-41"}}),
        json!({"user": "ana", "token": ["tok-5ecret-shape-42"]}),
    ];
    for (id, arguments) in (20..).zip(&shapes) {
        client.call(id, "login_misshapen", arguments.clone(), false).await;
        let answer = client.recv().await;
        assert_eq!(answer["result"]["isError"], true, "{answer}");
    }
    piped.stop().await;
    drop(client);

    let spans: Vec<SpanData> = otel
        .spans
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.name == "tools/call login_misshapen")
        .collect();
    assert_eq!(spans.len(), 3);
    for span in &spans {
        assert_keys_once(span);
        let text = format!("{:?}", span.attributes);
        for secret in ["99887766", "5ecret-shape"] {
            assert!(!text.contains(secret), "{secret} on the span: {text}");
        }
    }
}

/// Released by the test that runs it as a task (or after 30 s).
static TASK_RELEASE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Waits, as a task, until the test releases it.
#[tool(tags(task))]
async fn task_waits() -> String {
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), TASK_RELEASE.notified()).await;
    "released".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_span_of_a_call_that_creates_a_task_ends_with_its_request_while_the_task_runs() {
    let otel = otel();
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(task_waits::TOOL).build().unwrap()).build()).await;
    let capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let created =
        common::rpc(&running, "tools/call", json!({"name": "task_waits", "arguments": {}}), &capabilities, None).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    // The request's span is exported while the task still waits.
    let request = exported("tools/call task_waits").await;
    let running_run = otel.spans.get_finished_spans().unwrap().into_iter().any(|s| s.name == "task_run task_waits");
    TASK_RELEASE.notify_one();
    let run = exported("task_run task_waits").await;
    running.stop().await;

    assert!(!running_run, "the run ended before it was released");
    assert_keys_once(&request);
    assert_eq!(
        attribute_map(&request, &["outcome", "gen_ai.tool.call.id", "duration_ms", "error.type"]),
        pairs(&[("outcome", None), ("gen_ai.tool.call.id", None), ("duration_ms", None), ("error.type", None)])
    );
    let (execution, _) = otel.trace_of("execute_tool task_waits");
    assert_eq!(execution.parent_span_id, run.span_context.span_id());
    assert_eq!(attribute(&execution, "outcome").as_deref(), Some("ok"));
    assert_keys_once(&execution);
}

/// Contexts kept past their calls' requests.
static KEPT: std::sync::Mutex<Vec<tool_runtime::ToolContext>> = std::sync::Mutex::new(Vec::new());

/// Keeps its context after it returns (as a tool that hands it to a background job would).
#[tool]
async fn keeps_its_context(ctx: &tool_runtime::ToolContext) -> String {
    KEPT.lock().unwrap().push(ctx.clone());
    "kept".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_kept_past_its_request_does_not_keep_the_server_span_open() {
    let _ = otel();
    let (piped, read, write) = piped(Registry::builder().tool(keeps_its_context::TOOL).build().unwrap());
    let mut client = RawClient::initialize(read, write).await;
    client.call(16, "keeps_its_context", json!({}), false).await;
    assert_eq!(client.recv().await["result"]["content"][0]["text"], "kept");
    // Exported while the context lives on.
    let server = exported("tools/call keeps_its_context").await;
    assert_eq!(KEPT.lock().unwrap().len(), 1);
    piped.stop().await;
    drop(client);

    assert_keys_once(&server);
    assert_eq!(attribute(&server, "outcome").as_deref(), Some("ok"));
}

// One thread, so that the server's tasks log to this thread's subscriber (in this binary of its own:
// in the shared one, another test's first hit of the line could leave it disabled for this one).
#[cfg(feature = "auth")]
#[tokio::test(flavor = "current_thread")]
async fn a_call_refused_for_its_scopes_is_logged_naming_the_subject_cut_and_on_one_line() {
    use common::auth::{Issuer, Protected, claims, rsa_a};
    let (captured, _default) = logged_here(tracing::Level::DEBUG);
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let subject = format!("ana\nWARN forged line {}", "x".repeat(100));
    let reader = rsa_a(&claims(&issuer, &server.resource, &subject, "tools:read"));
    let response = server.call(Some(&reader), "write_note", json!({"text": "hi"})).await;
    assert_eq!(response.status, 403);
    server.running.stop().await;

    let log = captured.text();
    let refused: Vec<&str> = log.lines().filter(|line| line.contains("refusing a call beyond")).collect();
    let expected = format!(
        "refusing a call beyond the token's scopes tool=write_note scope=\"tools:write\" subject=ana?WARN forged line {}...",
        "x".repeat(64 - "ana?WARN forged line ".len())
    );
    assert_eq!(refused.len(), 1, "{log}");
    assert!(refused[0].ends_with(&expected), "{}", refused[0]);
    assert!(!log.contains("\nWARN forged"), "{log}");
}

// One thread, so that the server's tasks log to this thread's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn a_refused_origin_is_logged_cut_and_escaped() {
    let (captured, _default) = logged_here(tracing::Level::WARN);
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(hello_traced::TOOL).build().unwrap()).build()).await;
    // A header may hold any byte but a control one: a bidirectional override, and 4 KB.
    let origin = format!("http://evil.example/\u{202e}{}", "x".repeat(4000));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let response = post(running.addr, "/mcp", "127.0.0.1", &[("Origin", &origin)], &body).await;
    assert_eq!(response.status, 403);
    running.stop().await;

    let log = captured.text();
    let refused: Vec<&str> = log.lines().filter(|line| line.contains("outside the allow-list")).collect();
    // 64 characters (20, the override, 43 x's), the cut marked, as a quoted string.
    let expected = format!(
        "refusing a request from an origin outside the allow-list origin=\"http://evil.example/\\u{{202e}}{}...\"",
        "x".repeat(43)
    );
    assert_eq!(refused.len(), 1, "{log}");
    assert!(refused[0].ends_with(&expected), "{}", refused[0]);
}

/// The log lines of this thread at `level` and above, in the plain format, while the guard lives.
fn logged_here(level: tracing::Level) -> (Log, tracing::subscriber::DefaultGuard) {
    let captured = Log::default();
    let writer = captured.clone();
    let subscriber =
        tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).with_max_level(level).finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

// One thread, so that the server's tasks log to this thread's subscriber (as above).
#[tokio::test(flavor = "current_thread")]
async fn a_stateless_call_answered_with_an_error_is_logged_with_its_code_and_kind_not_the_clients_words() {
    let (captured, _guard) = framework_log();
    let running =
        Running::start(McpServer::builder(Registry::builder().tool(asks_traced::TOOL).build().unwrap()).build()).await;
    let call = |id: u64, extra: Value| {
        let mut params = json!({"name": "asks_traced", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "x", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "asks_traced")];
    let first = post(running.addr, "/mcp", "127.0.0.1", &headers, &call(1, json!({}))).await;
    let first: Value = serde_json::from_str(&first.body).unwrap_or_else(|_| panic!("{}", first.body));
    let state = first["result"]["requestState"].clone();
    assert!(state.is_string(), "{first}");
    // An answer to an input request never asked, under a key that is the client's own words.
    let stray = json!({"requestState": state, "inputResponses": {
        "hunter2-stray": {"action": "accept", "content": {"name": "Ana"}}}});
    let refused = post(running.addr, "/mcp", "127.0.0.1", &headers, &call(2, stray)).await;
    let refused: Value = serde_json::from_str(&refused.body).unwrap_or_else(|_| panic!("{}", refused.body));
    running.stop().await;

    // The client reads its key back in the error; the log does not.
    assert!(refused["error"]["message"].as_str().unwrap().contains("`hunter2-stray`"), "{refused}");
    let log = captured.text();
    let answered: Vec<&str> = log.lines().filter(|line| line.contains("tools/call answered with an error")).collect();
    assert_eq!(answered.len(), 1, "{log}");
    assert!(
        answered[0].ends_with("tools/call answered with an error id=2 code=-32602 kind=\"invalid_params\""),
        "{}",
        answered[0]
    );
    assert!(!log.contains("hunter2"), "{log}");
}
