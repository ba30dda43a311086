//! Stateless `tools/call` requests answered by the Streamable HTTP endpoint itself.
//!
//! rmcp's Streamable HTTP service answers a stateless request by building a one-message
//! transport, a peer and a service loop for it and spawning two tasks, then re-checking the
//! message's headers against a JSON copy of it. For the common request, a 2026-07-28 `tools/call`
//! that needs nothing of a connection, the endpoint does the same work directly: it hands the
//! request to the same handler through rmcp's own dispatch (`Service::handle_request`, which
//! checks the protocol version and the request's `_meta`, guards task results and fills the
//! result's cache hints) and writes the JSON-RPC response as rmcp does.
//!
//! A request is taken here only when every check rmcp makes on that path is known to pass, each
//! stated more strictly than rmcp states it; any other request, valid or not, goes to rmcp
//! unchanged, and rmcp's answer stands:
//!
//! - no legacy sessions (a stateless endpoint);
//! - `Host`: one value, allowed by the same list and rules rmcp applies;
//! - `Accept`: every value plain text, its entries without parameters or quotes, naming both
//!   `application/json` and `text/event-stream`;
//! - `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`: one value each, `2026-07-28`,
//!   `tools/call` and the tool's name as sent (not Base64-wrapped);
//! - the tool is listed, takes no part in tasks, and its input schema has no `x-mcp-header`
//!   annotation (so no `Mcp-Param-*` header is checked);
//! - the message, as rmcp reads it, is a `tools/call` request whose `_meta` names protocol
//!   version `2026-07-28` and has every key that version requires, and asks for no progress
//!   notifications and no log messages (nothing is sent to the client before the response).
//!
//! The answer, status and body, is the one rmcp's path gives, with two exceptions that no
//! working call meets: a call still running when a shutdown ends the response streams, and a
//! panic of the handler itself (a tool's panic is its result), each get `500 Internal Server
//! Error` with a JSON-RPC error (rmcp's path gives a plain-text `500`, or no response). A client
//! that goes away before the response cancels the call, as on rmcp's path.
//!
//! Two contracts hold this path up, each checked:
//! - Nothing is sent to the client before the response: the requests taken ask for no progress
//!   and no log messages, and rmcp refuses server-to-client requests to the shared peer, stamped
//!   [`STATELESS_PROTOCOL`]. The peer's sink ([`Unsent`]) logs and counts a message that reaches
//!   it anyway, and in a test build every later answer here is then a `500` naming the contract.
//! - The checks restated here are rmcp 3.11.0's, the version `Cargo.toml` pins exactly; the test
//!   `rmcps_answers_to_the_requests_the_direct_path_takes_are_these` holds rmcp's own answers to
//!   the same requests, so another version that answers differently fails it.

use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::FutureExt;
use http_body_util::{BodyExt, Full};
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, GetExtensions, GetMeta, Implementation,
    InitializeRequestParams, ServerJsonRpcMessage,
};
use rmcp::service::{Peer, RequestContext, RunningService, TxJsonRpcMessage};
use tokio_util::sync::CancellationToken;

use crate::protocol::{STATELESS_PROTOCOL, STATELESS_PROTOCOL_TEXT};
use crate::server::McpServer;

