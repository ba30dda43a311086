//! Sessions in memory.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{SessionError, SessionMeta, SessionStore};

/// Sessions kept in memory, lost when the store is dropped. One lock guards every session, so
/// updates are atomic (and serialised across sessions; fine for the small metas tools keep).
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    sessions: Mutex<HashMap<String, SessionMeta>>,
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, SessionMeta>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn check(session_id: &str) -> Result<(), SessionError> {
    if session_id.is_empty() { Err(SessionError::EmptyId) } else { Ok(()) }
}

impl SessionStore for MemorySessionStore {
    fn load(&self, session_id: &str) -> Result<SessionMeta, SessionError> {
        check(session_id)?;
        Ok(self.lock().get(session_id).cloned().unwrap_or_default())
    }

    fn update(
        &self,
        session_id: &str,
        edit: &mut dyn FnMut(&mut SessionMeta) -> bool,
    ) -> Result<SessionMeta, SessionError> {
        check(session_id)?;
        let mut sessions = self.lock();
        let mut meta = sessions.get(session_id).cloned().unwrap_or_default();
        if edit(&mut meta) {
            sessions.insert(session_id.to_owned(), meta.clone());
            Ok(meta)
        } else {
            Ok(sessions.get(session_id).cloned().unwrap_or_default())
        }
    }

    fn remove(&self, session_id: &str) -> Result<bool, SessionError> {
        check(session_id)?;
        Ok(self.lock().remove(session_id).is_some())
    }
}
