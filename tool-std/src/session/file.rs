//! Sessions as JSON files in a directory.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tool_runtime::output::{Dropped, Expiry, Lookup, StoreLimits, UsageIndex};
use tool_runtime::{Clock, SystemClock};

use super::{DEFAULT_SESSION_LIMITS, FILE_SESSION_OVERHEAD, SessionError, SessionMeta, SessionStore, check_owner};

/// The format version this build writes (the `version` field of a [`SessionFile`]); it reads
/// this one and version 1 (the same without `principal`).
pub const SESSION_FORMAT_VERSION: u32 = 2;

/// The environment variable naming the state directory; session files go to its `sessions`
/// subdirectory. Wins over the platform's state directory.
pub const STATE_DIR_ENV: &str = "TOOL_STATE_DIR";

/// The directory [`FileSessionStore`] uses by default, in this order:
/// `$TOOL_STATE_DIR/sessions` when the variable is set and not empty; else the platform's user
/// state directory (`$XDG_STATE_HOME`, else `~/.local/state`, on Linux), else its local data
/// directory (macOS, Windows), followed by `tool-framework/sessions`.
///
/// # Errors
/// [`SessionError::NoStateDir`] when none of these exists (no home directory).
pub fn default_sessions_dir() -> Result<PathBuf, SessionError> {
    if let Some(dir) = std::env::var_os(STATE_DIR_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir).join("sessions"));
    }
    dirs::state_dir()
        .or_else(dirs::data_local_dir)
        .map(|dir| dir.join("tool-framework").join("sessions"))
        .ok_or(SessionError::NoStateDir)
}

/// What a session file holds, as pretty-printed JSON:
///
/// ```json
/// {
///   "version": 2,
///   "session_id": "s1",
///   "principal": "alice",
///   "revision": 3,
///   "meta": { "todos": [ ... ] }
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionFile {
    /// The format version, [`SESSION_FORMAT_VERSION`]. A file with a higher version is refused
    /// rather than overwritten.
    pub version: u64,
    /// The session id, as given (the file name is an encoding of it).
    pub session_id: String,
    /// The principal that made the session; absent when it had none. Only it may use the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// How many times the session was saved: 1 after the first save.
    pub revision: u64,
    /// The session's meta.
    pub meta: SessionMeta,
}

/// Sessions as files in one directory: `<name>.json` per session and a `<name>.lock` beside it
/// (kept, empty) that serialises updates, also between processes (an advisory file lock).
///
/// - File names: the session id with every byte outside `[A-Za-z0-9_-]` written as `%XX`
///   (uppercase hex), so distinct ids never share a file and no id can name a path outside the
///   directory; an encoded name over 200 bytes is replaced by `~` and the SHA-256 of the id in hex.
/// - Writes are atomic: the new content goes to a temporary file in the directory, is flushed to
///   disk, then renamed over the old file. A reader sees the old or the new session, never a mix.
/// - The directory is created on the first save (mode 0700 on Unix; files are 0600).
/// - A file that is not a session of this format, or whose `session_id` differs from the id asked
///   for, is an error ([`SessionError::Corrupt`]) and is never overwritten.
/// - Bounds ([`StoreLimits`], default [`DEFAULT_SESSION_LIMITS`]): a usage index in memory, filled
///   by one scan of the directory on first use (each file's size, and its modification time as the
///   last use) and kept by every load and save, which also set the file's modification time. Its
///   size is the file's plus [`FILE_SESSION_OVERHEAD`](super::FILE_SESSION_OVERHEAD). Pruning deletes session files (never one being updated: a file whose lock
///   is held is left for later) and leaves the empty lock files. Sessions another process saves are
///   counted from their first use here.
#[derive(Debug, Clone)]
pub struct FileSessionStore {
    dir: PathBuf,
    bounds: Arc<Bounds>,
}

/// The limits, the clock and the usage index (keyed by file stem; each entry's data is the
/// session's principal, `None` while not read yet).
struct Bounds {
    limits: StoreLimits,
    clock: Arc<dyn Clock>,
    usage: OnceLock<Mutex<UsageIndex<Option<Option<String>>>>>,
}

impl std::fmt::Debug for Bounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bounds").field("limits", &self.limits).finish_non_exhaustive()
    }
}

/// What the usage index says of a session.
enum Usage {
    /// Held, or not known to the index: the file says.
    Read,
    /// Let go; the principal that made it, when known.
    Gone(Option<Option<String>>, Expiry),
}

