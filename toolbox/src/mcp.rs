//! `toolbox mcp`: the standard tools as an MCP server, a configuration of [`tool_mcp`].
//!
//! - On standard input and output (the default) until the client closes the stream, or on
//!   Streamable HTTP at `http://ADDR/mcp` with `--http ADDR` (stateless; `--allowed-host` widens
//!   the `Host` allow-list, which starts as loopback; `--allow-origin` widens the `Origin`
//!   allow-list, likewise; `--header-timeout-ms` (10 000), `--body-timeout-ms` (30 000),
//!   `--idle-timeout-ms` (60 000) and `--max-connections` (1 024) bound what a client may hold;
//!   `--legacy-sessions` also serves clients that need sessions). The bound address is said on standard error as
//!   `toolbox: serving MCP on http://127.0.0.1:PORT/mcp` (give port 0 for a free one).
//! - Authorization (`--http` only): with `--auth-issuer URL` the endpoint is an OAuth 2.1 protected
//!   resource (see `tool_mcp::auth`): every request needs an access token of that issuer whose
//!   `aud` is `--auth-audience` (default: `http://ADDR/mcp` of the bound address), its scopes
//!   decide the tools it lists and calls (`--auth-scopes-map`, default
//!   `tools:exec=exec,external;tools:read=read_only;tools:write=*`), and its subject has a session of
//!   its own (the session id followed by `-` and 16 hex digits of the SHA-256 of the subject), so
//!   callers never share a todo plan or a cached output. The audience's host joins the `Host`
//!   allow-list. Binding an address that is not loopback without `--auth-issuer` is refused
//!   unless `--no-auth` is given.
//! - SIGTERM or Ctrl-C: no new calls, running calls get `--grace-period-ms` (default 10 000 ms)
//!   to finish, then are cancelled; the process exits 0.
//! - `tools/list`: the tools that may run (see [`crate::policy`]); a call to a tool that is off
//!   gets the policy's refusal.
//! - Without authorization, every call shares one session id (`--session`, else the root's default), so `todo_new` then
//!   `todo_read` see the same plan, over both transports: the plans live in the state directory,
//!   not in the server.
//! - `--config FILE`: the tools of the servers of an `mcpServers` file are served beside the
//!   standard ones (see [`crate::setup`]); when a server's tools change, the registry is built
//!   again and served (`tool_mcp::McpServer::set_registry`), and clients are told.
//! - `--idempotency`: idempotent retries of calls that carry an idempotency key (see
//!   [`IdempotencyFlags`]).
//! - `--max-input-response-bytes` (1 MiB) bounds the answers of one call to its questions, and
//!   `--max-running-tasks` (16) the tasks one principal runs at once (see [`BoundFlags`]).
//! - `initialize`: the server's name is `toolbox`, its version the crate's; the instructions
//!   name the workspace root the file tools are confined to.
//!
//! Logs go to standard error only (standard output is the protocol stream on stdio).

use std::time::Duration;

use tool_mcp::McpServer;

use crate::setup::Setup;

/// The `toolbox mcp --http` flags of the origins and limits of Streamable HTTP (see
/// [`tool_mcp::McpServerBuilder`] for what each does).
#[derive(Debug, clap::Args)]
pub(crate) struct HttpFlags {
    /// With `--http`: also accept requests whose `Origin` is URL (`https://app.example`,
    /// `http://host:8080`, `:*` for any port, or `null`), beside the loopback origins. Repeat for
    /// more. Requests without `Origin` are always served; other origins get 403 with a JSON-RPC
    /// error (DNS rebinding protection).
    #[arg(long, value_name = "URL", requires = "http", value_parser = origin)]
    pub(crate) allow_origin: Vec<String>,
    /// With `--http`: close a connection whose request line and headers are not all read this
    /// long after their first byte, in milliseconds.
    #[arg(long, value_name = "MS", requires = "http", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) header_timeout_ms: u64,
    /// With `--http`: answer 408 and close the connection when a POST body is not all read this
    /// long after its headers, in milliseconds.
    #[arg(long, value_name = "MS", requires = "http", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) body_timeout_ms: u64,
    /// With `--http`: close a connection with no request in flight for this long, in milliseconds.
    #[arg(long, value_name = "MS", requires = "http", default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) idle_timeout_ms: u64,
    /// With `--http`: keep at most this many connections open; more wait to be accepted.
    #[arg(long, value_name = "N", requires = "http", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_connections: u64,
    /// With `--http`: seal the request state of input-required results (a tool asking its user
    /// or the client's model, MCP 2026-07-28) with the key in FILE (at least 32 bytes, read as
    /// they are), so that every server behind one load balancer opens the others' states
    /// [default: 32 random bytes drawn at start, known to this server alone].
    #[arg(long, value_name = "FILE", requires = "http")]
    pub(crate) request_state_key_file: Option<std::path::PathBuf>,
}

