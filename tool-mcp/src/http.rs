//! Streamable HTTP: the tower service, and a server on an address (see the
//! [crate docs](crate#streamable-http)).

use std::convert::Infallible;
use std::fmt::Display;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Body;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::direct::Direct;
use crate::frame::{Fault, RawArguments, inspect, message};
use crate::{McpServer, ServeError, shutdown_signal};

/// The path MCP clients assume for a Streamable HTTP endpoint, where [`McpServer::serve_http`]
/// serves: `/mcp`.
pub const MCP_PATH: &str = "/mcp";

/// How long, once every call has answered in a shutdown, [`McpServer::serve_http_on`] lets open
/// response streams end by themselves before it ends them: 1 000 ms. Stateless responses end with
/// their call's answer well within it; a legacy session's event stream would stay open.
pub const STREAM_LINGER: Duration = Duration::from_secs(1);

/// How long a client has, from the first byte of a request, to send the whole request line and
/// headers: 10 000 ms. Past it the connection is closed (no response: the request is not read).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client has, once the headers are read, to send the whole body of a POST: 30 000 ms.
/// Past it the request gets `408 Request Timeout` and the connection is closed.
pub const DEFAULT_REQUEST_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a connection may stay open with no request in flight and no byte received (after it
/// was accepted, or after its last response): 60 000 ms. Past it the connection is closed.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How many connections [`McpServer::serve_http_on`] keeps open at once: 1 024, or fewer when the
/// process may not open that many files ([`connection_cap`]). Every accepted socket counts. When
/// the cap is reached, each new connection closes the connection that has been idle (no request
/// in flight) the longest, so sockets that never send a byte cannot lock a new client out; when
/// every connection has a request in flight, the new one waits in the kernel's listen backlog.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How many file descriptors [`connection_cap`] keeps for everything but client connections (the
/// listener, stores, logs, the shell's pipes and the files tools open): 64, and an eighth of the
/// limit above 512.
pub const RESERVED_DESCRIPTORS: u64 = 64;

/// The connection cap [`McpServer::serve_http_on`] uses: `configured` (at least 1), lowered to
/// keep it below the process's file-descriptor limit `files` (its soft `RLIMIT_NOFILE`), less
/// [`RESERVED_DESCRIPTORS`] (and an eighth of what is above 512), never below 1. With `ulimit -n
/// 256` and the default cap that is 192.
pub fn connection_cap(configured: usize, files: Option<u64>) -> usize {
    let configured = configured.max(1);
    let Some(files) = files else { return configured };
    let reserved = RESERVED_DESCRIPTORS + files.saturating_sub(512) / 8;
    let room = usize::try_from(files.saturating_sub(reserved)).unwrap_or(usize::MAX).max(1);
    configured.min(room)
}

/// The process's file-descriptor limit, after raising the soft limit to the hard one (as a server
/// that holds many sockets should); `None` when it is unlimited or cannot be read.
fn descriptor_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = rustix::process::Rlimit { current: limit.maximum, maximum: limit.maximum };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            limit = raised;
        }
    }
    limit.current
}

/// The HTTP limits of a server (see the `DEFAULT_*` constants).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) header_read: Duration,
    pub(crate) body: Duration,
    pub(crate) idle: Duration,
    pub(crate) connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read: DEFAULT_HEADER_READ_TIMEOUT,
            body: DEFAULT_REQUEST_BODY_TIMEOUT,
            idle: DEFAULT_IDLE_TIMEOUT,
            connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// One entry of the `Origin` allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AllowedOrigin {
    /// `null` (a sandboxed page, a `file:` page): only when added.
    Null,
    /// A scheme, a host (lowercase, IPv6 without brackets) and a port (`None`: any).
    Site { scheme: String, host: String, port: Option<u16> },
}

/// An origin as a request sends it, or as an allow-list entry gives it: `scheme://host[:port]`
/// (`:*` any port, in an entry only) or `null`.
fn parse_origin(text: &str, entry: bool) -> Option<AllowedOrigin> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("null") {
        return Some(AllowedOrigin::Null);
    }
    let (text, any_port) = match text.strip_suffix(":*") {
        Some(base) if entry => (base, true),
        _ => (text, false),
    };
    let (scheme, rest) = text.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) || !matches!(scheme.as_str(), "http" | "https") {
        return None;
    }
    let authority: http::uri::Authority = rest.parse().ok()?;
    let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let default = if scheme == "https" { 443 } else { 80 };
    let port = if any_port { None } else { Some(authority.port_u16().unwrap_or(default)) };
    Some(AllowedOrigin::Site { scheme, host, port })
}

