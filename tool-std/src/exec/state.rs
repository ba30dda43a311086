//! The exec tools' state per registry: each session's temp dir and background commands.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tool_runtime::{BoxError, BoxFuture, DependencyError, DependencyKey, ToolContext};

use super::job::Job;

/// The registry's exec state ([`ExecState`]): closing the registry stops every background
/// command and removes the session temp dirs.
pub static EXEC_STATE: DependencyKey<Arc<ExecState>> =
    DependencyKey::shared("exec_state", new_state).on_close_async(close_state);

fn new_state(_ctx: &ToolContext) -> Result<Arc<ExecState>, DependencyError> {
    Ok(Arc::new(ExecState::default()))
}

fn close_state(state: &Arc<ExecState>) -> BoxFuture<'_, Result<(), BoxError>> {
    Box::pin(async move {
        state.close().await;
        Ok(())
    })
}

/// What the exec tools keep per registry: for each session id (calls without one share the
/// empty id), its temp dir (in one directory `tool-exec-*` of the registry's) and its background
/// commands. A handle is only good in the session that started it. Dropped, it stops every
/// background command (each ends with its pid namespace: see [`super::confine`]). Opaque: the
/// tools reach it through [`EXEC_STATE`].
#[derive(Debug, Default)]
pub struct ExecState {
    sessions: Mutex<HashMap<String, Arc<SessionExec>>>,
    dir: std::sync::OnceLock<tempfile::TempDir>,
}

impl Drop for ExecState {
    fn drop(&mut self) {
        let sessions = self.sessions.get_mut().unwrap_or_else(PoisonError::into_inner);
        for session in sessions.values() {
            for job in session.jobs().by_handle.values() {
                job.job.stop.cancel();
            }
        }
    }
}

impl ExecState {
    /// The session `id` (made on first use, with its temp dir in `temp_root`). Blocking (it
    /// may make directories): call it off the async workers.
    ///
    /// # Errors
    /// Why the temp dir could not be made.
    pub(crate) fn session(&self, id: &str, temp_root: &Path) -> Result<Arc<SessionExec>, String> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(session) = sessions.get(id) {
            return Ok(session.clone());
        }
        let dir = match self.dir.get() {
            Some(dir) => dir,
            None => {
                let made = tempfile::Builder::new()
                    .prefix("tool-exec-")
                    .tempdir_in(temp_root)
                    .map_err(|e| format!("cannot make the exec temp dir in {}: {e}", temp_root.display()))?;
                // Under the sessions' lock: no other thread sets it meanwhile.
                self.dir.get_or_init(|| made)
            }
        };
        let session = Arc::new(SessionExec::new(dir.path())?);
        sessions.insert(id.to_owned(), session.clone());
        Ok(session)
    }

    /// The session `id` when it has run a command.
    pub(crate) fn existing(&self, id: &str) -> Option<Arc<SessionExec>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    /// Stops every background command of every session and waits for each to end; then the temp
    /// dirs go.
    pub(crate) async fn close(&self) {
        let sessions: Vec<Arc<SessionExec>> = {
            let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            sessions.drain().map(|(_, s)| s).collect()
        };
        for session in sessions {
            let jobs: Vec<Arc<Background>> = std::mem::take(&mut session.jobs().by_handle).into_values().collect();
            for job in &jobs {
                job.job.stop.cancel();
            }
            for job in jobs {
                job.job.wait().await;
            }
        }
    }
}

/// One session: its temp dir (`home/`, the commands' `HOME` and writable; `output/`, the spill
/// files, not writable by commands) and its background commands by handle.
#[derive(Debug)]
pub(crate) struct SessionExec {
    dir: tempfile::TempDir,
    next: AtomicU64,
    jobs: Mutex<Jobs>,
}

/// The background commands of a session by handle, and how many are being started.
#[derive(Debug, Default)]
pub(crate) struct Jobs {
    pub(crate) by_handle: BTreeMap<String, Arc<Background>>,
    pub(crate) starting: usize,
}

/// A background command and how far `bash_output` has read it.
#[derive(Debug)]
pub(crate) struct Background {
    pub(crate) job: Arc<Job>,
    pub(crate) read: Mutex<u64>,
}

impl SessionExec {
    fn new(parent: &Path) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("session-")
            .tempdir_in(parent)
            .map_err(|e| format!("cannot make the session temp dir in {}: {e}", parent.display()))?;
        for sub in ["home", "output"] {
            std::fs::create_dir(dir.path().join(sub))
                .map_err(|e| format!("cannot make {}: {e}", dir.path().join(sub).display()))?;
        }
        Ok(Self { dir, next: AtomicU64::new(1), jobs: Mutex::new(Jobs::default()) })
    }

    /// The commands' `HOME`, writable by them.
    pub(crate) fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// A new spill file path (not created yet) and a number unique in the session.
    pub(crate) fn next_output(&self) -> (u64, PathBuf) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        (n, self.dir.path().join("output").join(format!("{n}.out")))
    }

    /// The background commands.
    pub(crate) fn jobs(&self) -> std::sync::MutexGuard<'_, Jobs> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
