//! The confinement of a command, applied to the thread that spawns it.
//!
//! Every mechanism below restricts the calling *thread* and what it starts afterwards, and none
//! can be lifted by the command. So it is applied on a short-lived thread made for one spawn: the
//! thread joins a cgroup of its own, unshares the pid, IPC, network and mount namespaces of its
//! children (with a `/proc` of their own), drops
//! capabilities from its bounding set, restricts itself with Landlock and a seccomp filter,
//! spawns the command (which inherits all of it across `fork` and `exec`), and ends. The
//! process's other threads stay unrestricted, and no code runs between `fork` and `exec` (no
//! `pre_exec`, so no `unsafe`).
//!
//! | What a command might reach | What stops it | Where the kernel lacks it |
//! |---|---|---|
//! | Files outside the workspace (writes) | Landlock: writes only below the workspace and the session's `HOME`, and to a few device files; no device nodes made anywhere (`MakeChar`/`MakeBlock` are not granted; `CAP_MKNOD` is dropped) | no Landlock: refused unless [`allow_unconfined`](super::ExecConfig::allow_unconfined); then said in the first line |
//! | The state and cache directories, other sessions' temp dirs (reads) | Landlock's allow-list: read is granted on every entry of each ancestor of a hidden directory except the one on the way to it ([`ExecConfig::hidden`](super::ExecConfig::hidden)); the ancestors themselves cannot be listed | as above |
//! | Other processes in `/proc` (another session's command line and environment, the server's) | a mount namespace per command with a `proc` of its own mounted `hidepid=ptraceable`: a process is listed (and its entry entered) only when the command may trace it, which the capability check (below) and Landlock's ptrace rule (each command is a Landlock domain of its own) allow for its own processes alone; `/proc` keeps the host's pid numbers | no `CAP_SYS_ADMIN`: said in the first line |
//! | System V IPC (shared memory, semaphores, message queues), shared with the host and outliving the command | an IPC namespace per command: what it makes there ends with it | no namespace: seccomp refuses every System V IPC call; said in the first line |
//! | Netlink (`sock_diag` lists the host's sockets), `/proc/net` | seccomp refuses `AF_NETLINK` when the network is off, and a network namespace per command (only a loopback, down) leaves `/proc/net` empty of the host's sockets | no namespace: `/proc/net` shows the host's; said in the first line |
//! | User namespaces (every capability again, inside one) | seccomp refuses `unshare` and `clone` with `CLONE_NEWUSER`, and answers `clone3` (whose flags it cannot read) with `ENOSYS`, so that libc falls back to `clone` | no seccomp: said in the first line |
//! | The kernel's keyrings (root's user keyring is the host's and outlives the command) | seccomp refuses `add_key`, `keyctl` and `request_key` | as above |
//! | The server's environment (`/proc/PID/environ`) | the command's environment is cleared; its capabilities are a strict subset of the server's (the bounding set below), so the kernel's ptrace check (`PTRACE_MODE_READ`: the caller's permitted capabilities must cover the target's, or it needs `CAP_SYS_PTRACE`, which is dropped) refuses it; Landlock's ptrace rule where the kernel applies it to `/proc` reads (on Linux 6.18 it did not: the capability check is what refused it) | a server without capabilities (not root) relies on Landlock alone |
//! | TCP | Landlock ABI 4 (`connect`, `bind`), unless [`network`](super::ExecConfig::network) | with seccomp, `socket` refuses IPv4 and IPv6 altogether; without either, said in the first line |
//! | UDP, raw sockets, SCTP, Unix sockets by path, `AF_VSOCK`, netlink, everything but TCP | seccomp on `socket`'s family, type and protocol (`EACCES`), and `io_uring_setup` refused (it can make sockets without `socket`); Landlock ABI 6 scopes abstract Unix sockets to the sandbox | no seccomp: said in the first line |
//! | Signals to the server or other commands | the pid namespace (other processes have no pid in it); Landlock ABI 6's signal scope (against pidfds of `/proc` entries) | below ABI 6 without a namespace, `kill` by pid reaches same-uid processes |
//! | Processes that leave the group (`setsid`, double fork) | a pid namespace per command (`unshare(CLONE_NEWPID)` on the spawn thread): the shell is its pid 1, and when it ends, by itself or by `SIGKILL` from the server (at the end, the time limit, `bash_kill`, the registry's close or drop), the kernel kills every process in it | no namespace (no `CAP_SYS_ADMIN`): only the process group is stopped; said in the first line |
//! | Processes left when the server is killed (`SIGKILL`, a crash) | the shell is started by `setpriv --pdeathsig KILL` from a thread that lives as long as the command: when the server goes, the kernel kills the shell and with it its pid namespace; seccomp refuses a `prctl` setting another parent-death signal | no `setpriv` (util-linux) on the `PATH`, or no seccomp: said in the first line |
//! | Metadata outside the workspace (modes, owners, times, extended attributes); root-only files hard-linked into the workspace | the user: as root, the server runs commands as another ([`ExecUser`](super::ExecUser): by default the owner of the workspace root), switched by `setpriv --reuid --regid --clear-groups` (with `CAP_SETUID` and `CAP_SETGID` kept in the bounding set for it; the kernel clears every capability once no user id is 0), so the kernel's own permission checks refuse them. For root too (a root-owned workspace, or [`ExecUser::Server`](super::ExecUser::Server)), Landlock having no right for metadata: the command's mount namespace binds the workspace and `HOME` onto themselves and remounts every other mount but `/proc` read-only (`EROFS`; device files stay writable); a root-only file hard-linked into the workspace stays readable to root; the set-user-ID and set-group-ID bits are refused everywhere by seccomp (`chmod`, `fchmod`, `fchmodat`, `fchmodat2`, `creat`, `mknod`, `mknodat`, `open` and `openat` with `O_CREAT` or `O_TMPFILE`; `openat2` altogether), and `SETUID`/`SETGID` are dropped | no seccomp: said in the first line |
//! | The operator's terminal | the shell leads a session of its own (`setsid`, util-linux), so it has no controlling terminal; seccomp refuses `TIOCSTI` and `TIOCLINUX` | no `setsid` on the `PATH`: only the `ioctl`s are refused |
//! | Descriptors the server inherited without close-on-exec | the shell closes every descriptor but 0, 1 and 2 before the command's first word | — |
//! | Inbound TCP | seccomp refuses `listen` when the network is off (a socket never bound gets a port of its own, which Landlock's `bind` right does not see) | no seccomp: said in the first line |
//! | Fork bombs, threads | a cgroup v1 `pids` controller per command (`pids.max`, processes and threads), joined by the spawn thread through its `tasks` file | no `pids` cgroup (cgroup v2 only, no write access): said in the first line; `RLIMIT_NPROC` is not used, the kernel never enforces it for root |
//! | Memory of a whole session (three processes each under its address space limit) | a cgroup v1 `memory` controller per session (`memory.limit_in_bytes`), joined by every spawn thread of the session through its `tasks` file; its `HOME` (`tmpfs`) is counted there too | no `memory` cgroup: said in the first line |
//! | Disk in the session's `HOME` | a `tmpfs` of [`max_home_bytes`](super::ExecConfig::max_home_bytes) mounted on it when the session starts (`ENOSPC` past it), unmounted when the registry closes or is dropped | no `CAP_SYS_ADMIN`: a plain directory, said in the first line |
//! | CPU, memory, disk | `RLIMIT_CPU`, `RLIMIT_AS`, `RLIMIT_FSIZE` per process, set by the shell's `ulimit -S -H` before the command's first word runs; `CAP_SYS_RESOURCE` is dropped, so the hard limits cannot be raised again | a limit the server's own hard limit is below is held at the server's |
//!
//! The pid namespace rather than a child subreaper: a subreaper is a property of the whole server
//! process, collects every orphan of every command (which the server then has to reap and tell
//! apart), and cannot kill anything by itself; a namespace is per command, is set up per thread
//! without `pre_exec`, and its end is the kernel's. Its cost: the shell is pid 1, which the kernel
//! gives only the signals it has a handler for, so the shell gets `trap 'exit 143' TERM` (a
//! stopped command still ends at `SIGTERM`; a `SIGKILL` from the server always works), and
//! signals the shell sends itself (`kill -KILL $$`) are ignored. `/proc` is the host's, so a pid
//! in it is not the pid the command's `$$` and `$!` name.

