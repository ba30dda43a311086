//! The `read` tool: output format, cuts, paging, footers and errors.

use crate::common;

use common::{EMPTY_SHA256, Workspace, scan_limit, sha_footer, sha256, unhashed_footer};
use serde_json::json;
use tool_std::fs::FsLimits;

const ALPHA_BETA_SHA256: &str = "e49c81e2d2f84e259d40e2fb8192f3bcd198b355184845d76d8f58807d0d78ee";
const FIVE_LINES_SHA256: &str = "bd730ce8302e79285f8badd523321160eee75d1023990d6a4f9f703cae7ef184";

fn five_lines(ws: &Workspace) {
    ws.write("five.txt", "one\ntwo\nthree\nfour\nfive\n");
}

#[tokio::test]
async fn lines_are_numbered_from_1_right_aligned_in_5_columns_then_two_spaces() {
    let ws = Workspace::new();
    ws.write("a.txt", "alpha\nbeta\n");

    let text = ws.ok("read", json!({"file_path": "a.txt"})).await;

    assert_eq!(text, format!("    1  alpha\n    2  beta\n\n{}", sha_footer(ALPHA_BETA_SHA256)));
}

#[tokio::test]
async fn line_numbers_wider_than_5_digits_are_not_cut() {
    let ws = Workspace::new();
    ws.write("many.txt", "x\n".repeat(100_001));

    let text = ws.ok("read", json!({"file_path": "many.txt", "offset": 99_999, "limit": 2})).await;

    assert!(text.starts_with("100000  x\n100001  x\n\n"), "{text}");
}

#[tokio::test]
async fn offset_is_0_based_and_limit_counts_lines() {
    let ws = Workspace::new();
    five_lines(&ws);

    let text = ws.ok("read", json!({"file_path": "five.txt", "offset": 1, "limit": 2})).await;

    assert_eq!(
        text,
        format!(
            "    2  two\n    3  three\n\n[showing lines 2-3 of 5] Use offset=3 to read more.\n{}",
            sha_footer(FIVE_LINES_SHA256)
        )
    );
}

#[tokio::test]
async fn reading_to_the_end_has_no_paging_footer() {
    let ws = Workspace::new();
    five_lines(&ws);

    let text = ws.ok("read", json!({"file_path": "five.txt", "offset": 3})).await;

    assert_eq!(text, format!("    4  four\n    5  five\n\n{}", sha_footer(FIVE_LINES_SHA256)));
}

#[tokio::test]
async fn an_offset_past_the_end_is_an_error_naming_the_valid_range() {
    let ws = Workspace::new();
    five_lines(&ws);

    assert_eq!(
        ws.err("read", json!({"file_path": "five.txt", "offset": 5})).await,
        "Offset 5 is past the end of five.txt (5 lines); use an offset from 0 to 4"
    );
}

#[tokio::test]
async fn an_offset_past_the_end_of_an_empty_file_names_its_one_line() {
    let ws = Workspace::new();
    ws.write("empty.txt", "");

    assert_eq!(
        ws.err("read", json!({"file_path": "empty.txt", "offset": 1})).await,
        "Offset 1 is past the end of empty.txt (1 line); use an offset from 0 to 0"
    );
}

#[tokio::test]
async fn a_limit_of_zero_is_an_error() {
    let ws = Workspace::new();
    five_lines(&ws);

    assert_eq!(
        ws.err("read", json!({"file_path": "five.txt", "limit": 0})).await,
        "invalid arguments for `read`: `limit`: must be at least 1; got 0"
    );
}

#[tokio::test]
async fn an_empty_file_reads_as_one_empty_line_1() {
    let ws = Workspace::new();
    ws.write("empty.txt", "");

    let text = ws.ok("read", json!({"file_path": "empty.txt"})).await;

    assert_eq!(text, format!("    1  \n\n{}", sha_footer(EMPTY_SHA256)));
}

