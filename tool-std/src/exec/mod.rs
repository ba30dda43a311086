//! The "exec" set: [`bash()`] runs a command in the workspace (in the foreground, or in the
//! background), [`bash_output()`] reads a background command's new output, [`bash_kill()`] stops
//! one.
//!
//! The tools are tagged `exec`: the [`DefaultPolicy`](tool_runtime::DefaultPolicy) refuses them
//! unless allowed, and a permission policy sees each command's text (the call's arguments)
//! before it runs. `bash` and `bash_kill` are also tagged `destructive`; `bash_output` is
//! `read_only`. Configuration is the registry-scoped dependency [`EXEC_CONFIG`] ([`ExecConfig`]).
//!
//! # How a command runs
//! - As `bash -c <command>` in `workdir` (resolved by the workspace [`Sandbox`], default its
//!   root), in a process group of its own, with standard input from `/dev/null` (a read gets end
//!   of file at once) and standard output and error on one pipe, so that they interleave in the
//!   order they were written, as on a terminal.
//! - The environment is `PATH` ([`ExecConfig::path`]), `LANG` ([`ExecConfig::lang`]) and `HOME`,
//!   a temp dir of the session, and the variables the operator names in [`ExecConfig::env`];
//!   nothing of this process's environment is passed on.
//! - Time limit `timeout_ms` (default 120000, at most 600000). At the limit, on cancellation of
//!   the call (a client's cancel over MCP, a dropped call), on `bash_kill` and when the registry
//!   closes, the whole process group gets `SIGTERM`, and `SIGKILL` after
//!   [`ExecConfig::kill_grace_ms`] (default 2000 ms). When the shell exits on its own, what it
//!   left running in its group is stopped the same way, and a process that left the group ends
//!   with the shell's pid namespace (see "Confinement"): nothing outlives the command.
//! - The output of a command in the foreground goes to the output cache as it arrives, through
//!   the output layer's streaming path ([`store_stream`](tool_runtime::output::store_stream)),
//!   under a new ref id in the call's scope (its session and principal); only its head and tail
//!   are kept in memory, so a command printing gigabytes uses a few hundred KiB of memory. The
//!   result is a [`ToolResult::Stored`]: its `ref_id` is that ref, and the output layer does
//!   not store the result again. Output up to [`ExecConfig::inline_bytes`] (48 KiB) is the
//!   result's body as a whole; a larger output is shown as its first and last
//!   [`ExecConfig::preview_bytes`] (16 KiB, 500 lines each) around a marker naming the ref. At
//!   most [`ExecConfig::max_output_bytes`] (1 GiB) of one output are kept: past it the output is
//!   still read and its tail shown, and the result says how much was not kept. (The output cache
//!   holds one output larger than its own size cap beside the others: see
//!   [`StoreLimits::max_bytes`](tool_runtime::output::StoreLimits::max_bytes).) A command that
//!   fails is an error result with the same text (the body names the ref of a long output). A
//!   background command's output goes to a spill file in the session's temp dir as it arrives
//!   (up to the same cap), which `bash_output` reads. Invalid UTF-8 is shown lossily (U+FFFD)
//!   with a note saying so. Progress reports give the bytes of output so far.
//!
//! # Confinement
//! On Linux with Landlock, a command reads everywhere but the state directories
//! ([`ExecConfig::hidden`]) and other sessions' temp dirs, and writes only below the workspace
//! root and its session's temp dir (and to `/dev/null` and a few other device files). Unless
//! [`ExecConfig::network`] it can open no socket: Landlock (ABI 4 and up) refuses TCP `connect`
//! and `bind`, a seccomp filter refuses UDP, Unix, netlink and every other family. It shares no
//! System V IPC, network (when off) or `/proc` with the host or other commands (namespaces of its
//! own), and can make no user namespace and use no keyring (seccomp).
//! Its capabilities are the file ones only, so the server's `/proc/PID/environ` is not readable.
//! When the server runs as root, it runs as the owner of the workspace root unless that is root
//! ([`ExecConfig::user`]), so that it can change nothing about files outside the workspace.
//! It is the pid 1 of a pid namespace of its own, so every process it starts (`setsid` and double
//! forks included) ends with it, with `bash_kill`, the time limit, the registry's close and the
//! server's exit, even a `SIGKILL` of the server. Each command runs under limits: at most
//! [`ExecConfig::max_processes`] processes and threads (default 512) and, per process,
//! [`ExecConfig::max_cpu_seconds`] of CPU time (600), [`ExecConfig::max_address_space_bytes`]
//! of address space (8 GiB) and [`ExecConfig::max_file_size_bytes`] per file written (1 GiB);
//! the commands of a session together, [`ExecConfig::max_session_memory_bytes`] of memory (a
//! `memory` cgroup per session, 4 GiB) and a `HOME` of [`ExecConfig::max_home_bytes`] (a
//! `tmpfs`, 1 GiB). What a registry makes on the host (temp dirs, mounts, cgroups) goes with it,
//! and what a killed server left goes at the next start: each is named
//! `tool-exec-<server pid>-<n>-...`, and the first command of a registry removes those whose pid
//! names no live process.
//! The rules are applied to a thread made for the spawn, which the command inherits (see
//! [`confine`], which also says why a namespace rather than a subreaper). Where the kernel has no
//! Landlock, `bash` refuses to run unless [`ExecConfig::allow_unconfined`]. Every result's first
//! line states the confinement in force ([`Confinement`]) and what the kernel could not enforce.
//!
//! # Result
//! ```text
//! [sandbox: landlock ABI 7; writes only below /ws, /tmp/tool-exec-x/session-y/home; network refused (tcp, udp, unix sockets); every process ends with the command and with the server; limits: 512 processes, 600 cpu s, 8 GiB address space, 1 GiB per file, 4 GiB memory per session, 1 GiB HOME]
//! exit code 0 · 12 ms
//! <output>
//! ```
//! A command that exits with another code, is killed by a signal, times out or is stopped is an
//! error result with the same text.

