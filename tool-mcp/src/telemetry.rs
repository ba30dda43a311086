//! What serving tells an observability stack, by the OpenTelemetry semantic conventions for MCP
//! (status Development): a SERVER span per request and, with the feature `otel`, trace context
//! taken from `params._meta` (SEP-414) and the `mcp.server.operation.duration` histogram. A leaf:
//! it knows no server.
//!
//! # The span of a request
//!
//! A `tracing` span named `mcp_request` for `tracing` subscribers and `{mcp.method.name}
//! {target}` for OpenTelemetry (`tools/call get_weather`; the method alone when there is no
//! target, or the target is not one the server serves: a client sending made-up names makes no
//! new span names), kind SERVER, a root of `tracing`'s tree (a transport's own spans, such as
//! rmcp's connection-long one, are not its parent). Its fields:
//!
//! | field | value | when |
//! |---|---|---|
//! | `mcp.method.name` | `tools/call`, `prompts/get`, `resources/read`, `tools/list`, ... | always |
//! | `jsonrpc.request.id` | the request's id, cut to 128 bytes | always |
//! | `network.transport` | `pipe` (standard input and output), `tcp` (Streamable HTTP) | always |
//! | `mcp.protocol.version` | the version the request or its session speaks | known |
//! | `gen_ai.tool.name`, `gen_ai.operation.name`, `gen_ai.tool.type`, `gen_ai.tool.description` | the tool, `execute_tool`, `function`, its description | `tools/call` of a served tool |
//! | `gen_ai.tool.call.id`, `outcome`, `duration_ms`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result` | as on the registry's span ([`tool_runtime::telemetry`]; `outcome` `cancelled` for a call the client cancelled or that asked for input) | `tools/call` run in its request (the content when capture is on) |
//! | `gen_ai.prompt.name` | the prompt's name, cut to 128 bytes | `prompts/get` |
//! | `error.type` | the JSON-RPC error code as text (`-32602`), `tool_error` for a result with `isError: true`, or `cancelled` for a `tools/call` the client cancelled (`notifications/cancelled`) and a request whose future was dropped before it answered (its HTTP client went away) | the request failed or was cancelled |
//! | `rpc.response.status_code` | the JSON-RPC error code as text | an error response |
//! | `otel.status_code` | `error` | a server error or `tool_error`; never for -32700, -32600, -32601, -32602, -32002 or `cancelled`, which are the client's |
//!
//! # One span a call
//!
//! A `tools/call` run in its request has one span: its SERVER span is also the tool's execution
//! span. The conventions make the two compatible, and where one instrumentation already traces
//! the execution the other adds its attributes rather than opening a second span; a second span
//! would cost every call as much again. The span goes to the registry in the call's context
//! ([`ToolContextBuilder::call_span`](tool_runtime::ToolContextBuilder::call_span)), which
//! records the execution's end on it ([`tool_runtime::telemetry`], "A host's span"); its
//! `error.type` stays this layer's. A `tools/call` of tool search's meta-tools, or one that
//! creates a task, does not hand its span over: `call_tool`'s inner call and a task's run open
//! their own `execute_tool` spans.
//!
//! A message refused before the handler saw it (the transport's check, a size or time limit, or
//! rmcp's refusal of an HTTP request with an error status) is a SERVER span too, named by its
//! method or `_OTHER`, with `error.type` the JSON-RPC code or rmcp's HTTP status (`refused`); a
//! request of a method MCP does not name is answered `-32601` in a span named `_OTHER`.
//!
//! Never recorded: `mcp.session.id` (a session id is what a client presents to be that session;
//! MCP 2026-07-28 has no sessions at all), headers, access tokens, arguments and results (content
//! capture is the registry's, [`tool_runtime::RegistryBuilder::capture_content`]).
//!
//! # Trace context (feature `otel`)
//!
//! The W3C `traceparent`, `tracestate` and `baggage` of a request's `params._meta` are the span's
//! parent; the HTTP request's own `traceparent` header (the ambient context of the HTTP hop) is a
//! link, or the parent when `_meta` has none. Values that do not parse are ignored.
//!
//! # Metrics (feature `otel`)
//!
//! `mcp.server.operation.duration`: a histogram of seconds with the bucket boundaries
//! [`OPERATION_DURATION_BUCKETS`], one measurement per request the handler answers or that is
//! dropped before it answers (`error.type` `cancelled`), with
//! `mcp.method.name`, `network.transport`, `mcp.protocol.version` (known), `gen_ai.tool.name`
//! (`tools/call` of a served tool) and `error.type` (failed). Recorded on the global meter
//! provider's meter `tool-mcp`, as it is when the first request is answered: install the provider
//! before serving.

