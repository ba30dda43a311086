//! The configuration of the exec tools.

use std::path::PathBuf;

use tool_runtime::{DependencyError, DependencyKey, ToolContext};

/// The `PATH` commands get when the process has none.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Limits, environment and confinement of the exec tools. The defaults are those of the shell
/// tool's specification; change them by overriding [`EXEC_CONFIG`]:
///
/// ```
/// use tool_std::exec::{EXEC_CONFIG, ExecConfig};
///
/// let config = ExecConfig { network: true, ..ExecConfig::default() };
/// let builder = tool_std::registry_builder().override_dependency(&EXEC_CONFIG, config);
/// # let _ = builder;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecConfig {
    /// `bash`: `timeout_ms` when the call gives none, in milliseconds (default 120000).
    pub default_timeout_ms: u64,
    /// `bash`: the largest `timeout_ms` a call may ask for, in milliseconds (default 600000). The
    /// tool's schema states 1 to 600000 and decoding refuses what lies outside, so a larger value
    /// here allows nothing more; a smaller one refuses more, when the call runs.
    pub max_timeout_ms: u64,
    /// How long a stopped command's process group has between `SIGTERM` and `SIGKILL`, in
    /// milliseconds (default 2000).
    pub kill_grace_ms: u64,
    /// Background commands one session may have at once, running or finished but not yet read
    /// to their end (default 8).
    pub max_background: usize,
    /// The most commands one principal (the call's
    /// [`ToolContext::principal`](tool_runtime::ToolContext::principal); calls without one count
    /// together) runs at once in this registry, in the foreground and in the background, across
    /// its sessions (default 16, as many as MCP task runs per principal; 0: no cap). A command
    /// counts until its process group is gone. A `bash` call past it is refused before anything
    /// starts, saying so; other principals are not affected.
    pub max_commands_per_principal: usize,
    /// Outputs up to this many bytes are returned whole (held in memory until the command ends;
    /// the output layer cuts one over its own cap); a larger output is returned as its head and
    /// tail ([`preview_bytes`](ExecConfig::preview_bytes),
    /// [`preview_lines`](ExecConfig::preview_lines)). Either way the whole output is in the output
    /// cache under the result's `ref_id`, stored as it arrived (default 48 KiB = 49152, below
    /// the output layer's default cap of 50 KiB, so that a long output keeps its tail: the end of
    /// a build or a test run is where its verdict is).
    pub inline_bytes: u64,
    /// The most bytes of the head, and of the tail, shown of an output over
    /// [`inline_bytes`](ExecConfig::inline_bytes) (default 16 KiB = 16384; whole lines where the
    /// lines are short).
    pub preview_bytes: usize,
    /// The most lines of the head, and of the tail, shown of an output over
    /// [`inline_bytes`](ExecConfig::inline_bytes) (default 500; with the marker, well within the
    /// output layer's default cap of 2000 lines).
    pub preview_lines: usize,
    /// The most bytes of one command's output kept: in the output cache (a foreground command)
    /// or in its spill file (a background one). Default 1 GiB = 1073741824, so that a command
    /// printing 1 GB is kept whole: beyond the output cache's default size cap of 256 MiB, which
    /// holds one output larger than itself beside the others until another such output replaces
    /// it (see [`StoreLimits::max_bytes`](tool_runtime::output::StoreLimits::max_bytes)). Past it
    /// the output is still read, so the command goes on, and its tail is still shown; the result
    /// says how much was not kept.
    pub max_output_bytes: u64,
    /// `bash_output`: the most bytes of new output one call returns; the rest waits for the next
    /// call (default 256 KiB = 262144).
    pub read_bytes: usize,
    /// `true` lets commands open TCP connections and bind TCP ports; `false` (the default) has
    /// Landlock refuse both where the kernel's Landlock ABI is 4 or more. Turn it on together with
    /// the permission for `external` tools.
    pub network: bool,
    /// `true` runs commands without Landlock where the kernel has none (the result's first line
    /// says so); `false` (the default) refuses to run them there.
    pub allow_unconfined: bool,
    /// The highest Landlock ABI whose rules commands are confined by (default `None`: the
    /// kernel's). A lower value confines as an older kernel would: below 6 a command may signal
    /// processes outside its sandbox, below 4 its TCP is not confined (the first line says so),
    /// and 0 treats the kernel as having no Landlock, so that commands are refused unless
    /// [`allow_unconfined`](ExecConfig::allow_unconfined). For running under the rules a fleet of
    /// older kernels shares, and for testing those fallbacks on a newer kernel.
    pub max_landlock_abi: Option<i32>,
    /// The `PATH` of every command (default: this process's `PATH`, else
    /// `/usr/local/bin:/usr/bin:/bin`).
    pub path: String,
    /// The `LANG` of every command (default `C.UTF-8`).
    pub lang: String,
    /// More variables every command gets, set by the operator (default none): e.g. `CARGO_HOME`
    /// and `RUSTUP_HOME`, which are found below `HOME` otherwise. Nothing of this process's
    /// environment is passed on unless it is named here.
    pub env: Vec<(String, String)>,
    /// Where the per-session temp dirs are made (default: [`std::env::temp_dir`]), in one
    /// directory `tool-exec-*` per registry. Commands can read no `tool-exec-*` directory there
    /// but their own session's `HOME`.
    pub temp_root: PathBuf,
    /// Directories commands can neither read nor write, which need not exist yet (default: the
    /// default directories of the session store,
    /// [`default_sessions_dir`](crate::session::default_sessions_dir), and of the output cache,
    /// [`default_cache_dir`](tool_runtime::output::default_cache_dir); an app keeping them
    /// elsewhere names its own). The directories on the way to one can be entered but not listed;
    /// their other entries stay readable (see [`confine`](super::confine)).
    pub hidden: Vec<PathBuf>,
    /// The most processes and threads a command may have at once, counted by a cgroup v1 `pids`
    /// controller made for it (default 512; 0: no limit). Where there is none, the result's first
    /// line says so.
    pub max_processes: u64,
    /// `RLIMIT_CPU` of each process of a command, in seconds of CPU time (default 600, the
    /// longest time limit, so that a single-threaded process is never stopped by it before the
    /// time limit; 0: the server's own limit).
    pub max_cpu_seconds: u64,
    /// `RLIMIT_AS` of each process of a command, its address space in bytes (default 8 GiB =
    /// 8589934592: compilers and test runners reserve more than they use; 0: the server's own).
    pub max_address_space_bytes: u64,
    /// `RLIMIT_FSIZE` of each process of a command, the largest file it may write, in bytes
    /// (default 1 GiB = 1073741824; 0: the server's own). A write past it fails (`EFBIG`) and
    /// the process gets `SIGXFSZ`.
    pub max_file_size_bytes: u64,
    /// The most memory the commands of one session use together, in bytes: a cgroup v1 `memory`
    /// controller per session (`memory.limit_in_bytes`), which every command of the session
    /// joins; past it the kernel reclaims the session's page cache and then kills one of its
    /// processes (the OOM killer: the command reads `exit code 137`). Its `HOME`, a `tmpfs`, is
    /// counted there too. Default 4 GiB = 4294967296; 0: no limit of ours. Where there is no
    /// such controller, the result's first line says so.
    pub max_session_memory_bytes: u64,
    /// The most bytes a session's `HOME` holds: it is a `tmpfs` of this size mounted on the
    /// session's temp dir (writes past it fail with `ENOSPC`, "No space left on device"), made
    /// when the session runs its first command and unmounted when the registry closes. Default
    /// 1 GiB = 1073741824; 0: a plain directory on the file system of
    /// [`temp_root`](ExecConfig::temp_root). Where it cannot be mounted (no `CAP_SYS_ADMIN`), the
    /// result's first line says so.
    pub max_home_bytes: u64,
    /// The user commands run as (default [`ExecUser::WorkspaceOwner`]): a user other than root
    /// cannot change the modes, owners, times or extended attributes of files outside the
    /// workspace, nor read a root-only file through a hard link into the workspace, which
    /// Landlock (path-based, without rights for metadata) does not stop for root.
    pub user: ExecUser,
}

