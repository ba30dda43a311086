//! The connection to one imported server: starting and restarting it, listing its tools, and
//! forwarding calls with their progress and cancellation.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock, Weak};

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientRequest, ProgressNotificationParam, ProtocolVersion,
    Request, RequestId, ServerNotification, ServerResult, SubscriptionFilter,
};
use rmcp::service::{
    ClientInitializeError, NotificationContext, Peer, PeerRequestOptions, RunningService, ServiceError,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::Value;
use tokio::sync::watch;
use tool_runtime::{ToolContext, ToolError, ToolResult};

use super::spill::{CallSpills, ChildTransport, SpillCall, Spills};
use super::spill_http::SpillingHttp;
use super::{CONNECT_TIMEOUT, Compiled, ImportError, ImportLimits, RemoteTool, Transport, compile, restart_wait};
use crate::content::{to_result, with_approval};
use crate::protocol::{APPROVAL_META, APPROVAL_TOKEN_META, IDEMPOTENCY_KEY_META};
use crate::telemetry;
use tracing::Instrument;

/// What the import knows of one server.
pub(super) struct Shared {
    pub(super) name: String,
    transport: Transport,
    prefix: String,
    pub(super) exclude: BTreeSet<String>,
    limits: ImportLimits,
    /// The open connection, if any; locked while a connection is opened.
    link: tokio::sync::Mutex<Link>,
    /// The stdio child's process id, readable without waiting for `link`.
    pid: Mutex<Option<u32>>,
    /// The latest listing and what it compiles to.
    tools: RwLock<(Arc<Vec<RemoteTool>>, Arc<Compiled>)>,
    /// The progress listeners of the running calls, by the progress token each was sent with.
    progress: Mutex<HashMap<String, ToolContext>>,
    /// The long strings of the open connection ([`super::spill`]; `None` before the first).
    spills: Mutex<Option<Arc<Spills>>>,
    /// Counts listings (0: the first).
    pub(super) generation: watch::Sender<u64>,
    /// The OAuth authorization of an import by the authorization code flow (its token survives
    /// reconnections).
    #[cfg(feature = "client-auth")]
    oauth: Option<super::oauth::Session>,
    /// Weak, for the tools' handlers and the client handler (the connection holds the latter).
    this: Weak<Shared>,
}

/// The connection, and the failures in a row that set the wait before the next start.
#[derive(Default)]
struct Link {
    service: Option<RunningService<RoleClient, Client>>,
    failures: u32,
    /// Counts the connections opened, so that a call that lost one drops that one only.
    opened: u64,
}

/// Why a listing did not end.
enum Listing {
    /// A request failed.
    Failed(ServiceError),
    /// It went past one of the import's limits (the message says which).
    Over(String),
}

/// The client side of the MCP session: progress and list changes.
struct Client {
    shared: Weak<Shared>,
}

impl ClientHandler for Client {
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        if let Some(shared) = self.shared.upgrade() {
            shared.forward_progress(&params);
        }
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        if let Some(shared) = self.shared.upgrade() {
            shared.relist(&context.peer).await;
        }
    }
}