use std::borrow::Cow;

use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use tokio::time::Instant;
use tool_runtime::telemetry::bounded;
use tracing::Instrument;

/// The bucket boundaries of `mcp.server.operation.duration` and `mcp.client.operation.duration`,
/// in seconds, as the MCP conventions advise.
pub const OPERATION_DURATION_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// The JSON-RPC codes that are the client's errors, not the server's: parse error, invalid
/// request, method not found, invalid params, resource not found. A span with one of them keeps
/// its status unset.
pub const CLIENT_ERROR_CODES: [i32; 5] = [-32700, -32600, -32601, -32602, -32002];

/// What a request is about, for its span's name and attributes.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    /// No target (a listing, a task method).
    None,
    /// `tools/call` of a tool the server serves.
    Tool(&'a str),
    /// `tools/call` of a name the server does not serve.
    UnknownTool,
    /// `prompts/get` of this name (not in the span's name: it is the client's text).
    Prompt(&'a str),
}

/// The `error.type` of a request the client cancelled, or whose future was dropped before it
/// answered (the HTTP client went away): the client's act, so the span's status stays unset.
const CANCELLED: &str = "cancelled";

/// An answer's own failure beside a JSON-RPC error: a `tools/call` result with `isError: true`,
/// or a call the client cancelled.
pub(crate) trait Answer {
    /// Its `error.type`: `tool_error` for a tool result with `isError: true`, [`CANCELLED`] for a
    /// call the client cancelled, `None` for the rest.
    fn error_type(&self) -> Option<&'static str> {
        None
    }
}

impl Answer for rmcp::model::CallToolResponse {
    fn error_type(&self) -> Option<&'static str> {
        match self {
            rmcp::model::CallToolResponse::Complete(result) if result.is_error == Some(true) => Some("tool_error"),
            _ => None,
        }
    }
}

/// A `tools/call` answer, and whether the client cancelled the call (`notifications/cancelled`):
/// the answer of a cancelled call is never sent, and its span's `error.type` is [`CANCELLED`].
pub(crate) struct CallAnswer {
    /// What the handler answers.
    pub(crate) response: rmcp::model::CallToolResponse,
    /// The client cancelled the call.
    pub(crate) cancelled: bool,
}

impl CallAnswer {
    /// An answer of a call that was not cancelled.
    pub(crate) fn of(response: impl Into<rmcp::model::CallToolResponse>) -> Self {
        CallAnswer { response: response.into(), cancelled: false }
    }
}

impl Answer for CallAnswer {
    fn error_type(&self) -> Option<&'static str> {
        if self.cancelled { Some(CANCELLED) } else { self.response.error_type() }
    }
}

macro_rules! plain_answers {
    ($($t:ty),* $(,)?) => { $(impl Answer for $t {})* };
}

plain_answers!(
    (),
    rmcp::model::GetPromptResponse,
    rmcp::model::ReadResourceResponse,
    rmcp::model::ListToolsResult,
    rmcp::model::ListPromptsResult,
    rmcp::model::ListResourcesResult,
    rmcp::model::ListResourceTemplatesResult,
    rmcp::model::CompleteResult,
    rmcp::model::GetTaskResult,
    rmcp::model::CustomResult,
    rmcp::model::InitializeResult,
    rmcp::model::DiscoverResult,
);

/// `error.type` of an answer: the JSON-RPC code as text, `tool_error`, `cancelled`, or `None`.
fn error_type<T: Answer>(answer: &Result<T, ErrorData>) -> Option<String> {
    match answer {
        Err(error) => Some(error.code.0.to_string()),
        Ok(answer) => answer.error_type().map(str::to_owned),
    }
}

