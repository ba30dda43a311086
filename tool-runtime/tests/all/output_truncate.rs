//! `truncate_head`, `truncate_tail`, `truncate_text` and `split_lines`.

use tool_runtime::output::{OutputLimits, TruncatedBy, split_lines, truncate_head, truncate_tail, truncate_text};

fn limits(max_lines: usize, max_bytes: usize) -> OutputLimits {
    OutputLimits { max_lines, max_bytes }
}

#[test]
fn defaults_are_2000_lines_and_50_kib() {
    assert_eq!(OutputLimits::default(), limits(2000, 51_200));
}

#[test]
fn an_output_within_both_caps_is_kept_whole() {
    let t = truncate_head("a\nb\n", limits(2, 10));

    assert_eq!((t.content, t.truncated_by, t.total_lines, t.total_bytes), ("a\nb", TruncatedBy::None, 2, 4));
    assert_eq!(t.to_string(), "");
}

#[test]
fn head_keeps_the_first_lines_when_the_line_cap_is_hit_first() {
    let t = truncate_head("one\ntwo\nthree\nfour", limits(2, 100));

    assert_eq!((t.content, t.truncated_by, t.output_lines, t.output_bytes), ("one\ntwo", TruncatedBy::Lines, 2, 7));
    assert_eq!(t.to_string(), "[output truncated: kept the first 2 of 4 lines (7 of 18 bytes); line limit 2]");
}

#[test]
fn head_keeps_whole_lines_within_the_byte_cap() {
    let t = truncate_head("aaaa\nbbbb\ncccc", limits(100, 12));

    assert_eq!(
        (t.content, t.truncated_by, t.output_lines, t.omitted_bytes()),
        ("aaaa\nbbbb", TruncatedBy::Bytes, 2, 5)
    );
}

#[test]
fn head_reports_a_first_line_over_the_byte_cap_and_keeps_nothing() {
    let text = "中".repeat(40_000);

    let t = truncate_head(&text, limits(2000, 25_000));

    assert_eq!((t.content, t.first_line_exceeds_limit, t.output_bytes, t.omitted_bytes()), ("", true, 0, 120_000));
    assert_eq!(
        t.to_string(),
        "[output truncated: the first line alone is over the byte limit 25000; nothing kept of 1 line (120000 bytes)]"
    );
}

#[test]
fn tail_keeps_a_character_safe_suffix_of_a_long_last_line() {
    let text = "中".repeat(40_000);

    let t = truncate_tail(&text, limits(2000, 25_000));

    assert!(t.last_line_partial);
    assert_eq!(t.content, "中".repeat(8333));
    assert_eq!((t.output_bytes, t.omitted_bytes()), (24_999, 95_001));
}

#[test]
fn tail_after_ascii_and_an_emoji_keeps_the_emoji_whole() {
    let text = format!("{}😀", "a".repeat(29_999));

    let t = truncate_tail(&text, limits(2000, 30_000));

    assert_eq!(t.content, format!("{}😀", "a".repeat(29_996)));
    assert_eq!((t.output_bytes, t.omitted_bytes(), t.last_line_partial), (30_000, 3, true));
}

#[test]
fn head_after_ascii_and_an_emoji_reports_the_first_line() {
    let text = format!("{}😀", "a".repeat(29_999));

    let t = truncate_head(&text, limits(2000, 30_000));

    assert_eq!((t.content, t.first_line_exceeds_limit, t.omitted_bytes()), ("", true, 30_003));
}

#[test]
fn tail_keeps_the_last_lines_when_the_line_cap_is_hit_first() {
    let t = truncate_tail("one\ntwo\nthree\nfour\n", limits(2, 100));

    assert_eq!((t.content, t.truncated_by, t.output_lines, t.total_lines), ("three\nfour", TruncatedBy::Lines, 2, 4));
    assert_eq!(t.to_string(), "[output truncated: kept the last 2 of 4 lines (10 of 19 bytes); line limit 2]");
}

#[test]
fn tail_keeps_whole_last_lines_within_the_byte_cap() {
    let t = truncate_tail("aaaa\nbbbb\ncccc", limits(100, 10));

    assert_eq!((t.content, t.truncated_by, t.last_line_partial), ("bbbb\ncccc", TruncatedBy::Bytes, false));
}

#[test]
fn an_empty_output_has_no_lines() {
    let t = truncate_tail("", OutputLimits::default());

    assert_eq!((t.content, t.total_lines, t.truncated()), ("", 0, false));
}

#[test]
fn truncate_text_cuts_at_a_character_boundary() {
    assert_eq!(truncate_text("aé€", 4), ("aé", true));
    assert_eq!(truncate_text("abc", 3), ("abc", false));
}

#[test]
fn split_lines_keeps_newline_suffixes_and_no_trailing_empty_line() {
    assert_eq!(split_lines("a\nb\r\nc"), ["a\n", "b\r\n", "c"]);
    assert_eq!(split_lines("a\n"), ["a\n"]);
    assert!(split_lines("").is_empty());
}

mod properties {
    use proptest::prelude::*;
    use tool_runtime::output::{OutputLimits, truncate_head, truncate_tail};

    fn text() -> impl Strategy<Value = String> {
        "[a中😀é\\n]{0,200}"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn head_is_a_prefix_of_whole_lines_within_the_caps(text in text(), max_lines in 0usize..20, max_bytes in 0usize..300) {
            let t = truncate_head(&text, OutputLimits { max_lines, max_bytes });
            prop_assert!(text.starts_with(t.content));
            prop_assert_eq!(t.output_bytes, t.content.len());
            prop_assert_eq!(t.omitted_bytes(), text.len() - t.content.len());
            if t.truncated() {
                prop_assert!(t.content.len() <= max_bytes);
                prop_assert!(t.output_lines <= max_lines);
                // Whole lines: the kept part ends where a line ends.
                prop_assert!(t.content.is_empty() || text.as_bytes().get(t.content.len()) == Some(&b'\n'));
            }
        }

        #[test]
        fn tail_is_a_suffix_within_the_caps(text in text(), max_lines in 0usize..20, max_bytes in 0usize..300) {
            let t = truncate_tail(&text, OutputLimits { max_lines, max_bytes });
            let body = text.strip_suffix('\n').unwrap_or(&text);
            prop_assert!(body.ends_with(t.content));
            prop_assert_eq!(t.output_bytes, t.content.len());
            if t.truncated() {
                prop_assert!(t.content.len() <= max_bytes);
                prop_assert!(t.output_lines <= max_lines);
                let start = body.len() - t.content.len();
                prop_assert!(t.content.is_empty() || t.last_line_partial || start == 0 || body.as_bytes()[start - 1] == b'\n');
            }
        }
    }
}
