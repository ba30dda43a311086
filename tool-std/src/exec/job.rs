//! One command: spawned confined in its own process group, its output captured, stopped as a
//! group.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
use tokio::sync::watch;
use tool_runtime::CancellationToken;

use super::capture::{Capture, Sink};
use super::confine::{Cgroup, CommandUser, Confinement, ResourceLimits, Rules, confine_thread};

/// What a command is run with.
#[derive(Debug)]
pub(crate) struct Launch {
    /// The command's place in its principal's cap, given back once it has ended.
    pub(crate) slot: Option<super::slot::CommandSlot>,
    /// The command line, run as `bash -c <command>`.
    pub(crate) command: String,
    /// The working directory (inside the workspace).
    pub(crate) workdir: PathBuf,
    /// The whole environment of the command.
    pub(crate) env: Vec<(String, String)>,
    /// The directories the command may write below.
    pub(crate) writable: Vec<PathBuf>,
    /// The directories the command may not read.
    pub(crate) hidden: Vec<PathBuf>,
    /// Sockets allowed.
    pub(crate) network: bool,
    /// The most processes and threads at once (0: no limit).
    pub(crate) max_processes: u64,
    /// The registry's prefix of names (see [`cleanup`](super::cleanup)): the command's `pids`
    /// cgroup is `<prefix>-c<k>`.
    pub(crate) prefix: String,
    /// The session's `memory` cgroup and its limit in bytes, or why there is none.
    pub(crate) session_memory: Result<(PathBuf, u64), String>,
    /// The bound of the session's `HOME` in bytes, or why there is none.
    pub(crate) home: Result<u64, String>,
    /// The user to run as, when not the server's.
    pub(crate) user: Option<CommandUser>,
    /// The per-process limits.
    pub(crate) limits: ResourceLimits,
    /// Run unconfined where Landlock is not in force.
    pub(crate) allow_unconfined: bool,
    /// The highest Landlock ABI to ask rules of (`None`: the kernel's).
    pub(crate) max_landlock_abi: Option<i32>,
    /// The time limit.
    pub(crate) timeout: Duration,
    /// The time between `SIGTERM` and `SIGKILL` when the group is stopped.
    pub(crate) grace: Duration,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The shell exited with this code.
    Exited(i32),
    /// The shell was killed by this signal (not by us).
    Signalled(i32),
    /// The time limit (ms) passed; the group was stopped.
    TimedOut(u64),
    /// The call was cancelled, `bash_kill` asked, or the registry closed; the group was stopped.
    Stopped,
}

/// A command's end and how long it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Finished {
    pub(crate) end: End,
    /// Milliseconds from the spawn to the end of the output.
    pub(crate) duration_ms: u64,
    /// `SIGTERM` was not enough: the group got `SIGKILL` after the grace.
    pub(crate) killed: bool,
}

impl fmt::Display for Finished {
    /// `exit code 0 · 12 ms`, `killed by signal 9 (SIGKILL) · 3 ms`, `timed out after 300 ms; the
    /// process group was stopped · 310 ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.killed { "SIGTERM, then SIGKILL" } else { "SIGTERM" };
        match self.end {
            End::Exited(code) => write!(f, "exit code {code}")?,
            End::Signalled(signal) => write!(f, "killed by signal {signal} ({})", signal_name(signal))?,
            End::TimedOut(ms) => write!(f, "timed out after {ms} ms; the process group was stopped ({how})")?,
            End::Stopped => write!(f, "stopped before it ended; the process group was stopped ({how})")?,
        }
        write!(f, " · {} ms", self.duration_ms)
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => "another signal",
    }
}

/// A running (or finished) command, shared by its supervisor and whoever reads it.
#[derive(Debug)]
pub(crate) struct Job {
    /// The confinement it runs under.
    pub(crate) confinement: Confinement,
    /// The output.
    pub(crate) capture: Arc<Capture>,
    /// Its process group id (the shell's pid).
    pub(crate) pgid: u32,
    /// Cancel to stop the command (its group gets `SIGTERM`, then `SIGKILL`).
    pub(crate) stop: CancellationToken,
    finished: watch::Receiver<Option<Finished>>,
}