/// Whether `error.type` is the server's failure (the span's status is `error`): not one of
/// [`CLIENT_ERROR_CODES`], nor an HTTP status of the 4xx class, nor [`CANCELLED`].
fn is_server_error(error: &str) -> bool {
    error != CANCELLED
        && error.parse::<i32>().map_or(true, |code| !CLIENT_ERROR_CODES.contains(&code) && !(400..500).contains(&code))
}

/// The methods a client sends that MCP names (2025-11-25 and 2026-07-28): the only values of
/// `mcp.method.name` that a refused message's span and measurement carry.
const METHODS: [&str; 20] = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
    "tasks/update",
];

/// `method` as one of the methods MCP names, `None` for any other text (a client's made-up
/// method never becomes a span name or a metric series).
pub(crate) fn method_name(method: &str) -> Option<&'static str> {
    METHODS.iter().find(|known| **known == method).copied()
}

/// Records a message refused before the handler saw it (the transport's check of every message,
/// [`crate::incoming`], a body over the limit or too slow, or rmcp's own refusal of an HTTP
/// request): a SERVER span named by its method (`_OTHER` when the method was not read or is not one
/// MCP names, [`method_name`]), a root, with `mcp.method.name`, `jsonrpc.request.id` (when read),
/// `network.transport`, `error.type` (the JSON-RPC code as text, or the HTTP status rmcp answered
/// with, e.g. `404`) and `rpc.response.status_code` (a JSON-RPC code), ended at once; and its
/// measurement of `mcp.server.operation.duration` since `started`. The status stays unset: these
/// are the client's errors (a 5xx status of rmcp's is `error`).
pub(crate) fn refused(
    started: Instant,
    method: Option<&'static str>,
    id: Option<&serde_json::Value>,
    tcp: bool,
    error: &str,
    code: Option<i32>,
) {
    let method = method.unwrap_or("_OTHER");
    let transport = if tcp { "tcp" } else { "pipe" };
    let span = tracing::info_span!(
        parent: None,
        "mcp_request",
        otel.name = method,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = method,
        jsonrpc.request.id = tracing::field::Empty,
        network.transport = transport,
        error.type = error,
        rpc.response.status_code = tracing::field::Empty,
    );
    if !span.is_disabled() {
        match id {
            Some(serde_json::Value::String(id)) => span.record("jsonrpc.request.id", bounded(id)),
            Some(id) => span.record("jsonrpc.request.id", bounded(&id.to_string())),
            None => &span,
        };
        if let Some(code) = code {
            span.record("rpc.response.status_code", code.to_string());
        }
        if is_server_error(error) {
            span.record("otel.status_code", "error");
        }
    }
    if metrics::on() {
        metrics::record(false, started.elapsed().as_secs_f64(), method, transport, None, None, Some(error.to_owned()));
    }
}

/// The protocol versions MCP has published: a request of one of them records it without a copy.
const VERSIONS: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// The protocol version of the request (its `_meta`, MCP 2026-07-28) or of its session.
fn protocol_version(context: &RequestContext<RoleServer>) -> Option<Cow<'static, str>> {
    let version = context
        .meta
        .protocol_version()
        .or_else(|| context.peer.peer_info().map(|info| info.protocol_version.clone()))?;
    let text = version.as_str();
    Some(
        VERSIONS
            .iter()
            .find(|known| **known == text)
            .map_or_else(|| Cow::Owned(text.to_owned()), |known| Cow::Borrowed(*known)),
    )
}

/// The span name: `{method} {target}`, or the method alone.
struct SpanName<'a>(&'static str, Target<'a>);

impl std::fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Target::Tool(name) => write!(f, "{} {name}", self.0),
            _ => f.write_str(self.0),
        }
    }
}