/// The call ids of an MCP progress token (its JSON text: a number or a string).
fn token_key(token: &rmcp::model::ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

impl Shared {
    /// Opens the first connection and lists the tools.
    pub(super) async fn connect(
        name: String,
        transport: Transport,
        prefix: String,
        exclude: BTreeSet<String>,
        limits: ImportLimits,
    ) -> Result<Arc<Self>, ImportError> {
        #[cfg(feature = "client-auth")]
        let oauth = match &transport {
            Transport::Http { url, authorization_code: Some(flow), .. } => Some(
                super::oauth::Session::new(url, flow.clone())
                    .await
                    .map_err(|message| ImportError::Connect { server: name.clone(), message })?,
            ),
            _ => None,
        };
        let shared = Arc::new_cyclic(|this| Self {
            name,
            transport,
            prefix,
            exclude,
            limits,
            link: tokio::sync::Mutex::new(Link::default()),
            pid: Mutex::new(None),
            tools: RwLock::new((Arc::new(Vec::new()), Arc::new(HashMap::new()))),
            progress: Mutex::new(HashMap::new()),
            spills: Mutex::new(None),
            generation: watch::channel(0).0,
            #[cfg(feature = "client-auth")]
            oauth,
            this: this.clone(),
        });
        shared.list_now(false).await?;
        Ok(shared)
    }

    /// The latest listing.
    pub(super) fn listing(&self) -> Arc<Vec<RemoteTool>> {
        self.tools.read().unwrap_or_else(std::sync::PoisonError::into_inner).0.clone()
    }

    /// What the remote tool `name` of the latest listing compiles to (`None`: not listed).
    pub(super) fn compiled(&self, name: &str) -> Option<Result<Arc<tool_runtime::DynamicTool>, String>> {
        self.tools.read().unwrap_or_else(std::sync::PoisonError::into_inner).1.get(name).cloned()
    }

    pub(super) fn child_pid(&self) -> Option<u32> {
        *self.pid.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set_listing(&self, listed: &[rmcp::model::Tool], tick: bool) {
        let listing: Vec<RemoteTool> = listed.iter().map(RemoteTool::from_listed).collect();
        let compiled = compile(&self.this, &self.name, &self.prefix, &listing);
        *self.tools.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
            (Arc::new(listing), Arc::new(compiled));
        if tick {
            self.generation.send_modify(|n| *n += 1);
        }
        tracing::debug!(server = %self.name, tools = listed.len(), "listed the tools of an imported MCP server");
    }

    /// Lists the tools again on `peer` after a change notification; a failure is logged and the
    /// old listing kept.
    async fn relist(&self, peer: &Peer<RoleClient>) {
        match self.list_pages(peer).await {
            Ok(listed) => self.set_listing(&listed, true),
            Err(Listing::Failed(error)) => {
                let error = self.scrubbed(&error.to_string());
                tracing::warn!(server = %self.name, %error, "cannot list the tools again after a change; keeping the old list");
            }
            Err(Listing::Over(message)) => {
                tracing::warn!(server = %self.name, message, "the tools listed after a change are over a limit; keeping the old list");
            }
        }
    }

    /// Every page of `tools/list`, within the import's [limits](ImportLimits): each page answered
    /// within `request_timeout`, at most `max_pages` pages, `max_tools` tools and
    /// `max_listing_bytes` of them as JSON.
    async fn list_pages(&self, peer: &Peer<RoleClient>) -> Result<Vec<rmcp::model::Tool>, Listing> {
        let limits = self.limits;
        let mut tools = Vec::new();
        let mut bytes = 0usize;
        let mut cursor = None;
        for _ in 0..limits.max_pages {
            let page = self.list_page(peer, cursor.take()).await?;
            bytes = bytes.saturating_add(page.tools.iter().map(|t| serde_json::to_vec(t).map_or(0, |v| v.len())).sum());
            tools.extend(page.tools);
            if tools.len() > limits.max_tools {
                return Err(Listing::Over(format!(
                    "it lists more than {} tools (the import's cap); import a server with fewer tools or raise \
                     ImportLimits::max_tools",
                    limits.max_tools
                )));
            }
            if bytes > limits.max_listing_bytes {
                return Err(Listing::Over(format!(
                    "its tools take more than {} bytes as JSON (the import's cap); raise \
                     ImportLimits::max_listing_bytes",
                    limits.max_listing_bytes
                )));
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(tools),
            }
        }
        Err(Listing::Over(format!(
            "its listing goes on past {} pages (the import's cap); raise ImportLimits::max_pages",
            limits.max_pages
        )))
    }

    /// One `tools/list` request (the page after `cursor`), answered within the import's
    /// `request_timeout`, in a CLIENT span whose context goes in the request's `_meta`.
    async fn list_page(
        &self,
        peer: &Peer<RoleClient>,
        cursor: Option<String>,
    ) -> Result<rmcp::model::ListToolsResult, Listing> {
        let server = self.server_address();
        let span =
            telemetry::client_span("tools/list", None, server.as_ref().map(|(host, port)| (host.as_str(), *port)));
        let mut meta = rmcp::model::RequestMetaObject::default();
        telemetry::inject(&span, &mut meta);
        let mut params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor);
        if !meta.0.0.is_empty() {
            params.meta = Some(meta);
        }
        let started = tokio::time::Instant::now();
        let timeout = self.limits.request_timeout;
        let answer = tokio::time::timeout(timeout, peer.list_tools(Some(params))).instrument(span.clone()).await;
        let (error, code) = match &answer {
            Ok(Ok(_)) => (None, None),
            Ok(Err(ServiceError::McpError(data))) => (Some(data.code.0.to_string()), Some(data.code.0)),
            Ok(Err(_)) => (Some("transport_error".to_owned()), None),
            Err(_) => (Some("timeout".to_owned()), None),
        };
        telemetry::client_finished(&span, started, "tools/list", None, !self.is_stdio(), error, code);
        match answer {
            Ok(page) => page.map_err(Listing::Failed),
            Err(_) => Err(Listing::Over(format!(
                "a `tools/list` page was not answered within {} ms (the import's request timeout)",
                timeout.as_millis()
            ))),
        }
    }

    /// Lists the tools now, connecting first when no connection is open; `tick`: count the
    /// listing as a change.
    pub(super) async fn list_now(&self, tick: bool) -> Result<(), ImportError> {
        let (peer, _) = {
            let mut link = self.link.lock().await;
            self.peer(&mut link).await?
        };
        let mut answered = 0;
        let listed = loop {
            let seen = self.authorizations();
            let error = match self.list_pages(&peer).await {
                Ok(listed) => break listed,
                Err(Listing::Failed(error)) => error,
                Err(Listing::Over(message)) => return Err(ImportError::List { server: self.name.clone(), message }),
            };
            let message = match self.answer_challenge(&error, answered, seen).await {
                Some(Ok(())) => {
                    answered += 1;
                    continue;
                }
                Some(Err(message)) => message,
                None => service_error(&error, self.is_stdio()),
            };
            return Err(ImportError::List { server: self.name.clone(), message });
        };
        self.set_listing(&listed, tick);
        Ok(())
    }

    /// The open connection's peer and number, opening one when there is none or it is closed; a
    /// start after a failure first waits the backoff.
    async fn peer(&self, link: &mut Link) -> Result<(Peer<RoleClient>, u64), ImportError> {
        if let Some(service) = &link.service
            && !service.is_transport_closed()
            && !service.is_closed()
        {
            return Ok((service.peer().clone(), link.opened));
        }
        self.drop_service(link).await;
        let wait = restart_wait(link.failures);
        if !wait.is_zero() {
            tracing::info!(server = %self.name, wait_ms = wait.as_millis(), "waiting before connecting again");
            tokio::time::sleep(wait).await;
        }
        let peer = self.open(link).await?;
        Ok((peer, link.opened))
    }

    /// Initializes an MCP session on `transport` within [`CONNECT_TIMEOUT`] (`Err(None)`: it
    /// took longer), by the `initialize` handshake or `lifecycle`.
    async fn initialize<T, E, A>(
        &self,
        transport: T,
        lifecycle: Option<ClientLifecycleMode>,
        spills: Option<Arc<Spills>>,
    ) -> Result<RunningService<RoleClient, Client>, Option<ClientInitializeError>>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let client = Client { shared: self.this.clone() };
        let lifecycle = lifecycle.unwrap_or(ClientLifecycleMode::Initialize);
        let method =
            if matches!(lifecycle, ClientLifecycleMode::Initialize) { "initialize" } else { "server/discover" };
        let server = self.server_address();
        let span = telemetry::client_span(method, None, server.as_ref().map(|(host, port)| (host.as_str(), *port)));
        let mut meta = rmcp::model::RequestMetaObject::default();
        telemetry::inject(&span, &mut meta);
        let transport = Traced { inner: transport.into_transport(), meta, spills };
        let started = tokio::time::Instant::now();
        // On a task of its own, which no span is current in: rmcp makes its connection-long
        // `serve_inner` span in the handshake, and that span must be a root, not a child of the
        // handshake's span nor of the call that (re)connects. Dropped with this future.
        let handshake = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(tokio::time::timeout(
            CONNECT_TIMEOUT,
            client.serve_with_lifecycle(transport, lifecycle),
        )));
        let outcome = match handshake.await {
            Ok(Ok(Ok(service))) => Ok(service),
            Ok(Ok(Err(error))) => Err(Some(error)),
            Ok(Err(_)) => Err(None),
            Err(error) => match error.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // Only a drop of this future aborts the task, and then nothing awaits it.
                Err(_) => Err(None),
            },
        };
        let (error, code) = match &outcome {
            Ok(_) => (None, None),
            Err(None) => (Some("timeout".to_owned()), None),
            Err(Some(ClientInitializeError::JsonRpcError(data))) => (Some(data.code.0.to_string()), Some(data.code.0)),
            Err(Some(_)) => (Some("transport_error".to_owned()), None),
        };
        telemetry::client_finished(&span, started, method, None, !self.is_stdio(), error, code);
        outcome
    }

    /// The host and port of an HTTP server, for a CLIENT span (`None` for a child process).
    fn server_address(&self) -> Option<(String, u16)> {
        match &self.transport {
            Transport::Http { url, .. } => url.parse::<http::Uri>().ok().and_then(|uri| {
                let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
                uri.host().map(|host| (host.to_owned(), port))
            }),
            Transport::Stdio { .. } => None,
        }
    }

    /// Initializes an MCP session on an HTTP transport `make` builds: the stateless lifecycle of
    /// MCP 2026-07-28 first (`server/discover`, falling back to `initialize` on a server that
    /// answers it with an error, as rmcp's `Auto` does), then, when that fails otherwise (a server
    /// that answers an unknown request without a JSON-RPC error) and not for an authorization
    /// challenge, the `initialize` handshake on a new transport.
    async fn initialize_http<T, E, A>(
        &self,
        make: impl Fn() -> T,
        spills: Option<Arc<Spills>>,
    ) -> Result<RunningService<RoleClient, Client>, Option<ClientInitializeError>>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let stateless = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        };
        match self.initialize(make(), Some(stateless), spills.clone()).await {
            Err(Some(error)) if error.auth_challenge().is_none() => {
                let error = self.scrubbed(&error.to_string());
                tracing::debug!(server = %self.name, %error, "`server/discover` failed; trying the `initialize` handshake");
                self.initialize(make(), None, spills).await
            }
            other => other,
        }
    }

    /// Initializes an MCP session at `url` through the import's OAuth session, answering the
    /// server's challenges (see [`McpImport::authorization_code`](super::McpImport::authorization_code)).
    #[cfg(feature = "client-auth")]
    async fn initialize_authorized(&self, url: &str) -> Result<RunningService<RoleClient, Client>, String> {
        let Some(session) = &self.oauth else {
            return Err(format!("{url}: the import has no OAuth session; build it with `authorization_code`"));
        };
        let mut answered = 0;
        loop {
            let seen = session.authorizations();
            // The session's token manager, around a filtering client of this connection's own
            // (the token survives reconnections; the spills are the connection's).
            // rmcp's `AuthClient` is built only from a manager of its own, so it is built with an
            // empty one (no request is made) that the session's replaces.
            let spills = self.new_spills();
            let shared = session.client();
            let empty = rmcp::transport::auth::AuthorizationManager::new(url)
                .await
                .map_err(|e| format!("{url}: cannot set up the OAuth client: {e}"))?;
            let http = SpillingHttp { inner: shared.http_client, spills: spills.clone() };
            let mut client = rmcp::transport::auth::AuthClient::new(http, empty);
            client.auth_manager = shared.auth_manager;
            let make = || {
                let config = StreamableHttpClientTransportConfig::with_uri(url);
                StreamableHttpClientTransport::with_client(client.clone(), config)
            };
            let error = match self.initialize_http(make, Some(spills)).await {
                Ok(service) => return Ok(service),
                Err(error) => error,
            };
            match error.as_ref().and_then(ClientInitializeError::auth_challenge) {
                Some(challenge) => session.answer(challenge, answered, seen).await?,
                None => return Err(initialize_failure(url, error.as_ref(), false)),
            }
            answered += 1;
        }
    }

    /// The authorizations the import's OAuth session did so far (0 without one), read before a
    /// request whose refusal [`Shared::answer_challenge`] may answer.
    fn authorizations(&self) -> u64 {
        #[cfg(feature = "client-auth")]
        if let Some(session) = &self.oauth {
            return session.authorizations();
        }
        0
    }

    /// Answers the authorization challenge of `error`, the `answered`-th of one operation, to a
    /// request sent when [`Shared::authorizations`] was `seen`, when it has one and the import
    /// authorizes by the authorization code flow: `Some(Ok(()))` means send the request again;
    /// `None`, that `error` is no authorization matter.
    #[cfg_attr(not(feature = "client-auth"), allow(clippy::unused_async))]
    async fn answer_challenge(&self, error: &ServiceError, answered: u32, seen: u64) -> Option<Result<(), String>> {
        #[cfg(feature = "client-auth")]
        if let (Some(session), Some(challenge)) = (&self.oauth, error.auth_challenge()) {
            return Some(session.answer(challenge, answered, seen).await);
        }
        let _ = (error, answered, seen);
        None
    }

    /// Starts the server (stdio) or opens the HTTP transport, and initializes the session.
    async fn open(&self, link: &mut Link) -> Result<Peer<RoleClient>, ImportError> {
        let connect_error =
            |message: String| ImportError::Connect { server: self.name.clone(), message: self.scrubbed(&message) };
        let started = match &self.transport {
            Transport::Stdio { command, args, env, cwd } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let spills = self.new_spills();
                match ChildTransport::spawn(cmd, spills.clone()) {
                    Ok((child, pid)) => match self.initialize(child, None, Some(spills)).await {
                        Ok(service) => Ok((service, pid)),
                        Err(e) => Err(connect_error(initialize_failure(&format!("`{command}`"), e.as_ref(), true))),
                    },
                    Err(e) => Err(connect_error(format!(
                        "cannot start `{command}`: {e}; check the command and that it is on PATH"
                    ))),
                }
            }
            Transport::Http { url, bearer_token, client_credentials, authorization_code } => {
                if !url.starts_with("http://") && !url.starts_with("https://") {
                    return Err(connect_error(format!("the URL `{url}` is not an `http://` or `https://` URL")));
                }
                if url.starts_with("https://") && !cfg!(feature = "client-tls") {
                    return Err(connect_error(format!(
                        "`{url}` needs TLS, which this build leaves out; build tool-mcp with the feature `client-tls`"
                    )));
                }
                let serving = match (client_credentials, authorization_code) {
                    (Some(_), Some(_)) => {
                        Err(format!("{url}: give OAuth client credentials or the authorization code flow, not both"))
                    }
                    #[cfg(feature = "client-auth")]
                    (Some(credentials), None) => match authorized_client(url, credentials).await {
                        Ok(manager) => {
                            // The token is added by rmcp's `AuthClient`, around the filtering client.
                            let spills = self.new_spills();
                            let http = SpillingHttp { inner: reqwest::Client::default(), spills: spills.clone() };
                            let client = rmcp::transport::auth::AuthClient::new(http, manager);
                            let make = || {
                                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                                StreamableHttpClientTransport::with_client(client.clone(), config)
                            };
                            self.initialize_http(make, Some(spills))
                                .await
                                .map_err(|e| initialize_failure(url, e.as_ref(), false))
                        }
                        Err(message) => Err(message),
                    },
                    #[cfg(feature = "client-auth")]
                    (None, Some(_)) => self.initialize_authorized(url).await,
                    #[cfg(not(feature = "client-auth"))]
                    (Some(_), None) | (None, Some(_)) => Err(format!(
                        "{url}: OAuth needs rmcp's `auth`, which this build leaves out; build tool-mcp with the \
                         feature `client-auth`"
                    )),
                    (None, None) => {
                        let spills = self.new_spills();
                        // No redirect is followed (rmcp's own client follows same-origin 307 and
                        // 308 only, by a policy it does not export).
                        let client = reqwest::Client::builder()
                            .pool_max_idle_per_host(0)
                            .redirect(reqwest::redirect::Policy::none())
                            .build()
                            .map_err(|e| connect_error(format!("cannot make an HTTP client: {e}")))?;
                        let make = || {
                            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                            if let Some(token) = bearer_token {
                                config = config.auth_header(token.clone());
                            }
                            let client = SpillingHttp { inner: client.clone(), spills: spills.clone() };
                            StreamableHttpClientTransport::with_client(client, config)
                        };
                        self.initialize_http(make, Some(spills.clone()))
                            .await
                            .map_err(|e| initialize_failure(url, e.as_ref(), false))
                    }
                };
                serving.map(|service| (service, None)).map_err(connect_error)
            }
        };
        let (service, pid) = match started {
            Ok(started) => started,
            Err(error) => {
                link.failures = link.failures.saturating_add(1);
                return Err(error);
            }
        };
        *self.pid.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = pid;
        let peer = service.peer().clone();
        self.listen_for_changes(&peer);
        link.service = Some(service);
        link.opened += 1;
        Ok(peer)
    }

    /// On a session of protocol 2026-07-28 or later, opens a `subscriptions/listen` stream for
    /// tool list changes, also when the server's `tools.listChanged` says `false` (servers send
    /// them anyway); on earlier versions servers send them unscoped
    /// ([`Client::on_tool_list_changed`]).
    fn listen_for_changes(&self, peer: &Peer<RoleClient>) {
        // The versions are dates, so their text sorts as they do.
        let modern = peer.peer_info().is_some_and(|info| info.protocol_version.as_str() >= "2026-07-28");
        if !modern {
            return;
        }
        let peer = peer.clone();
        let shared = self.this.clone();
        tokio::spawn(async move {
            let filter = SubscriptionFilter::builder().tools_list_changed().build();
            let mut subscription = match peer.listen(filter).await {
                Ok(subscription) => subscription,
                Err(error) => {
                    tracing::debug!(%error, "the server takes no `subscriptions/listen`; waiting for unscoped list changes");
                    return;
                }
            };
            while let Ok(Some(notification)) = subscription.next().await {
                if matches!(notification, ServerNotification::ToolListChangedNotification(_)) {
                    let Some(shared) = shared.upgrade() else { return };
                    shared.relist(&peer).await;
                }
            }
        });
    }

    /// Drops the connection (a stdio child is killed when its transport is dropped).
    async fn drop_service(&self, link: &mut Link) {
        if let Some(mut service) = link.service.take() {
            let _ = service.close().await;
        }
        *self.pid.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    /// The long strings of a new connection, which [`Shared::spill_peak_held_bytes`] then reads.
    fn new_spills(&self) -> Arc<Spills> {
        let spills = Spills::new(&self.name, &self.limits);
        *self.spills.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(spills.clone());
        spills
    }

    /// The most bytes of strings the open connection's filters held at once (0 before a
    /// connection).
    pub(super) fn spill_peak_held_bytes(&self) -> usize {
        self.spills
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map_or(0, |s| s.peak_held_bytes())
    }

    pub(super) async fn disconnect(&self) {
        let mut link = self.link.lock().await;
        self.drop_service(&mut link).await;
    }

    /// Sends a report of the call that sent `params.progress_token` to its context.
    fn forward_progress(&self, params: &ProgressNotificationParam) {
        let key = token_key(&params.progress_token);
        let ctx = self.progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&key).cloned();
        if let Some(ctx) = ctx {
            // Whole units: MCP progress may be fractional, the registry's is counted.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let units = |x: f64| x.max(0.0) as u64;
            ctx.progress(units(params.progress), params.total.map(units), params.message.as_deref().unwrap_or(""));
        }
    }

    /// Forwards one validated call of the remote tool `tool`. The call has no outcome here, a
    /// [`ToolError::Unavailable`], when no connection could be opened, the connection was lost
    /// before the answer, no answer came within the call timeout, or the server's error result is
    /// marked [`UNAVAILABLE_META`](crate::UNAVAILABLE_META) (its refusal while the first call with
    /// the forwarded idempotency key still runs there); every other answer is the call's outcome.
    pub(super) async fn call(&self, tool: &str, arguments: Value, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let (peer, opened) = {
            let mut link = tokio::select! {
                link = self.link.lock() => link,
                () = ctx.cancellation().cancelled() => return Err(cancelled(ctx, tool)),
            };
            tokio::select! {
                peer = self.peer(&mut link) => peer.map_err(|e| ToolError::Unavailable(format!("{e}; try the call again later")))?,
                () = ctx.cancellation().cancelled() => return Err(cancelled(ctx, tool)),
            }
        };
        let mut answered = 0;
        loop {
            let seen = self.authorizations();
            let error = match self.send_call(&peer, tool, &arguments, ctx).await {
                Ok(result) => return result,
                Err(error) => error,
            };
            let answer = tokio::select! {
                answer = self.answer_challenge(&error, answered, seen) => answer,
                () = ctx.cancellation().cancelled() => return Err(cancelled(ctx, tool)),
            };
            match answer {
                Some(Ok(())) => answered += 1,
                Some(Err(message)) => {
                    return Err(ToolError::Failed(format!(
                        "MCP server `{}` refused the call of `{tool}`: {message}",
                        self.name
                    )));
                }
                None => return Err(self.lost(tool, &error, opened).await),
            }
        }
    }

    /// Sends one `tools/call` of `tool` on `peer` and awaits its answer, in a CLIENT span whose
    /// context goes in the request's `_meta` ([`crate::telemetry::client_span`]); `Err`: the
    /// request failed on its way (a lost connection, or an authorization challenge of the server).
    async fn send_call(
        &self,
        peer: &Peer<RoleClient>,
        tool: &str,
        arguments: &Value,
        ctx: &ToolContext,
    ) -> Result<Result<ToolResult, ToolError>, ServiceError> {
        let server = self.server_address();
        let span = telemetry::client_span(
            "tools/call",
            Some(tool),
            server.as_ref().map(|(host, port)| (host.as_str(), *port)),
        );
        let started = tokio::time::Instant::now();
        let mut ended = Ended::default();
        let outcome = self.send_call_in(peer, tool, arguments, ctx, &span, &mut ended).instrument(span.clone()).await;
        if outcome.is_err() && ended.error.is_none() {
            ended.error = Some("transport_error".to_owned());
        }
        let tcp = matches!(self.transport, Transport::Http { .. });
        telemetry::client_finished(&span, started, "tools/call", Some(tool), tcp, ended.error, ended.code);
        outcome
    }

    /// [`send_call`](Shared::send_call)'s request, in `span`; `ended` gets how it ended.
    async fn send_call_in(
        &self,
        peer: &Peer<RoleClient>,
        tool: &str,
        arguments: &Value,
        ctx: &ToolContext,
        span: &tracing::Span,
        ended: &mut Ended,
    ) -> Result<Result<ToolResult, ToolError>, ServiceError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = arguments {
            params.arguments = Some(map.clone());
        }
        let mut meta = rmcp::model::RequestMetaObject::default();
        telemetry::inject(span, &mut meta);
        if !meta.0.0.is_empty() {
            params.meta = Some(meta);
        }
        let mut request = Request::new(params);
        // The long strings of the answer go to the call's output store, on a connection that
        // filters its answers (every transport; see `Traced`).
        let spill = CallSpills::new(ctx);
        let _unregister = Unregister(spill.clone());
        request.extensions.insert(SpillCall(spill.clone()));
        // The call's approval token and the idempotency key derived for this server join its
        // `_meta` in the transport (`Traced`), after rmcp has traced the request.
        let forwarded = Forwarded {
            approval_token: ctx.approval_token().map(str::to_owned),
            idempotency_key: ctx.idempotency_key_for(&self.name),
        };
        if forwarded.approval_token.is_some() || forwarded.idempotency_key.is_some() {
            request.extensions.insert(forwarded);
        }
        let request = ClientRequest::CallToolRequest(request);
        let handle = peer.send_request_with_option(request, PeerRequestOptions::no_options()).await?;
        if !span.is_disabled() {
            span.record("jsonrpc.request.id", telemetry::bounded_id(&handle.id));
        }
        let key = token_key(&handle.progress_token);
        let _listening = Listening::new(self, key, ctx);
        let mut pending = Pending { peer: Some(peer.clone()), id: handle.id.clone() };
        let timeout = self.limits.call_timeout;
        let response = tokio::select! {
            // An answer over the cap is told to the call before the transport fails the request.
            biased;
            () = spill.went_over() => {
                ended.error = Some("too_large".to_owned());
                return Ok(Err(ToolError::Failed(format!(
                    "MCP server `{}` answered the call of `{tool}` with a message over {} bytes (the import's \
                     max_result_bytes); the answer is not passed on; ask for less, or raise ImportLimits::max_result_bytes",
                    self.name, self.limits.max_result_bytes
                ))));
            }
            response = handle.await_response() => response,
            () = ctx.cancellation().cancelled() => {
                ended.error = Some("cancelled".to_owned());
                return Ok(Err(cancelled(ctx, tool)));
            }
            // Dropping `pending` cancels the call on the server.
            () = tokio::time::sleep(timeout) => return Ok(Err(ended.timed_out(ToolError::Unavailable(format!(
                "MCP server `{}` did not answer the call of `{tool}` within {} ms (the import's call timeout); \
                 try again later or with less work",
                self.name,
                timeout.as_millis()
            ))))),
        };
        pending.peer = None;
        Ok(match response {
            Ok(ServerResult::CallToolResult(result)) => {
                if result.is_error == Some(true) {
                    ended.error = Some("tool_error".to_owned());
                }
                self.link.lock().await.failures = 0;
                let mut value = serde_json::to_value(&result).unwrap_or(Value::Null);
                match super::spill::resolve(&spill, &self.name, &mut value).await {
                    Ok(Some(stored)) => Ok(stored),
                    Ok(None) => {
                        let now = ctx.now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
                        let local = ctx.tool_name().unwrap_or(tool);
                        let approval = spill.take_approval();
                        let outcome = to_result(&self.name, tool, &value);
                        let approval = approval.as_ref().map(|held| held.as_ref().map_err(String::as_str));
                        with_approval(outcome, approval, &self.name, (tool, local), now)
                    }
                    Err(message) => Err(ToolError::Failed(message)),
                }
            }
            Ok(_) => {
                ended.error = Some("unexpected_response".to_owned());
                Err(ToolError::Failed(format!(
                    "MCP server `{}` answered the call of `{tool}` with something other than a tool result",
                    self.name
                )))
            }
            Err(ServiceError::McpError(error)) => {
                ended.error = Some(error.code.0.to_string());
                ended.code = Some(error.code.0);
                Err(ToolError::Failed(format!(
                    "MCP server `{}` refused the call of `{tool}`: {}",
                    self.name, error.message
                )))
            }
            Err(error) => return Err(error),
        })
    }

    /// `text` without the secret parts of the server's URL ([`super::scrub_url`]): every error and
    /// log line about an HTTP server passes through here; a stdio server's text is unchanged.
    fn scrubbed(&self, text: &str) -> String {
        match &self.transport {
            Transport::Http { url, .. } => super::scrub_url(text, url),
            Transport::Stdio { .. } => text.to_owned(),
        }
    }

    fn is_stdio(&self) -> bool {
        matches!(self.transport, Transport::Stdio { .. })
    }

    /// What the next call does after a lost connection, for the error of a call.
    fn next_call(&self) -> &'static str {
        match self.transport {
            Transport::Stdio { .. } => {
                "the next call starts it again (if it keeps stopping, look at its log: what it writes to standard error)"
            }
            Transport::Http { .. } => "the next call connects again (if it keeps failing, check that the server runs)",
        }
    }

    /// The error of a call whose connection (number `opened`) failed; that connection is dropped,
    /// unless another call did it already, so the next call opens a new one. The error is
    /// [`ToolError::Unavailable`]: the call has no outcome here, and the upstream, which got the
    /// forwarded idempotency key if it got the call at all, says what it did to a retry.
    async fn lost(&self, tool: &str, error: &ServiceError, opened: u64) -> ToolError {
        let shown = self.scrubbed(&error.to_string());
        tracing::warn!(server = %self.name, tool, error = %shown, "lost the connection to an imported MCP server during a call");
        let mut link = self.link.lock().await;
        if link.opened == opened && link.service.is_some() {
            self.drop_service(&mut link).await;
            link.failures = link.failures.saturating_add(1);
        }
        ToolError::Unavailable(self.scrubbed(&format!(
            "MCP server `{}` {} during the call of `{tool}`; the call may or may not have taken effect there; {}",
            self.name,
            lost_connection(error, self.is_stdio()),
            self.next_call()
        )))
    }
}

