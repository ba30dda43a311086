//! The output cache store: every tool message's text (and typed parts) under a ref id.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
#[cfg(feature = "file-store")]
use std::{
    fs::File,
    io::{Seek, SeekFrom, Write},
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
    time::SystemTime,
};

use super::scope::{OutputScope, ScopeKey};
#[cfg(feature = "file-store")]
use super::usage::Dropped;
use super::usage::{Expiry, Lookup, StoreLimits, UsageIndex};
use crate::clock::{Clock, SystemClock};
use crate::context::ToolContext;
use crate::depends::DependencyKey;
use crate::error::DependencyError;
use crate::result::ContentPart;

/// Every this many lines the store records where a line starts, so that reading line N skips at most
/// this many lines from the nearest record instead of reading from the start.
pub const CHECKPOINT_LINES: u64 = 1024;

/// The longest ref id, in bytes (ASCII).
pub const MAX_REF_ID_LEN: usize = 128;

/// What the store knows about one stored output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredInfo {
    /// Bytes of the text.
    pub bytes: u64,
    /// Lines of the text, split at `\n`; one final `\n` does not start another line, `""` has 0.
    pub lines: u64,
    /// Number of typed parts (images, documents) stored beside the text.
    pub parts: usize,
}

/// Why the store could not serve a request. The text says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No output is stored under this id for the reader's scope: the id is unknown, or it belongs
    /// to another session or principal (the two read the same).
    #[error(
        "no tool output is cached under ref_id `{ref_id}` in this session; use the ref_id of a tool result of \
         this session"
    )]
    NotFound {
        /// The id asked for.
        ref_id: String,
    },
    /// The output was stored in the reader's scope but the store let it go (its time to live
    /// passed, or it was evicted for the size cap).
    #[error("the tool output under ref_id `{ref_id}` is no longer cached ({why}); call the tool again to get it")]
    Expired {
        /// The id asked for.
        ref_id: String,
        /// Why it went.
        why: Expiry,
    },
    /// The id has characters outside `[A-Za-z0-9_-]`, is empty or too long.
    #[error(
        "ref_id `{ref_id}` is not valid: use 1 to 128 of the characters A-Z a-z 0-9 _ - (the ref_id of a tool result)"
    )]
    InvalidRefId {
        /// The id as given.
        ref_id: String,
    },
    /// A line number at or past the end.
    #[error("line {line} is past the end of ref_id `{ref_id}`, which has {lines} lines")]
    LinePastEnd {
        /// The id.
        ref_id: String,
        /// The 1-based line asked for.
        line: u64,
        /// The number of lines stored.
        lines: u64,
    },
    /// Reading or writing failed.
    #[error("the output cache failed for ref_id `{ref_id}`: {message}")]
    Io {
        /// The id.
        ref_id: String,
        /// The I/O error, with the path when there is one.
        message: String,
    },
}

impl StoreError {
    fn io(ref_id: &str, what: impl fmt::Display) -> Self {
        Self::Io { ref_id: ref_id.to_owned(), message: what.to_string() }
    }
}

/// Checks a ref id: 1 to 128 ASCII characters of `[A-Za-z0-9_-]`.
///
/// # Errors
/// [`StoreError::InvalidRefId`] otherwise.
pub fn validate_ref_id(ref_id: &str) -> Result<(), StoreError> {
    let ok = !ref_id.is_empty()
        && ref_id.len() <= MAX_REF_ID_LEN
        && ref_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok { Ok(()) } else { Err(StoreError::InvalidRefId { ref_id: ref_id.to_owned() }) }
}

/// Where tool outputs are kept, by ref id. Implementations: [`MemoryStore`] (tests, short-lived
/// processes; the default without the cargo feature `file-store`) and `FileStore` (with it, the
/// default: files in the user's cache directory). A store shared
/// by many agent workers implements the same five methods.
///
/// The text is UTF-8 bytes; lines are split at `\n` (see [`StoredInfo::lines`]). Line numbers in
/// this trait are 0-based. Readers stream: nothing here needs the whole text in memory.
///
/// The reads below ([`info`](OutputStore::info), [`open_at`](OutputStore::open_at), ...) do not
/// look at scopes: readers on behalf of a caller go through a [`ScopedStore`](super::ScopedStore), which checks
/// [`check_scope`](OutputStore::check_scope) first.
pub trait OutputStore: Send + Sync {
    /// Stores the text read from `text` (to its end) and the typed `parts` under `ref_id`, made in
    /// `scope`, replacing what was stored under it. A reader sees the old or the new output, never a
    /// mix (a `FileStore` reader may see [`StoreError::NotFound`] for the instant between the
    /// two). The store may then let other outputs go to stay within its limits (least recently used
    /// first), never this one for its size.
    ///
    /// # Errors
    /// [`StoreError::InvalidRefId`], or [`StoreError::Io`] when reading `text` or writing fails
    /// (nothing is then published).
    fn put_scoped(
        &self,
        scope: OutputScope<'_>,
        ref_id: &str,
        text: &mut dyn Read,
        parts: &[ContentPart],
    ) -> Result<StoredInfo, StoreError>;

