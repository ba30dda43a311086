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
//! - `RedisSessionStore` (feature `redis`): sessions in a Redis shared by many server processes,
//!   with the same rules; it lives here beside the [`SessionStore`] trait, on the connection and
//!   bookkeeping of `tool_runtime::redis`.
//!
//! [`SESSION_STORE`] is the store the standard tools use: by default one [`FileSessionStore`]
//! per registry in [`default_sessions_dir`]. Calls whose context has no session id cannot be
//! resumed, so their state is kept in memory for the registry's lifetime instead and never
//! written to disk (see [`session_store_for`]).
//!
//! Updates are read-modify-write steps ([`SessionStore::update`]): two concurrent updates of one
//! session never lose either change.
//!
//! A session belongs to the principal that made it (`ToolContext::principal` of the call that
//! first saved it; none when the server knows none): any other caller using its id is refused
//! ([`SessionError::OtherPrincipal`]), and cannot read, change or remove it.
//!
//! Both stores are bounded ([`StoreLimits`], default [`DEFAULT_SESSION_LIMITS`], overridden by
//! `TOOL_SESSION_TTL_SECS` and `TOOL_SESSION_MAX_BYTES` for [`SESSION_STORE`]'s default): a
//! session not used for longer than the time to live is dropped, and while the sessions together
//! are over the size cap the least recently used ones are. Loading a session that was dropped
//! says so to its owner ([`SessionError::Expired`]); saving to it starts it again.

mod file;
mod memory;
#[cfg(feature = "redis")]
mod redis;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tool_runtime::output::{Expiry, StoreLimits, limits_from_env};
use tool_runtime::{DependencyError, DependencyKey, SystemClock, ToolContext, ToolError};

pub use file::{FileSessionStore, SESSION_FORMAT_VERSION, STATE_DIR_ENV, SessionFile, default_sessions_dir};
pub use memory::MemorySessionStore;
#[cfg(feature = "redis")]
pub use redis::{MAX_UPDATE_ATTEMPTS, REDIS_SESSION_OVERHEAD, RedisSessionStore, SESSION_NAMESPACE};

/// The metadata of one session: a JSON object whose keys belong to the tools that wrote them
/// (`todos` for the todo tools). A session never written is the empty object.
pub type SessionMeta = serde_json::Map<String, serde_json::Value>;

/// The key the todo tools keep their list under in [`SessionMeta`].
pub const TODOS_KEY: &str = "todos";

/// The time to live of a session by default: 30 days since last use. A plan is resumed over days
/// (a task put down on Friday and taken up again on Monday, or after a holiday), and a session
/// takes little room.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// The size cap of a session store by default: 64 MiB (67,108,864 bytes) of session metas. A
/// todo plan is a few KiB, and what the todo tools keep for retries (records of their 64 latest
/// changes and the answers of the 8 latest, see `tool_std::todo`) a few tens of KiB more at most,
/// so this holds thousands of sessions.
pub const DEFAULT_SESSION_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The default limits of a session store: [`DEFAULT_SESSION_TTL`] and [`DEFAULT_SESSION_MAX_BYTES`].
pub const DEFAULT_SESSION_LIMITS: StoreLimits = StoreLimits::new(DEFAULT_SESSION_TTL, DEFAULT_SESSION_MAX_BYTES);

/// The environment variable overriding [`DEFAULT_SESSION_TTL`], in whole seconds.
pub const SESSION_TTL_ENV: &str = "TOOL_SESSION_TTL_SECS";

/// The environment variable overriding [`DEFAULT_SESSION_MAX_BYTES`], in bytes.
pub const SESSION_MAX_BYTES_ENV: &str = "TOOL_SESSION_MAX_BYTES";

/// [`DEFAULT_SESSION_LIMITS`] with `TOOL_SESSION_TTL_SECS` and `TOOL_SESSION_MAX_BYTES` applied.
///
/// # Errors
/// A message naming the variable when one is set but not a positive integer.
pub fn session_limits_from_env() -> Result<StoreLimits, String> {
    limits_from_env(DEFAULT_SESSION_LIMITS, SESSION_TTL_ENV, SESSION_MAX_BYTES_ENV)
}

