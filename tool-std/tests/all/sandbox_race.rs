//! A symlink swapped in between the sandbox's check and the open: a thread keeps replacing the
//! directory `d` of the workspace with a symlink to a directory outside it, while every file tool
//! is called on `d/...`. No tool may write outside, and no result may hold what is outside.

#![cfg(target_os = "linux")]

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{Workspace, png};
use serde_json::{Value, json};
use tool_std::sandbox::Sandbox;

/// What the outside files hold; no tool result may contain it.
const SECRET: &str = "OUTSIDE-SECRET";
/// The name of a file only the outside directory has; `glob` must never list it.
const OUTSIDE_ONLY: &str = "outside-only-name.txt";
/// How long each tool is called while the swapping goes on.
const PER_TOOL: Duration = Duration::from_millis(1200);
/// At most this many calls of one tool.
const MAX_CALLS: usize = 3000;
/// A call that takes longer than this is a hang.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// Every file below `dir` (relative, sorted) with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Swaps `ws/d` for a symlink to `outside` and back, as fast as it can, until `stop` or a bounded
/// number of rounds. Returns the number of rounds in which `d` was a symlink.
fn swap(root: &Path, outside: &Path, stop: &AtomicBool, rounds: &AtomicU64) {
    let d = root.join("d");
    let parked = root.join("d.parked");
    let started = Instant::now();
    for _ in 0..5_000_000 {
        if stop.load(Ordering::Relaxed) || started.elapsed() > Duration::from_secs(60) {
            break;
        }
        if std::fs::rename(&d, &parked).is_err() {
            continue;
        }
        if std::os::unix::fs::symlink(outside, &d).is_ok() {
            rounds.fetch_add(1, Ordering::Relaxed);
            let _ = std::fs::remove_file(&d);
        } else {
            // A tool created `d` while it was parked: keep the parked one.
            let _ = std::fs::remove_dir_all(&d);
        }
        let _ = std::fs::rename(&parked, &d);
    }
    // Leave `d` as a real directory.
    if std::fs::symlink_metadata(&d).is_ok_and(|m| m.file_type().is_symlink()) {
        let _ = std::fs::remove_file(&d);
    }
    if parked.exists() && !d.exists() {
        let _ = std::fs::rename(&parked, &d);
    }
}

/// The arguments of call `i` of `tool` on `d/...`.
fn arguments(tool: &str, i: usize) -> Value {
    match tool {
        "read" => json!({"file_path": "d/a.txt"}),
        "read_line" => json!({"file_path": "d/a.txt", "line_number": 1}),
        "write" => json!({"file_path": format!("d/new-{i}.txt"), "content": "written\n"}),
        "edit" if i.is_multiple_of(2) => {
            json!({"file_path": "d/a.txt", "old_string": "inside", "new_string": "INSIDE"})
        }
        "edit" => json!({"file_path": "d/a.txt", "old_string": "INSIDE", "new_string": "inside"}),
        "apply_patch" => {
            let (from, to) = if i.is_multiple_of(2) { ("inside", "INSIDE") } else { ("INSIDE", "inside") };
            json!({"patch": format!(
                "*** Begin Patch\n*** Add File: d/patch-{i}.txt\n+added\n*** Update File: d/a.txt\n@@\n-{from}\n+{to}\n*** End Patch\n"
            )})
        }
        "glob" => json!({"pattern": "**/*", "path": "d"}),
        "grep" => json!({"pattern": "SECRET|inside|INSIDE", "path": "d"}),
        "view_image" => json!({"file_path": "d/img.png"}),
        other => panic!("no arguments for {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_tool_reaches_outside_while_a_directory_is_swapped_for_a_symlink() {
    race(Workspace::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_component_walk_holds_too_where_openat2_is_not_used() {
    race(Workspace::with_sandbox(|root| Sandbox::new(root).unwrap().without_openat2())).await;
}

async fn race(ws: Workspace) {
    let outside = ws.parent.join("outside");
    ws.write_outside("outside/a.txt", format!("{SECRET}\ninside\nINSIDE\n"));
    ws.write_outside(&format!("outside/{OUTSIDE_ONLY}"), format!("{SECRET}\n"));
    std::fs::write(outside.join("img.png"), png(77, 33)).unwrap();
    ws.write("d/a.txt", "inside\n");
    std::fs::write(ws.root.join("d/img.png"), png(1, 1)).unwrap();
    let before = snapshot(&outside);

    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (root, outside, stop, rounds) = (ws.root.clone(), outside.clone(), stop.clone(), rounds.clone());
        std::thread::spawn(move || swap(&root, &outside, &stop, &rounds))
    };

    let mut leaks: Vec<String> = Vec::new();
    let mut calls = 0;
    for tool in ["read", "read_line", "write", "edit", "apply_patch", "glob", "grep", "view_image"] {
        let started = Instant::now();
        for i in 0..MAX_CALLS {
            if started.elapsed() > PER_TOOL {
                break;
            }
            let message = tokio::time::timeout(CALL_TIMEOUT, ws.call(tool, arguments(tool, i)))
                .await
                .unwrap_or_else(|_| panic!("{tool} did not return within {CALL_TIMEOUT:?}"));
            calls += 1;
            let text = message.text();
            if text.contains(SECRET) || text.contains(OUTSIDE_ONLY) || text.contains("77x33") {
                leaks.push(format!("{tool}: {text}"));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();

    let swapped = rounds.load(Ordering::Relaxed);
    assert!(swapped > 100, "the swapping thread got only {swapped} rounds in; the race was not run");
    assert!(calls > 8, "only {calls} calls were made");
    let after = snapshot(&outside);
    eprintln!("{calls} calls, {swapped} swaps");
    let written: Vec<_> = after.iter().filter(|entry| !before.contains(entry)).map(|(p, _)| p.clone()).collect();
    assert_eq!(written, Vec::<PathBuf>::new(), "files written or changed outside the workspace");
    assert_eq!(after, before);
    let mut by_tool: Vec<(&str, usize)> = Vec::new();
    for leak in &leaks {
        let tool = leak.split(':').next().unwrap_or_default();
        match by_tool.iter_mut().find(|(t, _)| *t == tool) {
            Some((_, n)) => *n += 1,
            None => by_tool.push((tool, 1)),
        }
    }
    let shown: Vec<_> = leaks.iter().take(3).collect();
    assert_eq!(by_tool, [], "results holding outside content ({calls} calls): {shown:#?}");
}
