//! Per-call truncation: keep the head or the tail of an output within a line and a byte cap.

use std::fmt;

/// The environment variable that sets [`OutputLimits::max_lines`] (a positive integer, lines).
pub const MAX_LINES_ENV: &str = "TOOL_MAX_LINES";
/// The environment variable that sets [`OutputLimits::max_bytes`] (a positive integer, bytes).
pub const MAX_BYTES_ENV: &str = "TOOL_MAX_BYTES";

/// The per-call caps of [`truncate_head`] and [`truncate_tail`]: whichever is hit first cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    /// Lines kept at most (default 2000, env `TOOL_MAX_LINES`).
    pub max_lines: usize,
    /// UTF-8 bytes kept at most, newlines between kept lines included (default 50 KiB = 51200,
    /// env `TOOL_MAX_BYTES`).
    pub max_bytes: usize,
}

impl Default for OutputLimits {
    fn default() -> Self {
        Self { max_lines: 2000, max_bytes: 50 * 1024 }
    }
}

impl OutputLimits {
    /// The defaults, overridden by `TOOL_MAX_LINES` / `TOOL_MAX_BYTES` when set.
    ///
    /// # Errors
    /// A message naming the variable when one is set but not a positive integer.
    pub fn from_env() -> Result<Self, String> {
        let mut limits = Self::default();
        if let Some(n) = env_positive(MAX_LINES_ENV, "lines")? {
            limits.max_lines = n;
        }
        if let Some(n) = env_positive(MAX_BYTES_ENV, "bytes")? {
            limits.max_bytes = n;
        }
        Ok(limits)
    }
}

/// The value of `name` as a positive integer, `None` when unset.
pub(crate) fn env_positive(name: &str, unit: &str) -> Result<Option<usize>, String> {
    match std::env::var(name) {
        Ok(value) => value
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .map(Some)
            .ok_or_else(|| format!("{name} must be a positive integer ({unit}), got `{value}`")),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(format!("{name} must be a positive integer ({unit}), got non-UTF-8 text"))
        }
    }
}

/// Which cap cut an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TruncatedBy {
    /// Nothing was cut.
    None,
    /// The line cap ([`OutputLimits::max_lines`]) was reached first.
    Lines,
    /// The byte cap ([`OutputLimits::max_bytes`]) was reached first.
    Bytes,
}

/// What [`truncate_head`] / [`truncate_tail`] kept, of how much, and why.
///
/// Lines are split at `\n`; one final `\n` does not start another line (`"a\nb\n"` has 2 lines,
/// `""` has 0). `content` is a contiguous slice of the input without that final newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation<'a> {
    /// The kept text (without any header).
    pub content: &'a str,
    /// Which cap cut the output ([`TruncatedBy::None`] when all of it was kept).
    pub truncated_by: TruncatedBy,
    /// Lines of the whole output.
    pub total_lines: usize,
    /// Bytes of the whole output.
    pub total_bytes: usize,
    /// Lines in `content` (a partial line counts as one).
    pub output_lines: usize,
    /// Bytes in `content`.
    pub output_bytes: usize,
    /// `truncate_tail` only: the last line alone was over the byte cap and `content` is a UTF-8-safe
    /// suffix of it.
    pub last_line_partial: bool,
    /// `truncate_head` only: the first line alone is over the byte cap, so `content` is empty (a
    /// line is never cut mid-line by the head cut).
    pub first_line_exceeds_limit: bool,
    /// The caps used.
    pub limits: OutputLimits,
    /// Whether the head (or the tail) was kept; shapes the header.
    from_head: bool,
}

impl Truncation<'_> {
    /// `true` when something was cut.
    pub fn truncated(&self) -> bool {
        self.truncated_by != TruncatedBy::None
    }

    /// Bytes of the output that are not in `content`.
    pub fn omitted_bytes(&self) -> usize {
        self.total_bytes - self.output_bytes
    }
}

impl fmt::Display for Truncation<'_> {
    /// The header line: what was kept, of how much, and why, e.g.
    /// `[output truncated: kept the first 2000 of 5120 lines (40211 of 103004 bytes); line limit 2000]`.
    /// Empty when nothing was cut.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.truncated_by {
            TruncatedBy::None => return Ok(()),
            TruncatedBy::Lines => format!("line limit {}", self.limits.max_lines),
            TruncatedBy::Bytes => format!("byte limit {}", self.limits.max_bytes),
        };
        if self.first_line_exceeds_limit {
            return write!(
                f,
                "[output truncated: the first line alone is over the byte limit {}; nothing kept of {} line{} ({} bytes)]",
                self.limits.max_bytes,
                self.total_lines,
                if self.total_lines == 1 { "" } else { "s" },
                self.total_bytes
            );
        }
        let which = if self.last_line_partial {
            "the end of the last line".to_owned()
        } else if self.content.is_empty() {
            "nothing".to_owned()
        } else if self.from_head {
            format!("the first {} of {} lines", self.output_lines, self.total_lines)
        } else {
            format!("the last {} of {} lines", self.output_lines, self.total_lines)
        };
        write!(f, "[output truncated: kept {which} ({} of {} bytes); {why}]", self.output_bytes, self.total_bytes)
    }
}

