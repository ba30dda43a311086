//! Who creates and who waits for registry-scoped values, so that a dependency cycle split across
//! concurrent calls is an error instead of a hang.
//!
//! One resolution path (a top-level `resolve` and the nested ones it makes) never waits for itself:
//! its own chain of keys catches that. Two paths can still wait for each other: call 1 creates the
//! registry-scoped `x`, whose `create` asks for `y`, while call 2 creates `y`, whose `create` asks
//! for `x`. Before a path waits for a value another path is creating, it follows "waits for" and
//! "is created by" links from that path; reaching itself means the wait would never end.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Paths get process-wide unique ids, so a stale id can never be mistaken for a live path.
static NEXT_PATH: AtomicU64 = AtomicU64::new(1);

/// A new resolution path id.
pub(crate) fn new_path() -> u64 {
    NEXT_PATH.fetch_add(1, Ordering::Relaxed)
}

#[derive(Default)]
struct State {
    /// Key being created -> the path creating it.
    creating: HashMap<&'static str, u64>,
    /// Path -> the keys it waits for (more than one when a `create` resolves keys concurrently).
    waiting: HashMap<u64, Vec<&'static str>>,
}

/// The creators and waiters of one registry's values.
#[derive(Default)]
pub(crate) struct Waits {
    state: Mutex<State>,
}

impl Waits {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers that `path` is about to wait for `key`, unless that wait would close a cycle; then
    /// returns the keys of the cycle from `chain` (the path's keys being created, outermost first)
    /// through `key` back to a key of `chain` (`y -> x -> y`).
    ///
    /// The returned guard ends the wait when dropped.
    pub(crate) fn wait(
        self: &Arc<Self>,
        path: u64,
        key: &'static str,
        chain: &[&'static str],
    ) -> Result<WaitGuard, Vec<&'static str>> {
        let mut state = self.lock();
        if let Some(cycle) = find_cycle(&state, path, key, chain) {
            return Err(cycle);
        }
        state.waiting.entry(path).or_default().push(key);
        Ok(WaitGuard { waits: self.clone(), path, key })
    }

    /// Registers that `path` creates `key` (it won the right to); the guard ends it when dropped.
    pub(crate) fn create(self: &Arc<Self>, path: u64, key: &'static str) -> CreateGuard {
        self.lock().creating.insert(key, path);
        CreateGuard { waits: self.clone(), path, key }
    }
}

/// The cycle `path` would close by waiting for `key`, if any.
fn find_cycle(state: &State, path: u64, key: &'static str, chain: &[&'static str]) -> Option<Vec<&'static str>> {
    let mut found = chain.to_vec();
    found.push(key);
    let mut current = key;
    // Each step moves to another key being created; more steps than keys means no new ground.
    for _ in 0..=state.creating.len() {
        let owner = *state.creating.get(current)?;
        if owner == path {
            return chain.contains(&current).then_some(found);
        }
        let next = state.waiting.get(&owner)?.iter().copied().find(|k| state.creating.contains_key(k))?;
        found.push(next);
        if state.creating.get(next) == Some(&path) {
            return Some(found);
        }
        current = next;
    }
    None
}

/// Ends a wait when dropped (also when the waiting call is cancelled).
pub(crate) struct WaitGuard {
    waits: Arc<Waits>,
    path: u64,
    key: &'static str,
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        let mut state = self.waits.lock();
        if let Some(keys) = state.waiting.get_mut(&self.path) {
            if let Some(at) = keys.iter().position(|k| *k == self.key) {
                keys.swap_remove(at);
            }
            if keys.is_empty() {
                state.waiting.remove(&self.path);
            }
        }
    }
}

/// Ends a creation when dropped (also when the creating call is cancelled).
pub(crate) struct CreateGuard {
    waits: Arc<Waits>,
    path: u64,
    key: &'static str,
}

impl Drop for CreateGuard {
    fn drop(&mut self) {
        let mut state = self.waits.lock();
        if state.creating.get(self.key) == Some(&self.path) {
            state.creating.remove(self.key);
        }
    }
}