impl Job {
    /// The end, once the command has ended and its output is complete.
    pub(crate) fn finished(&self) -> Option<Finished> {
        *self.finished.borrow()
    }

    /// Sends `SIGKILL` to the command's process group at once (its shell is the pid 1 of its
    /// namespace: everything in it ends).
    pub(crate) fn kill(&self) {
        if let Some(group) = i32::try_from(self.pgid).ok().and_then(Pid::from_raw) {
            let _ = kill_process_group(group, Signal::KILL);
        }
    }

    /// Waits for the end.
    pub(crate) async fn wait(&self) -> Finished {
        let mut finished = self.finished.clone();
        let end = finished.wait_for(Option::is_some).await.map(|end| *end);
        // An error: the supervisor is gone without a word (the runtime is shutting down).
        end.ok().flatten().unwrap_or(LOST)
    }
}

/// The end reported when the supervisor vanished (its runtime shut down, its group was killed).
const LOST: Finished = Finished { end: End::Stopped, duration_ms: 0, killed: true };

/// Spawns `launch` (confined: see [`super::confine`]) writing into `capture`, and a supervisor
/// task that waits for its end, its time limit or `stop`, then stops what is left of its process
/// group (`SIGTERM`, then `SIGKILL` after the grace) so that nothing it started outlives it.
/// `progress` gets the output bytes so far while it runs.
///
/// # Errors
/// The refusal to run unconfined, or why the spawn failed, as the model reads it.
pub(crate) async fn start(
    mut launch: Launch,
    capture: (Capture, Sink),
    stop: CancellationToken,
    progress: Box<dyn Fn(u64) + Send>,
) -> Result<Arc<Job>, String> {
    let (timeout, grace) = (launch.timeout, launch.grace);
    // Held by the supervisor until the group is gone (given back at once when the spawn fails).
    let slot = launch.slot.take();
    let (capture, sink) = capture;
    let runtime = tokio::runtime::Handle::current();
    let (sender, receiver) = tokio::sync::oneshot::channel();
    // Dropped by the supervisor once the command has ended (or with it, when its runtime goes).
    let (ended, end_seen) = std::sync::mpsc::channel::<()>();
    // A thread of its own: the confinement restricts the thread that asks and what it spawns,
    // for good. It lives as long as the command: the shell's parent-death signal (`SIGKILL`)
    // comes when this thread ends, so that the command ends with the server even when the server
    // is killed and runs no code of its own.
    std::thread::Builder::new()
        .name("exec-spawn".to_owned())
        .spawn(move || {
            let _runtime = runtime.enter();
            let spawned = spawn_confined(&launch);
            let started = spawned.0.is_ok();
            let _ = sender.send(spawned);
            if started {
                // Blocks until the supervisor drops its end.
                let _ = end_seen.recv();
            }
        })
        .map_err(|e| format!("cannot start a thread to spawn the command: {e}"))?;
    let (spawned, cgroup) =
        receiver.await.map_err(|_| "the thread spawning the command ended without a word".to_owned())?;
    let (mut child, pipe, confinement) = match spawned {
        Ok(spawned) => spawned,
        Err(e) => {
            remove_later(cgroup);
            return Err(e);
        }
    };
    let pgid = child.id().unwrap_or_default();
    let group = i32::try_from(pgid).ok().and_then(Pid::from_raw).map(GroupGuard).ok_or_else(|| {
        // Cannot happen: a child just spawned has a pid (and a process group of its own).
        "the command has no process id".to_owned()
    })?;
    let capture = Arc::new(capture);
    let (report, finished) = watch::channel(None);
    let job = Arc::new(Job { confinement, capture: capture.clone(), pgid, stop: stop.clone(), finished });

    let started = Instant::now();
    let mut pump = tokio::task::spawn_blocking(move || capture.pump(pipe, sink, &*progress));
    tokio::spawn(async move {
        let mut exited = None;
        let end = tokio::select! {
            status = child.wait() => {
                let end = status.map_or(End::Exited(-1), end_of);
                exited = Some(end);
                end
            }
            () = tokio::time::sleep(timeout) => End::TimedOut(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)),
            () = stop.cancelled() => End::Stopped,
        };
        let killed = group.stop(&mut child, exited.is_some(), &mut pump, grace).await;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        // Before the end is seen: whoever waited for it may start another command at once.
        drop(slot);
        let _ = report.send(Some(Finished { end, duration_ms, killed }));
        remove_later(cgroup);
        drop(ended);
    });
    Ok(job)
}

