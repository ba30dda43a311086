//! The `write` tool: atomic replace, parents, mode, the expected_hash guard, the JSON result.

use crate::common;

use common::{Workspace, json_of, sha256};
use serde_json::json;

#[tokio::test]
async fn a_new_file_is_created_with_its_parents_and_a_diff_from_nothing() {
    let ws = Workspace::new();

    let out = json_of(&ws.ok("write", json!({"file_path": "src/deep/new.txt", "content": "one\ntwo\n"})).await);

    assert_eq!(std::fs::read_to_string(ws.root.join("src/deep/new.txt")).unwrap(), "one\ntwo\n");
    assert_eq!(
        out,
        json!({
            "summary": "Wrote 8 bytes to src/deep/new.txt",
            "file_path": "src/deep/new.txt",
            "created": true,
            "content_sha256": sha256("one\ntwo\n"),
            "diff": "--- a/src/deep/new.txt\n+++ b/src/deep/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n",
            "diff_truncated": false
        })
    );
}

#[tokio::test]
async fn an_existing_file_is_replaced_whole_with_a_unified_diff() {
    let ws = Workspace::new();
    ws.write("a.txt", "keep\nold\n");

    let out = json_of(&ws.ok("write", json!({"file_path": "a.txt", "content": "keep\nnew\n"})).await);

    assert_eq!(std::fs::read_to_string(ws.root.join("a.txt")).unwrap(), "keep\nnew\n");
    assert_eq!(out["created"], false);
    assert_eq!(out["diff"], "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n");
}

#[cfg(unix)]
#[tokio::test]
async fn the_file_mode_is_kept() {
    use std::os::unix::fs::PermissionsExt as _;
    let ws = Workspace::new();
    let path = ws.write("run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();

    ws.ok("write", json!({"file_path": "run.sh", "content": "#!/bin/sh\necho hi\n"})).await;

    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o751);
}

#[cfg(unix)]
#[tokio::test]
async fn a_new_file_is_not_left_with_the_private_mode_of_temporary_files() {
    use std::os::unix::fs::PermissionsExt as _;
    let ws = Workspace::new();

    ws.ok("write", json!({"file_path": "new.txt", "content": "x"})).await;

    let mode = std::fs::metadata(ws.root.join("new.txt")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & 0o044, 0o044, "mode {mode:o} should be readable by group and others under a usual umask");
}

#[tokio::test]
async fn the_write_replaces_the_file_by_rename_leaving_no_temporary_file() {
    let ws = Workspace::new();
    ws.write("a.txt", "old\n");

    ws.ok("write", json!({"file_path": "a.txt", "content": "new\n"})).await;

    let names: Vec<String> =
        std::fs::read_dir(&ws.root).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(names, ["a.txt"]);
}

#[tokio::test]
async fn a_matching_expected_hash_allows_the_write() {
    let ws = Workspace::new();
    ws.write("a.txt", "v1\n");

    ws.ok("write", json!({"file_path": "a.txt", "content": "v2\n", "expected_hash": sha256("v1\n")})).await;

    assert_eq!(std::fs::read_to_string(ws.root.join("a.txt")).unwrap(), "v2\n");
}

#[tokio::test]
async fn the_expected_hash_may_be_uppercase_or_carry_the_footer_key() {
    let ws = Workspace::new();
    ws.write("a.txt", "v1\n");
    let hash = sha256("v1\n");

    ws.ok("write", json!({"file_path": "a.txt", "content": "v2\n", "expected_hash": hash.to_uppercase()})).await;
    ws.ok(
        "write",
        json!({"file_path": "a.txt", "content": "v3\n", "expected_hash": format!("content_sha256={}", sha256("v2\n"))}),
    )
    .await;

    assert_eq!(std::fs::read_to_string(ws.root.join("a.txt")).unwrap(), "v3\n");
}

#[tokio::test]
async fn a_stale_expected_hash_is_refused_and_nothing_is_written() {
    let ws = Workspace::new();
    ws.write("a.txt", "changed by someone else\n");
    let stale = sha256("what the model read\n");

    assert_eq!(
        ws.err("write", json!({"file_path": "a.txt", "content": "mine\n", "expected_hash": stale})).await,
        format!(
            "a.txt changed since it was read (its content_sha256 is {}, expected_hash was {stale}); read it again and \
             redo the change on the current content. Nothing was written",
            sha256("changed by someone else\n")
        )
    );
    assert_eq!(std::fs::read_to_string(ws.root.join("a.txt")).unwrap(), "changed by someone else\n");
}

