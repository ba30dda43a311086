//! `apply_patch` on a real temp directory: the grammar, the checks before writing, matching,
//! line endings, all-or-nothing writes, dry runs and the output.

use crate::common;

use std::path::Path;

use common::Workspace;
use serde_json::{Value, json};

async fn apply(ws: &Workspace, patch: &str) -> Value {
    serde_json::from_str(&ws.ok("apply_patch", json!({ "patch": patch })).await).unwrap()
}

async fn reject(ws: &Workspace, patch: &str) -> String {
    ws.err("apply_patch", json!({ "patch": patch })).await
}

fn read(ws: &Workspace, path: &str) -> String {
    std::fs::read_to_string(ws.root.join(path)).unwrap()
}

/// Every entry below `dir` (relative paths, sorted), files with their bytes.
fn snapshot(dir: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            let shown = path.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
                out.push((shown, None));
            } else {
                out.push((shown, Some(std::fs::read(&path).unwrap())));
            }
        }
    }
    out.sort();
    out
}

// ---- grammar ----

#[tokio::test]
async fn prose_and_a_markdown_fence_around_the_envelope_are_ignored() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");

    apply(&ws, "Here is the change:\n```diff\n*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+uno\n*** End Patch\n```\nDone.").await;

    assert_eq!(read(&ws, "a.txt"), "uno\n");
}

#[tokio::test]
async fn crlf_in_the_patch_text_is_read_as_lf() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\ntwo\n");

    apply(&ws, "*** Begin Patch\r\n*** Update File: a.txt\r\n@@\r\n one\r\n-two\r\n+2\r\n*** End Patch\r\n").await;

    assert_eq!(read(&ws, "a.txt"), "one\n2\n");
}

#[tokio::test]
async fn a_truly_empty_line_inside_a_chunk_is_an_empty_context_line() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\nb\n\nc\nb\nc\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n\n c\n-b\n+B\n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.txt"), "a\nb\n\nc\nB\nc\n");
}

#[tokio::test]
async fn blank_lines_between_sections_are_separators() {
    let ws = Workspace::new();
    ws.write("a.txt", "x\n");

    apply(&ws, "*** Begin Patch\n\n*** Add File: n.txt\n+n\n\n*** Update File: a.txt\n\n@@\n-x\n+y\n\n*** End Patch\n")
        .await;

    assert_eq!((read(&ws, "n.txt"), read(&ws, "a.txt")), ("n\n".to_owned(), "y\n".to_owned()));
}

#[tokio::test]
async fn unified_hunk_numbers_are_ignored_and_their_text_is_the_context_line() {
    let ws = Workspace::new();
    ws.write("a.rs", "fn a() {\n    1\n}\nfn b() {\n    1\n}\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.rs\n@@ -4,3 +4,3 @@ fn b() {\n-    1\n+    2\n*** End Patch\n")
        .await;

    assert_eq!(read(&ws, "a.rs"), "fn a() {\n    1\n}\nfn b() {\n    2\n}\n");
}

#[tokio::test]
async fn a_missing_begin_patch_is_an_error_on_line_1() {
    let ws = Workspace::new();

    let text = reject(&ws, "*** Update File: a.txt\n-x\n+y\n").await;

    assert_eq!(
        text,
        "patch line 1: no `*** Begin Patch` line; the patch must be wrapped in `*** Begin Patch` ... \
         `*** End Patch`, each on its own line; nothing was written"
    );
}

#[tokio::test]
async fn a_missing_end_patch_is_an_error_and_nothing_is_written() {
    let ws = Workspace::new();

    let text = reject(&ws, "*** Begin Patch\n*** Add File: n.txt\n+x\n").await;

    assert_eq!(
        text,
        "patch line 3: the patch ends without `*** End Patch`; it may have been cut off. Send the whole patch; \
         nothing was written"
    );
    assert!(!ws.root.join("n.txt").exists());
}