/// `Ok` when `entry` is an `Origin` allow-list entry: `http://` or `https://`, a host, an optional
/// port (`:*` for any; none means the scheme's default, 80 or 443), no path; or `null`.
///
/// # Errors
/// The entry is none of those, said so.
pub fn check_allowed_origin(entry: &str) -> Result<(), String> {
    parse_origin(entry, true).map(drop).ok_or_else(|| {
        format!(
            "`{entry}` is not an origin; give `http://HOST[:PORT]` or `https://HOST[:PORT]` (`:*` for any port, no path), \
             or `null`"
        )
    })
}

/// The `Origin` allow-list: loopback on any port (`http` and `https`), and the entries added.
#[derive(Debug, Clone)]
struct Origins(Arc<[AllowedOrigin]>);

impl Origins {
    fn new(added: &[String]) -> Self {
        let loopback = ["localhost", "127.0.0.1", "::1"].into_iter().flat_map(|host| {
            ["http", "https"].map(|scheme| AllowedOrigin::Site {
                scheme: scheme.to_owned(),
                host: host.to_owned(),
                port: None,
            })
        });
        let added = added.iter().filter_map(|entry| {
            let parsed = parse_origin(entry, true);
            if parsed.is_none() {
                tracing::warn!(entry, "an allowed origin that is not an origin matches nothing");
            }
            parsed
        });
        Self(loopback.chain(added).collect())
    }

    fn allows(&self, origin: &str) -> bool {
        parse_origin(origin, false).is_some_and(|origin| {
            self.0.iter().any(|allowed| match (allowed, &origin) {
                (AllowedOrigin::Null, AllowedOrigin::Null) => true,
                (AllowedOrigin::Site { scheme, host, port }, AllowedOrigin::Site { scheme: s, host: h, port: p }) => {
                    scheme == s && host == h && (port.is_none() || port == p)
                }
                _ => false,
            })
        })
    }
}

/// A response body of [`HttpService`].
pub(crate) type ResponseBody = BoxBody<Bytes, Infallible>;

/// The Streamable HTTP endpoint of [`McpServer::http_service`]: rmcp's Streamable HTTP service
/// over this server, behind the checks the [crate docs](crate#streamable-http) list (the `Origin`
/// allow-list, the POST body's size and time limits, the JSON-RPC check of every message); the
/// common stateless 2026-07-28 `tools/call` is answered by the endpoint itself, through rmcp's
/// dispatch of the request, with the answer rmcp's service gives (the crate docs say when). A
/// tower `Service<http::Request<B>>` for any body `B` of [`Bytes`]; it answers every path it is
/// given (mount it at [`MCP_PATH`]) and is cheap to clone.
#[derive(Clone)]
pub struct HttpService(Arc<Endpoint>);

/// The principal that opened each legacy session (`Mcp-Session-Id`), kept while the session
/// lives: a request naming a session is served only for the same
/// [principal](tool_runtime::ToolContext::principal) (as the request's access token and the
/// context hook give it, none matching none). For any other the session does not exist: `404 Not
/// Found`, the answer rmcp gives for an unknown session, before rmcp reads the request, so no
/// call runs in it, no pending input request of it is answered, and a `DELETE` ends nothing.
struct Sessions {
    owners: std::sync::Mutex<std::collections::HashMap<String, Option<String>>>,
    /// rmcp's sessions, asked which ids still live when the map reaches `prune_at`.
    manager: Arc<LocalSessionManager>,
    /// The size at which the ids of ended sessions are dropped (twice the live count after each
    /// prune, at least [`SESSIONS_PRUNED_AT`]).
    prune_at: std::sync::atomic::AtomicUsize,
}

/// The owner map's size at which ended sessions are first dropped from it: 1 024 entries.
const SESSIONS_PRUNED_AT: usize = 1024;

/// The header that names a legacy session.
const SESSION_HEADER: &str = "mcp-session-id";

