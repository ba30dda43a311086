//! Serve a tool [`Registry`] over MCP (the Model Context Protocol), on
//! [rmcp](https://docs.rs/rmcp): on standard input and output, on a TCP address with Streamable
//! HTTP, or as a tower service mounted in your own axum or hyper server.
//!
//! ```no_run
//! use tool_runtime::{Registry, tool};
//!
//! /// Add two numbers.
//! #[tool]
//! fn add(
//!     /// The first number.
//!     a: i64,
//!     /// The second number.
//!     b: i64,
//! ) -> i64 {
//!     a + b
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::builder().tool(add::TOOL).build()?;
//! let server = tool_mcp::McpServer::builder(registry).name("calculator", "1.0.0").build();
//! server.serve_stdio().await?; // or: server.serve_http("127.0.0.1:8080").await?
//! # Ok(())
//! # }
//! ```
//!
//! # What a client sees
//! - `initialize`: the server's name and version ([`McpServerBuilder::name`]; default `tool-mcp`
//!   and this crate's version), the tools capability with `listChanged: true`, and the
//!   instructions when given ([`McpServerBuilder::instructions`]).
//! - `tools/list`: every tool the [listing filter](McpServerBuilder::list_filter) keeps (default:
//!   all), sorted by name, in one page, each as [`tool_entry`] gives it: the canonical input
//!   schema, annotations from the tags, `outputSchema` for a tool that declares one.
//! - Deferred tools ([`Registry::is_deferred`](tool_runtime::Registry::is_deferred)): when the
//!   registry defers any, `tools/list` gives the tools not deferred and the two meta-tools
//!   `search_tools` (its result: the `tools/list` entries of the best matches) and `call_tool`
//!   (runs a tool by name with its arguments object), as
//!   [`Registry::call_with_search_where`](tool_runtime::Registry::call_with_search_where)
//!   answers them; a deferred tool the [listing filter](McpServerBuilder::list_filter) hides is
//!   not found either.
//!   A deferred tool is also called by its own name, as any tool.
//! - `tools/call`: the arguments object goes through [`Registry::call`], so decoding follows the
//!   framework's rules (unknown fields refused and named) and the registry's
//!   [permission policy](tool_runtime::PermissionPolicy) decides what runs (it sees the call's
//!   context, principal included). Every failure the model can fix (bad arguments, a tool error, a
//!   refused tool) is a result with `isError: true` whose text says what to change; content as
//!   [`call_result`] maps it, with `structuredContent` beside the text for tools with an output
//!   schema. A tool name the registry does not have is a JSON-RPC error `-32602` (invalid
//!   params, as the MCP specification lists it) naming the listed tools.
//! - Call ids (the id a tool sees, [`ToolContext::call_id`](tool_runtime::ToolContext::call_id)):
//!   `mcp_`, 8 hex digits drawn at random once per process, `_` and a sequence number counted
//!   from 1 over every server of the process (`mcp_1f3a9c0e_7`): unique within a process, and
//!   apart from those of other processes serving the same stores. (A JSON-RPC request id is not
//!   one: every stateless HTTP client counts its own from 1.)
//! - Progress: when the request's `_meta` carries a `progressToken`, the call's
//!   [`ToolContext::progress`](tool_runtime::ToolContext::progress) reports are sent as
//!   `notifications/progress` while the tool runs (`progress` = done, `total` when known,
//!   `message` when not empty). A report whose `done` is not greater than the last one sent is
//!   dropped (MCP: progress MUST increase). All are sent before the response; none is sent once
//!   the call is cancelled.
//! - Cancellation: `notifications/cancelled` (standard input and output, legacy HTTP sessions),
//!   or the client closing the call's HTTP response (stateless Streamable HTTP, where closing the
//!   stream is the cancellation), cancels the call's
//!   [`cancellation`](tool_runtime::ToolContext::cancellation) token; the call gets no response.
//!   A `notifications/cancelled` POSTed to the stateless endpoint reaches no call (rmcp accepts
//!   and drops it: the call runs in another request, maybe in another process), so a client of a
//!   protocol version before 2026-07-28 cancels there by closing the call's response, or needs
//!   [legacy sessions](McpServerBuilder::legacy_session_mode).
//! - Tasks (the extension `io.modelcontextprotocol/tasks`, advertised under
//!   `capabilities.extensions` when a served tool is tagged for it): a tool tagged
//!   [`task`](tasks::TASK_TAG) or [`task_required`](tasks::TASK_REQUIRED_TAG) answers a client
//!   with the extension with a task handle, then `tasks/get`, `tasks/update` and `tasks/cancel`;
//!   see [`tasks`].
//! - Tool list changes ([`McpServer::set_registry`]): `notifications/tools/list_changed` on every
//!   `subscriptions/listen` stream that asks for them (2026-07-28), and unscoped to a standard
//!   input and output client of an earlier version.
//! - Resources, resource templates, prompts and completions, when declared on the builder
//!   ([`McpServerBuilder::resource`], [`McpServerBuilder::resource_template`],
//!   [`McpServerBuilder::prompt`], [`McpServerBuilder::completion`]): `resources/list`,
//!   `resources/templates/list`, `resources/read`, `prompts/list`, `prompts/get` and
//!   `completion/complete`, each capability in `initialize` only when something of it is
//!   declared; see the module [`catalog`].
//! - `ping` (protocol versions before 2026-07-28, which removed it), `tools/list` and other calls
//!   are answered while calls run (each request is its own task; the runtime is the caller's, so
//!   run it multi-threaded).
//!
//! # The context of a call
//! Each `tools/call` gets a fresh [`ToolContext`] built by the
//! [context hook](McpServerBuilder::context) from what the request carries ([`CallRequest`]: over
//! HTTP its headers, such as `Authorization`, and anything your middleware put in its
//! extensions). The hook sets the session id, the [principal](tool_runtime::ToolContext::principal)
//! and dependency overrides, or refuses the call. The server then sets the cancellation token and
//! the progress listener.
//!
//! # Streamable HTTP
//! Stateless (MCP 2026-07-28, served by rmcp): each POST is served on its own and nothing a later
//! request needs is kept in the process, so any worker behind a load balancer can answer any
//! request (state a tool keeps belongs in the stores its dependencies give). A call that sends no
//! notification gets a plain `application/json` response; one that streams progress gets
//! `text/event-stream`. The endpoint is [`MCP_PATH`] (`/mcp`). The `Host` header must be in the
//! allow-list ([`McpServerBuilder::allow_host`]; default `localhost`, `127.0.0.1` and `::1`, any
//! port), against DNS rebinding: any other host gets `403 Forbidden`. Legacy sessions
//! (`Mcp-Session-Id`, for clients of protocol versions before 2026-07-28) only when asked:
//! [`McpServerBuilder::legacy_session_mode`]. The common request, a stateless 2026-07-28
//! `tools/call` that asks for no progress and no log messages, is answered by the endpoint itself
//! through rmcp's dispatch of the request, with the answer rmcp's service gives and without the
//! service it builds for each stateless request ("Serving a registry" below says when).
//!
//! What a hostile or broken HTTP client gets (the MCP specification: servers MUST validate
//! `Origin` on every incoming connection):
//! - An `Origin` outside the allow-list (loopback on any port, `http` or `https`, and what
//!   [`McpServerBuilder::allow_origin`] adds; `null` only when added): `403 Forbidden` with a
//!   JSON-RPC error body (`-32600`, `"id": null`) naming the origin and how to allow it. A request
//!   without `Origin` (any client that is not a browser page) is served.
//! - A request line and headers not all read [`DEFAULT_HEADER_READ_TIMEOUT`] (10 000 ms) after
//!   their first byte: the connection is closed
//!   ([`McpServerBuilder::header_read_timeout`]).
//! - A POST body not all read [`DEFAULT_REQUEST_BODY_TIMEOUT`] (30 000 ms) after the headers:
//!   `408 Request Timeout` with a JSON-RPC error (`-32700`), and the connection is closed
//!   ([`McpServerBuilder::request_body_timeout`]).
//! - No request in flight for [`DEFAULT_IDLE_TIMEOUT`] (60 000 ms; hyper's header-read timer,
//!   which starts when the connection waits for a request): the connection is closed; a running
//!   call, however long, keeps its connection ([`McpServerBuilder::idle_timeout`]).
//! - More than [`DEFAULT_MAX_CONNECTIONS`] (1 024) connections: the next is not accepted until
//!   one closes; it waits in the kernel's listen backlog ([`McpServerBuilder::max_connections`]).
//! - A body over [`DEFAULT_MAX_FRAME_BYTES`] (16 MiB): `413 Payload Too Large` with a JSON-RPC
//!   error ([`McpServerBuilder::max_frame_bytes`]).
//! - A body that is not a valid JSON-RPC message: `400 Bad Request` with the JSON-RPC error the
//!   specification names, as on standard input and output (below).
//!
//! The header-read and idle timeouts and the connection cap are the server's
//! ([`McpServer::serve_http_on`]); the other checks are in [`McpServer::http_service`] too.
//!
//! # Malformed messages
//! Every message, on standard input and output ([`McpServer::serve_lines_until`]) and over HTTP,
//! is checked on its raw text before rmcp reads it (one streaming pass, no `serde_json::Value`
//! built):
//! - `-32700` (parse error, `"id": null`): not UTF-8, not JSON, a lone surrogate escape
//!   (`"\ud800"`), a number out of a 64-bit float's range (`1e400`), a member of the message sent
//!   twice (`"id"` twice), a key sent twice outside `params`, a line over the frame limit (skipped
//!   as it is read, never kept whole in memory).
//! - `-32600` (invalid request): valid JSON that is not a JSON-RPC 2.0 message: not an object, a
//!   batch, no `"jsonrpc": "2.0"`, an `id` that is not a string or an integer, no `method`.
//! - `-32602` (invalid params), naming the member: a key sent twice in a request's `params`;
//!   for `tools/call`, `params` not an object, `name` missing, sent twice or not a string,
//!   `arguments` not an object.
//! - A key sent twice inside a tool call's `arguments`: the call decodes the arguments' text as
//!   sent, so the registry refuses it as [`Registry::call`] does for any caller (an `isError`
//!   result: ``invalid arguments for `read`: `file_path`: the field is sent twice; send each
//!   field once``).
//!
//! A notification (no `id`) that is valid JSON gets no reply (JSON-RPC 2.0). On standard input
//! and output the next line is read after every refused one.
//!
//! # Shutdown
//! [`McpServer::serve_stdio`] and [`McpServer::serve_http`] stop on SIGTERM or Ctrl-C
//! ([`shutdown_signal`]); [`McpServer::serve_stdio_until`] and [`McpServer::serve_http_on`] when a
//! future of yours completes. Then no new call is admitted (a
//! `tools/call` gets the JSON-RPC error `-32603` saying the server is shutting down; HTTP stops
//! accepting connections), running calls get the grace period ([`McpServerBuilder::grace_period`],
//! default [`DEFAULT_GRACE_PERIOD`], 10 000 ms) to finish, then their tokens are cancelled and
//! they answer ``tool `x` was cancelled``; the serve call returns `Ok(())`. For a tower service
//! mounted in your own server, call [`McpServer::drain`] from your shutdown path.

