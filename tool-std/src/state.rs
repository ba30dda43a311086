//! A program's own state for its tools, typed, in the same stores as the framework's sessions:
//! memory, files in a directory, or a Redis that many server processes share (`--store`).
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use tool_runtime::{DependencyKey, DependencyError, ToolContext, tool};
//! use tool_std::state::{StateError, UserState};
//!
//! #[derive(Default, Serialize, Deserialize)]
//! struct Notes {
//!     lines: Vec<String>,
//! }
//!
//! /// The notes, where `TOOL_STORE` says (`memory` when unset): shared by every call.
//! static NOTES: DependencyKey<UserState<Notes>> = DependencyKey::shared("notes", |_| {
//!     let url = std::env::var("TOOL_STORE").unwrap_or_else(|_| "memory".to_owned());
//!     UserState::open("notes", &url).map_err(|e| DependencyError(e.to_string()))
//! });
//!
//! /// Add a note.
//! #[tool]
//! async fn add_note(ctx: &ToolContext, #[depends(NOTES)] notes: UserState<Notes>, text: String) -> Result<String, StateError> {
//!     let count = notes.update(ctx, "mine", move |n| { n.lines.push(text.clone()); n.lines.len() }).await?;
//!     Ok(format!("{count} notes"))
//! }
//! # fn main() {}
//! ```
//!
//! # The rules, the framework's own
//! - A value is kept under a key within a name (`UserState::open("notes", ..)`), and for the
//!   caller's principal ([`ToolContext::principal`]): two users with the same key never see each
//!   other's value, and the store also refuses a record made for another principal.
//! - The store's time to live and size caps hold (by default 30 days since last use and 64 MiB in
//!   all, `TOOL_SESSION_TTL_SECS` and `TOOL_SESSION_MAX_BYTES`; see [`crate::session`]): a value
//!   not used for that long, or pushed out by newer ones, is gone, and reads as `T::default()`.
//! - Every method is async and runs the store's I/O on the blocking pool, so a tool using it need
//!   not be `blocking`. [`update`](UserState::update) is atomic per key: on Redis a change made at
//!   the same time by another process is never lost (`change` runs again on the newer value).

use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use tool_runtime::{SystemClock, ToolContext};

use crate::session::{FileSessionStore, MemorySessionStore, SessionError, SessionStore, session_limits_from_env};

/// The Redis namespace of user state, beside the sessions' (`--store redis://..`).
pub const STATE_NAMESPACE: &str = "tool-framework:state";

/// The longest key: 256 bytes.
pub const MAX_KEY_BYTES: usize = 256;

/// The key of the value within a record.
const VALUE: &str = "value";

/// Why user state could not be read or written. Nothing was changed when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The name is not 1 to 64 of `A-Z a-z 0-9 _ -`.
    #[error("the state name {name:?} is not 1 to 64 letters, digits, `_` or `-`; give a name such as `notes`")]
    BadName {
        /// The name given.
        name: String,
    },
    /// The key is empty or longer than [`MAX_KEY_BYTES`].
    #[error("the state key is {bytes} bytes; give a key of 1 to 256 bytes")]
    BadKey {
        /// Its length in bytes.
        bytes: usize,
    },
    /// The store URL is none of `memory`, `file:DIR` or `redis://HOST:PORT/DB`.
    #[error("{url:?} is not a state store; use `memory`, `file:DIR` or `redis://HOST:PORT/DB`")]
    BadUrl {
        /// The URL given.
        url: String,
    },
    /// A `redis://` URL in a build without the feature `redis` of `tool-std`.
    #[error("a redis:// state store needs tool-std's feature `redis`; enable it, or use `file:DIR`")]
    NoRedis,
    /// The store could not be opened (the session limits of the environment, a Redis URL).
    #[error("cannot open the state store: {message}")]
    Open {
        /// What failed.
        message: String,
    },
    /// The stored value is not a `T` (the program's type changed since it was written).
    #[error("the stored value of `{key}` does not read as this state's type ({message}); remove it or migrate it")]
    Decode {
        /// The key.
        key: String,
        /// serde's message.
        message: String,
    },
    /// A `T` that does not serialize to JSON.
    #[error("the value of `{key}` does not serialize to JSON: {message}")]
    Encode {
        /// The key.
        key: String,
        /// serde's message.
        message: String,
    },
    /// The store failed (file system, Redis, the caps, another principal's record).
    #[error(transparent)]
    Store(#[from] SessionError),
    /// The blocking task that ran the store's I/O did not finish (the runtime is shutting down).
    #[error("the state store's work was stopped before it finished; try again")]
    Stopped,
}

