//! Legacy sessions (`Mcp-Session-Id`) bound to the principal that opened them.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::response::ResponseBody;

/// The principal that opened each legacy session (`Mcp-Session-Id`), kept while the session
/// lives: a request naming a session is served only for the same
/// [principal](tool_runtime::ToolContext::principal) (as the request's access token and the
/// context hook give it, none matching none). For any other the session does not exist: `404 Not
/// Found`, the answer rmcp gives for an unknown session, before rmcp reads the request, so no
/// call runs in it, no pending input request of it is answered, and a `DELETE` ends nothing.
pub(super) struct Sessions {
    owners: std::sync::Mutex<std::collections::HashMap<String, Option<String>>>,
    /// rmcp's sessions, asked which ids still live when the map reaches `prune_at`.
    manager: Arc<LocalSessionManager>,
    /// The size at which the ids of ended sessions are dropped (twice the live count after each
    /// prune, at least [`SESSIONS_PRUNED_AT`]).
    prune_at: std::sync::atomic::AtomicUsize,
}

/// The owner map's size at which ended sessions are first dropped from it: 1 024 entries.
pub(super) const SESSIONS_PRUNED_AT: usize = 1024;

/// The header that names a legacy session.
const SESSION_HEADER: &str = "mcp-session-id";

impl Sessions {
    /// No session yet; ended ones are dropped once the map reaches `prune_at` entries.
    pub(super) fn new(manager: Arc<LocalSessionManager>, prune_at: usize) -> Self {
        Self { owners: std::sync::Mutex::default(), manager, prune_at: prune_at.into() }
    }

    /// `true` when the session `id` was opened by `principal`.
    pub(super) fn owned_by(&self, id: &str, principal: Option<&str>) -> bool {
        let owners = self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        owners.get(id).is_some_and(|owner| owner.as_deref() == principal)
    }

    /// Records `principal` as the owner of the new session `id`; drops ended sessions first when
    /// the map is at its pruning size.
    pub(super) async fn opened(&self, id: String, principal: Option<String>) {
        use std::sync::atomic::Ordering;
        let at = self.prune_at.load(Ordering::Relaxed);
        let ids: Vec<String> = {
            let owners = self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if owners.len() < at { Vec::new() } else { owners.keys().cloned().collect() }
        };
        if !ids.is_empty() {
            use rmcp::transport::streamable_http_server::SessionManager as _;
            let mut ended = Vec::new();
            for old in ids {
                if !self.manager.has_session(&old.as_str().into()).await.unwrap_or(false) {
                    ended.push(old);
                }
            }
            let mut owners = self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for old in &ended {
                owners.remove(old);
            }
            self.prune_at.store((owners.len() * 2).max(SESSIONS_PRUNED_AT), Ordering::Relaxed);
        }
        self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id, principal);
    }

    pub(super) fn closed(&self, id: &str) {
        self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(id);
    }
}

/// rmcp's answer to a request naming a session it does not have.
pub(super) fn session_not_found() -> http::Response<ResponseBody> {
    let mut response = http::Response::new(Full::new(Bytes::from_static(b"Not Found: Session not found")).boxed());
    *response.status_mut() = http::StatusCode::NOT_FOUND;
    response
}

/// The session a request names, when it names one as a header value of visible ASCII.
pub(super) fn named_session(headers: &http::HeaderMap) -> Option<&str> {
    headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok())
}