/// The `toolbox mcp` flags of idempotent retries (any transport; the rules:
/// `tool_runtime::idempotency`).
#[derive(Debug, clap::Args)]
pub(crate) struct IdempotencyFlags {
    /// Run each `tools/call` that carries `_meta["tool-framework/idempotency-key"]` (a string of
    /// 1 to 256 bytes) at most once per key, caller and tool: a retry with the same key and
    /// arguments gets the first call's result, on any worker of a `--store redis://` [default:
    /// off; the key is then ignored]. The records live in this process with `--store file`, in
    /// the Redis of `--store redis://` (which needs `--idempotency-key-file`), for 24 hours.
    #[arg(long)]
    pub(crate) idempotency: bool,
    /// With `--idempotency`: the server key (at least 32 bytes, read as they are) the stored
    /// idempotency keys are HMACs under; every worker on one Redis needs the same file [default:
    /// 32 random bytes drawn at start, which only `--store file` accepts].
    #[arg(long, value_name = "FILE", requires = "idempotency")]
    pub(crate) idempotency_key_file: Option<std::path::PathBuf>,
    /// With `--idempotency`: how long a running call holds its key, in milliseconds (a tool's
    /// longer time limit wins). A worker killed mid-call leaves its key held this long: retries
    /// wait for it, then the next one runs the tool again.
    #[arg(long, value_name = "MS", requires = "idempotency", default_value_t = 300_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) idempotency_lease_ms: u64,
    /// With `--idempotency`: how long a retry waits for the first call with its key to end, in
    /// milliseconds, before it is told the call still runs (0 answers at once).
    #[arg(long, value_name = "MS", requires = "idempotency", default_value_t = 30_000)]
    pub(crate) idempotency_wait_ms: u64,
}

impl IdempotencyFlags {
    /// The idempotent retries these flags ask for on `setup`'s store, `None` without
    /// `--idempotency`.
    ///
    /// # Errors
    /// The key file cannot be read or holds fewer than 32 bytes; `--store redis://` without a key
    /// file ([`Setup::idempotency`]).
    fn idempotency(&self, setup: &Setup) -> Result<Option<tool_runtime::idempotency::Idempotency>, String> {
        if !self.idempotency {
            return Ok(None);
        }
        let key = match &self.idempotency_key_file {
            Some(path) => Some(
                std::fs::read(path)
                    .map_err(|e| format!("cannot read --idempotency-key-file {}: {e}", path.display()))?,
            ),
            None => None,
        };
        let idempotency = setup.idempotency(key.as_deref()).map_err(|e| match &self.idempotency_key_file {
            Some(path) => format!("--idempotency-key-file {}: {e}", path.display()),
            None => e,
        })?;
        Ok(Some(
            idempotency
                .lease(Duration::from_millis(self.idempotency_lease_ms))
                .wait(Duration::from_millis(self.idempotency_wait_ms)),
        ))
    }
}

/// The `toolbox mcp` flags of per-call and per-principal bounds (any transport).
#[derive(Debug, clap::Args)]
pub(crate) struct BoundFlags {
    /// How many bytes of JSON the answers of one call to the user's or the client's questions may
    /// hold (input-required results, MCP 2026-07-28); a retry over it is refused with -32602
    /// [default: 1048576 (1 MiB)].
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_input_response_bytes: Option<u64>,
    /// How many tasks (`--task`) of one principal run at once in this process; a task created
    /// past it is refused with -32600 [default: 16].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_running_tasks: Option<u64>,
}

