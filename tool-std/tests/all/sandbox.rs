//! The sandbox rules of tools-spec.md, through `Sandbox::resolve` and through the `read` tool.

#![cfg(unix)]

use crate::common;

use std::os::unix::fs::symlink;

use common::{Workspace, sha_footer};
use serde_json::json;
use tool_std::sandbox::{Sandbox, SandboxError};

fn escapes(path: &str) -> SandboxError {
    SandboxError::Escapes { path: path.to_owned() }
}

#[tokio::test]
async fn a_sibling_whose_name_starts_with_the_roots_name_is_outside() {
    let ws = Workspace::new();
    let secret = ws.write_outside("ws-evil/secret.txt", "secret\n");

    assert_eq!(
        ws.err("read", json!({"file_path": "../ws-evil/secret.txt"})).await,
        "Path escapes workspace: ../ws-evil/secret.txt"
    );
    let absolute = secret.to_str().unwrap();
    assert_eq!(ws.err("read", json!({"file_path": absolute})).await, format!("Path escapes workspace: {absolute}"));
}

#[tokio::test]
async fn an_absolute_path_outside_the_root_is_refused() {
    let ws = Workspace::new();

    assert_eq!(ws.err("read", json!({"file_path": "/etc/passwd"})).await, "Path escapes workspace: /etc/passwd");
}

#[tokio::test]
async fn dot_dot_that_climbs_out_is_refused() {
    let ws = Workspace::new();
    ws.write_outside("outside.txt", "x\n");

    assert_eq!(
        ws.err("read", json!({"file_path": "sub/../../outside.txt"})).await,
        "Path escapes workspace: sub/../../outside.txt"
    );
}

#[tokio::test]
async fn a_symlinked_file_pointing_outside_is_refused() {
    let ws = Workspace::new();
    let secret = ws.write_outside("secret.txt", "secret\n");
    symlink(&secret, ws.root.join("link.txt")).unwrap();

    assert_eq!(ws.err("read", json!({"file_path": "link.txt"})).await, "Path escapes workspace: link.txt");
}

#[test]
fn a_new_file_under_a_symlinked_directory_pointing_to_root_is_refused() {
    let ws = Workspace::new();
    symlink("/", ws.root.join("escape")).unwrap();
    let sandbox = Sandbox::new(&ws.root).unwrap();

    assert_eq!(sandbox.resolve("escape/new-file.txt"), Err(escapes("escape/new-file.txt")));
    assert_eq!(sandbox.resolve("escape/new-dir/new-file.txt"), Err(escapes("escape/new-dir/new-file.txt")));
}

#[test]
fn a_new_file_through_a_dangling_symlink_pointing_outside_is_refused() {
    let ws = Workspace::new();
    symlink(ws.parent.join("not-yet.txt"), ws.root.join("dangling")).unwrap();
    let sandbox = Sandbox::new(&ws.root).unwrap();

    assert_eq!(sandbox.resolve("dangling"), Err(escapes("dangling")));
}

#[test]
fn a_symlink_loop_is_an_error_not_a_hang() {
    let ws = Workspace::new();
    symlink(ws.root.join("b"), ws.root.join("a")).unwrap();
    symlink(ws.root.join("a"), ws.root.join("b")).unwrap();
    let sandbox = Sandbox::new(&ws.root).unwrap();

    assert_eq!(
        sandbox.resolve("a/file.txt").unwrap_err().to_string(),
        "Cannot resolve path a/file.txt: more than 40 symbolic links to follow (a symlink loop?)"
    );
}

#[test]
fn a_symlink_that_stays_inside_is_allowed() {
    let ws = Workspace::new();
    ws.write("real/a.txt", "a\n");
    symlink(ws.root.join("real"), ws.root.join("alias")).unwrap();
    let sandbox = Sandbox::new(&ws.root).unwrap();

    assert_eq!(sandbox.resolve("alias/a.txt"), Ok(ws.root.join("real/a.txt")));
}

#[test]
fn a_new_path_resolves_below_the_canonical_root() {
    let ws = Workspace::new();
    let sandbox = Sandbox::new(&ws.root).unwrap();

    assert_eq!(sandbox.resolve("new/dir/file.txt"), Ok(ws.root.join("new/dir/file.txt")));
}

#[tokio::test]
async fn dot_slash_redundant_separators_and_dot_dot_inside_stay_inside() {
    let ws = Workspace::new();
    ws.write("sub/a.txt", "hello\n");

    let text = ws.ok("read", json!({"file_path": ".//sub/./deeper/..//a.txt"})).await;

    assert_eq!(
        text,
        format!("    1  hello\n\n{}", sha_footer("5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"))
    );
}

#[tokio::test]
async fn dot_dot_that_leaves_and_reenters_the_root_stays_inside() {
    let ws = Workspace::new();
    ws.write("a.txt", "hello\n");

    let text = ws.ok("read", json!({"file_path": "../ws/a.txt"})).await;

    assert_eq!(
        text,
        format!("    1  hello\n\n{}", sha_footer("5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"))
    );
}