//!
//! # Authorization
//! With the feature `auth`, [`McpServerBuilder::auth`] makes Streamable HTTP an OAuth 2.1
//! protected resource, as the MCP authorization specification asks: protected resource metadata,
//! `401` with a `WWW-Authenticate` challenge for a request without a valid access token, JWTs
//! checked against the issuer's cached JWKS, scopes deciding which tools a token lists and calls
//! (`403 insufficient_scope` beyond them), and the token's subject as every call's principal. See
//! the module `auth`. Standard input and output are not affected (the caller is the process that
//! started the server).
//!
//! # Importing
//! With the feature `client`, the module `import` does the other way round: the tools of other MCP servers,
//! over stdio or Streamable HTTP, become run-time tools of a registry, decoded and validated like
//! your own before a call leaves the process. An OAuth-protected server is reached with a bearer
//! token (`McpImport::bearer_token`, or `headers` in an `mcpServers` file), or, with the feature
//! `client-auth`, with a token obtained by the client credentials grant
//! (`McpImport::client_credentials`) or the authorization code flow with PKCE
//! (`McpImport::authorization_code`), both on rmcp's `auth`.
//!
//! The reference of each part follows: [serving a registry](#serving-a-registry), [tools that
//! talk back](#tools-that-talk-back-logging-questions-to-the-user-or-the-model-approval),
//! [resources, prompts and completions](#resources-prompts-and-completions),
//! [authorization](#authorization-oauth-21), [the official conformance
//! suite](#the-official-mcp-conformance-suite) and [imports](#import-the-tools-of-other-mcp-servers).
#![doc = include_str!("../docs/serving.md")]
#![doc = include_str!("../docs/talk-back.md")]
#![doc = include_str!("../docs/catalog.md")]
#![doc = include_str!("../docs/auth.md")]
#![doc = include_str!("../docs/conformance.md")]
#![doc = include_str!("../docs/import.md")]

