//! The output cache store: every tool message's text (and typed parts) under a ref id.

#[cfg(feature = "file-store")]
mod file;
mod limits;
mod lines;
mod memory;
#[cfg(feature = "redis")]
pub mod redis;
mod scoped;

#[cfg(feature = "file-store")]
pub use file::{FileStore, default_cache_dir};
pub use limits::{
    DEFAULT_OUTPUT_LIMITS, DEFAULT_OUTPUT_MAX_BYTES, DEFAULT_OUTPUT_TTL, FILE_ENTRY_OVERHEAD, MEMORY_ENTRY_OVERHEAD,
    OUTPUT_MAX_BYTES_ENV, OUTPUT_TTL_ENV, limits_from_env, output_limits_from_env,
};
#[cfg(feature = "redis")]
pub(crate) use lines::IndexBuilder;
pub use lines::{LineCursor, LinePrefix, open_lines};
pub use memory::MemoryStore;
pub use scoped::ScopedStore;

use std::fmt;
use std::io::Read;
use std::sync::Arc;

use crate::clock::SystemClock;
use crate::context::ToolContext;
use crate::depends::DependencyKey;
use crate::error::DependencyError;
use crate::output::scope::{OutputScope, ScopeKey};
use crate::output::usage::{Expiry, Lookup};
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

fn not_found(ref_id: &str) -> StoreError {
    StoreError::NotFound { ref_id: ref_id.to_owned() }
}
