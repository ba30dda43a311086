//! The `tool_output_cache` tool.

use std::sync::Arc;

use tool_runtime::output::{OUTPUT_STORE, OutputScope, OutputStore, ScopedStore, open_lines};
use tool_runtime::{ContentPart, ToolContext, ToolResult, tool};
use unicode_segmentation::UnicodeSegmentation;

use super::error::CacheError;
use super::{MAX_LINE_GRAPHEMES, MAX_OUTPUT_BYTES, line_call};

/// Read a cached tool output (the `ref_id` of a cut result or diff) as numbered lines, like read.
#[tool(set = "cache", blocking, tags(read_only))]
pub fn tool_output_cache(
    ref_id: String,
    /// 0-based first line.
    #[arg(range(max = 9007199254740991))]
    offset: Option<u64>,
    /// Lines to show (default 1500).
    #[arg(range(min = 1, max = 100000))]
    limit: Option<u64>,
    ctx: &ToolContext,
    #[depends(OUTPUT_STORE)] store: Arc<dyn OutputStore>,
) -> Result<ToolResult, CacheError> {
    let store = ScopedStore::new(&*store, OutputScope::of(ctx));
    let offset = offset.unwrap_or(0);
    let limit = limit.unwrap_or(1500);
    if !(1..=100_000).contains(&limit) {
        return Err(CacheError::OutOfRange { field: "limit", value: limit, min: 1, max: 100_000 });
    }
    let info = store.info(&ref_id)?;
    if info.lines == 0 {
        return Ok(ToolResult::text(format!("[ref_id {ref_id} holds an empty output: 0 lines]")));
    }
    if offset >= info.lines {
        return Err(CacheError::OffsetPastEnd { ref_id, offset, lines: info.lines });
    }
    let mut cursor = open_lines(&store, &ref_id, offset)?;
    let end = offset.saturating_add(limit).min(info.lines);
    let mut body = String::new();
    let mut cut_lines: Vec<u64> = Vec::new();
    let mut last_shown = offset;
    let mut capped = false;
    // Enough bytes for 1000 graphemes of any script; the grapheme cut then decides.
    let keep = MAX_LINE_GRAPHEMES * 16;
    while cursor.position() < end {
        let Some(line) = cursor.next_line(keep).map_err(|e| CacheError::io(&ref_id, &e))? else { break };
        let number = line.line + 1;
        let (shown, cut) = match line.text.grapheme_indices(true).nth(MAX_LINE_GRAPHEMES) {
            Some((at, _)) => (&line.text[..at], true),
            None => (line.text.as_str(), (line.text.len() as u64) < line.len),
        };
        let entry = format!("{number:>5}  {shown}{}", if cut { "..." } else { "" });
        if !body.is_empty() && body.len() + 1 + entry.len() > MAX_OUTPUT_BYTES {
            capped = true;
            break;
        }
        if !body.is_empty() {
            body.push('\n');
        }
        body.push_str(&entry);
        if cut {
            cut_lines.push(number);
        }
        last_shown = number;
    }
    let mut footers = Vec::new();
    if let Some(&first) = cut_lines.first() {
        let list = cut_lines.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
        footers.push(format!(
            "[truncated lines: {list}] Lines over {MAX_LINE_GRAPHEMES} graphemes are cut with \"...\"; read the rest of line {first} with {}",
            line_call(&ref_id, first, MAX_LINE_GRAPHEMES)
        ));
    }
    if capped {
        footers.push(format!("[output truncated at {MAX_OUTPUT_BYTES} bytes] Use offset={last_shown} to read more."));
    } else if last_shown < info.lines {
        footers.push(format!(
            "[showing lines {}-{last_shown} of {}] Use offset={last_shown} to read more.",
            offset + 1,
            info.lines
        ));
    }
    let text = if footers.is_empty() { body } else { format!("{body}\n\n{}", footers.join("\n")) };
    if offset == 0 && info.parts > 0 {
        let mut parts = vec![ContentPart::text(text)];
        parts.extend(store.parts(&ref_id)?);
        return Ok(ToolResult::Parts(parts));
    }
    Ok(ToolResult::Text(text))
}