mod capture;
mod cleanup;
mod config;
pub mod confine;
mod job;
mod open_world;
mod slot;
mod state;
mod user;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tool_runtime::output::{OUTPUT_STORE, OutputStore};
use tool_runtime::{CancellationToken, StoredResult, ToolContext, ToolError, ToolResult, tool};

use self::capture::{Capture, LOSSY_NOTE, Seen, Sink};
use self::job::{End, Finished, Job, Launch};
use self::state::{Background, SessionExec, SessionLimits};
pub use self::state::{EXEC_STATE, ExecState};
use crate::sandbox::{SANDBOX, Sandbox};
pub use config::{EXEC_CONFIG, ExecConfig, ExecUser};
use confine::ResourceLimits;
pub use confine::{CommandUser, Confinement, Landlock, NetworkConfinement};
pub use open_world::open_world_tools;
use tool_runtime::off_worker;

/// The tag of the exec tools: off unless a permission policy allows them.
pub const EXEC_TAG: &str = tool_runtime::EXEC_TAG;

/// Why an exec tool refused a call. The `Display` text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// `command` is empty or blank.
    #[error("command is empty; give the shell command to run")]
    EmptyCommand,
    /// `timeout_ms` is 0 or above the maximum.
    #[error("timeout_ms must be between 1 and {max}, got {value}")]
    Timeout {
        /// The value given.
        value: u64,
        /// The largest accepted value ([`ExecConfig::max_timeout_ms`]).
        max: u64,
    },
    /// `workdir` is outside the workspace or not a directory.
    #[error("workdir `{workdir}` {reason}; give a directory inside the workspace (default: its root)")]
    Workdir {
        /// The value given.
        workdir: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The session already has [`ExecConfig::max_background`] background commands.
    #[error(
        "this session already has {max} background commands ({handles}); read finished ones to their end with \
         bash_output or stop one with bash_kill first"
    )]
    TooManyBackground {
        /// The cap.
        max: usize,
        /// Their handles, comma-separated.
        handles: String,
    },
    /// The caller already runs [`ExecConfig::max_commands_per_principal`] commands.
    #[error(
        "this caller already runs {max} shell commands, the most one caller may run at once; wait for one to end, or \
         stop a background one with bash_kill first"
    )]
    TooManyCommands {
        /// The cap.
        max: usize,
    },
    /// No background command has this handle in the session.
    #[error("no background command `{handle}` in this session ({known}); use a handle that bash returned here")]
    UnknownHandle {
        /// The handle given.
        handle: String,
        /// The session's handles, or `none`.
        known: String,
    },
    /// The command could not be started (no Landlock and unconfined commands not allowed, no
    /// `bash`, no temp dir).
    #[error("{0}")]
    Start(String),
}