/// Removes a command's cgroup on the blocking pool, once its processes are gone.
fn remove_later(cgroup: Option<Cgroup>) {
    if let Some(cgroup) = cgroup {
        drop(tokio::task::spawn_blocking(move || cgroup.remove()));
    }
}

type Spawned = (tokio::process::Child, std::io::PipeReader, Confinement);

/// On the spawning thread: confines it (see [`super::confine`]), then spawns `bash -c command`
/// in a new process group, standard input from `/dev/null`, standard output and error into one
/// pipe (so that they interleave in the order they were written). Before the command's first
/// word, the shell sets the resource limits with `ulimit` and, as the pid 1 of its namespace
/// (which gets only the signals it has a handler for), makes `SIGTERM` end it; both are on the
/// command's first line, so that its line numbers stay as they were and a syntax error there
/// runs nothing. The cgroup joined goes back with the outcome.
fn spawn_confined(launch: &Launch) -> (Result<Spawned, String>, Option<Cgroup>) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let pids_cgroup = format!("{}-c{}", launch.prefix, NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let writable: Vec<&Path> = launch.writable.iter().map(PathBuf::as_path).collect();
    let rules = Rules {
        pids_cgroup: &pids_cgroup,
        session_memory: &launch.session_memory,
        home: &launch.home,
        user: launch.user,
        writable: &writable,
        hidden: &launch.hidden,
        network: launch.network,
        allow_unconfined: launch.allow_unconfined,
        max_abi: launch.max_landlock_abi,
        max_processes: launch.max_processes,
        limits: launch.limits,
    };
    let (confinement, cgroup) = confine_thread(&rules);
    (confinement.and_then(|confinement| spawn_bash(launch, confinement)), cgroup)
}

/// Spawns the shell as `setpriv --pdeathsig KILL -- bash -c <script>` (util-linux's `setpriv`
/// sets the parent-death signal and executes bash in its place, so no code of ours runs between
/// `fork` and `exec`): the shell gets `SIGKILL` when the spawning thread ends, and as the pid 1
/// of its namespace takes every other process of the command with it. Without `setpriv` on the
/// `PATH`, bash is run directly and the first line says the command may outlive the server.
fn spawn_bash(launch: &Launch, mut confinement: Confinement) -> Result<Spawned, String> {
    let trap = if confinement.contained.is_ok() { "trap 'exit 143' TERM; " } else { "" };
    let script = format!("{}{trap}{CLOSE_INHERITED}{}", confinement.limits.ulimit(), launch.command);
    // Looked up before the one spawn this thread may make: once the first child of its pid
    // namespace has ended, no other can be made in it. `setsid` (util-linux): a session of its
    // own, so that the command has no controlling terminal (nothing it writes to `/dev/tty`
    // reaches the operator's); it leads the session's one process group, as `process_group(0)`
    // would make it.
    let mut program = vec!["bash"];
    let setsid = on_path("setsid", &launch.env);
    if setsid {
        program.insert(0, "setsid");
    }
    let (uid, gid) = confinement.user.map(|user| (user.uid.to_string(), user.gid.to_string())).unzip();
    if on_path("setpriv", &launch.env) {
        program.splice(0..0, ["setpriv", "--pdeathsig", "KILL", "--"]);
        // The user first: `setpriv` switches it before it sets the parent-death signal, which
        // a change of user would clear.
        if let (Some(uid), Some(gid)) = (&uid, &gid) {
            program.splice(1..1, ["--reuid", uid.as_str(), "--regid", gid.as_str(), "--clear-groups"]);
        }
    } else if let Some(user) = confinement.user {
        return Err(format!(
            "refused to run the command: it is to run as uid {}, which needs `setpriv` (util-linux) on the PATH",
            user.uid
        ));
    } else {
        confinement.server_exit = Err("no `setpriv` (util-linux) on the PATH to set it".to_owned());
    }
    let (reader, writer) = std::io::pipe().map_err(|e| format!("cannot make the output pipe: {e}"))?;
    let error_writer = writer.try_clone().map_err(|e| format!("cannot make the output pipe: {e}"))?;
    let mut command = tokio::process::Command::new(program[0]);
    command
        .args(&program[1..])
        .arg("-c")
        .arg(&script)
        .current_dir(&launch.workdir)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(error_writer)
        .kill_on_drop(true);
    if !setsid {
        command.process_group(0);
    }
    let child = command.spawn().map_err(|e| format!("cannot run `bash`: {e}; is bash on the PATH?"))?;
    // The command holds the pipe's write ends; ours close with it, so that the output ends when
    // the last process writing it does.
    drop(command);
    Ok((child, reader, confinement))
}

