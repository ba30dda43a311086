//! The output cache store: every tool message's text (and typed parts) under a ref id.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use crate::context::ToolContext;
use crate::depends::{DependencyKey, Scope};
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
    /// No output is stored under this id.
    #[error("no tool output is cached under ref_id `{ref_id}`; use the output_ref of a tool result from this session")]
    NotFound {
        /// The id asked for.
        ref_id: String,
    },
    /// The id has characters outside `[A-Za-z0-9_-]`, is empty or too long.
    #[error(
        "ref_id `{ref_id}` is not valid: use 1 to 128 of the characters A-Z a-z 0-9 _ - (the output_ref of a tool result)"
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

/// The ref id of a tool call id: every character outside `[A-Za-z0-9_-]` becomes `_`, cut to 128
/// bytes; `None` for an empty call id. (`toolu_01A.b` becomes `toolu_01A_b`.)
pub fn ref_id_for_call(tool_call_id: &str) -> Option<String> {
    // Most call ids (`call_...`, `toolu_...`) are ref ids already.
    if validate_ref_id(tool_call_id).is_ok() {
        return Some(tool_call_id.to_owned());
    }
    let id: String = tool_call_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .take(MAX_REF_ID_LEN)
        .collect();
    (!id.is_empty()).then_some(id)
}

/// Where tool outputs are kept, by ref id. Implementations: [`MemoryStore`] (tests, short-lived
/// processes) and [`FileStore`] (the default, files in the user's cache directory). A store shared
/// by many agent workers implements the same five methods.
///
/// The text is UTF-8 bytes; lines are split at `\n` (see [`StoredInfo::lines`]). Line numbers in
/// this trait are 0-based. Readers stream: nothing here needs the whole text in memory.
pub trait OutputStore: Send + Sync {
    /// Stores the text read from `text` (to its end) and the typed `parts` under `ref_id`, replacing
    /// what was stored under it. A reader sees the old or the new output, never a mix (a
    /// [`FileStore`] reader may see [`StoreError::NotFound`] for the instant between the two).
    ///
    /// # Errors
    /// [`StoreError::InvalidRefId`], or [`StoreError::Io`] when reading `text` or writing fails
    /// (nothing is then published).
    fn put(&self, ref_id: &str, text: &mut dyn Read, parts: &[ContentPart]) -> Result<StoredInfo, StoreError>;

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
    /// `false`, for a store in memory; [`FileStore`] answers `true`, and a store that wraps
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
struct IndexBuilder {
    bytes: u64,
    newlines: u64,
    last: Option<u8>,
    /// The byte offsets of the checkpoints after the first (line 0 at byte 0, implied): a text
    /// shorter than [`CHECKPOINT_LINES`] lines, most of them, needs no allocation here.
    checkpoints: Vec<u64>,
}

impl IndexBuilder {
    fn new() -> Self {
        Self::default()
    }

    fn feed(&mut self, chunk: &[u8]) {
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

    fn lines(&self) -> u64 {
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

/// Outputs in memory, for tests and short-lived processes; lost when dropped.
#[derive(Default)]
pub struct MemoryStore {
    entries: RwLock<HashMap<String, Arc<MemoryEntry>>>,
}

struct MemoryEntry {
    text: Vec<u8>,
    /// See [`IndexBuilder::checkpoints`].
    checkpoints: Vec<u64>,
    info: StoredInfo,
    parts: Vec<ContentPart>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of stored outputs.
    pub fn len(&self) -> usize {
        self.entries.read().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// `true` when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn entry(&self, ref_id: &str) -> Result<Arc<MemoryEntry>, StoreError> {
        validate_ref_id(ref_id)?;
        self.entries
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(ref_id)
            .cloned()
            .ok_or_else(|| StoreError::NotFound { ref_id: ref_id.to_owned() })
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore").field("outputs", &self.len()).finish()
    }
}

impl OutputStore for MemoryStore {
    fn put(&self, ref_id: &str, text: &mut dyn Read, parts: &[ContentPart]) -> Result<StoredInfo, StoreError> {
        validate_ref_id(ref_id)?;
        let mut bytes = Vec::new();
        text.read_to_end(&mut bytes).map_err(|e| StoreError::io(ref_id, e))?;
        let mut index = IndexBuilder::new();
        index.feed(&bytes);
        let info = StoredInfo { bytes: index.bytes, lines: index.lines(), parts: parts.len() };
        let entry = MemoryEntry { text: bytes, checkpoints: index.checkpoints, info, parts: parts.to_vec() };
        self.entries.write().unwrap_or_else(PoisonError::into_inner).insert(ref_id.to_owned(), Arc::new(entry));
        Ok(info)
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

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// A number unique within this process, for temp names.
pub(crate) fn unique() -> u64 {
    UNIQUE.fetch_add(1, Ordering::Relaxed)
}

/// The default store: one directory per output under a root directory.
///
/// Layout: `<root>/<ref_id>/text` (the UTF-8 text), `<root>/<ref_id>/index` (little-endian `u64`s:
/// bytes, lines, number of parts, then the byte offset of every [`CHECKPOINT_LINES`]th line start, beginning with
/// line 0) and `<root>/<ref_id>/parts.json` (the typed parts, a JSON array). An output is written
/// into a temp directory `<root>/.tmp-*` and published by renaming it; a replaced output is renamed
/// away first and then deleted, so a reader never sees a mix (for that instant, not found). Texts stream in and out in 64 KiB
/// pieces: storing, reading a line and searching never hold the whole text in memory.
#[derive(Debug, Clone)]
pub struct FileStore {
    root: PathBuf,
}

/// The directory of the default store under the user's cache directory:
/// `<cache dir>/tool-runtime/output-cache` (on Linux `$XDG_CACHE_HOME` or `~/.cache`; on macOS
/// `~/Library/Caches`; on Windows `%LOCALAPPDATA%`), from the `dirs` crate.
pub fn default_cache_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("tool-runtime").join("output-cache"))
}

impl FileStore {
    /// A store rooted at `root`, created when missing.
    ///
    /// # Errors
    /// The I/O error, with the path, when `root` cannot be created.
    pub fn new(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create the output cache directory {}: {e}", root.display()))
        })?;
        Ok(Self { root })
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

    fn dir(&self, ref_id: &str) -> Result<PathBuf, StoreError> {
        validate_ref_id(ref_id)?;
        let dir = self.root.join(ref_id);
        if dir.is_dir() { Ok(dir) } else { Err(StoreError::NotFound { ref_id: ref_id.to_owned() }) }
    }

    fn read_index(&self, ref_id: &str) -> Result<Vec<u64>, StoreError> {
        let path = self.dir(ref_id)?.join("index");
        let bytes = std::fs::read(&path).map_err(|e| StoreError::io(ref_id, format!("{}: {e}", path.display())))?;
        if bytes.len() < 32 || !bytes.len().is_multiple_of(8) {
            return Err(StoreError::io(ref_id, format!("{} is damaged; call the tool again", path.display())));
        }
        Ok(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())).collect())
    }