    /// [`OutputStore::put_scoped`] in [`OutputScope::NONE`] (no session, no principal).
    ///
    /// # Errors
    /// As [`OutputStore::put_scoped`].
    fn put(&self, ref_id: &str, text: &mut dyn Read, parts: &[ContentPart]) -> Result<StoredInfo, StoreError> {
        self.put_scoped(OutputScope::NONE, ref_id, text, parts)
    }

    /// `Ok` when an output made in `scope` is stored under `ref_id` (it then counts as used).
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when nothing is stored under it or what is stored was made in
    /// another scope: the two must not be told apart. [`StoreError::Expired`] when an output of
    /// `scope` was stored under it and was let go (as far as the store remembers; after that, not
    /// found). [`StoreError::InvalidRefId`], [`StoreError::Io`].
    fn check_scope(&self, ref_id: &str, scope: OutputScope<'_>) -> Result<(), StoreError>;

    /// What is stored under `ref_id`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::InvalidRefId`], [`StoreError::Io`].
    fn info(&self, ref_id: &str) -> Result<StoredInfo, StoreError>;

    /// The text from byte `offset` (0-based) to its end.
    ///
    /// # Errors
    /// As [`OutputStore::info`].
    fn open_at(&self, ref_id: &str, offset: u64) -> Result<Box<dyn Read + Send>, StoreError>;

    /// The nearest recorded line start at or before 0-based `line`: `(that line, its byte offset)`.
    ///
    /// # Errors
    /// As [`OutputStore::info`].
    fn checkpoint(&self, ref_id: &str, line: u64) -> Result<(u64, u64), StoreError>;

    /// The typed parts stored with the text, in order (empty when there were none).
    ///
    /// # Errors
    /// As [`OutputStore::info`].
    fn parts(&self, ref_id: &str) -> Result<Vec<ContentPart>, StoreError>;

    /// `true` when the store's methods do work that waits (disk, network): the registry's output
    /// layer then calls [`put`](OutputStore::put) from tokio's blocking pool instead of the thread
    /// that polls the call (the serving rule: no call holds an async worker thread). Default
    /// `false`, for a store in memory; `FileStore` answers `true`, and a store that wraps
    /// another should answer as the wrapped one does.
    fn blocks(&self) -> bool {
        false
    }
}

impl fmt::Debug for dyn OutputStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dyn OutputStore")
    }
}

/// Stores `text` (a string already in memory) and `parts` under `ref_id`.
///
/// # Errors
/// As [`OutputStore::put`].
pub fn put_text(
    store: &dyn OutputStore,
    ref_id: &str,
    text: &str,
    parts: &[ContentPart],
) -> Result<StoredInfo, StoreError> {
    store.put(ref_id, &mut text.as_bytes(), parts)
}

/// A cursor over the lines of a stored output, from 0-based `line` on ([`open_lines`]).
pub struct LineCursor {
    reader: Box<dyn BufRead + Send>,
    next: u64,
    ref_id: String,
}

impl fmt::Debug for LineCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineCursor").field("ref_id", &self.ref_id).field("next", &self.next).finish()
    }
}

/// The beginning of one line, as read by [`LineCursor::next_line`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinePrefix {
    /// The 0-based line number.
    pub line: u64,
    /// At most the asked number of bytes of the line (no `\n`), cut back to a character boundary;
    /// invalid UTF-8 shows as U+FFFD.
    pub text: String,
    /// Bytes of the whole line (no `\n`).
    pub len: u64,
}

