//! The exec tools' state per registry: each session's temp dir and background commands.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tool_runtime::{BoxError, BoxFuture, DependencyError, DependencyKey, ToolContext};

use super::cleanup::{self, PREFIX};
use super::confine::{Cgroup, CommandUser};
use super::job::Job;
use super::slot::{CommandSlot, Running};

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
/// empty id), its temp dir (in one directory `tool-exec-<pid>-<n>-*` of the registry's), its
/// `memory` cgroup, and its background commands. A handle is only good in the session that
/// started it. Closed, it stops every background command, waits for their end and removes what
/// it made; dropped, it kills every background command (`SIGKILL` to its shell, whose pid
/// namespace ends with it: see [`super::confine`]) and removes what it made, its runtime gone or
/// not. Opaque: the tools reach it through [`EXEC_STATE`].
#[derive(Debug)]
pub struct ExecState {
    sessions: Mutex<HashMap<String, Arc<SessionExec>>>,
    /// How many commands each principal runs now (calls without one count under the empty name).
    running: Running,
    dir: Mutex<Option<tempfile::TempDir>>,
    /// `tool-exec-<pid>-<n>`: the start of the name of everything this registry makes.
    prefix: String,
    next_session: AtomicU64,
}

impl Default for ExecState {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let prefix = format!("{PREFIX}{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        Self {
            sessions: Mutex::default(),
            running: Arc::default(),
            dir: Mutex::default(),
            prefix,
            next_session: AtomicU64::new(1),
        }
    }
}

impl Drop for ExecState {
    fn drop(&mut self) {
        let sessions: Vec<Arc<SessionExec>> =
            self.sessions.get_mut().unwrap_or_else(PoisonError::into_inner).drain().map(|(_, s)| s).collect();
        for session in &sessions {
            for job in session.jobs().by_handle.values() {
                job.job.stop.cancel();
                job.job.kill();
            }
        }
        drop(sessions);
        self.remove_made();
    }
}

/// What a session's commands are held to, from the exec configuration.
#[derive(Debug, Clone)]
pub(crate) struct SessionLimits {
    /// Where the registry's temp dir is made.
    pub(crate) temp_root: PathBuf,
    /// The most memory of the session's commands together, in bytes (0: no limit).
    pub(crate) memory_bytes: u64,
    /// The size of the session's `HOME`, in bytes (0: a plain directory).
    pub(crate) home_bytes: u64,
    /// The user commands run as, when not the server's: the session's `HOME` is theirs.
    pub(crate) user: Option<CommandUser>,
}

impl ExecState {
    /// The session `id` (made on first use, with its temp dir in `temp_root`). Blocking (it
    /// may make directories): call it off the async workers.
    ///
    /// # Errors
    /// Why the temp dir could not be made.
    /// The first time, it removes what killed servers left (see [`cleanup::sweep_dead`]).
    pub(crate) fn session(&self, id: &str, limits: &SessionLimits) -> Result<Arc<SessionExec>, String> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(session) = sessions.get(id) {
            return Ok(session.clone());
        }
        let parent = {
            let mut dir = self.dir.lock().unwrap_or_else(PoisonError::into_inner);
            if dir.is_none() {
                cleanup::sweep_dead(&limits.temp_root);
                let made = tempfile::Builder::new()
                    .prefix(&format!("{}-", self.prefix))
                    .tempdir_in(&limits.temp_root)
                    .map_err(|e| format!("cannot make the exec temp dir in {}: {e}", limits.temp_root.display()))?;
                traversable(made.path())?;
                *dir = Some(made);
            }
            dir.as_ref().map(|dir| dir.path().to_path_buf()).unwrap_or_default()
        };
        let n = self.next_session.fetch_add(1, Ordering::Relaxed);
        let session = Arc::new(SessionExec::new(&parent, &format!("{}-s{n}", self.prefix), limits)?);
        sessions.insert(id.to_owned(), session.clone());
        Ok(session)
    }

    /// A place for one more running command of `principal` (`""` for calls without one), when it
    /// runs fewer than `max` (0: no cap); else `Err(max)`. The place is given back when the
    /// [`CommandSlot`] is dropped: when the command has ended (see [`super::job::start`]).
    pub(crate) fn admit(&self, principal: &str, max: usize) -> Result<CommandSlot, usize> {
        CommandSlot::take(&self.running, principal, max)
    }

    /// The start of the name of everything this registry makes (`tool-exec-<pid>-<n>`).
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Removes the registry's temp dir (its mounts unmounted first) and its cgroups (waiting up
    /// to 2 s for their processes to be gone). Blocking.
    fn remove_made(&self) {
        let dir = self.dir.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(dir) = dir {
            cleanup::unmount_below(dir.path());
            drop(dir);
        }
        cleanup::remove_own(&self.prefix);
    }

    /// The session `id` when it has run a command.
    pub(crate) fn existing(&self, id: &str) -> Option<Arc<SessionExec>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    /// Stops every background command of every session and waits for each to end; then the temp
    /// dirs and the cgroups go.
    pub(crate) async fn close(self: &Arc<Self>) {
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
        let state = self.clone();
        let _ = tool_runtime::off_worker(move || state.remove_made()).await;
    }
}

