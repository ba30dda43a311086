//! [`ScopedStore`]: a store seen from one scope, the way a tool reads it.

use std::io::Read;
use std::sync::Mutex;

use super::{OutputStore, StoreError, StoredInfo};
use crate::output::scope::OutputScope;
use crate::result::ContentPart;

/// A store seen from one scope: the first read of a ref asks the store whether the ref belongs to
/// the scope ([`OutputStore::check_scope`], which is also the ref's use: a store with a time to
/// live starts it again), so a ref of another scope reads exactly as an unknown one (the same
/// [`StoreError::NotFound`]), and a ref of this scope that the store let go reads as
/// [`StoreError::Expired`], also when it goes between the check and a read. Writes go to the
/// scope of the view.
///
/// A view is made for one tool call: a ref whose check passed is not checked again by the same
/// view (a call that reads a ref's size, a checkpoint and its lines uses it once, and a shared
/// store answers one scope check instead of three). It remembers at most
/// [`ScopedStore::REMEMBERED`] refs; a failed check is never remembered.
pub struct ScopedStore<'a> {
    store: &'a dyn OutputStore,
    scope: OutputScope<'a>,
    /// The refs whose scope check passed in this view.
    checked: Mutex<Vec<String>>,
}

impl Clone for ScopedStore<'_> {
    fn clone(&self) -> Self {
        Self { store: self.store, scope: self.scope, checked: Mutex::new(self.lock_checked().clone()) }
    }
}

impl<'a> ScopedStore<'a> {
    /// How many refs whose check passed a view remembers: 8 (a tool call reads one or two).
    pub const REMEMBERED: usize = 8;

    /// `store` as `scope` sees it.
    pub fn new(store: &'a dyn OutputStore, scope: OutputScope<'a>) -> Self {
        Self { store, scope, checked: Mutex::new(Vec::new()) }
    }

    fn lock_checked(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.checked.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn read<T>(&self, ref_id: &str, read: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        if !self.lock_checked().iter().any(|checked| checked == ref_id) {
            self.store.check_scope(ref_id, self.scope)?;
            let mut checked = self.lock_checked();
            if checked.len() < Self::REMEMBERED {
                checked.push(ref_id.to_owned());
            }
        }
        read().map_err(|e| match e {
            StoreError::NotFound { ref_id } => StoreError::Expired { ref_id, why: super::Expiry::SizeCap },
            other => other,
        })
    }
}

impl std::fmt::Debug for ScopedStore<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopedStore").field("scope", &self.scope).finish_non_exhaustive()
    }
}

impl OutputStore for ScopedStore<'_> {
    fn put_scoped(
        &self,
        _scope: OutputScope<'_>,
        ref_id: &str,
        text: &mut dyn Read,
        parts: &[ContentPart],
    ) -> Result<StoredInfo, StoreError> {
        self.store.put_scoped(self.scope, ref_id, text, parts)
    }

    fn check_scope(&self, ref_id: &str, _scope: OutputScope<'_>) -> Result<(), StoreError> {
        self.store.check_scope(ref_id, self.scope)
    }

    fn info(&self, ref_id: &str) -> Result<StoredInfo, StoreError> {
        self.read(ref_id, || self.store.info(ref_id))
    }

    fn open_at(&self, ref_id: &str, offset: u64) -> Result<Box<dyn Read + Send>, StoreError> {
        self.read(ref_id, || self.store.open_at(ref_id, offset))
    }

    fn checkpoint(&self, ref_id: &str, line: u64) -> Result<(u64, u64), StoreError> {
        self.read(ref_id, || self.store.checkpoint(ref_id, line))
    }

    fn parts(&self, ref_id: &str) -> Result<Vec<ContentPart>, StoreError> {
        self.read(ref_id, || self.store.parts(ref_id))
    }

    fn blocks(&self) -> bool {
        self.store.blocks()
    }
}