impl Sessions {
    /// `true` when the session `id` was opened by `principal`.
    fn owned_by(&self, id: &str, principal: Option<&str>) -> bool {
        let owners = self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        owners.get(id).is_some_and(|owner| owner.as_deref() == principal)
    }

    /// Records `principal` as the owner of the new session `id`; drops ended sessions first when
    /// the map is at its pruning size.
    async fn opened(&self, id: String, principal: Option<String>) {
        use std::sync::atomic::Ordering;
        let at = self.prune_at.load(Ordering::Relaxed);
        let ids: Vec<String> = {
            let owners = self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if owners.len() < at { Vec::new() } else { owners.keys().cloned().collect() }
        };
        if !ids.is_empty() {
            use rmcp::transport::streamable_http_server::SessionManager as _;
            let mut ended = Vec::new();
            for old in ids {
                if !self.manager.has_session(&old.as_str().into()).await.unwrap_or(false) {
                    ended.push(old);
                }
            }
            let mut owners = self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for old in &ended {
                owners.remove(old);
            }
            self.prune_at.store((owners.len() * 2).max(SESSIONS_PRUNED_AT), Ordering::Relaxed);
        }
        self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id, principal);
    }

    fn closed(&self, id: &str) {
        self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(id);
    }
}

/// rmcp's answer to a request naming a session it does not have.
fn session_not_found() -> http::Response<ResponseBody> {
    let mut response = http::Response::new(Full::new(Bytes::from_static(b"Not Found: Session not found")).boxed());
    *response.status_mut() = http::StatusCode::NOT_FOUND;
    response
}

/// The session a request names, when it names one as a header value of visible ASCII.
fn named_session(headers: &http::HeaderMap) -> Option<&str> {
    headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok())
}

