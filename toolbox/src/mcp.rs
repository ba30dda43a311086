//! `toolbox mcp`: the standard tools as an MCP server, a configuration of [`tool_mcp`].
//!
//! - On standard input and output (the default) until the client closes the stream, or on
//!   Streamable HTTP at `http://ADDR/mcp` with `--http ADDR` (stateless; `--allowed-host` widens
//!   the `Host` allow-list, which starts as loopback; `--allow-origin` widens the `Origin`
//!   allow-list, likewise; `--header-timeout-ms` (10 000), `--body-timeout-ms` (30 000),
//!   `--idle-timeout-ms` (60 000) and `--max-connections` (1 024) bound what a client may hold;
//!   `--legacy-sessions` also serves clients that need sessions). The bound address is said on standard error as
//!   `toolbox: serving MCP on http://127.0.0.1:PORT/mcp` (give port 0 for a free one).
//! - SIGTERM or Ctrl-C: no new calls, running calls get `--grace-period-ms` (default 10 000 ms)
//!   to finish, then are cancelled; the process exits 0.
//! - `tools/list`: the tools that may run (see [`crate::policy`]); a call to a tool that is off
//!   gets the policy's refusal.
//! - Every call shares one session id (`--session`, else the root's default), so `todo_new` then
//!   `todo_read` see the same plan, over both transports: the plans live in the state directory,
//!   not in the server.
//! - `--config FILE`: the tools of the servers of an `mcpServers` file are served beside the
//!   standard ones (see [`crate::setup`]); when a server's tools change, the registry is built
//!   again and served (`tool_mcp::McpServer::set_registry`), and clients are told.
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
}

/// A `--allow-origin` value, checked.
fn origin(value: &str) -> Result<String, String> {
    tool_mcp::check_allowed_origin(value).map(|()| value.to_owned())
}

impl HttpFlags {
    fn apply(&self, mut builder: tool_mcp::McpServerBuilder) -> tool_mcp::McpServerBuilder {
        for origin in &self.allow_origin {
            builder = builder.allow_origin(origin.clone());
        }
        builder
            .header_read_timeout(Duration::from_millis(self.header_timeout_ms))
            .request_body_timeout(Duration::from_millis(self.body_timeout_ms))
            .idle_timeout(Duration::from_millis(self.idle_timeout_ms))
            .max_connections(usize::try_from(self.max_connections).unwrap_or(usize::MAX))
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
    /// `--grace-period-ms`.
    pub(crate) grace: Duration,
}

/// Rebuilds the registry each time the tools of a `--config` server change and serves the new one
/// (calls already running finish on the old); a registry that cannot be built is logged and the
/// old one kept. Never returns.
async fn refresh(setup: &Setup, sets: &[String], server: &McpServer) -> std::convert::Infallible {
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
        match tokio::task::block_in_place(|| setup.calling_registry(sets)) {
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
    let runtime = crate::runtime()?;
    setup.connect_imports(&runtime)?;
    let registry = setup.calling_registry(sets)?;
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
        .context(move |_, ctx| Ok(ctx.session_id(session.clone())))
        .legacy_session_mode(serving.legacy_sessions)
        .grace_period(serving.grace);
    for host in &serving.allowed_hosts {
        builder = builder.allow_host(host.clone());
    }
    let server = serving.limits.apply(builder).build();
    let served = runtime.block_on(async {
        let serving_future = async {
            match &serving.http {
                None => server.serve_stdio().await.map_err(|e| e.to_string()),
                Some(addr) => {
                    let listener = tokio::net::TcpListener::bind(addr.as_str())
                        .await
                        .map_err(|e| format!("cannot listen on --http {addr}: {e}; give a free local address"))?;
                    let bound = listener.local_addr().map_err(|e| format!("cannot read the bound address: {e}"))?;
                    // Listening for signals before saying the address: a client may stop the server
                    // as soon as it has read it.
                    let shutdown = tool_mcp::shutdown_signal();
                    eprintln!("toolbox: serving MCP on http://{bound}{}", tool_mcp::MCP_PATH);
                    server.serve_http_on(listener, shutdown).await.map_err(|e| e.to_string())
                }
            }
        };
        let served = tokio::select! {
            served = serving_future => served,
            never = refresh(setup, sets, &server) => match never {},
        };
        setup.close_imports().await;
        served
    });
    // A read of standard input still pending on a blocking thread must not hold the exit.
    runtime.shutdown_background();
    served
}