#[tokio::test]
async fn a_patch_without_sections_is_an_error() {
    let ws = Workspace::new();

    let text = reject(&ws, "*** Begin Patch\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 2: the patch has no sections; add `*** Add File:`, `*** Delete File:` or `*** Update File:`; \
         nothing was written"
    );
}

#[tokio::test]
async fn an_unknown_header_is_an_error_naming_its_line() {
    let ws = Workspace::new();

    let text = reject(&ws, "intro\n*** Begin Patch\n*** Modify File: a.txt\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 3: expected a section header (`*** Add File: <path>`, `*** Delete File: <path>`, \
         `*** Update File: <path>`) or `*** End Patch`, got `*** Modify File: a.txt`; nothing was written"
    );
}

#[tokio::test]
async fn an_add_line_without_plus_is_an_error_naming_its_line() {
    let ws = Workspace::new();

    let text = reject(&ws, "*** Begin Patch\n*** Add File: n.txt\n+one\ntwo\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 4: expected a line starting with `+` in `*** Add File: n.txt`, or the next `***` header; got \
         `two`; nothing was written"
    );
}

#[tokio::test]
async fn an_empty_line_inside_an_add_section_is_an_error() {
    let ws = Workspace::new();

    let text = reject(&ws, "*** Begin Patch\n*** Add File: n.txt\n+one\n\n+three\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 4: empty line in `*** Add File: n.txt`; every line of a new file starts with `+` (a lone `+` \
         for an empty line); nothing was written"
    );
}

#[tokio::test]
async fn a_delete_section_with_lines_is_an_error() {
    let ws = Workspace::new();
    ws.write("a.txt", "x\n");

    let text = reject(&ws, "*** Begin Patch\n*** Delete File: a.txt\n-x\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 3: `*** Delete File: a.txt` takes no lines; expected the next `***` header, got `-x`; nothing \
         was written"
    );
    assert_eq!(read(&ws, "a.txt"), "x\n");
}

#[tokio::test]
async fn a_chunk_line_without_a_prefix_is_an_error() {
    let ws = Workspace::new();

    let text = reject(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\ny\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 5: expected a chunk line starting with ' ' (context), '-' (remove) or '+' (add), an `@@` line, \
         or a `***` header in `*** Update File: a.txt`; got `y`; nothing was written"
    );
}

#[tokio::test]
async fn a_no_newline_marker_is_an_error() {
    let ws = Workspace::new();

    let text =
        reject(&ws, "*** Begin Patch\n*** Update File: a.txt\n-x\n+y\n\\ No newline at end of file\n*** End Patch\n")
            .await;

    assert_eq!(
        text,
        "patch line 5: `\\ No newline at end of file` is not part of this format; remove it (each file keeps its \
         own final-newline state); nothing was written"
    );
}

#[tokio::test]
async fn move_to_after_a_chunk_is_an_error() {
    let ws = Workspace::new();

    let text =
        reject(&ws, "*** Begin Patch\n*** Update File: a.txt\n-x\n+y\n*** Move to: b.txt\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 5: `*** Move to:` must come right after `*** Update File: a.txt`, before its chunks; nothing \
         was written"
    );
}

#[tokio::test]
async fn end_of_file_must_be_the_last_line_of_its_chunk() {
    let ws = Workspace::new();

    let text = reject(&ws, "*** Begin Patch\n*** Update File: a.txt\n-x\n*** End of File\n+y\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 5: `*** End of File` must be the last line of its chunk; start the next chunk with `@@`, got \
         `+y`; nothing was written"
    );
}

#[tokio::test]
async fn a_chunk_without_lines_is_an_error() {
    let ws = Workspace::new();

    let text = reject(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@ fn a\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 3: a chunk of `*** Update File: a.txt` has no lines after its `@@`; nothing was written"
    );
}

#[tokio::test]
async fn a_header_without_a_path_is_an_error() {
    let ws = Workspace::new();

    let text = reject(&ws, "*** Begin Patch\n*** Delete File:   \n*** End Patch\n").await;

    assert_eq!(text, "patch line 2: `*** Delete File:` needs a path after the colon; nothing was written");
}

