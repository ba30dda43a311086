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
//! [`LOG_QUEUE_LINES`] lines to a thread of their own ([`LogQueue`]), which writes them to standard
//! error. When standard error is closed, its writes fail and the lines are lost; when nobody reads
//! it (a full pipe), the queue fills and further lines are dropped, not waited for. Either way
//! every request is still answered. What is queued when the command ends is written then
//! ([`Telemetry::shutdown`], at most [`LOG_DRAIN`]). Nothing of the log ever goes to standard
//! output, which is the command's JSON result or, for `toolbox mcp` on standard input and output,
//! the MCP stream (`tracing-appender`'s non-blocking writer, used before, printed `Failed to send
//! shutdown signal to logging worker` there with `println!` when its queue was still full at the
//! end).
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
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime as _;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
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

/// The providers to flush when the command ends ([`Telemetry::shutdown`]), and the log's queue,
/// drained then.
pub(crate) struct Telemetry {
    providers: Option<(SdkTracerProvider, SdkMeterProvider)>,
    logs: LogQueue,
}

/// The longest [`Telemetry::shutdown`] waits for the queued log lines to be written: 1 s.
pub(crate) const LOG_DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// The queue of standard error's log lines (module docs): a bounded channel of at most
/// [`LOG_QUEUE_LINES`] lines to the thread `toolbox-logs`, which writes each to standard error as
/// it comes; a line that finds the queue full is dropped. `tracing-subscriber`'s `fmt` layer
/// writes one event as one `write` (the line it formatted), so a line is queued whole or not at
/// all. It writes to no stream but standard error, and never prints.
#[derive(Clone)]
pub(crate) struct LogQueue {
    lines: std::sync::mpsc::SyncSender<Vec<u8>>,
    /// The lines queued and not yet written, and the signal of each one written.
    pending: std::sync::Arc<(std::sync::Mutex<usize>, std::sync::Condvar)>,
}

impl LogQueue {
    /// Starts the thread that writes the queue's lines to `out` (standard error in `toolbox`).
    ///
    /// # Errors
    /// The thread cannot be started (the system's limit of threads).
    pub(crate) fn start(mut out: impl std::io::Write + Send + 'static) -> Result<Self, String> {
        let (lines, queued) = std::sync::mpsc::sync_channel::<Vec<u8>>(LOG_QUEUE_LINES);
        let pending = std::sync::Arc::new((std::sync::Mutex::new(0_usize), std::sync::Condvar::new()));
        let written = std::sync::Arc::clone(&pending);
        std::thread::Builder::new()
            .name("toolbox-logs".to_owned())
            .spawn(move || {
                for line in queued {
                    // A closed standard error loses the line; the next one is tried all the same.
                    let _ = out.write_all(&line).and_then(|()| out.flush());
                    let (count, signal) = &*written;
                    *count.lock().unwrap_or_else(std::sync::PoisonError::into_inner) -= 1;
                    signal.notify_all();
                }
            })
            .map_err(|e| format!("cannot start the thread that writes the log: {e}"))?;
        Ok(Self { lines, pending })
    }

    /// Queues `line`; `false` when the queue is full (the line is dropped).
    fn push(&self, line: &[u8]) -> bool {
        let (count, _) = &*self.pending;
        let mut count = count.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let queued = self.lines.try_send(line.to_vec()).is_ok();
        if queued {
            *count += 1;
        }
        queued
    }

    /// Waits until every queued line is written, at most `bound`; `true` when they were (a
    /// standard error nobody reads holds them up to the bound, and they are lost with the process).
    pub(crate) fn drain(&self, bound: std::time::Duration) -> bool {
        let (count, signal) = &*self.pending;
        let count = count.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (count, _) = signal
            .wait_timeout_while(count, bound, |count| *count > 0)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *count == 0
    }
}

