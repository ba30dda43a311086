//! The `edit` tool: match modes, ambiguity, line endings, byte order mark, final newline, dry
//! runs, the expected_hash guard and the JSON result, on real files.

use crate::common;

use common::{Workspace, json_of, sha256};
use serde_json::{Value, json};

async fn edit(ws: &Workspace, args: Value) -> Value {
    json_of(&ws.ok("edit", args).await)
}

fn bytes(ws: &Workspace, path: &str) -> Vec<u8> {
    std::fs::read(ws.root.join(path)).unwrap()
}

#[tokio::test]
async fn a_unique_exact_match_is_replaced_and_reported() {
    let ws = Workspace::new();
    ws.write("a.rs", "fn a() {}\nfn b() {}\n");

    let out = edit(&ws, json!({"file_path": "a.rs", "old_string": "fn b() {}", "new_string": "fn c() {}"})).await;

    assert_eq!(bytes(&ws, "a.rs"), b"fn a() {}\nfn c() {}\n");
    assert_eq!(
        out,
        json!({
            "summary": "Replaced 1 occurrence in a.rs",
            "file_path": "a.rs",
            "replacements": 1,
            "match_mode": "exact",
            "changed": true,
            "dry_run": false,
            "content_sha256": sha256("fn a() {}\nfn c() {}\n"),
            "diff": "--- a/a.rs\n+++ b/a.rs\n@@ -1,2 +1,2 @@\n fn a() {}\n-fn b() {}\n+fn c() {}\n",
            "diff_truncated": false
        })
    );
}

#[tokio::test]
async fn two_matches_without_replace_all_are_an_error_listing_their_lines() {
    let ws = Workspace::new();
    ws.write("a.py", "x=1\nx=1\n");

    assert_eq!(
        ws.err("edit", json!({"file_path": "a.py", "old_string": "x=1", "new_string": "x=2"})).await,
        "old_string matches 2 places (lines 1, 2); add context or set replace_all"
    );
    assert_eq!(bytes(&ws, "a.py"), b"x=1\nx=1\n");
}

#[tokio::test]
async fn replace_all_replaces_every_match() {
    let ws = Workspace::new();
    ws.write("a.py", "x=1\ny\nx=1\n");

    let out =
        edit(&ws, json!({"file_path": "a.py", "old_string": "x=1", "new_string": "x=2", "replace_all": true})).await;

    assert_eq!(bytes(&ws, "a.py"), b"x=2\ny\nx=2\n");
    assert_eq!(out["replacements"], 2);
    assert_eq!(out["summary"], "Replaced 2 occurrences in a.py");
}

#[tokio::test]
async fn expected_replacements_must_equal_the_count() {
    let ws = Workspace::new();
    ws.write("a.py", "x=1\nx=1\nx=1\n");

    assert_eq!(
        ws.err(
            "edit",
            json!({"file_path": "a.py", "old_string": "x=1", "new_string": "x=2", "expected_replacements": 2})
        )
        .await,
        "expected_replacements is 2 but old_string matches 3 places in a.py (lines 1, 2, 3); nothing was written"
    );
    let out =
        edit(&ws, json!({"file_path": "a.py", "old_string": "x=1", "new_string": "x=2", "expected_replacements": 3}))
            .await;
    assert_eq!(out["replacements"], 3);
    assert_eq!(bytes(&ws, "a.py"), b"x=2\nx=2\nx=2\n");
}

#[tokio::test]
async fn an_empty_old_string_with_replace_all_on_a_non_empty_file_is_an_error() {
    let ws = Workspace::new();
    ws.write("abcd.txt", "abcd");

    assert_eq!(
        ws.err("edit", json!({"file_path": "abcd.txt", "old_string": "", "new_string": "X", "replace_all": true}))
            .await,
        "old_string is empty but abcd.txt is not empty (4 bytes); an empty old_string only creates a file or fills \
         an empty one. Give the text to replace, or use write to replace the whole file"
    );
    assert_eq!(bytes(&ws, "abcd.txt"), b"abcd");
}