/// A cursor at the start of 0-based `line`: it seeks to the nearest checkpoint and skips at most
/// [`CHECKPOINT_LINES`] lines, streaming.
///
/// # Errors
/// [`StoreError::LinePastEnd`] (with the 1-based line) when `line` is not below the line count, and
/// the errors of [`OutputStore::info`]. [`StoreError::Io`] when the text ends before `line` although
/// the line count says it is there (a damaged store, or an output replaced while it was opened).
pub fn open_lines(store: &dyn OutputStore, ref_id: &str, line: u64) -> Result<LineCursor, StoreError> {
    let info = store.info(ref_id)?;
    if line >= info.lines && !(line == 0 && info.lines == 0) {
        return Err(StoreError::LinePastEnd {
            ref_id: ref_id.to_owned(),
            line: line.saturating_add(1),
            lines: info.lines,
        });
    }
    let (at, offset) = store.checkpoint(ref_id, line)?;
    let reader = BufReader::with_capacity(64 * 1024, store.open_at(ref_id, offset)?);
    let mut cursor = LineCursor { reader: Box::new(reader), next: at, ref_id: ref_id.to_owned() };
    while cursor.next < line {
        // At the end of the text the cursor stays where it is: stop there, not loop.
        if !cursor.skip_line().map_err(|e| StoreError::io(ref_id, e))? {
            return Err(StoreError::io(
                ref_id,
                format_args!(
                    "its text ends before line {} of the {} lines its index counts: it is damaged or was replaced; call the tool again",
                    line + 1,
                    info.lines
                ),
            ));
        }
    }
    Ok(cursor)
}

impl LineCursor {
    /// The 0-based number of the line the cursor is at.
    pub fn position(&self) -> u64 {
        self.next
    }

    /// Streams the next line's bytes (without its `\n`) to `chunk`, in pieces; `false` at the end.
    ///
    /// # Errors
    /// The read error.
    pub fn stream_line(&mut self, mut chunk: impl FnMut(&[u8])) -> io::Result<bool> {
        let mut any = false;
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                if any {
                    self.next += 1;
                }
                return Ok(any);
            }
            any = true;
            match memchr::memchr(b'\n', buf) {
                Some(i) => {
                    chunk(&buf[..i]);
                    self.reader.consume(i + 1);
                    self.next += 1;
                    return Ok(true);
                }
                None => {
                    let n = buf.len();
                    chunk(buf);
                    self.reader.consume(n);
                }
            }
        }
    }

    /// Skips the next line; `false` at the end.
    ///
    /// # Errors
    /// The read error.
    pub fn skip_line(&mut self) -> io::Result<bool> {
        self.stream_line(|_| {})
    }

    /// The next line, keeping at most `keep` bytes of it; `None` at the end.
    ///
    /// # Errors
    /// The read error.
    pub fn next_line(&mut self, keep: usize) -> io::Result<Option<LinePrefix>> {
        let line = self.next;
        let mut kept: Vec<u8> = Vec::new();
        let mut len = 0u64;
        let found = self.stream_line(|piece| {
            len += piece.len() as u64;
            let room = keep.saturating_sub(kept.len());
            kept.extend_from_slice(&piece[..room.min(piece.len())]);
        })?;
        if !found {
            return Ok(None);
        }
        if (kept.len() as u64) < len {
            // Cut back to a character boundary: drop a trailing incomplete character.
            if let Err(e) = std::str::from_utf8(&kept)
                && e.error_len().is_none()
            {
                kept.truncate(e.valid_up_to());
            }
        }
        Ok(Some(LinePrefix { line, text: String::from_utf8_lossy(&kept).into_owned(), len }))
    }
}

/// Builds the line count and the checkpoints while the text streams in.
#[derive(Debug, Default)]
pub(crate) struct IndexBuilder {
    pub(crate) bytes: u64,
    newlines: u64,
    last: Option<u8>,
    /// The byte offsets of the checkpoints after the first (line 0 at byte 0, implied): a text
    /// shorter than [`CHECKPOINT_LINES`] lines, most of them, needs no allocation here.
    pub(crate) checkpoints: Vec<u64>,
}

impl IndexBuilder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        for i in memchr::memchr_iter(b'\n', chunk) {
            self.newlines += 1;
            if self.newlines.is_multiple_of(CHECKPOINT_LINES) {
                self.checkpoints.push(self.bytes + i as u64 + 1);
            }
        }
        self.bytes += chunk.len() as u64;
        if let Some(&b) = chunk.last() {
            self.last = Some(b);
        }
    }

    pub(crate) fn lines(&self) -> u64 {
        self.newlines + u64::from(self.last.is_some_and(|b| b != b'\n'))
    }
}