/// Shell text closing every file descriptor but 0, 1 and 2, before the command's first word: a
/// descriptor the server inherited without close-on-exec (a socket of its parent's, say) would
/// otherwise reach the command.
const CLOSE_INHERITED: &str = "for fd in /proc/self/fd/*; do fd=${fd##*/}; case $fd in 0|1|2) ;; *) eval \"exec $fd>&-\" 2>/dev/null;; esac; done; ";

/// Whether an executable file `program` is in a directory of the `PATH` of `env`.
fn on_path(program: &str, env: &[(String, String)]) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let path = env.iter().find(|(name, _)| name == "PATH").map_or("", |(_, value)| value.as_str());
    std::env::split_paths(path).any(|dir| {
        std::fs::metadata(dir.join(program)).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

fn end_of(status: ExitStatus) -> End {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => End::Exited(code),
        (None, Some(signal)) => End::Signalled(signal),
        (None, None) => End::Exited(-1),
    }
}

/// A process group to stop. Dropped armed (its supervisor was dropped with the runtime), it
/// sends `SIGKILL` to the group.
struct GroupGuard(Pid);

impl GroupGuard {
    /// Stops whatever is left of the group: `SIGTERM`, a wait of `grace` for the shell (unless
    /// `exited`) and the output's end, then `SIGKILL` and a last wait. `true` when `SIGKILL` was
    /// needed.
    async fn stop(
        self,
        child: &mut tokio::process::Child,
        exited: bool,
        pump: &mut tokio::task::JoinHandle<()>,
        grace: Duration,
    ) -> bool {
        let group = self.0;
        let alive = || test_kill_process_group(group).is_ok();
        if alive() {
            let _ = kill_process_group(group, Signal::TERM);
        }
        let ended = async {
            if !exited {
                let _ = child.wait().await;
            }
            let _ = (&mut *pump).await;
        };
        let mut killed = false;
        if tokio::time::timeout(grace, ended).await.is_err() {
            killed = true;
            let _ = kill_process_group(group, Signal::KILL);
            // Reaps the shell; the output ends once every process holding the pipe is gone (a
            // process that left the group with `setsid` may hold it longer: it is not waited for).
            let _ = tokio::time::timeout(grace, async {
                let _ = child.wait().await;
                let _ = (&mut *pump).await;
            })
            .await;
        }
        if alive() {
            let _ = kill_process_group(group, Signal::KILL);
        }
        std::mem::forget(self);
        killed
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        let _ = kill_process_group(self.0, Signal::KILL);
    }
}