#[tokio::test]
async fn a_second_patch_after_end_patch_is_an_error() {
    let ws = Workspace::new();

    let text = reject(
        &ws,
        "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n*** Begin Patch\n*** Add File: b.txt\n+b\n*** End Patch\n",
    )
    .await;

    assert_eq!(
        text,
        "patch line 5: a second `*** Begin Patch` after `*** End Patch`; send one patch per call, or merge the \
         sections; nothing was written"
    );
    assert!(!ws.root.join("a.txt").exists());
}

#[tokio::test]
async fn an_update_with_only_context_lines_is_an_error() {
    let ws = Workspace::new();
    ws.write("a.txt", "x\n");

    let text = reject(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n x\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 2: `*** Update File: a.txt` changes nothing: no line of its chunks starts with `-` or `+`; \
         nothing was written"
    );
}

// ---- checks before writing ----

#[tokio::test]
async fn add_onto_an_existing_file_is_an_error_and_the_file_is_unchanged() {
    let ws = Workspace::new();
    ws.write("notes.txt", "old\n");

    let text = reject(&ws, "*** Begin Patch\n*** Add File: notes.txt\n+new\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 2: notes.txt already exists; change it with `*** Update File: notes.txt`, or delete it earlier \
         in the patch with `*** Delete File: notes.txt`; nothing was written"
    );
    assert_eq!(read(&ws, "notes.txt"), "old\n");
}

#[tokio::test]
async fn move_onto_an_existing_file_is_an_error() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    ws.write("b.txt", "b\n");

    let text = reject(&ws, "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 2: Move to: b.txt already exists; change it with `*** Update File: b.txt`, or delete it earlier \
         in the patch with `*** Delete File: b.txt`; nothing was written"
    );
    assert_eq!((read(&ws, "a.txt"), read(&ws, "b.txt")), ("a\n".to_owned(), "b\n".to_owned()));
}

#[tokio::test]
async fn move_onto_a_file_deleted_earlier_in_the_patch_works() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    ws.write("b.txt", "b\n");

    apply(&ws, "*** Begin Patch\n*** Delete File: b.txt\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch\n")
        .await;

    assert!(!ws.root.join("a.txt").exists());
    assert_eq!(read(&ws, "b.txt"), "a\n");
}

#[tokio::test]
async fn delete_then_add_of_the_same_path_works() {
    let ws = Workspace::new();
    ws.write("a.txt", "old\n");

    let output =
        apply(&ws, "*** Begin Patch\n*** Delete File: a.txt\n*** Add File: a.txt\n+new\n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.txt"), "new\n");
    assert_eq!(
        output["files"],
        json!([
            {"action": "delete", "file_path": "a.txt", "summary": "D a.txt"},
            {"action": "add", "file_path": "a.txt", "summary": "A a.txt"}
        ])
    );
}

#[tokio::test]
async fn two_sections_on_one_file_are_an_error_even_spelled_differently() {
    let ws = Workspace::new();
    ws.write("a.txt", "x\ny\n");

    let text = reject(
        &ws,
        "*** Begin Patch\n*** Update File: a.txt\n-x\n+X\n*** Update File: ./a.txt\n-y\n+Y\n*** End Patch\n",
    )
    .await;

    assert_eq!(
        text,
        "patch line 5: ./a.txt was already updated by the section at patch line 2; put all changes to one file in \
         one section; nothing was written"
    );
    assert_eq!(read(&ws, "a.txt"), "x\ny\n");
}

#[tokio::test]
async fn update_and_delete_of_a_missing_file_are_errors_reported_together() {
    let ws = Workspace::new();

    let text =
        reject(&ws, "*** Begin Patch\n*** Update File: gone.txt\n-x\n+y\n*** Delete File: gone2.txt\n*** End Patch\n")
            .await;

    assert_eq!(
        text,
        "the patch has 2 problems; nothing was written:\n\
         - patch line 2: `*** Update File: gone.txt`: file not found; check the path, or create the file with \
         `*** Add File:`\n\
         - patch line 5: `*** Delete File: gone2.txt`: file not found; check the path"
    );
}