    fn write_new(temp: &Path, text: &mut dyn Read, parts: &[ContentPart]) -> io::Result<StoredInfo> {
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
        Ok(info)
    }
}

impl OutputStore for FileStore {
    fn put(&self, ref_id: &str, text: &mut dyn Read, parts: &[ContentPart]) -> Result<StoredInfo, StoreError> {
        validate_ref_id(ref_id)?;
        let tag = format!("{}-{}-{}", ref_id, std::process::id(), unique());
        let temp = self.root.join(format!(".tmp-{tag}"));
        let info = match Self::write_new(&temp, text, parts) {
            Ok(info) => info,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&temp);
                return Err(StoreError::io(ref_id, format!("cannot write {}: {e}", temp.display())));
            }
        };
        let target = self.root.join(ref_id);
        let old = self.root.join(format!(".old-{tag}"));
        let moved_away = std::fs::rename(&target, &old).is_ok();
        let published = std::fs::rename(&temp, &target);
        if moved_away {
            let _ = std::fs::remove_dir_all(&old);
        }
        if let Err(e) = published {
            let _ = std::fs::remove_dir_all(&temp);
            return Err(StoreError::io(ref_id, format!("cannot publish {}: {e}", target.display())));
        }
        Ok(info)
    }

    fn info(&self, ref_id: &str) -> Result<StoredInfo, StoreError> {
        let index = self.read_index(ref_id)?;
        let parts = usize::try_from(index[2]).unwrap_or(usize::MAX);
        Ok(StoredInfo { bytes: index[0], lines: index[1], parts })
    }

    fn open_at(&self, ref_id: &str, offset: u64) -> Result<Box<dyn Read + Send>, StoreError> {
        let path = self.dir(ref_id)?.join("text");
        let mut file = File::open(&path).map_err(|e| StoreError::io(ref_id, format!("{}: {e}", path.display())))?;
        file.seek(SeekFrom::Start(offset)).map_err(|e| StoreError::io(ref_id, format!("{}: {e}", path.display())))?;
        Ok(Box::new(file))
    }

    fn checkpoint(&self, ref_id: &str, line: u64) -> Result<(u64, u64), StoreError> {
        // `read_index` makes sure of at least four numbers: the fourth is the first checkpoint.
        Ok(checkpoint_of(&self.read_index(ref_id)?[4..], line))
    }

    fn parts(&self, ref_id: &str) -> Result<Vec<ContentPart>, StoreError> {
        let path = self.dir(ref_id)?.join("parts.json");
        let bytes = std::fs::read(&path).map_err(|e| StoreError::io(ref_id, format!("{}: {e}", path.display())))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| StoreError::io(ref_id, format!("{} is damaged ({e}); call the tool again", path.display())))
    }

    fn blocks(&self) -> bool {
        true
    }
}

/// The output cache store of a registry: the dispatcher's output layer writes through it and the
/// `tool_output_cache*` tools read through it. Registry-scoped; the default is a [`FileStore`] in
/// [`default_cache_dir`]. Apps override it, e.g. with a [`MemoryStore`] in tests:
/// `RegistryBuilder::override_dependency(&OUTPUT_STORE, Arc::new(MemoryStore::new()))`.
pub static OUTPUT_STORE: DependencyKey<Arc<dyn OutputStore>> =
    DependencyKey::new("output_store", default_store).with_scope(Scope::Registry);

fn default_store(_ctx: &ToolContext) -> Result<Arc<dyn OutputStore>, DependencyError> {
    FileStore::in_user_cache_dir()
        .map(|s| Arc::new(s) as Arc<dyn OutputStore>)
        .map_err(|e| DependencyError(e.to_string()))
}