#[tokio::test]
async fn an_empty_old_string_creates_a_missing_file_with_its_parents() {
    let ws = Workspace::new();

    let out = edit(&ws, json!({"file_path": "new/dir/a.txt", "old_string": "", "new_string": "hello\n"})).await;

    assert_eq!(bytes(&ws, "new/dir/a.txt"), b"hello\n");
    assert_eq!(out["summary"], "Created new/dir/a.txt (6 bytes)");
    assert_eq!(out["diff"], "--- a/new/dir/a.txt\n+++ b/new/dir/a.txt\n@@ -0,0 +1 @@\n+hello\n");
}

#[tokio::test]
async fn an_empty_old_string_fills_an_empty_file() {
    let ws = Workspace::new();
    ws.write("empty.txt", "");

    let out = edit(&ws, json!({"file_path": "empty.txt", "old_string": "", "new_string": "content\n"})).await;

    assert_eq!(bytes(&ws, "empty.txt"), b"content\n");
    assert_eq!(out["replacements"], 1);
}

#[tokio::test]
async fn old_equal_to_new_is_success_with_changed_false_and_no_write() {
    let ws = Workspace::new();
    let path = ws.write("a.txt", "same\n");
    let before = std::fs::metadata(&path).unwrap().modified().unwrap();
    // Make a write visible even on coarse clocks: a rename would give a new inode.
    let inode_before = inode(&path);

    let out = edit(&ws, json!({"file_path": "a.txt", "old_string": "same", "new_string": "same"})).await;

    assert_eq!(out["changed"], false);
    assert_eq!(out["replacements"], 0);
    assert_eq!(out["diff"], "");
    assert_eq!(out["summary"], "No change: old_string and new_string are identical; a.txt was not written");
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), before);
    assert_eq!(inode(&path), inode_before);
}

#[cfg(unix)]
fn inode(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).unwrap().ino()
}

#[cfg(not(unix))]
fn inode(_path: &std::path::Path) -> u64 {
    0
}

#[tokio::test]
async fn crlf_lines_are_found_with_lf_and_stay_crlf() {
    let ws = Workspace::new();
    ws.write("dos.txt", b"a\r\nb\r\nc\r\n");

    edit(&ws, json!({"file_path": "dos.txt", "old_string": "a\nb", "new_string": "a\nB"})).await;

    assert_eq!(bytes(&ws, "dos.txt"), b"a\r\nB\r\nc\r\n");
}

#[tokio::test]
async fn a_byte_order_mark_stays() {
    let ws = Workspace::new();
    ws.write("bom.txt", "\u{feff}hello\nworld\n");

    edit(&ws, json!({"file_path": "bom.txt", "old_string": "hello", "new_string": "bye"})).await;

    assert_eq!(bytes(&ws, "bom.txt"), "\u{feff}bye\nworld\n".as_bytes());
}

#[tokio::test]
async fn a_file_ending_with_a_newline_keeps_it_when_the_last_line_is_replaced_without_one() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\nb\n");

    edit(&ws, json!({"file_path": "a.txt", "old_string": "b\n", "new_string": "B"})).await;

    assert_eq!(bytes(&ws, "a.txt"), b"a\nB\n");
}

#[tokio::test]
async fn a_file_without_a_final_newline_does_not_get_one() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\nb");

    edit(&ws, json!({"file_path": "a.txt", "old_string": "b", "new_string": "B\n"})).await;

    assert_eq!(bytes(&ws, "a.txt"), b"a\nB");
}

#[tokio::test]
async fn line_trimmed_matches_other_indentation_and_keeps_the_files_bytes_for_unchanged_lines() {
    let ws = Workspace::new();
    ws.write("a.py", "def f():\n\tx = 1  \n\treturn x\n");

    let out =
        edit(&ws, json!({"file_path": "a.py", "old_string": "x = 1\nreturn x", "new_string": "x = 1\nreturn x + 1"}))
            .await;

    assert_eq!(out["match_mode"], "line_trimmed");
    assert_eq!(out["summary"], "Replaced 1 occurrence in a.py (match_mode line_trimmed)");
    assert_eq!(bytes(&ws, "a.py"), b"def f():\n\tx = 1  \nreturn x + 1\n");
}

