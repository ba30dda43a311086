//! One request of the Streamable HTTP endpoint: [`HttpService`], and `Endpoint::handle`, whose
//! doc lists the order of the checks.

use std::convert::Infallible;
use std::fmt::Display;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Body;
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio_util::sync::CancellationToken;

use super::direct::Direct;
use super::origins::Origins;
use super::response::{ResponseBody, closing, refusal};
#[cfg(feature = "auth")]
use super::response::{challenge_response, metadata_response};
use super::sessions::{Sessions, named_session, session_not_found};
use crate::incoming::{Checked, Fault, RawArguments, inspect, message};
use crate::limits::OFF_WORKER_BODY_BYTES;
use crate::server::McpServer;

/// The Streamable HTTP endpoint of [`McpServer::http_service`]: rmcp's Streamable HTTP service
/// over this server, behind the checks the [crate docs](crate#streamable-http) list (the `Origin`
/// allow-list, the POST body's size and time limits, the JSON-RPC check of every message); the
/// common stateless 2026-07-28 `tools/call` is answered by the endpoint itself, through rmcp's
/// dispatch of the request, with the answer rmcp's service gives (the crate docs say when). A
/// tower `Service<http::Request<B>>` for any body `B` of [`Bytes`]; it answers every path it is
/// given (mount it at [`MCP_PATH`](crate::MCP_PATH)) and is cheap to clone.
#[derive(Clone)]
pub struct HttpService(pub(super) Arc<Endpoint>);

/// What an [`HttpService`] holds, shared by its clones (a clone per request is one `Arc`).
pub(super) struct Endpoint {
    pub(super) rmcp: StreamableHttpService<McpServer, LocalSessionManager>,
    /// With legacy sessions on: who opened each.
    pub(super) sessions: Option<Sessions>,
    pub(super) origins: Origins,
    pub(super) body_timeout: Duration,
    pub(super) max_body_bytes: usize,
    /// The server: its handler, its resource server and its registry's tools.
    pub(super) server: McpServer,
    /// Answers the common stateless `tools/call` without rmcp's per-request service ([`Direct`]).
    pub(super) direct: Direct,
    /// Cancelled at the end of a shutdown: ends the response streams still open.
    pub(super) streams: CancellationToken,
}

impl<B> tower_service::Service<http::Request<B>> for HttpService
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Display,
{
    type Response = http::Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let endpoint = self.0.clone();
        Box::pin(async move { Ok(endpoint.handle(request).await) })
    }
}

/// Why a POST body was not read whole.
enum Unread {
    TooLarge,
    Broken(String),
}

/// The body, up to `max` bytes: a body of one data frame (what hyper gives for a small body
/// that arrived whole) as it is, without a copy.
async fn read_body<B>(body: B, max: usize) -> Result<Bytes, Unread>
where
    B: Body<Data = Bytes>,
    B::Error: Display,
{
    let mut body = std::pin::pin!(body);
    let mut first: Option<Bytes> = None;
    let mut collected: Option<bytes::BytesMut> = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Unread::Broken(e.to_string()))?;
        let Ok(data) = frame.into_data() else { continue };
        let had = first.as_ref().map_or(0, Bytes::len) + collected.as_ref().map_or(0, bytes::BytesMut::len);
        if data.len() > max.saturating_sub(had) {
            return Err(Unread::TooLarge);
        }
        match (&mut first, &mut collected) {
            (None, None) => first = Some(data),
            (_, Some(collected)) => collected.extend_from_slice(&data),
            (Some(_), None) => {
                let mut joined = bytes::BytesMut::with_capacity(had + data.len());
                joined.extend_from_slice(&first.take().unwrap_or_default());
                joined.extend_from_slice(&data);
                collected = Some(joined);
            }
        }
    }
    Ok(match (first, collected) {
        (_, Some(collected)) => collected.freeze(),
        (Some(first), None) => first,
        (None, None) => Bytes::new(),
    })
}

/// What [`inspect`] found in a body, owning its parts (so that it can come back from the blocking
/// pool): the `tools/call` arguments share the body's buffer.
struct Inspected {
    arguments: Option<RawArguments>,
    id: Option<serde_json::Value>,
    tool: Option<String>,
    method: Option<&'static str>,
}

impl Inspected {
    fn of(frame: &Bytes, checked: Checked<'_>) -> Self {
        Self {
            arguments: checked.arguments.map(|arguments| RawArguments::of(frame, arguments)),
            id: checked.id,
            tool: checked.tool.map(std::borrow::Cow::into_owned),
            method: checked.method,
        }
    }
}

/// `work` on `body`: in place for a body under [`OFF_WORKER_BODY_BYTES`], else on tokio's blocking
/// pool (see there); `None` when the runtime shut down before it ran.
async fn off_worker_if_large<T: Send + 'static>(
    body: &Bytes,
    work: impl FnOnce(&Bytes) -> T + Send + 'static,
) -> Option<T> {
    if body.len() < OFF_WORKER_BODY_BYTES {
        return Some(work(body));
    }
    let body = body.clone();
    tool_runtime::off_worker(move || work(&body)).await
}