#[cfg(feature = "auth")]
pub mod auth;
pub mod catalog;
mod direct;
mod frame;
mod handler;
mod http;
#[cfg(feature = "client")]
pub mod import;
mod stdio;
pub mod talk;
pub mod tasks;

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::Tool;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tool_runtime::{ImageSupport, Registry, ToolContext, ToolContextBuilder, ToolDefinition};

pub use crate::catalog::{
    Completes, CompletionRequest, MAX_COMPLETION_VALUES, Prompt, PromptMessage, PromptRequest, RequestError, Resource,
    ResourceRequest, ResourceTemplate, Role, TemplateError,
};
pub use crate::handler::{call_result, tool_entry};
pub use crate::http::{
    DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_REQUEST_BODY_TIMEOUT,
    HttpService, MCP_PATH, RESERVED_DESCRIPTORS, STREAM_LINGER, check_allowed_origin, connection_cap,
};

/// The most bytes one JSON-RPC message may take (a line on standard input, a POST body over
/// Streamable HTTP): 16 MiB (16 777 216 bytes), as rmcp's own line transport. A longer line is
/// answered with a parse error (`-32700`) and skipped without being kept in memory, and the
/// stream goes on; a longer POST body gets `413 Payload Too Large`.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// How long running calls may go on after a shutdown begins before they are cancelled: 10 000 ms.
/// Long enough for a typical tool call to finish, well inside the 30 s a container orchestrator
/// (Kubernetes' default `terminationGracePeriodSeconds`) waits before it kills the process.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(10);

/// What a `tools/call` or `prompts/get` request carries, for the
/// [context hook](McpServerBuilder::context) (which `resources/read` and `completion/complete`
/// do not run: gate those with the feature `auth` or in front of the service).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CallRequest<'a> {
    /// The tool the call names (a tool of the registry: unknown names are answered before the
    /// hook runs), or for `prompts/get` the prompt's name.
    pub tool: &'a str,
    /// The call id the tool will see (see the [crate docs](crate)).
    pub call_id: &'a str,
    /// Over HTTP, the request line, headers and extensions of the POST that carried the call (the
    /// body is consumed). `None` on standard input and output, where the caller is the process
    /// that started the server.
    pub http: Option<&'a ::http::request::Parts>,
}

/// The context hook: the builder it is given already says the client takes images
/// ([`ImageSupport::Supported`]); `Err(message)` refuses the call.
type ContextHook = dyn Fn(&CallRequest<'_>, ToolContextBuilder) -> Result<ToolContextBuilder, String> + Send + Sync;

/// An MCP server over a [`Registry`]; cheap to clone (every clone is the same server: same
/// running calls, same shutdown). Built by [`McpServer::builder`]. It implements rmcp's
/// [`ServerHandler`](rmcp::ServerHandler), so it can also be served on any other rmcp transport
/// with [`rmcp::ServiceExt::serve`].
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
    /// The log level `logging/setLevel` set on this connection (protocols before 2026-07-28);
    /// each Streamable HTTP legacy session has its own.
    session: talk::SessionLevel,
}

