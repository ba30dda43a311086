//! Searching a stored output, streaming, with ripgrep's searcher. Cargo feature `grep` (off by
//! default; `tool-std` turns it on for `tool_output_cache_grep`): without it the items here are
//! absent.

use std::io;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch};

use super::store::{OutputStore, StoreError};

/// The longest line the searcher buffers, in bytes (16 MiB): a longer line stops the search with an
/// error pointing to `tool_output_cache_line`, so a search's memory stays bounded.
pub const MAX_SEARCH_LINE_BYTES: usize = 16 * 1024 * 1024;

/// What to look for in a stored output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepQuery {
    /// The pattern.
    pub pattern: String,
    /// `true`: `pattern` is a regular expression (Rust `regex` syntax); `false`: a literal.
    pub regex: bool,
    /// Context lines before each match.
    pub before: usize,
    /// Context lines after each match.
    pub after: usize,
    /// Matching lines kept at most; one more match sets [`GrepHits::truncated`] and stops.
    pub max_matches: usize,
    /// Bytes kept of each line; a longer line keeps a window of this size around its first match.
    pub max_line_bytes: usize,
}

/// One line of a search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepLine {
    /// The 1-based line number.
    pub number: u64,
    /// `true` for a matching line, `false` for a context line.
    pub is_match: bool,
    /// The line (no `\n`), or, for a line over `max_line_bytes`, a window of it cut at character
    /// boundaries (around the first match for a matching line, the start for a context line).
    pub text: String,
    /// Bytes of the whole line.
    pub len: usize,
    /// Byte offset in the line where `text` starts (0 unless the line was windowed).
    pub window_start: usize,
    /// Extended grapheme clusters of the line before `text` (the `char_offset` of
    /// `tool_output_cache_line` that starts at `text`).
    pub window_start_graphemes: usize,
}

/// The result of [`grep_stored`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GrepHits {
    /// Blocks of adjacent lines, in order.
    pub blocks: Vec<Vec<GrepLine>>,
    /// Matching lines kept.
    pub matches: usize,
    /// `true` when more matches exist past `max_matches`.
    pub truncated: bool,
}

/// Why a search failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrepError {
    /// The regular expression does not compile.
    #[error("invalid regex `{pattern}`: {message}; fix it or set regex to false for a literal search")]
    InvalidRegex {
        /// The pattern.
        pattern: String,
        /// The compiler's message.
        message: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The matcher for a query: line-oriented, case-sensitive, `^`/`$` at line boundaries. Cargo
/// feature `grep`.
///
/// # Errors
/// [`GrepError::InvalidRegex`].
pub fn grep_matcher(pattern: &str, regex: bool) -> Result<RegexMatcher, GrepError> {
    RegexMatcherBuilder::new()
        .multi_line(true)
        .line_terminator(Some(b'\n'))
        .fixed_strings(!regex)
        .build(pattern)
        .map_err(|e| GrepError::InvalidRegex {
            pattern: pattern.to_owned(),
            message: e
                .to_string()
                .lines()
                .rev()
                .find_map(|l| l.trim().strip_prefix("error: ").map(str::to_owned))
                .unwrap_or_else(|| e.to_string().trim().to_owned()),
        })
}

/// Searches the output stored under `ref_id`, streaming it through ripgrep's searcher in 64 KiB
/// pieces: memory stays bounded by the longest line (at most [`MAX_SEARCH_LINE_BYTES`]) and the kept
/// lines, however large the output. Cargo feature `grep` (off by default; `tool-std` turns it on).
///
/// # Errors
/// [`GrepError::InvalidRegex`]; [`GrepError::Store`] when the ref is unknown, reading fails, or a
/// line is over [`MAX_SEARCH_LINE_BYTES`].
pub fn grep_stored(store: &dyn OutputStore, ref_id: &str, query: &GrepQuery) -> Result<GrepHits, GrepError> {
    let matcher = grep_matcher(&query.pattern, query.regex)?;
    let reader = store.open_at(ref_id, 0)?;
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::none())
        .before_context(query.before)
        .after_context(query.after)
        .heap_limit(Some(MAX_SEARCH_LINE_BYTES))
        .build();
    let mut sink = HitSink { query, matcher: &matcher, hits: GrepHits::default(), last: None, pending_before: 0 };
    searcher.search_reader(&matcher, reader, &mut sink).map_err(|e| {
        let message = if e.to_string().contains("limit") {
            format!(
                "a line is longer than {MAX_SEARCH_LINE_BYTES} bytes and cannot be searched; read it in windows with tool_output_cache_line"
            )
        } else {
            e.to_string()
        };
        GrepError::Store(StoreError::Io { ref_id: ref_id.to_owned(), message })
    })?;
    Ok(sink.hits)
}

struct HitSink<'a> {
    query: &'a GrepQuery,
    matcher: &'a RegexMatcher,
    hits: GrepHits,
    last: Option<u64>,
    /// Before-context lines pushed since the last match (dropped when the next match is past the cap).
    pending_before: usize,
}

impl HitSink<'_> {
    fn push(&mut self, number: u64, bytes: &[u8], is_match: bool) {
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let max = self.query.max_line_bytes;
        let (start, end) = if bytes.len() <= max {
            (0, bytes.len())
        } else {
            use grep_matcher::Matcher;
            let at = if is_match { self.matcher.find(bytes).ok().flatten().map_or(0, |m| m.start()) } else { 0 };
            let mut start = at.saturating_sub(max / 4).min(bytes.len() - max);
            while start > 0 && (bytes[start] & 0xC0) == 0x80 {
                start -= 1;
            }
            let mut end = (start + max).min(bytes.len());
            while end < bytes.len() && end > start && (bytes[end] & 0xC0) == 0x80 {
                end -= 1;
            }
            (start, end)
        };
        let line = GrepLine {
            number,
            is_match,
            text: String::from_utf8_lossy(&bytes[start..end]).into_owned(),
            len: bytes.len(),
            window_start: start,
            window_start_graphemes: if start == 0 {
                0
            } else {
                unicode_segmentation::UnicodeSegmentation::graphemes(&*String::from_utf8_lossy(&bytes[..start]), true)
                    .count()
            },
        };
        let adjacent = self.last.is_some_and(|n| n + 1 == number);
        match self.hits.blocks.last_mut() {
            Some(block) if adjacent => block.push(line),
            _ => self.hits.blocks.push(vec![line]),
        }
        self.last = Some(number);
    }
}

impl Sink for HitSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = found.line_number().unwrap_or(1);
        for (i, line) in found.lines().enumerate() {
            if self.hits.matches == self.query.max_matches {
                self.hits.truncated = true;
                for _ in 0..self.pending_before {
                    if let Some(block) = self.hits.blocks.last_mut() {
                        block.pop();
                        if block.is_empty() {
                            self.hits.blocks.pop();
                        }
                    }
                }
                return Ok(false);
            }
            self.hits.matches += 1;
            self.pending_before = 0;
            self.push(first + i as u64, line, true);
        }
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.hits.truncated {
            return Ok(false);
        }
        // After-context of the last kept match is kept; before-context of a match past the cap is
        // dropped when that match arrives.
        if matches!(context.kind(), SinkContextKind::Before) {
            self.pending_before += 1;
        }
        self.push(context.line_number().unwrap_or(1), context.bytes(), false);
        Ok(true)
    }
}