#[tokio::test]
async fn an_update_file_section_with_no_hunks_is_an_error_and_the_file_keeps_its_bytes_and_mtime() {
    let ws = Workspace::new();
    let path = ws.write("a.txt", "keep\n");
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();

    let text = reject(&ws, "*** Begin Patch\n*** Update File: a.txt\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 2: `*** Update File: a.txt` has no chunks; add one (`@@`, then lines starting with ' ', '-' or \
         '+'), or a `*** Move to:` line; nothing was written"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"keep\n");
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_refused() {
    let ws = Workspace::new();

    let text = reject(&ws, "*** Begin Patch\n*** Add File: ../outside.txt\n+x\n*** End Patch\n").await;

    assert_eq!(text, "patch line 2: Path escapes workspace: ../outside.txt; nothing was written");
    assert!(!ws.parent.join("outside.txt").exists());
}

#[tokio::test]
async fn a_file_that_is_not_utf8_cannot_be_updated() {
    let ws = Workspace::new();
    ws.write("bin.dat", [0xff, 0xfe, b'x', b'\n']);

    let text = reject(&ws, "*** Begin Patch\n*** Update File: bin.dat\n-x\n+y\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 2: bin.dat is not UTF-8 text; apply_patch changes text files only; nothing was written"
    );
}

#[tokio::test]
async fn an_update_that_changes_nothing_is_an_error() {
    let ws = Workspace::new();
    ws.write("a.txt", "x\n");

    let text = reject(&ws, "*** Begin Patch\n*** Update File: a.txt\n-x\n+x\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 2: `*** Update File: a.txt` leaves the file unchanged (its `+` lines put back what its `-` lines \
         remove); drop the section, or change the lines; nothing was written"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_symbolic_link_is_not_deleted() {
    let ws = Workspace::new();
    ws.write("target.txt", "t\n");
    std::os::unix::fs::symlink(ws.root.join("target.txt"), ws.root.join("link.txt")).unwrap();

    let text = reject(&ws, "*** Begin Patch\n*** Delete File: link.txt\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 2: link.txt is a symbolic link; apply_patch does not delete or move links (it would act on the \
         file they point to); nothing was written"
    );
    assert_eq!(read(&ws, "target.txt"), "t\n");
}

// ---- matching ----

#[tokio::test]
async fn an_exact_match_after_the_cursor_beats_a_fuzzy_earlier_one() {
    let ws = Workspace::new();
    ws.write("a.txt", "  foo\nbar\nfoo\nbar\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n-foo\n bar\n+baz\n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.txt"), "  foo\nbar\nbar\nbaz\n");
}

#[tokio::test]
async fn trailing_white_space_is_ignored_when_nothing_matches_exactly_and_context_keeps_the_files_bytes() {
    let ws = Workspace::new();
    ws.write("a.txt", "one  \ntwo\t\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.txt"), "one  \n2\n");
}

#[tokio::test]
async fn indentation_is_ignored_at_the_trimmed_level_and_context_keeps_the_files_indentation() {
    let ws = Workspace::new();
    ws.write("a.py", "def f():\n\tif x:\n\t\treturn 1\n");

    apply(
        &ws,
        "*** Begin Patch\n*** Update File: a.py\n@@\n    if x:\n-        return 1\n+\t\treturn 2\n*** End Patch\n",
    )
    .await;

    assert_eq!(read(&ws, "a.py"), "def f():\n\tif x:\n\t\treturn 2\n");
}

#[tokio::test]
async fn typographic_punctuation_matches_ascii_last_and_context_keeps_the_files_characters() {
    let ws = Workspace::new();
    ws.write("a.md", "He said \u{201C}hi\u{201D} \u{2014} twice\nold\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.md\n@@\n He said \"hi\" - twice\n-old\n+new\n*** End Patch\n")
        .await;

    assert_eq!(read(&ws, "a.md"), "He said \u{201C}hi\u{201D} \u{2014} twice\nnew\n");
}

#[tokio::test]
async fn an_at_at_context_line_picks_the_occurrence_after_it() {
    let ws = Workspace::new();
    ws.write("a.rs", "fn a() {\n    x\n}\nfn b() {\n    x\n}\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.rs\n@@ fn b() {\n-    x\n+    y\n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.rs"), "fn a() {\n    x\n}\nfn b() {\n    y\n}\n");
}