struct Inner {
    /// The registry served and its listed tools; replaced by [`McpServer::set_registry`].
    served: std::sync::RwLock<Arc<Served>>,
    /// The listing filter, kept for a new registry.
    filter: Box<dyn Fn(&ToolDefinition) -> bool + Send + Sync>,
    /// Counts the registries set after the first, for the listeners of list changes.
    changed: tokio::sync::watch::Sender<u64>,
    name: String,
    version: String,
    instructions: Option<String>,
    context: Box<ContextHook>,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    limits: http::Limits,
    max_frame_bytes: usize,
    legacy_sessions: bool,
    grace: Duration,
    #[cfg(feature = "auth")]
    auth: Option<auth::ResourceServer>,
    /// Seals and opens the request state of input-required results ([`talk`]).
    codec: Option<rmcp::model::RequestStateCodec>,
    /// The most bytes of JSON the answers of one call may hold ([`talk`]).
    max_input_response_bytes: usize,
    /// The resources, templates, prompts and completions served beside the tools.
    catalog: catalog::Catalog,
    /// The running calls; closed when a shutdown begins (then no call is admitted).
    calls: TaskTracker,
    /// The parent of every call's cancellation token: cancelled when the grace period is over.
    stop: CancellationToken,
    /// The task store and the runs of tasks in this process ([`tasks`]).
    tasks: tasks::Tasks,
    /// How many requests the HTTP endpoint has answered itself ([`direct`]), for the tests.
    #[cfg(test)]
    direct_answers: std::sync::atomic::AtomicUsize,
}

/// Builds an [`McpServer`]; every setting has a default.
pub struct McpServerBuilder {
    codec: Option<rmcp::model::RequestStateCodec>,
    max_input_response_bytes: usize,
    registry: Arc<Registry>,
    name: String,
    version: String,
    instructions: Option<String>,
    filter: Box<dyn Fn(&ToolDefinition) -> bool + Send + Sync>,
    context: Box<ContextHook>,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    limits: http::Limits,
    max_frame_bytes: usize,
    legacy_sessions: bool,
    grace: Duration,
    #[cfg(feature = "auth")]
    auth: Option<auth::ResourceServer>,
    catalog: catalog::Catalog,
    task_store: Option<Arc<dyn tasks::TaskStore>>,
    task_ttl: Duration,
    task_tags: Vec<String>,
    max_running_tasks: usize,
}

impl McpServer {
    /// The same server with a log level of its own, for one connection or legacy session.
    pub(crate) fn for_session(&self) -> Self {
        Self { inner: self.inner.clone(), session: talk::SessionLevel::default() }
    }