/// The input without its one final newline.
fn body(text: &str) -> &str {
    text.strip_suffix('\n').unwrap_or(text)
}

impl<'a> Truncation<'a> {
    /// `text` kept whole (its final newline aside), before a cap is applied.
    fn whole(text: &'a str, limits: OutputLimits, from_head: bool) -> Self {
        let body = body(text);
        let total_lines = count_lines(body, text.len());
        Self {
            content: body,
            truncated_by: TruncatedBy::None,
            total_lines,
            total_bytes: text.len(),
            output_lines: total_lines,
            output_bytes: body.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            limits,
            from_head,
        }
    }
}

fn count_lines(body: &str, total_bytes: usize) -> usize {
    if total_bytes == 0 { 0 } else { memchr::memchr_iter(b'\n', body.as_bytes()).count() + 1 }
}

/// Keeps the first whole lines of `text` within `limits` (whichever cap is hit first). Never returns
/// a partial line: when the first line alone is over the byte cap, nothing is kept and
/// [`Truncation::first_line_exceeds_limit`] says so. Suits file reads and search results, where the
/// beginning matters most. Source: the Go seed's `TruncateHead`.
pub fn truncate_head(text: &str, limits: OutputLimits) -> Truncation<'_> {
    let mut result = Truncation::whole(text, limits, true);
    let body = result.content;
    let bytes = body.as_bytes();
    let total_lines = result.total_lines;
    if total_lines <= limits.max_lines && body.len() <= limits.max_bytes {
        return result;
    }
    // End of the kept prefix: the newline ending line `max_lines` or the last newline within the
    // byte cap, whichever comes first.
    let mut end = 0usize;
    let mut lines = 0usize;
    let mut by = TruncatedBy::Lines;
    let mut start = 0usize;
    loop {
        if lines == limits.max_lines {
            break;
        }
        let line_end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        if line_end > limits.max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        end = line_end;
        lines += 1;
        if line_end == bytes.len() {
            break;
        }
        start = line_end + 1;
    }
    result.truncated_by = by;
    result.content = &body[..end];
    result.output_lines = lines;
    result.output_bytes = end;
    result.first_line_exceeds_limit = lines == 0 && limits.max_lines > 0;
    result
}

/// Keeps the last whole lines of `text` within `limits` (whichever cap is hit first). When the last
/// line alone is over the byte cap, keeps its longest suffix within the cap that starts on a UTF-8
/// character boundary and sets [`Truncation::last_line_partial`]. Suits command output and logs,
/// where the end matters most. Source: the Go seed's `TruncateTail`.
pub fn truncate_tail(text: &str, limits: OutputLimits) -> Truncation<'_> {
    let mut result = Truncation::whole(text, limits, false);
    let body = result.content;
    let bytes = body.as_bytes();
    let total_lines = result.total_lines;
    if total_lines <= limits.max_lines && body.len() <= limits.max_bytes {
        return result;
    }
    let len = bytes.len();
    let mut start = len;
    let mut line_end = len;
    let mut lines = 0usize;
    let mut by = TruncatedBy::Lines;
    while lines < limits.max_lines {
        let line_start = memchr::memrchr(b'\n', &bytes[..line_end]).map_or(0, |i| i + 1);
        if len - line_start > limits.max_bytes {
            by = TruncatedBy::Bytes;
            if lines == 0 {
                let mut cut = len - limits.max_bytes;
                while !body.is_char_boundary(cut) {
                    cut += 1;
                }
                start = cut;
                lines = 1;
                result.last_line_partial = true;
            }
            break;
        }
        start = line_start;
        lines += 1;
        if line_start == 0 {
            break;
        }
        line_end = line_start - 1;
    }
    result.truncated_by = by;
    result.content = &body[start..];
    result.output_lines = if result.content.is_empty() && !result.last_line_partial { 0 } else { lines };
    result.output_bytes = len - start;
    result
}

/// `text` cut to at most `max` bytes at a UTF-8 character boundary: the kept prefix and whether
/// anything was cut. No ellipsis is added (the caller says how it marks a cut). Source: the Go seed's
/// `TruncateText`.
pub fn truncate_text(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// The lines of `text`, each keeping its `\n` (and `\r\n`) suffix; no empty last element for a
/// final newline (`"a\nb\n"` gives `["a\n", "b\n"]`, `""` gives `[]`). Concatenating the result
/// gives `text` back. Source: the Go seed's `SplitLines`.
pub fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}
