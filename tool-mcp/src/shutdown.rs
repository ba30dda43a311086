//! The shutdown signal of [`McpServer::serve_stdio`](crate::McpServer::serve_stdio) and
//! [`McpServer::serve_http`](crate::McpServer::serve_http). A leaf: it knows no server.

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