use std::fmt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError,
    RulesetStatus, Scope, path_beneath_rules,
};
use rustix::process::{Resource, getrlimit};

use super::cleanup;
use rustix::thread::{CapabilitySet, remove_capability_from_bounding_set};

/// The newest Landlock ABI whose file system rights the rules name (ABI 5 added `ioctl` on
/// devices; later ABIs add no file system right).
const FS_ABI: ABI = ABI::V5;

/// The Landlock ABI that added TCP `connect` and `bind` rights.
const NET_ABI: ABI = ABI::V4;

/// The Landlock ABI that added scoping signals and abstract Unix sockets to the sandbox.
const SCOPE_ABI: ABI = ABI::V6;

/// Device files every command may write (and read): the ones shells and build tools open.
const WRITABLE_DEVICES: [&str; 6] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"];

/// The capabilities a command keeps (the file ones, so that a workspace owned by root stays
/// writable and tools like `cp -p` or `tar` work, plus binding ports below 1024 when the network
/// is allowed); every other is dropped from the spawn thread's bounding set. Not `SETUID` nor
/// `SETGID`: a change of user id clears the parent-death signal the shell's end with the server
/// depends on. Not `KILL`: a command signals its own processes, which share its user id.
const KEPT_CAPABILITIES: CapabilitySet = CapabilitySet::CHOWN
    .union(CapabilitySet::DAC_OVERRIDE)
    .union(CapabilitySet::DAC_READ_SEARCH)
    .union(CapabilitySet::FOWNER)
    .union(CapabilitySet::FSETID)
    .union(CapabilitySet::NET_BIND_SERVICE);

/// The confinement a command ran under, as the first line of its result states it
/// (`[sandbox: ...]`): each part says what the kernel enforced and, where it could not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Confinement {
    /// Files: Landlock, or why it is not in force.
    pub landlock: Landlock,
    /// Sockets.
    pub network: NetworkConfinement,
    /// `Ok` when every process of the command ends with its shell (a pid namespace); else why not.
    pub contained: Result<(), String>,
    /// `Ok` when the shell ends with the server, killed or not (its parent-death signal is
    /// `SIGKILL`, which the command cannot change: seccomp refuses any other); else why not.
    pub server_exit: Result<(), String>,
    /// The most processes and threads at once (the `pids` cgroup), or why there is no such limit.
    pub processes: Result<u64, String>,
    /// The per-process limits in force.
    pub limits: ResourceLimits,
    /// The most memory the session's commands use together (its `memory` cgroup, in bytes), or
    /// why there is no such limit.
    pub session_memory: Result<u64, String>,
    /// The most bytes the session's `HOME` holds (a `tmpfs`), or why there is no such bound.
    pub home: Result<u64, String>,
    /// `Err(reason)` when the server runs as root and the command kept its capabilities.
    pub capabilities: Result<(), String>,
    /// `Ok` when the command has namespaces of its own for what it would otherwise share with
    /// the host: System V IPC (an IPC namespace, which ends with the command), the network when
    /// it is not allowed (a network namespace with only a loopback that is down, so that neither
    /// netlink nor `/proc/net` shows the host's sockets), and a `/proc` (a mount namespace with a
    /// `proc` mounted `hidepid=ptraceable`, which lists only the processes the command may trace:
    /// its own). Else each that is missing, and why.
    pub isolation: Result<(), String>,
    /// The command runs as root (user id 0) without the read-only view of what lies outside the
    /// workspace and `HOME` (no mount namespace could be made): it may change the modes, owners,
    /// times and extended attributes of files outside the workspace (Landlock has no right for
    /// them, and root owns them), though never set the set-user-ID or set-group-ID bit
    /// (seccomp). Said in the first line; run commands as another user to confine them.
    pub as_root: bool,
    /// The user the command runs as when it is not the server's (see
    /// [`ExecUser`](super::ExecUser)).
    pub user: Option<CommandUser>,
}

/// A user other than the server's that a command runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandUser {
    /// Its user id (not 0).
    pub uid: u32,
    /// Its group id, its only group.
    pub gid: u32,
    /// It was chosen as the owner of the workspace root
    /// ([`ExecUser::WorkspaceOwner`](super::ExecUser::WorkspaceOwner)).
    pub workspace_owner: bool,
}

/// Whether Landlock confines a command's files.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Landlock {
    /// Landlock is in force.
    InForce {
        /// The Landlock ABI in force (the lower of the kernel's and the newest the `landlock`
        /// crate knows).
        abi: i32,
        /// The directories the command may write below; everything else is read-only.
        writable: Vec<PathBuf>,
        /// The directories the command can neither read nor write (as they were found).
        hidden: Vec<PathBuf>,
    },
    /// No Landlock: the kernel has none and the configuration allows unconfined commands
    /// ([`ExecConfig::allow_unconfined`](super::ExecConfig::allow_unconfined)).
    Off {
        /// Why Landlock is not in force.
        reason: String,
    },
}