/// `503 Service Unavailable` with a JSON-RPC error: the runtime is shutting down.
fn shutting_down() -> http::Response<ResponseBody> {
    let fault = Fault {
        code: rmcp::model::ErrorCode::INTERNAL_ERROR,
        message: "the server is shutting down; send the request to another server or again later".to_owned(),
        id: None,
        method: None,
    };
    closing(refusal(http::StatusCode::SERVICE_UNAVAILABLE, &fault))
}

/// `refusal` of `fault` with `status`, recorded as a refused message ([`crate::telemetry::refused`]).
fn refused(started: tokio::time::Instant, status: http::StatusCode, fault: &Fault) -> http::Response<ResponseBody> {
    crate::telemetry::refused(
        started,
        fault.method,
        fault.id.as_ref(),
        true,
        &fault.code.0.to_string(),
        Some(fault.code.0),
    );
    refusal(status, fault)
}

/// rmcp's `response` to a message that passed the check: one with an error status is rmcp's own
/// refusal (the handler answers with `200` or `202`), recorded with the status as its `error.type`
/// ([`crate::telemetry::refused`]).
fn rmcp_answered(
    started: tokio::time::Instant,
    method: &Option<&'static str>,
    id: Option<&serde_json::Value>,
    response: http::Response<ResponseBody>,
) -> http::Response<ResponseBody> {
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        crate::telemetry::refused(started, *method, id, true, status.as_str(), None);
    }
    response
}