impl FileSessionStore {
    /// A store in `dir` (created on the first save) with [`DEFAULT_SESSION_LIMITS`] and the
    /// system clock.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self::with_limits(dir, DEFAULT_SESSION_LIMITS, Arc::new(SystemClock))
    }

    /// A store in `dir` (created on the first save) bounded by `limits`, reading the time from
    /// `clock`.
    pub fn with_limits(dir: impl Into<PathBuf>, limits: StoreLimits, clock: Arc<dyn Clock>) -> Self {
        Self { dir: dir.into(), bounds: Arc::new(Bounds { limits, clock, usage: OnceLock::new() }) }
    }

    /// The bytes of the session files, as counted against the size cap.
    pub fn total_bytes(&self) -> u64 {
        self.usage().total_bytes()
    }

    /// The usage index, filled by a scan of the directory on first use.
    fn usage(&self) -> MutexGuard<'_, UsageIndex<Option<Option<String>>>> {
        let mut dropped = Vec::new();
        let usage = self.bounds.usage.get_or_init(|| {
            let mut index = UsageIndex::new(self.bounds.limits);
            let mut found = Vec::new();
            for entry in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
                let name = entry.file_name();
                let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".json")) else { continue };
                if stem.starts_with('.') {
                    continue;
                }
                if let Ok(meta) = entry.metadata()
                    && let Ok(used) = meta.modified()
                {
                    found.push((used, stem.to_owned(), meta.len()));
                }
            }
            found.sort();
            let now = self.bounds.clock.now();
            for (used, stem, bytes) in found {
                dropped.extend(index.insert(&stem, bytes + FILE_SESSION_OVERHEAD, None, used, now));
            }
            Mutex::new(index)
        });
        self.delete(dropped);
        usage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Deletes the files of sessions the index let go, but not one whose lock is held (an update
    /// is running: it saves it again).
    fn delete(&self, dropped: Vec<Dropped>) {
        for dropped in dropped {
            let lock = self.dir.join(format!("{}.lock", dropped.key));
            let held = OpenOptions::new().write(true).open(&lock).ok().filter(|f| f.try_lock().is_ok());
            let busy = lock.exists() && held.is_none();
            if !busy {
                let _ = std::fs::remove_file(self.dir.join(format!("{}.json", dropped.key)));
            }
        }
    }

    /// Counts a use of the session (its file stem): the index's word on it. A session past its
    /// time to live is let go here.
    fn use_session(&self, stem: &str, principal: Option<&str>, now: SystemTime) -> Usage {
        let mut usage = self.usage();
        let owns = |owner: &Option<Option<String>>| owner.as_ref().is_none_or(|o| o.as_deref() == principal);
        let (lookup, dropped) = usage.lookup(stem, now, owns);
        let verdict = match lookup {
            Lookup::Gone(owner, why) => Usage::Gone(owner.clone(), why),
            Lookup::Live(_) | Lookup::Unknown => Usage::Read,
        };
        drop(usage);
        if let Some(dropped) = dropped {
            // Let go just now, by this call: no update of it can be running without its lock.
            let _ = std::fs::remove_file(self.dir.join(format!("{}.json", dropped.key)));
        }
        verdict
    }

    /// Records the session file at `path` (of `bytes`) as used at `now`, made by `principal`.
    fn record(&self, stem: &str, path: &Path, bytes: u64, principal: Option<&str>, now: SystemTime) {
        if let Ok(file) = File::options().write(true).open(path) {
            let _ = file.set_modified(now);
        }
        let size = bytes + FILE_SESSION_OVERHEAD;
        let dropped = self.usage().insert(stem, size, Some(principal.map(str::to_owned)), now, now);
        self.delete(dropped);
    }

    /// The directory of the session files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file that holds `session_id`.
    ///
    /// # Errors
    /// [`SessionError::EmptyId`] for an empty id.
    pub fn path_of(&self, session_id: &str) -> Result<PathBuf, SessionError> {
        Ok(self.dir.join(format!("{}.json", file_stem(session_id)?)))
    }

    fn lock_path(&self, session_id: &str) -> Result<PathBuf, SessionError> {
        Ok(self.dir.join(format!("{}.lock", file_stem(session_id)?)))
    }

    /// Reads the session file; `None` when there is none.
    fn read(&self, session_id: &str) -> Result<Option<SessionFile>, SessionError> {
        let path = self.path_of(session_id)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error("read", &path, &e)),
        };
        let shown = path.display().to_string();
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| SessionError::Corrupt { path: shown.clone(), message: e.to_string() })?;
        let version = value.get("version").and_then(serde_json::Value::as_u64).ok_or_else(|| {
            SessionError::Corrupt { path: shown.clone(), message: "no numeric `version` field".to_owned() }
        })?;
        if version > u64::from(SESSION_FORMAT_VERSION) {
            return Err(SessionError::UnsupportedVersion {
                path: shown,
                found: version,
                supported: SESSION_FORMAT_VERSION,
            });
        }
        let file: SessionFile = serde_json::from_value(value)
            .map_err(|e| SessionError::Corrupt { path: shown.clone(), message: e.to_string() })?;
        if file.session_id != session_id {
            return Err(SessionError::Corrupt {
                path: shown,
                message: format!("it holds session `{}`, not `{session_id}`", file.session_id),
            });
        }
        Ok(Some(file))
    }

    /// Writes the session file atomically; returns its size in bytes.
    fn write(&self, file: &SessionFile) -> Result<u64, SessionError> {
        let path = self.path_of(&file.session_id)?;
        let mut text = serde_json::to_string_pretty(file).map_err(|e| SessionError::Corrupt {
            path: path.display().to_string(),
            message: format!("the meta cannot be written as JSON: {e}"),
        })?;
        text.push('\n');
        let mut temp = tempfile::Builder::new()
            .prefix(".session-")
            .suffix(".tmp")
            .tempfile_in(&self.dir)
            .map_err(|e| io_error("write", &self.dir, &e))?;
        temp.write_all(text.as_bytes()).map_err(|e| io_error("write", temp.path(), &e))?;
        temp.as_file().sync_all().map_err(|e| io_error("write", temp.path(), &e))?;
        temp.persist(&path).map_err(|e| io_error("write", &path, &e.error))?;
        Ok(text.len() as u64)
    }

    fn create_dir(&self) -> Result<(), SessionError> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&self.dir).map_err(|e| io_error("write", &self.dir, &e))
    }

    /// Opens and locks the session's lock file; the lock is released when the file is dropped.
    fn lock(&self, session_id: &str) -> Result<File, SessionError> {
        self.create_dir()?;
        let path = self.lock_path(session_id)?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_error("lock", &path, &e))?;
        file.lock().map_err(|e| io_error("lock", &path, &e))?;
        Ok(file)
    }
}