/// Bytes a [`MemorySessionStore`] counts for each session beside its id and meta: its slots in
/// the store's map and usage index (an estimate of their memory), so that a cap bounds many small
/// sessions too.
pub const MEMORY_SESSION_OVERHEAD: u64 = 256;

/// Bytes a [`FileSessionStore`] counts for each session beside its file's: the file's disk block
/// (4 KiB on common file systems) and its slot in the usage index, so that a cap bounds many small
/// sessions too (64 MiB holds at most 16,384 sessions).
pub const FILE_SESSION_OVERHEAD: u64 = 4096;

/// The bytes of a meta as counted against a size cap: its compact JSON.
pub(crate) fn meta_bytes(meta: &SessionMeta) -> u64 {
    /// Counts the bytes written to it, keeping none.
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, meta).map_or(0, |()| count.0)
}

/// `Ok` when `caller` may use a session made by `owner` (the same principal, or both none).
pub(crate) fn check_owner(session_id: &str, owner: Option<&str>, caller: Option<&str>) -> Result<(), SessionError> {
    if owner == caller { Ok(()) } else { Err(SessionError::OtherPrincipal { session_id: session_id.to_owned() }) }
}

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
    /// The session was made by another principal (or by a caller without one, or this caller has
    /// none): it is not this caller's to use.
    #[error(
        "session `{session_id}` cannot be used by this caller: it belongs to another principal; use a session id of \
         your own"
    )]
    OtherPrincipal {
        /// The session id given.
        session_id: String,
    },
    /// The session was dropped by the store's bounds (see the [module docs](self)).
    #[error("session `{session_id}` is no longer kept ({why}); its state is gone, and saving to it starts it again")]
    Expired {
        /// The session id given.
        session_id: String,
        /// Why it went.
        why: Expiry,
    },
    /// A shared store (Redis) failed or could not be reached; the message names it and what to
    /// check.
    #[error("{message}")]
    Store {
        /// What failed, where, and what to check.
        message: String,
    },
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
/// Implementations must make [`update`](Self::update) atomic per session: the meta saved is the
/// result of `edit` on the latest saved one, and no other update of that session is saved between
/// the read and the write (a store may lock, or retry on a conflict). Methods block (file or database I/O); async callers run them with
/// `tokio::task::spawn_blocking`, as the standard tools do.
///
/// `principal` is the caller's ([`ToolContext::principal`]): the first save of a session records
/// it, and every later call must give the same one (else [`SessionError::OtherPrincipal`]).
pub trait SessionStore: Send + Sync + fmt::Debug {
    /// The session's meta; the empty object for a session never written.
    ///
    /// # Errors
    /// [`SessionError::OtherPrincipal`]; [`SessionError::Expired`] for a session of this principal
    /// that the store let go (as far as it remembers); a [`SessionError`] when the stored state
    /// cannot be read.
    fn load(&self, session_id: &str, principal: Option<&str>) -> Result<SessionMeta, SessionError>;

    /// One read-modify-write step. `edit` is called with a copy of the current meta (the empty
    /// object for a session never written or let go); when it returns `true` the copy is saved,
    /// when it returns `false` nothing is written. A store that locks the session calls it once;
    /// one that saves by compare-and-set (the Redis store) calls it again, on a fresh
    /// copy of the newer meta, each time another process saved first. Returns `true` when the edit
    /// was saved, `false` when `edit` returned `false` (nothing was written).
    ///
    /// # Errors
    /// [`SessionError::OtherPrincipal`] (`edit` is not called); a [`SessionError`] when the state
    /// cannot be read or written; nothing is saved then.
    fn update(
        &self,
        session_id: &str,
        principal: Option<&str>,
        edit: &mut dyn FnMut(&mut SessionMeta) -> bool,
    ) -> Result<bool, SessionError>;

    /// Forgets the session. Returns `true` when there was something to forget.
    ///
    /// # Errors
    /// [`SessionError::OtherPrincipal`]; a [`SessionError`] when the stored state cannot be removed.
    fn remove(&self, session_id: &str, principal: Option<&str>) -> Result<bool, SessionError>;
}