/// The checkpoint at or before 0-based `line`: `(its line, its byte offset)`. `later` holds the
/// byte offsets of the checkpoints after the first (line 0 at byte 0).
fn checkpoint_of(later: &[u64], line: u64) -> (u64, u64) {
    let k = usize::try_from(line / CHECKPOINT_LINES).unwrap_or(usize::MAX).min(later.len());
    match k.checked_sub(1) {
        Some(i) => (k as u64 * CHECKPOINT_LINES, later[i]),
        None => (0, 0),
    }
}

/// The text of a stored entry, shared with the store (readers outlive a replaced entry).
struct EntryText(Arc<MemoryEntry>);

impl AsRef<[u8]> for EntryText {
    fn as_ref(&self) -> &[u8] {
        &self.0.text
    }
}

/// The time to live of stored outputs by default: 24 hours since last use. An output is worth
/// keeping while the conversation that made it goes on, and few go on for longer without a pause
/// long enough to run the tool again.
pub const DEFAULT_OUTPUT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The size cap of a store of outputs by default: 256 MiB (268,435,456 bytes). Room for
/// thousands of typical outputs and for hundreds of the large ones worth a ref, small beside the
/// disk of a cache directory and affordable in memory for a [`MemoryStore`].
pub const DEFAULT_OUTPUT_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// The environment variable overriding [`DEFAULT_OUTPUT_TTL`], in whole seconds.
pub const OUTPUT_TTL_ENV: &str = "TOOL_OUTPUT_TTL_SECS";

/// The environment variable overriding [`DEFAULT_OUTPUT_MAX_BYTES`], in bytes.
pub const OUTPUT_MAX_BYTES_ENV: &str = "TOOL_OUTPUT_MAX_BYTES";

/// The default limits of an output store: [`DEFAULT_OUTPUT_TTL`] and [`DEFAULT_OUTPUT_MAX_BYTES`].
pub const DEFAULT_OUTPUT_LIMITS: StoreLimits = StoreLimits::new(DEFAULT_OUTPUT_TTL, DEFAULT_OUTPUT_MAX_BYTES);

/// [`DEFAULT_OUTPUT_LIMITS`] with `TOOL_OUTPUT_TTL_SECS` and `TOOL_OUTPUT_MAX_BYTES` applied.
///
/// # Errors
/// A message naming the variable when one is set but not a positive integer.
pub fn output_limits_from_env() -> Result<StoreLimits, String> {
    limits_from_env(DEFAULT_OUTPUT_LIMITS, OUTPUT_TTL_ENV, OUTPUT_MAX_BYTES_ENV)
}

/// `defaults` with the time to live (whole seconds) of `ttl_var` and the size cap (bytes) of
/// `bytes_var` applied, when they are set.
///
/// # Errors
/// A message naming the variable when one is set but not a positive integer.
pub fn limits_from_env(defaults: StoreLimits, ttl_var: &str, bytes_var: &str) -> Result<StoreLimits, String> {
    let read = |var: &str| -> Result<Option<u64>, String> {
        match std::env::var(var) {
            Err(_) => Ok(None),
            Ok(v) => match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => {
                    Err(format!("{var}={v:?} is not a positive integer; set it to a whole number above 0 or unset it"))
                }
            },
        }
    };
    let mut limits = defaults;
    if let Some(secs) = read(ttl_var)? {
        limits.ttl = Duration::from_secs(secs);
    }
    if let Some(bytes) = read(bytes_var)? {
        limits.max_bytes = bytes;
    }
    Ok(limits)
}

/// Bytes a [`MemoryStore`] counts for each output beside its data: its slots in the store's map
/// and usage index (an estimate of their memory), so that a cap bounds the memory of many small
/// outputs too.
pub const MEMORY_ENTRY_OVERHEAD: u64 = 256;

/// Bytes a `FileStore` counts for each output beside its files: its directory (one 4 KiB block
/// on common file systems) and its slot in the usage index, so that a cap bounds the disk and the
/// index of many small outputs too (256 MiB holds at most 65,536 outputs).
pub const FILE_ENTRY_OVERHEAD: u64 = 4096;

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

/// The bytes of typed parts as counted against a size cap: their JSON.
pub(crate) fn parts_bytes(parts: &[ContentPart]) -> u64 {
    if parts.is_empty() { 0 } else { serde_json::to_vec(parts).map_or(0, |v| v.len() as u64) }
}