impl SessionStore for FileSessionStore {
    fn load(&self, session_id: &str, principal: Option<&str>) -> Result<SessionMeta, SessionError> {
        let (stem, path) = (file_stem(session_id)?, self.path_of(session_id)?);
        let now = self.bounds.clock.now();
        if let Usage::Gone(owner, why) = self.use_session(&stem, principal, now) {
            return match owner {
                Some(owner) if owner.as_deref() == principal => {
                    Err(SessionError::Expired { session_id: session_id.to_owned(), why })
                }
                _ => Ok(SessionMeta::new()),
            };
        }
        let Some(file) = self.read(session_id)? else {
            self.usage().forget(&stem);
            return Ok(SessionMeta::new());
        };
        check_owner(session_id, file.principal.as_deref(), principal)?;
        let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        self.record(&stem, &path, bytes, file.principal.as_deref(), now);
        Ok(file.meta)
    }

    fn update(
        &self,
        session_id: &str,
        principal: Option<&str>,
        edit: &mut dyn FnMut(&mut SessionMeta) -> bool,
    ) -> Result<bool, SessionError> {
        let (stem, path) = (file_stem(session_id)?, self.path_of(session_id)?);
        let _lock = self.lock(session_id)?;
        let now = self.bounds.clock.now();
        // A session let go starts again: its file is gone.
        self.use_session(&stem, principal, now);
        let current = self.read(session_id)?;
        if let Some(file) = &current {
            check_owner(session_id, file.principal.as_deref(), principal)?;
        }
        let revision = current.as_ref().map_or(0, |f| f.revision);
        let mut meta = current.map(|f| f.meta).unwrap_or_default();
        if !edit(&mut meta) {
            return Ok(false);
        }
        let file = SessionFile {
            version: u64::from(SESSION_FORMAT_VERSION),
            session_id: session_id.to_owned(),
            principal: principal.map(str::to_owned),
            revision: revision + 1,
            meta,
        };
        let bytes = self.write(&file)?;
        self.record(&stem, &path, bytes, principal, now);
        Ok(true)
    }

    fn remove(&self, session_id: &str, principal: Option<&str>) -> Result<bool, SessionError> {
        let (stem, path) = (file_stem(session_id)?, self.path_of(session_id)?);
        if !self.dir.exists() {
            return Ok(false);
        }
        let _lock = self.lock(session_id)?;
        match self.read(session_id)? {
            Some(file) => check_owner(session_id, file.principal.as_deref(), principal)?,
            None => return Ok(false),
        }
        self.usage().forget(&stem);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io_error("remove", &path, &e)),
        }
    }
}

/// The file name (without extension) of a session id; see [`FileSessionStore`].
fn file_stem(session_id: &str) -> Result<String, SessionError> {
    if session_id.is_empty() {
        return Err(SessionError::EmptyId);
    }
    let mut stem = String::with_capacity(session_id.len());
    for byte in session_id.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' {
            stem.push(char::from(byte));
        } else {
            stem.push_str(&format!("%{byte:02X}"));
        }
    }
    if stem.len() > 200 {
        let digest = Sha256::digest(session_id.as_bytes());
        stem = format!("~{}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>());
    }
    Ok(stem)
}

fn io_error(action: &'static str, path: &Path, error: &std::io::Error) -> SessionError {
    SessionError::Io { action, path: path.display().to_string(), message: error.to_string() }
}
