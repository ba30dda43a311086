//! What a call tells an observability stack, by the OpenTelemetry semantic conventions for
//! generative AI (`gen_ai.*`, status Development): the `execute_tool` span of every
//! [`Registry`](crate::Registry) call and the `gen_ai.execute_tool.duration` histogram.
//!
//! # The span
//!
//! Every call runs in one `tracing` span (the one instrumentation path): its own, named `tool_call`
//! for `tracing` subscribers and `execute_tool {gen_ai.tool.name}` for OpenTelemetry (its
//! `otel.name` field, which `tracing-opentelemetry` reads), kind INTERNAL (`otel.kind`), unless
//! its host handed it a span of its own ("A host's span" below). Its fields:
//!
//! | field | value | when |
//! |---|---|---|
//! | `gen_ai.operation.name` | `execute_tool` | always |
//! | `gen_ai.tool.name` | the tool's name as the call named it, cut to [`MAX_NAME_BYTES`] | always |
//! | `gen_ai.tool.call.id` | the call's id, cut to [`MAX_NAME_BYTES`] | always |
//! | `gen_ai.tool.type` | `function` | always |
//! | `gen_ai.tool.description` | the tool's description | the tool exists |
//! | `error.type` | [`error_type`] of the failure, e.g. `invalid_arguments` | the call failed |
//! | `otel.status_code` | `error` (no description: an error's text may quote the model's input) | the call failed |
//! | `gen_ai.tool.call.arguments` | the arguments, through [`captured`] | content capture is on |
//! | `gen_ai.tool.call.result` | the result's text, through [`captured`] | content capture is on |
//! | `session_id`, `outcome`, `duration_ms` | the context's session, `ok`/`done`/`error`/`denied`/`replayed`/..., whole milliseconds | for `tracing` logs |
//!
//! A call whose future is dropped before it ends (its caller stopped waiting: an MCP client's
//! cancel, a tool that asked for input and whose request was answered `input_required`, a
//! timeout around `Registry::call`) records `outcome` `cancelled` and `duration_ms` when it is
//! dropped, and no `error.type` or status: nothing failed.
//!
//! A call to a tool the registry does not have is named `execute_tool` alone, so that a model (or
//! a client) sending made-up names cannot make new span names.
//!
//! # A host's span
//!
//! A host that already has a span for the one call it makes (an MCP server's `tools/call {name}`
//! SERVER span, which the MCP conventions make compatible with `execute_tool`) hands it over with
//! [`ToolContextBuilder::call_span`](crate::ToolContextBuilder::call_span), and the call has one
//! span rather than two. The registry then opens no `tool_call` span; on the host's span it
//! records `gen_ai.tool.call.id`, `outcome` and `duration_ms` in one pass, then the captured
//! content when capture is on. The host gives everything else when it makes the span
//! (`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.type`, `gen_ai.tool.description`),
//! declares the fields the registry records empty (`tracing::field::Empty`: `tracing` ignores a
//! value for a field the span does not declare, and `tracing-opentelemetry` appends a value
//! recorded on a field that had one, which makes two attributes of one key), runs the call inside
//! the span (the registry does not enter it), and records `error.type` and the status itself. The
//! span is taken by the context's first call only. A call dropped before it ends records
//! `gen_ai.tool.call.id`, `outcome` (`cancelled`) and `duration_ms` on it as well, each once.
//! `session_id` is the host's to declare and record.
//!
//! # Content capture
//!
//! Off by default: arguments and results are sensitive (the conventions make them opt-in).
//! [`RegistryBuilder::capture_content`](crate::RegistryBuilder::capture_content)`(true)` turns it
//! on for one registry. Even then, every captured value passes through [`captured`], the one
//! place that decides what of a value may leave the process.
//!
//! # Never recorded
//!
//! With capture off: no argument or result text, and no error text (an error's message may quote
//! the model's input, e.g. ``invalid arguments for `x`: unknown field `password` ``); the span
//! carries the error's kind only. With capture on: arguments that are not a JSON object are
//! recorded as their length only. Never: the values of the call's context (principal,
//! dependencies) or any header, except its session id (`session_id`, for logs), which the host
//! chooses and which is exported with the span: it must be a key, not a secret
//! ([`ToolContextBuilder::session_id`](crate::ToolContextBuilder::session_id)).
//!
//! # Metrics (feature `otel`)
//!
//! `gen_ai.execute_tool.duration`, a histogram of seconds with the bucket boundaries
//! [`EXECUTE_TOOL_DURATION_BUCKETS`], one measurement per call the registry answers, with the
//! attributes `gen_ai.operation.name` (`execute_tool`), `gen_ai.tool.name` (the registered name, or
//! `_OTHER` for a tool the registry does not have: a made-up name never becomes a new series) and
//! `error.type` when the call failed. A call answered from the idempotency store (a replay, its
//! span's `outcome` is `replayed`) is not measured: it is not a new execution. Recorded on the registry's meter: the global meter provider's
//! (`opentelemetry::global`, as it is when the registry is built) unless
//! `RegistryBuilder::meter` (feature `otel`) gives one.

