//! Every limit and default of serving, stated once (the builder's methods, the crate docs and
//! the modules link here): message size, the grace period of a shutdown, the HTTP timeouts and
//! connection cap, and the defaults of tasks. A leaf: it knows no server.

use std::time::Duration;

/// The most bytes one JSON-RPC message may take (a line on standard input, a POST body over
/// Streamable HTTP): 16 MiB (16 777 216 bytes), as rmcp's own line transport. A longer line is
/// answered with a parse error (`-32700`) and skipped without being kept in memory, and the
/// stream goes on; a longer POST body gets `413 Payload Too Large`.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// How long running calls may go on after a shutdown begins before they are cancelled: 10 000 ms.
/// Long enough for a typical tool call to finish, well inside the 30 s a container orchestrator
/// (Kubernetes' default `terminationGracePeriodSeconds`) waits before it kills the process.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(10);

/// How long, once every call has answered in a shutdown,
/// [`McpServer::serve_http_on`](crate::McpServer::serve_http_on) lets open
/// response streams end by themselves before it ends them: 1 000 ms. Stateless responses end with
/// their call's answer well within it; a legacy session's event stream would stay open.
pub const STREAM_LINGER: Duration = Duration::from_secs(1);

/// How long a client has, from the first byte of a request, to send the whole request line and
/// headers: 10 000 ms. Past it the connection is closed (no response: the request is not read).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client has, once the headers are read, to send the whole body of a POST: 30 000 ms.
/// Past it the request gets `408 Request Timeout` and the connection is closed.
pub const DEFAULT_REQUEST_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a connection may stay open with no request in flight and no byte received (after it
/// was accepted, or after its last response): 60 000 ms. Past it the connection is closed.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How many connections [`McpServer::serve_http_on`](crate::McpServer::serve_http_on) keeps open
/// at once: 1 024, or fewer when the process may not open that many files
/// ([`connection_cap`](crate::connection_cap)). Every accepted socket counts. When the cap is
/// reached, each new connection closes the connection that has been idle (no request in flight)
/// the longest, so sockets that never send a byte cannot lock a new client out; when every
/// connection has a request in flight, the new one waits in the kernel's listen backlog.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// POST bodies of at least this many bytes (64 KiB) are checked (the transport's check of every
/// message) and, on the
/// endpoint's direct path, parsed into their request on tokio's blocking pool, so that a client
/// sending large bodies never holds an async worker (and every other request waiting on it) for
/// the time a parse takes; smaller bodies are parsed in place, where a trip to the pool would
/// cost more than the parse. A request the endpoint hands to rmcp's own service (not a stateless
/// 2026-07-28 `tools/call`, or one the direct path does not take) is parsed again by rmcp, on the
/// async worker: rmcp's service takes the body's bytes, not a parsed message.
pub const OFF_WORKER_BODY_BYTES: usize = 64 << 10;

/// The HTTP limits of a server (see the `DEFAULT_*` constants).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) header_read: Duration,
    pub(crate) body: Duration,
    pub(crate) idle: Duration,
    pub(crate) connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read: DEFAULT_HEADER_READ_TIMEOUT,
            body: DEFAULT_REQUEST_BODY_TIMEOUT,
            idle: DEFAULT_IDLE_TIMEOUT,
            connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// How long a task is kept from its creation by default: 3 600 000 ms (one hour), sent as
/// `ttlMs`.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(3600);

/// The default cap of a [`MemoryTaskStore`](crate::tasks::MemoryTaskStore) on records: 1 000.
pub const DEFAULT_MAX_TASKS: usize = 1000;

/// The default cap of a [`MemoryTaskStore`](crate::tasks::MemoryTaskStore) on bytes (the records'
/// JSON): 64 MiB.
pub const DEFAULT_MAX_TASK_BYTES: usize = 64 << 20;

/// The default quota of one principal on open tasks (`working` or `input_required`) in a task
/// store: 100 ([`TaskQuota`](crate::tasks::TaskQuota)).
pub const DEFAULT_TASK_QUOTA_OPEN: usize = 100;

/// The default quota of one principal on the bytes of its task records (their JSON) in a task
/// store: 8 MiB ([`TaskQuota`](crate::tasks::TaskQuota)).
pub const DEFAULT_TASK_QUOTA_BYTES: usize = 8 << 20;

/// How long a run's lease on its task lasts unless renewed, by default: 10 s. A run renews it
/// every third of it; a `working` task whose lease lapsed has no live runner (its worker stopped)
/// ([`McpServerBuilder::task_lease`](crate::McpServerBuilder::task_lease)).
pub const DEFAULT_TASK_LEASE: Duration = Duration::from_secs(10);

/// The longest approval preview an import passes on from an upstream server
/// (`preview` of a refused call's `_meta["tool-framework/approval"]`): 65 536 bytes, room for
/// the unified diff of a large edit, before and after its control, bidirectional and zero-width
/// characters are written out (`⟦U+XXXX⟧`). A longer one is not passed on as an approval
/// ([`crate::import`], "Approvals through a gateway"). A preview longer than the import's
/// `inline_result_bytes` is cached as it arrives, like any long string, then read back whole
/// (at most this many bytes) and passed on by the same rule.
#[cfg(feature = "client")]
pub const MAX_APPROVAL_PREVIEW_BYTES: usize = 64 << 10;

/// The most server names an import takes from an upstream's approval request (`servers` of a
/// refused call's `_meta["tool-framework/approval"]`, the servers it came through): 32, room for
/// the longest chain of gateways that approve (`tool_runtime::approvals::MAX_APPROVING_GATEWAYS`,
/// 11) with as many that only forward. More is not passed on as an approval.
#[cfg(feature = "client")]
pub const MAX_APPROVAL_SERVERS: usize = 32;

/// The longest server name an import takes from an upstream's approval request (one of its
/// `servers`): 128 bytes, none of them a control, bidirectional or zero-width character. Longer
/// or other is not passed on as an approval.
#[cfg(feature = "client")]
pub const MAX_APPROVAL_SERVER_NAME_BYTES: usize = 128;

/// The longest approval token (`tool_runtime::approvals::MAX_APPROVAL_TOKEN_BYTES`): 1024 bytes,
/// this framework's own 112-byte token and the 81 bytes each of up to 11 gateways that approve
/// the call too adds (the arithmetic is on the constant). An import passes on from an upstream
/// server (`token` of a refused call's `_meta["tool-framework/approval"]`) only a token of 1 to
/// this many visible ASCII characters (`!` to `~`); a longer or other one is not passed on as an
/// approval. A `tools/call` whose `_meta["tool-framework/approval-token"]` is longer is refused
/// as invalid params.
#[cfg(feature = "client")]
pub use tool_runtime::approvals::MAX_APPROVAL_TOKEN_BYTES;
