//! The text replacement behind `edit`: matching modes, line endings, byte order mark and the
//! final newline, on bytes in memory (no file system).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use similar::{DiffOp, TextDiff, capture_diff_slices};

/// The smallest similarity (0.0 to 1.0, `similar`'s character ratio of the lines between the
/// anchors) a block must reach to match in [`MatchMode::BlockAnchor`].
pub const BLOCK_ANCHOR_MIN_SIMILARITY: f32 = 0.5;

/// How `old_string` is looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    /// The exact text (line breaks compared without `\r`: `a\nb` finds `a\r\nb`).
    #[schemars(description = "")]
    Exact,
    /// Whole lines whose text equals old_string's lines once leading and trailing whitespace is
    /// trimmed from both.
    #[schemars(description = "whole lines, compared trimmed")]
    LineTrimmed,
    /// A block of lines whose first and last lines equal old_string's first and last lines
    /// (trimmed) and whose lines between are the most similar (at least 50%); old_string must
    /// have 3 lines or more. Replaces one block only.
    #[schemars(description = "3+ lines: first and last match, the middle the most similar")]
    BlockAnchor,
    /// exact, else line_trimmed, else block_anchor (the default).
    #[default]
    #[schemars(description = "the others in turn")]
    Auto,
}

impl MatchMode {
    /// The name as the model writes it (`exact`, `line_trimmed`, `block_anchor`, `auto`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::LineTrimmed => "line_trimmed",
            Self::BlockAnchor => "block_anchor",
            Self::Auto => "auto",
        }
    }
}

/// What to replace; see [`replace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replacement<'a> {
    /// The text to find. Empty: the content must be empty, and becomes `new`.
    pub old: &'a str,
    /// The text to put in its place.
    pub new: &'a str,
    /// Replace every match instead of requiring exactly one.
    pub replace_all: bool,
    /// How to look for `old`.
    pub mode: MatchMode,
    /// When set, the number of matches must be exactly this, and all of them are replaced.
    pub expected_replacements: Option<usize>,
}

/// The result of a successful [`replace`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// The new content (bytes to write).
    pub bytes: Vec<u8>,
    /// How many places were replaced.
    pub replacements: usize,
    /// The mode that matched (never [`MatchMode::Auto`]).
    pub mode: MatchMode,
}

/// Why [`replace`] refused. The `edit` tool turns each into an [`FsError`](super::FsError) that
/// names the file; the `Display` text here has no path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplaceError {
    /// The content (after a byte order mark) is not UTF-8; the 0-based offset of the first bad byte.
    #[error("the content is not valid UTF-8 (first bad byte at offset {0})")]
    NotUtf8(usize),
    /// `old` is empty but the content is not.
    #[error("old is empty but the content is not; an empty old only fills empty content")]
    EmptyOld,
    /// `old` was not found; the modes tried, e.g. `auto: exact, line_trimmed, block_anchor`.
    #[error("old not found (match_mode {0})")]
    NotFound(String),
    /// More than one match without `replace_all`; the 1-based first line of each.
    #[error("old matches {} places (lines {:?})", .0.len(), .0)]
    Ambiguous(Vec<usize>),
    /// The count differs from `expected_replacements`: expected, and the lines found.
    #[error("expected {expected} replacements, old matches {} places", .1.len(), expected = .0)]
    Count(usize, Vec<usize>),
    /// [`MatchMode::BlockAnchor`] asked for with fewer than 3 lines in `old`.
    #[error("match_mode block_anchor needs 3 lines or more, old has {0}")]
    BlockTooShort(usize),
}

