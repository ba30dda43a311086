//! The `tool_output_cache_line` tool.

use std::sync::Arc;

use tool_runtime::output::{OUTPUT_STORE, OutputScope, OutputStore, ScopedStore, StoreError, open_lines};
use tool_runtime::{ToolContext, tool};
use unicode_segmentation::UnicodeSegmentation;

use super::error::CacheError;

/// Read part of one line of a cached tool output, like read_line.
#[tool(set = "cache", blocking, tags(read_only))]
pub fn tool_output_cache_line(
    ref_id: String,
    /// 1-based.
    #[arg(range(min = 1, max = 9007199254740991))]
    line_number: u64,
    /// 0-based first character.
    #[arg(range(max = 9007199254740991))]
    char_offset: Option<usize>,
    /// Characters to show (default 10000).
    #[arg(range(min = 1, max = 100000))]
    char_limit: Option<usize>,
    ctx: &ToolContext,
    #[depends(OUTPUT_STORE)] store: Arc<dyn OutputStore>,
) -> Result<String, CacheError> {
    let store = ScopedStore::new(&*store, OutputScope::of(ctx));
    let offset = char_offset.unwrap_or(0);
    let limit = char_limit.unwrap_or(10_000);
    if !(1..=100_000).contains(&limit) {
        return Err(CacheError::OutOfRange { field: "char_limit", value: limit as u64, min: 1, max: 100_000 });
    }
    let info = store.info(&ref_id)?;
    if line_number == 0 || line_number > info.lines {
        if line_number == 0 {
            return Err(CacheError::OutOfRange { field: "line_number", value: 0, min: 1, max: info.lines.max(1) });
        }
        return Err(StoreError::LinePastEnd { ref_id, line: line_number, lines: info.lines }.into());
    }
    let mut cursor = open_lines(&store, &ref_id, line_number - 1)?;
    let mut window = GraphemeWindow { from: offset, to: offset.saturating_add(limit), ..GraphemeWindow::default() };
    cursor.stream_line(|piece| window.feed(piece, false)).map_err(|e| CacheError::io(&ref_id, &e))?;
    window.feed(&[], true);
    let length = window.count;
    if offset > length || (offset == length && length > 0) {
        return Err(CacheError::CharOffsetPastEnd { line_number, char_offset: offset, length });
    }
    let end = window.to.min(length);
    let mut out =
        format!("line_number={line_number} line_length={length} char_range={offset}..{end}\n{}", window.segment);
    if end < length {
        out.push_str(&format!("\nUse char_offset={end} to continue."));
    }
    Ok(out)
}

/// Counts the graphemes of a line that arrives in pieces and keeps those in `from..to`.
#[derive(Default)]
struct GraphemeWindow {
    from: usize,
    to: usize,
    count: usize,
    segment: String,
    /// Bytes not yet decoded (an incomplete character at the end of a piece).
    raw: Vec<u8>,
    /// Decoded text not yet segmented (the last grapheme may continue in the next piece).
    pending: String,
}

impl GraphemeWindow {
    fn feed(&mut self, piece: &[u8], last: bool) {
        self.raw.extend_from_slice(piece);
        let mut rest: &[u8] = &self.raw;
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    self.pending.push_str(text);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    self.pending.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            self.pending.push('\u{FFFD}');
                            rest = &after[n..];
                        }
                        None if last => {
                            self.pending.push('\u{FFFD}');
                            rest = &[];
                            break;
                        }
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        self.raw = rest.to_vec();
        let pending = std::mem::take(&mut self.pending);
        let mut graphemes = pending.graphemes(true).peekable();
        while let Some(g) = graphemes.next() {
            if graphemes.peek().is_none() && !last {
                self.pending = g.to_owned();
                break;
            }
            if self.count >= self.from && self.count < self.to {
                self.segment.push_str(g);
            }
            self.count += 1;
        }
    }
}