/// How a `tools/call` of the import client ended, for its span and metric
/// ([`crate::telemetry::client_finished`]).
#[derive(Default)]
struct Ended {
    /// `error.type`, when it failed.
    error: Option<String>,
    /// The JSON-RPC code of an error response.
    code: Option<i32>,
}

impl Ended {
    /// `error`, the call having timed out.
    fn timed_out(&mut self, error: ToolError) -> ToolError {
        self.error = Some("timeout".to_owned());
        error
    }
}

/// What happened to a connection that failed during a request, as the end of a sentence whose
/// subject is the server ("MCP server `x` closed its connection"): rmcp's errors in plain words,
/// without its type names. `stdio`: the server is a child process, which a message cannot reach
/// only once it has closed its standard input (or exited).
fn lost_connection(error: &ServiceError, stdio: bool) -> String {
    match error {
        ServiceError::TransportClosed | ServiceError::Cancelled { .. } => "closed its connection".to_owned(),
        ServiceError::TransportSend(_) if stdio => "closed its connection".to_owned(),
        ServiceError::TransportSend(error) => {
            let text = error.error.to_string();
            unparsable(&text).unwrap_or_else(|| format!("could not be reached ({})", lowercase_first(&text)))
        }
        ServiceError::Timeout { timeout } => format!("did not answer within {} ms", timeout.as_millis()),
        ServiceError::UnexpectedResponse => "answered with a message of another kind than the request's".to_owned(),
        ServiceError::McpError(error) => format!("answered with an error ({})", error.message),
        other => format!("stopped answering ({})", lowercase_first(&other.to_string())),
    }
}

