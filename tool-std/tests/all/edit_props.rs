//! Property tests of edit's replacement: `old -> new` then `new -> old` gives back the original
//! bytes, for random content with LF or CRLF line breaks, with or without a byte order mark and a
//! final line break.
//!
//! The round trip holds whenever both edits match exactly one place, with two exclusions that
//! the rules make on purpose (each has its own test in `edit.rs`):
//! - an edit at the very end whose old and new disagree about ending with a line break (the
//!   final-newline state is kept, so the reverse edit does not see its text there);
//! - a CRLF file whose every line break the first edit removes, when the texts are given with
//!   LF: the reverse edit then has no line break to take the style from.

use proptest::prelude::*;
use tool_std::fs::{MatchMode, ReplaceError, Replacement, replace};

#[derive(Debug, Clone)]
struct Case {
    lines: Vec<String>,
    crlf: bool,
    bom: bool,
    final_break: bool,
    /// Give old and new with CRLF breaks (in a CRLF file), as a model copying bytes might.
    given_crlf: bool,
    /// Where the old text starts and how long it is, as fractions of the LF text.
    start: f64,
    len: f64,
    new: String,
}

impl Case {
    fn content(&self) -> Vec<u8> {
        let ending = if self.crlf { "\r\n" } else { "\n" };
        let mut text = if self.bom { "\u{feff}".to_owned() } else { String::new() };
        text.push_str(&self.lines.join(ending));
        if self.final_break {
            text.push_str(ending);
        }
        text.into_bytes()
    }

    /// The content as `\n` text without a byte order mark (what old is cut from).
    fn view(&self) -> String {
        let mut text = self.lines.join("\n");
        if self.final_break {
            text.push('\n');
        }
        text
    }

    fn old(&self) -> String {
        let view = self.view();
        let start = ((view.len() as f64) * self.start) as usize;
        let len = (((view.len() - start) as f64) * self.len).ceil() as usize;
        view[start..start + len].to_owned()
    }

    fn given(&self, text: &str) -> String {
        if self.crlf && self.given_crlf { text.replace('\n', "\r\n") } else { text.to_owned() }
    }
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec("[abxy =\t]{0,6}", 1..8),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        0.0..1.0_f64,
        0.0..1.0_f64,
        "[abxyz =\t\n]{1,12}",
    )
        .prop_map(|(lines, crlf, bom, final_break, given_crlf, start, len, new)| Case {
            lines,
            crlf,
            bom,
            final_break,
            given_crlf,
            start,
            len,
            new,
        })
}

/// How many places `needle` starts at in `haystack`, overlapping ones included (as edit counts).
fn occurrences(haystack: &str, needle: &str) -> usize {
    (0..haystack.len()).filter(|&i| haystack.is_char_boundary(i) && haystack[i..].starts_with(needle)).count()
}

