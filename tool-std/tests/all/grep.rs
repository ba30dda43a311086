//! The `grep` tool: `path:line: text` output in path order, options, limits and errors.

use crate::common;

use common::Workspace;
use serde_json::json;

fn foo_tree(ws: &Workspace) {
    ws.write("src/b.txt", "bar foo\n");
    ws.write("a.txt", "foo\nbar\nfoo bar\n");
    ws.write("notes.md", "nothing here\n");
}

#[tokio::test]
async fn matches_are_path_line_text_in_path_then_line_order() {
    let ws = Workspace::new();
    foo_tree(&ws);

    assert_eq!(ws.ok("grep", json!({"pattern": "foo"})).await, "a.txt:1: foo\na.txt:3: foo bar\nsrc/b.txt:1: bar foo");
}

#[tokio::test]
async fn the_pattern_is_a_regex_by_default() {
    let ws = Workspace::new();
    foo_tree(&ws);

    assert_eq!(ws.ok("grep", json!({"pattern": "^foo( |$)"})).await, "a.txt:1: foo\na.txt:3: foo bar");
}

#[tokio::test]
async fn regex_false_searches_the_literal_text() {
    let ws = Workspace::new();
    ws.write("a.rs", "call(x)\ncallx\n");

    assert_eq!(ws.ok("grep", json!({"pattern": "call(", "regex": false})).await, "a.rs:1: call(x)");
}

#[tokio::test]
async fn dollar_matches_before_crlf_and_output_drops_the_cr() {
    let ws = Workspace::new();
    ws.write("dos.txt", "end\r\nend here\r\n");

    assert_eq!(ws.ok("grep", json!({"pattern": "end$"})).await, "dos.txt:1: end");
}

#[tokio::test]
async fn case_insensitive_ignores_case() {
    let ws = Workspace::new();
    ws.write("a.txt", "Foo\nfoo\nbar\n");

    assert_eq!(ws.ok("grep", json!({"pattern": "FOO", "case_insensitive": true})).await, "a.txt:1: Foo\na.txt:2: foo");
}

#[tokio::test]
async fn include_keeps_only_matching_files_at_any_depth() {
    let ws = Workspace::new();
    ws.write("main.rs", "fn foo() {}\n");
    ws.write("src/lib.rs", "// foo\n");
    ws.write("README.md", "foo\n");

    assert_eq!(
        ws.ok("grep", json!({"pattern": "foo", "include": "*.rs"})).await,
        "main.rs:1: fn foo() {}\nsrc/lib.rs:1: // foo"
    );
}

#[tokio::test]
async fn path_limits_the_search_to_a_directory_or_file() {
    let ws = Workspace::new();
    foo_tree(&ws);

    assert_eq!(ws.ok("grep", json!({"pattern": "foo", "path": "src"})).await, "src/b.txt:1: bar foo");
    assert_eq!(ws.ok("grep", json!({"pattern": "bar", "path": "a.txt"})).await, "a.txt:2: bar\na.txt:3: foo bar");
}

#[tokio::test]
async fn context_lines_use_dashes_and_groups_are_separated() {
    let ws = Workspace::new();
    ws.write("a.txt", "1\n2\nhit\n4\n5\n6\n7\nhit\n9\n");
    ws.write("b.txt", "hit\n");

    assert_eq!(
        ws.ok("grep", json!({"pattern": "hit", "before": 1, "after": 1})).await,
        "a.txt-2- 2\na.txt:3: hit\na.txt-4- 4\n--\na.txt-7- 7\na.txt:8: hit\na.txt-9- 9\n--\nb.txt:1: hit"
    );
}

#[tokio::test]
async fn adjacent_context_groups_are_merged() {
    let ws = Workspace::new();
    ws.write("a.txt", "hit\nx\nhit\n");

    assert_eq!(ws.ok("grep", json!({"pattern": "hit", "after": 1})).await, "a.txt:1: hit\na.txt-2- x\na.txt:3: hit");
}

#[tokio::test]
async fn gitignored_files_are_skipped() {
    let ws = Workspace::new();
    ws.write(".gitignore", "build/\n");
    ws.write("build/out.txt", "needle\n");
    ws.write("src.txt", "needle\n");

    assert_eq!(ws.ok("grep", json!({"pattern": "needle"})).await, "src.txt:1: needle");
}

#[tokio::test]
async fn files_with_nul_bytes_are_skipped() {
    let ws = Workspace::new();
    ws.write("blob.bin", b"needle\x00\x01\x02");
    ws.write("text.txt", "needle\n");

    assert_eq!(ws.ok("grep", json!({"pattern": "needle"})).await, "text.txt:1: needle");
}

#[tokio::test]
async fn no_match_is_a_normal_result() {
    let ws = Workspace::new();
    foo_tree(&ws);

    let message = ws.call("grep", json!({"pattern": "qux"})).await;

    assert!(!message.is_error);
    assert_eq!(message.text(), "No matches for: qux");
}

#[tokio::test]
async fn more_matches_than_limit_show_the_first_and_a_count() {
    let ws = Workspace::new();
    foo_tree(&ws);

    assert_eq!(
        ws.ok("grep", json!({"pattern": "foo", "limit": 2})).await,
        "a.txt:1: foo\na.txt:3: foo bar\n\n[showing 2 of 3 matching lines] Narrow the pattern, path or include, or \
         raise limit (max 1000)."
    );
}

#[tokio::test]
async fn an_invalid_regex_is_an_error_suggesting_regex_false() {
    let ws = Workspace::new();

    assert_eq!(
        ws.err("grep", json!({"pattern": "call("})).await,
        "Invalid regex `call(`: unclosed group; fix it, or set regex=false to search for the text literally"
    );
}