/// What a scope check makes of an index lookup (see [`OutputStore::check_scope`]); `owner` is the
/// scope an entry's data records, `None` when it is not known.
fn scope_verdict<M>(
    ref_id: &str,
    lookup: &Lookup<'_, M>,
    owner: impl Fn(&M) -> Option<&ScopeKey>,
    scope: OutputScope<'_>,
) -> Result<(), StoreError> {
    let owns = |meta: &M| owner(meta).is_some_and(|o| o.matches(scope));
    match lookup {
        Lookup::Live(meta) if owns(meta) => Ok(()),
        Lookup::Gone(meta, why) if owns(meta) => Err(StoreError::Expired { ref_id: ref_id.to_owned(), why: *why }),
        _ => Err(not_found(ref_id)),
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

#[cfg(feature = "file-store")]
static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// A number unique within this process, for temp names.
#[cfg(feature = "file-store")]
pub(crate) fn unique() -> u64 {
    UNIQUE.fetch_add(1, Ordering::Relaxed)
}

/// The default store with the cargo feature `file-store` (off by default; `tool-std` turns it on):
/// one directory per output under a root directory. Without the feature this type is absent.
///
/// Layout: `<root>/<ref_id>/text` (the UTF-8 text), `<root>/<ref_id>/index` (little-endian `u64`s:
/// bytes, lines, number of parts, then the byte offset of every [`CHECKPOINT_LINES`]th line start,
/// beginning with line 0), `<root>/<ref_id>/parts.json` (the typed parts, a JSON array) and
/// `<root>/<ref_id>/scope` (the [`OutputScope`] it was made in, a JSON object
/// `{"session":..,"principal":..}` without the keys that are `None`; an entry without one belongs
/// to [`OutputScope::NONE`]). An output is written into a temp directory `<root>/.tmp-*` and
/// published by renaming it; a replaced output is renamed away first and then deleted, so a reader
/// never sees a mix (for that instant, not found). Texts stream in and out in 64 KiB pieces:
/// storing, reading a line and searching never hold the whole text in memory.
///
/// Bounds ([`StoreLimits`], default [`DEFAULT_OUTPUT_LIMITS`]): the store keeps a usage index in
/// memory, filled by one scan of the root when it is opened (sizes, and last use from the
/// modification time of each `index` file) and kept up to date by every write and read, so pruning
/// never scans the directory again. An entry's size is the bytes of its four files plus
/// [`FILE_ENTRY_OVERHEAD`]. A read marks
/// the entry used in memory at once and on disk (the `index` file's modification time) at most
/// once a minute. Outputs another process writes into the same root are adopted on first read;
/// its deletions read as expired. What this process let go is remembered as expired
/// ([`REMEMBERED_EXPIRIES`](super::REMEMBERED_EXPIRIES) entries) until it ends; after a restart such a ref reads as unknown.
#[cfg(feature = "file-store")]
#[derive(Clone)]
pub struct FileStore {
    root: PathBuf,
    usage: Arc<Mutex<UsageIndex<FileEntry>>>,
    clock: Arc<dyn Clock>,
}

/// What the usage index of a [`FileStore`] keeps per entry.
#[cfg(feature = "file-store")]
#[derive(Debug, Clone)]
struct FileEntry {
    /// Read from the `scope` file on first need (the scan at open reads no file contents).
    scope: Option<ScopeKey>,
    /// The last use written to disk.
    stamped: SystemTime,
}

/// How often a read writes an entry's last use to disk, at most.
#[cfg(feature = "file-store")]
const STAMP_EVERY: Duration = Duration::from_secs(60);

#[cfg(feature = "file-store")]
impl fmt::Debug for FileStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let usage = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("FileStore").field("root", &self.root).field("usage", &*usage).finish()
    }
}

/// The directory of the default store under the user's cache directory:
/// `<cache dir>/tool-runtime/output-cache` (on Linux `$XDG_CACHE_HOME` or `~/.cache`; on macOS
/// `~/Library/Caches`; on Windows `%LOCALAPPDATA%`), from the `dirs` crate. Cargo feature
/// `file-store`.
#[cfg(feature = "file-store")]
pub fn default_cache_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("tool-runtime").join("output-cache"))
}

#[cfg(feature = "file-store")]
impl FileStore {
    /// A store rooted at `root`, created when missing, with [`DEFAULT_OUTPUT_LIMITS`] and the
    /// system clock ([`FileStore::open`]).
    ///
    /// # Errors
    /// As [`FileStore::open`].
    pub fn new(root: impl Into<PathBuf>) -> io::Result<Self> {
        Self::open(root, DEFAULT_OUTPUT_LIMITS, Arc::new(SystemClock))
    }