    /// A builder over `registry` (a [`Registry`] or an `Arc<Registry>` shared with other code).
    pub fn builder(registry: impl Into<Arc<Registry>>) -> McpServerBuilder {
        McpServerBuilder {
            codec: None,
            max_input_response_bytes: talk::DEFAULT_MAX_INPUT_RESPONSE_BYTES,
            registry: registry.into(),
            name: "tool-mcp".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            filter: Box::new(|_| true),
            context: Box::new(|_, builder| Ok(builder)),
            allowed_hosts: vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()],
            allowed_origins: Vec::new(),
            limits: http::Limits::default(),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            legacy_sessions: false,
            grace: DEFAULT_GRACE_PERIOD,
            #[cfg(feature = "auth")]
            auth: None,
            catalog: catalog::Catalog::default(),
            task_store: None,
            task_ttl: tasks::DEFAULT_TASK_TTL,
            task_tags: Vec::new(),
            max_running_tasks: tasks::DEFAULT_MAX_RUNNING_TASKS,
        }
    }

    /// The registry served now.
    pub fn registry(&self) -> Arc<Registry> {
        self.served().registry.clone()
    }

    /// The tools `tools/list` gives now, in order.
    pub fn tools(&self) -> Vec<Tool> {
        self.served().tools.clone()
    }

    /// Serves `registry` from now on (e.g. rebuilt after the tools of an imported server
    /// changed): new requests see it, calls already running finish on the one they started with.
    /// The listing filter applies to it as to the first. Clients are told with
    /// `notifications/tools/list_changed`: on their `subscriptions/listen` streams (protocol
    /// 2026-07-28), and unscoped to a standard input and output client of an earlier version.
    pub fn set_registry(&self, registry: impl Into<Arc<Registry>>) {
        let served = Arc::new(Served::new(registry.into(), &self.inner.filter, &self.inner.tasks.tags));
        *self.inner.served.write().unwrap_or_else(std::sync::PoisonError::into_inner) = served;
        self.inner.changed.send_modify(|n| *n += 1);
    }

    /// The registry served now and its tools.
    fn served(&self) -> Arc<Served> {
        self.inner.served.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Serves one client on standard input and output until it closes the stream, or until
    /// SIGTERM or Ctrl-C ([`shutdown_signal`], then as the [crate docs](crate#shutdown) say).
    /// Standard output carries only the protocol: log to standard error.
    ///
    /// # Errors
    /// [`ServeError::Initialize`] when the first messages are not an MCP initialization;
    /// [`ServeError::Stopped`] when the service task failed.
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        self.serve_stdio_until(shutdown_signal()).await
    }

    /// As [`McpServer::serve_stdio`], shutting down when `shutdown` completes instead of on a
    /// signal.
    ///
    /// # Errors
    /// As [`McpServer::serve_stdio`].
    pub async fn serve_stdio_until(&self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ServeError> {
        let (reader, writer) = rmcp::transport::stdio_pipes();
        self.serve_lines_until(reader, writer, shutdown).await
    }

    /// As [`McpServer::serve_stdio_until`], on any reader and writer of newline-delimited JSON-RPC
    /// messages (a pipe, a socket, `tokio::io::duplex` in a test). Every line is checked before
    /// rmcp reads it: a line that is not valid JSON, or over the
    /// [frame limit](McpServerBuilder::max_frame_bytes), gets `-32700` (parse error) with
    /// `"id": null`; valid JSON that is not a JSON-RPC message gets `-32600` (invalid request);
    /// a key sent twice in a request's `params`, or `tools/call` params of the wrong shape, get
    /// `-32602` (invalid params) naming the member; then the next line is read. Blank lines are
    /// skipped.
    ///
    /// # Errors
    /// As [`McpServer::serve_stdio`].
    pub async fn serve_lines_until<R, W>(
        &self,
        reader: R,
        writer: W,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ServeError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let transport = stdio::LineTransport::new(reader, writer, self.inner.max_frame_bytes);
        let mut shutdown = std::pin::pin!(shutdown);
        let service = tokio::select! {
            service = self.clone().serve(transport) => {
                service.map_err(|e| ServeError::Initialize(e.to_string()))?
            }
            () = &mut shutdown => return Ok(()),
        };
        let stop = service.cancellation_token();
        let announcing = tokio::spawn(announce_unscoped(self.inner.changed.subscribe(), service.peer().clone()));
        let mut waiting = std::pin::pin!(service.waiting());
        tokio::select! {
            reason = &mut waiting => {
                announcing.abort();
                let reason = reason.map_err(|e| ServeError::Stopped(e.to_string()))?;
                tracing::debug!(?reason, "the MCP client closed the stream");
                return Ok(());
            }
            () = &mut shutdown => {}
        }
        announcing.abort();
        self.drain().await;
        stop.cancel();
        waiting.await.map_err(|e| ServeError::Stopped(e.to_string()))?;
        Ok(())
    }

    /// Stops admitting calls, gives the running ones the grace period to finish, then cancels
    /// those still running and waits until they have answered (the registry stops awaiting a
    /// cancelled call at once). Returns when no call runs. A server that has drained admits no
    /// call again: a `tools/call` gets the JSON-RPC error `-32603` saying it is shutting down.
    ///
    /// [`McpServer::serve_stdio`] and [`McpServer::serve_http`] call it on shutdown; call it
    /// yourself when you mount [`McpServer::http_service`] in your own server.
    pub async fn drain(&self) {
        let inner = &self.inner;
        inner.calls.close();
        tracing::info!(running = inner.calls.len(), "shutting down: no new calls admitted");
        if tokio::time::timeout(inner.grace, inner.calls.wait()).await.is_err() {
            tracing::info!(
                running = inner.calls.len(),
                grace_ms = inner.grace.as_millis(),
                "cancelling the calls still running"
            );
            inner.stop.cancel();
            inner.calls.wait().await;
        }
    }

    /// The principal of an HTTP request, as its call's context would have it (the access token's,
    /// then the context hook's); `None` when neither names one or the hook refuses.
    pub(crate) fn principal_of(&self, parts: &::http::request::Parts) -> Option<String> {
        let request = CallRequest { tool: "", call_id: "", http: Some(parts) };
        self.call_context(&request).ok()?.build().principal().map(str::to_owned)
    }

    /// The context of one call (see [`McpServerBuilder::context`]); a hook that panics refuses the
    /// call with the panic's message.
    ///
    /// With a resource server (feature `auth`), a request's access token decides the call's
    /// principal (before the hook, which may read it) and its [access](tool_runtime::ToolAccess)
    /// (after the hook: the token's scopes through [`auth::ScopeMap::allows_tags`], whatever the hook
    /// set), so every call the registry runs for it, the meta-tools' inner calls and task runs
    /// included, reaches only the tools those scopes reach.
    fn call_context(&self, request: &CallRequest<'_>) -> Result<ToolContextBuilder, String> {
        let builder = ToolContext::builder().image_support(ImageSupport::Supported);
        #[cfg(feature = "auth")]
        let who = request.http.and_then(|parts| parts.extensions.get::<auth::Authenticated>());
        #[cfg(feature = "auth")]
        let builder = match who {
            Some(who) => builder.principal(who.principal.clone()),
            None => builder,
        };
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.inner.context)(request, builder)));
        #[cfg(feature = "auth")]
        let built = match (&self.inner.auth, who, built) {
            (Some(auth), Some(who), Ok(Ok(builder))) => {
                let (map, granted) = (auth.scopes().clone(), who.scopes.clone());
                Ok(Ok(builder.access(move |_: &str, tags: &[String]| map.allows_tags(tags, &granted))))
            }
            (_, _, built) => built,
        };
        built.unwrap_or_else(|payload| {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(tool = request.tool, %message, "the context hook panicked");
            Err(format!("the server could not prepare the call: its context hook panicked: {message}"))
        })
    }
}

impl McpServerBuilder {
    /// The name and version `initialize` gives as the server's (default: `tool-mcp` and this
    /// crate's version).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// The instructions `initialize` gives the client (default: none), e.g. what the tools work
    /// on.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Which tools `tools/list` gives (default: every tool of the registry). The filter only
    /// decides what is listed: what may run is the registry's
    /// [permission policy](tool_runtime::RegistryBuilder::policy), so hide exactly what the
    /// policy refuses (a call to a hidden tool still reaches the policy, whose refusal says why).
    #[must_use]
    pub fn list_filter(mut self, filter: impl Fn(&ToolDefinition) -> bool + Send + Sync + 'static) -> Self {
        self.filter = Box::new(filter);
        self
    }