/// Replaces `r.old` by `r.new` in `content`, keeping everything the model did not mean to change.
///
/// Rules, in order:
/// - A UTF-8 byte order mark stays; the rest must be UTF-8 ([`ReplaceError::NotUtf8`]).
/// - Line breaks of `old`, `new` and the content are compared as `\n` (a `\r` before `\n` is
///   ignored), so a model that read the file through `read` finds CRLF lines. Outside the matched
///   text no byte changes. Line breaks of `new` are written in the content's style: CRLF when
///   most of its line breaks are CRLF, else LF; content without any line break keeps `new`'s own.
/// - Matching by [`MatchMode`]; more than one match is [`ReplaceError::Ambiguous`] unless
///   `replace_all` or `expected_replacements` (which must equal the count) say otherwise. An
///   exact match that overlaps another occurrence (`"  "` in `"   "`) is ambiguous too;
///   `replace_all` replaces non-overlapping matches from the left.
/// - In the fuzzy modes, a line of `new` that is identical to its line in `old` is written with
///   the file's own bytes for that line (its indentation and trailing spaces stay).
/// - The final-newline state stays: content that ended with a line break still does, content
///   that did not still does not.
/// - Empty `old`: allowed only on empty content, which becomes `new` as given.
///
/// # Errors
/// See [`ReplaceError`].
pub fn replace(content: &[u8], r: &Replacement<'_>) -> Result<Replaced, ReplaceError> {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    let (bom, body) = match content.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => (&b""[..], content),
    };
    let text = std::str::from_utf8(body).map_err(|e| ReplaceError::NotUtf8(e.valid_up_to()))?;
    if r.old.is_empty() {
        if !content.is_empty() {
            return Err(ReplaceError::EmptyOld);
        }
        return Ok(Replaced { bytes: r.new.as_bytes().to_vec(), replacements: 1, mode: MatchMode::Exact });
    }
    let view = View::new(text);
    let old = r.old.replace("\r\n", "\n");
    let new = r.new.replace("\r\n", "\n");

    let (mode, matches) = find(&view, &old, &new, r.mode)?;
    let lines: Vec<usize> = matches.iter().map(|m| view.line_of(m.start)).collect();
    match r.expected_replacements {
        Some(expected) if expected != matches.len() => return Err(ReplaceError::Count(expected, lines)),
        None if matches.len() > 1 && !r.replace_all => return Err(ReplaceError::Ambiguous(lines)),
        None if mode == MatchMode::Exact && !r.replace_all => {
            // One match, but maybe overlapping others (`  ` in `   `): the place is not clear.
            let starts = overlapping_starts(&view.text, &old);
            if starts.len() > 1 {
                return Err(ReplaceError::Ambiguous(starts.iter().map(|&s| view.line_of(s)).collect()));
            }
        }
        _ => {}
    }

    let crlf = match view.crlf_style() {
        Some(crlf) => crlf,
        None => r.new.contains("\r\n"),
    };
    let mut out = Vec::with_capacity(content.len() + new.len());
    out.extend_from_slice(bom);
    let mut copied = 0;
    for found in &matches {
        let (start, end) = (view.original(found.start), view.original(found.end));
        out.extend_from_slice(&body[copied..start]);
        if crlf {
            out.extend_from_slice(found.replacement.replace('\n', "\r\n").as_bytes());
        } else {
            out.extend_from_slice(found.replacement.as_bytes());
        }
        copied = end;
    }
    out.extend_from_slice(&body[copied..]);
    keep_final_newline(&mut out, bom.len(), text.ends_with('\n'), crlf);
    Ok(Replaced { bytes: out, replacements: matches.len(), mode })
}

/// Every offset where `needle` starts in `haystack`, overlapping ones included.
fn overlapping_starts(haystack: &str, needle: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut from = 0;
    while let Some(at) = haystack[from..].find(needle) {
        let start = from + at;
        starts.push(start);
        from = start + haystack[start..].chars().next().map_or(1, char::len_utf8);
    }
    starts
}

/// Puts back (or takes away) the final line break so that its presence is what it was.
fn keep_final_newline(out: &mut Vec<u8>, bom: usize, had: bool, crlf: bool) {
    let has = out.ends_with(b"\n");
    if had && !has && out.len() > bom {
        out.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
    } else if !had && has {
        out.pop();
        if out.ends_with(b"\r") {
            out.pop();
        }
    }
}

/// The content with every `\r\n` seen as `\n`, and the way back to original offsets.
struct View {
    text: String,
    /// View offsets of the `\n`s that had a `\r` before them, ascending.
    cr_before: Vec<usize>,
    /// View offsets where each line starts.
    line_starts: Vec<usize>,
}

