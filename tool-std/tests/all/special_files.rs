//! FIFOs, sockets and device nodes in the workspace: every file tool answers at once with an
//! error naming the path and its kind, instead of blocking on the open or reading for ever.

#![cfg(target_os = "linux")]

use crate::common;

use std::time::Duration;

use common::Workspace;
use rustix::fs::{CWD, FileType, Mode, mknodat};
use serde_json::{Value, json};

/// A call that takes longer than this is a hang (generous: the machine may be loaded).
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// Calls `tool` on a runtime of its own with a timeout; the runtime is let go without waiting, so
/// a call stuck on the blocking pool fails the test instead of hanging it.
fn call(ws: &Workspace, tool: &str, arguments: Value) -> (bool, String) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let result = runtime.block_on(async { tokio::time::timeout(CALL_TIMEOUT, ws.call(tool, arguments.clone())).await });
    runtime.shutdown_background();
    let message = result.unwrap_or_else(|_| panic!("{tool} {arguments} did not return within {CALL_TIMEOUT:?}"));
    (message.is_error, message.text().into_owned())
}

/// The calls of every file tool on `path`.
fn calls_on(path: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("read", json!({"file_path": path})),
        ("read_line", json!({"file_path": path, "line_number": 1})),
        ("write", json!({"file_path": path, "content": "x\n"})),
        ("edit", json!({"file_path": path, "old_string": "a", "new_string": "b"})),
        ("edit", json!({"file_path": path, "old_string": "", "new_string": "b"})),
        (
            "apply_patch",
            json!({"patch": format!("*** Begin Patch\n*** Update File: {path}\n@@\n-a\n+b\n*** End Patch\n")}),
        ),
        ("grep", json!({"pattern": "a", "path": path})),
        ("view_image", json!({"file_path": path})),
    ]
}

/// Every tool on `path` fails with `expected` in its error, and the node is still there.
fn every_tool_names_the_kind(ws: &Workspace, path: &str, expected: &str) {
    for (tool, arguments) in calls_on(path) {
        let (is_error, text) = call(ws, tool, arguments.clone());
        assert!(is_error, "{tool} {arguments} succeeded: {text}");
        assert!(text.contains(expected), "{tool} {arguments}: expected `{expected}` in: {text}");
    }
    let kind = std::fs::symlink_metadata(ws.root.join(path)).unwrap().file_type();
    assert!(!kind.is_file() && !kind.is_dir(), "{path} was replaced by a {kind:?}");
}

#[test]
fn a_fifo_is_refused_at_once_by_every_tool() {
    let ws = Workspace::new();
    mknodat(CWD, ws.root.join("pipe"), FileType::Fifo, Mode::from_raw_mode(0o644), 0).unwrap();

    every_tool_names_the_kind(
        &ws,
        "pipe",
        "pipe is a FIFO (named pipe), not a regular file; the file tools open regular files only",
    );
}

#[test]
fn a_socket_is_refused_at_once_by_every_tool() {
    let ws = Workspace::new();
    let _listener = std::os::unix::net::UnixListener::bind(ws.root.join("sock")).unwrap();

    every_tool_names_the_kind(
        &ws,
        "sock",
        "sock is a socket, not a regular file; the file tools open regular files only",
    );
}

#[test]
fn a_character_device_is_refused_at_once_by_every_tool() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: making a device node needs root");
        return;
    }
    let ws = Workspace::new();
    // The numbers of /dev/zero: a read never ends.
    mknodat(
        CWD,
        ws.root.join("zero"),
        FileType::CharacterDevice,
        Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 5),
    )
    .unwrap();

    every_tool_names_the_kind(
        &ws,
        "zero",
        "zero is a character device, not a regular file; the file tools open regular files only",
    );
}