impl BoundFlags {
    /// The builder with the bounds given (the others at the builder's defaults).
    fn apply(&self, mut builder: tool_mcp::McpServerBuilder) -> tool_mcp::McpServerBuilder {
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        if let Some(bytes) = self.max_input_response_bytes {
            builder = builder.max_input_response_bytes(size(bytes));
        }
        if let Some(tasks) = self.max_running_tasks {
            builder = builder.max_running_tasks(size(tasks));
        }
        builder
    }
}

/// The `toolbox mcp --http` flags of authorization.
#[derive(Debug, clap::Args)]
pub(crate) struct AuthFlags {
    /// With `--http`: serve as an OAuth 2.1 protected resource whose access tokens this
    /// authorization server issues (its issuer URL, e.g. `https://login.example`; its metadata and
    /// keys are fetched at start). Requests without a valid token get 401.
    #[arg(long, value_name = "URL", requires = "http")]
    pub(crate) auth_issuer: Option<String>,
    /// With `--auth-issuer`: the URL clients reach this server at, which tokens must name in `aud`
    /// [default: `http://ADDR/mcp` of the bound address].
    #[arg(long, value_name = "URI", requires = "auth_issuer")]
    pub(crate) auth_audience: Option<String>,
    /// With `--auth-issuer`: which scope each tool needs, as `SCOPE=TAG,TAG` rules (the first
    /// naming one of a tool's tags wins) and one `SCOPE=*` for the rest, separated by `;`
    /// [default: `tools:exec=exec,external;tools:read=read_only;tools:write=*`].
    #[arg(long, value_name = "MAP", requires = "auth_issuer", value_parser = tool_mcp::auth::ScopeMap::parse)]
    pub(crate) auth_scopes_map: Option<tool_mcp::auth::ScopeMap>,
    /// With `--auth-issuer`: also accept JWT access tokens typed `JWT` or untyped, for an issuer
    /// that does not type its access tokens `at+jwt` as RFC 9068 asks [default: only `at+jwt`].
    #[arg(long, requires = "auth_issuer")]
    pub(crate) auth_accept_jwt_typ: bool,
    /// With `--http`: serve an address that is not loopback without authentication: anyone who
    /// reaches it can call the tools.
    #[arg(long, requires = "http", conflicts_with = "auth_issuer")]
    pub(crate) no_auth: bool,
}

/// The resource server `auth` asks for on `bound` (`None` without `--auth-issuer`), after the
/// check that a non-loopback address is not served without authentication unless `--no-auth`.
async fn resource_server(
    auth: &AuthFlags,
    bound: std::net::SocketAddr,
) -> Result<Option<tool_mcp::auth::ResourceServer>, String> {
    let Some(issuer) = &auth.auth_issuer else {
        if !bound.ip().is_loopback() && !auth.no_auth {
            return Err(format!(
                "refusing to serve MCP on {bound} without authentication: it is not a loopback address, so anyone who \
                 reaches it could call the tools (with `--allow exec`, run commands on this machine); give \
                 `--auth-issuer URL` (an OAuth authorization server whose tokens name this server in `aud`), bind a \
                 loopback address such as `127.0.0.1:{}`, or give `--no-auth` to serve it unauthenticated anyway",
                bound.port()
            ));
        }
        if auth.no_auth && !bound.ip().is_loopback() {
            eprintln!("toolbox: warning: serving MCP on {bound} without authentication (--no-auth)");
        }
        return Ok(None);
    };
    let audience = match &auth.auth_audience {
        Some(audience) => audience.clone(),
        None if bound.ip().is_unspecified() => {
            return Err(format!(
                "`--http` binds every address ({bound}), so the URL clients reach this server at is not known; give \
                 `--auth-audience URL` (e.g. `https://tools.example/mcp`), the URL tokens must name in `aud`"
            ));
        }
        None => format!("http://{bound}{}", tool_mcp::MCP_PATH),
    };
    let mut builder = tool_mcp::auth::ResourceServer::builder(issuer, audience);
    if let Some(map) = &auth.auth_scopes_map {
        builder = builder.scopes(map.clone());
    }
    builder = builder.accept_jwt_typ(auth.auth_accept_jwt_typ);
    builder.discover().await.map(Some).map_err(|e| format!("--auth-issuer {issuer}: {e}"))
}