    /// The context hook: turns what a `tools/call` request carries ([`CallRequest`]) into the
    /// call's context. It gets a [`ToolContextBuilder`] that already says the client takes images
    /// and returns it with the session id, the principal and any dependency overrides set; the
    /// server then sets the cancellation token and, when the request has a progress token, the
    /// progress listener (those two set by the hook are replaced). `Err(message)` refuses the call:
    /// the client gets a JSON-RPC error `-32600` (invalid request) with that message and the tool
    /// does not run; a hook that panics refuses it the same way, saying so. Default: the builder
    /// as given (no session id, no principal).
    ///
    /// ```
    /// # use tool_runtime::Registry;
    /// let server = tool_mcp::McpServer::builder(Registry::builder().build().unwrap())
    ///     .context(|request, ctx| {
    ///         let Some(parts) = request.http else {
    ///             return Ok(ctx.session_id("local")); // stdio: the user who started the process
    ///         };
    ///         let key = parts.headers.get("authorization").and_then(|v| v.to_str().ok());
    ///         match key.and_then(|v| v.strip_prefix("Bearer ")) {
    ///             Some("secret-of-ana") => Ok(ctx.principal("ana").session_id("ana")),
    ///             _ => Err("send `Authorization: Bearer <key>` with a known key".to_owned()),
    ///         }
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    #[must_use]
    pub fn context(
        mut self,
        hook: impl Fn(&CallRequest<'_>, ToolContextBuilder) -> Result<ToolContextBuilder, String> + Send + Sync + 'static,
    ) -> Self {
        self.context = Box::new(hook);
        self
    }

    /// Adds a host (`example.com`, or `example.com:8443` for that port only) to the `Host`
    /// allow-list of Streamable HTTP, which starts as `localhost`, `127.0.0.1` and `::1`.
    /// Needed when clients reach the server by another name, e.g. behind a reverse proxy.
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Adds an origin to the `Origin` allow-list of Streamable HTTP (the MCP specification: servers
    /// MUST validate `Origin`, against DNS rebinding). The list starts as the loopback origins on
    /// any port, `http` or `https`: `http://localhost[:PORT]`, `http://127.0.0.1[:PORT]`,
    /// `http://[::1][:PORT]`; a request without `Origin` (any client that is not a browser page) is
    /// always served. An entry is `http://HOST[:PORT]` or `https://HOST[:PORT]` (no port: the
    /// scheme's default, 80 or 443; `:*`: any port) or `null` (sandboxed and `file:` pages;
    /// refused unless added). [`check_allowed_origin`] tells a bad entry; one given here anyway
    /// matches nothing and is logged as a warning. A request from another origin gets
    /// `403 Forbidden` with a JSON-RPC error (`-32600`, `"id": null`) naming the origin and how to
    /// allow it.
    #[must_use]
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// How long a Streamable HTTP client has, from the first byte of a request, to send the whole
    /// request line and headers before [`McpServer::serve_http_on`] closes the connection (no
    /// response). Default [`DEFAULT_HEADER_READ_TIMEOUT`], 10 000 ms.
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_read = timeout;
        self
    }

    /// How long a Streamable HTTP client has, once the headers are read, to send the whole body of
    /// a POST; past it the request gets `408 Request Timeout` with a JSON-RPC error and the
    /// connection is closed. Applies to [`McpServer::http_service`] too. Default
    /// [`DEFAULT_REQUEST_BODY_TIMEOUT`], 30 000 ms.
    #[must_use]
    pub fn request_body_timeout(mut self, timeout: Duration) -> Self {
        self.limits.body = timeout;
        self
    }

    /// How long [`McpServer::serve_http_on`] keeps a connection open that has no request in flight
    /// (after it was accepted, or after its last response) before it closes it. A running call,
    /// however long, keeps its connection. Default [`DEFAULT_IDLE_TIMEOUT`], 60 000 ms.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle = timeout;
        self
    }

