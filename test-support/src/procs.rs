//! Watching processes by pid in tests of commands (`/proc` on Linux): used by the exec tests of
//! tool-std and toolbox.

use std::path::Path;

/// `true` while the process runs (a zombie has ended).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
}

/// Asks `check` at most 500 times, 20 ms apart, until it gives a value.
pub async fn poll<T>(mut check: impl FnMut() -> Option<T>) -> Option<T> {
    for _ in 0..500 {
        if let Some(value) = check() {
            return Some(value);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    None
}

/// Waits for every process of `pids` to be gone; `true` when they are.
pub async fn gone(pids: &[u32]) -> bool {
    poll(|| pids.iter().all(|&pid| !running(pid)).then_some(())).await.is_some()
}

/// Waits for a file with a pid to be written; the pid.
pub async fn pid_in(path: &Path) -> u32 {
    let read = || std::fs::read_to_string(path).ok().and_then(|text| text.trim().parse().ok());
    poll(read).await.unwrap_or_else(|| panic!("no pid in {}", path.display()))
}

/// Shell text (bash or sh) writing the pid of the shell that runs it, as this process's `/proc`
/// numbers it, to `file`. A command runs in a pid namespace of its own, where `$$` and `$!` are
/// other numbers; `/proc/self` is the shell's own entry in the `/proc` it shares with this process.
pub fn write_pid(file: &str) -> String {
    format!("read -r pid rest < /proc/self/stat; echo $pid > {file}")
}

/// Shell text for a process that writes its pid (as [`write_pid`]) to `file` and becomes
/// `sleep SECS`: put it behind `&`, `setsid`, or in a double fork.
pub fn sleeper(file: &str, secs: u32) -> String {
    format!("sh -c '{}; exec sleep {secs}'", write_pid(file))
}

/// Shell text waiting (at most 500 times 10 ms) for `file` to be written, so that a shell does
/// not end before a process it started has said its pid.
pub fn await_file(file: &str) -> String {
    format!("for i in $(seq 500); do [ -s {file} ] && break; sleep 0.01; done")
}

/// The first `program` in this process's `PATH`.
pub fn which(program: &str) -> std::path::PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("no {program} on the PATH"))
}