impl Endpoint {
    /// Answers one request. The checks run in this order, each answering the request itself
    /// when it fails, so that a later one never sees what an earlier one refuses:
    ///
    /// 1. (feature `auth`) a `GET` of a protected resource metadata path: the metadata;
    /// 2. an `Origin` outside the allow-list: `403` with a JSON-RPC error;
    /// 3. (feature `auth`) the access token: `401` with a challenge when it is missing or not valid;
    /// 4. anything but a `POST` of `application/json` (event streams, `DELETE`, what rmcp answers
    ///    with `405` or `415`): with legacy sessions, a session of another principal is `404`;
    ///    then rmcp answers;
    /// 5. the body, read within the size limit (`413`) and the body timeout (`408`), both closing
    ///    the connection, or broken (`400`);
    /// 6. the incoming-message check ([`crate::incoming`]; on the blocking pool for a body of
    ///    [`OFF_WORKER_BODY_BYTES`] or more, as the direct path's parse): `400` with the JSON-RPC
    ///    error it names;
    /// 7. (feature `auth`) a `tools/call` of a tool beyond the token's scopes: `403`
    ///    `insufficient_scope` with a challenge;
    /// 8. a stateless 2026-07-28 `tools/call` the direct path admits ([`super::direct`]): answered
    ///    there;
    /// 9. with legacy sessions, a session of another principal is `404`; otherwise rmcp's service
    ///    answers (checking `Host` and the protocol headers), and a session it opens is recorded
    ///    with its principal.
    pub(super) async fn handle<B>(&self, request: http::Request<B>) -> http::Response<ResponseBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Display,
    {
        #[cfg(feature = "auth")]
        let auth = self.server.inner.auth.as_ref();
        #[cfg(feature = "auth")]
        if let Some(auth) = auth
            && request.method() == http::Method::GET
            && auth.metadata_paths().contains(&request.uri().path())
        {
            return metadata_response(auth);
        }
        if let Some(origin) = request.headers().get(http::header::ORIGIN) {
            let origin = String::from_utf8_lossy(origin.as_bytes());
            if !self.origins.allows(&origin) {
                // The header is the client's text: cut, and written as a string (escaped), so
                // that it cannot make the line long or hide in it what it says.
                let shown = crate::errors::echoed(&origin);
                tracing::warn!(origin = shown.as_str(), "refusing a request from an origin outside the allow-list");
                let message = format!(
                    "origin `{origin}` is not allowed: only loopback pages and the origins of the allow-list may call \
                     this server (DNS rebinding protection); to serve pages of that origin, add it to the allow-list \
                     (`allow_origin`, `toolbox mcp --allow-origin {origin}`)"
                );
                return refusal(http::StatusCode::FORBIDDEN, &Fault::invalid_request(message, None));
            }
        }
        #[cfg(feature = "auth")]
        let who = match auth {
            None => None,
            Some(auth) => match auth.authenticate(request.headers()).await {
                Ok(who) => Some(who),
                Err(refused) => return challenge_response(auth, &refused, None),
            },
        };
        let is_json =
            request.headers().get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
                v.split(';').next().is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
            });
        if request.method() != http::Method::POST || !is_json {
            // rmcp answers these (GET streams, DELETE, or 405 / 415).
            #[cfg(feature = "auth")]
            let request = {
                let mut request = request;
                if let Some(who) = who {
                    request.extensions_mut().insert(who);
                }
                request
            };
            let (parts, body) = request.into_parts();
            let session = self.sessions.as_ref().zip(named_session(&parts.headers).map(str::to_owned));
            if let Some((sessions, id)) = &session
                && !sessions.owned_by(id, self.server.principal_of(&parts).as_deref())
            {
                return session_not_found();
            }
            let delete = parts.method == http::Method::DELETE;
            let response = self.rmcp.handle(http::Request::from_parts(parts, body)).await;
            if let Some((sessions, id)) = session
                && delete
                && response.status().is_success()
            {
                sessions.closed(&id);
            }
            return response;
        }
        let started = tokio::time::Instant::now();
        let (mut parts, body) = request.into_parts();
        let limit = self.max_body_bytes;
        // A body that has arrived whole (most of them) is read without arming the timer.
        let mut reading = std::pin::pin!(read_body(body, limit));
        let first = std::future::poll_fn(|cx| Poll::Ready(reading.as_mut().poll(cx))).await;
        let read = match first {
            Poll::Ready(read) => Ok(read),
            Poll::Pending => tokio::time::timeout(self.body_timeout, reading).await,
        };
        let bytes = match read {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(Unread::TooLarge)) => {
                let fault = Fault::parse(format!("the message is over the limit of {limit} bytes; send a smaller one"));
                return closing(refused(started, http::StatusCode::PAYLOAD_TOO_LARGE, &fault));
            }
            Ok(Err(Unread::Broken(error))) => {
                let fault = Fault::parse(format!("the request body could not be read ({error}); send it again"));
                return closing(refused(started, http::StatusCode::BAD_REQUEST, &fault));
            }
            Err(_) => {
                let ms = self.body_timeout.as_millis();
                tracing::debug!(ms, "closing a connection whose request body did not arrive in time");
                let fault = Fault::parse(format!(
                    "the request body did not arrive within {ms} ms; send the whole body at once"
                ));
                return closing(refused(started, http::StatusCode::REQUEST_TIMEOUT, &fault));
            }
        };
        let Some(checked) = off_worker_if_large(&bytes, |bytes| inspect(bytes).map(|c| Inspected::of(bytes, c))).await
        else {
            return shutting_down();
        };
        match checked {
            Err(fault) => refused(started, http::StatusCode::BAD_REQUEST, &fault),
            Ok(checked) => {
                #[cfg(feature = "auth")]
                if let (Some(auth), Some(who)) = (auth, who) {
                    let served = self.server.served();
                    if let Some(tool) = &checked.tool
                        && let Some(definition) = served.registry.definition(tool)
                        && !auth.scopes().allows(definition, &who.scopes)
                    {
                        let scope = auth.scopes().required(definition);
                        // Who was refused is what an authorization failure's log line is for
                        // (docs/telemetry.md, "Never recorded"): the subject, an identifier and no
                        // credential, cut as everything read from a token is quoted.
                        let subject = crate::errors::echoed(&who.subject);
                        tracing::debug!(tool = %tool, scope, %subject, "refusing a call beyond the token's scopes");
                        let refused = auth.insufficient_scope(tool, scope, &who);
                        return challenge_response(auth, &refused, checked.id.clone());
                    }
                    parts.extensions.insert(who);
                }
                if let Some(arguments) = checked.arguments {
                    parts.extensions.insert(arguments);
                }
                if let Some(tool) = &checked.tool
                    && self.direct.admits(&self.server, &parts.headers, tool)
                {
                    match off_worker_if_large(&bytes, |bytes| Direct::take(message(bytes))).await {
                        Some(Some(taken)) => {
                            return self.direct.answer(&self.server, taken, parts, &self.streams).await;
                        }
                        Some(None) => {}
                        None => return shutting_down(),
                    }
                }
                let Some(sessions) = &self.sessions else {
                    let request = http::Request::from_parts(parts, Full::new(bytes.slice_ref(message(&bytes))));
                    return rmcp_answered(
                        started,
                        &checked.method,
                        checked.id.as_ref(),
                        self.rmcp.handle(request).await,
                    );
                };
                let principal = self.server.principal_of(&parts);
                let named = named_session(&parts.headers).map(str::to_owned);
                if let Some(id) = &named
                    && !sessions.owned_by(id, principal.as_deref())
                {
                    return session_not_found();
                }
                let request = http::Request::from_parts(parts, Full::new(bytes.slice_ref(message(&bytes))));
                let response =
                    rmcp_answered(started, &checked.method, checked.id.as_ref(), self.rmcp.handle(request).await);
                if named.is_none()
                    && let Some(id) = named_session(response.headers())
                {
                    sessions.opened(id.to_owned(), principal).await;
                }
                response
            }
        }
    }
}