impl std::io::Write for &LogQueue {
    /// Queues `bytes` as one line; a full queue drops it (still `Ok`: the log never fails or
    /// holds up the code that logs).
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.push(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogQueue {
    type Writer = &'a LogQueue;

    fn make_writer(&'a self) -> Self::Writer {
        self
    }
}

/// The base URL OTLP goes to: `flag`, else `OTEL_EXPORTER_OTLP_ENDPOINT`; `None` when neither (nor
/// a per-signal variable) is set, or `OTEL_SDK_DISABLED` is `true`.
fn endpoint(flag: Option<&str>) -> Option<Option<String>> {
    if variable("OTEL_SDK_DISABLED").is_some_and(|value| value.trim().eq_ignore_ascii_case("true")) {
        return None;
    }
    if let Some(flag) = flag {
        return Some(Some(flag.trim_end_matches('/').to_owned()));
    }
    let any = ENDPOINT_VARIABLES.iter().any(|name| variable(name).is_some());
    // The exporters read the variables themselves.
    any.then_some(None)
}

/// The value of the environment variable `name`, unless it is unset or blank.
fn variable(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}

/// The variables of the OTLP endpoints, which the exporters read themselves.
const ENDPOINT_VARIABLES: [&str; 3] =
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"];

/// Refuses an OTLP endpoint with userinfo (`http://user:password@host:4318`), from `flag`
/// (`--otlp-endpoint`) or a variable of [`ENDPOINT_VARIABLES`] (read through `var`): the exporter
/// does not send it as credentials, and its HTTP client's connection pool names the endpoint's
/// authority, userinfo included, in its TRACE lines (`-vv`), so the password would be logged.
///
/// # Errors
/// Naming the flag or the variable, never the URL, and where a credential goes instead
/// (`OTEL_EXPORTER_OTLP_HEADERS`).
fn no_endpoint_userinfo(flag: Option<&str>, var: impl Fn(&str) -> Option<String>) -> Result<(), String> {
    let has_userinfo = |url: &str| {
        let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
        rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())].contains('@')
    };
    let given = flag.map(|flag| ("--otlp-endpoint", flag.to_owned()));
    let variables = ENDPOINT_VARIABLES.iter().filter_map(|name| var(name).map(|value| (*name, value)));
    match given.into_iter().chain(variables).find(|(_, url)| has_userinfo(url)) {
        Some((source, _)) => Err(format!(
            "{source} has a user name or password in its URL (`user:password@`), which the OTLP exporter does not \
             send and the log would show; give the URL without it, and the credential as a header with \
             OTEL_EXPORTER_OTLP_HEADERS (e.g. `Authorization=Basic ...`)"
        )),
        None => Ok(()),
    }
}

/// What standard error's log takes: every target at `level`, except rmcp's
/// ([`tool_mcp::telemetry::RMCP_TARGET`]), which stays at WARN (or `level`, when it is less
/// verbose) whatever `-v` asks for. rmcp's INFO and DEBUG lines hold whole MCP messages (`received
/// request`: a `tools/call` with its arguments, secret ones included; `response message`: its
/// result; `received notification`: what an upstream's `notifications/message` said; `Service
/// initialized as server`: the client's `initialize`) and a legacy session's `Mcp-Session-Id`
/// (`create new session`, and the span `streamable_http_session` every line in the session
/// names): the serving rule is that nothing secret is logged. Its warnings and errors (a `Host` or
/// `Origin` refused, a session that failed, an error answered) are kept, without what a peer sent
/// ([`LogFormat`]).
fn log_filter(level: tracing::Level) -> tracing_subscriber::filter::Targets {
    let level = LevelFilter::from_level(level);
    tracing_subscriber::filter::Targets::new()
        .with_default(level)
        .with_target(tool_mcp::telemetry::RMCP_TARGET, level.min(LevelFilter::WARN))
}

/// The texts of rmcp's (3.11) warnings and errors that quote nothing: standard error's log writes
/// these as they are. Any other text of an rmcp event is left out ([`RmcpFields`]): rmcp writes a
/// failed legacy session's whole first message (`Failed to serve session: ...`), an upstream's
/// unreadable answer (`could not parse JSON response ...`, `Error reading from stream: ...`) and a
/// legacy session's id (`Failed to close session ...`) into the text itself.
const RMCP_TEXTS: [&str; 37] = [
    "Error sending notification",
    "Error sending response",
    "Failed to handle rejected refresh token",
    "Handle logging before handshake failed.",
    "Incoming message exceeded the maximum line length, discarding it",
    "Received unexpected message",
    "Shadow stream limit reached, dropping oldest",
    "Token refresh not possible, re-authorization required.",
    "authorization server issuer changed; clearing stored credentials bound to the previous issuer",
    "authorization server issuer changed; discarding tokens but keeping portable CIMD client ID",
    "fail to close sink",
    "fail to response message",
    "fail to send rejection error",
    "failed to persist SSE event",
    "failed to persist SSE priming event",
    "failed to send message to http service handler",
    "failed to send pending response during drain",
    "http request wise channel not found",
    "old-session POSTs did not finish before the recovery deadline",
    "rejected peer request",
    "rejected request with disallowed Host header (possible DNS rebinding attempt)",
    "rejected request with disallowed Origin header (possible cross-origin attack)",
    "rejected request with malformed Host header",
    "rejected request with malformed Origin header",
    "rejected request with missing Host header and no :authority",
    "rejected request with non-UTF-8 Host header",
    "rejected request with non-UTF-8 Origin header",
    "rejecting initialize: MCP-Protocol-Version header does not match params.protocolVersion",
    "response error",
    "response send task failed",
    "response send task failed during drain",
    "send request task encounter a tokio join error",
    "server supports no protocol version with an initialize handshake; rejecting",
    "session store load failed during restore",
    "stateless SSE resume failed, returning empty stream",
    "stored credentials belong to a different client; reauthorization required",
    "subscription notification buffer full",
];

