//! The tools watch their call's cancellation token where they loop: `glob` before each file,
//! `read` and `read_line` before each 64 KiB chunk, `apply_patch` before its first write. The
//! tools are called as functions here: through a registry, a call whose token is cancelled
//! before it starts never runs (`grep_progress.rs` and `grep_cancel.rs` cancel `grep` mid-way).

use tool_runtime::{CancellationToken, ToolContext};
use tool_std::fs::{FsError, FsLimits, glob, read, read_line};
use tool_std::patch::{PatchError, apply_patch};
use tool_std::sandbox::Sandbox;

/// A context whose token is cancelled.
fn cancelled() -> ToolContext {
    let token = CancellationToken::new();
    token.cancel();
    ToolContext::builder().cancellation(token).build()
}

/// A temp directory holding `a.txt` and `b.txt`, and a sandbox rooted there.
fn workspace() -> (tempfile::TempDir, Sandbox) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "beta\n").unwrap();
    let sandbox = Sandbox::new(dir.path()).unwrap();
    (dir, sandbox)
}

#[test]
fn a_cancelled_glob_stops_before_its_first_file() {
    let (_dir, sandbox) = workspace();

    let result = glob("*.txt".to_owned(), None, None, None, sandbox, FsLimits::default(), &cancelled());

    assert_eq!(result, Err(FsError::Cancelled { tool: "glob" }));
}

#[test]
fn a_cancelled_read_stops_before_its_first_chunk() {
    let (_dir, sandbox) = workspace();

    let result = read("a.txt".to_owned(), None, None, sandbox, FsLimits::default(), &cancelled());

    assert_eq!(result, Err(FsError::Cancelled { tool: "read" }));
}

#[test]
fn a_cancelled_read_line_stops_before_its_first_chunk() {
    let (_dir, sandbox) = workspace();

    let result = read_line("a.txt".to_owned(), 1, None, None, sandbox, FsLimits::default(), &cancelled());

    assert_eq!(result, Err(FsError::Cancelled { tool: "read_line" }));
}

#[tokio::test]
async fn a_patch_cancelled_before_its_first_write_writes_nothing() {
    let (dir, sandbox) = workspace();
    let patch = "*** Begin Patch\n*** Add File: c.txt\n+gamma\n*** Delete File: b.txt\n*** End Patch";

    let result = apply_patch(patch.to_owned(), None, sandbox, &cancelled()).await;

    assert_eq!(result.unwrap_err(), PatchError::Cancelled);
    assert!(!dir.path().join("c.txt").exists());
    assert_eq!(std::fs::read_to_string(dir.path().join("b.txt")).unwrap(), "beta\n");
}

#[test]
fn the_cancelled_patch_error_says_nothing_was_written() {
    assert_eq!(PatchError::Cancelled.to_string(), "`apply_patch` was cancelled before writing; nothing was written");
}