use crate::call::ToolCall;
use crate::error::ToolErrorKind;
use crate::result::ToolMessage;
use crate::tool::Tool;

#[cfg(feature = "otel")]
pub use opentelemetry;

/// The bucket boundaries of `gen_ai.execute_tool.duration`, in seconds, as the GenAI conventions
/// advise: 0.01 doubling to 81.92.
pub const EXECUTE_TOOL_DURATION_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/// The most bytes of a name or id from a call that a span records (MCP's longest tool name is 128
/// bytes); longer ones are cut at a character boundary.
pub const MAX_NAME_BYTES: usize = 128;

/// The instrumentation scope of the spans and metrics of this crate.
pub const SCOPE: &str = "tool-runtime";

/// The `error.type` of a failed call: its [`ToolErrorKind`] in snake_case (`unknown_tool`,
/// `invalid_arguments`, `dependency`, `permission_denied`, `turn_stopped`, `cancelled`,
/// `timed_out`, `registry_closed`, `failed` for a tool's own error, `panicked`, `unavailable`). A short, fixed
/// set: never the error's text.
pub const fn error_type(kind: ToolErrorKind) -> &'static str {
    match kind {
        ToolErrorKind::UnknownTool => "unknown_tool",
        ToolErrorKind::InvalidArguments => "invalid_arguments",
        ToolErrorKind::Dependency => "dependency",
        ToolErrorKind::PermissionDenied => "permission_denied",
        ToolErrorKind::TurnStopped => "turn_stopped",
        ToolErrorKind::Cancelled => "cancelled",
        ToolErrorKind::TimedOut => "timed_out",
        ToolErrorKind::RegistryClosed => "registry_closed",
        ToolErrorKind::Failed => "failed",
        ToolErrorKind::Panicked => "panicked",
        ToolErrorKind::Unavailable => "unavailable",
    }
}

/// `text` cut to at most [`MAX_NAME_BYTES`] bytes, at a character boundary.
pub fn bounded(text: &str) -> &str {
    if text.len() <= MAX_NAME_BYTES {
        return text;
    }
    let mut end = MAX_NAME_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A value content capture would record.
#[derive(Clone, Copy)]
pub enum Content<'a> {
    /// A call's arguments (`gen_ai.tool.call.arguments`), with its tool when the registry has it.
    Arguments {
        /// The tool called, `None` for an unknown tool.
        tool: Option<&'a dyn Tool>,
        /// The call.
        call: &'a ToolCall,
    },
    /// A call's result (`gen_ai.tool.call.result`).
    Result {
        /// The tool called, `None` for an unknown tool.
        tool: Option<&'a dyn Tool>,
        /// The message the model reads.
        message: &'a ToolMessage,
    },
}

