//! Where todo lists live between calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tool_runtime::{DependencyError, DependencyKey, Scope, ToolContext};

use super::item::TodoItem;

/// The session key used when the call's context has no session id.
pub const DEFAULT_SESSION: &str = "default";

/// The todo lists of every session, in memory, keyed by session id. Shared by all calls of one
/// registry through [`TODO_STORE`]; lost when the process ends.
#[derive(Debug, Default)]
pub struct TodoStore {
    sessions: Mutex<HashMap<String, Vec<TodoItem>>>,
}

impl TodoStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The session's plan, in order (empty when the session has none).
    pub fn get(&self, session: &str) -> Vec<TodoItem> {
        self.lock().get(session).cloned().unwrap_or_default()
    }

    /// Replaces the session's plan.
    pub fn replace(&self, session: &str, items: Vec<TodoItem>) {
        self.lock().insert(session.to_owned(), items);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<TodoItem>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The todo store: one in-memory [`TodoStore`] per registry ([`Scope::Registry`]). Override it
/// (`RegistryBuilder::override_dependency(&TODO_STORE, store)`) to share one store between
/// registries or to look into it from the application.
pub static TODO_STORE: DependencyKey<Arc<TodoStore>> =
    DependencyKey::new("todo_store", new_store).with_scope(Scope::Registry);

fn new_store(_ctx: &ToolContext) -> Result<Arc<TodoStore>, DependencyError> {
    Ok(Arc::new(TodoStore::new()))
}

/// The key of the call's session in the store: its session id, or [`DEFAULT_SESSION`].
pub fn session_key(ctx: &ToolContext) -> &str {
    ctx.session_id().unwrap_or(DEFAULT_SESSION)
}
