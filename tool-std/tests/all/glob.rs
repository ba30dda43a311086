//! The `glob` tool: sorted output relative to the root, .gitignore, limits and errors.

use crate::common;

use common::Workspace;
use serde_json::json;

fn rust_tree(ws: &Workspace) {
    ws.write("b.rs", "");
    ws.write("a.rs", "");
    ws.write("README.md", "");
    ws.write("src/z/d.rs", "");
    ws.write("src/c.rs", "");
}

#[tokio::test]
async fn matches_are_listed_in_path_order_relative_to_the_root() {
    let ws = Workspace::new();
    rust_tree(&ws);

    assert_eq!(ws.ok("glob", json!({"pattern": "**/*.rs"})).await, "a.rs\nb.rs\nsrc/c.rs\nsrc/z/d.rs");
}

#[tokio::test]
async fn path_order_puts_a_directorys_files_before_a_longer_sibling_name() {
    let ws = Workspace::new();
    ws.write("a.txt", "");
    ws.write("a/b.txt", "");

    assert_eq!(ws.ok("glob", json!({"pattern": "**/*.txt"})).await, "a/b.txt\na.txt");
}

#[tokio::test]
async fn a_star_does_not_cross_directories() {
    let ws = Workspace::new();
    rust_tree(&ws);

    assert_eq!(ws.ok("glob", json!({"pattern": "*.rs"})).await, "a.rs\nb.rs");
}

#[tokio::test]
async fn the_pattern_is_relative_to_path_and_output_to_the_root() {
    let ws = Workspace::new();
    rust_tree(&ws);

    assert_eq!(ws.ok("glob", json!({"pattern": "*.rs", "path": "src"})).await, "src/c.rs");
}

#[tokio::test]
async fn gitignored_files_are_skipped_and_hidden_files_listed() {
    let ws = Workspace::new();
    ws.write(".gitignore", "target/\n*.log\n");
    ws.write("main.rs", "");
    ws.write("debug.log", "");
    ws.write("target/out.rs", "");
    ws.write(".github/ci.yml", "");

    assert_eq!(ws.ok("glob", json!({"pattern": "**/*"})).await, ".github/ci.yml\n.gitignore\nmain.rs");
}

#[tokio::test]
async fn no_match_is_a_normal_result() {
    let ws = Workspace::new();
    rust_tree(&ws);

    let message = ws.call("glob", json!({"pattern": "**/*.py"})).await;

    assert!(!message.is_error);
    assert_eq!(message.text(), "No matches for: **/*.py");
}

#[tokio::test]
async fn more_matches_than_limit_show_the_first_and_a_count() {
    let ws = Workspace::new();
    rust_tree(&ws);

    assert_eq!(
        ws.ok("glob", json!({"pattern": "**/*.rs", "limit": 2})).await,
        "a.rs\nb.rs\n\n[showing 2 of 4 files] Narrow the pattern or path, or raise limit (max 1000)."
    );
}

#[tokio::test]
async fn a_limit_over_1000_is_an_error() {
    let ws = Workspace::new();

    assert_eq!(
        ws.err("glob", json!({"pattern": "*", "limit": 1001})).await,
        "invalid arguments for `glob`: `limit`: must be at most 1000; got 1001"
    );
}

#[tokio::test]
async fn an_invalid_pattern_is_an_error() {
    let ws = Workspace::new();

    assert_eq!(
        ws.err("glob", json!({"pattern": "src/[a"})).await,
        "Invalid glob `src/[a`: unclosed character class; missing ']'"
    );
}

#[tokio::test]
async fn a_missing_path_is_an_error() {
    let ws = Workspace::new();

    assert_eq!(ws.err("glob", json!({"pattern": "*", "path": "nowhere"})).await, "Path not found: nowhere");
}

#[tokio::test]
async fn a_file_as_path_is_an_error() {
    let ws = Workspace::new();
    ws.write("a.rs", "");

    assert_eq!(
        ws.err("glob", json!({"pattern": "*", "path": "a.rs"})).await,
        "Not a directory: a.rs; glob searches below a directory"
    );
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_refused() {
    let ws = Workspace::new();

    assert_eq!(ws.err("glob", json!({"pattern": "*", "path": ".."})).await, "Path escapes workspace: ..");
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_to_a_file_outside_the_workspace_is_not_listed() {
    let ws = Workspace::new();
    let secret = ws.write_outside("secret.txt", "");
    std::os::unix::fs::symlink(secret, ws.root.join("link.txt")).unwrap();
    ws.write("inside.txt", "");

    assert_eq!(ws.ok("glob", json!({"pattern": "*.txt"})).await, "inside.txt");
}

#[tokio::test]
async fn include_ignored_lists_gitignored_files_too() {
    let ws = Workspace::new();
    ws.write(".gitignore", "target/\n*.log\n");
    ws.write("main.rs", "");
    ws.write("debug.log", "");
    ws.write("target/out.rs", "");

    assert_eq!(
        ws.ok("glob", json!({"pattern": "**/*", "include_ignored": true})).await,
        ".gitignore\ndebug.log\nmain.rs\ntarget/out.rs"
    );
}
