//! Watching processes by pid in tests of commands (`/proc` on Linux): shared by the exec tests of
//! tool-std and toolbox (included with `#[path]`).

#![allow(dead_code, unreachable_pub)]

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