#[tokio::test]
async fn several_at_at_lines_are_found_in_turn() {
    let ws = Workspace::new();
    ws.write("a.py", "class A:\n    def f(self):\n        x\nclass B:\n    def f(self):\n        x\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.py\n@@ class B:\n@@     def f(self):\n-        x\n+        y\n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.py"), "class A:\n    def f(self):\n        x\nclass B:\n    def f(self):\n        y\n");
}

#[tokio::test]
async fn added_lines_only_go_right_after_the_at_at_line() {
    let ws = Workspace::new();
    ws.write("a.txt", "head\nbody\ntail\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@ head\n+inserted\n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.txt"), "head\ninserted\nbody\ntail\n");
}

#[tokio::test]
async fn added_lines_only_without_an_at_at_line_go_at_the_end() {
    let ws = Workspace::new();
    ws.write("a.txt", "head\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.txt\n+appended\n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.txt"), "head\nappended\n");
}

#[tokio::test]
async fn a_chunk_that_does_not_match_names_its_line_and_shows_the_lines() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\ntwo\n");

    let text = reject(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-three\n+3\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 3: chunk 1 of a.txt: cannot find these 2 line(s) in the file:\n    one\n    three\nRead the \
         file again and copy the context and removed lines exactly; nothing was written"
    );
}

#[tokio::test]
async fn chunks_out_of_file_order_are_an_error_that_says_so() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\nb\nc\n");

    let text = reject(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n-c\n+C\n@@\n-a\n+A\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 6: chunk 2 of a.txt: cannot find these 1 line(s) after line 3 of the file:\n    a\nThey are at \
         line 1, before the text of the previous chunk or `@@` line; chunks must be in file order; nothing was \
         written"
    );
}

// ---- end of file, final newline, CRLF ----

#[tokio::test]
async fn end_of_file_edits_the_last_occurrence() {
    let ws = Workspace::new();
    ws.write("a.txt", "x\ny\nx\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+z\n*** End of File\n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.txt"), "x\ny\nz\n");
}

#[tokio::test]
async fn an_end_of_file_chunk_that_is_not_at_the_end_is_an_error() {
    let ws = Workspace::new();
    ws.write("a.txt", "x\ny\n");

    let text =
        reject(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+z\n*** End of File\n*** End Patch\n").await;

    assert_eq!(
        text,
        "patch line 3: chunk 1 of a.txt ends with `*** End of File` but these 1 line(s) are not the last lines of \
         the file:\n    x\nThey are at line 1, which is not the end; remove `*** End of File`, or give the file's \
         last lines; nothing was written"
    );
}

#[tokio::test]
async fn a_file_without_a_final_newline_keeps_none() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\ntwo");

    apply(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n+3\n*** End of File\n*** End Patch\n")
        .await;

    assert_eq!(read(&ws, "a.txt"), "one\n2\n3");
}

#[tokio::test]
async fn removing_the_last_line_of_a_file_without_a_final_newline_keeps_the_empty_lines_before_it() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n\n\nlast");

    apply(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n-last\n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.txt"), "a\n\n\n");
}

#[tokio::test]
async fn a_file_with_crlf_keeps_crlf_for_kept_and_added_lines() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\r\ntwo\r\nthree\r\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n+2.5\n three\n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.txt"), "one\r\n2\r\n2.5\r\nthree\r\n");
}

#[tokio::test]
async fn a_byte_order_mark_is_kept() {
    let ws = Workspace::new();
    ws.write("a.txt", "\u{feff}one\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.txt\n-one\n+1\n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.txt"), "\u{feff}1\n");
}