/// A typed value per key and caller, in a [`SessionStore`] (see the [module docs](self)). Cheap to
/// clone: clones share the store.
pub struct UserState<T> {
    store: Arc<dyn SessionStore>,
    name: Arc<str>,
    kind: PhantomData<fn() -> T>,
}

impl<T> Clone for UserState<T> {
    fn clone(&self) -> Self {
        Self { store: self.store.clone(), name: self.name.clone(), kind: PhantomData }
    }
}

impl<T> std::fmt::Debug for UserState<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserState").field("name", &self.name).field("store", &self.store).finish()
    }
}

impl<T> UserState<T>
where
    T: Serialize + DeserializeOwned + Default + Send + 'static,
{
    /// The state `name` (1 to 64 of `A-Z a-z 0-9 _ -`) in `store`.
    ///
    /// # Errors
    /// [`StateError::BadName`].
    pub fn new(name: &str, store: Arc<dyn SessionStore>) -> Result<Self, StateError> {
        let valid =
            (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            return Err(StateError::BadName { name: name.to_owned() });
        }
        Ok(Self { store, name: Arc::from(name), kind: PhantomData })
    }

    /// The state `name` in the store `url` names, bounded by the session limits of the
    /// environment (`TOOL_SESSION_TTL_SECS`, `TOOL_SESSION_MAX_BYTES`; defaults 30 days and 64 MiB):
    /// `memory` (this process only), `file:DIR` (files in DIR, made on first write), or
    /// `redis://HOST:PORT/DB` (feature `redis`; the Redis `toolbox --store` takes, under
    /// [`STATE_NAMESPACE`]).
    ///
    /// # Errors
    /// [`StateError::BadName`], [`StateError::BadUrl`], [`StateError::NoRedis`],
    /// [`StateError::Open`].
    pub fn open(name: &str, url: &str) -> Result<Self, StateError> {
        let limits = session_limits_from_env().map_err(|message| StateError::Open { message })?;
        let clock = Arc::new(SystemClock);
        let store: Arc<dyn SessionStore> = if url == "memory" {
            Arc::new(MemorySessionStore::with_limits(limits, clock))
        } else if let Some(dir) = url.strip_prefix("file:").filter(|dir| !dir.is_empty()) {
            Arc::new(FileSessionStore::with_limits(dir, limits, clock))
        } else if url.starts_with("redis://") {
            redis_store(url, limits, clock)?
        } else {
            return Err(StateError::BadUrl { url: url.to_owned() });
        };
        Self::new(name, store)
    }

    /// The value of `key` for the caller; `T::default()` when there is none (never written,
    /// removed, or let go by the store's bounds).
    ///
    /// # Errors
    /// [`StateError::BadKey`], [`StateError::Decode`], [`StateError::Store`],
    /// [`StateError::Stopped`].
    pub async fn get(&self, ctx: &ToolContext, key: &str) -> Result<T, StateError> {
        let (id, principal) = self.record(ctx, key)?;
        let store = self.store.clone();
        let key = key.to_owned();
        blocking(move || {
            let meta = match store.load(&id, principal.as_deref()) {
                Ok(meta) => meta,
                Err(SessionError::Expired { .. }) => Default::default(),
                Err(error) => return Err(error.into()),
            };
            read(&key, meta.get(VALUE))
        })
        .await
    }

    /// Changes the value of `key` for the caller (`T::default()` when there is none) with
    /// `change`, saves it, and returns what `change` returned. Atomic per key; `change` may run
    /// more than once, each time on the latest saved value (see the [module docs](self)).
    ///
    /// # Errors
    /// As [`get`](Self::get), and [`StateError::Encode`]; a record over the store's size cap is
    /// [`StateError::Store`]. Nothing is saved then.
    pub async fn update<R>(
        &self,
        ctx: &ToolContext,
        key: &str,
        mut change: impl FnMut(&mut T) -> R + Send + 'static,
    ) -> Result<R, StateError>
    where
        R: Send + 'static,
    {
        let (id, principal) = self.record(ctx, key)?;
        let store = self.store.clone();
        let key = key.to_owned();
        blocking(move || {
            crate::session::modify(&*store, &id, principal.as_deref(), |meta| {
                let mut value: T = read(&key, meta.get(VALUE))?;
                let result = change(&mut value);
                let json = serde_json::to_value(&value)
                    .map_err(|e| StateError::Encode { key: key.clone(), message: e.to_string() })?;
                meta.insert(VALUE.to_owned(), json);
                Ok::<_, StateError>(result)
            })?
        })
        .await
    }

    /// Forgets the value of `key` for the caller. Returns `true` when there was one.
    ///
    /// # Errors
    /// [`StateError::BadKey`], [`StateError::Store`], [`StateError::Stopped`].
    pub async fn remove(&self, ctx: &ToolContext, key: &str) -> Result<bool, StateError> {
        let (id, principal) = self.record(ctx, key)?;
        let store = self.store.clone();
        blocking(move || Ok(store.remove(&id, principal.as_deref())?)).await
    }

    /// The record id of `key` for the caller, and the caller's principal: `<name>/<digest>/<key>`,
    /// the digest the first 16 bytes of SHA-256 of the principal in hex (`-` for none), so that the
    /// id says nothing of who the principal is.
    fn record(&self, ctx: &ToolContext, key: &str) -> Result<(String, Option<String>), StateError> {
        if key.is_empty() || key.len() > MAX_KEY_BYTES {
            return Err(StateError::BadKey { bytes: key.len() });
        }
        let principal = ctx.principal().map(str::to_owned);
        let who = match &principal {
            Some(principal) => Sha256::digest(principal.as_bytes())[..16].iter().map(|b| format!("{b:02x}")).collect(),
            None => "-".to_owned(),
        };
        Ok((format!("state/{}/{who}/{key}", self.name), principal))
    }
}