    /// A store rooted at `root`, created when missing, bounded by `limits`, reading the time from
    /// `clock`. Scans the root once to fill the usage index, and deletes the outputs that are past
    /// the time to live or over the cap (least recently used first), and the temp directories of
    /// writes that never finished once they are older than the time to live.
    ///
    /// # Errors
    /// The I/O error, with the path, when `root` cannot be created or listed.
    pub fn open(root: impl Into<PathBuf>, limits: StoreLimits, clock: Arc<dyn Clock>) -> io::Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create the output cache directory {}: {e}", root.display()))
        })?;
        let listing = std::fs::read_dir(&root).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot list the output cache directory {}: {e}", root.display()))
        })?;
        let mut found = Vec::new();
        let now = clock.now();
        for entry in listing.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(".tmp-") || name.starts_with(".old-") {
                // Left by a process that stopped while writing: deleted once older than the time
                // to live (a younger one may still be being written).
                let stale = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > limits.ttl));
                if stale {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
                continue;
            }
            if validate_ref_id(name).is_err() {
                continue;
            }
            if let Some((bytes, used)) = entry_usage(&entry.path()) {
                found.push((used, name.to_owned(), bytes));
            }
        }
        // Oldest use first, so that the index's order is the order of last use.
        found.sort();
        let store = Self { root, usage: Arc::new(Mutex::new(UsageIndex::new(limits))), clock };
        let mut dropped = Vec::new();
        {
            let mut usage = store.lock();
            for (used, name, bytes) in found {
                dropped.extend(usage.insert(&name, bytes, FileEntry { scope: None, stamped: used }, used, now));
            }
        }
        store.delete(dropped);
        Ok(store)
    }

    /// A store in [`default_cache_dir`].
    ///
    /// # Errors
    /// When the platform has no cache directory (set `XDG_CACHE_HOME` or use [`FileStore::new`]),
    /// or it cannot be created.
    pub fn in_user_cache_dir() -> io::Result<Self> {
        let dir = default_cache_dir().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "no user cache directory is known on this platform; set XDG_CACHE_HOME or give the store a directory",
            )
        })?;
        Self::new(dir)
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The number of outputs the usage index holds.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// `true` when the usage index holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the outputs take, as counted against the size cap.
    pub fn total_bytes(&self) -> u64 {
        self.lock().total_bytes()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, UsageIndex<FileEntry>> {
        self.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Deletes the directories of outputs the index let go.
    fn delete(&self, dropped: impl IntoIterator<Item = Dropped>) {
        for dropped in dropped {
            let _ = std::fs::remove_dir_all(self.root.join(&dropped.key));
        }
    }

    /// Adopts an output the index does not know that is on disk (written by another process);
    /// `true` when there was one.
    fn adopt(&self, ref_id: &str) -> bool {
        let Some((bytes, used)) = entry_usage(&self.root.join(ref_id)) else { return false };
        let now = self.clock.now();
        let dropped = self.lock().insert(ref_id, bytes, FileEntry { scope: None, stamped: used }, used, now);
        let adopted = !dropped.iter().any(|d| d.key == ref_id);
        self.delete(dropped);
        adopted
    }

    /// The entry's directory, marking it used; [`StoreError::NotFound`] when it is not stored.
    fn dir(&self, ref_id: &str) -> Result<PathBuf, StoreError> {
        validate_ref_id(ref_id)?;
        let now = self.clock.now();
        let mut usage = self.lock();
        let (lookup, dropped) = usage.lookup(ref_id, now, |_| true);
        let (live, stamp) = match lookup {
            Lookup::Live(entry) => {
                let stamp = now.duration_since(entry.stamped).is_ok_and(|d| d >= STAMP_EVERY);
                if stamp {
                    entry.stamped = now;
                }
                (true, stamp)
            }
            Lookup::Gone(..) => (false, false),
            Lookup::Unknown => {
                drop(usage);
                return if self.adopt(ref_id) { Ok(self.root.join(ref_id)) } else { Err(not_found(ref_id)) };
            }
        };
        drop(usage);
        self.delete(dropped);
        let dir = self.root.join(ref_id);
        if !live {
            return Err(not_found(ref_id));
        }
        if stamp && let Ok(file) = File::options().write(true).open(dir.join("index")) {
            let _ = file.set_modified(now);
        }
        Ok(dir)
    }

    /// The scope of a live entry, read from its `scope` file when not known yet.
    fn load_scope(&self, ref_id: &str) {
        let known = self.lock().meta_mut(ref_id).is_none_or(|e| e.scope.is_some());
        if known {
            return;
        }
        let scope = match std::fs::read(self.root.join(ref_id).join("scope")) {
            Ok(bytes) => serde_json::from_slice(&bytes).ok(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Some(ScopeKey::default()),
            Err(_) => None,
        };
        // A damaged scope file belongs to no reader: it reads as not found for everyone.
        let scope = scope.unwrap_or_else(ScopeKey::unreadable);
        if let Some(entry) = self.lock().meta_mut(ref_id) {
            entry.scope = Some(scope);
        }
    }

    fn read_index(&self, ref_id: &str) -> Result<Vec<u64>, StoreError> {
        let path = self.dir(ref_id)?.join("index");
        let bytes = std::fs::read(&path).map_err(|e| file_error(ref_id, &path, &e))?;
        if bytes.len() < 32 || !bytes.len().is_multiple_of(8) {
            return Err(StoreError::io(ref_id, format!("{} is damaged; call the tool again", path.display())));
        }
        Ok(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())).collect())
    }

    fn write_new(temp: &Path, scope: &ScopeKey, text: &mut dyn Read, parts: &[ContentPart]) -> io::Result<StoredInfo> {
        std::fs::create_dir(temp)?;
        let mut out = io::BufWriter::with_capacity(64 * 1024, File::create(temp.join("text"))?);
        let mut index = IndexBuilder::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match text.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            index.feed(&buf[..n]);
            out.write_all(&buf[..n])?;
        }
        out.into_inner().map_err(io::IntoInnerError::into_error)?.sync_all()?;
        let info = StoredInfo { bytes: index.bytes, lines: index.lines(), parts: parts.len() };
        let mut encoded = Vec::with_capacity(8 * (index.checkpoints.len() + 4));
        // The file keeps the first checkpoint (line 0 at byte 0) too.
        for v in [info.bytes, info.lines, info.parts as u64, 0].iter().chain(&index.checkpoints) {
            encoded.extend_from_slice(&v.to_le_bytes());
        }
        std::fs::write(temp.join("index"), encoded)?;
        let parts = serde_json::to_vec(parts).map_err(io::Error::other)?;
        std::fs::write(temp.join("parts.json"), parts)?;
        std::fs::write(temp.join("scope"), serde_json::to_vec(scope).map_err(io::Error::other)?)?;
        Ok(info)
    }
}

