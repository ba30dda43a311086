//! Diff previews: unified, 3 lines of context, capped with head and tail kept.

use tool_std::fs::diff_preview;

fn numbered(range: std::ops::RangeInclusive<usize>) -> String {
    range.map(|n| format!("{n}\n")).collect()
}

#[test]
fn a_change_shows_three_lines_of_context_on_each_side() {
    let old = numbered(1..=10);
    let new = old.replace("5\n", "five\n");

    let diff = diff_preview("n.txt", &old, &new, 120, 16 * 1024);

    assert_eq!(diff.preview, "--- a/n.txt\n+++ b/n.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
    assert!(!diff.truncated);
    assert_eq!(diff.full, diff.preview);
}

#[test]
fn a_missing_final_newline_is_marked() {
    let diff = diff_preview("a.txt", "a\n", "a", 120, 16 * 1024);

    assert_eq!(diff.preview, "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n");
}

#[test]
fn no_change_is_an_empty_diff() {
    let diff = diff_preview("a.txt", "same\n", "same\n", 120, 16 * 1024);

    assert_eq!(diff.preview, "");
    assert!(!diff.truncated);
}

#[test]
fn over_the_line_cap_the_head_and_tail_are_kept_and_the_full_diff_returned() {
    let new = numbered(1..=300);

    let diff = diff_preview("n.txt", "", &new, 120, 16 * 1024);

    assert!(diff.truncated);
    assert_eq!(diff.full.lines().count(), 303);
    let lines: Vec<&str> = diff.preview.lines().collect();
    assert_eq!(lines.len(), 120);
    assert_eq!(&lines[..4], ["--- a/n.txt", "+++ b/n.txt", "@@ -0,0 +1,300 @@", "+1"]);
    assert_eq!(lines[59], "+57");
    assert_eq!(lines[60], "...[184 lines omitted]...");
    assert_eq!(lines[61], "+242");
    assert_eq!(lines[119], "+300");
}

#[test]
fn over_the_byte_cap_the_preview_stays_within_it() {
    let new: String = (1..=100).map(|n| format!("{n:0>400}\n")).collect();

    let diff = diff_preview("wide.txt", "", &new, 120, 16 * 1024);

    assert!(diff.truncated);
    assert!(diff.preview.len() <= 16 * 1024, "{} bytes", diff.preview.len());
    let lines: Vec<&str> = diff.preview.lines().collect();
    // Each added line is 402 bytes. Budget 16384 - 43 (the longest marker) = 16341: the head's half
    // (8170) holds the 48 header bytes and 20 lines, the tail the other 8253 bytes: 20 lines.
    assert_eq!(lines[..3], ["--- a/wide.txt", "+++ b/wide.txt", "@@ -0,0 +1,100 @@"]);
    assert_eq!(lines[23], "...[60 lines omitted]...");
    assert_eq!(lines.last().unwrap(), &format!("+{:0>400}", 100));
    assert_eq!(lines.len(), 23 + 1 + 20);
}