#[tokio::test]
async fn a_root_of_slash_allows_every_path() {
    let ws = Workspace::with_sandbox(|_| Sandbox::new("/").unwrap());
    let outside = ws.write_outside("outside.txt", "anywhere\n");

    let text = ws.ok("read", json!({"file_path": outside.to_str().unwrap()})).await;

    assert_eq!(
        text,
        format!(
            "    1  anywhere\n\n{}",
            sha_footer("43018b072d578c1ffe12330c4ac76b9fdb44df082a38b3cbca8fb7b6dfbd93ba")
        )
    );
}

#[tokio::test]
async fn full_access_turns_the_check_off() {
    let ws = Workspace::with_sandbox(|root| Sandbox::full_access(root).unwrap());
    ws.write_outside("outside.txt", "reachable\n");

    let text = ws.ok("read", json!({"file_path": "../outside.txt"})).await;

    assert_eq!(
        text,
        format!(
            "    1  reachable\n\n{}",
            sha_footer("a3863e6f5c0fb463c18edae49aa791f4d5e1d5e3ad4aeee2df85cd9f86f30c10")
        )
    );
}

#[test]
fn an_empty_path_is_refused() {
    let ws = Workspace::new();
    let sandbox = Sandbox::new(&ws.root).unwrap();

    assert_eq!(
        sandbox.resolve("").unwrap_err().to_string(),
        "Path is empty; give a path relative to the workspace root"
    );
}

#[test]
fn the_root_is_canonicalised_at_creation() {
    let ws = Workspace::new();
    symlink(&ws.root, ws.parent.join("root-alias")).unwrap();

    let sandbox = Sandbox::new(ws.parent.join("root-alias")).unwrap();

    assert_eq!(sandbox.root(), ws.root.as_path());
}

#[tokio::test]
async fn a_write_to_a_new_file_under_a_link_to_slash_is_refused() {
    let ws = Workspace::new();
    symlink("/", ws.root.join("link")).unwrap();

    assert_eq!(
        ws.err("write", json!({"file_path": "link/tmp/evil", "content": "x"})).await,
        "Path escapes workspace: link/tmp/evil"
    );
    assert!(!std::path::Path::new("/tmp/evil").exists());
}

#[tokio::test]
async fn a_write_through_a_symlinked_file_pointing_outside_is_refused_and_the_target_kept() {
    let ws = Workspace::new();
    let secret = ws.write_outside("secret.txt", "secret\n");
    symlink(&secret, ws.root.join("link.txt")).unwrap();

    assert_eq!(
        ws.err("write", json!({"file_path": "link.txt", "content": "pwned\n"})).await,
        "Path escapes workspace: link.txt"
    );
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret\n");
}

#[tokio::test]
async fn an_edit_through_a_symlinked_file_pointing_outside_is_refused() {
    let ws = Workspace::new();
    let secret = ws.write_outside("secret.txt", "secret\n");
    symlink(&secret, ws.root.join("link.txt")).unwrap();

    assert_eq!(
        ws.err("edit", json!({"file_path": "link.txt", "old_string": "secret", "new_string": "pwned"})).await,
        "Path escapes workspace: link.txt"
    );
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret\n");
}

#[tokio::test]
async fn a_write_to_a_sibling_sharing_the_roots_name_is_refused() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.parent.join("ws-evil")).unwrap();

    assert_eq!(
        ws.err("write", json!({"file_path": "../ws-evil/x", "content": "x"})).await,
        "Path escapes workspace: ../ws-evil/x"
    );
    assert!(!ws.parent.join("ws-evil/x").exists());
}

#[tokio::test]
async fn a_write_to_an_absolute_path_outside_is_refused() {
    let ws = Workspace::new();
    let outside = ws.parent.join("outside.txt");

    let path = outside.to_str().unwrap();
    assert_eq!(
        ws.err("write", json!({"file_path": path, "content": "x"})).await,
        format!("Path escapes workspace: {path}")
    );
    assert!(!outside.exists());
}

#[tokio::test]
async fn a_write_through_a_symlink_that_stays_inside_replaces_its_target_and_keeps_the_link() {
    let ws = Workspace::new();
    let target = ws.write("real.txt", "old\n");
    symlink(&target, ws.root.join("alias.txt")).unwrap();

    ws.ok("write", json!({"file_path": "alias.txt", "content": "new\n"})).await;

    assert_eq!(std::fs::read_to_string(&target).unwrap(), "new\n");
    assert!(std::fs::symlink_metadata(ws.root.join("alias.txt")).unwrap().file_type().is_symlink());
}

#[test]
fn children_of_a_root_of_slash_resolve_to_themselves() {
    let sandbox = Sandbox::new("/").unwrap();

    assert_eq!(sandbox.resolve("/tmp/../tmp/new-file"), Ok(std::fs::canonicalize("/tmp").unwrap().join("new-file")));
    assert_eq!(sandbox.resolve("tmp"), Ok(std::fs::canonicalize("/tmp").unwrap()));
}

#[test]
fn full_access_allows_a_path_through_a_link_to_slash() {
    let ws = Workspace::new();
    symlink("/", ws.root.join("link")).unwrap();
    let sandbox = Sandbox::full_access(&ws.root).unwrap();

    assert_eq!(sandbox.resolve("link/tmp/evil"), Ok(std::fs::canonicalize("/tmp").unwrap().join("evil")));
}