#[tokio::test]
async fn a_trailing_empty_context_line_may_stand_for_the_final_newline() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\nb\n");

    apply(&ws, "*** Begin Patch\n*** Update File: a.txt\n@@\n-b\n+c\n \n*** End Patch\n").await;

    assert_eq!(read(&ws, "a.txt"), "a\nc\n");
}

// ---- all or nothing ----

#[tokio::test]
async fn a_patch_whose_third_file_fails_leaves_all_three_files_byte_identical_and_no_temp_files() {
    let ws = Workspace::new();
    ws.write("one.txt", "1\n");
    ws.write("two.txt", "2\n");
    ws.write("three.txt", "3\n");
    let before = snapshot(&ws.root);

    let text = reject(
        &ws,
        "*** Begin Patch\n*** Update File: one.txt\n-1\n+one\n*** Delete File: two.txt\n*** Update File: three.txt\n\
         -not there\n+x\n*** End Patch\n",
    )
    .await;

    assert!(text.starts_with("patch line 7: chunk 1 of three.txt: cannot find"), "{text}");
    assert_eq!(snapshot(&ws.root), before);
}

#[tokio::test]
async fn a_new_file_under_a_file_is_refused_before_anything_is_written() {
    let ws = Workspace::new();
    ws.write("one.txt", "1\n");
    ws.write("plain", "file\n");
    let before = snapshot(&ws.root);

    let text = reject(
        &ws,
        "*** Begin Patch\n*** Update File: one.txt\n-1\n+one\n*** Add File: plain/x.txt\n+x\n*** End Patch\n",
    )
    .await;

    assert_eq!(text, "patch line 5: plain is a file, so plain/x.txt cannot be created below it; nothing was written");
    assert_eq!(snapshot(&ws.root), before);
}

#[tokio::test]
async fn a_successful_patch_leaves_no_temp_files() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    ws.write("b.txt", "b\n");

    apply(
        &ws,
        "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Delete File: b.txt\n*** Add File: d/e/c.txt\n+c\n*** End Patch\n",
    )
    .await;

    let names: Vec<String> = snapshot(&ws.root).into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["a.txt", "d", "d/e", "d/e/c.txt"]);
}

#[cfg(unix)]
#[tokio::test]
async fn updates_and_moves_keep_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Workspace::new();
    let script = ws.write("run.sh", "echo 1\n");
    let other = ws.write("tool.sh", "echo t\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o700)).unwrap();

    apply(
        &ws,
        "*** Begin Patch\n*** Update File: run.sh\n-echo 1\n+echo 2\n*** Update File: tool.sh\n*** Move to: bin/tool.sh\n\
         -echo t\n+echo T\n*** End Patch\n",
    )
    .await;

    let mode = |p: &str| std::fs::metadata(ws.root.join(p)).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode("run.sh"), mode("bin/tool.sh")), (0o751, 0o700));
    assert_eq!(read(&ws, "bin/tool.sh"), "echo T\n");
    assert!(!ws.root.join("tool.sh").exists());
}

// ---- dry run and output ----

const TWO_FILE_PATCH: &str = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n*** Add File: b.txt\n+hello\n*** Delete File: c.txt\n*** End Patch\n";

#[tokio::test]
async fn the_output_has_the_summary_per_file_summaries_and_the_diff_preview() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\ntwo\nthree\n");
    ws.write("c.txt", "gone\n");

    let output = apply(&ws, TWO_FILE_PATCH).await;

    assert_eq!(
        output,
        json!({
            "summary": "Applied patch to 3 file(s)",
            "file_count": 3,
            "files": [
                {"action": "update", "file_path": "a.txt", "summary": "M a.txt"},
                {"action": "add", "file_path": "b.txt", "summary": "A b.txt"},
                {"action": "delete", "file_path": "c.txt", "summary": "D c.txt"}
            ],
            "diff": "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n\
                     --- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+hello\n\
                     --- a/c.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n",
            "diff_truncated": false
        })
    );
}