/// One session: its temp dir (`home/`, the commands' `HOME` and writable, a `tmpfs` of
/// [`SessionLimits::home_bytes`]; `output/`, the spill files, not writable by commands), its
/// `memory` cgroup and its background commands by handle. Dropped, its `HOME` is unmounted and
/// its temp dir removed.
#[derive(Debug)]
pub(crate) struct SessionExec {
    dir: tempfile::TempDir,
    next: AtomicU64,
    jobs: Mutex<Jobs>,
    /// The session's `memory` cgroup and its limit in bytes, or why there is none.
    pub(crate) memory: Result<(PathBuf, u64), String>,
    /// The bound of `HOME` in bytes, or why there is none.
    pub(crate) home_bound: Result<u64, String>,
}

impl Drop for SessionExec {
    fn drop(&mut self) {
        if self.home_bound.is_ok() {
            let _ = rustix::mount::unmount(self.home(), rustix::mount::UnmountFlags::DETACH);
        }
    }
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
    /// Makes the session's temp dir in `parent`, its `HOME` (mounted) and its `memory` cgroup
    /// `cgroup` (where the kernel allows each; else the reason is kept, for the first line).
    fn new(parent: &Path, cgroup: &str, limits: &SessionLimits) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("session-")
            .tempdir_in(parent)
            .map_err(|e| format!("cannot make the session temp dir in {}: {e}", parent.display()))?;
        traversable(dir.path())?;
        for sub in ["home", "output"] {
            std::fs::create_dir(dir.path().join(sub))
                .map_err(|e| format!("cannot make {}: {e}", dir.path().join(sub).display()))?;
        }
        let home = dir.path().join("home");
        let home_bound = match limits.home_bytes {
            0 => Err("none configured".to_owned()),
            bytes => mount_home(&home, bytes, limits.user).map(|()| bytes),
        };
        if let Some(user) = limits.user {
            std::os::unix::fs::chown(&home, Some(user.uid), Some(user.gid))
                .map_err(|e| format!("cannot give {} to uid {}: {e}", home.display(), user.uid))?;
        }
        let memory = match limits.memory_bytes {
            0 => Err("none configured".to_owned()),
            bytes => Cgroup::make("memory", cgroup, &[("memory.limit_in_bytes", bytes.to_string())])
                .map(|made| (made.dir().to_path_buf(), bytes)),
        };
        Ok(Self { dir, next: AtomicU64::new(1), jobs: Mutex::new(Jobs::default()), memory, home_bound })
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

    /// The session's bounds, as a command's launch takes them.
    pub(crate) fn bounds(&self) -> (Result<(PathBuf, u64), String>, Result<u64, String>) {
        (self.memory.clone(), self.home_bound.clone())
    }

    /// The background commands.
    pub(crate) fn jobs(&self) -> std::sync::MutexGuard<'_, Jobs> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Makes `dir` (the server's, mode 0700) enterable by every user but listable by none (0711), so
/// that a command run as another user reaches its `HOME` below it; Landlock keeps other
/// sessions' dirs from commands.
fn traversable(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711))
        .map_err(|e| format!("cannot set the mode of {}: {e}", dir.display()))
}

/// Mounts a `tmpfs` of `bytes` on `home` (mode 0700, owned by `user` when given, no
/// set-user-ID programs, no devices).
///
/// # Errors
/// Why not, as the first line says it (no `CAP_SYS_ADMIN`).
fn mount_home(home: &Path, bytes: u64, user: Option<CommandUser>) -> Result<(), String> {
    use rustix::mount::{MountFlags, mount};
    let owner = user.map_or_else(String::new, |user| format!(",uid={},gid={}", user.uid, user.gid));
    let options = std::ffi::CString::new(format!("size={bytes},mode=0700{owner}")).unwrap_or_default();
    mount("tmpfs", home, "tmpfs", MountFlags::NOSUID | MountFlags::NODEV, options.as_c_str())
        .map_err(|e| format!("cannot mount a tmpfs on it: {e}"))
}