/// The session of a caller: `session` itself without authorization, else `session`, `-` and the
/// first 16 lowercase hex digits of the SHA-256 of the token's principal (issuer and subject, with
/// `sub` and `client_id` kept apart: [`tool_mcp::auth::Authenticated::principal`]; a valid session
/// id for any principal, and one of its own for each).
fn caller_session(session: &str, request: &tool_mcp::CallRequest<'_>) -> String {
    use sha2::{Digest, Sha256};
    let who = request.http.and_then(|parts| parts.extensions.get::<tool_mcp::auth::Authenticated>());
    match who {
        None => session.to_owned(),
        Some(who) => {
            let digest = Sha256::digest(who.principal.as_bytes());
            let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
            format!("{session}-{hex}")
        }
    }
}

/// The host (and port, when the URL gives one) of an `http(s)://` URL, for the `Host` allow-list.
fn url_host(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    (!authority.is_empty()).then_some(authority)
}

/// A `--allow-origin` value, checked.
fn origin(value: &str) -> Result<String, String> {
    tool_mcp::check_allowed_origin(value).map(|()| value.to_owned())
}

impl HttpFlags {
    /// The builder with these origins, limits and request state key.
    ///
    /// # Errors
    /// The `--request-state-key-file` cannot be read or holds fewer than 32 bytes.
    fn apply(&self, mut builder: tool_mcp::McpServerBuilder) -> Result<tool_mcp::McpServerBuilder, String> {
        for origin in &self.allow_origin {
            builder = builder.allow_origin(origin.clone());
        }
        if let Some(path) = &self.request_state_key_file {
            let key = std::fs::read(path)
                .map_err(|e| format!("cannot read --request-state-key-file {}: {e}", path.display()))?;
            builder = builder
                .request_state_key(key)
                .map_err(|e| format!("--request-state-key-file {}: {e}", path.display()))?;
        }
        Ok(builder
            .header_read_timeout(Duration::from_millis(self.header_timeout_ms))
            .request_body_timeout(Duration::from_millis(self.body_timeout_ms))
            .idle_timeout(Duration::from_millis(self.idle_timeout_ms))
            .max_connections(usize::try_from(self.max_connections).unwrap_or(usize::MAX)))
    }
}

/// How `toolbox mcp` serves.
#[derive(Debug)]
pub(crate) struct Serving {
    /// `--http ADDR`: Streamable HTTP on this address instead of standard input and output.
    pub(crate) http: Option<String>,
    /// `--allowed-host`: hosts added to the `Host` allow-list.
    pub(crate) allowed_hosts: Vec<String>,
    /// `--legacy-sessions`.
    pub(crate) legacy_sessions: bool,
    /// `--allow-origin` and the HTTP limits.
    pub(crate) limits: HttpFlags,
    /// `--auth-issuer`, `--auth-audience`, `--auth-scopes-map`, `--auth-accept-jwt-typ`, `--no-auth`.
    pub(crate) auth: AuthFlags,
    /// `--grace-period-ms`.
    pub(crate) grace: Duration,
    /// `--task`: the tags whose tools run as MCP tasks.
    pub(crate) task_tags: Vec<String>,
    /// `--task-lease-ms`, `--task-quota-open`, `--task-quota-bytes`.
    pub(crate) tasks: crate::tasks::TaskFlags,
    /// `--max-input-response-bytes`, `--max-running-tasks`.
    pub(crate) bounds: BoundFlags,
    /// `--idempotency` and its key and times.
    pub(crate) idempotency: IdempotencyFlags,
}

/// Rebuilds the registry each time the tools of a `--config` server change and serves the new one
/// (calls already running finish on the old); a registry that cannot be built is logged and the
/// old one kept. Never returns.
async fn refresh(
    setup: &Setup,
    sets: &[String],
    idempotency: Option<&tool_runtime::idempotency::Idempotency>,
    server: &McpServer,
) -> std::convert::Infallible {
    let mut changes = setup.import_changes();
    loop {
        if changes.is_empty() {
            return std::future::pending().await;
        }
        let (changed, index, _) = futures::future::select_all(changes.iter_mut().map(|c| Box::pin(c.changed()))).await;
        if changed.is_err() {
            // That import is gone: nothing more will change there.
            changes.swap_remove(index);
            continue;
        }
        // Opening the output cache reads the disk: off the async workers.
        match tokio::task::block_in_place(|| setup.served_registry(sets, idempotency)) {
            Ok(registry) => {
                tracing::info!(tools = registry.len(), "the tools of an imported MCP server changed; serving them");
                server.set_registry(registry);
            }
            Err(error) => {
                tracing::warn!(%error, "the tools of an imported MCP server changed and cannot be served; keeping the old ones");
            }
        }
    }
}