/// The fields of rmcp's events whose values standard error's log writes: a JSON-RPC request's id
/// (`id`: the number or text the peer chose, which the framework's own lines name too), rmcp's
/// number of an HTTP request (`http_request_id`) and a buffer's size (`capacity`), each cut to its
/// first 128 bytes ([`tool_runtime::telemetry::bounded`], as the framework's spans cut an id) and
/// escaped as Rust escapes a string (`\n`, `\u{202e}`), so that a peer's id cannot make a line
/// long or forge another one. Every other
/// field is written as `[not logged]` (a whole message or notification, a session id, an error's
/// text), but for `error` holding a JSON-RPC error, written as its code (`error.code=-32602`).
const RMCP_LOGGED_FIELDS: [&str; 3] = ["id", "http_request_id", "capacity"];

/// What replaces a value or a text that standard error's log does not write.
const NOT_LOGGED: &str = "[not logged]";

/// The line format of standard error's log: `tracing-subscriber`'s full format without colours for
/// every target but rmcp's, whose events keep their time, level, target, a text of
/// [`RMCP_TEXTS`] and the fields of [`RMCP_LOGGED_FIELDS`], and say of anything else only that it is
/// not logged ([`RmcpFields`]): what the event happened is kept, what a peer sent is not.
struct LogFormat(tracing_subscriber::fmt::format::Format);

impl<S, N> FormatEvent<S, N> for LogFormat
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let metadata = event.metadata();
        if !tool_mcp::telemetry::within(metadata.target(), tool_mcp::telemetry::RMCP_TARGET) {
            return self.0.format_event(ctx, writer, event);
        }
        tracing_subscriber::fmt::time::SystemTime.format_time(&mut writer)?;
        let mut fields = RmcpFields::default();
        event.record(&mut fields);
        let text = match fields.text {
            Some(text) if RMCP_TEXTS.contains(&text.as_str()) => text,
            _ => {
                let file = metadata.file().unwrap_or("?");
                let file = file.rfind("/src/").map_or(file, |at| &file[at + 1..]);
                format!("an event at rmcp's {file}:{}, its text {NOT_LOGGED}", metadata.line().unwrap_or(0))
            }
        };
        writeln!(writer, " {:>5} {}: {text}{}", metadata.level().as_str(), metadata.target(), fields.rest)
    }
}

/// The fields of one rmcp event as standard error's log writes them ([`LogFormat`]): its text (the
/// first `message` field; a second one, such as the whole message of `Received unexpected
/// message`, is a field like any other), and ` name=value` for each other field, the value
/// [`NOT_LOGGED`] unless the field is one of [`RMCP_LOGGED_FIELDS`] or a JSON-RPC `error`.
#[derive(Default)]
struct RmcpFields {
    text: Option<String>,
    rest: String,
}

impl tracing::field::Visit for RmcpFields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write as _;
        let name = field.name();
        if name == "message" && self.text.is_none() {
            self.text = Some(format!("{value:?}"));
            return;
        }
        let _ = if RMCP_LOGGED_FIELDS.contains(&name) {
            // rmcp writes an id as its text (`%id`), which the peer chose: cut and escaped, it
            // cannot make the line long or start a forged one.
            let value = format!("{value:?}");
            write!(self.rest, " {name}={}", tool_runtime::telemetry::bounded(&value).escape_debug())
        } else if let Some(code) = (name == "error").then(|| json_rpc_code(&format!("{value:?}"))).flatten() {
            write!(self.rest, " error.code={code}")
        } else {
            write!(self.rest, " {name}={NOT_LOGGED}")
        };
    }
}

/// The code of a JSON-RPC error as rmcp's `ErrorData` debug-prints it (`ErrorData { code:
/// ErrorCode(-32602), message: ..., data: ... }`: the code comes first, so a message cannot
/// counterfeit it); `None` for any other text.
fn json_rpc_code(debug: &str) -> Option<i64> {
    let rest = debug.strip_prefix("ErrorData { code: ErrorCode(")?;
    rest[..rest.find(')')?].parse().ok()
}

