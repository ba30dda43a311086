//! [`MemoryStore`]: the output store in the process's memory.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read};
use std::sync::{Arc, Mutex, PoisonError};

use super::limits::{DEFAULT_OUTPUT_LIMITS, MEMORY_ENTRY_OVERHEAD};
use super::lines::{IndexBuilder, checkpoint_of};
use super::{OutputStore, StoreError, StoredInfo, parts_bytes, scope_verdict, validate_ref_id};
use crate::clock::{Clock, SystemClock};
use crate::output::scope::{OutputScope, ScopeKey};
use crate::output::usage::{Lookup, StoreLimits, UsageIndex};
use crate::result::ContentPart;

/// The text of a stored entry, shared with the store (readers outlive a replaced entry).
struct EntryText(Arc<MemoryEntry>);

impl AsRef<[u8]> for EntryText {
    fn as_ref(&self) -> &[u8] {
        &self.0.text
    }
}

/// Outputs in memory, for tests and short-lived processes; lost when dropped. Bounded by its
/// [`StoreLimits`] (default [`DEFAULT_OUTPUT_LIMITS`]): an entry's size is the bytes of its text,
/// its line index and its typed parts (as JSON) and of its scope's ids, plus
/// [`MEMORY_ENTRY_OVERHEAD`].
pub struct MemoryStore {
    state: Mutex<MemoryState>,
    clock: Arc<dyn Clock>,
}

struct MemoryState {
    entries: HashMap<String, Arc<MemoryEntry>>,
    usage: UsageIndex<ScopeKey>,
}

struct MemoryEntry {
    text: Vec<u8>,
    /// See [`IndexBuilder::checkpoints`].
    checkpoints: Vec<u64>,
    info: StoredInfo,
    parts: Vec<ContentPart>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::with_limits(DEFAULT_OUTPUT_LIMITS, Arc::new(SystemClock))
    }
}

impl MemoryStore {
    /// An empty store with [`DEFAULT_OUTPUT_LIMITS`] and the system clock.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store with these limits, reading the time (for last use) from `clock`.
    pub fn with_limits(limits: StoreLimits, clock: Arc<dyn Clock>) -> Self {
        Self { state: Mutex::new(MemoryState { entries: HashMap::new(), usage: UsageIndex::new(limits) }), clock }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The number of stored outputs.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// `true` when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the stored outputs take, as counted against the size cap.
    pub fn total_bytes(&self) -> u64 {
        self.lock().usage.total_bytes()
    }

    fn entry(&self, ref_id: &str) -> Result<Arc<MemoryEntry>, StoreError> {
        validate_ref_id(ref_id)?;
        let now = self.clock.now();
        let mut state = self.lock();
        let (lookup, dropped) = state.usage.lookup(ref_id, now, |_| true);
        let live = matches!(lookup, Lookup::Live(_));
        if let Some(dropped) = dropped {
            state.entries.remove(&dropped.key);
        }
        let entry = if live { state.entries.get(ref_id).cloned() } else { None };
        entry.ok_or_else(|| StoreError::NotFound { ref_id: ref_id.to_owned() })
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore").field("outputs", &self.len()).finish()
    }
}

impl OutputStore for MemoryStore {
    fn put_scoped(
        &self,
        scope: OutputScope<'_>,
        ref_id: &str,
        text: &mut dyn Read,
        parts: &[ContentPart],
    ) -> Result<StoredInfo, StoreError> {
        validate_ref_id(ref_id)?;
        let mut bytes = Vec::new();
        text.read_to_end(&mut bytes).map_err(|e| StoreError::io(ref_id, e))?;
        let mut index = IndexBuilder::new();
        index.feed(&bytes);
        let info = StoredInfo { bytes: index.bytes, lines: index.lines(), parts: parts.len() };
        let owner = ScopeKey::of(scope);
        let size = info.bytes
            + 8 * index.checkpoints.len() as u64
            + parts_bytes(parts)
            + owner.bytes()
            + MEMORY_ENTRY_OVERHEAD;
        let entry = MemoryEntry { text: bytes, checkpoints: index.checkpoints, info, parts: parts.to_vec() };
        let now = self.clock.now();
        let mut state = self.lock();
        state.entries.insert(ref_id.to_owned(), Arc::new(entry));
        for dropped in state.usage.insert(ref_id, size, owner, now, now) {
            state.entries.remove(&dropped.key);
        }
        Ok(info)
    }

    fn check_scope(&self, ref_id: &str, scope: OutputScope<'_>) -> Result<(), StoreError> {
        validate_ref_id(ref_id)?;
        let now = self.clock.now();
        let mut state = self.lock();
        let (lookup, dropped) = state.usage.lookup(ref_id, now, |owner| owner.matches(scope));
        let verdict = scope_verdict(ref_id, &lookup, |o: &ScopeKey| Some(o), scope);
        if let Some(dropped) = dropped {
            state.entries.remove(&dropped.key);
        }
        verdict
    }

    fn info(&self, ref_id: &str) -> Result<StoredInfo, StoreError> {
        Ok(self.entry(ref_id)?.info)
    }

    fn open_at(&self, ref_id: &str, offset: u64) -> Result<Box<dyn Read + Send>, StoreError> {
        let entry = self.entry(ref_id)?;
        let bytes = entry.info.bytes;
        let mut cursor = io::Cursor::new(EntryText(entry));
        cursor.set_position(offset.min(bytes));
        Ok(Box::new(cursor))
    }

    fn checkpoint(&self, ref_id: &str, line: u64) -> Result<(u64, u64), StoreError> {
        Ok(checkpoint_of(&self.entry(ref_id)?.checkpoints, line))
    }

    fn parts(&self, ref_id: &str) -> Result<Vec<ContentPart>, StoreError> {
        Ok(self.entry(ref_id)?.parts.clone())
    }
}