#[tokio::test]
async fn lines_over_1000_graphemes_are_cut_and_listed_with_a_read_line_call() {
    let ws = Workspace::new();
    // "e" + combining acute accent: one grapheme, two chars, three bytes.
    let long = "e\u{301}".repeat(1001);
    ws.write("long.txt", format!("short\n{long}\n{long}\n"));

    let text = ws.ok("read", json!({"file_path": "long.txt"})).await;

    let cut = format!("{}...", "e\u{301}".repeat(1000));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "    1  short");
    assert_eq!(lines[1], format!("    2  {cut}"));
    assert_eq!(lines[2], format!("    3  {cut}"));
    assert_eq!(lines[3], "");
    assert_eq!(
        lines[4],
        r#"[truncated lines: 2, 3] Lines over 1000 graphemes are cut with "..."; read the rest of line 2 with read_line {"file_path":"long.txt","line_number":2,"char_offset":1000}"#
    );
    assert!(lines[5].starts_with("[read_metadata] content_sha256="), "{}", lines[5]);
    assert_eq!(lines.len(), 6);
}

#[tokio::test]
async fn a_line_of_exactly_1000_graphemes_is_not_cut() {
    let ws = Workspace::new();
    let line = "x".repeat(1000);
    ws.write("exact.txt", format!("{line}\n"));

    let text = ws.ok("read", json!({"file_path": "exact.txt"})).await;

    assert!(text.starts_with(&format!("    1  {line}\n\n[read_metadata]")), "{text}");
}

#[tokio::test]
async fn output_stops_at_40_kib_with_the_line_to_continue_after() {
    let ws = Workspace::new();
    // Each numbered line is 7 + 100 = 107 bytes, 108 with its newline: 379 lines fit in 40960.
    ws.write("wide.txt", format!("{}\n", "x".repeat(100)).repeat(1000));

    let text = ws.ok("read", json!({"file_path": "wide.txt"})).await;

    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[378], format!("  379  {}", "x".repeat(100)));
    assert_eq!(lines[379], "");
    assert_eq!(lines[380], "[output truncated at 40960 bytes] Use offset to read beyond line 379.");
    assert!(lines[381].starts_with("[read_metadata] content_sha256="));
    assert_eq!(lines.len(), 382);
}

#[tokio::test]
async fn the_output_cap_is_configurable() {
    let ws = Workspace::with_limits(FsLimits { read_max_output_bytes: 30, ..FsLimits::default() });
    five_lines(&ws);

    let text = ws.ok("read", json!({"file_path": "five.txt"})).await;

    assert_eq!(
        text,
        format!(
            "    1  one\n    2  two\n\n[output truncated at 30 bytes] Use offset to read beyond line 2.\n{}",
            sha_footer(FIVE_LINES_SHA256)
        )
    );
}

#[tokio::test]
async fn the_sha_footer_hashes_the_whole_file_even_for_a_slice() {
    let ws = Workspace::new();
    five_lines(&ws);

    let text = ws.ok("read", json!({"file_path": "five.txt", "offset": 4})).await;

    assert_eq!(text, format!("    5  five\n\n{}", sha_footer(FIVE_LINES_SHA256)));
}

#[tokio::test]
async fn crlf_line_endings_are_not_shown() {
    let ws = Workspace::new();
    ws.write("crlf.txt", "line 1\r\nline 2\r\n");

    let text = ws.ok("read", json!({"file_path": "crlf.txt"})).await;

    assert_eq!(
        text,
        format!(
            "    1  line 1\n    2  line 2\n\n{}",
            sha_footer("821af7eca18c2b5de4663bfd464e20fac360065baabcfb48082cefab599ac5d1")
        )
    );
}

#[tokio::test]
async fn a_missing_file_is_file_not_found() {
    let ws = Workspace::new();

    assert_eq!(ws.err("read", json!({"file_path": "src/missing.rs"})).await, "File not found: src/missing.rs");
}

#[tokio::test]
async fn a_directory_is_an_error_pointing_to_glob() {
    let ws = Workspace::new();
    ws.write("src/a.rs", "");

    assert_eq!(
        ws.err("read", json!({"file_path": "src"})).await,
        "Not a file: src is a directory; use glob to list its files"
    );
}

#[tokio::test]
async fn a_zip_container_is_binary() {
    let ws = Workspace::new();
    let mut ods = b"PK\x03\x04\x14\x00\x00\x08\x08\x00".to_vec();
    ods.extend_from_slice(b"mimetypeapplication/vnd.oasis.opendocument.spreadsheet");
    ws.write("budget.ods", ods);

    assert_eq!(
        ws.err("read", json!({"file_path": "budget.ods"})).await,
        "Cannot read binary file: budget.ods (contains a NUL byte); read works on UTF-8 text only"
    );
}