/// How a command's sockets are confined.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NetworkConfinement {
    /// The network is allowed by the configuration ([`ExecConfig::network`](super::ExecConfig::network)).
    Allowed,
    /// TCP (Landlock, or seccomp refusing IPv4 and IPv6), UDP, Unix, netlink and every other
    /// socket family (seccomp) are refused.
    Refused,
    /// TCP is refused by Landlock; there is no seccomp filter, so UDP and Unix sockets are not
    /// (abstract Unix sockets are where the Landlock ABI is 6 or more).
    TcpOnly {
        /// Why there is no seccomp filter.
        reason: String,
    },
    /// Neither Landlock (ABI 4) nor seccomp could refuse anything.
    NotConfinable {
        /// Why there is no seccomp filter.
        reason: String,
    },
}

/// Per-process resource limits (`setrlimit`, soft and hard), 0 for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResourceLimits {
    /// `RLIMIT_CPU`, in seconds of CPU time (all threads of a process together).
    pub cpu_seconds: u64,
    /// `RLIMIT_AS`, the address space of a process, in bytes.
    pub address_space_bytes: u64,
    /// `RLIMIT_FSIZE`, the largest file a process may write, in bytes.
    pub file_size_bytes: u64,
}

impl ResourceLimits {
    /// These limits held to the server's own hard limits (a process cannot raise its hard limits
    /// without `CAP_SYS_RESOURCE`, so a lower one of the server's is the one in force).
    pub(crate) fn within_own(self) -> Self {
        let own = |resource, wanted: u64| -> u64 {
            let hard = getrlimit(resource).maximum;
            match (wanted, hard) {
                (0, hard) => hard.unwrap_or(0),
                (wanted, Some(hard)) => wanted.min(hard),
                (wanted, None) => wanted,
            }
        };
        Self {
            cpu_seconds: own(Resource::Cpu, self.cpu_seconds),
            address_space_bytes: own(Resource::As, self.address_space_bytes),
            file_size_bytes: own(Resource::Fsize, self.file_size_bytes),
        }
    }

    /// The bash builtins setting them (`ulimit -S -H`: `-t` seconds, `-v` and `-f` KiB), ending
    /// with `; `, or nothing when no limit is set.
    pub(crate) fn ulimit(&self) -> String {
        let mut options = String::new();
        for (option, value) in
            [("t", self.cpu_seconds), ("v", self.address_space_bytes / 1024), ("f", self.file_size_bytes / 1024)]
        {
            if value > 0 {
                options.push_str(&format!(" -{option} {value}"));
            }
        }
        if options.is_empty() { String::new() } else { format!("ulimit -S -H{options} || exit 126; ") }
    }
}

/// `8 GiB`, `512 MiB`, `1000 bytes`.
fn size(bytes: u64) -> String {
    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;
    if bytes >= GIB && bytes.is_multiple_of(GIB) {
        format!("{} GiB", bytes / GIB)
    } else if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

impl fmt::Display for Confinement {
    /// `[sandbox: landlock ABI 7; writes only below /ws, /tmp/s/home; network refused (tcp, udp,
    /// unix sockets); every process ends with the command and with the server; limits: 512 processes, 600 cpu s, 8 GiB
    /// address space, 1 GiB per file, 4 GiB memory per session, 1 GiB HOME]`; without Landlock it starts `[sandbox: none (<reason>);
    /// files are not confined by Landlock; ...`. Each part the kernel could not enforce says so and why.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        match &self.landlock {
            Landlock::InForce { abi, writable, .. } => {
                let dirs: Vec<String> = writable.iter().map(|p| p.display().to_string()).collect();
                parts.push(format!("landlock ABI {abi}"));
                parts.push(format!("writes only below {}", dirs.join(", ")));
            }
            Landlock::Off { reason } => {
                parts.push(format!("none ({reason})"));
                parts.push("files are not confined by Landlock".to_owned());
            }
        }
        parts.push(match &self.network {
            NetworkConfinement::Allowed => "network allowed".to_owned(),
            NetworkConfinement::Refused => "network refused (tcp, udp, unix sockets)".to_owned(),
            NetworkConfinement::TcpOnly { reason } => {
                format!("tcp refused; udp and unix sockets not confined (no seccomp: {reason})")
            }
            NetworkConfinement::NotConfinable { reason } => {
                format!("network not confined (needs Landlock ABI 4 or seccomp: {reason})")
            }
        });
        parts.push(match (&self.contained, &self.server_exit) {
            (Ok(()), Ok(())) => "every process ends with the command and with the server".to_owned(),
            (Ok(()), Err(reason)) => format!("every process ends with the command, not with the server ({reason})"),
            (Err(reason), _) => {
                format!("processes that leave the group may outlive the command (no pid namespace: {reason})")
            }
        });
        let processes = match &self.processes {
            Ok(max) => format!("{max} processes"),
            Err(reason) => format!("processes not limited ({reason})"),
        };
        let ResourceLimits { cpu_seconds, address_space_bytes, file_size_bytes } = self.limits;
        let cpu = if cpu_seconds > 0 { format!("{cpu_seconds} cpu s") } else { "cpu not limited".to_owned() };
        let memory = if address_space_bytes > 0 {
            format!("{} address space", size(address_space_bytes))
        } else {
            "address space not limited".to_owned()
        };
        let files = if file_size_bytes > 0 {
            format!("{} per file", size(file_size_bytes))
        } else {
            "file size not limited".to_owned()
        };
        let session_memory = match &self.session_memory {
            Ok(max) => format!("{} memory per session", size(*max)),
            Err(reason) => format!("memory per session not limited ({reason})"),
        };
        let home = match &self.home {
            Ok(max) => format!("{} HOME", size(*max)),
            Err(reason) => format!("HOME not bounded ({reason})"),
        };
        parts.push(format!("limits: {processes}, {cpu}, {memory}, {files}, {session_memory}, {home}"));
        if let Err(reason) = &self.capabilities {
            parts.push(format!("capabilities kept ({reason})"));
        }
        if let Err(reason) = &self.isolation {
            parts.push(format!("shared with the host: {reason}"));
        }
        if self.as_root {
            parts.push("as root: chmod and chown outside the workspace are not confined".to_owned());
        }
        if let Some(CommandUser { uid, gid, workspace_owner }) = self.user {
            let owner = if workspace_owner { ", the owner of the workspace" } else { "" };
            parts.push(format!("as uid {uid} (gid {gid}){owner}"));
        }
        write!(f, "[sandbox: {}]", parts.join("; "))
    }
}

