//! The builder: [`McpServerBuilder`], every setting of a server and its default (the defaults
//! themselves are in [`crate::limits`]), and [`McpServerBuilder::build`], which makes the
//! [`McpServer`]. The top floor but the crate root: it knows the server and the transports'
//! settings, and nothing imports it.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tool_runtime::{Clock, Registry, ResourceContents, SystemClock, ToolContextBuilder, ToolDefinition};

#[cfg(feature = "auth")]
use crate::auth;
use crate::catalog::{
    Completes, CompletionRequest, Prompt, PromptMessage, PromptRequest, RequestError, Resource, ResourceRequest,
    ResourceTemplate, boxed,
};
use crate::errors::{RequestStateKeyError, TaskKeyError};
use crate::limits::{DEFAULT_GRACE_PERIOD, DEFAULT_MAX_FRAME_BYTES, Limits};
use crate::server::{CallRequest, ContextHook, Inner, McpServer, Served};
use crate::{catalog, talk, tasks};

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
    limits: Limits,
    max_frame_bytes: usize,
    legacy_sessions: bool,
    grace: Duration,
    #[cfg(feature = "auth")]
    auth: Option<auth::ResourceServer>,
    catalog: catalog::Catalog,
    task_store: Option<Arc<dyn tasks::TaskStore>>,
    task_ttl: Duration,
    task_tags: Vec<String>,
    task_retry_tags: Vec<String>,
    max_running_tasks: usize,
    task_quota: tasks::TaskQuota,
    task_lease: Duration,
    task_runner: Arc<dyn crate::runner::TaskRunner>,
    task_key: Option<crate::sealed::TaskKey>,
    clock: Arc<dyn Clock>,
}

