//! Diff previews of `write` and `edit` (and any tool that changes files).

use similar::TextDiff;
use tool_runtime::ToolContext;
use tool_runtime::output::{OUTPUT_STORE, OutputScope, mint_ref_id};

use tool_runtime::off_worker;

/// Lines of unchanged context around each change in a preview (the unified-diff default).
pub const DIFF_CONTEXT_LINES: usize = 3;

/// A unified diff of one file, with the part of it a model is shown.
///
/// Rule (`tools-spec.md`, "Diff previews"): unified diff with 3 lines of context, headers
/// `--- a/<path>` and `+++ b/<path>`; when it is longer than the caps, the preview keeps whole
/// lines of its head and its tail around a line `...[N lines omitted]...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffPreview {
    /// What the model sees: the whole diff, or its head and tail around the omission marker.
    /// Empty when nothing changed.
    pub preview: String,
    /// `true` when `preview` is cut (then `full` is longer).
    pub truncated: bool,
    /// The whole unified diff.
    pub full: String,
}

/// The unified diff of `old` -> `new` for the file shown as `path`, previewed within `max_lines`
/// lines (the marker line counted) and `max_bytes` bytes. The head gets half of each budget and
/// the tail the rest of it; a line too long for what is left is not shown at all (never cut).
/// Both texts are compared line by line; a missing final newline shows as
/// `\ No newline at end of file`.
pub fn diff_preview(path: &str, old: &str, new: &str, max_lines: usize, max_bytes: usize) -> DiffPreview {
    let full = TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(DIFF_CONTEXT_LINES)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    let (preview, truncated) = cap_head_tail(&full, max_lines, max_bytes);
    DiffPreview { preview, truncated, full }
}

/// `text` when it has at most `max_lines` lines and `max_bytes` bytes; else whole lines of its
/// head and tail around `...[N lines omitted]...`, within both caps.
fn cap_head_tail(text: &str, max_lines: usize, max_bytes: usize) -> (String, bool) {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if lines.len() <= max_lines && text.len() <= max_bytes {
        return (text.to_owned(), false);
    }
    // The longest the marker can be (its count has at most 20 digits).
    const MARKER_MAX_BYTES: usize = "...[ lines omitted]...\n".len() + 20;
    let line_budget = max_lines.saturating_sub(1);
    let byte_budget = max_bytes.saturating_sub(MARKER_MAX_BYTES);
    let (head_lines, head_bytes) = (line_budget.div_ceil(2), byte_budget / 2);

    let mut head = 0;
    let mut used = 0;
    while head < lines.len() && head < head_lines && used + lines[head].len() <= head_bytes {
        used += lines[head].len();
        head += 1;
    }
    let (tail_lines, tail_bytes) = (line_budget - head, byte_budget - used);
    let mut tail = 0;
    let mut tail_used = 0;
    while tail < tail_lines && head + tail < lines.len() {
        let line = lines[lines.len() - 1 - tail];
        if tail_used + line.len() > tail_bytes {
            break;
        }
        tail_used += line.len();
        tail += 1;
    }
    let omitted = lines.len() - head - tail;
    let mut out = lines[..head].concat();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("...[{omitted} lines omitted]...\n"));
    out.push_str(&lines[lines.len() - tail..].concat());
    (out, true)
}

/// Keeps the whole diff of a cut preview (`full`, [`DiffPreview::full`]) in the output cache, so
/// that nothing is lost: under a new ref id ([`mint_ref_id`]) in the call's scope, readable with
/// `tool_output_cache`, `tool_output_cache_grep` and `tool_output_cache_line`. Returns that ref
/// id; `None` when the store cannot be had or written (the preview is then all there is, and
/// `diff_truncated` still says so). The store is written on the blocking pool.
pub(crate) async fn keep_full_diff(full: String, ctx: &ToolContext) -> Option<String> {
    let ref_id = mint_ref_id().ok()?;
    let store = ctx.resolve(&OUTPUT_STORE).await.ok()?;
    let (session, principal) = (ctx.session_id().map(str::to_owned), ctx.principal().map(str::to_owned));
    off_worker(move || {
        let scope = OutputScope { session: session.as_deref(), principal: principal.as_deref() };
        store.put_scoped(scope, &ref_id, &mut full.as_bytes(), &[]).ok().map(|_| ref_id)
    })
    .await
    .flatten()
}

/// The approval preview ([`Tool::preview`](tool_runtime::Tool::preview)) of a file tool that takes
/// `dry_run` (`edit`, `apply_patch`): the tool itself run on `arguments` with `"dry_run": true`,
/// so that it reads through the call's sandbox, checks everything a real call checks and writes
/// nothing in the workspace. The preview is `headline` of the dry run's JSON output (the paths
/// first) on the first line, then its capped unified diff (the cut stated by the
/// `...[N lines omitted]...` line; a cut diff is kept whole in the output cache, as a dry run
/// keeps it), or `(no change)`.
///
/// # Errors
/// What the dry run met (a path outside the workspace, `old_string` not found, a patch that does
/// not apply, arguments that do not decode): the call is refused with it.
pub(crate) async fn dry_run_preview(
    tool: &'static tool_runtime::ToolSpec,
    arguments: &str,
    ctx: &ToolContext,
    headline: fn(&serde_json::Value) -> String,
) -> Result<String, tool_runtime::ToolError> {
    use tool_runtime::{Tool as _, ToolError, ToolResult};
    // Arguments that are not an object are the decoder's to refuse, as in a real call.
    let dry = match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(serde_json::Value::Object(mut object)) => {
            object.insert("dry_run".to_owned(), serde_json::Value::Bool(true));
            serde_json::Value::Object(object).to_string()
        }
        _ => arguments.to_owned(),
    };
    let output = match tool.call(&dry, ctx).await? {
        ToolResult::Text(text) => serde_json::from_str::<serde_json::Value>(&text).map_err(ToolError::failed)?,
        ToolResult::Json(value) | ToolResult::Structured { value, .. } => value,
        other => return Err(ToolError::Failed(format!("`{}` gave no dry run to preview: {other:?}", tool.name()))),
    };
    let diff = output["diff"].as_str().unwrap_or_default();
    Ok(file_preview(&headline(&output), diff))
}

/// A file tool's approval preview: `headline` (what it changes, the paths first), then `diff`
/// without its last line break, or `(no change)` for an empty diff.
pub(crate) fn file_preview(headline: &str, diff: &str) -> String {
    match diff.strip_suffix('\n').unwrap_or(diff) {
        "" => format!("{headline}\n(no change)"),
        diff => format!("{headline}\n{diff}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_text_is_kept_whole() {
        assert_eq!(cap_head_tail("a\nb\n", 2, 100), ("a\nb\n".to_owned(), false));
    }

    #[test]
    fn too_many_lines_keep_head_and_tail_around_a_count() {
        let text: String = (1..=10).map(|n| format!("{n}\n")).collect();
        assert_eq!(cap_head_tail(&text, 5, 1000), ("1\n2\n...[6 lines omitted]...\n9\n10\n".to_owned(), true));
    }

    #[test]
    fn too_many_bytes_keep_what_fits_in_each_half() {
        let text = format!("{}\n{}\n{}\n", "a".repeat(30), "b".repeat(30), "c".repeat(10));
        // 73 bytes; budget 72 - 43 = 29: the head's 14 hold no line, the tail's 29 hold the last.
        assert_eq!(cap_head_tail(&text, 100, 72), (format!("...[2 lines omitted]...\n{}\n", "c".repeat(10)), true));
    }
}