/// The SERVER span of one request of `method` about `target` ([module docs](self)), with its
/// protocol `version`. Every value known at the start is given when the span is made, not recorded
/// after: each later record is one more pass through every layer.
fn server_span(
    method: &'static str,
    target: Target<'_>,
    description: Option<&str>,
    version: Option<&str>,
    context: &RequestContext<RoleServer>,
) -> tracing::Span {
    let http = context.extensions.get::<::http::request::Parts>();
    let (tool, prompt) = match target {
        Target::Tool(name) => (Some(name), None),
        Target::Prompt(name) => (None, Some(bounded(name))),
        Target::None | Target::UnknownTool => (None, None),
    };
    // A root: the transport's own spans (rmcp's connection-long `serve_inner`) are not a request's
    // parent; its parent is the caller's context, when it sent one.
    let span = tracing::info_span!(
        parent: None,
        "mcp_request",
        otel.name = %SpanName(method, target),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = method,
        jsonrpc.request.id = bounded(&context.id.to_string()),
        network.transport = if http.is_some() { "tcp" } else { "pipe" },
        mcp.protocol.version = version,
        gen_ai.tool.name = tool,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        gen_ai.tool.type = tool.map(|_| "function"),
        gen_ai.tool.description = description,
        gen_ai.tool.call.id = tracing::field::Empty,
        gen_ai.prompt.name = prompt,
        error.type = tracing::field::Empty,
        rpc.response.status_code = tracing::field::Empty,
        gen_ai.tool.call.arguments = tracing::field::Empty,
        gen_ai.tool.call.result = tracing::field::Empty,
        outcome = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    );
    #[cfg(feature = "otel")]
    if !span.is_disabled() {
        context_of::adopt(&span, &context.meta, http.map(|parts| &parts.headers));
    }
    span
}

/// The span of a task's run: `task_run {tool}` (the tool the task runs), kind INTERNAL, a root
/// that follows from (links to) the span current where the run starts: the request that created
/// the task, or the `tasks/update` that started it again. The run outlives that request, so it is
/// not its child. The task's id is not recorded (it is what a client presents to reach the task).
pub(crate) fn task_span(tool: &str) -> tracing::Span {
    let tool = bounded(tool);
    let span = tracing::info_span!(
        parent: None,
        "mcp_task_run",
        otel.name = %format_args!("task_run {tool}"),
        otel.kind = "internal",
        gen_ai.tool.name = tool,
        gen_ai.operation.name = "execute_tool",
    );
    if !span.is_disabled() {
        span.follows_from(tracing::Span::current());
    }
    span
}

/// Answers one request of `method` about `target` with `work`, in its SERVER span, recording the
/// outcome on the span and the duration on `mcp.server.operation.duration` ([module docs](self)).
pub(crate) async fn observed<T: Answer>(
    method: &'static str,
    target: Target<'_>,
    context: &RequestContext<RoleServer>,
    work: impl Future<Output = Result<T, ErrorData>>,
) -> Result<T, ErrorData> {
    observed_with(method, target, None, context, |_| work).await
}

/// Answers a `tools/call` of `target` (a tool whose description is `description`) with the
/// future `work` makes of its SERVER span ([module docs](self), "One span a call"): the call
/// hands that span to the registry, which records the tool's execution on it.
pub(crate) async fn observed_call<F: Future<Output = Result<CallAnswer, ErrorData>>>(
    target: Target<'_>,
    description: Option<&str>,
    context: &RequestContext<RoleServer>,
    work: impl FnOnce(tracing::Span) -> F,
) -> Result<rmcp::model::CallToolResponse, ErrorData> {
    observed_with("tools/call", target, description, context, work).await.map(|answer| answer.response)
}

/// [`observed`], with the tool's `description` on the span, and `work` made of the span.
async fn observed_with<T: Answer, F: Future<Output = Result<T, ErrorData>>>(
    method: &'static str,
    target: Target<'_>,
    description: Option<&str>,
    context: &RequestContext<RoleServer>,
    work: impl FnOnce(tracing::Span) -> F,
) -> Result<T, ErrorData> {
    let measured = metrics::on();
    // Looked up once, for the span and the metric.
    let version = protocol_version(context);
    let span = server_span(method, target, description, version.as_deref(), context);
    if span.is_disabled() && !measured {
        return work(span).await;
    }
    let work = work(span.clone());
    let mut request = Request { span, measured, method, target, context, version, started: Instant::now(), open: true };
    let answer = if request.span.is_disabled() { work.await } else { work.instrument(request.span.clone()).await };
    request.open = false;
    let error = error_type(&answer);
    let code = answer.as_ref().err().map(|data| data.code.0);
    request.ended(error, code);
    answer
}

