//! Sessions on Redis, shared by many server processes (feature `redis`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tool_runtime::redis::{EntryUse, NewEntry, Published, RedisConnection, RedisEntries, Removed};
use tool_runtime::{Clock, SystemClock};

use super::{DEFAULT_SESSION_LIMITS, SessionError, SessionMeta, SessionStore};
use tool_runtime::output::StoreLimits;

/// The default namespace of [`RedisSessionStore`] (see `tool_runtime::redis` for its keys).
pub const SESSION_NAMESPACE: &str = "tool:sess";

/// Bytes a [`RedisSessionStore`] counts for each session beside its id, owner and meta: its keys
/// and its slots in the bookkeeping (an estimate of Redis's memory for them).
pub const REDIS_SESSION_OVERHEAD: u64 = 256;

/// How many times an update reads and tries again when another process saved the session
/// between its read and its write: 256 (each round, one of the contenders wins, so 50
/// concurrent updates of one session need at most 50).
pub const MAX_UPDATE_ATTEMPTS: usize = 256;

/// Sessions in Redis, under the rules of [`FileSessionStore`](super::FileSessionStore): a
/// session belongs to the principal that first saved it, and is bounded by [`StoreLimits`]
/// (default [`DEFAULT_SESSION_LIMITS`]: time to live since last use on its key, a size cap with
/// the least recently used out first; its size is its meta's JSON, its id and its owner, plus
/// [`REDIS_SESSION_OVERHEAD`]).
///
/// Updates are atomic across processes by compare-and-set: [`SessionStore::update`] reads the
/// session and its revision, applies the edit, and a Lua script saves it only when the revision
/// is still the one read; otherwise it reads again and calls the edit again with the newer meta,
/// up to [`MAX_UPDATE_ATTEMPTS`] times. (`WATCH`/`MULTI` would need a connection of its own per
/// update; the store's one multiplexed connection serves every call.) The meta is kept as its
/// JSON in the session's hash.
#[derive(Debug, Clone)]
pub struct RedisSessionStore {
    entries: RedisEntries,
}

/// What the hash keeps of a session beside its owner.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    meta: SessionMeta,
}

impl RedisSessionStore {
    /// A store on `conn` in [`SESSION_NAMESPACE`] with [`DEFAULT_SESSION_LIMITS`] and the system
    /// clock.
    pub fn new(conn: RedisConnection) -> Self {
        Self::with_limits(conn, SESSION_NAMESPACE, DEFAULT_SESSION_LIMITS, Arc::new(SystemClock))
    }

    /// A store on `conn` in `namespace`, bounded by `limits`, its last uses read from `clock`.
    pub fn with_limits(conn: RedisConnection, namespace: &str, limits: StoreLimits, clock: Arc<dyn Clock>) -> Self {
        Self { entries: RedisEntries::new(conn, namespace, limits, clock) }
    }

    /// The bookkeeping (for its counts).
    pub fn entries(&self) -> &RedisEntries {
        &self.entries
    }

    fn failed(&self, error: &dyn std::fmt::Display) -> SessionError {
        SessionError::Store { message: self.entries.failure("session store", error) }
    }

    /// The session's meta and revision for `owner` (0 and the empty meta for none).
    fn read(&self, session_id: &str, owner: &str) -> Result<Option<(u64, SessionMeta)>, SessionError> {
        match self.entries.use_entry(session_id, owner).map_err(|e| self.failed(&e))? {
            EntryUse::Live(entry) => {
                let stored: Stored = serde_json::from_slice(&entry.data).map_err(|e| SessionError::Corrupt {
                    path: format!("{} session `{session_id}`", self.entries.connection().url()),
                    message: e.to_string(),
                })?;
                Ok(Some((entry.rev, stored.meta)))
            }
            EntryUse::OtherOwner => Err(SessionError::OtherPrincipal { session_id: session_id.to_owned() }),
            EntryUse::Gone(why) => Err(SessionError::Expired { session_id: session_id.to_owned(), why }),
            EntryUse::Unknown => Ok(None),
        }
    }
}

/// The owner string of a principal: its JSON (`null` for none), so that no principal reads as
/// another.
fn owner_of(principal: Option<&str>) -> String {
    serde_json::to_string(&principal).unwrap_or_default()
}

impl SessionStore for RedisSessionStore {
    fn load(&self, session_id: &str, principal: Option<&str>) -> Result<SessionMeta, SessionError> {
        if session_id.is_empty() {
            return Err(SessionError::EmptyId);
        }
        Ok(self.read(session_id, &owner_of(principal))?.map(|(_, meta)| meta).unwrap_or_default())
    }

    fn update(
        &self,
        session_id: &str,
        principal: Option<&str>,
        edit: &mut dyn FnMut(&mut SessionMeta) -> bool,
    ) -> Result<bool, SessionError> {
        if session_id.is_empty() {
            return Err(SessionError::EmptyId);
        }
        let owner = owner_of(principal);
        for _ in 0..MAX_UPDATE_ATTEMPTS {
            let (rev, mut meta) = match self.read(session_id, &owner) {
                Ok(found) => found.unwrap_or_default(),
                // A session let go starts again.
                Err(SessionError::Expired { .. }) => (0, SessionMeta::new()),
                Err(e) => return Err(e),
            };
            if !edit(&mut meta) {
                return Ok(false);
            }
            let stored = Stored { meta };
            let data = serde_json::to_vec(&stored).map_err(|e| SessionError::Corrupt {
                path: format!("{} session `{session_id}`", self.entries.connection().url()),
                message: format!("the meta cannot be written as JSON: {e}"),
            })?;
            let size = data.len() as u64 + session_id.len() as u64 + owner.len() as u64 + REDIS_SESSION_OVERHEAD;
            let entry = NewEntry {
                owner: &owner,
                generation: "",
                subs: 0,
                size,
                data: &data,
                expect_rev: Some(rev),
                same_owner_only: true,
            };
            match self.entries.publish(session_id, &entry).map_err(|e| self.failed(&e))? {
                Published::Saved { .. } => return Ok(true),
                Published::Conflict => {}
                Published::OtherOwner => {
                    return Err(SessionError::OtherPrincipal { session_id: session_id.to_owned() });
                }
            }
        }
        Err(SessionError::Store {
            message: format!(
                "session `{session_id}` was changed by others {MAX_UPDATE_ATTEMPTS} times while this update was \
                 being saved; nothing was saved, try again"
            ),
        })
    }

    fn remove(&self, session_id: &str, principal: Option<&str>) -> Result<bool, SessionError> {
        if session_id.is_empty() {
            return Err(SessionError::EmptyId);
        }
        match self.entries.remove(session_id, &owner_of(principal)).map_err(|e| self.failed(&e))? {
            Removed::Removed => Ok(true),
            Removed::Nothing => Ok(false),
            Removed::OtherOwner => Err(SessionError::OtherPrincipal { session_id: session_id.to_owned() }),
        }
    }
}