#[tokio::test]
async fn mostly_invalid_utf8_is_binary() {
    let ws = Workspace::new();
    ws.write("latin1.bin", [0xE9_u8, 0xE8, 0xFF, b'a'].repeat(100));

    assert_eq!(
        ws.err("read", json!({"file_path": "latin1.bin"})).await,
        "Cannot read binary file: latin1.bin (more than 10% of its first 8 KiB is not UTF-8); read works on UTF-8 text only"
    );
}

#[tokio::test]
async fn a_file_whose_sniff_window_ends_inside_a_character_is_text() {
    let ws = Workspace::new();
    // 3-byte characters: 8192 = 3 * 2730 + 2, so the 8 KiB window ends inside character 2731.
    let text = "日".repeat(3000);
    ws.write("cjk.txt", &text);

    let out = ws.ok("read", json!({"file_path": "cjk.txt"})).await;

    let first = out.lines().next().unwrap();
    assert_eq!(first, format!("    1  {}...", "日".repeat(1000)));
}

#[tokio::test]
async fn unknown_arguments_are_refused() {
    let ws = Workspace::new();

    assert_eq!(
        ws.err("read", json!({"file_path": "a.txt", "lines": 3})).await,
        "invalid arguments for `read`: unknown field `lines`; expected one of `file_path`, `limit`, `offset`"
    );
}

#[tokio::test]
async fn a_byte_order_mark_is_not_shown_but_is_hashed() {
    let ws = Workspace::new();
    ws.write("bom.txt", "\u{feff}hello\n");

    let text = ws.ok("read", json!({"file_path": "bom.txt"})).await;

    assert_eq!(text, format!("    1  hello\n\n{}", sha_footer(&sha256("\u{feff}hello\n"))));
}

#[tokio::test]
async fn a_line_of_several_mebibytes_is_cut_like_any_long_line() {
    let ws = Workspace::new();
    let content = format!("{}\nnext\n", "x".repeat(3 * 1024 * 1024));
    ws.write("huge.txt", &content);

    let text = ws.ok("read", json!({"file_path": "huge.txt"})).await;

    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("    1  {}...", "x".repeat(1000)));
    assert_eq!(lines[1], "    2  next");
    assert!(lines[3].starts_with("[truncated lines: 1] "), "{}", lines[3]);
    assert_eq!(lines[4], sha_footer(&sha256(&content)));
}

#[tokio::test]
async fn pages_of_a_file_larger_than_one_read_chunk_join_lines_across_chunks() {
    let ws = Workspace::new();
    // 30,000 lines of 9 bytes: 270 KB, more than four 64 KiB chunks.
    let content: String = (0..30_000).map(|n| format!("line{n:04}\n")).collect();
    ws.write("big.txt", &content);

    let text = ws.ok("read", json!({"file_path": "big.txt", "offset": 29_997})).await;

    assert_eq!(
        text,
        format!("29998  line29997\n29999  line29998\n30000  line29999\n\n{}", sha_footer(&sha256(&content)))
    );
}

// Files over the whole-file scan limit (8 MiB by default, lowered here through FsLimits).

/// 3000 lines `line0000` to `line2999`, 9 bytes each: 27,000 bytes.
fn three_thousand_lines() -> String {
    (0..3000).map(|n| format!("line{n:04}\n")).collect()
}

#[tokio::test]
async fn the_first_page_of_a_file_over_the_scan_limit_names_its_size_and_carries_no_hash() {
    let ws = Workspace::with_limits(scan_limit(1024));
    ws.write("big.txt", three_thousand_lines());

    let text = ws.ok("read", json!({"file_path": "big.txt"})).await;

    let page: Vec<String> = (0..1500).map(|n| format!("{:>5}  line{n:04}", n + 1)).collect();
    assert_eq!(
        text,
        format!(
            "{}\n\n[showing lines 1-1500 of a 27000-byte file; more lines follow] Use offset=1500 to read more.\n\
             [read_metadata] content_sha256 not computed: the file is 27000 bytes, over the 1024-byte whole-file \
             scan limit, and was not read to its end; write and edit work without expected_hash",
            page.join("\n")
        )
    );
}