/// What an [`HttpService`] holds, shared by its clones (a clone per request is one `Arc`).
struct Endpoint {
    rmcp: StreamableHttpService<McpServer, LocalSessionManager>,
    /// With legacy sessions on: who opened each.
    sessions: Option<Sessions>,
    origins: Origins,
    body_timeout: Duration,
    max_body_bytes: usize,
    /// The server: its handler, its resource server and its registry's tools.
    server: McpServer,
    /// Answers the common stateless `tools/call` without rmcp's per-request service ([`Direct`]).
    direct: Direct,
    /// Cancelled at the end of a shutdown: ends the response streams still open.
    streams: CancellationToken,
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

/// A JSON-RPC error response with `status`.
fn refusal(status: http::StatusCode, fault: &Fault) -> http::Response<ResponseBody> {
    json_response(status, Bytes::from(fault.reply().to_string()))
}

/// `body` (JSON text) as an `application/json` response with `status`.
pub(crate) fn json_response(status: http::StatusCode, body: Bytes) -> http::Response<ResponseBody> {
    let mut response = http::Response::new(Full::new(body).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
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

impl Endpoint {
    async fn handle<B>(&self, request: http::Request<B>) -> http::Response<ResponseBody>
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
                tracing::warn!(%origin, "refusing a request from an origin outside the allow-list");
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
                return closing(refusal(http::StatusCode::PAYLOAD_TOO_LARGE, &fault));
            }
            Ok(Err(Unread::Broken(error))) => {
                let fault = Fault::parse(format!("the request body could not be read ({error}); send it again"));
                return closing(refusal(http::StatusCode::BAD_REQUEST, &fault));
            }
            Err(_) => {
                let ms = self.body_timeout.as_millis();
                tracing::debug!(ms, "closing a connection whose request body did not arrive in time");
                let fault = Fault::parse(format!(
                    "the request body did not arrive within {ms} ms; send the whole body at once"
                ));
                return closing(refusal(http::StatusCode::REQUEST_TIMEOUT, &fault));
            }
        };
        match inspect(&bytes) {
            Err(fault) => refusal(http::StatusCode::BAD_REQUEST, &fault),
            Ok(checked) => {
                #[cfg(feature = "auth")]
                if let (Some(auth), Some(who)) = (auth, who) {
                    let served = self.server.served();
                    if let Some(tool) = &checked.tool
                        && let Some(definition) = served.registry.definition(tool)
                        && !auth.scopes().allows(definition, &who.scopes)
                    {
                        let scope = auth.scopes().required(definition);
                        tracing::debug!(tool = %tool, scope, subject = %who.subject, "refusing a call beyond the token's scopes");
                        let refused = auth.insufficient_scope(tool, scope, &who);
                        return challenge_response(auth, &refused, checked.id.clone());
                    }
                    parts.extensions.insert(who);
                }
                if let Some(arguments) = checked.arguments {
                    parts.extensions.insert(RawArguments::of(&bytes, arguments));
                }
                if let Some(tool) = &checked.tool
                    && self.direct.admits(&self.server, &parts.headers, tool)
                    && let Some(taken) = Direct::take(message(&bytes))
                {
                    return self.direct.answer(&self.server, taken, parts, &self.streams).await;
                }
                let Some(sessions) = &self.sessions else {
                    let request = http::Request::from_parts(parts, Full::new(bytes.slice_ref(message(&bytes))));
                    return self.rmcp.handle(request).await;
                };
                let principal = self.server.principal_of(&parts);
                let named = named_session(&parts.headers).map(str::to_owned);
                if let Some(id) = &named
                    && !sessions.owned_by(id, principal.as_deref())
                {
                    return session_not_found();
                }
                let request = http::Request::from_parts(parts, Full::new(bytes.slice_ref(message(&bytes))));
                let response = self.rmcp.handle(request).await;
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

/// The protected resource metadata (RFC 9728), readable from any origin.
#[cfg(feature = "auth")]
fn metadata_response(auth: &crate::auth::ResourceServer) -> http::Response<ResponseBody> {
    let mut response = http::Response::new(Full::new(Bytes::from(auth.metadata().to_string())).boxed());
    let headers = response.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    headers.insert(http::header::ACCESS_CONTROL_ALLOW_ORIGIN, http::HeaderValue::from_static("*"));
    response
}

/// A refused request: its status, the `WWW-Authenticate` challenge, and a JSON-RPC error body
/// (`-32600`, with the request's id when it was read) saying the same.
#[cfg(feature = "auth")]
fn challenge_response(
    auth: &crate::auth::ResourceServer,
    refused: &crate::auth::Refusal,
    id: Option<serde_json::Value>,
) -> http::Response<ResponseBody> {
    let message = if refused.error.is_none() {
        format!(
            "this server needs an OAuth access token: send `Authorization: Bearer <token>` (the protected resource \
             metadata at {} names the authorization server)",
            auth.metadata_url()
        )
    } else {
        refused.description.clone()
    };
    let mut response = refusal(refused.status, &Fault::invalid_request(message, id));
    match http::HeaderValue::from_str(&auth.challenge(refused)) {
        Ok(value) => {
            response.headers_mut().insert(http::header::WWW_AUTHENTICATE, value);
        }
        Err(error) => tracing::error!(%error, "a challenge is not a header value"),
    }
    response
}

/// `response` with `Connection: close` (its request was not read whole).
fn closing(mut response: http::Response<ResponseBody>) -> http::Response<ResponseBody> {
    response.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    response
}

impl McpServer {
    /// The Streamable HTTP endpoint as a tower service (`http::Request` in, `http::Response`
    /// out), configured as the builder says (stateless unless legacy sessions are on, plain JSON
    /// responses for calls that send no notification, the `Host` and `Origin` allow-lists, the
    /// POST body's limits, the JSON-RPC check of every message). Mount it in your own server:
    ///
    /// - axum: `axum::Router::new().route_service("/mcp", server.http_service())`, then serve the
    ///   router as usual; your own layers (authentication, tracing, limits) wrap it, and what they
    ///   put in the request's extensions reaches the [context hook](crate::McpServerBuilder::context)
    ///   through [`CallRequest::http`](crate::CallRequest::http).
    /// - hyper: wrap it in `hyper_util::service::TowerToHyperService` and serve each connection
    ///   with it.
    ///
    /// The header-read and idle timeouts and the connection cap belong to the server that owns the
    /// connections: yours, when you mount the service (set them there); [`McpServer::serve_http_on`]
    /// sets them as the builder says. On shutdown call [`McpServer::drain`], then stop your server.
    pub fn http_service(&self) -> HttpService {
        self.http_service_with(CancellationToken::new())
    }

    /// As [`McpServer::http_service`]; cancelling `streams` ends every response stream still open.
    fn http_service_with(&self, streams: CancellationToken) -> HttpService {
        let inner = &self.inner;
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(inner.legacy_sessions)
            .with_json_response(true)
            .with_allowed_hosts(inner.allowed_hosts.clone())
            .with_cancellation_token(streams.clone());
        config.max_request_body_bytes = inner.max_frame_bytes;
        let server = self.clone();
        let manager = Arc::new(LocalSessionManager::default());
        let sessions = inner.legacy_sessions.then(|| Sessions {
            owners: std::sync::Mutex::default(),
            manager: manager.clone(),
            prune_at: SESSIONS_PRUNED_AT.into(),
        });
        HttpService(Arc::new(Endpoint {
            rmcp: StreamableHttpService::new(move || Ok(server.for_session()), manager, config),
            sessions,
            origins: Origins::new(&inner.allowed_origins),
            body_timeout: inner.limits.body,
            max_body_bytes: inner.max_frame_bytes,
            server: self.clone(),
            direct: Direct::new(&inner.allowed_hosts),
            streams,
        }))
    }

    /// Serves Streamable HTTP at [`MCP_PATH`] on `addr` (e.g. `127.0.0.1:8080`) until SIGTERM or
    /// Ctrl-C ([`shutdown_signal`]; then as the [crate docs](crate#shutdown) say). Other paths get
    /// `404 Not Found`. Once bound it writes one line to standard error, `serving MCP on
    /// http://127.0.0.1:8080/mcp; Ctrl-C stops`, with the address bound (the port chosen for a
    /// `:0`), whether or not a tracing subscriber is installed; [`serve_http_on`](Self::serve_http_on)
    /// writes nothing of its own.
    ///
    /// # Errors
    /// [`ServeError::Bind`] when the address cannot be bound; [`ServeError::Stopped`] when the
    /// HTTP server fails.
    pub async fn serve_http(&self, addr: impl ToSocketAddrs + std::fmt::Display) -> Result<(), ServeError> {
        let listener =
            TcpListener::bind(&addr).await.map_err(|source| ServeError::Bind { addr: addr.to_string(), source })?;
        if let Ok(bound) = listener.local_addr() {
            eprintln!("serving MCP on http://{bound}{MCP_PATH}; Ctrl-C stops");
        }
        self.serve_http_on(listener, shutdown_signal()).await
    }

    /// As [`McpServer::serve_http`], on a listener already bound (bind `127.0.0.1:0` to get a
    /// free port, and read it from `listener.local_addr()`), shutting down when `shutdown`
    /// completes: the listener stops accepting at once, open connections finish their requests,
    /// running calls get the grace period ([`McpServer::drain`]), and the event streams still open
    /// [`STREAM_LINGER`] (1 000 ms) after the last call answered are ended.
    ///
    /// HTTP/1.1 connections, each held to the builder's limits: the
    /// [header-read timeout](crate::McpServerBuilder::header_read_timeout), the
    /// [idle timeout](crate::McpServerBuilder::idle_timeout), and the
    /// [connection cap](crate::McpServerBuilder::max_connections) (over it, a connection waits to
    /// be accepted).
    ///
    /// # Errors
    /// [`ServeError::Stopped`] when the HTTP server fails.
    pub async fn serve_http_on(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ServeError> {
        if let Ok(addr) = listener.local_addr() {
            tracing::info!("serving MCP on http://{addr}{MCP_PATH}");
        }
        let streams = CancellationToken::new();
        let service = self.http_service_with(streams.clone());
        #[allow(unused_mut)]
        let mut router = axum::Router::new().route_service(MCP_PATH, service.clone());
        #[cfg(feature = "auth")]
        if let Some(auth) = &self.inner.auth {
            let [root, suffixed] = auth.metadata_paths();
            router = router.route_service(root, service.clone());
            if suffixed != root && suffixed != MCP_PATH {
                router = router.route_service(suffixed, service);
            }
        }
        let stop_accepting = CancellationToken::new();
        let mut limits = self.inner.limits;
        let files = descriptor_limit();
        limits.connections = connection_cap(limits.connections, files);
        tracing::info!(
            connections = limits.connections,
            configured = self.inner.limits.connections,
            files,
            "serving at most {} connections at once (the process may open {} files)",
            limits.connections,
            files.map_or_else(|| "any number of".to_owned(), |f| f.to_string())
        );
        let serving = accept(listener, router, limits, stop_accepting.clone());
        let mut serving = std::pin::pin!(serving);
        tokio::select! {
            () = &mut serving => return Ok(()),
            () = shutdown => {}
        }
        tracing::info!("shutting down: no new connections");
        stop_accepting.cancel();
        let closed = CancellationToken::new();
        let serving = async {
            serving.await;
            closed.cancel();
        };
        let drain = async {
            self.drain().await;
            // The calls have answered and their responses are on their way; only streams that
            // no call ends (a legacy session's event stream) are still open after a while.
            tokio::select! {
                () = closed.cancelled() => {}
                () = tokio::time::sleep(STREAM_LINGER) => streams.cancel(),
            }
        };
        tokio::join!(serving, drain);
        Ok(())
    }
}

/// The open connections, each with its activity and the token that closes it when it is idle and
/// a new connection needs its place ([`DEFAULT_MAX_CONNECTIONS`]).
#[derive(Default)]
struct Open {
    next: std::sync::atomic::AtomicU64,
    connections: std::sync::Mutex<std::collections::HashMap<u64, (watch::Receiver<Activity>, CancellationToken)>>,
}

impl Open {
    /// Registers a connection; it is forgotten when the returned guard drops.
    fn register(self: &Arc<Self>, activity: watch::Receiver<Activity>, evict: CancellationToken) -> Registered {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.connections.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id, (activity, evict));
        Registered { open: self.clone(), id }
    }

    /// Closes the connection idle the longest (none when every one has a request in flight).
    fn evict_longest_idle(&self) {
        let mut connections = self.connections.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let longest = connections
            .iter()
            .filter_map(|(id, (activity, _))| {
                let activity = *activity.borrow();
                (activity.in_flight == 0).then_some((activity.idle_since, *id))
            })
            .min();
        if let Some((_, id)) = longest
            && let Some((_, evict)) = connections.remove(&id)
        {
            evict.cancel();
        }
    }
}

/// A connection's place in [`Open`], given back on drop.
struct Registered {
    open: Arc<Open>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.open.connections.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.id);
    }
}

/// Accepts connections while fewer than `limits.connections` are open, until `stop` is
/// cancelled; then asks every connection to close after its request and waits until all have. At
/// the cap, each new connection first closes the one idle the longest ([`Open`]).
async fn accept(listener: TcpListener, router: axum::Router, limits: Limits, stop: CancellationToken) {
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.connections.max(1)));
    let connections = TaskTracker::new();
    let open = Arc::new(Open::default());
    loop {
        // The place first, so that every accepted socket is within the cap.
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                open.evict_longest_idle();
                tokio::select! {
                    permit = permits.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                    () = stop.cancelled() => break,
                }
            }
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => break,
        };
        match accepted {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                connections.spawn(connection(stream, router.clone(), limits, stop.clone(), (permit, open.clone())));
            }
            Err(error) => {
                // Out of file descriptors, or a connection reset before it was accepted: wait a
                // little, as a busy loop would not help.
                tracing::warn!(%error, "cannot accept a connection");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    () = stop.cancelled() => break,
                }
            }
        }
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// What a connection has done, watched by [`slow_head`].
#[derive(Debug, Clone, Copy)]
struct Activity {
    /// Requests whose head was read and whose response body is not yet sent.
    in_flight: usize,
    /// Reads that gave bytes.
    reads: u64,
    /// `reads` when the connection last became idle (no request in flight; 0 at its start): a
    /// read past it is the start of the next request head. Kept here, not by the watcher, so that
    /// bytes read before the watcher first looks still start the clock.
    reads_when_idle: u64,
    /// When the connection last became idle (or was accepted).
    idle_since: std::time::Instant,
}