/// Installs the logging to standard error at `level` ([`log_filter`], rmcp's lines as
/// [`LogFormat`] writes them) and, when export is on (module docs) and its endpoint has no
/// userinfo ([`no_endpoint_userinfo`]), the
/// OTLP exporters: the `tracing` layer of spans and the global meter provider (before any
/// registry is built, so that its instruments record there).
///
/// # Errors
/// An exporter that cannot be built (an endpoint that is not a URL), naming what to change.
pub(crate) fn init(level: tracing::Level, otlp_endpoint: Option<&str>) -> Result<Telemetry, String> {
    let queue = LogQueue::start(std::io::stderr())?;
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(queue.clone())
        .with_ansi(false)
        .event_format(LogFormat(tracing_subscriber::fmt::format().with_ansi(false)))
        .with_filter(log_filter(level));
    let Some(base) = endpoint(otlp_endpoint) else {
        tracing_subscriber::registry().with(logs).init();
        return Ok(Telemetry { providers: None, logs: queue });
    };
    no_endpoint_userinfo(otlp_endpoint, variable)?;
    let mut resource =
        Resource::builder().with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if variable("OTEL_SERVICE_NAME").is_none() {
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
    Ok(Telemetry { providers: Some((tracer_provider, meter_provider)), logs: queue })
}

impl Telemetry {
    /// Exports what is left and stops the exporters; a failure is written to standard error (the
    /// command's outcome stands). Then the queued log lines are written, waiting at most
    /// [`LOG_DRAIN`] ([`LogQueue::drain`]).
    pub(crate) fn shutdown(self) {
        if let Some((spans, metrics)) = self.providers {
            if let Err(error) = spans.shutdown() {
                eprintln!("toolbox: could not export the last OpenTelemetry spans: {error}");
            }
            if let Err(error) = metrics.shutdown() {
                eprintln!("toolbox: could not export the last OpenTelemetry metrics: {error}");
            }
        }
        self.logs.drain(LOG_DRAIN);
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

    /// The lines standard error's log writes for the events `emit` makes (its format, with no
    /// time: each line from its level on).
    fn logged(emit: impl FnOnce()) -> Vec<String> {
        let written = test_support::log::Log::default();
        let sink = written.clone();
        let layer = tracing_subscriber::fmt::layer()
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .event_format(LogFormat(tracing_subscriber::fmt::format().with_ansi(false)))
            .with_filter(log_filter(tracing::Level::TRACE));
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), emit);
        let text = written.text();
        text.lines().map(|line| line.split_once("Z ").map_or(line, |(_, rest)| rest).trim_start().to_owned()).collect()
    }

    /// rmcp's `ErrorData`, as its `Debug` writes it.
    #[derive(Debug)]
    struct ErrorData {
        #[allow(dead_code)]
        code: ErrorCode,
        #[allow(dead_code)]
        message: &'static str,
    }

    #[derive(Debug)]
    struct ErrorCode(#[allow(dead_code)] i32);

    #[test]
    fn an_rmcp_error_answered_is_logged_with_its_id_and_code_but_not_its_message() {
        let error = ErrorData { code: ErrorCode(-32602), message: "unknown tool `hunter2`" };
        let lines = logged(|| tracing::warn!(target: "rmcp::service", id = 4, ?error, "response error"));
        assert_eq!(lines, ["WARN rmcp::service: response error id=4 error.code=-32602"]);
    }

    #[test]
    fn a_request_id_the_peer_chose_is_logged_on_one_line_escaped_and_cut_to_128_bytes() {
        // rmcp writes the id with `%id`: its text as the peer sent it.
        let id = format!("7\n2026-12-06T20:00:00.000000Z ERROR toolbox: forged \u{202e}{}", "x".repeat(300));
        let lines = logged(|| tracing::warn!(target: "rmcp::service", id = %id, "response error"));
        // 128 bytes of it: 55 before the x's (the override is 3), then 73 x's.
        let kept = format!(r"7\n2026-12-06T20:00:00.000000Z ERROR toolbox: forged \u{{202e}}{}", "x".repeat(73));
        assert_eq!(lines, [format!("WARN rmcp::service: response error id={kept}")]);
    }

    #[test]
    fn a_second_message_field_of_rmcp_is_not_logged() {
        let message = "Request { method: \"sampling/createMessage\", text: \"hunter2\" }";
        let lines = logged(|| tracing::warn!(target: "rmcp::service::client", ?message, "Received unexpected message"));
        assert_eq!(lines, ["WARN rmcp::service::client: Received unexpected message message=[not logged]"]);
    }

    #[test]
    fn an_rmcp_text_that_quotes_something_is_replaced_by_where_rmcp_logged_it() {
        let session_id = "sess-hunter2";
        let lines =
            logged(|| tracing::error!(target: "rmcp::transport::tower", "Failed to close session {session_id}: gone"));
        let line = format!(
            "ERROR rmcp::transport::tower: an event at rmcp's src/telemetry.rs:{}, its text [not logged]",
            line!() - 3
        );
        assert_eq!(lines, [line]);
    }

    #[test]
    fn rmcp_fields_other_than_ids_and_counts_are_not_logged_but_named() {
        let lines = logged(|| {
            tracing::warn!(target: "rmcp::transport", session_id = "sess-hunter2", error = %"broken pipe", capacity = 8, "subscription notification buffer full");
        });
        assert_eq!(
            lines,
            [
                "WARN rmcp::transport: subscription notification buffer full session_id=[not logged] error=[not logged] capacity=8"
            ]
        );
    }

    #[test]
    fn an_error_field_that_only_looks_like_a_json_rpc_error_is_not_logged() {
        let error = "ErrorData { code: ErrorCode(x) hunter2";
        let lines = logged(|| tracing::warn!(target: "rmcp::service", %error, "response error"));
        assert_eq!(lines, ["WARN rmcp::service: response error error=[not logged]"]);
    }

    #[test]
    fn the_lines_of_other_targets_keep_the_full_format_with_every_field() {
        let lines = logged(|| tracing::warn!(target: "tool_mcp::http", tool = "read", "a line"));
        assert_eq!(lines, ["WARN tool_mcp::http: a line tool=\"read\""]);
    }

    #[test]
    fn the_log_queue_writes_its_lines_in_order_and_drains() {
        let out = test_support::log::Log::default();
        let queue = LogQueue::start(out.clone()).unwrap();
        for line in ["one\n", "two\n", "three\n"] {
            std::io::Write::write_all(&mut &queue, line.as_bytes()).unwrap();
        }
        assert!(queue.drain(LOG_DRAIN));
        assert_eq!(out.text(), "one\ntwo\nthree\n");
    }

    /// A writer whose first write says it started (on `entered`) and then waits until `release`
    /// is dropped, as a standard error nobody reads does.
    struct Stuck {
        entered: std::sync::mpsc::Sender<()>,
        release: std::sync::mpsc::Receiver<()>,
    }

    impl std::io::Write for Stuck {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let _ = self.entered.send(());
            let _ = self.release.recv();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stuck_standard_error_drops_lines_past_the_queue_and_bounds_the_drain() {
        let (entered, started) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let queue = LogQueue::start(Stuck { entered, release: released }).unwrap();
        assert!(queue.push(b"taken by the writer\n"));
        started.recv().unwrap();
        let queued = (0..LOG_QUEUE_LINES + 5).filter(|_| queue.push(b"line\n")).count();
        assert_eq!(queued, LOG_QUEUE_LINES);
        assert!(!queue.drain(std::time::Duration::from_millis(10)));
        drop(release);
        assert!(queue.drain(std::time::Duration::from_secs(30)));
    }

    #[test]
    fn an_otlp_endpoint_with_a_password_is_refused_naming_its_source_but_not_the_url() {
        let none = |_: &str| None;
        let refusal = |source: &str| {
            format!(
                "{source} has a user name or password in its URL (`user:password@`), which the OTLP exporter does not \
                 send and the log would show; give the URL without it, and the credential as a header with \
                 OTEL_EXPORTER_OTLP_HEADERS (e.g. `Authorization=Basic ...`)"
            )
        };
        assert_eq!(
            no_endpoint_userinfo(Some("http://u:hunter2@127.0.0.1:4318"), none),
            Err(refusal("--otlp-endpoint"))
        );
        let traces = |name: &str| {
            (name == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").then(|| "https://k@otlp.example/v1/traces".to_owned())
        };
        assert_eq!(no_endpoint_userinfo(None, traces), Err(refusal("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")));
        // An `@` in the path or the query is no userinfo.
        assert_eq!(no_endpoint_userinfo(Some("http://127.0.0.1:4318/a@b?c=@d"), none), Ok(()));
        assert_eq!(no_endpoint_userinfo(None, none), Ok(()));
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
