//! The server: [`McpServer`], what it holds ([`Inner`], the registry served and its listing),
//! and what every request asks of it: the context of a call (the context hook and the access
//! token), the caller's reach, the listing, the capabilities. Below it are the leaves and the
//! features; above it, running one call ([`crate::call`]), the protocol surface
//! ([`crate::handler`]), the transports and the builder.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    Implementation, JsonObject, ListToolsResult, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tool_runtime::{ImageSupport, Registry, ToolContext, ToolContextBuilder, ToolDefinition, ToolError};

#[cfg(feature = "auth")]
use crate::auth;
use crate::content::tool_entry;
use crate::limits::Limits;
use crate::talk::{self, McpChannel};
use crate::{catalog, tasks};

/// What a `tools/call` or `prompts/get` request carries, for the
/// [context hook](crate::McpServerBuilder::context) (which `resources/read` and `completion/complete`
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
pub(crate) type ContextHook =
    dyn Fn(&CallRequest<'_>, ToolContextBuilder) -> Result<ToolContextBuilder, String> + Send + Sync;

/// An MCP server over a [`Registry`]; cheap to clone (every clone is the same server: same
/// running calls, same shutdown). Built by [`McpServer::builder`]. It implements rmcp's
/// [`ServerHandler`](rmcp::ServerHandler), so it can also be served on any other rmcp transport
/// with [`rmcp::ServiceExt::serve`].
#[derive(Clone)]
pub struct McpServer {
    pub(crate) inner: Arc<Inner>,
    /// The log level `logging/setLevel` set on this connection (protocols before 2026-07-28);
    /// each Streamable HTTP legacy session has its own.
    pub(crate) session: talk::SessionLevel,
}

/// What every clone of a server shares.
pub(crate) struct Inner {
    /// The registry served and its listed tools; replaced by [`McpServer::set_registry`].
    pub(crate) served: std::sync::RwLock<Arc<Served>>,
    /// The listing filter, kept for a new registry.
    pub(crate) filter: Box<dyn Fn(&ToolDefinition) -> bool + Send + Sync>,
    /// Counts the registries set after the first, for the listeners of list changes.
    pub(crate) changed: tokio::sync::watch::Sender<u64>,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) instructions: Option<String>,
    pub(crate) context: Box<ContextHook>,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) limits: Limits,
    pub(crate) max_frame_bytes: usize,
    pub(crate) legacy_sessions: bool,
    pub(crate) grace: Duration,
    #[cfg(feature = "auth")]
    pub(crate) auth: Option<auth::ResourceServer>,
    /// Seals and opens the request state of input-required results ([`talk`]).
    pub(crate) codec: Option<rmcp::model::RequestStateCodec>,
    /// The most bytes of JSON the answers of one call may hold ([`talk`]).
    pub(crate) max_input_response_bytes: usize,
    /// The resources, templates, prompts and completions served beside the tools.
    pub(crate) catalog: catalog::Catalog,
    /// The running calls; closed when a shutdown begins (then no call is admitted).
    pub(crate) calls: TaskTracker,
    /// The parent of every call's cancellation token: cancelled when the grace period is over.
    pub(crate) stop: CancellationToken,
    /// The task store and the runs of tasks in this process ([`tasks`]).
    pub(crate) tasks: tasks::Tasks,
    /// How created tasks reach the worker that runs them ([`crate::runner`]).
    pub(crate) runner: Arc<dyn crate::runner::TaskRunner>,
    /// The key sealing task records' secret arguments that every worker shares, when given
    /// ([`crate::sealed`]); else each process's own.
    pub(crate) task_key: Option<crate::sealed::TaskKey>,
    /// How many requests the HTTP endpoint has answered itself ([`crate::http`]'s direct path), for the tests.
    #[cfg(test)]
    pub(crate) direct_answers: std::sync::atomic::AtomicUsize,
}