/// When rmcp's HTTP client could not parse the server's answer (`text` is its error), what was
/// wrong, in plain words: nested past the 128 levels `serde_json` parses (its recursion limit), or
/// not a JSON-RPC message, with the parser's reason cut to [`echoed`](crate::errors::echoed)'s
/// bound (the answer itself, which rmcp's error quotes, is never repeated). The request fails at
/// once with it.
fn unparsable(text: &str) -> Option<String> {
    const PARSE_FAILED: &str = "could not parse JSON response as ServerJsonRpcMessage: ";
    let (_, reason) = text.split_once(PARSE_FAILED)?;
    if reason.starts_with("recursion limit exceeded") {
        return Some(
            "sent an answer nested deeper than the 128 levels the JSON parser reads, so it cannot be read".to_owned(),
        );
    }
    // The parser's reason ends before the answer's text, which follows as `: {...`.
    let reason = reason.split(": ").next().unwrap_or(reason);
    Some(format!("sent an answer that is not a JSON-RPC message ({})", crate::errors::echoed(reason)))
}

/// A failed request's error for a message that names the server first ("did not list its tools:
/// ..."): [`lost_connection`]'s words, or what the server answered.
fn service_error(error: &ServiceError, stdio: bool) -> String {
    match error {
        ServiceError::McpError(error) => format!("it answered with an error: {}", error.message),
        other => format!("it {}", lost_connection(other, stdio)),
    }
}

