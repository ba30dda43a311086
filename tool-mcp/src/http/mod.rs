//! Streamable HTTP: the tower service ([`McpServer::http_service`]) and a server on an address
//! ([`McpServer::serve_http`]); see the [crate docs](crate#streamable-http).
//!
//! - [`endpoint`]: one request, its checks in the order they run (documented on
//!   `Endpoint::handle`), then rmcp's service or the direct path;
//! - [`direct`]: the stateless `tools/call` answered without rmcp's per-request service;
//! - [`origins`]: the `Origin` allow-list; [`sessions`]: who opened each legacy session;
//! - [`response`]: the endpoint's own answers (refusals, challenges, JSON bodies);
//! - [`connection`]: accepting connections and holding each to the limits.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio_util::sync::CancellationToken;

mod connection;
mod direct;
mod endpoint;
mod origins;
mod response;
mod sessions;

pub use self::connection::{RESERVED_DESCRIPTORS, connection_cap};
use self::direct::Direct;
use self::endpoint::Endpoint;
pub use self::endpoint::HttpService;
use self::origins::Origins;
pub use self::origins::check_allowed_origin;
use self::sessions::{SESSIONS_PRUNED_AT, Sessions};
use crate::errors::ServeError;
use crate::limits::STREAM_LINGER;
use crate::server::McpServer;
use crate::shutdown::shutdown_signal;

/// The path MCP clients assume for a Streamable HTTP endpoint, where [`McpServer::serve_http`]
/// serves: `/mcp`.
pub const MCP_PATH: &str = "/mcp";

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
        let sessions = inner.legacy_sessions.then(|| Sessions::new(manager.clone(), SESSIONS_PRUNED_AT));
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
        let files = connection::descriptor_limit();
        limits.connections = connection_cap(limits.connections, files);
        tracing::info!(
            connections = limits.connections,
            configured = self.inner.limits.connections,
            files,
            "serving at most {} connections at once (the process may open {} files)",
            limits.connections,
            files.map_or_else(|| "any number of".to_owned(), |f| f.to_string())
        );
        let serving = connection::accept(listener, router, limits, stop_accepting.clone());
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