#[tokio::test]
async fn an_empty_pattern_is_refused_at_decode_as_tool_output_cache_grep_refuses_it() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");

    assert_eq!(
        ws.err("grep", json!({"pattern": ""})).await,
        "invalid arguments for `grep`: `pattern`: must be at least 1 character; got 0"
    );
}

#[tokio::test]
async fn context_over_50_lines_is_an_error() {
    let ws = Workspace::new();

    assert_eq!(
        ws.err("grep", json!({"pattern": "x", "before": 51})).await,
        "invalid arguments for `grep`: `before`: must be at most 50; got 51"
    );
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_refused() {
    let ws = Workspace::new();

    assert_eq!(ws.err("grep", json!({"pattern": "x", "path": "/etc"})).await, "Path escapes workspace: /etc");
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_to_a_file_outside_the_workspace_is_not_searched() {
    let ws = Workspace::new();
    let secret = ws.write_outside("secret.txt", "needle\n");
    std::os::unix::fs::symlink(secret, ws.root.join("link.txt")).unwrap();
    ws.write("inside.txt", "needle\n");
    std::os::unix::fs::symlink(ws.root.join("inside.txt"), ws.root.join("alias.txt")).unwrap();

    assert_eq!(ws.ok("grep", json!({"pattern": "needle"})).await, "alias.txt:1: needle\ninside.txt:1: needle");
}

#[tokio::test]
async fn a_match_inside_a_200_kb_line_shows_a_window_around_it() {
    let ws = Workspace::new();
    let line = format!("{}NEEDLE{}", "a".repeat(150_000), "b".repeat(50_000));
    ws.write("min.js", format!("{line}\n"));

    let text = ws.ok("grep", json!({"pattern": "NEEDLE"})).await;

    // The match starts at column 150001; the 200-column window starts 100 before it.
    let window = format!("{}NEEDLE{}", "a".repeat(100), "b".repeat(94));
    assert_eq!(text, format!("min.js:1: ...{window}... [showing columns 149901-150100 of 200006]"));
}

#[tokio::test]
async fn a_match_near_the_start_of_a_long_line_shows_its_first_columns() {
    let ws = Workspace::new();
    ws.write("a.txt", format!("xNEEDLE{}\n", "-".repeat(1000)));

    let text = ws.ok("grep", json!({"pattern": "NEEDLE"})).await;

    assert_eq!(text, format!("a.txt:1: xNEEDLE{}... [showing columns 1-200 of 1007]", "-".repeat(193)));
}

#[tokio::test]
async fn the_window_counts_graphemes_and_never_splits_one() {
    let ws = Workspace::new();
    // Each "e" + combining acute is one grapheme of 3 bytes.
    let line = format!("{}NEEDLE{}", "e\u{301}".repeat(600), "e\u{301}".repeat(600));
    ws.write("a.txt", format!("{line}\n"));

    let text = ws.ok("grep", json!({"pattern": "NEEDLE"})).await;

    let window = format!("{}NEEDLE{}", "e\u{301}".repeat(100), "e\u{301}".repeat(94));
    assert_eq!(text, format!("a.txt:1: ...{window}... [showing columns 501-700 of 1206]"));
}

#[tokio::test]
async fn a_long_context_line_shows_its_first_columns() {
    let ws = Workspace::new();
    ws.write("a.txt", format!("{}\nhit\n", "c".repeat(600)));

    let text = ws.ok("grep", json!({"pattern": "hit", "before": 1})).await;

    assert_eq!(text, format!("a.txt-1- {}... [showing columns 1-200 of 600]\na.txt:2: hit", "c".repeat(200)));
}

#[tokio::test]
async fn a_line_of_500_graphemes_is_shown_whole() {
    let ws = Workspace::new();
    let line = format!("hit{}", "x".repeat(497));
    ws.write("a.txt", format!("{line}\n"));

    assert_eq!(ws.ok("grep", json!({"pattern": "hit"})).await, format!("a.txt:1: {line}"));
}

#[tokio::test]
async fn include_ignored_searches_gitignored_files_too() {
    let ws = Workspace::new();
    ws.write(".gitignore", "build/\n");
    ws.write("build/out.txt", "needle\n");
    ws.write("src.txt", "needle\n");

    assert_eq!(
        ws.ok("grep", json!({"pattern": "needle", "include_ignored": true})).await,
        "build/out.txt:1: needle\nsrc.txt:1: needle"
    );
}

#[tokio::test]
async fn include_ignored_still_skips_the_git_directory() {
    let ws = Workspace::new();
    ws.write(".git/config", "needle\n");
    ws.write("a.txt", "needle\n");

    assert_eq!(ws.ok("grep", json!({"pattern": "needle", "include_ignored": true})).await, "a.txt:1: needle");
}

#[tokio::test]
async fn output_is_the_same_on_every_run() {
    let ws = Workspace::new();
    for dir in ["b", "a", "c/d", "c"] {
        for file in ["z.txt", "m.txt", "a.txt"] {
            ws.write(&format!("{dir}/{file}"), "needle\n");
        }
    }

    let first = ws.ok("grep", json!({"pattern": "needle"})).await;
    for _ in 0..3 {
        assert_eq!(ws.ok("grep", json!({"pattern": "needle"})).await, first);
    }
    assert!(first.starts_with("a/a.txt:1: needle\na/m.txt:1: needle\na/z.txt:1: needle\nb/a.txt"), "{first}");
}
