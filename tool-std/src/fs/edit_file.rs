//! The `edit` tool.

use serde::Serialize;
use tool_runtime::{ToolContext, tool};

use super::diff::{diff_preview, dry_run_preview, keep_full_diff};
use super::error::FsError;
use super::limits::{FS_LIMITS, FsLimits};
use super::replace::{MatchMode, ReplaceError, Replacement, replace};
use super::text::{sha256_hex, sniff_bytes};
use super::write_file::{Existing, atomic_write, check_hash, parse_hash, read_existing};
use crate::sandbox::{SANDBOX, Sandbox};
use tool_runtime::off_worker;

/// What `edit` returns (as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditOutput {
    /// One sentence: `Replaced 1 occurrence in a.rs`, `Created a.rs (12 bytes)`,
    /// `Dry run: would replace 2 occurrences in a.rs (nothing written)`, `No change: ...`.
    pub summary: String,
    /// The path as given.
    pub file_path: String,
    /// How many places were replaced (0 when nothing changed).
    pub replacements: usize,
    /// The mode that matched: `exact`, `line_trimmed` or `block_anchor`.
    pub match_mode: MatchMode,
    /// `false` when the content is unchanged (old_string == new_string); nothing is written then.
    pub changed: bool,
    /// `true` when this was a dry run: nothing was written.
    pub dry_run: bool,
    /// Lowercase hex SHA-256 of the content after the edit (as written, or as it would be).
    pub content_sha256: String,
    /// Unified diff of the change, capped at 120 lines / 16 KiB with head and tail kept.
    pub diff: String,
    /// `true` when `diff` is cut.
    pub diff_truncated: bool,
    /// When `diff` is cut: the output cache ref id of the whole diff (a ref of its own), for
    /// `tool_output_cache`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ref_id: Option<String>,
    /// The whole diff while the tool runs, kept in the output cache when `diff` is cut.
    #[serde(skip)]
    pub(crate) full_diff: Option<String>,
}