impl McpServer {
    /// The same server with a log level of its own, for one connection or legacy session.
    pub(crate) fn for_session(&self) -> Self {
        Self { inner: self.inner.clone(), session: talk::SessionLevel::default() }
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
    pub(crate) fn served(&self) -> Arc<Served> {
        self.inner.served.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
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

    /// The context of one call (see [`McpServerBuilder::context`](crate::McpServerBuilder::context)); a hook that panics refuses the
    /// call with the panic's message.
    ///
    /// With a resource server (feature `auth`), a request's access token decides the call's
    /// principal (before the hook, which may read it) and its [access](tool_runtime::ToolAccess)
    /// (after the hook: the token's scopes through [`auth::ScopeMap::allows_tags`], whatever the hook
    /// set), so every call the registry runs for it, the meta-tools' inner calls and task runs
    /// included, reaches only the tools those scopes reach.
    pub(crate) fn call_context(&self, request: &CallRequest<'_>) -> Result<ToolContextBuilder, String> {
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
                // The resource server is one `Arc`: only the token's scopes are copied per call.
                let (auth, granted) = (auth.clone(), who.scopes.clone());
                Ok(Ok(builder.access(move |_: &str, tags: &[String]| auth.scopes().allows_tags(tags, &granted))))
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

impl McpServer {
    /// `true` when `context`'s request came over Streamable HTTP outside a session: without legacy
    /// sessions a `Mcp-Session-Id` names no session, whatever the client sent.
    pub(crate) fn stateless_http(&self, context: &RequestContext<RoleServer>) -> bool {
        context
            .extensions
            .get::<::http::request::Parts>()
            .is_some_and(|parts| !self.inner.legacy_sessions || !parts.headers.contains_key("mcp-session-id"))
    }

    /// The client channel of `context`'s request, with its `requestState` and `inputResponses`.
    /// `declared` is the client's capabilities as the request gives them
    /// (`context.client_capabilities()`, decoded once by the caller).
    pub(crate) fn request_channel(
        &self,
        context: &RequestContext<RoleServer>,
        declared: Option<rmcp::model::ClientCapabilities>,
        state: Option<String>,
        answers: Option<rmcp::model::InputResponses>,
    ) -> Arc<McpChannel> {
        Arc::new(McpChannel::new(context, declared, self.session.get(), state, answers, self.stateless_http(context)))
    }

    /// The error of a `tools/call` naming a tool not served; it lists the tools served that the
    /// caller reaches ([`McpServer::reaches`]).
    pub(crate) fn unknown_tool(&self, name: &str, who: Option<&Caller>) -> ErrorData {
        let served = self.served();
        let available = served
            .tools
            .iter()
            .filter(|tool| served.registry.definition(&tool.name).is_none_or(|d| self.reaches(who, d)))
            .map(|t| t.name.to_string())
            .collect();
        ErrorData::invalid_params(ToolError::UnknownTool { name: name.to_owned(), available }.to_string(), None)
    }
}

/// Who a request's access token names (feature `auth`); nothing without the feature.
#[cfg(feature = "auth")]
pub(crate) type Caller = crate::auth::Authenticated;
/// Who a request's access token names (feature `auth`); nothing without the feature.
#[cfg(not(feature = "auth"))]
pub(crate) type Caller = ();

/// The caller a valid access token named, when the server checks tokens.
#[cfg(feature = "auth")]
pub(crate) fn caller(parts: Option<&::http::request::Parts>) -> Option<&crate::auth::Authenticated> {
    parts.and_then(|p| p.extensions.get())
}

impl McpServer {
    /// `true` when the caller's token reaches `definition` (always without a resource server or a
    /// caller: standard input and output).
    pub(crate) fn reaches(&self, who: Option<&Caller>, definition: &ToolDefinition) -> bool {
        self.reaches_tags(who, &definition.tags)
    }

    /// `true` when the caller's token reaches a tool or [prompt](crate::catalog::Prompt::tags) with
    /// `tags`: the one decision, [`auth::ScopeMap::allows_tags`] (always without a resource server
    /// or a caller: standard input and output).
    #[cfg(feature = "auth")]
    pub(crate) fn reaches_tags(&self, who: Option<&Caller>, tags: &[String]) -> bool {
        match (&self.inner.auth, who) {
            (Some(auth), Some(who)) => auth.scopes().allows_tags(tags, &who.scopes),
            _ => true,
        }
    }

    /// `true` always: no resource server without the feature `auth`.
    #[cfg(not(feature = "auth"))]
    pub(crate) fn reaches_tags(&self, _: Option<&Caller>, _: &[String]) -> bool {
        true
    }

    /// `prompts/list`: the prompts the request's token reaches.
    pub(crate) fn list_prompts_for(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        let who = request_caller(context);
        self.inner.catalog.list_prompts(&|_, tags| self.reaches_tags(who, tags))
    }

    /// `completion/complete`: a prompt argument's values only when the request's token reaches the
    /// prompt.
    pub(crate) async fn complete_for(
        &self,
        request: rmcp::model::CompleteRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        let who = request_caller(context);
        self.inner.catalog.complete(request, http_parts(context), &|_, tags| self.reaches_tags(who, tags)).await
    }
}

/// The caller a valid access token of `context`'s request named (feature `auth`).
#[cfg(feature = "auth")]
fn request_caller(context: &RequestContext<RoleServer>) -> Option<&Caller> {
    caller(context.extensions.get::<::http::request::Parts>())
}

/// Nobody: no access tokens without the feature `auth`.
#[cfg(not(feature = "auth"))]
fn request_caller(_: &RequestContext<RoleServer>) -> Option<&Caller> {
    None
}

/// Over HTTP, the head of the POST that carried a request.
pub(crate) fn http_parts(context: &RequestContext<RoleServer>) -> Option<::http::request::Parts> {
    context.extensions.get::<::http::request::Parts>().cloned()
}

/// `true` when `name` is listed in `served` with an output schema (a set lookup, not a scan of
/// the listing).
pub(crate) fn is_structured(served: &Served, name: &str) -> bool {
    served.structured.contains(name)
}

impl McpServer {
    /// What `initialize` gives (and rmcp asks for on every stateless request): the capabilities
    /// (tools with `listChanged`, logging, the catalog's, the tasks extension when a served tool
    /// takes part in tasks), the server's name and version, and the instructions.
    pub(crate) fn info(&self) -> ServerConfig {
        let inner = &self.inner;
        #[allow(deprecated)] // logging: SEP-2577 deprecates it; 2026-07-28 still has it
        let mut capabilities =
            ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_logging().build();
        inner.catalog.declare(&mut capabilities);
        // The tasks extension, when a tool served takes part in tasks.
        let served = self.served();
        if served.takes_tasks {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(rmcp::model::TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
        }
        let config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(inner.name.clone(), inner.version.clone()));
        match &inner.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    /// `tools/list`: the listed tools, only those the access token's scopes reach when the request
    /// carries one (the meta-tools are not the registry's: always listed).
    pub(crate) fn list_tools_for(&self, context: &RequestContext<RoleServer>) -> ListToolsResult {
        let served = self.served();
        #[cfg(feature = "auth")]
        if let Some(who) = caller(context.extensions.get::<::http::request::Parts>()) {
            // Only the tools the token's scopes reach (the meta-tools are not the registry's).
            let tools = served
                .tools
                .iter()
                .filter(|tool| served.registry.definition(&tool.name).is_none_or(|d| self.reaches(Some(who), d)))
                .cloned()
                .collect();
            return ListToolsResult::with_all_items(tools);
        }
        let _ = context;
        ListToolsResult::with_all_items(served.tools.clone())
    }

    /// `subscriptions/listen` (2026-07-28): tool list changes, when asked for, and the resources
    /// asked for that the catalog lets streams follow.
    pub(crate) fn accepted_subscriptions(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed.filter(|wanted| *wanted);
        accepted.resource_subscriptions =
            self.inner.catalog.accepted_subscriptions(requested.resource_subscriptions.as_deref());
        Some(accepted)
    }

    /// Sends `notifications/tools/list_changed` on the stream at each
    /// [`McpServer::set_registry`], and `notifications/resources/updated` for each followed URI
    /// [`McpServer::notify_resource_updated`] names, until the client closes it.
    pub(crate) async fn listen_stream(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.inner.changed.subscribe();
        let wants = subscription.accepted().tools_list_changed == Some(true);
        let mut updates = self.inner.catalog.updates();
        let followed = subscription.accepted().resource_subscriptions.clone().unwrap_or_default();
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                Some(uri) = crate::catalog::next_update(&mut updates, &followed) => {
                    if let Err(error) = subscription.sink().notify_resource_updated(uri).await {
                        tracing::debug!(%error, "cannot say that a resource changed on a listen stream");
                        return Ok(());
                    }
                }
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    if wants && let Err(error) = subscription.sink().notify_tool_list_changed().await {
                        tracing::debug!(%error, "cannot say that the tools changed on a listen stream");
                        return Ok(());
                    }
                }
            }
        }
    }
}

impl McpServer {
    /// Says that the resource at `uri` changed: every `subscriptions/listen` stream of this
    /// server following `uri`, and every client that subscribed to it with
    /// `resources/subscribe`, gets `notifications/resources/updated` with it (clients then read
    /// it again). Nothing is sent when no stream follows it, or when
    /// [subscriptions](crate::McpServerBuilder::resource_subscriptions) are off. A stream or subscription
    /// more than 256 updates behind misses the oldest. Only this process's streams are told: with several
    /// workers behind a load balancer, announce on each.
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        // An error means no stream listens now: nobody to tell.
        let _ = self.inner.catalog.updates.sender.send(uri.into());
    }
}

/// A registry and the tools `tools/list` gives of it.
pub(crate) struct Served {
    pub(crate) registry: Arc<Registry>,
    /// The listed tools, in the registry's order (by name).
    pub(crate) tools: Vec<Tool>,
    /// The names of the deferred tools the listing filter hides.
    pub(crate) hidden: std::collections::HashSet<String>,
    /// The names of the listed tools with an output schema, whose results carry
    /// `structuredContent`.
    pub(crate) structured: std::collections::HashSet<String>,
    /// Whether a loaded tool takes part in tasks (the tasks extension is declared): found here
    /// once, since rmcp asks for `get_info` on every stateless request.
    pub(crate) takes_tasks: bool,
    /// The names of the listed tools whose stateless calls the HTTP endpoint may answer itself
    /// ([`direct`]): no part in tasks, no `x-mcp-header` in the input schema.
    pub(crate) direct: std::collections::HashSet<String>,
}

impl Served {
    /// The listing of `registry`: with deferred tools, the loaded ones and the two meta-tools
    /// (the registry's search index is built here, not by the first `search_tools` call on an
    /// async worker).
    pub(crate) fn new(
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