/// The `_meta` key of a request's protocol version (MCP 2026-07-28).
const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` keys of MCP 2026-07-28 that ask for messages before the response.
const PROGRESS_TOKEN: &str = "progressToken";
const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// A response of the endpoint.
type Response = http::Response<super::response::ResponseBody>;

/// What the endpoint needs to answer a request itself.
pub(crate) struct Direct {
    /// The allowed `Host` authorities, parsed as rmcp parses them (`None`: any host).
    hosts: Option<Vec<(String, Option<u16>)>>,
    /// The peer of the requests answered here, made on the first one: a service loop on a
    /// transport that carries nothing. No request taken here sends through it (no progress, no
    /// log messages, and server-to-client requests are refused at 2026-07-28).
    peer: OnceLock<RunningService<RoleServer, McpServer>>,
    /// The sink of that peer's transport.
    sent: Unsent,
}

/// The sink of the shared peer's transport. No request taken here sends through it: it asks for
/// no progress and no log messages, and rmcp refuses server-to-client requests to a peer of
/// [`STATELESS_PROTOCOL`]. A message that reaches it anyway breaks that contract: it is logged as
/// an error naming its method, counted and dropped (the client never gets it); in a build with
/// debug assertions (every test build) each answer of the direct path from then on is `500
/// Internal Server Error` with a JSON-RPC error saying so, so the test whose call sent it fails.
#[derive(Clone, Default)]
struct Unsent(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Unsent {
    /// How many messages reached the sink (read by builds with debug assertions, and their tests).
    #[cfg(any(debug_assertions, test))]
    fn count(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl futures::Sink<TxJsonRpcMessage<RoleServer>> for Unsent {
    type Error = std::convert::Infallible;

    fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn start_send(self: Pin<&mut Self>, message: TxJsonRpcMessage<RoleServer>) -> Result<(), Self::Error> {
        let method = serde_json::to_value(&message)
            .ok()
            .and_then(|value| value.get("method").and_then(|m| m.as_str()).map(str::to_owned))
            .unwrap_or_else(|| "a message without a method".to_owned());
        tracing::error!(
            %method,
            "a call answered by the direct path sent a message before its response; it was dropped (the direct \
             path's admission let through a request it must leave to rmcp)"
        );
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
}

/// `host` as rmcp compares it: `[` then `]` trimmed from both ends, lowercase.
fn normalize(host: &str) -> String {
    host.trim_matches('[').trim_matches(']').to_ascii_lowercase()
}

/// A request that may be answered here, read from its body.
pub(crate) struct Taken {
    request: rmcp::model::JsonRpcRequest<ClientRequest>,
}

impl Direct {
    pub(crate) fn new(allowed_hosts: &[String]) -> Self {
        let hosts = (!allowed_hosts.is_empty()).then(|| {
            allowed_hosts
                .iter()
                .map(|entry| entry.trim())
                .filter(|entry| !entry.is_empty())
                .map(|entry| match http::uri::Authority::try_from(entry) {
                    Ok(authority) => (normalize(authority.host()), authority.port_u16()),
                    Err(_) => (normalize(entry), None),
                })
                .collect()
        });
        Self { hosts, peer: OnceLock::new(), sent: Unsent::default() }
    }

    /// `true` when the head of a `tools/call` of `tool` passes every check of the
    /// [module docs](self) that the head alone decides.
    pub(crate) fn admits(&self, server: &McpServer, headers: &http::HeaderMap, tool: &str) -> bool {
        !server.inner.legacy_sessions
            && self.host_allowed(headers)
            && accepts_json_and_events(headers)
            && only(headers, "mcp-protocol-version") == Some(STATELESS_PROTOCOL_TEXT)
            && only(headers, "mcp-method") == Some("tools/call")
            && only(headers, "mcp-name").is_some_and(|name| name == tool && !name.starts_with("=?base64?"))
            && server.served().direct.contains(tool)
    }

    fn host_allowed(&self, headers: &http::HeaderMap) -> bool {
        let Some(host) = only(headers, "host") else { return false };
        let Ok(authority) = http::uri::Authority::try_from(host) else { return false };
        let Some(hosts) = &self.hosts else { return true };
        let (host, port) = (normalize(authority.host()), authority.port_u16());
        hosts.iter().any(|(allowed, allowed_port)| *allowed == host && allowed_port.is_none_or(|p| port == Some(p)))
    }

    /// The message of `body` (the JSON text after the frame check), when it is a request that
    /// may be answered here; `None` leaves it to rmcp.
    pub(crate) fn take(body: &[u8]) -> Option<Taken> {
        let Ok(ClientJsonRpcMessage::Request(request)) = serde_json::from_slice::<ClientJsonRpcMessage>(body) else {
            return None;
        };
        if !matches!(request.request, ClientRequest::CallToolRequest(_)) {
            return None;
        }
        let meta = request.request.get_meta();
        let named = meta.0.0.get(PROTOCOL_VERSION).and_then(|v| v.as_str()) == Some(STATELESS_PROTOCOL_TEXT);
        let quiet = !meta.0.0.contains_key(PROGRESS_TOKEN) && !meta.0.0.contains_key(LOG_LEVEL);
        let complete = || meta.missing_required_keys(&STATELESS_PROTOCOL).is_empty();
        (named && quiet && complete()).then_some(Taken { request })
    }

    /// Answers `taken` with `server`'s handler; `parts` (the request's head) reaches the handler
    /// in the context's extensions as on rmcp's path. Cancelling `streams` (the end of a
    /// shutdown) ends a call still running, and a panic of the handler ends its call, each with
    /// `500 Internal Server Error` and a JSON-RPC error (`-32603`) naming the request.
    pub(crate) async fn answer(
        &self,
        server: &McpServer,
        taken: Taken,
        parts: http::request::Parts,
        streams: &CancellationToken,
    ) -> Response {
        let peer = self.peer(server);
        let rmcp::model::JsonRpcRequest { id, mut request, .. } = taken.request;
        let mut context = RequestContext::new(id.clone(), peer);
        std::mem::swap(&mut context.meta, request.get_meta_mut());
        std::mem::swap(&mut context.extensions, request.extensions_mut());
        context.extensions.insert(parts);
        #[cfg(test)]
        server.inner.direct_answers.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // A client that goes away drops this future; `call_tool` then cancels the tool's token.
        let handled = rmcp::service::Service::<RoleServer>::handle_request(server, request, context);
        // A panic of the handler (a tool's own panic is its result already) answers this request
        // alone, as on rmcp's path, where the handler runs in a task of its own.
        let handled = std::panic::AssertUnwindSafe(handled).catch_unwind();
        let result = tokio::select! {
            biased;
            result = handled => match result {
                Ok(result) => result,
                Err(_) => {
                    tracing::error!(%id, "the tools/call handler panicked");
                    let error = ErrorData::internal_error("the server failed while answering the call", None);
                    return json(http::StatusCode::INTERNAL_SERVER_ERROR, &ServerJsonRpcMessage::error(error, Some(id)));
                }
            },
            () = streams.cancelled() => {
                tracing::debug!(%id, "a call still running when the response streams ended");
                let error = ErrorData::internal_error(
                    "the server shut down before the call answered; send it again to a running server",
                    None,
                );
                return json(http::StatusCode::INTERNAL_SERVER_ERROR, &ServerJsonRpcMessage::error(error, Some(id)));
            }
        };
        #[cfg(debug_assertions)]
        if self.sent.count() > 0 {
            let error = ErrorData::internal_error(
                "the direct path's contract is broken: a call it answered sent a message before its response (see \
                 the error in the log); leave such requests to rmcp",
                None,
            );
            return json(http::StatusCode::INTERNAL_SERVER_ERROR, &ServerJsonRpcMessage::error(error, Some(id)));
        }
        let message = match result {
            Ok(result) => ServerJsonRpcMessage::response(result, id),
            Err(error) => {
                // The code and its kind only: the message may quote what the client sent (an
                // input response's key, a tool's name).
                tracing::debug!(%id, code = error.code.0, kind = error_kind(error.code), "tools/call answered with an error");
                ServerJsonRpcMessage::error(error, Some(id))
            }
        };
        json(status(&message), &message)
    }

    fn peer(&self, server: &McpServer) -> Peer<RoleServer> {
        let running = self.peer.get_or_init(|| {
            // A transport that receives nothing; what it is given breaks the contract ([`Unsent`]).
            let transport =
                (self.sent.clone(), futures::stream::pending::<rmcp::service::RxJsonRpcMessage<RoleServer>>());
            let info = InitializeRequestParams::new(Default::default(), Implementation::default())
                .with_protocol_version(STATELESS_PROTOCOL);
            rmcp::service::serve_directly(server.clone(), transport, Some(info))
        });
        running.peer().clone()
    }
}

/// The only value of header `name` as text; `None` when it is missing, sent more than once, or
/// not visible ASCII.
fn only<'h>(headers: &'h http::HeaderMap, name: &str) -> Option<&'h str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then(|| value.to_str().ok()).flatten()
}

/// `true` when every `Accept` value is plain (no quotes, no parameters) and together they name
/// `application/json` and `text/event-stream`, as MCP's Streamable HTTP asks of a POST.
fn accepts_json_and_events(headers: &http::HeaderMap) -> bool {
    let (mut json, mut events) = (false, false);
    for value in headers.get_all(http::header::ACCEPT) {
        let Ok(value) = value.to_str() else { return false };
        if value.contains(['"', ';']) {
            return false;
        }
        for entry in value.split(',').map(str::trim) {
            json |= entry.eq_ignore_ascii_case("application/json");
            events |= entry.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && events
}

/// The HTTP status of a response to a stateless 2026-07-28 request, as rmcp gives it: `400` for
/// an unsupported protocol version, a missing client capability and a header mismatch, `404` for
/// an unknown method, `200` for every result and every other error.
fn status(message: &ServerJsonRpcMessage) -> http::StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else { return http::StatusCode::OK };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => http::StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => http::StatusCode::NOT_FOUND,
        _ => http::StatusCode::OK,
    }
}

/// What a JSON-RPC error code is, in a word a log line may hold (a fixed set, never a message):
/// the JSON-RPC 2.0 codes (`parse_error`, `invalid_request`, `method_not_found`,
/// `invalid_params`, `internal_error`), MCP's (`resource_not_found`, `header_mismatch`,
/// `missing_required_client_capability`, `unsupported_protocol_version`), `server_error` for the
/// rest of the range JSON-RPC 2.0 leaves to implementations (-32099 to -32000), else `other`.
fn error_kind(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::PARSE_ERROR => "parse_error",
        ErrorCode::INVALID_REQUEST => "invalid_request",
        ErrorCode::METHOD_NOT_FOUND => "method_not_found",
        ErrorCode::INVALID_PARAMS => "invalid_params",
        ErrorCode::INTERNAL_ERROR => "internal_error",
        ErrorCode::RESOURCE_NOT_FOUND => "resource_not_found",
        ErrorCode::HEADER_MISMATCH => "header_mismatch",
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY => "missing_required_client_capability",
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => "unsupported_protocol_version",
        ErrorCode(-32099..=-32000) => "server_error",
        _ => "other",
    }
}

/// `message` as an `application/json` response with `status`; a message that cannot be written
/// as JSON gets `500 Internal Server Error` saying so.
fn json(status: http::StatusCode, message: &ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => super::response::json_response(status, Bytes::from(body)),
        Err(error) => {
            tracing::error!(%error, "a JSON-RPC response could not be written as JSON");
            let mut response = http::Response::new(
                Full::new(Bytes::from(format!("the response could not be written as JSON ({error})"))).boxed(),
            );
            *response.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::sync::Notify;
    use tool_runtime::talk::Elicitation;
    use tool_runtime::{Registry, TalkBackError, Tool, ToolContext, ToolDefinition, ToolError, ToolResult, tool};

    use super::*;

    const BOUND: Duration = Duration::from_secs(10);

    /// Say hello.
    #[tool]
    fn hello() -> String {
        "hello".to_owned()
    }

    /// Run as a task.
    #[tool(tags(task))]
    fn long_job() -> String {
        "done".to_owned()
    }

    /// A tool whose input schema names a header (SEP-2243), as written.
    struct Routed(ToolDefinition);

    impl Tool for Routed {
        fn definition(&self) -> &ToolDefinition {
            &self.0
        }
        fn call<'a>(
            &'a self,
            _: &'a str,
            _: &'a ToolContext,
        ) -> tool_runtime::BoxFuture<'a, Result<ToolResult, ToolError>> {
            Box::pin(async { Ok(ToolResult::text("routed")) })
        }
    }

    fn routed() -> std::sync::Arc<dyn Tool> {
        std::sync::Arc::new(Routed(ToolDefinition {
            name: "routed".to_owned(),
            description: "Routed by region.".to_owned(),
            input_schema: json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}),
            set: None,
            tags: Vec::new(),
            strict: None,
            output_schema: None,
            callers: tool_runtime::Callers::Direct,
        }))
    }

    fn server() -> McpServer {
        let registry = Registry::builder().tool(hello::TOOL).tool(long_job::TOOL).tool_dyn(routed()).build().unwrap();
        McpServer::builder(registry).task_tag("task").build()
    }

    /// The head a 2026-07-28 client sends with a call of `tool`.
    fn head(tool: &str) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        for (name, value) in [
            ("host", "127.0.0.1:8080"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", tool),
        ] {
            headers.insert(name, http::HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    fn with(mut headers: http::HeaderMap, name: &'static str, value: &str) -> http::HeaderMap {
        headers.insert(name, http::HeaderValue::from_str(value).unwrap());
        headers
    }

    fn also(mut headers: http::HeaderMap, name: &'static str, value: &str) -> http::HeaderMap {
        headers.append(name, http::HeaderValue::from_str(value).unwrap());
        headers
    }

    fn direct() -> Direct {
        Direct::new(&["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()])
    }

    #[test]
    fn an_error_code_is_logged_as_its_kind_in_a_fixed_set_of_words() {
        let kinds: Vec<&str> =
            [-32700, -32600, -32601, -32602, -32603, -32002, -32020, -32021, -32022, -32000, -32099, -31999, 7]
                .into_iter()
                .map(|code| error_kind(ErrorCode(code)))
                .collect();
        assert_eq!(
            kinds,
            [
                "parse_error",
                "invalid_request",
                "method_not_found",
                "invalid_params",
                "internal_error",
                "resource_not_found",
                "header_mismatch",
                "missing_required_client_capability",
                "unsupported_protocol_version",
                "server_error",
                "server_error",
                "other",
                "other"
            ]
        );
    }

    #[test]
    fn the_head_of_a_plain_2026_07_28_call_is_admitted() {
        let server = server();
        assert!(direct().admits(&server, &head("hello"), "hello"));
        let upper = with(head("hello"), "accept", "Application/JSON,Text/Event-Stream");
        assert!(direct().admits(&server, &upper, "hello"));
        let two_values = also(with(head("hello"), "accept", "application/json"), "accept", "text/event-stream");
        assert!(direct().admits(&server, &two_values, "hello"));
        assert!(direct().admits(&server, &with(head("hello"), "host", "[::1]:9"), "hello"));
        assert!(direct().admits(&server, &with(head("hello"), "host", "LOCALHOST"), "hello"));
    }

    #[test]
    fn every_other_head_is_left_to_rmcp() {
        let server = server();
        let refused = [
            ("a host off the list", direct(), with(head("hello"), "host", "evil.example"), "hello"),
            ("a host sent twice", direct(), also(head("hello"), "host", "localhost"), "hello"),
            ("a host that is no authority", direct(), with(head("hello"), "host", "a b"), "hello"),
            (
                "an accept with a weight",
                direct(),
                with(head("hello"), "accept", "application/json;q=1, text/event-stream"),
                "hello",
            ),
            (
                "an accept with quotes",
                direct(),
                with(head("hello"), "accept", "application/json, text/event-stream, \"x\""),
                "hello",
            ),
            ("no event streams accepted", direct(), with(head("hello"), "accept", "application/json"), "hello"),
            ("any type accepted", direct(), with(head("hello"), "accept", "*/*"), "hello"),
            ("an older protocol", direct(), with(head("hello"), "mcp-protocol-version", "2025-11-25"), "hello"),
            ("the version twice", direct(), also(head("hello"), "mcp-protocol-version", "2026-07-28"), "hello"),
            ("another method", direct(), with(head("hello"), "mcp-method", "tools/list"), "hello"),
            (
                "no method",
                direct(),
                {
                    let mut h = head("hello");
                    h.remove("mcp-method");
                    h
                },
                "hello",
            ),
            ("another name", direct(), head("goodbye"), "hello"),
            ("a Base64 name", direct(), with(head("hello"), "mcp-name", "=?base64?aGVsbG8=?="), "hello"),
            ("the name twice", direct(), also(head("hello"), "mcp-name", "hello"), "hello"),
            ("a task tool", direct(), head("long_job"), "long_job"),
            ("a tool with x-mcp-header", direct(), head("routed"), "routed"),
            ("a tool not listed", direct(), head("missing"), "missing"),
        ];
        for (case, direct, headers, tool) in refused {
            assert!(!direct.admits(&server, &headers, tool), "{case}");
        }
        let legacy = McpServer::builder(Registry::builder().tool(hello::TOOL).build().unwrap())
            .legacy_session_mode(true)
            .build();
        assert!(!direct().admits(&legacy, &head("hello"), "hello"), "legacy sessions");
        assert!(Direct::new(&[]).admits(&server, &with(head("hello"), "host", "any.example"), "hello"));
        let ported = Direct::new(&["tools.example:8443".to_owned()]);
        assert!(ported.admits(&server, &with(head("hello"), "host", "tools.example:8443"), "hello"));
        assert!(!ported.admits(&server, &with(head("hello"), "host", "tools.example"), "hello"));
    }

    fn call(meta: serde_json::Value) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "hello", "arguments": {}, "_meta": meta}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn a_call_whose_meta_asks_for_nothing_before_the_response_is_taken_and_any_other_message_is_not() {
        let complete = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        assert!(Direct::take(&call(complete.clone())).is_some());
        let mut progress = complete.clone();
        progress["progressToken"] = json!("p1");
        let mut logs = complete.clone();
        logs["io.modelcontextprotocol/logLevel"] = json!("info");
        let mut older = complete.clone();
        older["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
        let mut no_capabilities = complete.clone();
        no_capabilities.as_object_mut().unwrap().remove("io.modelcontextprotocol/clientCapabilities");
        let mut bad_capabilities = complete.clone();
        bad_capabilities["io.modelcontextprotocol/clientCapabilities"] = json!("all");
        for (case, body) in [
            ("progress asked for", call(progress)),
            ("log messages asked for", call(logs)),
            ("an older protocol", call(older)),
            ("no client capabilities", call(no_capabilities)),
            ("malformed client capabilities", call(bad_capabilities)),
            ("no _meta", br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hello"}}"#.to_vec()),
            ("a notification", br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec()),
            ("another request", br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#.to_vec()),
            ("no JSON", b"{".to_vec()),
        ] {
            assert!(Direct::take(&body).is_none(), "{case}");
        }
    }

    #[test]
    fn the_status_of_an_error_is_rmcps() {
        let error = |code| ServerJsonRpcMessage::error(ErrorData::new(code, "x", None), None);
        assert_eq!(status(&error(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION)), http::StatusCode::BAD_REQUEST);
        assert_eq!(status(&error(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY)), http::StatusCode::BAD_REQUEST);
        assert_eq!(status(&error(ErrorCode::HEADER_MISMATCH)), http::StatusCode::BAD_REQUEST);
        assert_eq!(status(&error(ErrorCode::METHOD_NOT_FOUND)), http::StatusCode::NOT_FOUND);
        assert_eq!(status(&error(ErrorCode::INVALID_PARAMS)), http::StatusCode::OK);
        assert_eq!(status(&error(ErrorCode::INTERNAL_ERROR)), http::StatusCode::OK);
    }

    /// Greet someone.
    #[tool]
    fn greet(
        /// Who to greet.
        name: String,
    ) -> String {
        format!("hello, {name}")
    }

    /// A name.
    #[derive(Deserialize, JsonSchema)]
    struct Name {
        name: String,
    }

    /// Ask for a name.
    #[tool]
    async fn ask(ctx: &ToolContext) -> Result<String, TalkBackError> {
        Ok(match ctx.elicit::<Name>("Your name?").key("who").await? {
            Elicitation::Accept(Name { name }) => format!("hello, {name}"),
            _ => "no name".to_owned(),
        })
    }

    /// The cancellation token of the running `wait` call, and the signal that it started.
    static WAITING: OnceLock<CancellationToken> = OnceLock::new();
    static STARTED: Notify = Notify::const_new();

    /// Wait until cancelled.
    #[tool]
    async fn wait(ctx: &ToolContext) -> String {
        let _ = WAITING.set(ctx.cancellation().clone());
        STARTED.notify_one();
        ctx.cancellation().cancelled().await;
        "cancelled".to_owned()
    }

    /// A server of `greet`, `ask` and `wait` on a free loopback port, until the token is cancelled.
    async fn serving() -> (McpServer, std::net::SocketAddr, CancellationToken) {
        let registry = Registry::builder().tool(greet::TOOL).tool(ask::TOOL).tool(wait::TOOL).build().unwrap();
        let server = McpServer::builder(registry).build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let (serve, stopped) = (server.clone(), stop.clone());
        tokio::spawn(async move { serve.serve_http_on(listener, stopped.cancelled_owned()).await });
        (server, addr, stop)
    }

    /// A 2026-07-28 `tools/call` of `tool` with `arguments` (JSON text, sent as written), as a
    /// client of that version sends it: its head (with `accept` as the `Accept` header) and body.
    fn request(tool: &str, arguments: &str, capabilities: &Value, accept: &str) -> Vec<u8> {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{capabilities}}}}}}}"#
        );
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: {accept}\r\nContent-Type: application/json\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    /// The `Accept` of MCP clients, which the endpoint answers itself; the same with a weight,
    /// which rmcp accepts and the endpoint leaves to it.
    const PLAIN: &str = "application/json, text/event-stream";
    const WEIGHTED: &str = "application/json;q=0.9, text/event-stream";

    /// The status, content type and message of the answer to `request`; a sealed `requestState`
    /// (new on every answer) is replaced by `"sealed"`.
    async fn answer(addr: std::net::SocketAddr, request: &[u8]) -> (u16, Option<String>, Value) {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut raw = String::new();
        tokio::time::timeout(BOUND, stream.read_to_string(&mut raw)).await.unwrap().unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let content_type = head
            .lines()
            .filter_map(|line| line.split_once(':'))
            .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
            .map(|(_, value)| value.trim().to_owned());
        let mut message: Value = serde_json::from_str(body).unwrap_or_else(|_| json!(body));
        if let Some(state) = message.pointer_mut("/result/requestState") {
            *state = json!("sealed");
        }
        (status, content_type, message)
    }

    /// The requests the two tests below send: a tool, its arguments as sent, the client's
    /// capabilities. A good call, three bad arguments, an input request with and without the
    /// capability it needs.
    fn cases() -> [(&'static str, &'static str, Value); 6] {
        let (none, elicits) = (json!({}), json!({"elicitation": {}}));
        [
            ("greet", r#"{"name":"Ana"}"#, none.clone()),
            ("greet", "{}", none.clone()),
            ("greet", r#"{"name":"Ana","name":"Bob"}"#, none.clone()),
            ("greet", r#"{"name":"Ana","age":3}"#, none.clone()),
            ("ask", "{}", elicits),
            ("ask", "{}", none),
        ]
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_call_taken_here_gets_the_answer_rmcp_gives_the_same_request() {
        let (server, addr, stop) = serving().await;
        let answered = || server.inner.direct_answers.load(Ordering::Relaxed);
        let mut answers = Vec::new();
        for (i, (tool, arguments, capabilities)) in cases().iter().enumerate() {
            let here = answer(addr, &request(tool, arguments, capabilities, PLAIN)).await;
            assert_eq!(answered(), i + 1, "{tool} {arguments}: not answered here");
            let through_rmcp = answer(addr, &request(tool, arguments, capabilities, WEIGHTED)).await;
            assert_eq!(answered(), i + 1, "{tool} {arguments}: not left to rmcp");
            assert_eq!(here, through_rmcp, "{tool} {arguments}");
            answers.push(here);
        }
        let json = Some("application/json".to_owned());
        assert_eq!(
            answers[0],
            (
                200,
                json.clone(),
                json!({"jsonrpc": "2.0", "id": 1, "result": {
                    "content": [{"type": "text", "text": "hello, Ana"}], "isError": false, "resultType": "complete"}})
            )
        );
        assert_eq!((answers[1].0, answers[1].2["result"]["isError"].clone()), (200, json!(true)));
        let (status, _, input_required) = &answers[4];
        assert_eq!((*status, &input_required["result"]["resultType"]), (200, &json!("input_required")));
        assert_eq!(input_required["result"]["requestState"], "sealed");
        assert_eq!((answers[5].0, answers[5].2["error"]["code"].clone()), (400, json!(-32021)));
        stop.cancel();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_goes_away_cancels_the_call_taken_here() {
        let (server, addr, stop) = serving().await;
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(&request("wait", "{}", &json!({}), PLAIN)).await.unwrap();
        tokio::time::timeout(BOUND, STARTED.notified()).await.expect("the call did not start");
        assert_eq!(server.inner.direct_answers.load(Ordering::Relaxed), 1);
        drop(stream);
        tokio::time::timeout(BOUND, WAITING.get().unwrap().cancelled())
            .await
            .expect("the call's cancellation token was not cancelled when its client went away");
        stop.cancel();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_message_sent_through_the_shared_peer_makes_every_later_answer_a_500_in_a_test_build() {
        let (server, direct) = (server(), direct());
        let complete = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let parts = || http::Request::new(()).into_parts().0;
        let before = direct
            .answer(&server, Direct::take(&call(complete.clone())).unwrap(), parts(), &CancellationToken::new())
            .await;
        assert_eq!(before.status(), http::StatusCode::OK);
        let progress = rmcp::model::ProgressNotificationParam::new(
            rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(1)),
            1.0,
        );
        direct.peer(&server).notify_progress(progress).await.unwrap();
        tokio::time::timeout(BOUND, async {
            while direct.sent.count() == 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the message did not reach the sink");
        let after =
            direct.answer(&server, Direct::take(&call(complete)).unwrap(), parts(), &CancellationToken::new()).await;
        assert_eq!(after.status(), http::StatusCode::INTERNAL_SERVER_ERROR);
        let body: Value = serde_json::from_slice(&after.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(body["id"], 7);
        assert_eq!(body["error"]["code"], -32603);
        assert!(
            body["error"]["message"].as_str().unwrap().starts_with("the direct path's contract is broken"),
            "{body}"
        );
    }

    /// What rmcp 3.11.0's own stateless path answers to each kind of request the direct path
    /// takes, in full: the direct path promises the same answers, so this test fails when another
    /// rmcp answers them differently (then the direct path's checks need reading again, see
    /// `Cargo.toml`).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rmcps_answers_to_the_requests_the_direct_path_takes_are_these() {
        let (server, addr, stop) = serving().await;
        let mut answers = Vec::new();
        for (tool, arguments, capabilities) in &cases() {
            answers.push(answer(addr, &request(tool, arguments, capabilities, WEIGHTED)).await);
        }
        assert_eq!(server.inner.direct_answers.load(Ordering::Relaxed), 0, "a request was not left to rmcp");
        let json = Some("application/json".to_owned());
        let text = |text: &str, error: bool| {
            json!({"jsonrpc": "2.0", "id": 1, "result": {
                "content": [{"type": "text", "text": text}], "isError": error, "resultType": "complete"}})
        };
        let expected = vec![
            (200, json.clone(), text("hello, Ana", false)),
            (200, json.clone(), text("invalid arguments for `greet`: missing field `name`", true)),
            (
                200,
                json.clone(),
                text("invalid arguments for `greet`: `name`: the field is sent twice; send each field once", true),
            ),
            (
                200,
                json.clone(),
                text("invalid arguments for `greet`: unknown field `age`; expected one of `name`", true),
            ),
            (
                200,
                json.clone(),
                json!({"jsonrpc": "2.0", "id": 1, "result": {
                    "inputRequests": {"who": {"method": "elicitation/create", "params": {
                        "message": "Your name?",
                        "mode": "form",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"]
                        }
                    }}},
                    "requestState": "sealed",
                    "resultType": "input_required"
                }}),
            ),
            (
                400,
                json,
                json!({"jsonrpc": "2.0", "id": 1, "error": {
                    "code": -32021,
                    "message": "the client did not declare the `elicitation` capability; use a client that supports \
                                elicitation and declares it",
                    "data": {"requiredCapabilities": {"elicitation": {}}}
                }}),
            ),
        ];
        assert_eq!(answers, expected);
        stop.cancel();
    }
}