/// Who commands run as, when the server runs as root (a server that is not root runs them as
/// itself: no other user is open to it). The switch is made by util-linux's `setpriv --reuid
/// UID --regid GID --clear-groups` (so `setpriv` must be on the `PATH`), before the shell's
/// parent-death signal is set, with `CAP_SETUID` and `CAP_SETGID` kept in the bounding set for
/// it alone: once every user id of the process is not 0, the kernel clears its capabilities.
/// The session's `HOME` belongs to that user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ExecUser {
    /// The owner of the workspace root (its user and group id), when that is not root; else
    /// root, and the result's first line says what root may still do. toolbox `--exec-user
    /// owner`.
    #[default]
    WorkspaceOwner,
    /// The server's own user, root included. toolbox `--exec-user server`.
    Server,
    /// This user and group id (0 is root). The workspace root must be writable by it, else
    /// `bash` refuses to run, saying what to change. toolbox `--exec-user UID[:GID]`.
    Id {
        /// The user id.
        uid: u32,
        /// The group id (its only group: supplementary groups are cleared).
        gid: u32,
    },
}

impl std::str::FromStr for ExecUser {
    type Err = String;

    /// `owner`, `server`, `UID` (the group id is the same number) or `UID:GID`, decimal.
    ///
    /// # Errors
    /// A message naming the accepted forms.
    fn from_str(value: &str) -> Result<Self, String> {
        let number = |text: &str| text.parse::<u32>().ok();
        match value {
            "owner" => Ok(Self::WorkspaceOwner),
            "server" => Ok(Self::Server),
            _ => {
                let (uid, gid) = value.split_once(':').unwrap_or((value, value));
                match (number(uid), number(gid)) {
                    (Some(uid), Some(gid)) => Ok(Self::Id { uid, gid }),
                    _ => Err(format!(
                        "`{value}` is not a user: give `owner` (the workspace's owner), `server` (the server's own \
                         user) or a decimal `UID` or `UID:GID`"
                    )),
                }
            }
        }
    }
}