/// What to confine a command to.
#[derive(Debug)]
pub(crate) struct Rules<'a> {
    /// The directories it may write below.
    pub(crate) writable: &'a [&'a Path],
    /// The directories it may not read (nor write), which need not exist.
    pub(crate) hidden: &'a [PathBuf],
    /// Sockets allowed.
    pub(crate) network: bool,
    /// Run where Landlock is not in force.
    pub(crate) allow_unconfined: bool,
    /// The highest Landlock ABI to ask rules of (`None`: the kernel's).
    pub(crate) max_abi: Option<i32>,
    /// The most processes and threads (0: no limit).
    pub(crate) max_processes: u64,
    /// The name of the command's `pids` cgroup (`<registry prefix>-c<k>`, see
    /// [`cleanup`](super::cleanup)).
    pub(crate) pids_cgroup: &'a str,
    /// The session's `memory` cgroup to join and its limit in bytes, or why there is none.
    pub(crate) session_memory: &'a Result<(PathBuf, u64), String>,
    /// The bound of the session's `HOME`, or why there is none (said in the first line).
    pub(crate) home: &'a Result<u64, String>,
    /// The per-process limits (as configured; held to the server's own here).
    pub(crate) limits: ResourceLimits,
    /// The user to run as, when not the server's: `CAP_SETUID` and `CAP_SETGID` stay in the
    /// bounding set for `setpriv` to switch to it.
    pub(crate) user: Option<CommandUser>,
}

/// Confines the calling thread (and what it spawns later) by `rules`, in the order each step
/// needs: the `pids` cgroup and the pid namespace first (they need privileges the later steps
/// take away), then the capabilities, Landlock, and seccomp. The cgroup joined, if any, is
/// returned in every case, for the caller to remove once the command has ended.
///
/// # Errors
/// The refusal the model reads when Landlock is not in force and unconfined commands are not
/// allowed. The thread is then partly confined and must spawn nothing.
pub(crate) fn confine_thread(rules: &Rules<'_>) -> (Result<Confinement, String>, Option<Cgroup>) {
    let (cgroup, processes) = match rules.max_processes {
        0 => (None, Err("none configured".to_owned())),
        max => match Cgroup::make("pids", rules.pids_cgroup, &[("pids.max", max.to_string())])
            .and_then(|cgroup| cgroup.join().map(|()| cgroup))
        {
            Ok(cgroup) => (Some(cgroup), Ok(max)),
            Err(reason) => (None, Err(reason)),
        },
    };
    let session_memory = rules.session_memory.as_ref().map_err(String::clone).and_then(|(dir, max)| {
        join_cgroup(dir).map(|()| *max).map_err(|e| format!("cannot join the session's memory cgroup: {e}"))
    });
    (confine_rest(rules, processes, session_memory), cgroup)
}

fn confine_rest(
    rules: &Rules<'_>,
    processes: Result<u64, String>,
    session_memory: Result<u64, String>,
) -> Result<Confinement, String> {
    let contained = new_pid_namespace();
    let isolation = isolate(rules.network, rules.writable);
    let capabilities = drop_capabilities(rules.user.is_some());
    let hidden = hidden_dirs(rules.hidden);
    let (landlock, tcp) = match restrict_thread(rules.writable, &hidden, rules.network, rules.max_abi) {
        Ok((abi, tcp)) => {
            (Landlock::InForce { abi, writable: rules.writable.iter().map(|p| p.to_path_buf()).collect(), hidden }, tcp)
        }
        Err(reason) => (unconfined(reason, rules.allow_unconfined)?, false),
    };
    let own_ipc = !isolation.as_ref().is_err_and(|missing| missing.iter().any(|m| m.starts_with("SysV")));
    let filtered = filter_syscalls((!rules.network).then_some(tcp), own_ipc);
    let network = match (rules.network, &filtered) {
        (true, _) => NetworkConfinement::Allowed,
        (false, Ok(())) => NetworkConfinement::Refused,
        (false, Err(reason)) if tcp => NetworkConfinement::TcpOnly { reason: reason.clone() },
        (false, Err(reason)) => NetworkConfinement::NotConfinable { reason: reason.clone() },
    };
    let server_exit = filtered.map_err(|reason| format!("no seccomp to keep its parent-death signal: {reason}"));
    let limits = rules.limits.within_own();
    let user = rules.user;
    let read_only = !isolation.as_ref().is_err_and(|missing| missing.iter().any(|m| m.starts_with(METADATA)));
    let as_root = user.is_none() && rustix::process::geteuid().is_root() && !read_only;
    let isolation = isolation.map_err(|missing| missing.join(", "));
    let home = rules.home.clone();
    Ok(Confinement {
        landlock,
        network,
        contained,
        server_exit,
        processes,
        limits,
        session_memory,
        home,
        capabilities,
        isolation,
        as_root,
        user,
    })
}

/// Makes the calling thread's next child the pid 1 of a new pid namespace
/// (`unshare(CLONE_NEWPID)` changes only the namespace this thread's children are made in).
fn new_pid_namespace() -> Result<(), String> {
    // `unshare` is deprecated in favour of `unshare_unsafe` because `CLONE_FILES` can make file
    // descriptors of other threads unusable in this one; `NEWPID` alone touches no descriptor
    // and no memory, so the call is sound.
    #[allow(deprecated)]
    rustix::thread::unshare(rustix::thread::UnshareFlags::NEWPID).map_err(|e| format!("unshare: {e}"))
}

/// Gives the calling thread's next child namespaces of its own (each `unshare` changes only this
/// thread's): IPC, network unless `network` is allowed, and mount, with a `/proc` of its own
/// mounted `hidepid=ptraceable` (a process appears there only if the reader may trace it; the
/// command's capabilities are a strict subset of the server's and Landlock keeps each command
/// in a domain of its own, so the server's and other sessions' processes are not listed, and
/// entered by pid they refuse with `EPERM`), and everything but `writable` and `/proc` read-only
/// ([`read_only_outside`]). Each needs `CAP_SYS_ADMIN`, so it is done before the capabilities
/// are dropped, and before Landlock, which refuses mounts. `Err` lists what is missing and why
/// (the missing IPC namespace starts with `SysV`: seccomp then refuses System V IPC
/// altogether; the missing read-only view with [`METADATA`]).
fn isolate(network: bool, writable: &[&Path]) -> Result<(), Vec<String>> {
    use rustix::mount::{MountFlags, MountPropagationFlags, mount, mount_change};
    use rustix::thread::UnshareFlags;
    // As in `new_pid_namespace`: none of these flags touches a descriptor or memory.
    #[allow(deprecated)]
    let unshare = |flags| rustix::thread::unshare(flags).map_err(|e| format!("unshare: {e}"));
    let mut missing = Vec::new();
    if let Err(e) = unshare(UnshareFlags::NEWIPC) {
        missing.push(format!("SysV IPC refused (no IPC namespace: {e})"));
    }
    if !network && let Err(e) = unshare(UnshareFlags::NEWNET) {
        missing.push(format!("netlink and /proc/net (no network namespace: {e})"));
    }
    let proc = unshare(UnshareFlags::NEWNS).and_then(|()| {
        // Nothing mounted here reaches the host's mount namespace.
        mount_change("/", MountPropagationFlags::REC | MountPropagationFlags::PRIVATE)
            .and_then(|()| {
                let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
                mount("proc", "/proc", "proc", flags, c"hidepid=ptraceable")
            })
            .map_err(|e| format!("mount: {e}"))
    });
    match proc {
        Err(e) => {
            missing.push(format!("the processes in /proc (no /proc of its own: {e})"));
            missing.push(format!("{METADATA} (no mount namespace)"));
        }
        Ok(()) => {
            if let Err(e) = read_only_outside(writable) {
                missing.push(format!("{METADATA} ({e})"));
            }
        }
    }
    if missing.is_empty() { Ok(()) } else { Err(missing) }
}