/// Runs `change` on the session's meta as one [`SessionStore::update`]: the meta is saved when
/// `change` returns `Ok`, and nothing is written when it returns `Err`, whatever it changed in the
/// meta before. `change` may run more than once (see [`SessionStore::update`]): the result is the
/// last run's.
///
/// # Errors
/// The outer `Err` is the store's failure; the inner result is `change`'s.
pub fn modify<T, E>(
    store: &dyn SessionStore,
    session_id: &str,
    principal: Option<&str>,
    mut change: impl FnMut(&mut SessionMeta) -> Result<T, E>,
) -> Result<Result<T, E>, SessionError> {
    let mut outcome = None;
    store.update(session_id, principal, &mut |meta| {
        let result = change(meta);
        let save = result.is_ok();
        outcome = Some(result);
        save
    })?;
    outcome.ok_or(SessionError::EditNotApplied)
}

/// The session store of the standard tools, one per registry
/// ([`Scope::Registry`](tool_runtime::Scope::Registry)): by default a [`FileSessionStore`] in
/// [`default_sessions_dir`] (created on first use; the error [`SessionError::NoStateDir`] when
/// there is no such directory). Override it to keep sessions elsewhere:
///
/// ```
/// use std::sync::Arc;
/// use tool_std::session::{MemorySessionStore, SESSION_STORE, SessionStore};
///
/// let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
/// let builder = tool_std::registry_builder().override_dependency(&SESSION_STORE, store);
/// # let _ = builder;
/// ```
pub static SESSION_STORE: DependencyKey<Arc<dyn SessionStore>> = DependencyKey::shared("session_store", default_store);

fn default_store(_ctx: &ToolContext) -> Result<Arc<dyn SessionStore>, DependencyError> {
    let dir = default_sessions_dir().map_err(|e| DependencyError(e.to_string()))?;
    let limits = session_limits_from_env().map_err(DependencyError)?;
    Ok(Arc::new(FileSessionStore::with_limits(dir, limits, Arc::new(SystemClock))))
}

/// Where calls without a session id keep their state: memory, per registry.
static UNNAMED_SESSIONS: DependencyKey<Arc<dyn SessionStore>> =
    DependencyKey::shared("unnamed_session_store", unnamed_store);

fn unnamed_store(_ctx: &ToolContext) -> Result<Arc<dyn SessionStore>, DependencyError> {
    Ok(Arc::new(MemorySessionStore::new()))
}

/// The session id used for calls whose context has none.
pub const UNNAMED_SESSION: &str = "default";

/// A call's session: the store it lives in, its id, and the caller's principal.
#[derive(Debug, Clone)]
pub struct CallSession {
    /// The store.
    pub store: Arc<dyn SessionStore>,
    /// The session id.
    pub id: String,
    /// The caller's principal ([`ToolContext::principal`]).
    pub principal: Option<String>,
}

impl CallSession {
    /// [`SessionStore::load`] of this session.
    ///
    /// # Errors
    /// As [`SessionStore::load`].
    pub fn load(&self) -> Result<SessionMeta, SessionError> {
        self.store.load(&self.id, self.principal.as_deref())
    }

    /// [`modify`] of this session.
    ///
    /// # Errors
    /// As [`modify`].
    pub fn modify<T, E>(
        &self,
        change: impl FnMut(&mut SessionMeta) -> Result<T, E>,
    ) -> Result<Result<T, E>, SessionError> {
        modify(&*self.store, &self.id, self.principal.as_deref(), change)
    }
}

/// The session a call's state lives in: [`SESSION_STORE`] and the context's session id when it
/// has one; otherwise an in-memory store of the registry and [`UNNAMED_SESSION`], so that state of
/// calls that cannot be resumed is never written to disk. The principal is the context's in both.
///
/// # Errors
/// A dependency error when [`SESSION_STORE`] cannot be created.
pub async fn session_store_for(ctx: &ToolContext) -> Result<CallSession, ToolError> {
    let principal = ctx.principal().map(str::to_owned);
    match ctx.session_id() {
        Some(id) => Ok(CallSession { store: ctx.resolve(&SESSION_STORE).await?, id: id.to_owned(), principal }),
        None => {
            Ok(CallSession { store: ctx.resolve(&UNNAMED_SESSIONS).await?, id: UNNAMED_SESSION.to_owned(), principal })
        }
    }
}
