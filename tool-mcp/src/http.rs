//! Streamable HTTP: the tower service, and a server on an address (see the
//! [crate docs](crate#streamable-http)).

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio_util::sync::CancellationToken;

use crate::{McpServer, ServeError, shutdown_signal};

/// The path MCP clients assume for a Streamable HTTP endpoint, where [`McpServer::serve_http`]
/// serves: `/mcp`.
pub const MCP_PATH: &str = "/mcp";

/// How long, once every call has answered in a shutdown, [`McpServer::serve_http_on`] lets open
/// response streams end by themselves before it ends them: 1 000 ms. Stateless responses end with
/// their call's answer well within it; a legacy session's event stream would stay open.
pub const STREAM_LINGER: Duration = Duration::from_secs(1);

/// The tower service of [`McpServer::http_service`]: rmcp's Streamable HTTP service over this
/// server. It answers every path it is given (mount it at [`MCP_PATH`]) and is `Clone`.
pub type HttpService = StreamableHttpService<McpServer, LocalSessionManager>;

impl McpServer {
    /// The Streamable HTTP endpoint as a tower service (`http::Request` in, `http::Response`
    /// out), configured as the builder says (stateless unless legacy sessions are on, plain JSON
    /// responses for calls that send no notification, the `Host` allow-list). Mount it in your
    /// own server:
    ///
    /// - axum: `axum::Router::new().route_service("/mcp", server.http_service())`, then serve the
    ///   router as usual; your own layers (authentication, tracing, limits) wrap it, and what they
    ///   put in the request's extensions reaches the [context hook](crate::McpServerBuilder::context)
    ///   through [`CallRequest::http`](crate::CallRequest::http).
    /// - hyper: wrap it in `hyper_util::service::TowerToHyperService` and serve each connection
    ///   with it.
    ///
    /// On shutdown call [`McpServer::drain`], then stop your server.
    pub fn http_service(&self) -> HttpService {
        self.http_service_with(CancellationToken::new())
    }

    /// As [`McpServer::http_service`]; cancelling `streams` ends every response stream still open.
    fn http_service_with(&self, streams: CancellationToken) -> HttpService {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(self.inner.legacy_sessions)
            .with_json_response(true)
            .with_allowed_hosts(self.inner.allowed_hosts.clone())
            .with_cancellation_token(streams);
        let server = self.clone();
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(LocalSessionManager::default()), config)
    }

    /// Serves Streamable HTTP at [`MCP_PATH`] on `addr` (e.g. `127.0.0.1:8080`) until SIGTERM or
    /// Ctrl-C ([`shutdown_signal`]; then as the [crate docs](crate#shutdown) say). Other paths get
    /// `404 Not Found`.
    ///
    /// # Errors
    /// [`ServeError::Bind`] when the address cannot be bound; [`ServeError::Stopped`] when the
    /// HTTP server fails.
    pub async fn serve_http(&self, addr: impl ToSocketAddrs + std::fmt::Display) -> Result<(), ServeError> {
        let listener =
            TcpListener::bind(&addr).await.map_err(|source| ServeError::Bind { addr: addr.to_string(), source })?;
        self.serve_http_on(listener, shutdown_signal()).await
    }

    /// As [`McpServer::serve_http`], on a listener already bound (bind `127.0.0.1:0` to get a
    /// free port, and read it from `listener.local_addr()`), shutting down when `shutdown`
    /// completes: the listener stops accepting at once, open connections finish their requests,
    /// running calls get the grace period ([`McpServer::drain`]), and the event streams still open
    /// [`STREAM_LINGER`] (1 000 ms) after the last call answered are ended.
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
        let router = axum::Router::new().route_service(MCP_PATH, self.http_service_with(streams.clone()));
        let stop_accepting = CancellationToken::new();
        let serving = axum::serve(listener, router).with_graceful_shutdown(stop_accepting.clone().cancelled_owned());
        let mut serving = std::pin::pin!(std::future::IntoFuture::into_future(serving));
        tokio::select! {
            result = &mut serving => return result.map_err(|e| ServeError::Stopped(e.to_string())),
            () = shutdown => {}
        }
        tracing::info!("shutting down: no new connections");
        stop_accepting.cancel();
        let closed = CancellationToken::new();
        let serving = async {
            let result = serving.await;
            closed.cancel();
            result
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
        let (result, ()) = tokio::join!(serving, drain);
        result.map_err(|e| ServeError::Stopped(e.to_string()))
    }
}