impl Default for ExecConfig {
    fn default() -> Self {
        Self {
            default_timeout_ms: 120_000,
            max_timeout_ms: 600_000,
            kill_grace_ms: 2_000,
            max_background: 8,
            max_commands_per_principal: 16,
            inline_bytes: 48 * 1024,
            preview_bytes: 16 * 1024,
            preview_lines: 500,
            max_output_bytes: 1024 * 1024 * 1024,
            read_bytes: 256 * 1024,
            network: false,
            allow_unconfined: false,
            max_landlock_abi: None,
            path: std::env::var("PATH").unwrap_or_else(|_| FALLBACK_PATH.to_owned()),
            lang: "C.UTF-8".to_owned(),
            env: Vec::new(),
            temp_root: std::env::temp_dir(),
            hidden: default_hidden(),
            max_processes: 512,
            max_cpu_seconds: 600,
            max_address_space_bytes: 8 << 30,
            max_file_size_bytes: 1 << 30,
            max_session_memory_bytes: 4 << 30,
            max_home_bytes: 1 << 30,
            user: ExecUser::WorkspaceOwner,
        }
    }
}

/// The default directories of the session store and the output cache, where known.
fn default_hidden() -> Vec<PathBuf> {
    let sessions = crate::session::default_sessions_dir().ok();
    sessions.into_iter().chain(tool_runtime::output::default_cache_dir()).collect()
}

/// The exec tools' configuration: [`ExecConfig::default`], once per registry.
pub static EXEC_CONFIG: DependencyKey<ExecConfig> = DependencyKey::shared("exec_config", default_config);

fn default_config(_ctx: &ToolContext) -> Result<ExecConfig, DependencyError> {
    Ok(ExecConfig::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_is_owner_server_or_a_uid_with_an_optional_gid() {
        assert_eq!("owner".parse(), Ok(ExecUser::WorkspaceOwner));
        assert_eq!("server".parse(), Ok(ExecUser::Server));
        assert_eq!("1000".parse(), Ok(ExecUser::Id { uid: 1000, gid: 1000 }));
        assert_eq!("1000:100".parse(), Ok(ExecUser::Id { uid: 1000, gid: 100 }));
    }

    #[test]
    fn anything_else_is_refused_naming_the_accepted_forms() {
        for bad in ["nobody", "1000:", ":100", "-1", "1000:100:1", ""] {
            assert_eq!(
                bad.parse::<ExecUser>(),
                Err(format!(
                    "`{bad}` is not a user: give `owner` (the workspace's owner), `server` (the server's own user) \
                     or a decimal `UID` or `UID:GID`"
                )),
            );
        }
    }
}
