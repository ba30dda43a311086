//! The `grep` tool.

use std::io;

use grep_matcher::{LineTerminator, Matcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch};
use ignore::overrides::OverrideBuilder;
use tool_runtime::{ToolContext, tool};
use unicode_segmentation::UnicodeSegmentation;

use super::error::FsError;
use super::glob_files::checked_limit;
use super::limits::{FS_LIMITS, FsLimits};
use super::text::grapheme_window;
use super::walk::{files, search_base};
use crate::sandbox::{SANDBOX, Sandbox};

// (Not part of the description the model sees.) Progress, for a listener of
// `ToolContext::progress`: files searched so far, without a total (the walk does not count the
// files first), after the 1st file and every 32nd, and at the end with `total` equal to the
// number of files searched; message `1 file searched`, `N files searched`. Values strictly
// increase (MCP requires it of progress notifications): when the last file falls on a progress
// point, the end report takes its place (1 file: `1/1`; 32 files: `1`, `32/32`; 33 files: `1`,
// `32`, `33/33`; no file: `0/0`).
//
// Cancellation: the token is checked before each file and before the end report. Once it is seen
// cancelled, grep reports no more progress and returns `FsError::Cancelled` (a registry answers
// with its cancelled error).
//
// The tool's own record: a `tracing` debug event with target `tool_std::fs::grep` at each
// progress point (field `searched`, the files searched so far) and one at the end (fields
// `searched` and `cancelled`), whether or not anyone listens to progress; a disabled level costs
// one check.
/// Search file contents for a regex or a literal text. Use glob to find files by name.
#[tool(set = "fs", blocking, tags(read_only))]
#[allow(clippy::too_many_arguments)]
pub fn grep(
    /// A regex (Rust syntax), or a literal text with regex=false; matches within one line.
    #[arg(length(min = 1))]
    pattern: String,
    /// File or directory to search (default: the workspace root).
    path: Option<String>,
    /// Default true.
    regex: Option<bool>,
    case_insensitive: Option<bool>,
    /// Only files matching this glob (`*.rs`).
    include: Option<String>,
    /// Context lines before each match.
    #[arg(range(max = 50))]
    before: Option<usize>,
    /// Context lines after each match.
    #[arg(range(max = 50))]
    after: Option<usize>,
    /// Matching lines to show (default 100).
    #[arg(range(min = 1, max = 1000))]
    limit: Option<usize>,
    /// Also search files .gitignore or .ignore excludes.
    include_ignored: Option<bool>,
    #[depends(SANDBOX)] sandbox: Sandbox,
    #[depends(FS_LIMITS)] limits: FsLimits,
    ctx: &ToolContext,
) -> Result<String, FsError> {
    let limit = checked_limit(limit, &limits)?;
    let before = checked_context("before", before, &limits)?;
    let after = checked_context("after", after, &limits)?;
    let matcher = RegexMatcherBuilder::new()
        // `^` and `$` match at line boundaries (as in ripgrep); matches never span lines.
        .multi_line(true)
        .case_insensitive(case_insensitive.unwrap_or(false))
        .fixed_strings(!regex.unwrap_or(true))
        .crlf(true)
        .build(&pattern)
        .map_err(|e| FsError::InvalidRegex {
            pattern: pattern.clone(),
            message: regex_error_summary(&e.to_string()),
        })?;
    let (base, is_dir) = search_base(&sandbox, path.as_deref(), include_ignored.unwrap_or(false))?;
    let overrides = match &include {
        Some(glob) if is_dir => {
            let invalid = |e: ignore::Error| FsError::InvalidGlob { pattern: glob.clone(), message: e.to_string() };
            Some(OverrideBuilder::new(&base).add(glob).map_err(invalid)?.build().map_err(invalid)?)
        }
        _ => None,
    };
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .line_terminator(LineTerminator::crlf())
        .binary_detection(BinaryDetection::quit(0))
        .before_context(before)
        .after_context(after)
        .build();

    // Each output line, and whether it is a matching line (not context or a `--` separator).
    let mut lines: Vec<(String, bool)> = Vec::new();
    let mut stored = 0;
    let mut total = 0;
    let mut searched: u64 = 0;
    let mut walk = files(&sandbox, &base, overrides, include_ignored.unwrap_or(false), true).peekable();
    while let Some((entry, file)) = walk.next() {
        if ctx.is_cancelled() {
            return Err(cancelled_after(searched));
        }
        let mut sink = FileSink {
            capacity: limit - stored,
            matcher: &matcher,
            max_line: limits.grep_max_line_graphemes,
            window: limits.grep_window_graphemes,
            stored: 0,
            total: 0,
            last_kept: false,
            binary: false,
            lines: Vec::new(),
        };
        // The handle opened through the root, never the path again.
        let searched_ok = searcher.search_file(&matcher, &file, &mut sink).is_ok();
        searched += 1;
        // At the last file the end report stands for this one.
        if (searched == 1 || searched.is_multiple_of(PROGRESS_EVERY)) && walk.peek().is_some() {
            tracing::debug!(target: RECORD_TARGET, searched, "grep progress");
            if ctx.wants_progress() {
                ctx.progress(searched, None, &searched_message(searched));
            }
        }
        if !searched_ok || sink.binary {
            continue;
        }
        total += sink.total;
        stored += sink.stored;
        let shown = sandbox.display_path(entry.path());
        let mut previous: Option<u64> = None;
        for line in sink.lines {
            let adjacent = previous.is_some_and(|p| p + 1 == line.number);
            if (before > 0 || after > 0) && !adjacent && !lines.is_empty() {
                lines.push(("--".to_owned(), false));
            }
            let separator = if line.is_match { ':' } else { '-' };
            lines.push((format!("{shown}{separator}{}{separator} {}", line.number, line.text), line.is_match));
            previous = Some(line.number);
        }
    }
    // Cancelled during the last file: no end report for a cancelled call.
    if ctx.is_cancelled() {
        return Err(cancelled_after(searched));
    }
    tracing::debug!(target: RECORD_TARGET, searched, cancelled = false, "grep ended");
    if ctx.wants_progress() {
        ctx.progress(searched, Some(searched), &searched_message(searched));
    }
    if total == 0 {
        return Ok(format!("No matches for: {pattern}"));
    }
    // The page stays under the output layer's cut (2000 lines / 50 KiB by default), so that the
    // footer saying what is left survives it.
    let mut out = String::new();
    let (mut shown, mut kept) = (0, 0);
    for (line, is_match) in &lines {
        if kept > 0 && (kept >= GREP_MAX_OUTPUT_LINES || out.len() + 1 + line.len() > limits.grep_max_output_bytes) {
            break;
        }
        if kept > 0 {
            out.push('\n');
        }
        out.push_str(line);
        kept += 1;
        shown += usize::from(*is_match);
    }
    if total > shown {
        let footer = if shown < limit.min(total) {
            format!(
                "[showing {shown} of {total} matching lines: a page stops at {} bytes or {GREP_MAX_OUTPUT_LINES} lines] \
                 Narrow the pattern, path or include.",
                limits.grep_max_output_bytes
            )
        } else {
            format!(
                "[showing {shown} of {total} matching lines] Narrow the pattern, path or include, or raise limit \
                 (max {}).",
                limits.search_max_limit
            )
        };
        out.push_str(&format!("\n\n{footer}"));
    }
    Ok(out)
}