/// The size of an entry (the bytes of its files and [`FILE_ENTRY_OVERHEAD`]) and its last use (the
/// `index` file's modification time); `None` when `dir` is not a complete entry.
#[cfg(feature = "file-store")]
fn entry_usage(dir: &Path) -> Option<(u64, SystemTime)> {
    let index = std::fs::metadata(dir.join("index")).ok()?;
    let used = index.modified().ok()?;
    let mut bytes = index.len() + FILE_ENTRY_OVERHEAD;
    for name in ["text", "parts.json", "scope"] {
        bytes += std::fs::metadata(dir.join(name)).map_or(0, |m| m.len());
    }
    Some((bytes, used))
}

fn not_found(ref_id: &str) -> StoreError {
    StoreError::NotFound { ref_id: ref_id.to_owned() }
}

/// A file of an entry could not be read: gone (deleted by another process) reads as not found.
#[cfg(feature = "file-store")]
fn file_error(ref_id: &str, path: &Path, e: &io::Error) -> StoreError {
    if e.kind() == io::ErrorKind::NotFound {
        not_found(ref_id)
    } else {
        StoreError::io(ref_id, format!("{}: {e}", path.display()))
    }
}

#[cfg(feature = "file-store")]
impl OutputStore for FileStore {
    fn put_scoped(
        &self,
        scope: OutputScope<'_>,
        ref_id: &str,
        text: &mut dyn Read,
        parts: &[ContentPart],
    ) -> Result<StoredInfo, StoreError> {
        validate_ref_id(ref_id)?;
        let tag = format!("{}-{}-{}", ref_id, std::process::id(), unique());
        let temp = self.root.join(format!(".tmp-{tag}"));
        let owner = ScopeKey::of(scope);
        let info = match Self::write_new(&temp, &owner, text, parts) {
            Ok(info) => info,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&temp);
                return Err(StoreError::io(ref_id, format!("cannot write {}: {e}", temp.display())));
            }
        };
        let size = entry_usage(&temp).map_or(info.bytes, |(bytes, _)| bytes);
        let target = self.root.join(ref_id);
        let old = self.root.join(format!(".old-{tag}"));
        let moved_away = std::fs::rename(&target, &old).is_ok();
        let published = std::fs::rename(&temp, &target);
        if moved_away {
            let _ = std::fs::remove_dir_all(&old);
        }
        if let Err(e) = published {
            let _ = std::fs::remove_dir_all(&temp);
            self.lock().forget(ref_id);
            return Err(StoreError::io(ref_id, format!("cannot publish {}: {e}", target.display())));
        }
        let now = self.clock.now();
        // The last use on disk is the store's clock, as every later use writes it.
        if let Ok(file) = File::options().write(true).open(target.join("index")) {
            let _ = file.set_modified(now);
        }
        let dropped = self.lock().insert(ref_id, size, FileEntry { scope: Some(owner), stamped: now }, now, now);
        self.delete(dropped);
        Ok(info)
    }

    fn check_scope(&self, ref_id: &str, scope: OutputScope<'_>) -> Result<(), StoreError> {
        validate_ref_id(ref_id)?;
        let unknown = self.lock().meta_mut(ref_id).is_none();
        if unknown {
            self.adopt(ref_id);
        }
        self.load_scope(ref_id);
        let now = self.clock.now();
        let mut usage = self.lock();
        let (lookup, dropped) = usage.lookup(ref_id, now, |e| e.scope.as_ref().is_some_and(|s| s.matches(scope)));
        let verdict = scope_verdict(ref_id, &lookup, |e: &FileEntry| e.scope.as_ref(), scope);
        drop(usage);
        self.delete(dropped);
        verdict
    }

    fn info(&self, ref_id: &str) -> Result<StoredInfo, StoreError> {
        let index = self.read_index(ref_id)?;
        let parts = usize::try_from(index[2]).unwrap_or(usize::MAX);
        Ok(StoredInfo { bytes: index[0], lines: index[1], parts })
    }

    fn open_at(&self, ref_id: &str, offset: u64) -> Result<Box<dyn Read + Send>, StoreError> {
        let path = self.dir(ref_id)?.join("text");
        let mut file = File::open(&path).map_err(|e| file_error(ref_id, &path, &e))?;
        file.seek(SeekFrom::Start(offset)).map_err(|e| file_error(ref_id, &path, &e))?;
        Ok(Box::new(file))
    }

    fn checkpoint(&self, ref_id: &str, line: u64) -> Result<(u64, u64), StoreError> {
        // `read_index` makes sure of at least four numbers: the fourth is the first checkpoint.
        Ok(checkpoint_of(&self.read_index(ref_id)?[4..], line))
    }

    fn parts(&self, ref_id: &str) -> Result<Vec<ContentPart>, StoreError> {
        let path = self.dir(ref_id)?.join("parts.json");
        let bytes = std::fs::read(&path).map_err(|e| file_error(ref_id, &path, &e))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| StoreError::io(ref_id, format!("{} is damaged ({e}); call the tool again", path.display())))
    }

    fn blocks(&self) -> bool {
        true
    }
}