/// Why a server (`who`: `` `command` `` or the URL) did not initialize a session, in plain words
/// with what to check; `stdio`: it is a child process speaking over standard input and output.
fn initialize_error(who: &str, error: &rmcp::service::ClientInitializeError, stdio: bool) -> String {
    use rmcp::service::ClientInitializeError as E;
    let check = if stdio {
        "check that it serves MCP over standard input and output, and look at what it writes to standard error"
    } else {
        "check that it serves MCP at that URL"
    };
    match error {
        // A child that exits at once may be gone before the initialization is written (a broken
        // pipe) or after (no answer): one message for both.
        E::ConnectionClosed(_) | E::ExpectedInitResponse(None) | E::TransportError { .. } if stdio => format!(
            "{who} exited, or closed its standard input or output, before it answered the MCP initialization; {check}"
        ),
        E::ConnectionClosed(_) | E::ExpectedInitResponse(None) => {
            format!("{who} closed the connection before it answered the MCP initialization; {check}")
        }
        _ if error.auth_challenge().is_some() => format!(
            "{who} refused the MCP initialization without authorization (HTTP 401 or 403); give the import its bearer token (`bearer_token`, or `headers.Authorization` in `mcpServers`) or OAuth client credentials with the scopes it asks for"
        ),
        E::ExpectedInitResponse(Some(_)) | E::ExpectedInitResult(_) | E::ConflictInitResponseId(..) => {
            format!("{who} answered the MCP initialization with something other than its result; {check}")
        }
        E::TransportError { error, .. } => format!(
            "{who} could not be sent the MCP initialization ({}); {check}",
            lowercase_first(&error.error.to_string())
        ),
        E::JsonRpcError(error) => format!("{who} refused the MCP initialization: {}", error.message),
        E::NoCompatibleProtocolVersion { client_supported, server_supported } => {
            let list = |versions: &[rmcp::model::ProtocolVersion]| {
                versions.iter().map(|v| v.as_str().to_owned()).collect::<Vec<_>>().join(", ")
            };
            format!(
                "{who} speaks none of the MCP protocol versions this client does (it offers {}; this client {}); update one of them",
                list(server_supported),
                list(client_supported)
            )
        }
        other => format!("{who} did not initialize an MCP session ({}); {check}", lowercase_first(&other.to_string())),
    }
}