/// The most lines a `grep` page holds, below the output layer's 2000-line cut with room for its
/// footer.
const GREP_MAX_OUTPUT_LINES: usize = 1900;

/// How many files between two progress reports of `grep`.
const PROGRESS_EVERY: u64 = 32;

/// The `tracing` target of `grep`'s own record of files searched.
const RECORD_TARGET: &str = "tool_std::fs::grep";

/// The end of a cancelled `grep`, `searched` files in: recorded, and its error.
fn cancelled_after(searched: u64) -> FsError {
    tracing::debug!(target: RECORD_TARGET, searched, cancelled = true, "grep cancelled");
    FsError::Cancelled { tool: "grep" }
}

/// The progress message of `grep`: `1 file searched`, `N files searched`.
fn searched_message(searched: u64) -> String {
    if searched == 1 { "1 file searched".to_owned() } else { format!("{searched} files searched") }
}

/// The last `error: ...` line of a regex parse error (the full text quotes the pattern as
/// grep-regex rewrote it, `(?:...)`, which would only confuse), else the whole text.
fn regex_error_summary(message: &str) -> String {
    message
        .lines()
        .rev()
        .find_map(|line| line.trim().strip_prefix("error: "))
        .map_or_else(|| message.trim().to_owned(), str::to_owned)
}

fn checked_context(field: &'static str, value: Option<usize>, limits: &FsLimits) -> Result<usize, FsError> {
    match value {
        None => Ok(0),
        Some(value) if value <= limits.grep_max_context => Ok(value),
        Some(value) => Err(FsError::OutOfRange { field, value, min: 0, max: limits.grep_max_context }),
    }
}

/// One line of grep output, before the path is attached.
struct FoundLine {
    /// 1-based.
    number: u64,
    is_match: bool,
    text: String,
}

/// Collects one file's matches: at most `capacity` matching lines (with their context) are kept,
/// all are counted. A file with binary data is flagged and dropped by the caller.
struct FileSink<'m> {
    capacity: usize,
    /// Finds the match to centre a long line's window on.
    matcher: &'m RegexMatcher,
    /// Lines longer than this many graphemes are shown as a window.
    max_line: usize,
    /// The window's width in graphemes.
    window: usize,
    stored: usize,
    total: usize,
    /// Whether the latest match was kept (its after-context is kept too).
    last_kept: bool,
    binary: bool,
    lines: Vec<FoundLine>,
}

impl FileSink<'_> {
    fn push(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) {
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let text = String::from_utf8_lossy(bytes);
        // Graphemes are never more than bytes: a short line needs no counting.
        let text = if text.len() <= self.max_line || text.graphemes(true).nth(self.max_line).is_none() {
            text.into_owned()
        } else {
            // Where the first match starts (the lossy text keeps the offsets of valid UTF-8; a
            // match found in invalid bytes is clamped to a character boundary).
            let at =
                if is_match { self.matcher.find(text.as_bytes()).ok().flatten().map_or(0, |m| m.start()) } else { 0 };
            let at = (0..=at.min(text.len())).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            let (shown, first, last, total) = grapheme_window(&text, at, self.window);
            format!(
                "{}{shown}{} [showing columns {first}-{last} of {total}]",
                if first > 1 { "..." } else { "" },
                if last < total { "..." } else { "" }
            )
        };
        self.lines.push(FoundLine { number: number.unwrap_or(0), is_match, text });
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.total += 1;
        self.last_kept = self.stored < self.capacity;
        if self.last_kept {
            self.stored += 1;
            self.push(found.line_number(), found.bytes(), true);
        }
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        let keep = match context.kind() {
            SinkContextKind::After => self.last_kept,
            _ => self.stored < self.capacity,
        };
        if keep {
            self.push(context.line_number(), context.bytes(), false);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}
