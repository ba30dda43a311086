//! Session state: a JSON object of metadata per session id, kept by a [`SessionStore`].
//!
//! Tools keep what must survive between calls (and between runs) in the meta of the call's
//! session, under a key of their own: the todo tools use `todos`. A session is named by
//! `ToolContext::session_id`; a store hands back the same meta for the same id, which is how a
//! resumed session gets its state back.
//!
//! - [`MemorySessionStore`]: in memory, gone when the process ends.
//! - [`FileSessionStore`]: one JSON file per session in a directory (by default the user's state
//!   directory, see [`default_sessions_dir`]); writes are atomic and every file carries a format
//!   `version`.
//!
//! [`SESSION_STORE`] is the store the standard tools use: by default one [`FileSessionStore`]
//! per registry in [`default_sessions_dir`]. Calls whose context has no session id cannot be
//! resumed, so their state is kept in memory for the registry's lifetime instead and never
//! written to disk (see [`session_store_for`]).
//!
//! Updates are read-modify-write steps ([`SessionStore::update`]): two concurrent updates of one
//! session never lose either change.

mod file;
mod memory;

use std::fmt;
use std::sync::Arc;

use tool_runtime::{DependencyError, DependencyKey, Scope, ToolContext, ToolError};

pub use file::{FileSessionStore, SESSION_FORMAT_VERSION, STATE_DIR_ENV, SessionFile, default_sessions_dir};
pub use memory::MemorySessionStore;

/// The metadata of one session: a JSON object whose keys belong to the tools that wrote them
/// (`todos` for the todo tools). A session never written is the empty object.
pub type SessionMeta = serde_json::Map<String, serde_json::Value>;

/// The key the todo tools keep their list under in [`SessionMeta`].
pub const TODOS_KEY: &str = "todos";

/// Why a session could not be read or written. Nothing was changed when one of these is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The session id is empty.
    #[error("the session id is empty; give the context a non-empty session id")]
    EmptyId,
    /// No directory for session files could be found.
    #[error(
        "cannot find a directory for session files (no user state directory; is HOME set?); set {STATE_DIR_ENV} \
         or override SESSION_STORE"
    )]
    NoStateDir,
    /// The file system refused a read, a write or a lock.
    #[error("cannot {action} session file {path}: {message}")]
    Io {
        /// `read`, `write`, `lock` or `remove`.
        action: &'static str,
        /// The file or directory.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A session file does not hold a session of this format.
    #[error("session file {path} is damaged: {message}; repair or delete it")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// A store returned from [`SessionStore::update`] without calling `edit` (a broken store).
    #[error("the session store did not apply the change; nothing was saved")]
    EditNotApplied,
    /// A session file was written by a newer format.
    #[error(
        "session file {path} has format version {found}, this build reads version {supported}; use a newer build \
         or another state directory"
    )]
    UnsupportedVersion {
        /// The file.
        path: String,
        /// The file's `version`.
        found: u64,
        /// [`SESSION_FORMAT_VERSION`].
        supported: u32,
    },
}

/// Where session metadata is kept.
///
/// Implementations must make [`update`](Self::update) atomic per session: the meta `edit` sees is
/// the latest saved one, and no other update of that session is saved between the read and the
/// write. Methods block (file or database I/O); async callers run them with
/// `tokio::task::spawn_blocking`, as the standard tools do.
pub trait SessionStore: Send + Sync + fmt::Debug {
    /// The session's meta; the empty object for a session never written.
    ///
    /// # Errors
    /// A [`SessionError`] when the stored state cannot be read.
    fn load(&self, session_id: &str) -> Result<SessionMeta, SessionError>;

    /// One read-modify-write step. `edit` is called exactly once with a copy of the current meta;
    /// when it returns `true` the copy is saved, when it returns `false` nothing is written.
    /// Returns the meta as stored afterwards.
    ///
    /// # Errors
    /// A [`SessionError`] when the state cannot be read or written; nothing is saved then.
    fn update(
        &self,
        session_id: &str,
        edit: &mut dyn FnMut(&mut SessionMeta) -> bool,
    ) -> Result<SessionMeta, SessionError>;

    /// Forgets the session. Returns `true` when there was something to forget.
    ///
    /// # Errors
    /// A [`SessionError`] when the stored state cannot be removed.
    fn remove(&self, session_id: &str) -> Result<bool, SessionError>;
}

/// Runs `change` on the session's meta as one [`SessionStore::update`]: the meta is saved when
/// `change` returns `Ok`, and nothing is written when it returns `Err`, whatever it changed in the
/// meta before.
///
/// # Errors
/// The outer `Err` is the store's failure; the inner result is `change`'s.
pub fn modify<T, E>(
    store: &dyn SessionStore,
    session_id: &str,
    change: impl FnOnce(&mut SessionMeta) -> Result<T, E>,
) -> Result<Result<T, E>, SessionError> {
    let mut change = Some(change);
    let mut outcome = None;
    store.update(session_id, &mut |meta| {
        let Some(change) = change.take() else { return false };
        let result = change(meta);
        let save = result.is_ok();
        outcome = Some(result);
        save
    })?;
    outcome.ok_or(SessionError::EditNotApplied)
}

/// The session store of the standard tools, one per registry ([`Scope::Registry`]): by default a
/// [`FileSessionStore`] in [`default_sessions_dir`] (created on first use; the error
/// [`SessionError::NoStateDir`] when there is no such directory). Override it to keep sessions
/// elsewhere:
///
/// ```
/// use std::sync::Arc;
/// use tool_std::session::{MemorySessionStore, SESSION_STORE, SessionStore};
///
/// let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
/// let builder = tool_std::registry_builder().override_dependency(&SESSION_STORE, store);
/// # let _ = builder;
/// ```
pub static SESSION_STORE: DependencyKey<Arc<dyn SessionStore>> =
    DependencyKey::new("session_store", default_store).with_scope(Scope::Registry);

fn default_store(_ctx: &ToolContext) -> Result<Arc<dyn SessionStore>, DependencyError> {
    let dir = default_sessions_dir().map_err(|e| DependencyError(e.to_string()))?;
    Ok(Arc::new(FileSessionStore::new(dir)))
}

/// Where calls without a session id keep their state: memory, per registry.
static UNNAMED_SESSIONS: DependencyKey<Arc<dyn SessionStore>> =
    DependencyKey::new("unnamed_session_store", unnamed_store).with_scope(Scope::Registry);

fn unnamed_store(_ctx: &ToolContext) -> Result<Arc<dyn SessionStore>, DependencyError> {
    Ok(Arc::new(MemorySessionStore::new()))
}

/// The session id used for calls whose context has none.
pub const UNNAMED_SESSION: &str = "default";

/// The store and session id a call's state lives in: [`SESSION_STORE`] and the context's session
/// id when it has one; otherwise an in-memory store of the registry and [`UNNAMED_SESSION`], so
/// that state of calls that cannot be resumed is never written to disk.
///
/// # Errors
/// A dependency error when [`SESSION_STORE`] cannot be created.
pub async fn session_store_for(ctx: &ToolContext) -> Result<(Arc<dyn SessionStore>, String), ToolError> {
    match ctx.session_id() {
        Some(id) => Ok((ctx.resolve(&SESSION_STORE).await?, id.to_owned())),
        None => Ok((ctx.resolve(&UNNAMED_SESSIONS).await?, UNNAMED_SESSION.to_owned())),
    }
}