#[tokio::test]
async fn block_anchor_matches_by_first_and_last_line_and_keeps_the_bytes_around() {
    let ws = Workspace::new();
    ws.write("a.rs", "fn main() {\n    let a = 1;\n    let b = 2;\n}\n// end\n");

    let out = edit(
        &ws,
        json!({
            "file_path": "a.rs",
            "old_string": "fn main() {\n    let a = 1;\n    let b = 3;\n}",
            "new_string": "fn main() {\n    let a = 1;\n    let c = 3;\n}",
        }),
    )
    .await;

    assert_eq!(out["match_mode"], "block_anchor");
    assert_eq!(bytes(&ws, "a.rs"), b"fn main() {\n    let a = 1;\n    let c = 3;\n}\n// end\n");
}

#[tokio::test]
async fn block_anchor_keeps_the_files_indentation_of_unchanged_lines() {
    let ws = Workspace::new();
    ws.write("a.rs", "\tif x {\n\t\tone();\n\t\ttwo();\n\t}\n");

    edit(
        &ws,
        json!({
            "file_path": "a.rs",
            "old_string": "if x {\n  one();\n  tow();\n}",
            "new_string": "if x {\n  one();\n  three();\n}",
            "match_mode": "block_anchor",
        }),
    )
    .await;

    assert_eq!(bytes(&ws, "a.rs"), b"\tif x {\n\t\tone();\n  three();\n\t}\n");
}

#[tokio::test]
async fn block_anchor_needs_three_lines() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\nb\n");

    assert_eq!(
        ws.err(
            "edit",
            json!({"file_path": "a.txt", "old_string": "a\nb", "new_string": "x", "match_mode": "block_anchor"})
        )
        .await,
        "match_mode block_anchor needs an old_string of at least 3 lines (first and last are the anchors), got 2; use \
         exact or line_trimmed"
    );
}

#[tokio::test]
async fn fuzzy_modes_keep_crlf_outside_and_inside_the_replaced_text() {
    let ws = Workspace::new();
    ws.write("dos.txt", b"  one\r\n  two\r\nthree\r\n");

    edit(&ws, json!({"file_path": "dos.txt", "old_string": "one\ntwo", "new_string": "one\n2"})).await;

    assert_eq!(bytes(&ws, "dos.txt"), b"  one\r\n2\r\nthree\r\n");
}

#[tokio::test]
async fn exact_mode_does_not_fall_back_to_fuzzy_matching() {
    let ws = Workspace::new();
    ws.write("a.py", "x = 1\n");

    assert_eq!(
        ws.err("edit", json!({"file_path": "a.py", "old_string": "  x = 1", "new_string": "y", "match_mode": "exact"}))
            .await,
        "old_string not found in a.py (match_mode exact); read the file again and copy the text to replace exactly, \
         with enough surrounding lines to be unique"
    );
}

#[tokio::test]
async fn text_found_by_no_mode_is_an_error_naming_the_modes_tried() {
    let ws = Workspace::new();
    ws.write("a.txt", "alpha\n");

    assert_eq!(
        ws.err("edit", json!({"file_path": "a.txt", "old_string": "beta", "new_string": "gamma"})).await,
        "old_string not found in a.txt (match_mode auto: exact, line_trimmed); read the file again and copy the text \
         to replace exactly, with enough surrounding lines to be unique"
    );
}

#[tokio::test]
async fn dry_run_returns_the_diff_and_writes_nothing() {
    let ws = Workspace::new();
    ws.write("a.txt", "old\n");

    let out = edit(&ws, json!({"file_path": "a.txt", "old_string": "old", "new_string": "new", "dry_run": true})).await;

    assert_eq!(bytes(&ws, "a.txt"), b"old\n");
    assert_eq!(out["dry_run"], true);
    assert_eq!(out["summary"], "Dry run: would replace 1 occurrence in a.txt; nothing written");
    assert_eq!(out["diff"], "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n");
    assert_eq!(out["content_sha256"], sha256("new\n"));
}