/// The output cache store of a registry: the dispatcher's output layer writes through it and the
/// `tool_output_cache*` tools read through it. Registry-scoped; the default is bounded by
/// [`output_limits_from_env`] and is, with the cargo feature `file-store` (which `tool-std` turns
/// on), a `FileStore` in `default_cache_dir()`, and without it a [`MemoryStore`] (nothing on disk).
/// Apps override it, e.g. with a [`MemoryStore`] in tests:
/// `RegistryBuilder::override_dependency(&OUTPUT_STORE, Arc::new(MemoryStore::new()))`.
pub static OUTPUT_STORE: DependencyKey<Arc<dyn OutputStore>> = DependencyKey::shared("output_store", default_store);

#[cfg(feature = "file-store")]
fn default_store(_ctx: &ToolContext) -> Result<Arc<dyn OutputStore>, DependencyError> {
    let limits = output_limits_from_env().map_err(DependencyError)?;
    let dir = default_cache_dir().ok_or_else(|| {
        DependencyError(
            "no user cache directory is known on this platform; set XDG_CACHE_HOME or give the store a directory"
                .to_owned(),
        )
    })?;
    FileStore::open(dir, limits, Arc::new(SystemClock))
        .map(|s| Arc::new(s) as Arc<dyn OutputStore>)
        .map_err(|e| DependencyError(e.to_string()))
}

#[cfg(not(feature = "file-store"))]
fn default_store(_ctx: &ToolContext) -> Result<Arc<dyn OutputStore>, DependencyError> {
    let limits = output_limits_from_env().map_err(DependencyError)?;
    Ok(Arc::new(MemoryStore::with_limits(limits, Arc::new(SystemClock))))
}
