//! Accepting connections and serving each with hyper's HTTP/1.1, held to the builder's limits
//! (the header-read and idle timeouts, the connection cap).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Body;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::limits::Limits;

/// How many file descriptors [`connection_cap`] keeps for everything but client connections (the
/// listener, stores, logs, the shell's pipes and the files tools open): 64, and an eighth of the
/// limit above 512.
pub const RESERVED_DESCRIPTORS: u64 = 64;

/// The connection cap [`McpServer::serve_http_on`](crate::McpServer::serve_http_on) uses:
/// `configured` (at least 1), lowered to keep it below the process's file-descriptor limit `files`
/// (its soft `RLIMIT_NOFILE`), less [`RESERVED_DESCRIPTORS`] (and an eighth of what is above
/// 512), never below 1. With `ulimit -n 256` and the default cap that is 192.
pub fn connection_cap(configured: usize, files: Option<u64>) -> usize {
    let configured = configured.max(1);
    let Some(files) = files else { return configured };
    let reserved = RESERVED_DESCRIPTORS + files.saturating_sub(512) / 8;
    let room = usize::try_from(files.saturating_sub(reserved)).unwrap_or(usize::MAX).max(1);
    configured.min(room)
}

/// The process's file-descriptor limit, after raising the soft limit to the hard one (as a server
/// that holds many sockets should); `None` when it is unlimited or cannot be read.
pub(super) fn descriptor_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = rustix::process::Rlimit { current: limit.maximum, maximum: limit.maximum };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            limit = raised;
        }
    }
    limit.current
}

/// The open connections, each with its activity and the token that closes it when it is idle and
/// a new connection needs its place ([`DEFAULT_MAX_CONNECTIONS`](crate::DEFAULT_MAX_CONNECTIONS)).
#[derive(Default)]
struct Open {
    next: std::sync::atomic::AtomicU64,
    connections: std::sync::Mutex<std::collections::HashMap<u64, (watch::Receiver<Activity>, CancellationToken)>>,
}

impl Open {
    /// Registers a connection; it is forgotten when the returned guard drops.
    fn register(self: &Arc<Self>, activity: watch::Receiver<Activity>, evict: CancellationToken) -> Registered {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.connections.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id, (activity, evict));
        Registered { open: self.clone(), id }
    }

    /// Closes the connection idle the longest (none when every one has a request in flight).
    fn evict_longest_idle(&self) {
        let mut connections = self.connections.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let longest = connections
            .iter()
            .filter_map(|(id, (activity, _))| {
                let activity = *activity.borrow();
                (activity.in_flight == 0).then_some((activity.idle_since, *id))
            })
            .min();
        if let Some((_, id)) = longest
            && let Some((_, evict)) = connections.remove(&id)
        {
            evict.cancel();
        }
    }
}

/// A connection's place in [`Open`], given back on drop.
struct Registered {
    open: Arc<Open>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.open.connections.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.id);
    }
}

/// Accepts connections while fewer than `limits.connections` are open, until `stop` is
/// cancelled; then asks every connection to close after its request and waits until all have. At
/// the cap, each new connection first closes the one idle the longest ([`Open`]).
pub(super) async fn accept(listener: TcpListener, router: axum::Router, limits: Limits, stop: CancellationToken) {
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.connections.max(1)));
    let connections = TaskTracker::new();
    let open = Arc::new(Open::default());
    loop {
        // The place first, so that every accepted socket is within the cap.
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                open.evict_longest_idle();
                tokio::select! {
                    permit = permits.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                    () = stop.cancelled() => break,
                }
            }
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => break,
        };
        match accepted {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                connections.spawn(connection(stream, router.clone(), limits, stop.clone(), (permit, open.clone())));
            }
            Err(error) => {
                // Out of file descriptors, or a connection reset before it was accepted: wait a
                // little, as a busy loop would not help.
                tracing::warn!(%error, "cannot accept a connection");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    () = stop.cancelled() => break,
                }
            }
        }
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// What a connection has done, watched by [`slow_head`].
#[derive(Debug, Clone, Copy)]
struct Activity {
    /// Requests whose head was read and whose response body is not yet sent.
    in_flight: usize,
    /// Reads that gave bytes.
    reads: u64,
    /// `reads` when the connection last became idle (no request in flight; 0 at its start): a
    /// read past it is the start of the next request head. Kept here, not by the watcher, so that
    /// bytes read before the watcher first looks still start the clock.
    reads_when_idle: u64,
    /// When the connection last became idle (or was accepted).
    idle_since: std::time::Instant,
}

