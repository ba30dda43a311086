//! Sessions in memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tool_runtime::output::{Lookup, StoreLimits, UsageIndex};
use tool_runtime::{Clock, SystemClock};

use super::{
    DEFAULT_SESSION_LIMITS, MEMORY_SESSION_OVERHEAD, SessionError, SessionMeta, SessionStore, check_owner, meta_bytes,
};

/// Sessions kept in memory, lost when the store is dropped. One lock guards every session, so
/// updates are atomic (and serialised across sessions; fine for the small metas tools keep).
///
/// Bounded by its [`StoreLimits`] (default [`DEFAULT_SESSION_LIMITS`]): a session's size is the
/// bytes of its id and of its meta as compact JSON plus [`MEMORY_SESSION_OVERHEAD`]; a session not used (loaded or updated) for
/// longer than the time to live, or the least recently used one while the total is over the cap,
/// is dropped.
pub struct MemorySessionStore {
    state: Mutex<State>,
    clock: Arc<dyn Clock>,
}

struct State {
    sessions: HashMap<String, Saved>,
    /// Keyed by session id; each entry's data is the principal that made the session.
    usage: UsageIndex<Option<String>>,
}

struct Saved {
    meta: SessionMeta,
    principal: Option<String>,
}

impl Default for MemorySessionStore {
    fn default() -> Self {
        Self::with_limits(DEFAULT_SESSION_LIMITS, Arc::new(SystemClock))
    }
}

impl std::fmt::Debug for MemorySessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemorySessionStore").field("usage", &self.lock().usage).finish()
    }
}

impl MemorySessionStore {
    /// An empty store with [`DEFAULT_SESSION_LIMITS`] and the system clock.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store with these limits, reading the time (for last use) from `clock`.
    pub fn with_limits(limits: StoreLimits, clock: Arc<dyn Clock>) -> Self {
        Self { state: Mutex::new(State { sessions: HashMap::new(), usage: UsageIndex::new(limits) }), clock }
    }

    /// The bytes the sessions take, as counted against the size cap.
    pub fn total_bytes(&self) -> u64 {
        self.lock().usage.total_bytes()
    }

    /// The number of sessions held.
    pub fn len(&self) -> usize {
        self.lock().sessions.len()
    }

    /// `true` when no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn check(session_id: &str) -> Result<(), SessionError> {
    if session_id.is_empty() { Err(SessionError::EmptyId) } else { Ok(()) }
}

impl State {
    /// The session's saved meta as `principal` may see it, counting a use: `None` for a session
    /// never saved (or let go: `expired` then says so to its owner).
    fn get(
        &mut self,
        session_id: &str,
        principal: Option<&str>,
        now: std::time::SystemTime,
    ) -> Result<Option<&Saved>, SessionError> {
        let (lookup, dropped) = self.usage.lookup(session_id, now, |owner| owner.as_deref() == principal);
        let gone = match lookup {
            Lookup::Gone(owner, why) if owner.as_deref() == principal => Some(why),
            _ => None,
        };
        if let Some(dropped) = dropped {
            self.sessions.remove(&dropped.key);
        }
        let saved = self.sessions.get(session_id);
        if let Some(saved) = saved {
            check_owner(session_id, saved.principal.as_deref(), principal)?;
        } else if let Some(why) = gone {
            return Err(SessionError::Expired { session_id: session_id.to_owned(), why });
        }
        Ok(saved)
    }
}

impl SessionStore for MemorySessionStore {
    fn load(&self, session_id: &str, principal: Option<&str>) -> Result<SessionMeta, SessionError> {
        check(session_id)?;
        let now = self.clock.now();
        Ok(self.lock().get(session_id, principal, now)?.map(|s| s.meta.clone()).unwrap_or_default())
    }

    fn update(
        &self,
        session_id: &str,
        principal: Option<&str>,
        edit: &mut dyn FnMut(&mut SessionMeta) -> bool,
    ) -> Result<bool, SessionError> {
        check(session_id)?;
        let now = self.clock.now();
        let mut state = self.lock();
        // The one copy `edit` works on; the saved meta stays as it is until the edit is saved.
        let mut meta = match state.get(session_id, principal, now) {
            Ok(saved) => saved.map(|s| s.meta.clone()).unwrap_or_default(),
            // Writing to a session that went starts it again.
            Err(SessionError::Expired { .. }) => SessionMeta::new(),
            Err(e) => return Err(e),
        };
        if !edit(&mut meta) {
            return Ok(false);
        }
        let owner = principal.map(str::to_owned);
        let size = session_id.len() as u64 + meta_bytes(&meta) + MEMORY_SESSION_OVERHEAD;
        state.sessions.insert(session_id.to_owned(), Saved { meta, principal: owner.clone() });
        for dropped in state.usage.insert(session_id, size, owner, now, now) {
            state.sessions.remove(&dropped.key);
        }
        Ok(true)
    }

    fn remove(&self, session_id: &str, principal: Option<&str>) -> Result<bool, SessionError> {
        check(session_id)?;
        let now = self.clock.now();
        let mut state = self.lock();
        match state.get(session_id, principal, now) {
            Ok(Some(_)) => {}
            Ok(None) | Err(SessionError::Expired { .. }) => return Ok(false),
            Err(e) => return Err(e),
        }
        state.usage.forget(session_id);
        Ok(state.sessions.remove(session_id).is_some())
    }
}