/// Run a shell command (bash -c) in the workspace. Returns the exit code or signal, the
/// duration and the output as a terminal shows it (stdout and stderr interleaved). Stdin is
/// empty; the environment has only PATH, LANG and HOME (a session temp dir). The first line
/// states the sandbox: writes only inside the workspace and HOME, no sockets unless allowed,
/// limits. At timeout_ms the process group is stopped. run_in_background returns a handle at
/// once: read it with bash_output, stop it with bash_kill (at most 8 per session). Long output is
/// cut to head and tail; the whole is in the output cache.
#[tool(set = "exec", tags(exec, destructive))]
// Four model arguments, the dependencies and the context: each `#[tool]` parameter is one of these.
#[allow(clippy::too_many_arguments)]
pub async fn bash(
    /// The command line.
    command: String,
    /// Working directory relative to the workspace root (default: the root).
    workdir: Option<String>,
    /// Time limit in ms (default 120000), also in the background.
    #[arg(range(min = 1, max = 600000))]
    timeout_ms: Option<u64>,
    /// Return a handle at once (default false).
    run_in_background: Option<bool>,
    #[depends(EXEC_CONFIG)] config: ExecConfig,
    #[depends(EXEC_STATE)] state: Arc<ExecState>,
    #[depends(SANDBOX)] sandbox: Sandbox,
    #[depends(OUTPUT_STORE)] store: Arc<dyn OutputStore>,
    ctx: &ToolContext,
) -> Result<ToolResult, ToolError> {
    if command.trim().is_empty() {
        return Err(ToolError::failed(ExecError::EmptyCommand));
    }
    let timeout_ms = timeout_ms.unwrap_or(config.default_timeout_ms);
    if timeout_ms == 0 || timeout_ms > config.max_timeout_ms {
        return Err(ToolError::failed(ExecError::Timeout { value: timeout_ms, max: config.max_timeout_ms }));
    }
    let slot = state
        .admit(ctx.principal().unwrap_or_default(), config.max_commands_per_principal)
        .map_err(|max| ToolError::failed(ExecError::TooManyCommands { max }))?;
    let id = ctx.session_id().unwrap_or_default().to_owned();
    let (temp_root, memory_bytes, home_bytes) =
        (config.temp_root.clone(), config.max_session_memory_bytes, config.max_home_bytes);
    let root = sandbox.root().to_path_buf();
    let mut hidden = config.hidden.clone();
    let prefix = state.prefix().to_owned();
    let exec_user = config.user;
    let prepared = off_worker(move || -> Result<_, ExecError> {
        let workdir = resolve_workdir(&sandbox, workdir.as_deref())?;
        let user = user::resolve(exec_user, sandbox.root()).map_err(ExecError::Start)?;
        let limits = SessionLimits { temp_root, memory_bytes, home_bytes, user };
        let session = state.session(&id, &limits).map_err(ExecError::Start)?;
        // Every registry's exec temp dir (this one's too): the session's `HOME` is granted alone.
        hidden.extend(exec_dirs(&limits.temp_root));
        Ok((workdir, session, hidden, user))
    })
    .await
    .ok_or_else(shutting_down)?;
    let (workdir, session, hidden, user) = prepared.map_err(ToolError::failed)?;
    let mut env = vec![
        ("PATH".to_owned(), config.path.clone()),
        ("LANG".to_owned(), config.lang.clone()),
        ("HOME".to_owned(), session.home().to_string_lossy().into_owned()),
    ];
    env.extend(config.env.iter().cloned());
    let (session_memory, home) = session.bounds();
    let launch = Launch {
        slot: Some(slot),
        user,
        prefix,
        session_memory,
        home,
        command,
        workdir,
        env,
        writable: vec![root, session.home()],
        hidden,
        network: config.network,
        max_processes: config.max_processes,
        limits: ResourceLimits {
            cpu_seconds: config.max_cpu_seconds,
            address_space_bytes: config.max_address_space_bytes,
            file_size_bytes: config.max_file_size_bytes,
        },
        allow_unconfined: config.allow_unconfined,
        max_landlock_abi: config.max_landlock_abi,
        timeout: Duration::from_millis(timeout_ms),
        grace: Duration::from_millis(config.kill_grace_ms),
    };
    if run_in_background.unwrap_or(false) {
        start_background(launch, &session, &config).await.map(ToolResult::Text).map_err(ToolError::failed)
    } else {
        run_foreground(launch, &config, store, ctx).await
    }
}

