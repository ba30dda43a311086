//! What a `Registry` call tells OpenTelemetry (`tool_runtime::telemetry`): the `execute_tool`
//! span by the GenAI conventions, read back through the SDK's in-memory span exporter, and the
//! `gen_ai.execute_tool.duration` histogram, read back through its in-memory metric exporter.
//!
//! Each test installs its own `tracing` subscriber for its thread (`set_default`) and its own
//! meter provider (`RegistryBuilder::meter`): nothing global.

use std::collections::BTreeMap;
use std::time::Duration;

use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, HistogramDataPoint, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tool_runtime::prelude::*;
use tool_runtime::telemetry::EXECUTE_TOOL_DURATION_BUCKETS;
use tracing::subscriber::DefaultGuard;
use tracing_subscriber::layer::SubscriberExt;

/// Looks a word up.
#[tool]
fn lookup(
    /// The word.
    word: String,
) -> String {
    format!("{word}: found")
}

/// Answers after 3 s.
#[tool]
async fn slow_lookup(
    /// The word.
    word: String,
) -> String {
    tokio::time::sleep(Duration::from_secs(3)).await;
    format!("{word}: found late")
}

/// Always fails.
#[tool]
fn broken() -> Result<String, String> {
    Err("disk full".to_owned())
}

/// The spans and the metrics of one test.
struct Otel {
    spans: InMemorySpanExporter,
    tracer: opentelemetry_sdk::trace::Tracer,
    metrics: InMemoryMetricExporter,
    meters: SdkMeterProvider,
    _guard: DefaultGuard,
}

impl Otel {
    fn new() -> Self {
        let spans = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
        let tracer = provider.tracer("test");
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer.clone())
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false);
        let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
        let metrics = InMemoryMetricExporter::default();
        let meters = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(metrics.clone()).build()).build();
        Otel { spans, tracer, metrics, meters, _guard: guard }
    }

    fn registry(&self, capture: bool) -> Registry {
        Registry::builder()
            .tool(lookup::TOOL)
            .tool(slow_lookup::TOOL)
            .tool(broken::TOOL)
            .capture_content(capture)
            .meter(opentelemetry::metrics::MeterProvider::meter(&self.meters, "test"))
            .build()
            .unwrap()
    }

    fn spans(&self) -> Vec<SpanData> {
        self.spans.get_finished_spans().unwrap()
    }

    /// The data points of `gen_ai.execute_tool.duration`.
    fn durations(&self) -> Vec<HistogramDataPoint<f64>> {
        self.meters.force_flush().unwrap();
        let exported = self.metrics.get_finished_metrics().unwrap();
        let last = exported.last().expect("one export");
        let mut points = Vec::new();
        for scope in last.scope_metrics() {
            for metric in scope.metrics() {
                if metric.name() != "gen_ai.execute_tool.duration" {
                    continue;
                }
                assert_eq!(metric.unit(), "s");
                match metric.data() {
                    AggregatedMetrics::F64(MetricData::Histogram(histogram)) => {
                        points.extend(histogram.data_points().cloned());
                    }
                    _ => panic!("gen_ai.execute_tool.duration is not a histogram of f64"),
                }
            }
        }
        points
    }
}

fn attributes(span: &SpanData) -> BTreeMap<String, String> {
    span.attributes.iter().map(|kv| (kv.key.to_string(), kv.value.to_string())).collect()
}