impl Default for Activity {
    fn default() -> Self {
        Self { in_flight: 0, reads: 0, reads_when_idle: 0, idle_since: std::time::Instant::now() }
    }
}

/// Serves one connection with hyper's HTTP/1.1: its `header_read_timeout` (which starts when the
/// connection waits for a request head: after it was accepted and after each response) is the idle
/// timeout; [`slow_head`] closes it when a head that began does not end within the header-read
/// timeout; [`Open`] closes it when it is idle and a new connection needs its place.
async fn connection(
    stream: tokio::net::TcpStream,
    router: axum::Router,
    limits: Limits,
    stop: CancellationToken,
    (_permit, open): (tokio::sync::OwnedSemaphorePermit, Arc<Open>),
) {
    let (activity, watching) = watch::channel(Activity::default());
    let evict = CancellationToken::new();
    let _registered = open.register(watching.clone(), evict.clone());
    let activity = Arc::new(activity);
    let io = hyper_util::rt::TokioIo::new(Watched { io: stream, activity: activity.clone() });
    let service = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
        let guard = InFlight::begin(activity.clone());
        let mut router = router.clone();
        async move {
            let response = match tower_service::Service::call(&mut router, request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok::<_, Infallible>(response.map(|body| Tracked { body, _guard: guard }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(limits.idle);
    let conn = builder.serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    let watchdog = slow_head(watching, limits.header_read);
    let mut watchdog = std::pin::pin!(watchdog);
    let mut stopping = false;
    loop {
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(error) = served {
                    tracing::debug!(%error, "an HTTP connection ended");
                }
                return;
            }
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
            () = &mut watchdog => {
                tracing::debug!(ms = limits.header_read.as_millis(), "closing a connection whose request head did not arrive in time");
                return;
            }
            () = evict.cancelled(), if !stopping => {
                // Idle when chosen; a request that began since ends first.
                tracing::debug!("closing an idle connection: a new connection needs its place");
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Completes when bytes of a request head arrived while no request was in flight and the head was
/// not complete `timeout` later.
async fn slow_head(mut activity: watch::Receiver<Activity>, timeout: Duration) {
    loop {
        // Idle, and the first bytes of the next request head have come: they start the clock.
        if activity.wait_for(|a| a.in_flight == 0 && a.reads != a.reads_when_idle).await.is_err() {
            return std::future::pending().await;
        }
        let head = tokio::time::timeout(timeout, async { activity.wait_for(|a| a.in_flight > 0).await.is_ok() });
        match head.await {
            Err(_) => return,
            Ok(true) => {}
            Ok(false) => return std::future::pending().await,
        }
    }
}

/// Counts a request in flight until dropped (with its response body).
struct InFlight(Arc<watch::Sender<Activity>>);

impl InFlight {
    fn begin(activity: Arc<watch::Sender<Activity>>) -> Self {
        activity.send_modify(|a| a.in_flight += 1);
        Self(activity)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.send_modify(|a| {
            a.in_flight -= 1;
            if a.in_flight == 0 {
                a.reads_when_idle = a.reads;
                a.idle_since = std::time::Instant::now();
            }
        });
    }
}

/// A response body that keeps its request in flight until it is sent (or dropped).
struct Tracked {
    body: axum::body::Body,
    _guard: InFlight,
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// A TCP stream that counts the reads that give bytes.
struct Watched {
    io: tokio::net::TcpStream,
    activity: Arc<watch::Sender<Activity>>,
}

impl tokio::io::AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.send_modify(|a| a.reads += 1);
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_on_any_port_are_allowed_and_others_only_when_added() {
        let origins = Origins::new(&["https://app.example".to_owned(), "http://dev.example:*".to_owned()]);
        for allowed in [
            "http://localhost",
            "http://localhost:5173",
            "https://127.0.0.1:8443",
            "http://[::1]:3000",
            "HTTP://LOCALHOST:1",
            "https://app.example",
            "https://app.example:443",
            "http://dev.example:9999",
        ] {
            assert!(origins.allows(allowed), "{allowed}");
        }
        for refused in [
            "null",
            "http://evil.example",
            "https://app.example:8443",
            "http://app.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "file://",
            "http://localhost/path",
            "",
        ] {
            assert!(!origins.allows(refused), "{refused}");
        }
        assert!(Origins::new(&["null".to_owned()]).allows("null"));
    }

    #[test]
    fn an_allow_list_entry_that_is_not_an_origin_is_refused_with_the_shape_to_give() {
        assert_eq!(check_allowed_origin("https://app.example:8443"), Ok(()));
        assert_eq!(check_allowed_origin("null"), Ok(()));
        assert_eq!(
            check_allowed_origin("app.example"),
            Err("`app.example` is not an origin; give `http://HOST[:PORT]` or `https://HOST[:PORT]` (`:*` for any \
                 port, no path), or `null`"
                .to_owned())
        );
        assert!(check_allowed_origin("https://app.example/path").is_err());
    }
}