#[tokio::test]
async fn an_expected_hash_for_a_missing_file_is_refused() {
    let ws = Workspace::new();

    assert_eq!(
        ws.err("write", json!({"file_path": "gone.txt", "content": "x", "expected_hash": sha256("x")})).await,
        "expected_hash was given but gone.txt does not exist (it was moved or deleted since it was read); read the \
         directory again, or omit expected_hash to create the file. Nothing was written"
    );
    assert!(!ws.root.join("gone.txt").exists());
}

#[tokio::test]
async fn a_malformed_expected_hash_is_refused() {
    let ws = Workspace::new();
    ws.write("a.txt", "x");

    assert_eq!(
        ws.err("write", json!({"file_path": "a.txt", "content": "y", "expected_hash": "abc"})).await,
        "expected_hash must be the 64 hex digits of a content_sha256 footer, got `abc`; copy it from the \
         [read_metadata] line of read, or leave expected_hash out when that line says it was not computed"
    );
}

#[tokio::test]
async fn a_directory_cannot_be_written() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.root.join("src")).unwrap();

    assert_eq!(
        ws.err("write", json!({"file_path": "src", "content": "x"})).await,
        "Not a file: src is a directory; give the path of a file"
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_parent_that_is_a_file_is_a_write_error() {
    let ws = Workspace::new();
    ws.write("a.txt", "x");

    assert_eq!(
        ws.err("write", json!({"file_path": "a.txt/b.txt", "content": "y"})).await,
        "Cannot write a.txt/b.txt: Not a directory (os error 20); nothing was changed"
    );
    assert_eq!(std::fs::read_to_string(ws.root.join("a.txt")).unwrap(), "x");
}

#[tokio::test]
async fn a_long_diff_is_cut_to_head_and_tail() {
    let ws = Workspace::new();
    let content: String = (1..=200).map(|n| format!("line {n}\n")).collect();

    let out = json_of(&ws.ok("write", json!({"file_path": "big.txt", "content": content})).await);

    let diff = out["diff"].as_str().unwrap();
    let lines: Vec<&str> = diff.lines().collect();
    // 203 diff lines (2 headers, 1 hunk header, 200 added) -> 60 head, marker, 59 tail.
    assert_eq!(lines.len(), 120);
    assert_eq!(lines[59], "+line 57");
    assert_eq!(lines[60], "...[84 lines omitted]...");
    assert_eq!(lines[61], "+line 142");
    assert_eq!(lines[119], "+line 200");
    assert_eq!(out["diff_truncated"], true);
    let ref_id = out["ref_id"].as_str().unwrap();
    assert_eq!(ref_id.len(), tool_runtime::output::REF_ID_LEN, "{ref_id}");
}

#[tokio::test]
async fn the_whole_diff_of_a_cut_preview_is_kept_in_the_output_cache() {
    let ws = Workspace::new();
    let content: String = (1..=200).map(|n| format!("line {n}\n")).collect();
    let out = json_of(&ws.ok("write", json!({"file_path": "big.txt", "content": content})).await);

    let arguments = json!({"ref_id": out["ref_id"], "pattern": "+line 100", "regex": false});
    let found = ws.ok("tool_output_cache_grep", arguments).await;

    assert_eq!(found, "  103: +line 100");
}

#[tokio::test]
async fn a_whole_preview_has_no_ref_id() {
    let ws = Workspace::new();

    let out = json_of(&ws.ok("write", json!({"file_path": "small.txt", "content": "one\n"})).await);

    assert_eq!(out["diff_truncated"], false);
    assert_eq!(out.get("ref_id"), None);
}

#[tokio::test]
async fn the_unhashed_read_metadata_line_as_expected_hash_is_refused_with_what_to_do() {
    let ws = Workspace::new();
    ws.write("a.txt", "x");
    let footer = "content_sha256 not computed: the file is 9000000 bytes";

    assert_eq!(
        ws.err("write", json!({"file_path": "a.txt", "content": "y", "expected_hash": footer})).await,
        format!(
            "expected_hash must be the 64 hex digits of a content_sha256 footer, got `{footer}`; copy it from the \
             [read_metadata] line of read, or leave expected_hash out when that line says it was not computed"
        )
    );
}