/// Read a background command's output since the last read (at most 256 KiB a call), whether
/// it still runs, and its exit code once it ended.
#[tool(set = "exec", tags(exec, read_only))]
pub async fn bash_output(
    /// The handle bash returned (bash_1, ...).
    handle: String,
    #[depends(EXEC_CONFIG)] config: ExecConfig,
    #[depends(EXEC_STATE)] state: Arc<ExecState>,
    ctx: &ToolContext,
) -> Result<String, ExecError> {
    let (session, background) = find(&state, ctx, &handle)?;
    // The end is read before the output, so that output written before the end is all there.
    let finished = background.job.finished();
    let text = read_new(&background, &handle, finished, config.read_bytes).await?;
    if text.read_to_end {
        forget(&session, &handle).await;
    }
    Ok(text.text)
}

/// Stop a background command: SIGTERM to its process group, SIGKILL after a short grace.
/// Returns how it ended and its unread output.
#[tool(set = "exec", tags(exec, destructive))]
pub async fn bash_kill(
    /// The handle bash returned (bash_1, ...).
    handle: String,
    #[depends(EXEC_CONFIG)] config: ExecConfig,
    #[depends(EXEC_STATE)] state: Arc<ExecState>,
    ctx: &ToolContext,
) -> Result<String, ExecError> {
    let (session, background) = find(&state, ctx, &handle)?;
    background.job.stop.cancel();
    let finished = background.job.wait().await;
    let text = read_new(&background, &handle, Some(finished), config.read_bytes).await?.text;
    forget(&session, &handle).await;
    Ok(text)
}

/// The `tool-exec-*` directories in `temp_root` (each registry's session temp dirs). Blocking.
fn exec_dirs(temp_root: &std::path::Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(temp_root) else { return Vec::new() };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("tool-exec-"))
        .map(|entry| entry.path())
        .collect()
}

fn resolve_workdir(sandbox: &Sandbox, workdir: Option<&str>) -> Result<PathBuf, ExecError> {
    let Some(given) = workdir.filter(|w| !w.is_empty()) else {
        return Ok(sandbox.root().to_path_buf());
    };
    let invalid = |reason: String| ExecError::Workdir { workdir: given.to_owned(), reason };
    let path = sandbox.resolve(given).map_err(|e| invalid(format!("is refused: {e}")))?;
    if path.is_dir() { Ok(path) } else { Err(invalid("is not a directory".to_owned())) }
}

/// The session of the call and its background command `handle` (a handle is only good in the
/// session that started it).
fn find(state: &ExecState, ctx: &ToolContext, handle: &str) -> Result<(Arc<SessionExec>, Arc<Background>), ExecError> {
    let unknown = |known: String| ExecError::UnknownHandle { handle: handle.to_owned(), known };
    let session = state.existing(ctx.session_id().unwrap_or_default()).ok_or_else(|| unknown("none".to_owned()))?;
    let found = session.jobs().by_handle.get(handle).cloned();
    match found {
        Some(background) => Ok((session, background)),
        None => {
            let known = handles(&session.jobs().by_handle);
            Err(unknown(known))
        }
    }
}

/// Forgets a background command and removes its spill file.
async fn forget(session: &SessionExec, handle: &str) {
    let removed = session.jobs().by_handle.remove(handle);
    if let Some(background) = removed {
        let capture = background.job.capture.clone();
        let _ = off_worker(move || capture.path().map(std::fs::remove_file)).await;
    }
}

/// The error of a call whose blocking work could not run.
fn shutting_down() -> ToolError {
    ToolError::Failed("the command could not be started: the runtime is shutting down".to_owned())
}

