//! Logs and OpenTelemetry: what the process tells standard error and, when asked, an OTLP
//! receiver.
//!
//! Export is on when `--otlp-endpoint URL` is given, or the standard variable
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`) is set, unless `OTEL_SDK_DISABLED=true`. Then spans go
//! through a batch exporter and metrics through a periodic reader (every 60 s, or
//! `OTEL_METRIC_EXPORT_INTERVAL` ms), both OTLP over HTTP with protobuf (`{endpoint}/v1/traces`,
//! `{endpoint}/v1/metrics`); the other standard variables (`OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*`) apply as the
//! OpenTelemetry SDK reads them. The resource's `service.name` is `OTEL_SERVICE_NAME`, else
//! `toolbox`; `service.version` is this binary's version. Both are flushed when the command ends
//! (a served MCP server ends on SIGINT or SIGTERM).
//!
//! What the spans and metrics hold is in `tool_runtime::telemetry` and `tool_mcp::telemetry`; the
//! `tracing` layer is `tool_mcp::telemetry::otel_layer` (the conventions' attributes only).
//!
//! Log lines never hold up the code that logs them: they go through a queue of at most
//! [`LOG_QUEUE_LINES`] lines to a thread of their own (`tracing-appender`'s non-blocking writer),
//! which writes them to standard error. When standard error is closed, its writes fail and the
//! lines are lost; when nobody reads it (a full pipe), the queue fills and further lines are
//! dropped, not waited for. Either way every request is still answered. What is queued when the
//! command ends is written then ([`Telemetry::shutdown`], at most one second).
//!
//! Content capture (the arguments and results of tool calls on their spans, `execute_tool` or a
//! served call's `tools/call` SERVER span: `gen_ai.tool.call.arguments` and
//! `gen_ai.tool.call.result`) is off unless `--capture-content`
//! is given or [`CAPTURE_CONTENT_ENV`] turns it on ([`capture_content`]).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The most log lines waiting for standard error; more are dropped (module docs).
pub(crate) const LOG_QUEUE_LINES: usize = 1_000;

/// The variable the OpenTelemetry GenAI instrumentations read for content capture
/// (`opentelemetry-util-genai`, the OpenAI instrumentation of `opentelemetry-python-contrib`).
pub(crate) const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// Whether the registries capture content: `true` with `flag` (`--capture-content`), else by
/// [`CAPTURE_CONTENT_ENV`] (`value`, its text when set), read without regard to case: `true`,
/// `SPAN_ONLY` and `SPAN_AND_EVENT` turn it on; unset, empty, `false`, `NO_CONTENT` and
/// `EVENT_ONLY` leave it off (toolbox records content on spans only, and emits no events, so
/// `EVENT_ONLY` captures nothing). Secret arguments are `[redacted]` either way
/// (`tool_runtime::telemetry::captured`).
///
/// # Errors
/// Any other value, naming the variable and the values it takes (a typo must not leave an operator
/// believing content is captured, nor that it is not).
pub(crate) fn capture_content(flag: bool, value: Option<&str>) -> Result<bool, String> {
    if flag {
        return Ok(true);
    }
    let Some(value) = value.map(str::trim).filter(|value| !value.is_empty()) else {
        return Ok(false);
    };
    let on = ["true", "SPAN_ONLY", "SPAN_AND_EVENT"];
    let off = ["false", "NO_CONTENT", "EVENT_ONLY"];
    if on.iter().any(|word| value.eq_ignore_ascii_case(word)) {
        Ok(true)
    } else if off.iter().any(|word| value.eq_ignore_ascii_case(word)) {
        Ok(false)
    } else {
        Err(format!(
            "{CAPTURE_CONTENT_ENV} is `{}`, which is not a value it takes; set it to `true`, `SPAN_ONLY` or `SPAN_AND_EVENT` to capture the arguments and results of tool calls on spans, or `false`, `NO_CONTENT` or `EVENT_ONLY` (or leave it unset) not to",
            quoted(value)
        ))
    }
}

/// `value` cut to 64 characters, for an error message that quotes it.
fn quoted(value: &str) -> String {
    value.chars().take(64).collect()
}

/// The providers to flush when the command ends ([`Telemetry::shutdown`]), and the log thread's
/// guard, which writes the queued lines when dropped.
pub(crate) struct Telemetry {
    providers: Option<(SdkTracerProvider, SdkMeterProvider)>,
    _logs: tracing_appender::non_blocking::WorkerGuard,
}

/// The base URL OTLP goes to: `flag`, else `OTEL_EXPORTER_OTLP_ENDPOINT`; `None` when neither (nor
/// a per-signal variable) is set, or `OTEL_SDK_DISABLED` is `true`.
fn endpoint(flag: Option<&str>) -> Option<Option<String>> {
    let var = |name: &str| std::env::var(name).ok().filter(|value| !value.trim().is_empty());
    if var("OTEL_SDK_DISABLED").is_some_and(|value| value.trim().eq_ignore_ascii_case("true")) {
        return None;
    }
    if let Some(flag) = flag {
        return Some(Some(flag.trim_end_matches('/').to_owned()));
    }
    let any =
        ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"]
            .iter()
            .any(|name| var(name).is_some());
    // The exporters read the variables themselves.
    any.then_some(None)
}

/// What standard error's log takes: every target at `level`, except rmcp's
/// ([`tool_mcp::telemetry::RMCP_TARGET`]), which stays at WARN (or `level`, when it is less
/// verbose) whatever `-v` asks for. rmcp's INFO and DEBUG lines hold whole MCP messages (`received
/// request`: a `tools/call` with its arguments, secret ones included; `response message`: its
/// result; `received notification`: what an upstream's `notifications/message` said; `Service
/// initialized as server`: the client's `initialize`) and a legacy session's `Mcp-Session-Id`
/// (`create new session`, and the span `streamable_http_session` every line in the session
/// names): the serving rule is that nothing secret is logged. Its warnings and errors (a `Host` or
/// `Origin` refused, a session that failed) are kept, but for those [`not_secret`] leaves out.
fn log_filter(level: tracing::Level) -> tracing_subscriber::filter::Targets {
    let level = LevelFilter::from_level(level);
    tracing_subscriber::filter::Targets::new()
        .with_default(level)
        .with_target(tool_mcp::telemetry::RMCP_TARGET, level.min(LevelFilter::WARN))
}