/// How [`isolate`] names what stays open when the rest of the file system is not read-only.
const METADATA: &str = "modes, owners and times outside the workspace";

/// In the calling thread's own mount namespace: binds each of `writable` onto itself
/// (recursively, so its own mounts stay as they are), then remounts every other mount but
/// `/proc` read-only, keeping its other flags. A command, root included, then changes no mode,
/// owner, time or extended attribute of a file outside (`EROFS`), which Landlock has no right
/// for; writes to device files go on (a read-only mount refuses changes to the file system, not
/// to a device).
///
/// # Errors
/// The mounts that stay writable, and why.
fn read_only_outside(writable: &[&Path]) -> Result<(), String> {
    use rustix::fs::{StatVfsMountFlags, statvfs};
    use rustix::mount::{MountFlags, mount_bind_recursive, mount_remount};
    for dir in writable {
        mount_bind_recursive(*dir, *dir).map_err(|e| format!("cannot bind {}: {e}", dir.display()))?;
    }
    // This thread's mounts: `/proc/self` is the process's, whose main thread has the host's.
    let info = std::fs::read_to_string("/proc/thread-self/mountinfo").map_err(|e| format!("mountinfo: {e}"))?;
    let kept = [
        (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
        (StatVfsMountFlags::NODEV, MountFlags::NODEV),
        (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
        (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
        (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
    ];
    let mut done = std::collections::HashSet::new();
    let mut failed = Vec::new();
    for point in info.lines().filter_map(|line| line.split(' ').nth(4)).map(cleanup::unescape) {
        let open = point.starts_with("/proc") || writable.iter().any(|dir| point.starts_with(dir));
        if open || !done.insert(point.clone()) {
            continue;
        }
        let own = statvfs(&point).map(|stat| stat.f_flag).unwrap_or(StatVfsMountFlags::empty());
        let flags = kept
            .iter()
            .filter(|(stat, _)| own.contains(*stat))
            .fold(MountFlags::BIND | MountFlags::RDONLY, |flags, (_, flag)| flags | *flag);
        match mount_remount(&point, flags, "") {
            // Gone since mountinfo was read (another session's HOME, unmounted at its end): there
            // is nothing left there to write to.
            Ok(()) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => failed.push(format!("{}: {e}", point.display())),
        }
    }
    if failed.is_empty() { Ok(()) } else { Err(format!("not read-only: {}", failed.join(", "))) }
}

/// Drops every capability but [`KEPT_CAPABILITIES`] (and `SETUID` and `SETGID` when
/// `switch_user`: `setpriv` needs them to switch users, after which the kernel clears every
/// capability) from the calling thread's bounding set: a program it executes (as root) gets no
/// other capability, and cannot gain one back.
fn drop_capabilities(switch_user: bool) -> Result<(), String> {
    let mut failed = None;
    let kept = if switch_user {
        KEPT_CAPABILITIES.union(CapabilitySet::SETUID).union(CapabilitySet::SETGID)
    } else {
        KEPT_CAPABILITIES
    };
    for capability in CapabilitySet::all().difference(kept).iter() {
        match remove_capability_from_bounding_set(capability) {
            // A capability this kernel does not know: nothing to drop.
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(e) => failed = Some(e),
        }
    }
    match failed {
        Some(e) if rustix::process::geteuid().is_root() => Err(format!("cannot drop them: {e}")),
        // Not root: a program run gets no capability anyway (Landlock and seccomp set
        // `no_new_privs`, so no file capability either).
        _ => Ok(()),
    }
}

/// The directories of `hidden` as found: each made absolute and free of symbolic links as far
/// as it exists (the rest of its path appended); the root itself is never hidden.
fn hidden_dirs(hidden: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for path in hidden.iter().filter_map(|dir| canonical_as_far_as_it_exists(dir)) {
        if path.parent().is_some() && !found.contains(&path) {
            found.push(path);
        }
    }
    found
}

/// `path` made absolute and free of symbolic links as far as it exists, the rest of it appended
/// as given (a directory made later is made where that path says); `None` when no ancestor of
/// it can be resolved. Blocking.
pub fn canonical_as_far_as_it_exists(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(mut canonical) = std::fs::canonicalize(existing) {
            canonical.extend(rest.iter().rev());
            return Some(canonical);
        }
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    }
}

/// The paths to grant read below so that everything is readable but `hidden` (absolute, as
/// [`hidden_dirs`] gives them): `/` when nothing is hidden; else, for each directory on the way
/// from `/` to a hidden one, each of its entries that is neither hidden nor on such a way.
/// Symbolic links are left out (what they point to is granted or not by its own path); a
/// hidden directory that does not exist yet is covered too, since what is made later in its
/// parent is below no granted path.
fn readable_roots(hidden: &[PathBuf]) -> Vec<PathBuf> {
    if hidden.is_empty() {
        return vec![PathBuf::from("/")];
    }
    let on_the_way = |path: &Path| hidden.iter().any(|h| h.starts_with(path));
    let is_hidden = |path: &Path| hidden.iter().any(|h| path.starts_with(h));
    let mut roots = Vec::new();
    let mut ways = vec![PathBuf::from("/")];
    while let Some(dir) = ways.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_symlink() || is_hidden(&path) {
                continue;
            }
            if on_the_way(&path) {
                if kind.is_dir() {
                    ways.push(path);
                }
            } else {
                roots.push(path);
            }
        }
    }
    roots
}

/// Restricts the calling thread by Landlock: reading everywhere but `hidden`, writing below
/// `writable` (and to a few device files), no device nodes, signalling and connecting to
/// abstract Unix sockets only within its sandbox (ABI 6 and up), and, unless `network`, no TCP
/// `connect` or `bind` (ABI 4 and up). `max_abi` caps the ABI whose rules are asked for, as on
/// an older kernel ([`ExecConfig::max_landlock_abi`](super::ExecConfig::max_landlock_abi);
/// `None`: the kernel's). `Ok` with the ABI in force and whether TCP is refused.
///
/// # Errors
/// `Err(reason)` when Landlock is not in force: the kernel has none, it is disabled, `max_abi` is
/// 0, or a rule could not be made. The thread is then not restricted by Landlock.
fn restrict_thread(
    writable: &[&Path],
    hidden: &[PathBuf],
    network: bool,
    max_abi: Option<i32>,
) -> Result<(i32, bool), String> {
    let cap = max_abi.map_or(ABI::V10, ABI::from);
    if cap == ABI::Unsupported {
        return Err(
            "Landlock is off in the exec configuration (`max_landlock_abi` is 0), as on a kernel without it".to_owned()
        );
    }
    let readable = readable_roots(hidden);
    let status = build_and_restrict(writable, &readable, network, cap).map_err(|e| format!("landlock failed: {e}"))?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => (effective_abi as i32).min(cap as i32),
        LandlockStatus::NotEnabled => return Err("the kernel has Landlock but it is not enabled".to_owned()),
        LandlockStatus::NotImplemented => return Err("the kernel has no Landlock".to_owned()),
    };
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(format!("the kernel's Landlock (ABI {abi}) did not enforce the rules"));
    }
    Ok((abi, !network && abi >= NET_ABI as i32))
}