/// Serves the standard tools of `sets` (all when empty) as `serving` says, until the client closes
/// the stream (stdio), or SIGTERM or Ctrl-C.
///
/// # Errors
/// The root is unusable, the async runtime cannot start, the address cannot be bound, the
/// client's first messages are not an MCP initialization, or the server stops on a transport
/// error.
pub(crate) fn serve(setup: &Setup, sets: &[String], serving: &Serving) -> Result<(), String> {
    let runtime = crate::setup::runtime()?;
    setup.connect_imports(&runtime)?;
    let idempotency = serving.idempotency.idempotency(setup)?;
    let registry = setup.served_registry(sets, idempotency.as_ref())?;
    let instructions = format!(
        "The file tools work inside the workspace {}; give paths relative to it.",
        setup.sandbox()?.root().display()
    );
    let session = setup.session()?;
    let policy = setup.policy().clone();
    let mut builder = McpServer::builder(registry)
        .name("toolbox", env!("CARGO_PKG_VERSION"))
        .instructions(instructions)
        .list_filter(move |definition| policy.refusal(definition).is_none())
        .context(move |request, ctx| Ok(ctx.session_id(caller_session(&session, request))))
        .legacy_session_mode(serving.legacy_sessions)
        .grace_period(serving.grace)
        .task_lease(Duration::from_millis(serving.tasks.task_lease_ms))
        .task_store(crate::tasks::SessionTaskStore::new(
            setup.task_store()?,
            setup.task_quota_store()?,
            serving.tasks.quota(),
        ));
    if serving.tasks.task_runner == crate::tasks::RunnerChoice::Streams && serving.auth.auth_issuer.is_some() {
        return Err("`--task-runner streams` cannot be used with `--auth-issuer` yet: a queued task runs on another \
                    worker without its caller's access token (its session and scopes); use `--task-runner local`"
            .to_owned());
    }
    builder = setup.task_runner(serving.tasks.task_runner, !serving.tasks.no_task_take)?(builder);
    builder = serving.tasks.apply_key(builder)?;
    for tag in &serving.task_tags {
        builder = builder.task_tag(tag.clone());
    }
    for tag in &serving.tasks.task_retry {
        builder = builder.task_retry_tag(tag.clone());
    }
    for host in &serving.allowed_hosts {
        builder = builder.allow_host(host.clone());
    }
    if let Some(host) = serving.auth.auth_audience.as_deref().and_then(url_host) {
        builder = builder.allow_host(host.to_owned());
    }
    let builder = serving.bounds.apply(serving.limits.apply(builder)?);
    let served = runtime.block_on(async {
        let served = async {
            let Some(addr) = &serving.http else {
                let server = builder.build();
                return tokio::select! {
                    served = server.serve_stdio() => served.map_err(|e| e.to_string()),
                    never = refresh(setup, sets, idempotency.as_ref(), &server) => match never {},
                };
            };
            let listener = tokio::net::TcpListener::bind(addr.as_str())
                .await
                .map_err(|e| format!("cannot listen on --http {addr}: {e}; give a free local address"))?;
            let bound = listener.local_addr().map_err(|e| format!("cannot read the bound address: {e}"))?;
            let server = match resource_server(&serving.auth, bound).await? {
                Some(auth) => builder.auth(auth),
                None => builder,
            }
            .build();
            // Listening for signals before saying the address: a client may stop the server as soon
            // as it has read it.
            let shutdown = tool_mcp::shutdown_signal();
            eprintln!("toolbox: serving MCP on http://{bound}{}", tool_mcp::MCP_PATH);
            tokio::select! {
                served = server.serve_http_on(listener, shutdown) => served.map_err(|e| e.to_string()),
                never = refresh(setup, sets, idempotency.as_ref(), &server) => match never {},
            }
        };
        let served = served.await;
        setup.close_imports().await;
        served
    });
    // A read of standard input still pending on a blocking thread must not hold the exit.
    runtime.shutdown_background();
    served
}