#[tokio::test]
async fn dry_run_of_a_creation_creates_nothing() {
    let ws = Workspace::new();

    edit(&ws, json!({"file_path": "new.txt", "old_string": "", "new_string": "x", "dry_run": true})).await;

    assert!(!ws.root.join("new.txt").exists());
}

#[tokio::test]
async fn a_stale_expected_hash_refuses_the_edit() {
    let ws = Workspace::new();
    ws.write("a.txt", "now\n");

    let text = ws
        .err(
            "edit",
            json!({"file_path": "a.txt", "old_string": "now", "new_string": "later", "expected_hash": sha256("then\n")}),
        )
        .await;

    assert!(text.starts_with("a.txt changed since it was read"), "{text}");
    assert_eq!(bytes(&ws, "a.txt"), b"now\n");
}

#[tokio::test]
async fn the_content_sha256_of_an_edit_is_a_valid_expected_hash_for_the_next() {
    let ws = Workspace::new();
    ws.write("a.txt", "1\n");

    let first = edit(&ws, json!({"file_path": "a.txt", "old_string": "1", "new_string": "2"})).await;
    edit(
        &ws,
        json!({"file_path": "a.txt", "old_string": "2", "new_string": "3", "expected_hash": first["content_sha256"]}),
    )
    .await;

    assert_eq!(bytes(&ws, "a.txt"), b"3\n");
}

#[tokio::test]
async fn a_missing_file_with_old_text_is_an_error_saying_how_to_create_it() {
    let ws = Workspace::new();

    assert_eq!(
        ws.err("edit", json!({"file_path": "nope.txt", "old_string": "a", "new_string": "b"})).await,
        "File not found: nope.txt; to create it, call edit with an empty old_string, or use write"
    );
}

#[tokio::test]
async fn a_binary_file_is_an_error() {
    let ws = Workspace::new();
    ws.write("budget.ods", b"PK\x03\x04\x14\x00\x00\x08mimetype");

    assert_eq!(
        ws.err("edit", json!({"file_path": "budget.ods", "old_string": "mimetype", "new_string": "x"})).await,
        "Cannot edit binary file: budget.ods (contains a NUL byte); edit works on UTF-8 text only"
    );
}

#[tokio::test]
async fn invalid_utf8_past_the_sniff_window_is_an_error_not_a_lossy_rewrite() {
    let ws = Workspace::new();
    let mut content = "a".repeat(10_000).into_bytes();
    content.extend_from_slice(b"\xFF\nend\n");
    ws.write("mostly.txt", &content);

    assert_eq!(
        ws.err("edit", json!({"file_path": "mostly.txt", "old_string": "end", "new_string": "END"})).await,
        "Cannot edit mostly.txt: it is not valid UTF-8 (first bad byte at offset 10000); edit changes UTF-8 text only, \
         use write to replace the whole file"
    );
    assert_eq!(bytes(&ws, "mostly.txt"), content);
}

#[tokio::test]
async fn expected_replacements_of_0_is_an_error() {
    let ws = Workspace::new();
    ws.write("a.txt", "a");

    assert_eq!(
        ws.err("edit", json!({"file_path": "a.txt", "old_string": "a", "new_string": "b", "expected_replacements": 0}))
            .await,
        "invalid arguments for `edit`: `expected_replacements`: must be at least 1; got 0"
    );
}

#[tokio::test]
async fn an_unknown_match_mode_is_an_argument_error() {
    let ws = Workspace::new();
    ws.write("a.txt", "a");

    let text = ws
        .err("edit", json!({"file_path": "a.txt", "old_string": "a", "new_string": "b", "match_mode": "fuzzy"}))
        .await;

    assert!(
        text.contains("unknown variant `fuzzy`, expected one of `exact`, `line_trimmed`, `block_anchor`, `auto`"),
        "{text}"
    );
}
