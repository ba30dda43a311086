//! The errors of serving: why serving stopped, and a request state key too short; and how an
//! error quotes a value a client sent ([`echoed`]). A leaf: it knows no server.

/// The most characters of a client's value (a token's key id or scopes, an input request's key)
/// that an error quotes: 64; a longer one is cut, `...` marking the cut.
pub(crate) const MAX_ECHOED: usize = 64;

/// `value` as an error quotes it: at most [`MAX_ECHOED`] characters, control characters as `?`,
/// so that nothing a client sends makes an error message or a header long.
pub(crate) fn echoed(value: &str) -> String {
    let mut out: String = value.chars().take(MAX_ECHOED).map(|c| if c.is_control() { '?' } else { c }).collect();
    if value.chars().nth(MAX_ECHOED).is_some() {
        out.push_str("...");
    }
    out
}

/// A request state key too short for HMAC-SHA256 ([`McpServerBuilder::request_state_key`](crate::McpServerBuilder::request_state_key)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestStateKeyError {
    /// The key's length in bytes.
    pub bytes: usize,
}

impl std::fmt::Display for RequestStateKeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a request state key needs at least 32 bytes, got {}; give 32 random bytes", self.bytes)
    }
}

impl std::error::Error for RequestStateKeyError {}

/// A task key too short for ChaCha20-Poly1305 ([`McpServerBuilder::task_key`](crate::McpServerBuilder::task_key)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskKeyError {
    /// The key's length in bytes.
    pub bytes: usize,
}

impl std::fmt::Display for TaskKeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a task key needs at least 32 bytes, got {}; give 32 random bytes", self.bytes)
    }
}

impl std::error::Error for TaskKeyError {}

/// Why serving stopped with an error.
///
/// `Debug` writes the same text as `Display`, so a `main` that returns
/// `Result<(), ServeError>` (or a boxed error of it) ends with that sentence, not a dump of the
/// enum: `Error: cannot listen on 127.0.0.1:8080: Address in use (os error 98); give a free local
/// address`.
#[non_exhaustive]
pub enum ServeError {
    /// The client's first messages on standard input were not an MCP initialization.
    Initialize(String),
    /// The address could not be bound (in use, not local, no permission).
    Bind {
        /// The address as given.
        addr: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The service or the HTTP server stopped on an error.
    Stopped(String),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Initialize(e) => write!(f, "the MCP client did not initialize the session: {e}"),
            Self::Bind { addr, source } => write!(f, "cannot listen on {addr}: {source}; give a free local address"),
            Self::Stopped(e) => write!(f, "the MCP server stopped: {e}"),
        }
    }
}

impl std::fmt::Debug for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Bind { source, .. } => Some(source),
            _ => None,
        }
    }
}
