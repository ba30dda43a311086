//! `toolbox mcp`: the standard tools as an MCP server, a configuration of [`tool_mcp`].
//!
//! - On standard input and output (the default) until the client closes the stream, or on
//!   Streamable HTTP at `http://ADDR/mcp` with `--http ADDR` (stateless; `--allowed-host` widens
//!   the `Host` allow-list, which starts as loopback; `--legacy-sessions` also serves clients
//!   that need sessions). The bound address is said on standard error as
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

/// How `toolbox mcp` serves.
#[derive(Debug, Default)]
pub(crate) struct Serving {
    /// `--http ADDR`: Streamable HTTP on this address instead of standard input and output.
    pub(crate) http: Option<String>,
    /// `--allowed-host`: hosts added to the `Host` allow-list.
    pub(crate) allowed_hosts: Vec<String>,
    /// `--legacy-sessions`.
    pub(crate) legacy_sessions: bool,
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
    let server = builder.build();
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
