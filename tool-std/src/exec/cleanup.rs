//! What a registry's commands leave on the host, and its removal.
//!
//! Each registry's exec state names what it makes after the server's pid and a number of its own
//! (its prefix, `tool-exec-<pid>-<n>`): the temp dir in [`temp_root`](super::ExecConfig::temp_root)
//! holding the sessions' `HOME`s (each a `tmpfs` mounted there) and spill files, and the cgroups
//! in the cgroup v1 `pids` and `memory` hierarchies (`<prefix>-c<k>` per command,
//! `<prefix>-s<k>` per session). They go when the registry closes or is dropped, its runtime
//! gone or not ([`remove_own`]). A server that was killed (`SIGKILL`, a crash) leaves them
//! behind; the next registry to run a command removes every one whose pid names no live process
//! ([`sweep_dead`]). A pid reused by another process keeps what it names until that process is
//! gone; directories named in the older way, without a pid, are left alone.

use std::path::{Path, PathBuf};

/// The start of every name the exec tools give what they make.
pub(crate) const PREFIX: &str = "tool-exec-";

/// Where the cgroup v1 controllers the exec tools use are mounted.
const CGROUP_ROOTS: [&str; 2] = ["/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory"];

/// The most directories [`sweep_dead`] visits in one cgroup hierarchy.
const MAX_CGROUPS_VISITED: usize = 10_000;

/// How often a cgroup still holding processes is tried again, 20 ms apart (the processes the
/// kernel killed may take a moment to be released).
const RMDIR_ATTEMPTS: u32 = 100;

/// The pid in a name `tool-exec-<pid>-...`.
fn owner(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

/// Whether `name` was made by a server that is gone: its pid is not this process's and names no
/// live process.
fn left_by_the_dead(name: &str) -> bool {
    owner(name).is_some_and(|pid| pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists())
}

/// Removes what servers that are gone left: every `tool-exec-<pid>-*` entry of `temp_root`
/// (its mounts unmounted first) and every cgroup so named in the v1 `pids` and `memory`
/// hierarchies (at most [`MAX_CGROUPS_VISITED`] directories visited in each), whose pid names
/// no live process. Best effort: what cannot be removed is left for the next start. Blocking.
pub(crate) fn sweep_dead(temp_root: &Path) {
    if let Ok(entries) = std::fs::read_dir(temp_root) {
        for entry in entries.flatten() {
            if left_by_the_dead(&entry.file_name().to_string_lossy()) {
                remove_tree(&entry.path());
            }
        }
    }
    for root in CGROUP_ROOTS {
        let mut found = Vec::new();
        let (mut ways, mut visited) = (vec![PathBuf::from(root)], 0);
        while let Some(dir) = ways.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                if !entry.file_type().is_ok_and(|kind| kind.is_dir()) || visited >= MAX_CGROUPS_VISITED {
                    continue;
                }
                visited += 1;
                if left_by_the_dead(&entry.file_name().to_string_lossy()) {
                    found.push(entry.path());
                } else {
                    ways.push(entry.path());
                }
            }
        }
        for dir in found {
            remove_cgroup(&dir, 1);
        }
    }
}

/// Removes the cgroups named `<prefix>-*` below this process's own cgroup in each v1 hierarchy,
/// trying those that still hold processes again every 20 ms, for at most 2 s in all (100
/// rounds). Blocking.
pub(crate) fn remove_own(prefix: &str) {
    let start = format!("{prefix}-");
    let mut left: Vec<PathBuf> = ["pids", "memory"]
        .into_iter()
        .filter_map(own_cgroup)
        .filter_map(|parent| std::fs::read_dir(parent).ok())
        .flat_map(|entries| entries.flatten())
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&start))
        .map(|entry| entry.path())
        .collect();
    for round in 1..=RMDIR_ATTEMPTS {
        left.retain(|dir| {
            remove_cgroup(dir, 1);
            dir.exists()
        });
        if left.is_empty() || round == RMDIR_ATTEMPTS {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// This process's cgroup in the v1 hierarchy of `controller`, from `/proc/self/cgroup`.
pub(crate) fn own_cgroup(controller: &str) -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    own.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| Path::new("/sys/fs/cgroup").join(controller).join(path.trim_start_matches('/')))
    })
}

/// Removes a cgroup and the cgroups below it, each tried `attempts` times, 20 ms apart, while it
/// still holds processes.
pub(crate) fn remove_cgroup(dir: &Path, attempts: u32) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                remove_cgroup(&entry.path(), attempts);
            }
        }
    }
    for attempt in 1..=attempts {
        match std::fs::remove_dir(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound && attempt < attempts => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            _ => return,
        }
    }
}

/// Removes the directory `dir` and what is in it, after unmounting (detached) every mount at or
/// below it, the deepest first. Blocking.
pub(crate) fn remove_tree(dir: &Path) {
    unmount_below(dir);
    let _ = std::fs::remove_dir_all(dir);
}

/// Unmounts (detached: at once, even when busy) every mount of this mount namespace at or below
/// `dir`, the deepest first, as `/proc/self/mountinfo` lists them.
pub(crate) fn unmount_below(dir: &Path) {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else { return };
    // The mount point is the fifth field, with space, tab, newline and backslash as octal escapes.
    let mut points: Vec<PathBuf> =
        info.lines().filter_map(|line| line.split(' ').nth(4)).map(unescape).filter(|p| p.starts_with(dir)).collect();
    points.sort_by_key(|point| std::cmp::Reverse(point.components().count()));
    points.dedup();
    for point in points {
        let _ = rustix::mount::unmount(&point, rustix::mount::UnmountFlags::DETACH);
    }
}

/// A path of `/proc/self/mountinfo` with its octal escapes (`\040`) decoded.
pub(crate) fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).filter(|digits| digits.iter().all(|d| (b'0'..=b'7').contains(d)));
        match (bytes[i], octal) {
            (b'\\', Some(digits)) => {
                out.push(digits.iter().fold(0u8, |value, d| value.wrapping_mul(8).wrapping_add(d - b'0')));
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_is_the_pid_after_the_prefix() {
        assert_eq!(owner("tool-exec-4242-1-Xq2"), Some(4242));
        assert_eq!(owner("tool-exec-Xq2abc"), None);
        assert_eq!(owner("other-4242-1"), None);
    }

    #[test]
    fn what_this_process_made_is_never_left_by_the_dead() {
        assert!(!left_by_the_dead(&format!("tool-exec-{}-1-s1", std::process::id())));
        assert!(!left_by_the_dead("tool-exec-1-1-s1"), "pid 1 is alive");
    }

    #[test]
    fn mountinfo_escapes_are_decoded() {
        assert_eq!(unescape("/tmp/a\\040b\\134c"), PathBuf::from("/tmp/a b\\c"));
        assert_eq!(unescape("/tmp/plain\\9"), PathBuf::from("/tmp/plain\\9"));
    }
}