#[tokio::test]
async fn a_page_that_reaches_the_end_of_a_file_over_the_scan_limit_carries_the_hash() {
    let ws = Workspace::with_limits(scan_limit(1024));
    let content = three_thousand_lines();
    ws.write("big.txt", &content);

    let text = ws.ok("read", json!({"file_path": "big.txt", "offset": 2998})).await;

    assert_eq!(text, format!(" 2999  line2998\n 3000  line2999\n\n{}", sha_footer(&sha256(&content))));
}

#[tokio::test]
async fn a_page_ending_exactly_at_the_last_line_of_a_file_over_the_scan_limit_carries_the_hash() {
    let ws = Workspace::with_limits(scan_limit(10));
    five_lines(&ws);

    let text = ws.ok("read", json!({"file_path": "five.txt", "limit": 5})).await;

    assert_eq!(
        text,
        format!("    1  one\n    2  two\n    3  three\n    4  four\n    5  five\n\n{}", sha_footer(FIVE_LINES_SHA256))
    );
}

#[tokio::test]
async fn a_file_of_exactly_the_scan_limit_is_read_whole() {
    // five.txt is 24 bytes.
    let ws = Workspace::with_limits(scan_limit(24));
    five_lines(&ws);

    let text = ws.ok("read", json!({"file_path": "five.txt", "limit": 2})).await;

    assert_eq!(
        text,
        format!(
            "    1  one\n    2  two\n\n[showing lines 1-2 of 5] Use offset=2 to read more.\n{}",
            sha_footer(FIVE_LINES_SHA256)
        )
    );
}

#[tokio::test]
async fn a_file_one_byte_over_the_scan_limit_is_read_only_up_to_the_page() {
    let ws = Workspace::with_limits(scan_limit(23));
    five_lines(&ws);

    let text = ws.ok("read", json!({"file_path": "five.txt", "limit": 2})).await;

    assert_eq!(
        text,
        format!(
            "    1  one\n    2  two\n\n[showing lines 1-2 of a 24-byte file; more lines follow] Use offset=2 to read \
             more.\n{}",
            unhashed_footer(24, 23)
        )
    );
}

#[tokio::test]
async fn an_offset_past_the_end_of_a_file_over_the_scan_limit_is_the_same_error() {
    let ws = Workspace::with_limits(scan_limit(1024));
    ws.write("big.txt", three_thousand_lines());

    assert_eq!(
        ws.err("read", json!({"file_path": "big.txt", "offset": 3000})).await,
        "Offset 3000 is past the end of big.txt (3000 lines); use an offset from 0 to 2999"
    );
}

#[tokio::test]
async fn the_output_cap_on_a_file_over_the_scan_limit_keeps_its_footer_without_a_hash() {
    let ws = Workspace::with_limits(FsLimits { read_max_output_bytes: 30, ..scan_limit(10) });
    five_lines(&ws);

    let text = ws.ok("read", json!({"file_path": "five.txt"})).await;

    assert_eq!(
        text,
        format!(
            "    1  one\n    2  two\n\n[output truncated at 30 bytes] Use offset to read beyond line 2.\n{}",
            unhashed_footer(24, 10)
        )
    );
}

#[tokio::test]
async fn cut_lines_of_a_file_over_the_scan_limit_keep_their_read_line_hint() {
    let ws = Workspace::with_limits(scan_limit(1024));
    let long = "y".repeat(1500);
    ws.write("long.txt", format!("{long}\nshort\nafter\n"));

    let text = ws.ok("read", json!({"file_path": "long.txt", "limit": 2})).await;

    assert_eq!(
        text,
        format!(
            "    1  {}...\n    2  short\n\n[truncated lines: 1] Lines over 1000 graphemes are cut with \"...\"; read the \
             rest of line 1 with read_line {{\"file_path\":\"long.txt\",\"line_number\":1,\"char_offset\":1000}}\n\
             [showing lines 1-2 of a 1513-byte file; more lines follow] Use offset=2 to read more.\n{}",
            "y".repeat(1000),
            unhashed_footer(1513, 1024)
        )
    );
}

#[tokio::test]
async fn a_binary_file_over_the_scan_limit_is_still_binary() {
    let ws = Workspace::with_limits(scan_limit(4));
    ws.write("data.bin", b"text\n\x00\x01\x02\n");

    assert_eq!(
        ws.err("read", json!({"file_path": "data.bin"})).await,
        "Cannot read binary file: data.bin (contains a NUL byte); read works on UTF-8 text only"
    );
}