/// `T` from a record's value (`T::default()` when there is none).
fn read<T: DeserializeOwned + Default>(key: &str, value: Option<&serde_json::Value>) -> Result<T, StateError> {
    match value {
        None => Ok(T::default()),
        Some(value) => {
            T::deserialize(value).map_err(|e| StateError::Decode { key: key.to_owned(), message: e.to_string() })
        }
    }
}

/// Runs `work` on the blocking pool.
async fn blocking<R: Send + 'static>(
    work: impl FnOnce() -> Result<R, StateError> + Send + 'static,
) -> Result<R, StateError> {
    tokio::task::spawn_blocking(work).await.map_err(|_| StateError::Stopped)?
}

#[cfg(feature = "redis")]
fn redis_store(
    url: &str,
    limits: tool_runtime::output::StoreLimits,
    clock: Arc<SystemClock>,
) -> Result<Arc<dyn SessionStore>, StateError> {
    let conn = tool_runtime::redis::RedisConnection::open(url).map_err(|message| StateError::Open { message })?;
    Ok(Arc::new(crate::session::RedisSessionStore::with_limits(conn, STATE_NAMESPACE, limits, clock)))
}

#[cfg(not(feature = "redis"))]
fn redis_store(
    _url: &str,
    _limits: tool_runtime::output::StoreLimits,
    _clock: Arc<SystemClock>,
) -> Result<Arc<dyn SessionStore>, StateError> {
    Err(StateError::NoRedis)
}
