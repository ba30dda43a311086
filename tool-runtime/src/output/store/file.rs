//! [`FileStore`]: the output store in a directory (feature `file-store`).

use std::fmt;
use std::io::{self, Read};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

#[cfg(feature = "file-store")]
use std::fs::File;
#[cfg(feature = "file-store")]
use std::io::{Seek, SeekFrom, Write};
#[cfg(feature = "file-store")]
use std::path::{Path, PathBuf};
#[cfg(feature = "file-store")]
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(feature = "file-store")]
use std::time::SystemTime;

use super::limits::{DEFAULT_OUTPUT_LIMITS, FILE_ENTRY_OVERHEAD};
use super::lines::{IndexBuilder, checkpoint_of};
use super::{OutputStore, StoreError, StoredInfo, not_found, scope_verdict, validate_ref_id};
use crate::clock::{Clock, SystemClock};
use crate::output::scope::{OutputScope, ScopeKey};
#[cfg(feature = "file-store")]
use crate::output::usage::Dropped;
use crate::output::usage::{Lookup, StoreLimits, UsageIndex};
use crate::result::ContentPart;

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
/// bytes, lines, number of parts, then the byte offset of every [`crate::output::CHECKPOINT_LINES`]th line start,
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
/// ([`REMEMBERED_EXPIRIES`](crate::output::REMEMBERED_EXPIRIES) entries) until it ends; after a restart such a ref reads as unknown.
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