fn handles(jobs: &std::collections::BTreeMap<String, Arc<Background>>) -> String {
    if jobs.is_empty() { "none".to_owned() } else { jobs.keys().cloned().collect::<Vec<_>>().join(", ") }
}

async fn start_background(
    launch: Launch,
    session: &Arc<SessionExec>,
    config: &ExecConfig,
) -> Result<String, ExecError> {
    {
        let mut jobs = session.jobs();
        if jobs.by_handle.len() + jobs.starting >= config.max_background {
            return Err(ExecError::TooManyBackground { max: config.max_background, handles: handles(&jobs.by_handle) });
        }
        jobs.starting += 1;
    }
    let started = start_spilled(launch, session, config).await;
    let mut jobs = session.jobs();
    jobs.starting -= 1;
    let (n, job) = started?;
    let handle = format!("bash_{n}");
    let text = format!(
        "{}\nstarted in the background as `{handle}` (process group {}); read its output with bash_output, stop it \
         with bash_kill",
        job.confinement, job.pgid
    );
    jobs.by_handle.insert(handle, Arc::new(Background { job, read: std::sync::Mutex::new(0) }));
    Ok(text)
}

/// Starts a background command, its output into a new spill file; its number in the session.
async fn start_spilled(
    launch: Launch,
    session: &SessionExec,
    config: &ExecConfig,
) -> Result<(u64, Arc<Job>), ExecError> {
    let (n, path) = session.next_output();
    let (preview, max_bytes) = (config.preview_bytes, config.max_output_bytes);
    let capture = off_worker(move || {
        Capture::to_file(path.clone(), preview, max_bytes)
            .map_err(|e| ExecError::Start(format!("cannot make the output file {}: {e}", path.display())))
    })
    .await
    .ok_or_else(|| ExecError::Start("the runtime is shutting down".to_owned()))??;
    let job =
        job::start(launch, capture, CancellationToken::new(), Box::new(|_| {})).await.map_err(ExecError::Start)?;
    Ok((n, job))
}

/// Runs a command in the foreground, its output into the output cache as it arrives; the result
/// (see the module docs).
async fn run_foreground(
    launch: Launch,
    config: &ExecConfig,
    store: Arc<dyn OutputStore>,
    ctx: &ToolContext,
) -> Result<ToolResult, ToolError> {
    // Stopped when the call is cancelled, and when its future is dropped.
    let stop = ctx.cancellation().child_token();
    let guard = stop.clone().drop_guard();
    let reporter = ctx.clone();
    let progress =
        Box::new(move |bytes: u64| reporter.progress(bytes, None, &format!("{bytes} bytes of output so far")));
    let sink = Sink::Store {
        store,
        session: ctx.session_id().map(str::to_owned),
        principal: ctx.principal().map(str::to_owned),
    };
    let inline = usize::try_from(config.inline_bytes).unwrap_or(usize::MAX);
    let capture = Capture::to_store(sink, config.preview_bytes, inline, config.max_output_bytes);
    let job = job::start(launch, capture, stop, progress).await.map_err(|e| ToolError::failed(ExecError::Start(e)))?;
    let finished = job.wait().await;
    guard.disarm();
    let seen = job.capture.seen();
    let (body, whole) = body_of(&job, &seen, config);
    let text = render(&job, &finished.to_string(), &body, &seen, Some(finished));
    if finished.end != End::Exited(0) {
        return Err(ToolError::Failed(text));
    }
    Ok(match &seen.stored {
        Some(Ok(ref_id)) => ToolResult::Stored(StoredResult { ref_id: ref_id.clone(), text, cut: !whole }),
        // Not in the cache: the output layer keeps the text as it keeps any other.
        _ => ToolResult::Text(text),
    })
}