/// `text` with its first character lowercased (rmcp's and its transports' messages start
/// capitalised: "Transport closed").
fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| first.to_lowercase().chain(chars).collect())
}

fn cancelled(ctx: &ToolContext, tool: &str) -> ToolError {
    ToolError::Cancelled { tool: ctx.tool_name().unwrap_or(tool).to_owned() }
}

/// Forgets a call's registration for long strings when dropped.
struct Unregister(Arc<CallSpills>);

impl Drop for Unregister {
    fn drop(&mut self) {
        self.0.unregister();
    }
}

/// Routes the progress of one call to its context while it runs.
struct Listening<'a> {
    shared: &'a Shared,
    key: String,
}

impl<'a> Listening<'a> {
    fn new(shared: &'a Shared, key: String, ctx: &ToolContext) -> Self {
        if ctx.wants_progress() {
            shared.progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key.clone(), ctx.clone());
        }
        Self { shared, key }
    }
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        self.shared.progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.key);
    }
}

/// A request sent and not answered: dropped before its answer (the call was cancelled, or the
/// registry stopped awaiting it), it sends `notifications/cancelled` for it.
struct Pending {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let param =
            CancelledNotificationParam::new(Some(self.id.clone()), Some("the caller cancelled the call".to_owned()));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = peer.notify_cancelled(param).await {
                    tracing::debug!(%error, "cannot send `notifications/cancelled` to the imported MCP server");
                }
            });
        }
    }
}

/// Why `what` (a URL, or a command in backticks) did not initialize an MCP session: `error`, or
/// (`None`) no answer within [`CONNECT_TIMEOUT`].
fn initialize_failure(what: &str, error: Option<&ClientInitializeError>, stdio: bool) -> String {
    match error {
        Some(error) => initialize_error(what, error, stdio),
        None => format!("{what} did not answer the MCP initialization within {} ms", CONNECT_TIMEOUT.as_millis()),
    }
}

/// The authorization of `url` with an access token obtained by the client credentials grant
/// (rmcp's `auth`: the protected resource metadata, the authorization server's metadata, then the
/// token request for `url` as the resource).
#[cfg(feature = "client-auth")]
async fn authorized_client(
    url: &str,
    credentials: &super::ClientCredentials,
) -> Result<rmcp::transport::auth::AuthorizationManager, String> {
    use rmcp::transport::auth::{ClientCredentialsConfig, OAuthState};
    let why = |e: rmcp::transport::auth::AuthError| format!("cannot obtain an access token for {url}: {e}");
    let mut state = OAuthState::new(url, None).await.map_err(why)?;
    let config = ClientCredentialsConfig::ClientSecret {
        client_id: credentials.client_id.clone(),
        client_secret: credentials.client_secret.clone(),
        scopes: credentials.scopes.clone(),
        resource: Some(url.to_owned()),
    };
    tokio::time::timeout(CONNECT_TIMEOUT, state.authenticate_client_credentials(config))
        .await
        .map_err(|_| format!("obtaining an access token for {url} took over {} ms", CONNECT_TIMEOUT.as_millis()))?
        .map_err(why)?;
    let manager = state
        .into_authorization_manager()
        .ok_or_else(|| format!("cannot obtain an access token for {url}: the grant did not authorize the client"))?;
    Ok(manager)
}

