//! The `read_line` tool: one physical line by grapheme window.

use crate::common;

use common::{Workspace, scan_limit, sha_footer, sha256, unhashed_footer};
use serde_json::json;

#[tokio::test]
async fn a_short_line_is_shown_whole_with_its_header_and_the_sha_of_the_whole_file() {
    let ws = Workspace::new();
    ws.write("a.txt", "first\nsecond line\n");

    let text = ws.ok("read_line", json!({"file_path": "a.txt", "line_number": 2})).await;

    assert_eq!(
        text,
        format!(
            "line_number=2 line_length=11 char_range=0..11\nsecond line\n\n{}",
            sha_footer(&sha256("first\nsecond line\n"))
        )
    );
}

#[tokio::test]
async fn a_window_counts_graphemes_and_says_where_to_continue() {
    let ws = Workspace::new();
    // 5 graphemes: "e" + combining acute is one grapheme of two chars.
    let line = "ae\u{301}bcd";
    ws.write("g.txt", format!("{line}\n"));

    let text =
        ws.ok("read_line", json!({"file_path": "g.txt", "line_number": 1, "char_offset": 1, "char_limit": 2})).await;

    assert_eq!(
        text,
        format!(
            "line_number=1 line_length=5 char_range=1..3\ne\u{301}b\n\nUse char_offset=3 to continue.\n{}",
            sha_footer(&sha256(format!("{line}\n")))
        )
    );
}

#[tokio::test]
async fn the_read_hint_for_a_cut_line_continues_where_read_stopped() {
    let ws = Workspace::new();
    let line = format!("{}{}", "x".repeat(1000), "TAIL");
    ws.write("long.txt", format!("{line}\n"));

    let text = ws.ok("read_line", json!({"file_path": "long.txt", "line_number": 1, "char_offset": 1000})).await;

    assert_eq!(
        text,
        format!(
            "line_number=1 line_length=1004 char_range=1000..1004\nTAIL\n\n{}",
            sha_footer(&sha256(format!("{line}\n")))
        )
    );
}

#[tokio::test]
async fn crlf_and_a_byte_order_mark_are_not_part_of_the_line() {
    let ws = Workspace::new();
    ws.write("dos.txt", "\u{feff}one\r\ntwo\r\n");

    let text = ws.ok("read_line", json!({"file_path": "dos.txt", "line_number": 1})).await;

    assert_eq!(
        text,
        format!(
            "line_number=1 line_length=3 char_range=0..3\none\n\n{}",
            sha_footer(&sha256("\u{feff}one\r\ntwo\r\n"))
        )
    );
}

#[tokio::test]
async fn an_empty_line_has_length_0() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n\nb\n");

    let text = ws.ok("read_line", json!({"file_path": "a.txt", "line_number": 2})).await;

    assert_eq!(text, format!("line_number=2 line_length=0 char_range=0..0\n\n\n{}", sha_footer(&sha256("a\n\nb\n"))));
}

#[tokio::test]
async fn a_last_line_without_newline_is_a_line() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\nlast");

    let text = ws.ok("read_line", json!({"file_path": "a.txt", "line_number": 2})).await;

    assert_eq!(
        text,
        format!("line_number=2 line_length=4 char_range=0..4\nlast\n\n{}", sha_footer(&sha256("a\nlast")))
    );
}

#[tokio::test]
async fn a_line_past_the_end_is_an_error_naming_the_range() {
    let ws = Workspace::new();
    ws.write("a.txt", "1\n2\n3\n");

    assert_eq!(
        ws.err("read_line", json!({"file_path": "a.txt", "line_number": 4})).await,
        "Line 4 is past the end of a.txt (3 lines); use a line_number from 1 to 3"
    );
}

#[tokio::test]
async fn line_number_0_is_an_error() {
    let ws = Workspace::new();
    ws.write("a.txt", "1\n");

    assert_eq!(
        ws.err("read_line", json!({"file_path": "a.txt", "line_number": 0})).await,
        "invalid arguments for `read_line`: `line_number`: must be at least 1; got 0"
    );
}