/// The output as the result shows it: whole up to `inline_bytes` (then `true`), else head, a
/// marker naming the ref of the whole in the output cache, and tail.
fn body_of(job: &Job, seen: &Seen, config: &ExecConfig) -> (String, bool) {
    if seen.written <= config.inline_bytes
        && let Some(whole) = job.capture.whole()
    {
        return (whole, seen.kept == seen.written);
    }
    let (head, omitted, tail) = job.capture.preview(config.preview_lines);
    let kept = if seen.kept < seen.written {
        format!("the first {} bytes of the output ({} bytes)", seen.kept, seen.written)
    } else {
        format!("the whole output ({} bytes)", seen.written)
    };
    let whole = match &seen.stored {
        Some(Ok(ref_id)) => format!(
            "the output cache holds {kept} as ref_id `{ref_id}`: page it with tool_output_cache, search it with \
             tool_output_cache_grep"
        ),
        Some(Err(error)) => format!("the whole output ({} bytes) was not kept: {error}", seen.written),
        None => format!(
            "the whole output ({} bytes) was not kept: it had not ended when the command was stopped (a process that \
             left the command's process group still holds it)",
            seen.written
        ),
    };
    let mut body = head;
    if !body.is_empty() && !body.ends_with('\n') {
        body.push('\n');
    }
    body.push_str(&format!("[... {omitted} bytes omitted; {whole} ...]\n"));
    body.push_str(&tail);
    (body, false)
}

/// A result's text: the confinement, the status line, the output, the notes.
fn render(job: &Job, status: &str, body: &str, seen: &Seen, finished: Option<Finished>) -> String {
    let mut text = format!("{}\n{status}\n{body}", job.confinement);
    let mut note = |line: &str| {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(line);
    };
    if seen.lossy {
        note(LOSSY_NOTE);
    }
    if let Some(error) = &seen.error {
        note(&format!("[note: {error}]"));
    } else if seen.kept < seen.written {
        note(&format!(
            "[note: the output was {} bytes; only its first {} bytes were kept (the cap of the exec tools' \
             configuration, `max_output_bytes`)]",
            seen.written, seen.kept
        ));
    }
    let failed = finished.is_some_and(|f| f.end != End::Exited(0));
    if failed && let Landlock::InForce { writable, hidden, .. } = &job.confinement.landlock {
        let refused = ["Permission denied", "Operation not permitted", "Read-only file system"];
        if refused.iter().any(|r| body.contains(r)) {
            let dirs: Vec<String> = writable.iter().map(|p| p.display().to_string()).collect();
            let reads = if hidden.is_empty() { "" } else { ", reads of the server's state, caches and other sessions" };
            note(&format!(
                "[note: the command runs in a Landlock sandbox: the kernel refuses writes outside {}{reads} and, \
                 unless the network is allowed, sockets, and a read-only view of the rest refuses changes there; a \
                 \"Permission denied\" or \"Read-only file system\" above may come from it]",
                dirs.join(", ")
            ));
        }
    }
    text
}

/// `bash_output`'s text, and whether it read an ended command to its end.
struct Read {
    text: String,
    read_to_end: bool,
}

/// The new output of a background command (at most `limit` bytes, cut after a newline when one
/// is in the window), its state line, and the position read to.
async fn read_new(
    background: &Arc<Background>,
    handle: &str,
    finished: Option<Finished>,
    limit: usize,
) -> Result<Read, ExecError> {
    let seen = background.job.capture.seen();
    let from = *background.read.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let available = seen.kept - from;
    let take = available.min(limit as u64);
    let capture = background.job.capture.clone();
    let bytes = off_worker(move || -> std::io::Result<Vec<u8>> {
        use std::io::Read as _;
        let mut bytes = Vec::new();
        capture.open_at(from)?.take(take).read_to_end(&mut bytes)?;
        Ok(bytes)
    })
    .await
    .unwrap_or_else(|| Err(std::io::Error::other("the runtime is shutting down")))
    .map_err(|e| ExecError::Start(format!("cannot read the output: {e}")))?;
    let mut bytes = bytes;
    if (bytes.len() as u64) < available
        && let Some(end) = bytes.iter().rposition(|&b| b == b'\n')
    {
        bytes.truncate(end + 1);
    }
    let to = from + bytes.len() as u64;
    *background.read.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = to;
    let state = match finished {
        Some(finished) => format!("{handle}: ended, {finished}"),
        None => format!("{handle}: running · {} bytes of output so far", seen.written),
    };
    let mut body = String::from_utf8_lossy(&bytes).into_owned();
    if to < seen.kept {
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str(&format!("[{} more bytes of new output; call bash_output again]", seen.kept - to));
    }
    let text = render(&background.job, &state, &body, &seen, finished);
    Ok(Read { text, read_to_end: finished.is_some() && to >= seen.kept })
}