/// The fields of rmcp's events that standard error's log never writes, whatever their level:
/// `session_id` (rmcp's HTTP client names the upstream's `Mcp-Session-Id`, the import's credential
/// for its session, at ERROR when ending the session fails and at WARN when that times out) and
/// `notification` (a whole notification an upstream sent before its handshake ended, at WARN).
const UNLOGGED_RMCP_FIELDS: [&str; 2] = ["session_id", "notification"];

/// Whether standard error's log writes the lines of `metadata`'s callsite: every one but rmcp's
/// events with a field of [`UNLOGGED_RMCP_FIELDS`] (decided once a callsite).
fn not_secret(metadata: &tracing::Metadata<'_>) -> bool {
    let rmcp = tool_mcp::telemetry::within(metadata.target(), tool_mcp::telemetry::RMCP_TARGET);
    !(rmcp && metadata.fields().iter().any(|field| UNLOGGED_RMCP_FIELDS.contains(&field.name())))
}

/// Installs the logging to standard error at `level` ([`log_filter`], then [`not_secret`]) and, when export is on (module docs), the
/// OTLP exporters: the `tracing` layer of spans and the global meter provider (before any
/// registry is built, so that its instruments record there).
///
/// # Errors
/// An exporter that cannot be built (an endpoint that is not a URL), naming what to change.
pub(crate) fn init(level: tracing::Level, otlp_endpoint: Option<&str>) -> Result<Telemetry, String> {
    let (stderr, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .thread_name("toolbox-logs")
        .finish(std::io::stderr());
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(stderr)
        .with_ansi(false)
        .with_filter(log_filter(level))
        .with_filter(tracing_subscriber::filter::filter_fn(not_secret as fn(&tracing::Metadata<'_>) -> bool));
    let Some(base) = endpoint(otlp_endpoint) else {
        tracing_subscriber::registry().with(logs).init();
        return Ok(Telemetry { providers: None, _logs: guard });
    };
    let mut resource =
        Resource::builder().with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if std::env::var("OTEL_SERVICE_NAME").map_or(true, |name| name.trim().is_empty()) {
        resource = resource.with_service_name("toolbox");
    }
    let resource = resource.build();
    let why = |what: &str, error: &dyn std::fmt::Display| {
        format!(
            "cannot export OpenTelemetry {what}: {error}; give --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT) as a URL such as http://127.0.0.1:4318"
        )
    };
    let mut spans =
        opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
    let mut metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
    if let Some(base) = &base {
        spans = spans.with_endpoint(format!("{base}/v1/traces"));
        metrics = metrics.with_endpoint(format!("{base}/v1/metrics"));
    }
    let spans = spans.build().map_err(|e| why("spans", &e))?;
    let metrics = metrics.build().map_err(|e| why("metrics", &e))?;
    let tracer_provider =
        SdkTracerProvider::builder().with_batch_exporter(spans).with_resource(resource.clone()).build();
    let meter_provider = SdkMeterProvider::builder()
        .with_reader(opentelemetry_sdk::metrics::PeriodicReader::builder(metrics).build())
        .with_resource(resource)
        .build();
    opentelemetry::global::set_meter_provider(meter_provider.clone());
    let spans_layer = tool_mcp::telemetry::otel_layer(tracer_provider.tracer("toolbox")).with_filter(LevelFilter::INFO);
    tracing_subscriber::registry().with(logs).with(spans_layer).init();
    Ok(Telemetry { providers: Some((tracer_provider, meter_provider)), _logs: guard })
}

impl Telemetry {
    /// Exports what is left and stops the exporters; a failure is written to standard error (the
    /// command's outcome stands). Then the queued log lines are written (the guard's drop).
    pub(crate) fn shutdown(self) {
        if let Some((spans, metrics)) = self.providers {
            if let Err(error) = spans.shutdown() {
                eprintln!("toolbox: could not export the last OpenTelemetry spans: {error}");
            }
            if let Err(error) = metrics.shutdown() {
                eprintln!("toolbox: could not export the last OpenTelemetry metrics: {error}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_takes_every_target_at_its_level_but_rmcps_at_warnings_at_most() {
        use tracing::Level;
        let at = |level: Level, target: &str| -> Vec<Level> {
            let filter = log_filter(level);
            [Level::ERROR, Level::WARN, Level::INFO, Level::DEBUG, Level::TRACE]
                .into_iter()
                .filter(|line| filter.would_enable(target, line))
                .collect()
        };
        assert_eq!(
            at(Level::TRACE, "tool_mcp::http"),
            [Level::ERROR, Level::WARN, Level::INFO, Level::DEBUG, Level::TRACE]
        );
        assert_eq!(at(Level::DEBUG, "toolbox"), [Level::ERROR, Level::WARN, Level::INFO, Level::DEBUG]);
        assert_eq!(at(Level::TRACE, "rmcp::service"), [Level::ERROR, Level::WARN]);
        assert_eq!(
            at(Level::DEBUG, "rmcp::transport::streamable_http_server::session::local"),
            [Level::ERROR, Level::WARN]
        );
        assert_eq!(at(Level::WARN, "rmcp::service"), [Level::ERROR, Level::WARN]);
        assert_eq!(at(Level::ERROR, "rmcp::service"), [Level::ERROR]);
    }

    #[test]
    fn content_capture_is_off_without_the_flag_or_the_variable() {
        assert_eq!(capture_content(false, None), Ok(false));
        assert_eq!(capture_content(false, Some("  ")), Ok(false));
    }

    #[test]
    fn the_flag_turns_content_capture_on_whatever_the_variable_says() {
        assert_eq!(capture_content(true, None), Ok(true));
        assert_eq!(capture_content(true, Some("NO_CONTENT")), Ok(true));
        assert_eq!(capture_content(true, Some("bogus")), Ok(true));
    }

    #[test]
    fn the_variable_takes_the_genai_conventions_words_in_any_case() {
        for on in ["true", "TRUE", "span_only", "SPAN_ONLY", "SPAN_AND_EVENT", " true "] {
            assert_eq!(capture_content(false, Some(on)), Ok(true), "{on}");
        }
        for off in ["false", "False", "NO_CONTENT", "EVENT_ONLY", "event_only"] {
            assert_eq!(capture_content(false, Some(off)), Ok(false), "{off}");
        }
    }

    #[test]
    fn any_other_value_of_the_variable_is_an_error_naming_the_values_it_takes() {
        assert_eq!(
            capture_content(false, Some("yes")),
            Err("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is `yes`, which is not a value it takes; set it to \
                 `true`, `SPAN_ONLY` or `SPAN_AND_EVENT` to capture the arguments and results of tool calls on spans, \
                 or `false`, `NO_CONTENT` or `EVENT_ONLY` (or leave it unset) not to"
                .to_owned())
        );
        assert_eq!(capture_content(false, Some(&"x".repeat(500))).unwrap_err().matches('x').count(), 64);
    }
}