/// The rules of [`restrict_thread`], asked for up to the ABI `cap` (at least 1).
fn build_and_restrict(
    writable: &[&Path],
    readable: &[PathBuf],
    network: bool,
    cap: ABI,
) -> Result<landlock::RestrictionStatus, RulesetError> {
    let fs = FS_ABI.min(cap);
    let write: BitFlags<AccessFs> = AccessFs::from_all(fs) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(fs))?;
    if cap >= SCOPE_ABI {
        // Signals: the command may signal its own processes only, not the server or anything
        // else outside its sandbox. Abstract Unix sockets: only those made in the sandbox.
        ruleset = ruleset.scope(if network {
            BitFlags::from(Scope::Signal)
        } else {
            Scope::Signal | Scope::AbstractUnixSocket
        })?;
    }
    if !network && cap >= NET_ABI {
        ruleset = ruleset.handle_access(AccessNet::from_all(NET_ABI))?;
    }
    ruleset
        .create()?
        .add_rules(path_beneath_rules(readable, AccessFs::from_read(fs)))?
        .add_rules(path_beneath_rules(writable, write))?
        .add_rules(path_beneath_rules(WRITABLE_DEVICES, write))?
        .restrict_self()
}

/// Applies a seccomp filter to the calling thread (inherited by what it spawns). Always: `prctl`
/// fails with `EACCES` when it sets a parent-death signal other than `SIGKILL` (so that the
/// shell cannot clear the one it starts with); `unshare` and `clone` making a user namespace,
/// the keyring calls, and (unless `own_ipc`, an IPC namespace of the command's own) every
/// System V IPC call fail with `EACCES`, and `clone3` with `ENOSYS`. With `sockets` = `Some(tcp_confined)` (the
/// network is not allowed): `socket` fails with `EACCES` for every family but `AF_INET` and
/// `AF_INET6`, and for those two unless the socket is TCP
/// (`SOCK_STREAM`, protocol 0 or `IPPROTO_TCP`) and `tcp_confined` (Landlock refuses its
/// `connect` and `bind`); and `io_uring_setup` fails (an io_uring can open sockets without
/// `socket`).
///
/// # Errors
/// Why the filter could not be made or applied (no seccomp, an unknown architecture).
fn filter_syscalls(sockets: Option<bool>, own_ipc: bool) -> Result<(), String> {
    use seccompiler::{SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompRule, TargetArch};
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let check = |arg: u8, op: SeccompCmpOp, value: i32| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, u64::from(value.unsigned_abs()))
    };
    let rule = |conditions: Vec<Result<SeccompCondition, seccompiler::BackendError>>| {
        SeccompRule::new(conditions.into_iter().collect::<Result<_, _>>()?)
    };
    let prctl =
        vec![rule(vec![check(0, SeccompCmpOp::Eq, libc::PR_SET_PDEATHSIG), check(1, SeccompCmpOp::Ne, libc::SIGKILL)])];
    let mut rules: std::collections::BTreeMap<i64, Vec<Result<SeccompRule, _>>> =
        [(libc::SYS_prctl, prctl)].into_iter().collect();
    // Keystrokes pushed into a terminal's input (`TIOCSTI`) and the console's `TIOCLINUX`.
    let ioctl = [libc::TIOCSTI, libc::TIOCLINUX].map(|request| {
        let request = i32::try_from(request).unwrap_or(i32::MAX);
        rule(vec![check(1, SeccompCmpOp::Eq, request)])
    });
    rules.insert(libc::SYS_ioctl, ioctl.into());
    // The set-user-ID and set-group-ID bits, which another user's `exec` would honour: refused in
    // every call that sets a mode (the mode's argument), and `openat2`, whose mode is in a struct
    // a filter cannot read.
    let mode_bits = |mode_arg: u8, also: &[(u8, i32)]| -> Vec<Result<SeccompRule, seccompiler::BackendError>> {
        [libc::S_ISUID, libc::S_ISGID]
            .into_iter()
            .map(|bit| {
                let bit = i32::try_from(bit).unwrap_or(i32::MAX);
                let mut conditions = vec![check(mode_arg, SeccompCmpOp::MaskedEq(u64::from(bit.unsigned_abs())), bit)];
                conditions.extend(
                    also.iter()
                        .map(|&(arg, flag)| check(arg, SeccompCmpOp::MaskedEq(u64::from(flag.unsigned_abs())), flag)),
                );
                rule(conditions)
            })
            .collect()
    };
    rules.insert(libc::SYS_chmod, mode_bits(1, &[]));
    rules.insert(libc::SYS_fchmod, mode_bits(1, &[]));
    rules.insert(libc::SYS_fchmodat, mode_bits(2, &[]));
    rules.insert(FCHMODAT2, mode_bits(2, &[]));
    rules.insert(libc::SYS_creat, mode_bits(1, &[]));
    rules.insert(libc::SYS_mknod, mode_bits(1, &[]));
    rules.insert(libc::SYS_mknodat, mode_bits(2, &[]));
    let mut open = mode_bits(2, &[(1, libc::O_CREAT)]);
    open.extend(mode_bits(2, &[(1, libc::O_TMPFILE)]));
    rules.insert(libc::SYS_open, open);
    let mut openat = mode_bits(3, &[(2, libc::O_CREAT)]);
    openat.extend(mode_bits(3, &[(2, libc::O_TMPFILE)]));
    rules.insert(libc::SYS_openat, openat);
    rules.insert(libc::SYS_openat2, Vec::new());
    // User namespaces, in which a command would hold every capability again (for mounts, for
    // the kernel's less hardened code): `unshare` and `clone` with `CLONE_NEWUSER`; `clone3`
    // (its flags are in a struct a filter cannot read) is answered by a filter of its own.
    let new_user = libc::CLONE_NEWUSER;
    let user_namespace =
        || vec![rule(vec![check(0, SeccompCmpOp::MaskedEq(u64::from(new_user.unsigned_abs())), new_user)])];
    rules.insert(libc::SYS_unshare, user_namespace());
    rules.insert(libc::SYS_clone, user_namespace());
    // The kernel's keyrings: root's user keyring is shared with the host and outlives the
    // command.
    for syscall in [libc::SYS_add_key, libc::SYS_keyctl, libc::SYS_request_key] {
        rules.insert(syscall, Vec::new());
    }
    // System V IPC, shared with the host and outliving the command, where it has no IPC
    // namespace of its own.
    if !own_ipc {
        for syscall in [
            libc::SYS_shmget,
            libc::SYS_shmat,
            libc::SYS_shmctl,
            libc::SYS_semget,
            libc::SYS_semop,
            libc::SYS_semtimedop,
            libc::SYS_semctl,
            libc::SYS_msgget,
            libc::SYS_msgsnd,
            libc::SYS_msgrcv,
            libc::SYS_msgctl,
        ] {
            rules.insert(syscall, Vec::new());
        }
    }
    let Some(tcp_confined) = sockets else {
        return apply(rules, arch, libc::EACCES).and_then(|()| refuse_clone3(arch));
    };
    // `listen` on a socket never bound picks a port of its own, which Landlock's `bind` right
    // does not see.
    rules.insert(libc::SYS_listen, Vec::new());
    // Netlink too: its `sock_diag` lists the host's sockets, its `route` the host's interfaces.
    let mut socket =
        vec![rule(vec![check(0, SeccompCmpOp::Ne, libc::AF_INET), check(0, SeccompCmpOp::Ne, libc::AF_INET6)])];
    for family in [libc::AF_INET, libc::AF_INET6] {
        if !tcp_confined {
            socket.push(rule(vec![check(0, SeccompCmpOp::Eq, family)]));
            continue;
        }
        // The low 4 bits of the type are the type; the rest are `SOCK_NONBLOCK` and `SOCK_CLOEXEC`.
        for kind in (0..16).filter(|&kind| kind != libc::SOCK_STREAM) {
            socket.push(rule(vec![check(0, SeccompCmpOp::Eq, family), check(1, SeccompCmpOp::MaskedEq(0xf), kind)]));
        }
        socket.push(rule(vec![
            check(0, SeccompCmpOp::Eq, family),
            check(2, SeccompCmpOp::Ne, 0),
            check(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP),
        ]));
    }
    rules.insert(libc::SYS_socket, socket);
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    apply(rules, arch, libc::EACCES).and_then(|()| refuse_clone3(arch))
}