/// A request being answered, for its span's and its measurement's end ([`observed_with`]). Dropped
/// while `open` (its future was dropped before it answered: the HTTP client went away), it ends
/// with `error.type` [`CANCELLED`], so that its span says how it ended and it is measured.
struct Request<'a> {
    span: tracing::Span,
    measured: bool,
    method: &'static str,
    target: Target<'a>,
    context: &'a RequestContext<RoleServer>,
    version: Option<Cow<'static, str>>,
    started: Instant,
    open: bool,
}

impl Request<'_> {
    /// Records `error` (and the JSON-RPC `code` of an error response) on the span, and the
    /// request's duration.
    fn ended(&mut self, error: Option<String>, code: Option<i32>) {
        record_end(&self.span, error.as_deref(), code);
        if self.measured {
            let context = self.context;
            let transport = if context.extensions.get::<::http::request::Parts>().is_some() { "tcp" } else { "pipe" };
            let tool = match self.target {
                Target::Tool(name) => Some(name),
                _ => None,
            };
            let seconds = self.started.elapsed().as_secs_f64();
            metrics::record(false, seconds, self.method, transport, self.version.take(), tool, error);
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if self.open {
            self.open = false;
            self.ended(Some(CANCELLED.to_owned()), None);
        }
    }
}

/// Records how a request ended on its SERVER or CLIENT span: `error.type` (with the status
/// `error` when it is the server's failure, [`is_server_error`]) and `rpc.response.status_code`,
/// the JSON-RPC `code` of an error response. Nothing for a request that succeeded, or a span no
/// subscriber wants.
fn record_end(span: &tracing::Span, error: Option<&str>, code: Option<i32>) {
    if span.is_disabled() {
        return;
    }
    if let Some(error) = error {
        span.record("error.type", error);
        if is_server_error(error) {
            span.record("otel.status_code", "error");
        }
    }
    if let Some(code) = code {
        span.record("rpc.response.status_code", code.to_string());
    }
}

/// The CLIENT span of one request of the import client (feature `client`): `{method} {tool}` for
/// `tools/call` (the tool as the imported server names it, cut to 128 bytes), `{method}` alone for
/// the others (`initialize`, `server/discover`, `tools/list`), kind CLIENT, a child of the span the
/// request is sent in (for a call, the gateway's `tools/call` SERVER span, or the `execute_tool`
/// span of a call made in the process; a root when there is none).
/// Fields as the SERVER span's, with `network.transport` `pipe` for a child process and `tcp` for
/// Streamable HTTP, `server.address` and `server.port` for HTTP, and `gen_ai.tool.name` and
/// `gen_ai.operation.name` for `tools/call` only.
#[cfg(feature = "client")]
pub(crate) fn client_span(method: &'static str, tool: Option<&str>, server: Option<(&str, u16)>) -> tracing::Span {
    let tool = tool.map(bounded);
    let target = tool.map_or(Target::None, Target::Tool);
    let span = tracing::info_span!(
        "mcp_client_request",
        otel.name = %SpanName(method, target),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = method,
        jsonrpc.request.id = tracing::field::Empty,
        network.transport = if server.is_some() { "tcp" } else { "pipe" },
        server.address = tracing::field::Empty,
        server.port = tracing::field::Empty,
        gen_ai.tool.name = tracing::field::Empty,
        gen_ai.operation.name = tracing::field::Empty,
        error.type = tracing::field::Empty,
        rpc.response.status_code = tracing::field::Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if let Some((address, port)) = server {
        span.record("server.address", bounded(address));
        span.record("server.port", port);
    }
    if let Some(tool) = tool {
        span.record("gen_ai.tool.name", tool);
        span.record("gen_ai.operation.name", "execute_tool");
    }
    span
}

/// A request id as a span records it, cut to 128 bytes.
#[cfg(feature = "client")]
pub(crate) fn bounded_id(id: &rmcp::model::RequestId) -> String {
    bounded(&id.to_string()).to_owned()
}

/// Puts the context of `span` into a request's `_meta` as `traceparent`, `tracestate` and
/// `baggage` (SEP-414; feature `otel`, else nothing): the imported server's span is its child.
#[cfg(feature = "client")]
#[cfg_attr(not(feature = "otel"), allow(unused_variables))]
pub(crate) fn inject(span: &tracing::Span, meta: &mut rmcp::model::RequestMetaObject) {
    #[cfg(feature = "otel")]
    {
        use opentelemetry::propagation::{Injector, TextMapPropagator};
        use tracing_opentelemetry::OpenTelemetrySpanExt;

        struct Meta<'a>(&'a mut serde_json::Map<String, serde_json::Value>);
        impl Injector for Meta<'_> {
            fn set(&mut self, key: &str, value: String) {
                self.0.insert(key.to_owned(), serde_json::Value::String(value));
            }
        }
        if span.is_disabled() {
            return;
        }
        context_of::propagator().inject_context(&span.context(), &mut Meta(&mut meta.0.0));
    }
}