/// The marker a `tools/call` request carries in its extensions (never traced: rmcp's
/// `Extensions` shows no content): what [`Traced`] puts in the request's `_meta` as it is sent,
/// so that rmcp's own trace of the request does not hold it.
#[derive(Clone, Default)]
struct Forwarded {
    /// The call's approval token, as `_meta["tool-framework/approval-token"]`.
    approval_token: Option<String>,
    /// The idempotency key derived for this server
    /// ([`ToolContext::idempotency_key_for`](tool_runtime::ToolContext::idempotency_key_for) with
    /// the server's name), as `_meta["tool-framework/idempotency-key"]`.
    idempotency_key: Option<String>,
}

/// The transport of a connection, adding trace context to the `_meta` of the handshake's request
/// (`initialize` or `server/discover`): rmcp writes those requests itself, and the handshake's
/// CLIENT span is their parent ([`crate::telemetry::inject`]). It also keeps approval tokens and
/// idempotency keys out of what rmcp's service handles: a `tools/call` gets what it
/// [`Forwarded`] in `_meta` as it is sent, and an answer's `_meta["tool-framework/approval"]` is
/// taken out as it is received. Other
/// messages pass unchanged.
struct Traced<T> {
    inner: T,
    /// `traceparent`, `tracestate` and `baggage` (empty without the feature `otel`).
    meta: rmcp::model::RequestMetaObject,
    /// The connection's long strings: a `tools/call` request marked [`SpillCall`] is registered
    /// under its id as it is sent, before its answer can come.
    spills: Option<Arc<Spills>>,
}