impl Default for Activity {
    fn default() -> Self {
        Self { in_flight: 0, reads: 0, reads_when_idle: 0, idle_since: std::time::Instant::now() }
    }
}

/// Serves one connection with hyper's HTTP/1.1: its `header_read_timeout` (which starts when the
/// connection waits for a request head: after it was accepted and after each response) is the idle
/// timeout; [`slow_head`] closes it when a head that began does not end within the header-read
/// timeout; [`Open`] closes it when it is idle and a new connection needs its place.
async fn connection(
    stream: tokio::net::TcpStream,
    router: axum::Router,
    limits: Limits,
    stop: CancellationToken,
    (_permit, open): (tokio::sync::OwnedSemaphorePermit, Arc<Open>),
) {
    let (activity, watching) = watch::channel(Activity::default());
    let evict = CancellationToken::new();
    let _registered = open.register(watching.clone(), evict.clone());
    let activity = Arc::new(activity);
    let io = hyper_util::rt::TokioIo::new(Watched { io: stream, activity: activity.clone() });
    let service = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
        let guard = InFlight::begin(activity.clone());
        let mut router = router.clone();
        async move {
            let response = match tower_service::Service::call(&mut router, request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok::<_, Infallible>(response.map(|body| Tracked { body, _guard: guard }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(limits.idle);
    let conn = builder.serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    let watchdog = slow_head(watching, limits.header_read);
    let mut watchdog = std::pin::pin!(watchdog);
    let mut stopping = false;
    loop {
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(error) = served {
                    tracing::debug!(%error, "an HTTP connection ended");
                }
                return;
            }
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
            () = &mut watchdog => {
                tracing::debug!(ms = limits.header_read.as_millis(), "closing a connection whose request head did not arrive in time");
                return;
            }
            () = evict.cancelled(), if !stopping => {
                // Idle when chosen; a request that began since ends first.
                tracing::debug!("closing an idle connection: a new connection needs its place");
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Completes when bytes of a request head arrived while no request was in flight and the head was
/// not complete `timeout` later.
async fn slow_head(mut activity: watch::Receiver<Activity>, timeout: Duration) {
    loop {
        // Idle, and the first bytes of the next request head have come: they start the clock.
        if activity.wait_for(|a| a.in_flight == 0 && a.reads != a.reads_when_idle).await.is_err() {
            return std::future::pending().await;
        }
        let head = tokio::time::timeout(timeout, async { activity.wait_for(|a| a.in_flight > 0).await.is_ok() });
        match head.await {
            Err(_) => return,
            Ok(true) => {}
            Ok(false) => return std::future::pending().await,
        }
    }
}

/// Counts a request in flight until dropped (with its response body).
struct InFlight(Arc<watch::Sender<Activity>>);

impl InFlight {
    fn begin(activity: Arc<watch::Sender<Activity>>) -> Self {
        activity.send_modify(|a| a.in_flight += 1);
        Self(activity)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.send_modify(|a| {
            a.in_flight -= 1;
            if a.in_flight == 0 {
                a.reads_when_idle = a.reads;
                a.idle_since = std::time::Instant::now();
            }
        });
    }
}

/// A response body that keeps its request in flight until it is sent (or dropped).
struct Tracked {
    body: axum::body::Body,
    _guard: InFlight,
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// A TCP stream that counts the reads that give bytes.
struct Watched {
    io: tokio::net::TcpStream,
    activity: Arc<watch::Sender<Activity>>,
}

impl tokio::io::AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.send_modify(|a| a.reads += 1);
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