fn edit(content: &[u8], old: &str, new: &str) -> Result<Vec<u8>, ReplaceError> {
    let request = Replacement { old, new, replace_all: false, mode: MatchMode::Auto, expected_replacements: None };
    replace(content, &request).map(|done| done.bytes)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, max_global_rejects: 1_000_000, ..ProptestConfig::default() })]

    #[test]
    fn an_edit_and_its_reverse_restore_the_original_bytes(case in case()) {
        let content = case.content();
        let view = case.view();
        let old = case.old();
        prop_assume!(!old.is_empty() && old != case.new);
        prop_assume!(occurrences(&view, &old) == 1);
        prop_assume!(!(view.ends_with(old.as_str()) && old.ends_with('\n') != case.new.ends_with('\n')));

        let edited = edit(&content, &case.given(&old), &case.given(&case.new)).unwrap();
        let edited_has_break = edited.contains(&b'\n');
        prop_assume!(!(case.crlf && !case.given_crlf && !edited_has_break));
        let restored = match edit(&edited, &case.given(&case.new), &case.given(&old)) {
            Err(ReplaceError::Ambiguous(_)) => return Err(TestCaseError::reject("new text is not unique")),
            other => other.unwrap(),
        };

        prop_assert_eq!(String::from_utf8_lossy(&restored), String::from_utf8_lossy(&content));
        prop_assert_eq!(restored, content);
    }

    #[test]
    fn bytes_before_and_after_the_match_never_change(case in case()) {
        let content = case.content();
        let view = case.view();
        let old = case.old();
        prop_assume!(!old.is_empty() && old != case.new);
        prop_assume!(occurrences(&view, &old) == 1);
        // The final line break may be put back or taken away: compare without it.
        let at = view.find(old.as_str()).unwrap();
        let ending_len = if case.crlf { 2 } else { 1 };
        let bom = if case.bom { 3 } else { 0 };
        let original_start = bom + at + if case.crlf { view[..at].matches('\n').count() } else { 0 };
        let after_view = &view[at + old.len()..];
        let after_len = after_view.len() + if case.crlf { after_view.matches('\n').count() } else { 0 };
        prop_assume!(after_len >= ending_len || !case.final_break);

        let edited = edit(&content, &old, &case.new).unwrap();

        prop_assert_eq!(&edited[..original_start], &content[..original_start]);
        prop_assert_eq!(&edited[edited.len() - after_len..], &content[content.len() - after_len..]);
    }

    #[test]
    fn a_crlf_file_gets_no_lone_lf_and_an_lf_file_no_crlf(case in case()) {
        let content = case.content();
        let old = case.old();
        let view = case.view();
        prop_assume!(!old.is_empty() && old != case.new && occurrences(&view, &old) == 1);
        prop_assume!(view.contains('\n'));

        let edited = String::from_utf8(edit(&content, &old, &case.new).unwrap()).unwrap();

        let crlf = edited.matches("\r\n").count();
        let lf = edited.matches('\n').count();
        if case.crlf {
            prop_assert_eq!(crlf, lf, "{:?}", edited);
        } else {
            prop_assert_eq!(crlf, 0, "{:?}", edited);
        }
    }
}

/// Lines with random indentation and trailing spaces, and a block of them to find by trimmed text.
fn indented_case() -> impl Strategy<Value = (Vec<String>, bool, usize, usize, String)> {
    (
        prop::collection::vec(("[ \t]{0,3}", "[abxy]{1,4}", " {0,2}"), 1..10),
        any::<bool>(),
        any::<usize>(),
        any::<usize>(),
        "[abxyz\n]{1,10}",
    )
        .prop_map(|(parts, crlf, start, len, new)| {
            let lines: Vec<String> =
                parts.into_iter().map(|(indent, body, trail)| format!("{indent}{body}{trail}")).collect();
            let start = start % lines.len();
            let len = 1 + len % (lines.len() - start);
            (lines, crlf, start, len, new)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, max_global_rejects: 1_000_000, ..ProptestConfig::default() })]

    #[test]
    fn line_trimmed_keeps_every_byte_outside_the_matched_lines((lines, crlf, start, len, new) in indented_case()) {
        let ending = if crlf { "\r\n" } else { "\n" };
        let content = format!("{}{ending}", lines.join(ending));
        // The model's copy: the block's lines without their indentation and trailing spaces.
        let old: Vec<&str> = lines[start..start + len].iter().map(|l| l.trim()).collect();
        let old = old.join("\n");
        let trimmed: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
        let places = (0..=lines.len() - len).filter(|&i| trimmed[i..i + len].join("\n") == old).count();
        prop_assume!(places == 1 && old != new);

        let request = Replacement { old: &old, new: &new, replace_all: false, mode: MatchMode::LineTrimmed, expected_replacements: None };
        let edited = String::from_utf8(replace(content.as_bytes(), &request).unwrap().bytes).unwrap();

        let before: String = lines[..start].iter().map(|l| format!("{l}{ending}")).collect();
        let after: String = lines[start + len..].iter().map(|l| format!("{l}{ending}")).collect();
        prop_assert!(edited.starts_with(&before), "{:?} does not start with {:?}", edited, before);
        prop_assert!(edited.ends_with(&after), "{:?} does not end with {:?}", edited, after);
    }
}