/// A second filter: `clone3` fails with `ENOSYS`, as on a kernel without it, so that libc falls
/// back to `clone`, whose flags the first filter reads (`CLONE_NEWUSER` refused).
fn refuse_clone3(arch: seccompiler::TargetArch) -> Result<(), String> {
    apply([(libc::SYS_clone3, Vec::new())].into_iter().collect(), arch, libc::ENOSYS)
}

/// `fchmodat2` (Linux 6.6), which the `libc` crate may not name yet.
const FCHMODAT2: i64 = 452;

/// Compiles `rules` (each syscall refused with `errno` when one of its rules matches, or always
/// when it has none) and applies them to the calling thread only (no
/// `SECCOMP_FILTER_FLAG_TSYNC`); `seccompiler` sets `no_new_privs` first.
fn apply(
    rules: std::collections::BTreeMap<i64, Vec<Result<seccompiler::SeccompRule, seccompiler::BackendError>>>,
    arch: seccompiler::TargetArch,
    errno: i32,
) -> Result<(), String> {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule};
    let mut compiled = std::collections::BTreeMap::new();
    for (syscall, rules) in rules {
        let rules: Vec<SeccompRule> = rules.into_iter().collect::<Result<_, _>>().map_err(|e| e.to_string())?;
        compiled.insert(syscall, rules);
    }
    let refused = SeccompAction::Errno(errno.unsigned_abs());
    let filter = SeccompFilter::new(compiled, SeccompAction::Allow, refused, arch).map_err(|e| e.to_string())?;
    let program = BpfProgram::try_from(filter).map_err(|e| e.to_string())?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())
}

/// A cgroup v1 cgroup made by the exec tools below the server's own (see
/// [`cleanup`](super::cleanup) for its name and removal).
#[derive(Debug)]
pub(crate) struct Cgroup {
    dir: PathBuf,
}

impl Cgroup {
    /// Makes the cgroup `name` below this process's own in the v1 hierarchy of `controller`,
    /// with each of `settings` written to its file. Blocking.
    ///
    /// # Errors
    /// Why not, shortly (no such controller, no permission); a cgroup made is removed again.
    pub(crate) fn make(controller: &str, name: &str, settings: &[(&str, String)]) -> Result<Self, String> {
        let parent = cleanup::own_cgroup(controller).ok_or_else(|| format!("no cgroup v1 {controller} controller"))?;
        let dir = parent.join(name);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot make a {controller} cgroup: {e}"))?;
        let cgroup = Self { dir };
        for (file, value) in settings {
            if let Err(e) = std::fs::write(cgroup.dir.join(file), value) {
                cgroup.remove();
                return Err(format!("cannot set {file}: {e}"));
            }
        }
        Ok(cgroup)
    }

    /// The cgroup's directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Moves the calling thread (only) into it, so that what it spawns is counted there.
    fn join(&self) -> Result<(), String> {
        join_cgroup(&self.dir).map_err(|e| format!("cannot join a {} cgroup: {e}", controller_of(&self.dir)))
    }

    /// Removes the cgroup once its last process is gone (tried 100 times, 20 ms apart).
    /// Blocking.
    pub(crate) fn remove(self) {
        cleanup::remove_cgroup(&self.dir, 100);
    }
}

/// Moves the calling thread (only) into the v1 cgroup `dir` (its `tasks` file).
fn join_cgroup(dir: &Path) -> std::io::Result<()> {
    let tid = rustix::thread::gettid().as_raw_nonzero();
    std::fs::write(dir.join("tasks"), tid.to_string())
}