    /// How many connections [`McpServer::serve_http_on`] keeps open at once (at least 1, and below
    /// the process's file-descriptor limit: [`connection_cap`], logged at start). At the cap a new
    /// connection closes the one idle the longest; when every connection has a request in flight
    /// it waits in the kernel's listen backlog. Default [`DEFAULT_MAX_CONNECTIONS`], 1 024.
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.limits.connections = connections;
        self
    }

    /// The most bytes one JSON-RPC message may take: a line on standard input (newline excluded;
    /// a longer one gets `-32700` and is skipped, not kept in memory) or a POST body over
    /// Streamable HTTP (a longer one gets `413 Payload Too Large`). Default
    /// [`DEFAULT_MAX_FRAME_BYTES`], 16 MiB.
    #[must_use]
    pub fn max_frame_bytes(mut self, bytes: usize) -> Self {
        self.max_frame_bytes = bytes;
        self
    }

    /// Also serve clients of protocol versions before 2026-07-28 that rely on sessions
    /// (`Mcp-Session-Id`, kept in this process: such a client must always reach the same
    /// process). A session belongs to the [principal](tool_runtime::ToolContext::principal) that
    /// opened it: a request of another principal naming it gets `404 Not Found`, as for a session
    /// that does not exist. Default `false`: every request is served statelessly (old clients that
    /// do not need a session still work).
    #[must_use]
    pub fn legacy_session_mode(mut self, on: bool) -> Self {
        self.legacy_sessions = on;
        self
    }

    /// Serves Streamable HTTP as an OAuth 2.1 protected resource checked by `auth` (see the
    /// module [`auth`]): every HTTP request needs a valid access token, the token's scopes decide
    /// which tools it lists and calls, and its subject is each call's principal, set before the
    /// [context hook](McpServerBuilder::context) runs. Add the resource's host to the `Host`
    /// allow-list ([`McpServerBuilder::allow_host`]) when it is not loopback. Default: none (no
    /// authentication). Standard input and output are not affected.
    #[cfg(feature = "auth")]
    #[must_use]
    pub fn auth(mut self, auth: auth::ResourceServer) -> Self {
        self.auth = Some(auth);
        self
    }

    /// How long running calls may go on once a shutdown begins before they are cancelled
    /// (default [`DEFAULT_GRACE_PERIOD`], 10 000 ms). See [`McpServer::drain`].
    #[must_use]
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Where task records live ([`tasks`]). Default: a [`MemoryTaskStore`](tasks::MemoryTaskStore)
    /// of [`DEFAULT_MAX_TASKS`](tasks::DEFAULT_MAX_TASKS) records and
    /// [`DEFAULT_MAX_TASK_BYTES`](tasks::DEFAULT_MAX_TASK_BYTES) bytes, which only this process
    /// sees; give every worker behind one load balancer the same shared store.
    #[must_use]
    pub fn task_store(mut self, store: impl tasks::TaskStore) -> Self {
        self.task_store = Some(Arc::new(store));
        self
    }

    /// Makes every tool tagged `tag` task-supporting, as [`TASK_TAG`](tasks::TASK_TAG) does: a
    /// call from a client that declared the tasks extension runs as a task, one from another
    /// client in the request (e.g. `task_tag("exec")` for long shell commands). Default: none.
    #[must_use]
    pub fn task_tag(mut self, tag: impl Into<String>) -> Self {
        self.task_tags.push(tag.into());
        self
    }

    /// How many tasks of one principal run at once in this server (default
    /// [`DEFAULT_MAX_RUNNING_TASKS`](tasks::DEFAULT_MAX_RUNNING_TASKS), 16; at least 1). A task
    /// created past it is refused with -32600 saying so, and nothing is stored; other principals
    /// are not affected.
    #[must_use]
    pub fn max_running_tasks(mut self, tasks: usize) -> Self {
        self.max_running_tasks = tasks.max(1);
        self
    }

    /// How long a task is kept from its creation, sent as `ttlMs` (default
    /// [`DEFAULT_TASK_TTL`](tasks::DEFAULT_TASK_TTL), 3 600 000 ms). A store may drop it after.
    #[must_use]
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = ttl;
        self
    }

    /// The server. The tool list is computed here, and again for each registry
    /// [`McpServer::set_registry`] gives. A [completion](Self::completion) of an argument that no
    /// declared prompt or template has is logged as a warning.
    pub fn build(self) -> McpServer {
        let served = Served::new(self.registry, &self.filter, &self.task_tags);
        self.catalog.warn_undeclared();
        McpServer {
            inner: Arc::new(Inner {
                served: std::sync::RwLock::new(Arc::new(served)),
                filter: self.filter,
                changed: tokio::sync::watch::channel(0).0,
                name: self.name,
                version: self.version,
                instructions: self.instructions,
                context: self.context,
                allowed_hosts: self.allowed_hosts,
                allowed_origins: self.allowed_origins,
                limits: self.limits,
                max_frame_bytes: self.max_frame_bytes,
                legacy_sessions: self.legacy_sessions,
                grace: self.grace,
                #[cfg(feature = "auth")]
                auth: self.auth,
                codec: self.codec.or_else(talk::random_codec),
                max_input_response_bytes: self.max_input_response_bytes,
                catalog: self.catalog,
                calls: TaskTracker::new(),
                stop: CancellationToken::new(),
                tasks: tasks::Tasks::new(
                    self.task_store.unwrap_or_else(|| Arc::new(tasks::MemoryTaskStore::default())),
                    self.task_ttl,
                    self.task_tags,
                    self.max_running_tasks,
                ),
                #[cfg(test)]
                direct_answers: std::sync::atomic::AtomicUsize::new(0),
            }),
            session: talk::SessionLevel::default(),
        }
    }

    /// How many bytes of JSON the answers of one call may hold, those sealed in its request state
    /// and a retry's new `inputResponses` together (default
    /// [`DEFAULT_MAX_INPUT_RESPONSE_BYTES`](talk::DEFAULT_MAX_INPUT_RESPONSE_BYTES), 1 MiB); a
    /// retry over it gets -32602 saying so, and no state larger than about that is ever sealed.
    #[must_use]
    pub fn max_input_response_bytes(mut self, bytes: usize) -> Self {
        self.max_input_response_bytes = bytes;
        self
    }

    /// The key that seals the request state of input-required results (MCP 2026-07-28's
    /// multi-round-trip requests, see [`talk`]): HMAC-SHA256, at least 32 bytes. Default: 32
    /// random bytes drawn at [`build`](Self::build), which only this process knows; give every
    /// worker behind one load balancer the same key, so that a client's retry may reach any of
    /// them. The key is never logged.
    ///
    /// # Errors
    /// [`RequestStateKeyError`] for a key shorter than 32 bytes.
    pub fn request_state_key(mut self, key: impl Into<Vec<u8>>) -> Result<Self, RequestStateKeyError> {
        let key = key.into();
        let bytes = key.len();
        let codec = rmcp::model::RequestStateCodec::try_new(key).map_err(|_| RequestStateKeyError { bytes })?;
        self.codec = Some(codec);
        Ok(self)
    }
}

