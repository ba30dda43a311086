//! [`LocalLocks`]: the places of one process, a FIFO semaphore per key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{LockError, LockGuard, LockStore};

/// The in-process [`LockStore`], the default of every registry: one FIFO semaphore (tokio's, fair:
/// waiters are served in the order they first polled) per key that a call holds or waits for.
///
/// A key's entry is removed when its last holder or waiter is gone, so the table holds at most one
/// entry per running or waiting call and resource (no time to live is needed: nothing outlives its
/// call). Cheap to clone; clones share the table, so registries built with one `LocalLocks` lock
/// each other's resources.
#[derive(Debug, Clone, Default)]
pub struct LocalLocks {
    table: Arc<Mutex<Table>>,
}

type Table = HashMap<String, Arc<Semaphore>>;

impl LocalLocks {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many keys have a holder or a waiter now (for tests and metrics).
    pub fn len(&self) -> usize {
        self.table.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// `true` when no key has a holder or a waiter.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A holder's or waiter's share of a key's entry: its drop removes the entry when it was the last.
struct Slot {
    table: Arc<Mutex<Table>>,
    key: String,
    semaphore: Option<Arc<Semaphore>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        drop(self.semaphore.take());
        // Under the table's lock no one can clone the entry meanwhile: one strong count left is
        // the table's own.
        if table.get(&self.key).is_some_and(|semaphore| Arc::strong_count(semaphore) == 1) {
            table.remove(&self.key);
        }
    }
}

/// A held place: the permit goes back before the slot is dropped (fields drop in order).
struct Held {
    _permit: OwnedSemaphorePermit,
    _slot: Slot,
}

impl LockStore for LocalLocks {
    fn acquire<'a>(&'a self, key: &'a str, permits: u32) -> BoxFuture<'a, Result<LockGuard, LockError>> {
        let semaphore = {
            let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
            let permits = usize::try_from(permits.max(1)).unwrap_or(usize::MAX).min(Semaphore::MAX_PERMITS);
            Arc::clone(table.entry(key.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(permits))))
        };
        let slot =
            Slot { table: Arc::clone(&self.table), key: key.to_owned(), semaphore: Some(Arc::clone(&semaphore)) };
        Box::pin(async move {
            // The semaphore is never closed.
            let permit = semaphore.acquire_owned().await.map_err(|e| LockError { message: e.to_string() })?;
            Ok(LockGuard::new(Held { _permit: permit, _slot: slot }))
        })
    }
}