fn point_attributes(point: &HistogramDataPoint<f64>) -> BTreeMap<String, String> {
    point.attributes().map(|kv| (kv.key.to_string(), kv.value.to_string())).collect()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

#[tokio::test(start_paused = true)]
async fn a_call_is_an_internal_execute_tool_span_with_the_gen_ai_attributes() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    let ctx = ToolContext::builder().session_id("s-1").build();
    let message = registry.call(&ToolCall::new("call_1", "lookup", r#"{"word":"tide"}"#), &ctx).await;
    assert_eq!(message.text(), "tide: found");

    let spans = otel.spans();
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0].name, "execute_tool lookup");
    assert_eq!(spans[0].span_kind, SpanKind::Internal);
    assert_eq!(spans[0].status, Status::Unset);
    assert_eq!(
        attributes(&spans[0]),
        map(&[
            ("duration_ms", "0"),
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.call.id", "call_1"),
            ("gen_ai.tool.description", "Looks a word up."),
            ("gen_ai.tool.name", "lookup"),
            ("gen_ai.tool.type", "function"),
            ("outcome", "ok"),
            ("session_id", "s-1"),
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn the_span_is_a_child_of_the_span_the_call_runs_in() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    let agent = tracing::info_span!("agent_turn");
    let call = ToolCall::new("call_1", "lookup", r#"{"word":"tide"}"#);
    tracing::Instrument::instrument(registry.call(&call, &ToolContext::new()), agent.clone()).await;
    drop(agent);

    let spans = otel.spans();
    let by_name = |name: &str| spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no span {name}"));
    let (tool, turn) = (by_name("execute_tool lookup"), by_name("agent_turn"));
    assert_eq!(tool.parent_span_id, turn.span_context.span_id());
    assert_eq!(tool.span_context.trace_id(), turn.span_context.trace_id());
}

#[tokio::test(start_paused = true)]
async fn the_span_parents_on_an_opentelemetry_context_of_the_caller() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    let outer = otel.tracer.start("request");
    let outer_context = opentelemetry::Context::current_with_span(outer);
    let agent = tracing::info_span!("agent_turn");
    tracing_opentelemetry::OpenTelemetrySpanExt::set_parent(&agent, outer_context.clone()).unwrap();
    let call = ToolCall::new("call_1", "lookup", r#"{"word":"tide"}"#);
    tracing::Instrument::instrument(registry.call(&call, &ToolContext::new()), agent.clone()).await;
    drop(agent);

    let spans = otel.spans();
    let tool = spans.iter().find(|s| s.name == "execute_tool lookup").unwrap();
    assert_eq!(tool.span_context.trace_id(), outer_context.span().span_context().trace_id());
}

#[tokio::test(start_paused = true)]
async fn a_decoding_failure_sets_error_type_and_status_without_the_models_input() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    let call = ToolCall::new("call_2", "lookup", r#"{"word":"tide","password":"hunter2"}"#);
    let message = registry.call(&call, &ToolContext::new()).await;
    assert!(message.is_error);
    assert!(message.text().contains("password"), "the model still reads what to change: {}", message.text());

    let spans = otel.spans();
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0].status, Status::error(""));
    let attributes = attributes(&spans[0]);
    assert_eq!(attributes.get("error.type").map(String::as_str), Some("invalid_arguments"));
    assert_eq!(attributes.get("outcome").map(String::as_str), Some("error"));
    assert!(!attributes.contains_key("gen_ai.tool.call.arguments"));
    let everything = format!("{:?} {:?} {:?}", spans[0].attributes, spans[0].events, spans[0].status);
    assert!(!everything.contains("password"), "the span holds the model's input: {everything}");
    assert!(!everything.contains("hunter2"), "the span holds the model's input: {everything}");
}

#[tokio::test(start_paused = true)]
async fn a_tools_own_error_is_error_type_failed_without_its_text() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    let message = registry.call(&ToolCall::new("call_3", "broken", "{}"), &ToolContext::new()).await;
    assert_eq!(message.text(), "disk full");

    let spans = otel.spans();
    assert_eq!(attributes(&spans[0]).get("error.type").map(String::as_str), Some("failed"));
    assert!(!format!("{:?}", spans[0]).contains("disk full"));
}

#[tokio::test(start_paused = true)]
async fn content_is_not_captured_by_default() {
    let otel = Otel::new();
    let registry = Registry::builder().tool(lookup::TOOL).build().unwrap();
    registry.call(&ToolCall::new("call_1", "lookup", r#"{"word":"tide"}"#), &ToolContext::new()).await;

    let spans = otel.spans();
    let keys: Vec<String> = spans[0].attributes.iter().map(|kv| kv.key.to_string()).collect();
    assert!(!keys.iter().any(|k| k.starts_with("gen_ai.tool.call.arguments") || k == "gen_ai.tool.call.result"));
    assert!(!format!("{:?}", spans[0]).contains("tide"), "the span holds an argument or the result");
}

#[tokio::test(start_paused = true)]
async fn capture_content_records_the_arguments_and_the_result() {
    let otel = Otel::new();
    let registry = otel.registry(true);
    registry.call(&ToolCall::new("call_1", "lookup", r#"{ "word" : "tide" }"#), &ToolContext::new()).await;

    let attributes = attributes(&otel.spans()[0]);
    assert_eq!(attributes.get("gen_ai.tool.call.arguments").map(String::as_str), Some(r#"{"word":"tide"}"#));
    assert_eq!(attributes.get("gen_ai.tool.call.result").map(String::as_str), Some("tide: found"));
}

#[tokio::test(start_paused = true)]
async fn captured_arguments_that_are_not_a_json_object_are_recorded_by_their_length_only() {
    let otel = Otel::new();
    let registry = otel.registry(true);
    registry.call(&ToolCall::new("call_1", "lookup", r#"["sk-secret"]"#), &ToolContext::new()).await;

    let attributes = attributes(&otel.spans()[0]);
    assert_eq!(
        attributes.get("gen_ai.tool.call.arguments").map(String::as_str),
        Some("<13 bytes that are not a JSON object>")
    );
}

#[tokio::test(start_paused = true)]
async fn made_up_tool_names_make_no_new_span_names_or_metric_series() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    for i in 0..3 {
        let name = format!("made_up_{i}");
        registry.call(&ToolCall::new(format!("call_{i}"), name, "{}"), &ToolContext::new()).await;
    }

    let spans = otel.spans();
    let names: Vec<&str> = spans.iter().map(|s| &*s.name).collect();
    assert_eq!(names, ["execute_tool", "execute_tool", "execute_tool"]);
    assert_eq!(attributes(&spans[0]).get("error.type").map(String::as_str), Some("unknown_tool"));
    let points = otel.durations();
    assert_eq!(points.len(), 1, "one series for every unknown name");
    assert_eq!(points[0].count(), 3);
    assert_eq!(
        point_attributes(&points[0]),
        map(&[
            ("error.type", "unknown_tool"),
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "_OTHER")
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn a_long_tool_name_is_cut_to_128_bytes_on_the_span() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    let name = "é".repeat(100);
    registry.call(&ToolCall::new("call_1", name.as_str(), "{}"), &ToolContext::new()).await;

    let recorded = attributes(&otel.spans()[0])["gen_ai.tool.name"].clone();
    assert_eq!(recorded, "é".repeat(64));
}

#[tokio::test(start_paused = true)]
async fn the_duration_histogram_has_the_conventions_buckets_and_attributes() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    let ctx = ToolContext::new();
    registry.call(&ToolCall::new("call_1", "lookup", r#"{"word":"tide"}"#), &ctx).await;
    registry.call(&ToolCall::new("call_2", "slow_lookup", r#"{"word":"tide"}"#), &ctx).await;

    let points = otel.durations();
    assert_eq!(points.len(), 2);
    for point in &points {
        assert_eq!(point.bounds().collect::<Vec<_>>(), EXECUTE_TOOL_DURATION_BUCKETS);
        assert_eq!(point.bounds().collect::<Vec<_>>()[..3], [0.01, 0.02, 0.04]);
        assert_eq!(point.bounds().last(), Some(81.92));
        assert_eq!(point.count(), 1);
    }
    let slow = points.iter().find(|p| point_attributes(p)["gen_ai.tool.name"] == "slow_lookup").unwrap();
    assert_eq!(
        point_attributes(slow),
        map(&[("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", "slow_lookup")])
    );
    // 3 s (the paused clock advances exactly): the bucket (2.56, 5.12].
    assert_eq!(slow.sum(), 3.0);
    let mut expected = vec![0u64; 15];
    expected[9] = 1;
    assert_eq!(slow.bucket_counts().collect::<Vec<_>>(), expected);
}

#[tokio::test(start_paused = true)]
async fn a_failed_calls_measurement_carries_its_error_type() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    registry.call(&ToolCall::new("call_3", "broken", "{}"), &ToolContext::new()).await;

    let points = otel.durations();
    assert_eq!(points.len(), 1);
    assert_eq!(
        point_attributes(&points[0]),
        map(&[("error.type", "failed"), ("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", "broken")])
    );
}

#[tokio::test(start_paused = true)]
async fn metrics_are_recorded_without_a_tracing_subscriber() {
    let metrics = InMemoryMetricExporter::default();
    let meters = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(metrics.clone()).build()).build();
    let registry = Registry::builder()
        .tool(lookup::TOOL)
        .meter(opentelemetry::metrics::MeterProvider::meter(&meters, "test"))
        .build()
        .unwrap();
    registry.call(&ToolCall::new("call_1", "lookup", r#"{"word":"tide"}"#), &ToolContext::new()).await;
    meters.force_flush().unwrap();
    let exported = metrics.get_finished_metrics().unwrap();
    let names: Vec<String> = exported
        .last()
        .unwrap()
        .scope_metrics()
        .flat_map(|scope| scope.metrics().map(|m| m.name().to_owned()))
        .collect();
    assert_eq!(names, ["gen_ai.execute_tool.duration"]);
}

/// A host's span of one call, as `tool-mcp` makes a `tools/call` SERVER span: the fields the
/// registry records on it declared, `error.type` the host's.
fn host_span() -> tracing::Span {
    tracing::info_span!(
        "host_request",
        otel.name = "tools/call lookup",
        otel.kind = "server",
        gen_ai.tool.name = "lookup",
        gen_ai.tool.call.id = tracing::field::Empty,
        gen_ai.tool.call.arguments = tracing::field::Empty,
        gen_ai.tool.call.result = tracing::field::Empty,
        error.type = tracing::field::Empty,
        outcome = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    )
}

#[tokio::test(start_paused = true)]
async fn a_call_given_its_hosts_span_records_on_it_and_opens_no_span_of_its_own() {
    let otel = Otel::new();
    let registry = otel.registry(true);
    let host = host_span();
    let ctx = ToolContext::builder().call_span(host.clone()).build();
    let call = ToolCall::new("call_7", "lookup", r#"{"word":"tide"}"#);
    let message = tracing::Instrument::instrument(registry.call(&call, &ctx), host.clone()).await;
    assert_eq!(message.text(), "tide: found");
    drop((host, ctx));

    let spans = otel.spans();
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(spans[0].name, "tools/call lookup");
    assert_eq!(spans[0].span_kind, SpanKind::Server);
    assert_eq!(
        attributes(&spans[0]),
        map(&[
            ("duration_ms", "0"),
            ("gen_ai.tool.call.arguments", r#"{"word":"tide"}"#),
            ("gen_ai.tool.call.id", "call_7"),
            ("gen_ai.tool.call.result", "tide: found"),
            ("gen_ai.tool.name", "lookup"),
            ("outcome", "ok"),
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn a_hosts_span_is_given_once_and_a_later_call_opens_its_own_span_under_it() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    let host = host_span();
    let ctx = ToolContext::builder().call_span(host.clone()).build();
    let both = async {
        registry.call(&ToolCall::new("call_1", "lookup", r#"{"word":"a"}"#), &ctx).await;
        registry.call(&ToolCall::new("call_2", "lookup", r#"{"word":"b"}"#), &ctx).await;
    };
    tracing::Instrument::instrument(both, host.clone()).await;
    drop((host, ctx));

    let spans = otel.spans();
    let names: Vec<&str> = spans.iter().map(|s| &*s.name).collect();
    assert_eq!(names, ["execute_tool lookup", "tools/call lookup"]);
    assert_eq!(attributes(&spans[1]).get("gen_ai.tool.call.id").map(String::as_str), Some("call_1"));
    assert_eq!(attributes(&spans[0]).get("gen_ai.tool.call.id").map(String::as_str), Some("call_2"));
    assert_eq!(spans[0].parent_span_id, spans[1].span_context.span_id());
}

#[tokio::test(start_paused = true)]
async fn a_failed_call_leaves_error_type_and_the_status_of_its_hosts_span_to_the_host() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    let host = host_span();
    let ctx = ToolContext::builder().call_span(host.clone()).build();
    let message =
        tracing::Instrument::instrument(registry.call(&ToolCall::new("call_3", "broken", "{}"), &ctx), host.clone())
            .await;
    assert!(message.is_error);
    drop((host, ctx));

    let spans = otel.spans();
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0].status, Status::Unset);
    let attributes = attributes(&spans[0]);
    assert_eq!(attributes.get("outcome").map(String::as_str), Some("error"));
    assert_eq!(attributes.get("error.type"), None);
}

#[tokio::test(start_paused = true)]
async fn a_replayed_call_is_not_a_new_execution_and_its_key_is_never_recorded() {
    use tool_runtime::idempotency::{Idempotency, MemoryIdempotencyStore};
    let otel = Otel::new();
    let registry = Registry::builder()
        .tool(lookup::TOOL)
        .idempotency(Idempotency::new(MemoryIdempotencyStore::new()))
        .meter(opentelemetry::metrics::MeterProvider::meter(&otel.meters, "test"))
        .build()
        .unwrap();
    let key = "key-4f1c-secret";
    for id in ["call_1", "call_2"] {
        let call = ToolCall::new(id, "lookup", r#"{"word":"tide"}"#).with_idempotency_key(key);
        assert_eq!(registry.call(&call, &ToolContext::new()).await.text(), "tide: found");
    }

    let spans = otel.spans();
    let outcomes: Vec<Option<String>> = spans.iter().map(|s| attributes(s).get("outcome").cloned()).collect();
    assert_eq!(outcomes, [Some("ok".to_owned()), Some("replayed".to_owned())]);
    let durations = otel.durations();
    assert_eq!(durations.len(), 1);
    assert_eq!(durations[0].count(), 1, "a replay is measured as an execution");
    let everything = format!("{spans:?}");
    // Not "4f1c" alone: a random trace or span id holds it now and then.
    for part in ["key-4f1c", "4f1c-secret"] {
        assert!(!everything.contains(part), "the key reached a span: {everything}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_before_it_ends_records_outcome_cancelled_on_its_own_span() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    let call = ToolCall::new("call_4", "slow_lookup", r#"{"word":"ebb"}"#);
    let ctx = ToolContext::new();
    // The caller stops waiting after 1 s of the tool's 3 s (a client's cancel drops the future).
    let waited = tokio::time::timeout(Duration::from_secs(1), registry.call(&call, &ctx)).await;
    assert!(waited.is_err());

    let spans = otel.spans();
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0].name, "execute_tool slow_lookup");
    assert_eq!(spans[0].status, Status::Unset);
    let attributes = attributes(&spans[0]);
    assert_eq!(attributes.get("outcome").map(String::as_str), Some("cancelled"));
    assert_eq!(attributes.get("duration_ms").map(String::as_str), Some("1000"));
    assert_eq!(attributes.get("error.type"), None);
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_before_it_ends_records_outcome_cancelled_on_its_hosts_span_once() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    let host = host_span();
    let ctx = ToolContext::builder().call_span(host.clone()).build();
    let call = ToolCall::new("call_5", "slow_lookup", r#"{"word":"ebb"}"#);
    let running = tracing::Instrument::instrument(registry.call(&call, &ctx), host.clone());
    assert!(tokio::time::timeout(Duration::from_secs(2), running).await.is_err());
    drop((host, ctx));

    let spans = otel.spans();
    assert_eq!(spans.len(), 1);
    let mut keys: Vec<&str> = spans[0].attributes.iter().map(|kv| kv.key.as_str()).collect();
    let all = keys.len();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), all, "a key twice: {:?}", spans[0].attributes);
    let attributes = attributes(&spans[0]);
    assert_eq!(attributes.get("outcome").map(String::as_str), Some("cancelled"));
    assert_eq!(attributes.get("duration_ms").map(String::as_str), Some("2000"));
    assert_eq!(attributes.get("gen_ai.tool.call.id").map(String::as_str), Some("call_5"));
}

#[tokio::test(start_paused = true)]
async fn a_call_that_ends_records_its_outcome_once_and_not_cancelled() {
    let otel = Otel::new();
    let registry = otel.registry(false);
    let call = ToolCall::new("call_6", "slow_lookup", r#"{"word":"ebb"}"#);
    assert_eq!(registry.call(&call, &ToolContext::new()).await.text(), "ebb: found late");

    let spans = otel.spans();
    let outcomes: Vec<String> =
        spans[0].attributes.iter().filter(|kv| kv.key.as_str() == "outcome").map(|kv| kv.value.to_string()).collect();
    assert_eq!(outcomes, ["ok"]);
}

#[tokio::test(start_paused = true)]
async fn a_hosts_span_given_to_a_call_tool_call_is_taken_by_its_inner_call() {
    let otel = Otel::new();
    let registry = Registry::builder().tool(lookup::TOOL).defer_tools(["lookup"]).build().unwrap();
    let host = host_span();
    let ctx = ToolContext::builder().call_span(host.clone()).build();
    let call = ToolCall::new("call_7", "call_tool", r#"{"name":"lookup","arguments":{"word":"reef"}}"#);
    let message = tracing::Instrument::instrument(registry.call_with_search(&call, &ctx), host.clone()).await;
    assert_eq!(message.text(), "reef: found");
    drop((host, ctx));

    let spans = otel.spans();
    let names: Vec<&str> = spans.iter().map(|s| &*s.name).collect();
    assert_eq!(names, ["tools/call lookup"], "the meta-tool's answer is no call of its own");
    assert_eq!(attributes(&spans[0]).get("outcome").map(String::as_str), Some("ok"));
}