impl View {
    fn new(original: &str) -> Self {
        let mut text = String::with_capacity(original.len());
        let mut cr_before = Vec::new();
        let mut rest = original;
        while let Some(at) = rest.find("\r\n") {
            text.push_str(&rest[..at]);
            cr_before.push(text.len());
            text.push('\n');
            rest = &rest[at + 2..];
        }
        text.push_str(rest);
        let line_starts =
            std::iter::once(0).chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1)).collect();
        Self { text, cr_before, line_starts }
    }

    /// The original offset of view offset `at` (a `\n` that had a `\r` maps to the `\r`).
    fn original(&self, at: usize) -> usize {
        at + self.cr_before.partition_point(|&cr| cr < at)
    }

    /// The 1-based line holding view offset `at`.
    fn line_of(&self, at: usize) -> usize {
        self.line_starts.partition_point(|&start| start <= at)
    }

    /// `Some(true)` when most line breaks are CRLF, `Some(false)` when most (or half) are LF,
    /// `None` without line breaks.
    fn crlf_style(&self) -> Option<bool> {
        let breaks = self.line_starts.len() - 1;
        (breaks > 0).then(|| self.cr_before.len() * 2 > breaks)
    }

    /// The lines: (start, end without `\n`, end with `\n` when there is one).
    fn lines(&self) -> Vec<(usize, usize, usize)> {
        let len = self.text.len();
        let mut lines: Vec<(usize, usize, usize)> =
            self.line_starts.windows(2).map(|w| (w[0], w[1] - 1, w[1])).collect();
        let last = *self.line_starts.last().unwrap_or(&0);
        if last < len {
            lines.push((last, len, len));
        }
        lines
    }
}

/// One place to replace, in view offsets, with what goes there (LF line breaks).
struct Found {
    start: usize,
    end: usize,
    replacement: String,
}

/// Finds the matches of the mode (trying the modes of `auto` in turn).
fn find(view: &View, old: &str, new: &str, mode: MatchMode) -> Result<(MatchMode, Vec<Found>), ReplaceError> {
    let old_lines = split_lines(old).0.len();
    if mode == MatchMode::BlockAnchor && old_lines < 3 {
        return Err(ReplaceError::BlockTooShort(old_lines));
    }
    let modes: &[MatchMode] = match mode {
        MatchMode::Auto => &[MatchMode::Exact, MatchMode::LineTrimmed, MatchMode::BlockAnchor],
        MatchMode::Exact => &[MatchMode::Exact],
        MatchMode::LineTrimmed => &[MatchMode::LineTrimmed],
        MatchMode::BlockAnchor => &[MatchMode::BlockAnchor],
    };
    for &each in modes {
        let found = match each {
            MatchMode::Exact => view
                .text
                .match_indices(old)
                .map(|(start, _)| Found { start, end: start + old.len(), replacement: new.to_owned() })
                .collect(),
            MatchMode::LineTrimmed => line_trimmed(view, old, new),
            _ if old_lines < 3 => Vec::new(),
            _ => block_anchor(view, old, new)?,
        };
        if !found.is_empty() {
            return Ok((each, found));
        }
    }
    let tried = match mode {
        MatchMode::Auto if old_lines < 3 => "auto: exact, line_trimmed".to_owned(),
        MatchMode::Auto => "auto: exact, line_trimmed, block_anchor".to_owned(),
        other => other.as_str().to_owned(),
    };
    Err(ReplaceError::NotFound(tried))
}

/// The lines of `text` without their `\n`, and whether it ends with `\n`.
fn split_lines(text: &str) -> (Vec<&str>, bool) {
    match text.strip_suffix('\n') {
        Some(body) => (body.split('\n').collect(), true),
        None if text.is_empty() => (Vec::new(), false),
        None => (text.split('\n').collect(), false),
    }
}

fn line_trimmed(view: &View, old: &str, new: &str) -> Vec<Found> {
    let (old_lines, old_nl) = split_lines(old);
    if old_lines.iter().all(|l| l.trim().is_empty()) {
        return Vec::new();
    }
    let lines = view.lines();
    let mut found = Vec::new();
    let mut i = 0;
    while i + old_lines.len() <= lines.len() {
        let block = &lines[i..i + old_lines.len()];
        let same = block.iter().zip(&old_lines).all(|(&(s, e, _), o)| view.text[s..e].trim() == o.trim());
        if !same {
            i += 1;
            continue;
        }
        let file_lines: Vec<&str> = block.iter().map(|&(s, e, _)| &view.text[s..e]).collect();
        let aligned: Vec<Option<usize>> = (0..old_lines.len()).map(Some).collect();
        found.push(block_found(block, old_nl, &file_lines, &old_lines, &aligned, new));
        i += old_lines.len();
    }
    found
}