#[tokio::test]
async fn a_char_offset_at_the_end_of_the_line_is_an_error() {
    let ws = Workspace::new();
    ws.write("a.txt", "abc\n");

    assert_eq!(
        ws.err("read_line", json!({"file_path": "a.txt", "line_number": 1, "char_offset": 3})).await,
        "char_offset 3 is past the end of line 1 of a.txt (3 graphemes); use a char_offset from 0 to 2"
    );
}

#[tokio::test]
async fn char_limit_outside_1_to_100000_is_an_error() {
    let ws = Workspace::new();
    ws.write("a.txt", "abc\n");

    assert_eq!(
        ws.err("read_line", json!({"file_path": "a.txt", "line_number": 1, "char_limit": 0})).await,
        "invalid arguments for `read_line`: `char_limit`: must be at least 1; got 0"
    );
    assert_eq!(
        ws.err("read_line", json!({"file_path": "a.txt", "line_number": 1, "char_limit": 100_001})).await,
        "invalid arguments for `read_line`: `char_limit`: must be at most 100000; got 100001"
    );
}

#[tokio::test]
async fn a_binary_file_is_an_error() {
    let ws = Workspace::new();
    ws.write("budget.ods", b"PK\x03\x04\x14\x00\x00\x08mimetype");

    assert_eq!(
        ws.err("read_line", json!({"file_path": "budget.ods", "line_number": 1})).await,
        "Cannot read binary file: budget.ods (contains a NUL byte); read works on UTF-8 text only"
    );
}

#[tokio::test]
async fn a_missing_file_is_file_not_found() {
    let ws = Workspace::new();

    assert_eq!(
        ws.err("read_line", json!({"file_path": "nope.txt", "line_number": 1})).await,
        "File not found: nope.txt"
    );
}

// Files over the whole-file scan limit (8 MiB by default, lowered here through FsLimits).

#[tokio::test]
async fn a_line_of_a_file_over_the_scan_limit_has_no_hash() {
    let ws = Workspace::with_limits(scan_limit(4));
    ws.write("a.txt", "first\nsecond line\nthird\n");

    let text = ws.ok("read_line", json!({"file_path": "a.txt", "line_number": 2})).await;

    assert_eq!(
        text,
        "line_number=2 line_length=11 char_range=0..11\nsecond line\n\n[read_metadata] content_sha256 not computed: \
         the file is 24 bytes, over the 4-byte whole-file scan limit, and was not read to its end; write and edit \
         work without expected_hash"
    );
}

#[tokio::test]
async fn a_window_of_a_line_of_a_file_over_the_scan_limit_still_says_where_to_continue() {
    let ws = Workspace::with_limits(scan_limit(4));
    ws.write("a.txt", "abcdef\nnext\n");

    let text =
        ws.ok("read_line", json!({"file_path": "a.txt", "line_number": 1, "char_offset": 2, "char_limit": 2})).await;

    assert_eq!(
        text,
        format!(
            "line_number=1 line_length=6 char_range=2..4\ncd\n\nUse char_offset=4 to continue.\n{}",
            unhashed_footer(12, 4)
        )
    );
}

#[tokio::test]
async fn the_last_line_of_a_file_over_the_scan_limit_carries_the_hash() {
    let ws = Workspace::with_limits(scan_limit(4));
    ws.write("a.txt", "first\nsecond line\nthird\n");

    let text = ws.ok("read_line", json!({"file_path": "a.txt", "line_number": 3})).await;

    assert_eq!(
        text,
        format!(
            "line_number=3 line_length=5 char_range=0..5\nthird\n\n{}",
            sha_footer(&sha256("first\nsecond line\nthird\n"))
        )
    );
}

#[tokio::test]
async fn a_line_past_the_end_of_a_file_over_the_scan_limit_is_the_same_error() {
    let ws = Workspace::with_limits(scan_limit(4));
    ws.write("a.txt", "1\n2\n3\n");

    assert_eq!(
        ws.err("read_line", json!({"file_path": "a.txt", "line_number": 4})).await,
        "Line 4 is past the end of a.txt (3 lines); use a line_number from 1 to 3"
    );
}