/// How a client request ended, for its span and metric: `error` its `error.type` (the JSON-RPC
/// code as text, `tool_error`, or a fixed word for a request that got no answer: `cancelled`,
/// `timeout`, `transport_error`, `unexpected_response`), `code` the JSON-RPC error code of an
/// error response.
#[cfg(feature = "client")]
pub(crate) fn client_finished(
    span: &tracing::Span,
    started: Instant,
    method: &'static str,
    tool: Option<&str>,
    tcp: bool,
    error: Option<String>,
    code: Option<i32>,
) {
    record_end(span, error.as_deref(), code);
    if metrics::on() {
        let transport = if tcp { "tcp" } else { "pipe" };
        metrics::record(true, started.elapsed().as_secs_f64(), method, transport, None, tool.map(bounded), error);
    }
}

/// The `tracing-opentelemetry` layer that turns the spans of this crate and of
/// [`tool_runtime::telemetry`] into OpenTelemetry spans of `tracer` (feature `otel`): the
/// conventions' attributes and nothing more a span. `tracing-opentelemetry`'s defaults add seven
/// attributes to every span that neither the GenAI nor the MCP conventions ask for (`busy_ns` and
/// `idle_ns`, two clock reads at every poll of an instrumented future; `thread.id`, `thread.name`,
/// `code.file.path`, `code.line.number`, `code.module.name`, `target`): this layer leaves them
/// out, which saves their cost on every call. It also turns off context activation (making the
/// span's OpenTelemetry context current while it is entered: two thread-local updates at every
/// poll of an instrumented future): a span's parent is still the `tracing` span it runs in, and
/// trace context still crosses processes (the import client reads the span's own context), but code
/// inside a tool that reads `opentelemetry::Context::current()` sees no span; it should read
/// `tracing::Span::current()`'s context (`OpenTelemetrySpanExt::context`) instead. Everything
/// else is `tracing-opentelemetry`'s default.
///
/// Never exported, whatever level filter is put on top:
///
/// - the spans and events of rmcp (every `tracing` target that is [`RMCP_TARGET`] or under it).
///   rmcp's connection span `serve_inner` holds INFO events with whole MCP messages (`received
///   notification`: what an upstream's `notifications/message` or progress said; `Service
///   initialized as server`: the peer's `initialize`; `cancelled`: the client's reason) and DEBUG
///   events with whole requests and answers (`received request`: a `tools/call` with its
///   arguments, secret ones included; `response message`: the result), and its span
///   `streamable_http_session` of a legacy session (`McpServerBuilder::legacy_session_mode`)
///   carries the `Mcp-Session-Id`, the session's credential;
/// - the events of the framework's own crates ([`FRAMEWORK_TARGETS`]): they are the process's log
///   lines, not telemetry (what a span should say is on it as attributes), and they name what a
///   span must not carry: an MCP task's id (`task created`, `task's runner lapsed`), a caller's
///   subject (a call refused for its scopes), a store's error text. Their spans are exported.
///
/// The rule is the serving rule "nothing secret is logged, traced or stored in clear" and the
/// conventions' "content capture is opt-in" (docs/telemetry.md, "Never recorded"). A user's own
/// span or event in a tool's body is exported, and a span keeps its place in the trace: its parent
/// is the nearest span this layer exports (rmcp's spans are skipped over, not cut out with their
/// children).
///
/// The value is `tracing-opentelemetry`'s layer behind that per-layer filter (a
/// [`tracing_subscriber::filter::Filtered`] of it and [`OtelFilter`]; before, the bare
/// `OpenTelemetryLayer`). The filter's verdict is made once a callsite, not once a span or event.
/// Put a level filter on it too (`toolbox` adds `.with_filter(LevelFilter::INFO)`: the spans of
/// calls and requests, not a transport's debug events); the two filters compose.
#[cfg(feature = "otel")]
pub fn otel_layer<S, T>(
    tracer: T,
) -> tracing_subscriber::filter::Filtered<tracing_opentelemetry::OpenTelemetryLayer<S, T>, OtelFilter, S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    T: opentelemetry::trace::Tracer + 'static,
    T::Span: Send + Sync,
{
    use tracing_subscriber::Layer as _;
    tracing_opentelemetry::layer()
        .with_tracked_inactivity(false)
        .with_threads(false)
        .with_location(false)
        .with_target(false)
        .with_context_activation(false)
        .with_tracer(tracer)
        .with_filter(tracing_subscriber::filter::filter_fn(exported as fn(&tracing::Metadata<'_>) -> bool))
}

/// The per-layer filter of [`otel_layer`]: what it never exports (see there).
#[cfg(feature = "otel")]
pub type OtelFilter = tracing_subscriber::filter::FilterFn<fn(&tracing::Metadata<'_>) -> bool>;

/// Whether [`otel_layer`] exports the spans or events of `metadata`'s callsite.
#[cfg(feature = "otel")]
fn exported(metadata: &tracing::Metadata<'_>) -> bool {
    let target = metadata.target();
    !(within(target, RMCP_TARGET)
        || (metadata.is_event() && FRAMEWORK_TARGETS.iter().any(|krate| within(target, krate))))
}

/// Whether the `tracing` target `target` is `krate` or a module under it (`krate::...`): how
/// [`RMCP_TARGET`] and [`FRAMEWORK_TARGETS`] are matched (`rmcp_extra` is not under `rmcp`).
pub fn within(target: &str, krate: &str) -> bool {
    target.strip_prefix(krate).is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

/// The `tracing` target of rmcp's spans and events (they are all under `rmcp::`), which
/// `otel_layer` (feature `otel`) never exports. A log layer that must not write MCP messages or
/// session ids caps this target too: `toolbox` keeps it at WARN and writes those lines without
/// their content (rmcp's text only when it quotes nothing, no field but ids and counts, a JSON-RPC
/// error as its code: docs/telemetry.md, "`toolbox`"), since rmcp's warnings hold whole messages
/// (`Received unexpected message`), an error's text quoting what the client sent (`response
/// error`) and an upstream's `Mcp-Session-Id` (the HTTP client's failed end of its session).
pub const RMCP_TARGET: &str = "rmcp";

/// The `tracing` targets of the framework's crates (each with the targets under it, `tool_mcp::`
/// ...), whose events `otel_layer` (feature `otel`) does not export; their spans it does. It is
/// every crate of ARCHITECTURE.md's "Crates" table that runs in a served process (a test of
/// `tool-mcp` reads that table, so a new crate is added here or named there as never served).
pub const FRAMEWORK_TARGETS: [&str; 9] = [
    "tool_runtime",
    "tool_mcp",
    "tool_std",
    "tool_code",
    "tool_genai",
    "tool_openai",
    "tool_rig",
    "tool_pattern",
    "toolbox",
];

/// Trace context in `params._meta` and HTTP headers (W3C Trace Context and Baggage).
#[cfg(feature = "otel")]
mod context_of {
    use opentelemetry::propagation::{Extractor, TextMapCompositePropagator, TextMapPropagator};
    use opentelemetry::trace::TraceContextExt;
    use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// The three keys SEP-414 reserves in `_meta`.
    const KEYS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

    /// W3C Trace Context and Baggage, the formats SEP-414 names: made once a process, not once a
    /// request.
    pub(super) fn propagator() -> &'static TextMapCompositePropagator {
        static PROPAGATOR: std::sync::LazyLock<TextMapCompositePropagator> = std::sync::LazyLock::new(|| {
            TextMapCompositePropagator::new(vec![
                Box::new(TraceContextPropagator::new()),
                Box::new(BaggagePropagator::new()),
            ])
        });
        &PROPAGATOR
    }

    /// `_meta`'s string values of the reserved keys.
    struct Meta<'a>(&'a serde_json::Map<String, serde_json::Value>);

    impl Extractor for Meta<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            if !KEYS.contains(&key) {
                return None;
            }
            self.0.get(key).and_then(serde_json::Value::as_str)
        }

        fn keys(&self) -> Vec<&str> {
            KEYS.iter().copied().filter(|key| self.0.contains_key(*key)).collect()
        }
    }

    /// An HTTP request's headers.
    struct Headers<'a>(&'a http::HeaderMap);

    impl Extractor for Headers<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(|value| value.to_str().ok())
        }

        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(http::HeaderName::as_str).collect()
        }
    }

    /// Parents `span` on `meta`'s context and links the HTTP one, or parents it on the HTTP one
    /// when `meta` has none, or makes it a root.
    pub(super) fn adopt(
        span: &tracing::Span,
        meta: &rmcp::model::RequestMetaObject,
        headers: Option<&http::HeaderMap>,
    ) {
        // Most requests carry no context: no propagator runs for them (each extraction builds
        // contexts on the heap).
        let in_meta = KEYS.iter().any(|key| meta.0.0.contains_key(*key));
        let in_http = headers.is_some_and(|headers| KEYS.iter().any(|key| headers.contains_key(*key)));
        if !in_meta && !in_http {
            return;
        }
        let propagator = propagator();
        // From an empty context: `extract` alone starts from the current one, which a
        // transport's span may have set.
        let empty = opentelemetry::Context::new();
        let from_meta = propagator.extract_with_context(&empty, &Meta(&meta.0.0));
        let from_http = headers
            .map(|headers| propagator.extract_with_context(&empty, &Headers(headers)))
            .filter(|cx| cx.span().span_context().is_valid());
        if from_meta.span().span_context().is_valid() {
            // Set before the span is entered: it cannot fail.
            let _ = span.set_parent(from_meta);
            if let Some(ambient) = from_http {
                span.add_link(ambient.span().span_context().clone());
            }
        } else if let Some(ambient) = from_http {
            let _ = span.set_parent(ambient);
        }
    }
}