/// A registry and the tools `tools/list` gives of it.
struct Served {
    registry: Arc<Registry>,
    /// The listed tools, in the registry's order (by name).
    tools: Vec<Tool>,
    /// The names of the deferred tools the listing filter hides.
    hidden: std::collections::HashSet<String>,
    /// The names of the listed tools with an output schema, whose results carry
    /// `structuredContent`.
    structured: std::collections::HashSet<String>,
    /// Whether a loaded tool takes part in tasks (the tasks extension is declared): found here
    /// once, since rmcp asks for `get_info` on every stateless request.
    takes_tasks: bool,
    /// The names of the listed tools whose stateless calls the HTTP endpoint may answer itself
    /// ([`direct`]): no part in tasks, no `x-mcp-header` in the input schema.
    direct: std::collections::HashSet<String>,
}

impl Served {
    /// The listing of `registry`: with deferred tools, the loaded ones and the two meta-tools
    /// (the registry's search index is built here, not by the first `search_tools` call on an
    /// async worker).
    fn new(
        registry: Arc<Registry>,
        filter: &(dyn Fn(&ToolDefinition) -> bool + Send + Sync),
        task_tags: &[String],
    ) -> Self {
        // Deferred tools are reached through the two meta-tools instead of the list.
        let meta: &[ToolDefinition] = if registry.has_deferred() {
            registry.search_index();
            tool_runtime::search::meta_tool_definitions()
        } else {
            &[]
        };
        let tools: Vec<Tool> =
            registry.loaded_definitions().filter(|d| filter(d)).chain(meta).map(tool_entry).collect();
        // The deferred tools the filter hides: `search_tools` does not find them either.
        let hidden = registry.deferred_definitions().filter(|d| !filter(d)).map(|d| d.name.clone()).collect();
        let structured: std::collections::HashSet<String> =
            tools.iter().filter(|t| t.output_schema.is_some()).map(|t| t.name.to_string()).collect();
        let takes_tasks = registry.loaded_definitions().any(|d| tasks::support(d, task_tags).is_some());
        let direct = tools
            .iter()
            .filter(|t| registry.definition(&t.name).is_none_or(|d| tasks::support(d, task_tags).is_none()))
            .filter(|t| !serde_json::to_string(&t.input_schema).is_ok_and(|s| s.contains("x-mcp-header")))
            .map(|t| t.name.to_string())
            .collect();
        Self { registry, tools, hidden, structured, takes_tasks, direct }
    }
}

/// A request state key too short for HMAC-SHA256 ([`McpServerBuilder::request_state_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestStateKeyError {
    /// The key's length in bytes.
    pub bytes: usize,
}

impl std::fmt::Display for RequestStateKeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a request state key needs at least 32 bytes, got {}; give 32 random bytes", self.bytes)
    }
}

impl std::error::Error for RequestStateKeyError {}

/// Why serving stopped with an error.
///
/// `Debug` writes the same text as `Display`, so a `main` that returns
/// `Result<(), ServeError>` (or a boxed error of it) ends with that sentence, not a dump of the
/// enum: `Error: cannot listen on 127.0.0.1:8080: Address in use (os error 98); give a free local
/// address`.
#[non_exhaustive]
pub enum ServeError {
    /// The client's first messages on standard input were not an MCP initialization.
    Initialize(String),
    /// The address could not be bound (in use, not local, no permission).
    Bind {
        /// The address as given.
        addr: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The service or the HTTP server stopped on an error.
    Stopped(String),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Initialize(e) => write!(f, "the MCP client did not initialize the session: {e}"),
            Self::Bind { addr, source } => write!(f, "cannot listen on {addr}: {source}; give a free local address"),
            Self::Stopped(e) => write!(f, "the MCP server stopped: {e}"),
        }
    }
}

impl std::fmt::Debug for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Bind { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Sends `notifications/tools/list_changed` to a client of a protocol version before 2026-07-28
/// (which takes them unscoped) on every change, until the server goes; newer clients get them on
/// their `subscriptions/listen` streams only.
async fn announce_unscoped(
    mut changes: tokio::sync::watch::Receiver<u64>,
    peer: rmcp::service::Peer<rmcp::RoleServer>,
) {
    while changes.changed().await.is_ok() {
        // The versions are dates, so their text sorts as they do.
        let legacy = peer.peer_info().is_some_and(|info| info.protocol_version.as_str() < "2026-07-28");
        if legacy && let Err(error) = peer.notify_tool_list_changed().await {
            tracing::debug!(%error, "cannot say that the tools changed; the client is gone");
            return;
        }
    }
}

/// Completes on the first SIGTERM or SIGINT (Ctrl-C) the process receives after this call: the
/// handlers are installed when it is called, not when the future is first polled, so a signal
/// sent once it returned is never missed. Call it inside a Tokio runtime with signals enabled
/// (`enable_all`); elsewhere, or when a signal cannot be listened to, a warning is logged and that
/// signal is not waited for (the future may then never complete).
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind: SignalKind, name: &'static str| {
            let signal = match tokio::runtime::Handle::try_current() {
                Ok(_) => signal(kind).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            async move {
                match signal {
                    Ok(mut signal) => {
                        signal.recv().await;
                        tracing::info!("{name} received");
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot listen for {name}");
                        std::future::pending::<()>().await;
                    }
                }
            }
        };
        let terminate = listen(SignalKind::terminate(), "SIGTERM");
        let interrupt = listen(SignalKind::interrupt(), "SIGINT");
        async move {
            tokio::select! {
                () = terminate => {}
                () = interrupt => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
        tracing::info!("Ctrl-C received");
    }
}