/// Replace old_string with new_string in a file you have read (a whole file: write; several files:
/// apply_patch).
///
/// old_string must match one place, else the call fails listing the matches: add surrounding lines,
/// or set replace_all or expected_replacements.
#[tool(set = "fs", resource(path = "file_path"), tags(destructive), preview = edit_preview)]
#[allow(clippy::too_many_arguments)]
pub async fn edit(
    /// Relative to the workspace root.
    file_path: String,
    /// The text to replace; empty to create a file.
    old_string: String,
    new_string: String,
    replace_all: Option<bool>,
    /// How old_string is found (default auto).
    match_mode: Option<MatchMode>,
    /// Exactly this many matches, all replaced.
    #[arg(range(min = 1, max = 9007199254740991))]
    expected_replacements: Option<usize>,
    /// Only return the diff; write nothing.
    dry_run: Option<bool>,
    /// content_sha256 of your last read; nothing is written if the file changed since.
    expected_hash: Option<String>,
    #[depends(SANDBOX)] sandbox: Sandbox,
    #[depends(FS_LIMITS)] limits: FsLimits,
    ctx: &ToolContext,
) -> Result<EditOutput, FsError> {
    // The body runs on the blocking pool; a cut diff is then kept whole in the output cache.
    let run = move || -> Result<EditOutput, FsError> {
        if expected_replacements == Some(0) {
            return Err(FsError::TooSmall { field: "expected_replacements", value: 0, min: 1 });
        }
        let expected = expected_hash.as_deref().map(parse_hash).transpose()?;
        let dry_run = dry_run.unwrap_or(false);
        let target = sandbox.target(&file_path)?;
        let current = read_existing(&sandbox, &target)?;
        check_hash(&file_path, current.as_ref().map(|c| &c.bytes[..]), expected.as_deref())?;
        let mode = match_mode.unwrap_or_default();

        let Some(Existing { bytes: current, mode: current_mode }) = current else {
            if !old_string.is_empty() {
                return Err(FsError::EditFileNotFound { path: file_path });
            }
            let summary = if dry_run {
                format!("Dry run: would create {file_path} ({} bytes); nothing written", new_string.len())
            } else {
                atomic_write(&sandbox, &target, new_string.as_bytes(), None)?;
                format!("Created {file_path} ({} bytes)", new_string.len())
            };
            let diff = diff_preview(&file_path, "", &new_string, limits.diff_max_lines, limits.diff_max_bytes);
            return Ok(EditOutput {
                summary,
                file_path,
                replacements: 1,
                match_mode: MatchMode::Exact,
                changed: true,
                dry_run,
                content_sha256: sha256_hex(new_string.as_bytes()),
                diff: diff.preview,
                diff_truncated: diff.truncated,
                ref_id: None,
                full_diff: diff.truncated.then(|| diff.full.clone()),
            });
        };
        if let Some(reason) = sniff_bytes(&current) {
            return Err(FsError::Binary { verb: "edit", path: file_path, reason });
        }
        if old_string == new_string {
            return Ok(EditOutput {
                summary: format!("No change: old_string and new_string are identical; {file_path} was not written"),
                file_path,
                replacements: 0,
                match_mode: if mode == MatchMode::Auto { MatchMode::Exact } else { mode },
                changed: false,
                dry_run,
                content_sha256: sha256_hex(&current),
                diff: String::new(),
                diff_truncated: false,
                ref_id: None,
                full_diff: None,
            });
        }

        let request = Replacement {
            old: &old_string,
            new: &new_string,
            replace_all: replace_all.unwrap_or(false),
            mode,
            expected_replacements,
        };
        let done = replace(&current, &request).map_err(|e| match e {
            ReplaceError::NotUtf8(offset) => FsError::NotUtf8 { path: file_path.clone(), offset },
            ReplaceError::EmptyOld => FsError::EmptyOldString { path: file_path.clone(), bytes: current.len() as u64 },
            ReplaceError::NotFound(tried) => FsError::OldStringNotFound { path: file_path.clone(), tried },
            ReplaceError::Ambiguous(lines) => FsError::Ambiguous { path: file_path.clone(), count: lines.len(), lines },
            ReplaceError::Count(expected, lines) => {
                FsError::ReplacementCount { path: file_path.clone(), expected, count: lines.len(), lines }
            }
            ReplaceError::BlockTooShort(lines) => FsError::BlockTooShort { lines },
        })?;
        if !dry_run {
            atomic_write(&sandbox, &target, &done.bytes, Some(current_mode))?;
        }
        let diff = diff_preview(
            &file_path,
            &display_text(&current),
            &display_text(&done.bytes),
            limits.diff_max_lines,
            limits.diff_max_bytes,
        );
        let occurrences = if done.replacements == 1 { "occurrence" } else { "occurrences" };
        let via =
            if done.mode == MatchMode::Exact { String::new() } else { format!(" (match_mode {})", done.mode.as_str()) };
        let summary = if dry_run {
            format!("Dry run: would replace {} {occurrences} in {file_path}{via}; nothing written", done.replacements)
        } else {
            format!("Replaced {} {occurrences} in {file_path}{via}", done.replacements)
        };
        Ok(EditOutput {
            summary,
            file_path,
            replacements: done.replacements,
            match_mode: done.mode,
            changed: true,
            dry_run,
            content_sha256: sha256_hex(&done.bytes),
            diff: diff.preview,
            diff_truncated: diff.truncated,
            ref_id: None,
            full_diff: diff.truncated.then(|| diff.full.clone()),
        })
    };
    let mut output = off_worker(run).await.ok_or(FsError::Cancelled { tool: "edit" })??;
    if let Some(full) = output.full_diff.take() {
        output.ref_id = keep_full_diff(full, ctx).await;
    }
    Ok(output)
}

/// The approval preview of an `edit` call ([`Tool::preview`](tool_runtime::Tool::preview)): the
/// edit run as a dry run, `edit `<file_path>`` and its unified diff ([`dry_run_preview`]).
fn edit_preview<'a>(
    arguments: &'a str,
    ctx: &'a ToolContext,
) -> tool_runtime::BoxFuture<'a, Result<String, tool_runtime::ToolError>> {
    Box::pin(dry_run_preview(edit::TOOL, arguments, ctx, |output| {
        format!("edit `{}`", output["file_path"].as_str().unwrap_or_default())
    }))
}

/// The text a diff shows: without a byte order mark, CRLF shown as LF.
fn display_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).replace("\r\n", "\n")
}