/// The text content capture records of `content`: the one function every captured value passes
/// through, so that what must never leave the process (secret parameters, idempotency keys) is
/// taken out in one place.
///
/// - Arguments: the JSON object re-written compactly, with every value the tool's input schema
///   marks `writeOnly` (a [`Secret<T>`](crate::Secret)) as `"[redacted]"`
///   ([`redact_arguments`](crate::redact_arguments)); anything else (not JSON, not an object) as
///   `<N bytes that are not a JSON object>`, and the arguments of an unknown tool (no schema to
///   tell its secrets by) as `<N bytes of arguments of an unknown tool>`, since what cannot be
///   read cannot be checked.
/// - A result: the message's text ([`ToolMessage::text`]), which the registry has already
///   scrubbed of the call's secret values ("Secret arguments" on [`Registry`](crate::Registry)).
///
/// An idempotency key is never among them: it travels beside the arguments
/// ([`ToolCall::idempotency_key`](crate::ToolCall::idempotency_key)), never in them.
pub fn captured(content: Content<'_>) -> String {
    match content {
        Content::Arguments { tool, call } => {
            let Some(tool) = tool else {
                return format!("<{} bytes of arguments of an unknown tool>", call.arguments.len());
            };
            let redacted = crate::redact_arguments(&call.arguments, &tool.definition().input_schema);
            match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&redacted) {
                Ok(object) => serde_json::Value::Object(object).to_string(),
                Err(_) => format!("<{} bytes that are not a JSON object>", call.arguments.len()),
            }
        }
        Content::Result { tool: _, message } => message.text().into_owned(),
    }
}

/// A registry's telemetry settings and instruments.
#[derive(Clone, Default)]
pub(crate) struct Telemetry {
    /// Content capture ([`RegistryBuilder::capture_content`](crate::RegistryBuilder::capture_content)).
    pub(crate) capture_content: bool,
    /// `gen_ai.execute_tool.duration`, when metrics are recorded.
    #[cfg(feature = "otel")]
    pub(crate) duration: Option<opentelemetry::metrics::Histogram<f64>>,
}

impl Telemetry {
    /// The settings with the instruments made on `meter` (the global meter provider's when `None`).
    #[cfg(feature = "otel")]
    pub(crate) fn with_meter(capture_content: bool, meter: Option<opentelemetry::metrics::Meter>) -> Self {
        let meter = meter.unwrap_or_else(|| opentelemetry::global::meter(SCOPE));
        let duration = meter
            .f64_histogram("gen_ai.execute_tool.duration")
            .with_unit("s")
            .with_description("Duration of tool execution")
            .with_boundaries(EXECUTE_TOOL_DURATION_BUCKETS.to_vec())
            .build();
        Telemetry { capture_content, duration: Some(duration) }
    }

    /// Whether a call's duration is measured for a metric.
    #[inline]
    pub(crate) fn measures(&self) -> bool {
        #[cfg(feature = "otel")]
        {
            self.duration.is_some()
        }
        #[cfg(not(feature = "otel"))]
        {
            false
        }
    }

    /// Records one call's duration: `tool` is the registered name (`None`: not a tool of the
    /// registry), `error` the failure's `error.type`.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    pub(crate) fn record(&self, seconds: f64, tool: Option<std::sync::Arc<str>>, error: Option<&'static str>) {
        #[cfg(feature = "otel")]
        if let Some(duration) = &self.duration {
            use opentelemetry::KeyValue;
            let name: opentelemetry::StringValue = tool.map_or_else(|| "_OTHER".into(), Into::into);
            // On the stack, not a list on the heap a call.
            let attributes = [
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("gen_ai.tool.name", name),
                KeyValue::new("error.type", error.unwrap_or("")),
            ];
            duration.record(seconds, &attributes[..if error.is_some() { 3 } else { 2 }]);
        }
    }
}