fn block_anchor(view: &View, old: &str, new: &str) -> Result<Vec<Found>, ReplaceError> {
    let (old_lines, old_nl) = split_lines(old);
    let (first, last) = (old_lines[0].trim(), old_lines[old_lines.len() - 1].trim());
    if first.is_empty() || last.is_empty() {
        return Ok(Vec::new());
    }
    let lines = view.lines();
    let line_text = |i: usize| &view.text[lines[i].0..lines[i].1];
    let old_middle: String = old_lines[1..old_lines.len() - 1].iter().map(|l| l.trim()).collect::<Vec<_>>().join("\n");
    // (similarity, first line, last line) of each candidate block.
    let mut candidates: Vec<(f32, usize, usize)> = Vec::new();
    for i in 0..lines.len() {
        if line_text(i).trim() != first {
            continue;
        }
        let Some(j) = (i + 2..lines.len()).find(|&j| line_text(j).trim() == last) else { continue };
        let middle: String = (i + 1..j).map(|k| line_text(k).trim()).collect::<Vec<_>>().join("\n");
        let similarity = TextDiff::from_chars(old_middle.as_str(), middle.as_str()).ratio();
        if similarity >= BLOCK_ANCHOR_MIN_SIMILARITY {
            candidates.push((similarity, i, j));
        }
    }
    let Some(best) = candidates.iter().map(|c| c.0).reduce(f32::max) else { return Ok(Vec::new()) };
    let best: Vec<&(f32, usize, usize)> = candidates.iter().filter(|c| c.0 == best).collect();
    if best.len() > 1 {
        return Err(ReplaceError::Ambiguous(best.iter().map(|c| c.1 + 1).collect()));
    }
    let (_, i, j) = *best[0];
    let block = &lines[i..=j];
    let file_lines: Vec<&str> = block.iter().map(|&(s, e, _)| &view.text[s..e]).collect();
    // Which file line each old line stands for: lines equal once trimmed, in order.
    let trimmed_old: Vec<&str> = old_lines.iter().map(|l| l.trim()).collect();
    let trimmed_file: Vec<&str> = file_lines.iter().map(|l| l.trim()).collect();
    let mut aligned = vec![None; old_lines.len()];
    for op in capture_diff_slices(similar::Algorithm::Myers, &trimmed_old, &trimmed_file) {
        if let DiffOp::Equal { old_index, new_index, len } = op {
            for k in 0..len {
                aligned[old_index + k] = Some(new_index + k);
            }
        }
    }
    Ok(vec![block_found(block, old_nl, &file_lines, &old_lines, &aligned, new)])
}

/// The match of a fuzzy mode over the file lines `block`: it runs from the first line's start
/// to the last line's end (and its `\n` when `old` ended with one). Lines of `new` identical to
/// a line of `old` that stands for a file line (`aligned`) are written as that file line.
fn block_found(
    block: &[(usize, usize, usize)],
    old_nl: bool,
    file_lines: &[&str],
    old_lines: &[&str],
    aligned: &[Option<usize>],
    new: &str,
) -> Found {
    let start = block[0].0;
    let last = block[block.len() - 1];
    let end = if old_nl { last.2 } else { last.1 };
    let (new_lines, new_nl) = split_lines(new);
    let mut written: Vec<&str> = new_lines.clone();
    for op in capture_diff_slices(similar::Algorithm::Myers, old_lines, &new_lines) {
        if let DiffOp::Equal { old_index, new_index, len } = op {
            for k in 0..len {
                if let Some(file_index) = aligned[old_index + k] {
                    written[new_index + k] = file_lines[file_index];
                }
            }
        }
    }
    let mut replacement = written.join("\n");
    if new_nl {
        replacement.push('\n');
    }
    Found { start, end, replacement }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(content: &str, old: &str, new: &str) -> Result<String, ReplaceError> {
        let r = Replacement { old, new, replace_all: false, mode: MatchMode::Auto, expected_replacements: None };
        replace(content.as_bytes(), &r).map(|done| String::from_utf8(done.bytes).unwrap())
    }

    #[test]
    fn view_offsets_map_back_over_removed_carriage_returns() {
        let view = View::new("a\r\nb\r\nc");
        assert_eq!(view.text, "a\nb\nc");
        // a\r\nb\r\nc: the view's first `\n` (1) maps to the `\r` (1), `b` (2) to 3, `c` (4) to 6.
        assert_eq!([view.original(1), view.original(2), view.original(3), view.original(4)], [1, 3, 4, 6]);
    }

    #[test]
    fn a_lone_carriage_return_is_content() {
        assert_eq!(edit("a\rb\n", "a\rb", "x").unwrap(), "x\n");
    }

    #[test]
    fn overlapping_occurrences_are_ambiguous() {
        assert_eq!(edit("a   b\n", "  ", "x"), Err(ReplaceError::Ambiguous(vec![1, 1])));
    }

    #[test]
    fn mixed_line_breaks_follow_the_majority() {
        assert_eq!(edit("a\r\nb\r\nc\n", "c", "c\nd").unwrap(), "a\r\nb\r\nc\r\nd\n");
    }
}