impl McpServer {
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
            limits: Limits::default(),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            legacy_sessions: false,
            grace: DEFAULT_GRACE_PERIOD,
            #[cfg(feature = "auth")]
            auth: None,
            catalog: catalog::Catalog::default(),
            task_store: None,
            task_ttl: tasks::DEFAULT_TASK_TTL,
            task_tags: Vec::new(),
            task_retry_tags: Vec::new(),
            max_running_tasks: tasks::DEFAULT_MAX_RUNNING_TASKS,
            task_quota: tasks::TaskQuota::default(),
            task_lease: tasks::DEFAULT_TASK_LEASE,
            task_runner: Arc::new(crate::runner::LocalTaskRunner),
            task_key: None,
            clock: Arc::new(SystemClock),
        }
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
    /// refused unless added). [`check_allowed_origin`](crate::check_allowed_origin) tells a bad
    /// entry; one given here anyway
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
    /// response). Default [`DEFAULT_HEADER_READ_TIMEOUT`](crate::DEFAULT_HEADER_READ_TIMEOUT),
    /// 10 000 ms.
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_read = timeout;
        self
    }

    /// How long a Streamable HTTP client has, once the headers are read, to send the whole body of
    /// a POST; past it the request gets `408 Request Timeout` with a JSON-RPC error and the
    /// connection is closed. Applies to [`McpServer::http_service`] too. Default
    /// [`DEFAULT_REQUEST_BODY_TIMEOUT`](crate::DEFAULT_REQUEST_BODY_TIMEOUT), 30 000 ms.
    #[must_use]
    pub fn request_body_timeout(mut self, timeout: Duration) -> Self {
        self.limits.body = timeout;
        self
    }

    /// How long [`McpServer::serve_http_on`] keeps a connection open that has no request in flight
    /// (after it was accepted, or after its last response) before it closes it. A running call,
    /// however long, keeps its connection. Default
    /// [`DEFAULT_IDLE_TIMEOUT`](crate::DEFAULT_IDLE_TIMEOUT), 60 000 ms.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle = timeout;
        self
    }

    /// How many connections [`McpServer::serve_http_on`] keeps open at once (at least 1, and below
    /// the process's file-descriptor limit: [`connection_cap`](crate::connection_cap), logged at
    /// start). At the cap a new connection closes the one idle the longest; when every connection
    /// has a request in flight it waits in the kernel's listen backlog. Default
    /// [`DEFAULT_MAX_CONNECTIONS`](crate::DEFAULT_MAX_CONNECTIONS), 1 024.
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

    /// Makes every tool tagged `tag` safe to run again from the start when the worker running its
    /// task stopped, as the tags `read_only`, `idempotent` and
    /// [`TASK_RETRY_TAG`](tasks::TASK_RETRY_TAG) do ([leases](tasks#leases)). Default: none.
    #[must_use]
    pub fn task_retry_tag(mut self, tag: impl Into<String>) -> Self {
        self.task_retry_tags.push(tag.into());
        self
    }

    /// How long a task is kept from its creation, sent as `ttlMs` (default
    /// [`DEFAULT_TASK_TTL`](tasks::DEFAULT_TASK_TTL), 3 600 000 ms). A store may drop it after.
    #[must_use]
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = ttl;
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

    /// What one principal may keep in the default task store (default [`TaskQuota::default`](tasks::TaskQuota):
    /// [`DEFAULT_TASK_QUOTA_OPEN`](tasks::DEFAULT_TASK_QUOTA_OPEN) open tasks,
    /// [`DEFAULT_TASK_QUOTA_BYTES`](tasks::DEFAULT_TASK_QUOTA_BYTES) bytes). A store given with
    /// [`task_store`](Self::task_store) keeps its own quota.
    #[must_use]
    pub fn task_quota(mut self, quota: tasks::TaskQuota) -> Self {
        self.task_quota = quota;
        self
    }

    /// How long a task run's lease lasts unless renewed (default
    /// [`DEFAULT_TASK_LEASE`](tasks::DEFAULT_TASK_LEASE), 10 000 ms; at least 3 ms). A run renews
    /// it every third of it; a `working` task whose lease lapsed is run again or failed when next
    /// read ([leases](tasks#leases)), so a task of a stopped worker is settled within about this
    /// long of its last renewal.
    #[must_use]
    pub fn task_lease(mut self, lease: Duration) -> Self {
        self.task_lease = lease.max(Duration::from_millis(3));
        self
    }

    /// How a created task reaches the worker that runs it ([`runner`](crate::runner)). Default:
    /// [`LocalTaskRunner`](crate::runner::LocalTaskRunner), the task runs in this server at once.
    /// A [`RedisStreamsRunner`](crate::runner) (feature `redis`) queues it on a Redis stream that
    /// every worker sharing the task store takes from: a task created here may run on another
    /// worker, and one whose worker stopped is reclaimed by another within about a lease and a
    /// half ([`task_lease`](Self::task_lease)). A task with a secret argument still runs here (its
    /// sealed arguments open only in this process) unless the workers share a
    /// [`task_key`](Self::task_key). See `tool-mcp/docs/tasks.md`.
    #[must_use]
    pub fn task_runner(mut self, runner: impl crate::runner::TaskRunner) -> Self {
        self.task_runner = Arc::new(runner);
        self
    }

    /// The wall clock of task records (their times, time to live and leases) and of request
    /// states' expiry (default the system's; tests drive a [`FixedClock`](tool_runtime::FixedClock)).
    /// Durations (a run's deadline, the lease's renewal period) use tokio's clock.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
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

    /// The server. The tool list is computed here, and again for each registry
    /// [`McpServer::set_registry`] gives. A [completion](Self::completion) of an argument that no
    /// declared prompt or template has is logged as a warning.
    pub fn build(self) -> McpServer {
        let served = Served::new(self.registry, &self.filter, &self.task_tags);
        let takes_tasks = served.takes_tasks;
        self.catalog.warn_undeclared();
        let server = McpServer {
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
                    self.task_store.unwrap_or_else(|| {
                        Arc::new(
                            tasks::MemoryTaskStore::default()
                                .with_quota(self.task_quota)
                                .with_clock(self.clock.clone()),
                        )
                    }),
                    self.task_ttl,
                    self.task_tags,
                    self.max_running_tasks,
                    self.clock,
                    self.task_lease,
                )
                .retry_tags(self.task_retry_tags),
                runner: self.task_runner,
                task_key: self.task_key,
                #[cfg(test)]
                direct_answers: std::sync::atomic::AtomicUsize::new(0),
            }),
            session: talk::SessionLevel::default(),
        };
        // The lease sweep of task records, when a tool takes part in tasks ([`tasks`]).
        if takes_tasks {
            server.start_sweep();
        }
        server
    }

    /// The key that seals the secret arguments of task records (the values of
    /// [`Secret<T>`](tool_runtime::Secret) arguments, ChaCha20-Poly1305 under its first 32 bytes):
    /// give every worker sharing the task store the same key, so that a task with a secret
    /// argument may run on any of them (a [queued](Self::task_runner) task, or a rerun after its
    /// worker stopped or after `tasks/update`). Default: none, a key drawn once per process, and
    /// such a task runs only in the process that created it. Use a key of its own, not the
    /// [request state key](Self::request_state_key). The key is never logged.
    ///
    /// # Errors
    /// [`TaskKeyError`] for a key shorter than 32 bytes.
    pub fn task_key(mut self, key: impl AsRef<[u8]>) -> Result<Self, TaskKeyError> {
        let key = key.as_ref();
        self.task_key = Some(crate::sealed::TaskKey::new(key).ok_or(TaskKeyError { bytes: key.len() })?);
        Ok(self)
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

impl McpServerBuilder {
    /// Lets clients follow resources, and says so in the capability (`resources.subscribe:
    /// true`); updates are announced with [`McpServer::notify_resource_updated`]. Default `false`.
    ///
    /// - Protocol 2026-07-28: on a `subscriptions/listen` stream (`resourceSubscriptions`: the
    ///   URIs of declared resources, or URIs that expand a declared template; others are left out
    ///   of the accepted filter). Stateless: the stream is one open request.
    /// - Earlier versions: `resources/subscribe` and `resources/unsubscribe` of such a URI (another
    ///   is `-32602` with `data: {"uri": URI}`). They need the server to remember the client
    ///   between requests, so they are served on standard input and output and in
    ///   [legacy sessions](McpServerBuilder::legacy_session_mode) only; over stateless HTTP (no
    ///   `Mcp-Session-Id`) `resources/subscribe` is `-32600` saying to use a listen stream. A
    ///   subscription ends with `resources/unsubscribe` or when sending an update to its client
    ///   fails (the connection closed).
    #[must_use]
    pub fn resource_subscriptions(mut self, on: bool) -> Self {
        self.catalog.subscriptions = on;
        self
    }
}

impl McpServerBuilder {
    /// Serves `resource` (listed by `resources/list`), read by `handler` on each `resources/read`
    /// of its URI: it gets the [`ResourceRequest`] (no variables) and returns the contents, text
    /// or base64 blob ([`ResourceContents`]), or a [`RequestError`]. Async; what it captures is
    /// shared by every request. A second resource with the same URI replaces the first. Declaring
    /// one turns the `resources` capability on. See the [module](crate::catalog) for what a
    /// client sees.
    #[must_use]
    pub fn resource<F, Fut>(mut self, resource: Resource, handler: F) -> Self
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceContents, RequestError>> + Send + 'static,
    {
        self.catalog.resources.insert(resource.entry.uri.clone(), (resource, boxed(handler)));
        self
    }

    /// Serves `template` (listed by `resources/templates/list`), read by `handler` on each
    /// `resources/read` of a URI that expands it and is not a [resource](Self::resource)'s: it
    /// gets the URI and the value of every variable ([`ResourceRequest::variables`]). A
    /// [`RequestError::Invalid`] (the values name nothing) is `-32602` with the URI in `data`. A
    /// second template with the same URI template replaces the first; when a URI expands two, the
    /// first by URI template (byte order) reads it. Turns the `resources` capability on.
    #[must_use]
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceContents, RequestError>> + Send + 'static,
    {
        self.catalog.templates.insert(template.entry.uri_template.clone(), (template, boxed(handler)));
        self
    }

    /// Serves `prompt` (listed by `prompts/list`), given by `handler` on each `prompts/get` whose
    /// arguments fit the declaration (checked first: see the [module](crate::catalog)): it gets
    /// the [`PromptRequest`] and returns the messages in order. A second prompt with the same
    /// name replaces the first. Turns the `prompts` capability on.
    #[must_use]
    pub fn prompt<F, Fut>(mut self, prompt: Prompt, handler: F) -> Self
    where
        F: Fn(PromptRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, RequestError>> + Send + 'static,
    {
        self.catalog.prompts.insert(prompt.entry.name.clone(), (prompt, boxed(handler)));
        self
    }

    /// Completes the values of one prompt argument or template variable (`completion/complete`):
    /// `handler` gets what was typed and the other values ([`CompletionRequest`]) and returns the
    /// candidates, best first; the first [`MAX_COMPLETION_VALUES`](crate::MAX_COMPLETION_VALUES)
    /// (100) are sent, with `total`
    /// and `hasMore`. Declare the prompt or template too: a request naming an undeclared one is
    /// `-32602`. A second completion of the same argument replaces the first. Turns the
    /// `completions` capability on.
    #[must_use]
    pub fn completion<F, Fut>(mut self, completes: Completes, handler: F) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, RequestError>> + Send + 'static,
    {
        self.catalog.completions.insert(completes, boxed(handler));
        self
    }
}