/// `mcp.server.operation.duration` and `mcp.client.operation.duration` (feature `otel`).
mod metrics {
    /// Whether durations are recorded.
    pub(super) fn on() -> bool {
        cfg!(feature = "otel")
    }

    /// Records one request's duration as the server (`client`: false) or the client sees it.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    pub(super) fn record(
        client: bool,
        seconds: f64,
        method: &'static str,
        transport: &'static str,
        version: Option<std::borrow::Cow<'static, str>>,
        tool: Option<&str>,
        error: Option<String>,
    ) {
        #[cfg(feature = "otel")]
        {
            use opentelemetry::KeyValue;
            use opentelemetry::metrics::Histogram;
            use std::sync::OnceLock;
            static SERVER: OnceLock<Histogram<f64>> = OnceLock::new();
            static CLIENT: OnceLock<Histogram<f64>> = OnceLock::new();
            let (cell, name, side) = if client {
                (&CLIENT, "mcp.client.operation.duration", "client")
            } else {
                (&SERVER, "mcp.server.operation.duration", "server")
            };
            let histogram = cell.get_or_init(|| {
                opentelemetry::global::meter("tool-mcp")
                    .f64_histogram(name)
                    .with_unit("s")
                    .with_description(format!("Duration of MCP requests as the {side} sees them"))
                    .with_boundaries(super::OPERATION_DURATION_BUCKETS.to_vec())
                    .build()
            });
            // On the stack: at most five attributes, the absent ones left out of the slice.
            let optional = [
                version.map(|version| KeyValue::new("mcp.protocol.version", version)),
                tool.map(|tool| KeyValue::new("gen_ai.tool.name", tool.to_owned())),
                error.map(|error| KeyValue::new("error.type", error)),
            ];
            let mut attributes: [KeyValue; 5] = [
                KeyValue::new("mcp.method.name", method),
                KeyValue::new("network.transport", transport),
                KeyValue::new("", ""),
                KeyValue::new("", ""),
                KeyValue::new("", ""),
            ];
            let mut len = 2;
            for attribute in optional.into_iter().flatten() {
                attributes[len] = attribute;
                len += 1;
            }
            histogram.record(seconds, &attributes[..len]);
        }
    }
}