#[test]
fn a_fifo_found_while_walking_is_skipped_without_blocking() {
    let ws = Workspace::new();
    ws.write("a.txt", "needle\n");
    mknodat(CWD, ws.root.join("pipe.txt"), FileType::Fifo, Mode::from_raw_mode(0o644), 0).unwrap();

    assert_eq!(call(&ws, "grep", json!({"pattern": "needle"})), (false, "a.txt:1: needle".to_owned()));
    assert_eq!(call(&ws, "glob", json!({"pattern": "*.txt"})), (false, "a.txt".to_owned()));
}

#[test]
fn a_file_over_the_rewrite_limit_is_refused_by_edit_and_apply_patch_without_reading_it_whole() {
    let ws = Workspace::new();
    // A sparse file one byte over the limit: cheap on disk, 64 MiB to read.
    let file = std::fs::File::create(ws.root.join("big.txt")).unwrap();
    file.set_len(tool_std::fs::REWRITE_MAX_FILE_BYTES + 1).unwrap();

    let (is_error, text) = call(&ws, "edit", json!({"file_path": "big.txt", "old_string": "a", "new_string": "b"}));
    assert!(is_error);
    assert_eq!(
        text,
        "big.txt is over 67108864 bytes, more than write and edit read; nothing was written. Change it with a \
         command made for large files"
    );
    let patch = "*** Begin Patch\n*** Update File: big.txt\n@@\n-a\n+b\n*** End Patch\n";
    let (is_error, text) = call(&ws, "apply_patch", json!({"patch": patch}));
    assert!(is_error);
    assert!(
        text.contains(
            "big.txt is over 67108864 bytes, more than apply_patch reads; change it with a command made for large files"
        ),
        "{text}"
    );
    assert_eq!(std::fs::metadata(ws.root.join("big.txt")).unwrap().len(), tool_std::fs::REWRITE_MAX_FILE_BYTES + 1);
}

#[test]
fn full_access_writes_outside_the_root_and_still_refuses_a_fifo_there() {
    let ws = Workspace::with_sandbox(|root| tool_std::sandbox::Sandbox::full_access(root).unwrap());
    let outside = ws.parent.join("elsewhere/new.txt");
    let pipe = ws.parent.join("pipe");
    mknodat(CWD, &pipe, FileType::Fifo, Mode::from_raw_mode(0o644), 0).unwrap();

    let (is_error, text) = call(&ws, "write", json!({"file_path": outside.to_str().unwrap(), "content": "out\n"}));
    assert!(!is_error, "{text}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "out\n");
    let pipe = pipe.to_str().unwrap();
    let (is_error, text) = call(&ws, "read", json!({"file_path": pipe}));
    assert!(is_error);
    assert_eq!(
        text,
        format!(
            "{pipe} is a FIFO (named pipe), not a regular file; the file tools open regular files only, so give the \
             path of a regular file"
        )
    );
}

#[test]
fn a_fifo_named_like_an_ignore_file_does_not_hang_a_walk() {
    let ws = Workspace::new();
    ws.write("top.txt", "needle\n");
    ws.write("sub/a.txt", "needle\n");
    mknodat(CWD, ws.root.join("sub/.gitignore"), FileType::Fifo, Mode::from_raw_mode(0o644), 0).unwrap();

    // Below the base: the directory is not entered.
    assert_eq!(call(&ws, "glob", json!({"pattern": "**/*.txt"})), (false, "top.txt".to_owned()));
    assert_eq!(call(&ws, "grep", json!({"pattern": "needle"})), (false, "top.txt:1: needle".to_owned()));
    // In the base (or a parent of it): an error naming it, and the way out.
    let refused = "sub/.gitignore is a FIFO (named pipe), not a regular file, and glob and grep read it for ignore \
                   rules; remove it, or set include_ignored to search without ignore files";
    assert_eq!(call(&ws, "glob", json!({"pattern": "*.txt", "path": "sub"})), (true, refused.to_owned()));
    assert_eq!(call(&ws, "grep", json!({"pattern": "needle", "path": "sub/a.txt"})), (true, refused.to_owned()));
    assert_eq!(
        call(&ws, "grep", json!({"pattern": "needle", "path": "sub", "include_ignored": true})),
        (false, "sub/a.txt:1: needle".to_owned())
    );
}