impl<T: rmcp::transport::Transport<RoleClient>> rmcp::transport::Transport<RoleClient> for Traced<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        use rmcp::model::GetMeta;
        if let rmcp::model::JsonRpcMessage::Request(message) = &mut item
            && matches!(message.request, ClientRequest::InitializeRequest(_) | ClientRequest::DiscoverRequest(_))
            && !self.meta.0.0.is_empty()
        {
            message.request.get_meta_mut().extend(self.meta.clone());
        }
        if let rmcp::model::JsonRpcMessage::Request(message) = &mut item
            && let ClientRequest::CallToolRequest(request) = &mut message.request
        {
            if let Some(forwarded) = request.extensions.get::<Forwarded>() {
                let meta = request.params.meta.get_or_insert_with(Default::default);
                if let Some(token) = &forwarded.approval_token {
                    meta.0.0.insert(APPROVAL_TOKEN_META.to_owned(), Value::from(token.clone()));
                }
                if let Some(key) = &forwarded.idempotency_key {
                    meta.0.0.insert(IDEMPOTENCY_KEY_META.to_owned(), Value::from(key.clone()));
                }
            }
            if let Some(spills) = &self.spills
                && let Some(call) = request.extensions.get::<SpillCall>()
            {
                spills.register(&message.id, &call.0);
            }
        }
        self.inner.send(item)
    }

    /// The next message; the `_meta["tool-framework/approval"]` of an answer to a call is taken
    /// out of it here, before rmcp traces it, and kept for that call alone
    /// ([`Spills::hold_approval`]).
    fn receive(&mut self) -> impl Future<Output = Option<rmcp::service::RxJsonRpcMessage<RoleClient>>> + Send {
        let spills = self.spills.clone();
        let received = self.inner.receive();
        async move {
            let mut message = received.await?;
            if let rmcp::model::JsonRpcMessage::Response(response) = &mut message
                && let ServerResult::CallToolResult(result) = &mut response.result
                && let Some(meta) = &mut result.meta
                && let Some(approval) = meta.0.remove(APPROVAL_META)
                && let Some(spills) = &spills
            {
                spills.hold_approval(&response.id, approval);
            }
            Some(message)
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_runtime::{ContentPart, ToolResult};

    use super::*;
    use crate::content::to_result;

    #[test]
    fn a_lost_connection_is_said_in_plain_words_without_rmcps_type_names() {
        use rmcp::service::ServiceError;
        use rmcp::transport::DynamicTransportError;
        let refused = || {
            ServiceError::TransportSend(DynamicTransportError::from_parts(
                "rmcp::transport::streamable_http_client::StreamableHttpClientTransport",
                std::any::TypeId::of::<()>(),
                Box::new(std::io::Error::other("Connection refused")),
            ))
        };
        let said = [
            super::lost_connection(&ServiceError::TransportClosed, false),
            super::lost_connection(&refused(), true),
            super::lost_connection(&refused(), false),
            super::lost_connection(&ServiceError::Timeout { timeout: std::time::Duration::from_secs(2) }, false),
            super::service_error(&ServiceError::TransportClosed, true),
        ];
        assert_eq!(
            said,
            [
                "closed its connection",
                "closed its connection",
                "could not be reached (connection refused)",
                "did not answer within 2000 ms",
                "it closed its connection",
            ]
        );
    }

    #[test]
    fn an_initialization_that_failed_is_said_in_plain_words_with_what_to_check() {
        use rmcp::service::ClientInitializeError;
        let closed = ClientInitializeError::ConnectionClosed("initialized response".to_owned());
        assert_eq!(
            super::initialize_error("`mcp-files`", &closed, true),
            "`mcp-files` exited, or closed its standard input or output, before it answered the MCP initialization; check that it serves MCP over standard input and output, and look at what it writes to standard error"
        );
        assert_eq!(
            super::initialize_error(
                "http://127.0.0.1:9/mcp",
                &ClientInitializeError::ExpectedInitResponse(None),
                false
            ),
            "http://127.0.0.1:9/mcp closed the connection before it answered the MCP initialization; check that it serves MCP at that URL"
        );
    }

    #[test]
    fn a_remote_result_keeps_audio_resources_and_links() {
        let result = json!({"content": [
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "test://t", "mimeType": "text/plain", "text": "hi"}},
            {"type": "resource", "resource": {"uri": "test://b", "blob": "AAEC"}},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "title": "A"},
        ]});
        assert_eq!(
            to_result("remote", "fetch", &result).unwrap(),
            ToolResult::Parts(vec![
                ContentPart::audio("UklGRg==", "audio/wav"),
                ContentPart::resource_text("test://t", Some("text/plain".to_owned()), "hi"),
                ContentPart::resource_blob("test://b", None, "AAEC"),
                ContentPart::ResourceLink {
                    uri: "file:///a.txt".to_owned(),
                    name: "a.txt".to_owned(),
                    title: Some("A".to_owned()),
                    description: None,
                    media_type: None,
                },
            ])
        );
    }

    #[test]
    fn a_remote_error_shows_audio_and_links_in_its_text() {
        let result = json!({"isError": true, "content": [
            {"type": "text", "text": "failed"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///log.txt", "name": "log.txt"},
        ]});
        assert_eq!(
            to_result("remote", "fetch", &result).unwrap_err().to_string(),
            tool_runtime::ToolError::Failed("failed\n[audio, audio/wav]\n[resource link file:///log.txt]".to_owned())
                .to_string()
        );
    }

    /// A transport that keeps what it is sent and answers with `answers`, in order.
    struct Recording {
        sent: Arc<Mutex<Vec<Value>>>,
        answers: std::collections::VecDeque<rmcp::service::RxJsonRpcMessage<RoleClient>>,
    }

    impl rmcp::transport::Transport<RoleClient> for Recording {
        type Error = std::io::Error;

        fn send(
            &mut self,
            item: rmcp::service::TxJsonRpcMessage<RoleClient>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            self.sent.lock().unwrap().push(serde_json::to_value(&item).unwrap());
            std::future::ready(Ok(()))
        }

        fn receive(&mut self) -> impl Future<Output = Option<rmcp::service::RxJsonRpcMessage<RoleClient>>> + Send {
            std::future::ready(self.answers.pop_front())
        }

        fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
            std::future::ready(Ok(()))
        }
    }

    /// A `tools/call` of `t0` as request `id`, taking spills as `call`, with `token` forwarded.
    fn call_request(
        id: i64,
        call: &Arc<CallSpills>,
        token: Option<&str>,
    ) -> rmcp::service::TxJsonRpcMessage<RoleClient> {
        let forwarded = Forwarded { approval_token: token.map(str::to_owned), idempotency_key: None };
        call_forwarding(id, call, forwarded)
    }

    /// A `tools/call` of `t0` as request `id`, taking spills as `call`, forwarding `forwarded`.
    fn call_forwarding(
        id: i64,
        call: &Arc<CallSpills>,
        forwarded: Forwarded,
    ) -> rmcp::service::TxJsonRpcMessage<RoleClient> {
        let mut request = Request::new(CallToolRequestParams::new("t0"));
        request.extensions.insert(SpillCall(call.clone()));
        if forwarded.approval_token.is_some() || forwarded.idempotency_key.is_some() {
            request.extensions.insert(forwarded);
        }
        rmcp::model::JsonRpcMessage::request(ClientRequest::CallToolRequest(request), RequestId::Number(id))
    }

    /// The refusal of request `id` with `approval` in its `_meta`.
    fn refusal(id: i64, approval: Value) -> rmcp::service::RxJsonRpcMessage<RoleClient> {
        let result: rmcp::model::CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "refused"}], "isError": true, "_meta": {APPROVAL_META: approval}
        }))
        .unwrap();
        rmcp::model::JsonRpcMessage::response(ServerResult::CallToolResult(result), RequestId::Number(id))
    }

    /// The transport under rmcp's service: what that service hands it and gets from it is what
    /// rmcp traces (every message, at `TRACE`), so neither way may hold a token.
    fn traced(
        answers: Vec<rmcp::service::RxJsonRpcMessage<RoleClient>>,
    ) -> (Traced<Recording>, Arc<Mutex<Vec<Value>>>) {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let inner = Recording { sent: sent.clone(), answers: answers.into() };
        let spills = Spills::new("up", &crate::import::ImportLimits::default());
        (Traced { inner, meta: rmcp::model::RequestMetaObject::default(), spills: Some(spills) }, sent)
    }

    #[tokio::test]
    async fn a_forwarded_token_joins_its_calls_meta_only_as_the_transport_sends_it() {
        use rmcp::transport::Transport as _;
        let (mut transport, sent) = traced(Vec::new());
        let call = CallSpills::new(&tool_runtime::ToolContext::new());
        let with = call_request(1, &call, Some("ap1.9.ab.cd"));
        // What rmcp's service holds (and traces) has no token: it is an extension, shown as none.
        assert!(!format!("{with:?}").contains("ap1.9.ab.cd"));
        transport.send(with).await.unwrap();
        transport.send(call_request(2, &CallSpills::new(&tool_runtime::ToolContext::new()), None)).await.unwrap();
        let sent = sent.lock().unwrap().clone();
        assert_eq!(sent[0]["params"]["_meta"], json!({APPROVAL_TOKEN_META: "ap1.9.ab.cd"}));
        assert_eq!(sent[1]["params"].get("_meta"), None);
    }

    #[tokio::test]
    async fn a_forwarded_idempotency_key_joins_its_calls_meta_only_as_the_transport_sends_it() {
        use rmcp::transport::Transport as _;
        let (mut transport, sent) = traced(Vec::new());
        let key = "5d".repeat(32);
        let both = Forwarded { approval_token: Some("ap1.9.ab.cd".to_owned()), idempotency_key: Some(key.clone()) };
        let with = call_forwarding(1, &CallSpills::new(&tool_runtime::ToolContext::new()), both);
        // What rmcp's service holds (and traces) has no key: it is an extension, shown as none.
        assert!(!format!("{with:?}").contains(&key));
        transport.send(with).await.unwrap();
        let key_only = Forwarded { approval_token: None, idempotency_key: Some(key.clone()) };
        transport
            .send(call_forwarding(2, &CallSpills::new(&tool_runtime::ToolContext::new()), key_only))
            .await
            .unwrap();
        let sent = sent.lock().unwrap().clone();
        assert_eq!(sent[0]["params"]["_meta"], json!({APPROVAL_TOKEN_META: "ap1.9.ab.cd", IDEMPOTENCY_KEY_META: key}));
        assert_eq!(sent[1]["params"]["_meta"], json!({IDEMPOTENCY_KEY_META: key}));
    }

    #[tokio::test]
    async fn an_answers_approval_leaves_it_in_the_transport_and_waits_for_its_call_alone() {
        use rmcp::transport::Transport as _;
        let approval = json!({"tool": "t0", "preview": "p", "token": "ap1.9.ab.cd", "expiresAt": 9});
        let (mut transport, _) = traced(vec![refusal(1, approval.clone()), refusal(7, approval.clone())]);
        let (first, other) =
            (CallSpills::new(&tool_runtime::ToolContext::new()), CallSpills::new(&tool_runtime::ToolContext::new()));
        transport.send(call_request(1, &first, None)).await.unwrap();
        transport.send(call_request(2, &other, None)).await.unwrap();
        // The answer rmcp's service gets (and traces) holds no approval.
        let answered = transport.receive().await.unwrap();
        assert!(!serde_json::to_string(&answered).unwrap().contains("ap1.9.ab.cd"));
        assert_eq!(first.take_approval(), Some(Ok(approval)));
        assert_eq!(other.take_approval(), None);
        // An answer to no running call: its approval is dropped, and still not passed up.
        let stray = transport.receive().await.unwrap();
        assert!(!serde_json::to_string(&stray).unwrap().contains("ap1.9.ab.cd"));
        assert_eq!((first.take_approval(), other.take_approval()), (None, None));
    }
}