#[tokio::test]
async fn a_move_is_reported_with_its_target() {
    let ws = Workspace::new();
    ws.write("a.txt", "x\n");

    let output = apply(&ws, "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch\n").await;

    assert_eq!(
        output["files"],
        json!([{"action": "move", "file_path": "a.txt", "move_to": "b.txt", "summary": "R a.txt -> b.txt"}])
    );
    assert_eq!(output["diff"], "--- a/a.txt\n+++ b/b.txt\n");
}

#[tokio::test]
async fn dry_run_reports_the_same_files_and_diff_and_writes_nothing() {
    let dry = Workspace::new();
    let real = Workspace::new();
    for ws in [&dry, &real] {
        ws.write("a.txt", "one\ntwo\nthree\n");
        ws.write("c.txt", "gone\n");
    }
    let before = snapshot(&dry.root);

    let preview: Value =
        serde_json::from_str(&dry.ok("apply_patch", json!({"patch": TWO_FILE_PATCH, "dry_run": true})).await).unwrap();
    let applied = apply(&real, TWO_FILE_PATCH).await;

    assert_eq!(snapshot(&dry.root), before);
    assert_eq!(preview["summary"], "Patch preview ready for 3 file(s)");
    assert_eq!(
        (&preview["file_count"], &preview["files"], &preview["diff"]),
        (&applied["file_count"], &applied["files"], &applied["diff"])
    );
}

#[tokio::test]
async fn a_long_diff_preview_is_capped_with_head_and_tail() {
    let ws = Workspace::new();
    let lines: String = (1..=200).map(|i| format!("+line {i}\n")).collect();

    let output = apply(&ws, &format!("*** Begin Patch\n*** Add File: big.txt\n{lines}*** End Patch\n")).await;

    let diff = output["diff"].as_str().unwrap();
    assert_eq!(output["diff_truncated"], true);
    assert_eq!(diff.lines().count(), 120);
    assert!(diff.starts_with("--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,200 @@\n+line 1\n"), "{diff}");
    assert!(diff.contains("\n+line 57\n...[84 lines omitted]...\n+line 142\n"), "{diff}");
    assert!(diff.ends_with("+line 200\n"));
    assert_eq!(read(&ws, "big.txt").lines().count(), 200);
    let ref_id = output["ref_id"].as_str().unwrap();
    assert_eq!(ref_id.len(), tool_runtime::output::REF_ID_LEN, "{ref_id}");
}

#[tokio::test]
async fn the_whole_diff_of_a_cut_preview_is_kept_under_its_ref_id() {
    let ws = Workspace::new();
    let lines: String = (1..=200).map(|i| format!("+line {i}\n")).collect();
    let output = apply(&ws, &format!("*** Begin Patch\n*** Add File: big.txt\n{lines}*** End Patch\n")).await;

    let arguments = json!({"ref_id": output["ref_id"], "pattern": "+line 100", "regex": false});
    let found = ws.ok("tool_output_cache_grep", arguments).await;

    // Line 103 of the whole diff: the two file headers and the hunk header come first.
    assert_eq!(found, "  103: +line 100");
}

#[tokio::test]
async fn a_dry_run_keeps_the_whole_diff_of_a_cut_preview_too() {
    let ws = Workspace::new();
    let lines: String = (1..=200).map(|i| format!("+line {i}\n")).collect();
    let patch = format!("*** Begin Patch\n*** Add File: big.txt\n{lines}*** End Patch\n");
    let output: Value =
        serde_json::from_str(&ws.ok("apply_patch", json!({"patch": patch, "dry_run": true})).await).unwrap();

    let arguments = json!({"ref_id": output["ref_id"], "offset": 202});
    let last = ws.ok("tool_output_cache", arguments).await;

    assert!(!ws.root.join("big.txt").exists());
    assert_eq!(last, "  203  +line 200");
}

#[tokio::test]
async fn a_whole_diff_preview_has_no_ref_id() {
    let ws = Workspace::new();

    let output = apply(&ws, "*** Begin Patch\n*** Add File: small.txt\n+one\n*** End Patch\n").await;

    assert_eq!((&output["diff_truncated"], output.get("ref_id")), (&json!(false), None));
}