/// The controller of a cgroup v1 directory (`pids` for `/sys/fs/cgroup/pids/...`).
fn controller_of(dir: &Path) -> String {
    dir.strip_prefix("/sys/fs/cgroup")
        .ok()
        .and_then(|rest| rest.iter().next())
        .map_or_else(|| "v1".to_owned(), |c| c.to_string_lossy().into_owned())
}

/// Whether a command may run where Landlock is not in force: `Ok` with the state to show when
/// unconfined commands are allowed, else the refusal the model reads.
fn unconfined(reason: String, allow_unconfined: bool) -> Result<Landlock, String> {
    if allow_unconfined {
        Ok(Landlock::Off { reason })
    } else {
        Err(format!(
            "refused to run the command: {reason}, so it cannot be confined to the workspace; the operator can allow \
             unconfined commands (`ExecConfig::allow_unconfined`, toolbox `--allow unconfined-exec`)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: ResourceLimits =
        ResourceLimits { cpu_seconds: 600, address_space_bytes: 8 << 30, file_size_bytes: 1 << 30 };

    fn confinement(landlock: Landlock, network: NetworkConfinement) -> Confinement {
        Confinement {
            landlock,
            network,
            contained: Ok(()),
            server_exit: Ok(()),
            processes: Ok(512),
            limits: LIMITS,
            session_memory: Ok(4 << 30),
            home: Ok(1 << 30),
            capabilities: Ok(()),
            isolation: Ok(()),
            as_root: false,
            user: None,
        }
    }

    fn in_force(abi: i32) -> Landlock {
        Landlock::InForce { abi, writable: vec![PathBuf::from("/ws"), PathBuf::from("/tmp/s/home")], hidden: vec![] }
    }

    #[test]
    fn without_landlock_the_command_is_refused_with_the_reason_and_how_to_allow_it() {
        assert_eq!(
            unconfined("the kernel has no Landlock".to_owned(), false).unwrap_err(),
            "refused to run the command: the kernel has no Landlock, so it cannot be confined to the workspace; the \
             operator can allow unconfined commands (`ExecConfig::allow_unconfined`, toolbox `--allow \
             unconfined-exec`)"
        );
    }

    #[test]
    fn without_landlock_an_allowed_unconfined_command_says_so_in_its_first_line() {
        let landlock = unconfined("the kernel has no Landlock".to_owned(), true).unwrap();
        assert_eq!(
            confinement(landlock, NetworkConfinement::Refused).to_string(),
            "[sandbox: none (the kernel has no Landlock); files are not confined by Landlock; network refused (tcp, udp, unix \
             sockets); every process ends with the command and with the server; limits: 512 processes, 600 cpu s, 8 GiB address space, \
             1 GiB per file, 4 GiB memory per session, 1 GiB HOME]"
        );
    }

    #[test]
    fn the_landlock_line_names_the_abi_the_writable_directories_the_network_and_the_limits() {
        assert_eq!(
            confinement(in_force(7), NetworkConfinement::Refused).to_string(),
            "[sandbox: landlock ABI 7; writes only below /ws, /tmp/s/home; network refused (tcp, udp, unix sockets); \
             every process ends with the command and with the server; limits: 512 processes, 600 cpu s, 8 GiB address space, 1 GiB per \
             file, 4 GiB memory per session, 1 GiB HOME]"
        );
    }

    #[test]
    fn what_the_kernel_cannot_enforce_is_said_with_the_reason() {
        let mut confinement = confinement(
            in_force(3),
            NetworkConfinement::NotConfinable { reason: "invalid target architecture: mips".to_owned() },
        );
        confinement.contained = Err("unshare: Operation not permitted".to_owned());
        confinement.processes = Err("no cgroup v1 pids controller".to_owned());
        confinement.limits = ResourceLimits { cpu_seconds: 0, address_space_bytes: 3 << 20, file_size_bytes: 1000 };
        confinement.capabilities = Err("cannot drop them: Operation not permitted".to_owned());
        confinement.isolation = Err("SysV IPC refused (no IPC namespace: unshare: Operation not permitted)".to_owned());
        confinement.session_memory = Err("no cgroup v1 memory controller".to_owned());
        confinement.home = Err("cannot mount a tmpfs on it: Operation not permitted".to_owned());
        assert_eq!(
            confinement.to_string(),
            "[sandbox: landlock ABI 3; writes only below /ws, /tmp/s/home; network not confined (needs Landlock ABI \
             4 or seccomp: invalid target architecture: mips); processes that leave the group may outlive the \
             command (no pid namespace: unshare: Operation not permitted); limits: processes not limited (no cgroup \
             v1 pids controller), cpu not limited, 3 MiB address space, 1000 bytes per file, memory per session not \
             limited (no cgroup v1 memory controller), HOME not bounded (cannot mount a tmpfs on it: Operation not \
             permitted); capabilities kept \
             (cannot drop them: Operation not permitted); shared with the host: SysV IPC refused (no IPC namespace: \
             unshare: Operation not permitted)]"
        );
    }

    #[test]
    fn tcp_refused_without_seccomp_names_what_is_not_confined() {
        let network = NetworkConfinement::TcpOnly { reason: "Operation not permitted".to_owned() };
        let line = confinement(in_force(7), network).to_string();
        assert!(
            line.contains("; tcp refused; udp and unix sockets not confined (no seccomp: Operation not permitted); "),
            "{line}"
        );
    }

    #[test]
    fn the_limits_are_set_by_ulimit_in_seconds_and_kib() {
        assert_eq!(LIMITS.ulimit(), "ulimit -S -H -t 600 -v 8388608 -f 1048576 || exit 126; ");
        assert_eq!(ResourceLimits::default().ulimit(), "");
    }

    #[test]
    fn a_hidden_directory_leaves_its_siblings_readable_and_is_on_no_granted_path() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        for sub in ["state/sessions", "state/other", "visible"] {
            std::fs::create_dir_all(base.join(sub)).unwrap();
        }
        std::os::unix::fs::symlink(base.join("state/sessions"), base.join("link")).unwrap();
        let hidden = hidden_dirs(&[base.join("state/sessions"), base.join("visible/not-yet/made")]);
        assert_eq!(hidden, [base.join("state/sessions"), base.join("visible/not-yet/made")]);
        let roots = readable_roots(&hidden);
        assert!(roots.contains(&base.join("state/other")), "{roots:?}");
        for denied in [base.clone(), base.join("state"), base.join("state/sessions"), base.join("link")] {
            assert!(!roots.contains(&denied), "{} is granted", denied.display());
        }
        assert!(roots.iter().all(|root| !hidden.iter().any(|h| h.starts_with(root))), "{roots:?}");
        assert_eq!(readable_roots(&[]), [PathBuf::from("/")]);
    }
}
