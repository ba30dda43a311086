//! The `tool_output_cache_grep` tool.

use std::sync::Arc;

use tool_runtime::output::{GrepError, GrepQuery, OUTPUT_STORE, OutputScope, OutputStore, ScopedStore, grep_stored};
use tool_runtime::{ToolContext, tool};

use super::error::CacheError;
use super::{MAX_OUTPUT_BYTES, line_call};

/// Bytes of a line shown by `tool_output_cache_grep`; a longer line shows a window of this size.
pub const GREP_LINE_BYTES: usize = 1000;

/// Search a cached tool output, like grep.
#[tool(set = "cache", blocking, tags(read_only))]
// The arguments are the model's search options, each a field of the call's JSON.
#[allow(clippy::too_many_arguments)]
pub fn tool_output_cache_grep(
    ref_id: String,
    /// A regex (Rust syntax), or a literal text with regex=false; matches within one line.
    #[arg(length(min = 1))]
    pattern: String,
    /// Default true.
    regex: Option<bool>,
    case_insensitive: Option<bool>,
    /// Context lines before each match.
    #[arg(range(max = 50))]
    before: Option<u64>,
    /// Context lines after each match.
    #[arg(range(max = 50))]
    after: Option<u64>,
    /// Matching lines to show (default 100).
    #[arg(range(min = 1, max = 1000))]
    limit: Option<u64>,
    ctx: &ToolContext,
    #[depends(OUTPUT_STORE)] store: Arc<dyn OutputStore>,
) -> Result<String, CacheError> {
    let store = ScopedStore::new(&*store, OutputScope::of(ctx));
    if pattern.is_empty() {
        return Err(CacheError::EmptyPattern);
    }
    let context = |field: &'static str, value: Option<u64>| match value.unwrap_or(0) {
        v @ 0..=50 => Ok(v as usize),
        v => Err(CacheError::OutOfRange { field, value: v, min: 0, max: 50 }),
    };
    let before = context("before", before)?;
    let after = context("after", after)?;
    let max_matches = match limit.unwrap_or(100) {
        v @ 1..=1000 => v as usize,
        v => return Err(CacheError::OutOfRange { field: "limit", value: v, min: 1, max: 1000 }),
    };
    let (searched, regex) = case_folded(&pattern, regex.unwrap_or(true), case_insensitive.unwrap_or(false));
    let query = GrepQuery { pattern: searched, regex, before, after, max_matches, max_line_bytes: GREP_LINE_BYTES };
    // An invalid regex is reported as the model wrote it, without the case flag added here.
    let hits = grep_stored(&store, &ref_id, &query).map_err(|e| match e {
        GrepError::InvalidRegex { message, .. } => GrepError::InvalidRegex { pattern: pattern.clone(), message },
        other => other,
    })?;
    if hits.matches == 0 {
        return Ok(format!("No matches for: {pattern}"));
    }
    let mut out = String::new();
    let mut capped = false;
    'blocks: for block in &hits.blocks {
        let mut text = String::new();
        for line in block {
            let separator = if line.is_match { ':' } else { '-' };
            let mut entry = format!("{:>5}{separator} ", line.number);
            if line.window_start > 0 {
                entry.push_str("...");
            }
            entry.push_str(&line.text);
            if line.window_start + line.text.len() < line.len {
                entry.push_str("...");
            }
            if line.text.len() < line.len {
                entry.push_str(&format!(
                    " [line {} has {} bytes; read it with {}]",
                    line.number,
                    line.len,
                    line_call(&ref_id, line.number, line.window_start_graphemes)
                ));
            }
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&entry);
        }
        let separator = if out.is_empty() { 0 } else { 2 };
        if !out.is_empty() && out.len() + separator + text.len() > MAX_OUTPUT_BYTES {
            capped = true;
            break 'blocks;
        }
        if separator > 0 {
            out.push_str("\n\n");
        }
        out.push_str(&text);
    }
    if hits.truncated || capped {
        out.push_str("\n\n... (truncated)");
    }
    Ok(out)
}

/// The pattern and regex flag that search for `pattern` (a regex when `regex`, else a literal
/// text), ignoring case when `case_insensitive`: the regex gets the `(?i)` flag, a literal text is
/// escaped into a regex first. Case folding is then the regex engine's (Unicode simple case
/// folding), as in `grep`.
fn case_folded(pattern: &str, regex: bool, case_insensitive: bool) -> (String, bool) {
    match (case_insensitive, regex) {
        (false, _) => (pattern.to_owned(), regex),
        (true, true) => (format!("(?i){pattern}"), true),
        (true, false) => (format!("(?i){}", regex::escape(pattern)), true),
    }
}
