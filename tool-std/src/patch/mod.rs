//! The "patch" set: [`apply_patch()`], multi-file edits in the patch format of OpenAI's Codex
//! (`*** Begin Patch` ... `*** End Patch`), applied all or nothing.
//!
//! # Steps
//! 1. [`parse_patch`]: text to [`Patch`] (the grammar and how loosely it is read are there).
//!    A [`ParseError`] names the patch line (1-based, prose before the envelope counted).
//! 2. [`plan_patch`]: the sections are checked in order against a [`FileSet`] as the earlier
//!    sections leave it, and every file's new bytes are computed. Nothing is written; every
//!    section's first problem is reported ([`PatchError::Rejected`]).
//! 3. Writing: [`MemoryFiles::apply`] in memory; on disk, the tool stages every new file beside
//!    its target, renames them into place in patch order and undoes the renames done so far when
//!    one fails (see [`apply_patch()`]).
//!
//! # Matching a chunk
//! A chunk's `@@ text` lines are found first, each as a whole line after the previous one; then
//! its context and removed lines, as one run of lines, at or after the cursor (the line after the
//! previous chunk's run or `@@` line). Each [`MatchLevel`] (exact, then ignoring trailing white
//! space, then trimmed, then with typographic punctuation read as ASCII) is tried on the whole
//! rest of the file before the next one, and the first run found at that level wins. A chunk
//! ending with `*** End of File` must match the file's last lines. When a chunk does not match
//! and ends with empty context lines, it is tried again without them (they may stand for the
//! final newline). A chunk with only `+` lines is inserted right after its last `@@` line, or,
//! without one (or with `*** End of File`), at the end of the file.
//!
//! Matched context lines keep the file's bytes (a loose match never rewrites them); removed lines
//! go; added lines are the patch's. Each file keeps its byte order mark, its final-newline state
//! (a file without one gets none, unless its new last line is empty, which needs an ending; an
//! emptied file is empty), and its line endings: kept lines
//! keep theirs, added lines get CRLF when most lines of the file end with CRLF, else LF. A new
//! file (Add) is written with LF endings and a final newline.
//!
//! Finding the chunks costs time linear in the sizes of the file and the patch: exact matches are found by scanning from
//! the cursor (the scans of one file add up to one pass, since chunks are in order), and the
//! looser levels search a hash index of the file's lines built once per level
//! (`BENCHMARKS.md` has the figures).
//!
//! # Output
//! [`PatchOutput`] as JSON: `summary` (`Applied patch to N file(s)`, or with `dry_run`
//! `Patch preview ready for N file(s)`), `file_count`, `files` (one [`FileSummary`] per
//! section: `A p`, `D p`, `M p`, `R p -> q`), `diff` (unified, 3 lines of context, capped at
//! 120 lines / 16 KiB keeping head and tail around `...[N lines omitted]...`), `diff_truncated`
//! and, when the diff is cut, `ref_id`: the whole diff kept in the output cache (`OUTPUT_STORE`)
//! under a ref id of its own in the call's scope, as `write` and `edit` keep theirs, for
//! `tool_output_cache`, `tool_output_cache_grep` and `tool_output_cache_line`.

mod disk;
mod memory;
mod parse;
mod plan;
mod preview;
mod seek;
mod text;

use serde::Serialize;
use tool_runtime::{ToolContext, off_worker, tool};

pub use disk::SandboxFiles;
pub use memory::MemoryFiles;
pub use parse::{Chunk, ChunkLine, ParseError, Patch, Section, SectionKind, parse_patch, patch_paths};
pub use plan::{Entry, FileAction, FileChange, FileSet, PatchError, PatchPlan, SectionError, plan_patch};
use preview::{cap_preview, file_diff};
pub use seek::MatchLevel;

use crate::fs::keep_full_diff;
use crate::sandbox::{SANDBOX, Sandbox};

/// What [`apply_patch()`] returns (as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatchOutput {
    /// `Applied patch to N file(s)`, or `Patch preview ready for N file(s)` for a dry run; N is
    /// `file_count`.
    pub summary: String,
    /// The number of sections (a Delete and a later Add of one path count twice).
    pub file_count: usize,
    /// One entry per section, in patch order.
    pub files: Vec<FileSummary>,
    /// The unified diff of every section, in patch order, capped (see the [module docs](self)).
    pub diff: String,
    /// `true` when `diff` was cut.
    pub diff_truncated: bool,
    /// When `diff` is cut: the output cache ref id of the whole diff (a ref of its own), for
    /// `tool_output_cache`; absent when the diff is whole or the cache could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ref_id: Option<String>,
    /// The whole diff while the tool runs, kept in the output cache when `diff` is cut.
    #[serde(skip)]
    pub(crate) full_diff: Option<String>,
}

/// One section of a [`PatchOutput`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileSummary {
    /// `add`, `delete`, `update` or `move`.
    pub action: FileAction,
    /// The path as the patch wrote it.
    pub file_path: String,
    /// The `*** Move to` path; absent unless `action` is `move`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub move_to: Option<String>,
    /// `A p`, `D p`, `M p` or `R p -> q`.
    pub summary: String,
}

impl PatchOutput {
    /// The output for a plan: summaries and the capped diff preview.
    pub fn new<K>(plan: &PatchPlan<K>, dry_run: bool) -> Self {
        let mut files = Vec::with_capacity(plan.changes.len());
        let mut diff = String::new();
        for change in &plan.changes {
            let path = change.path.as_str();
            let (summary, new_name) = match (change.action, change.move_to.as_deref()) {
                (FileAction::Add, _) => (format!("A {path}"), path),
                (FileAction::Delete, _) => (format!("D {path}"), path),
                (FileAction::Move, Some(target)) => (format!("R {path} -> {target}"), target),
                _ => (format!("M {path}"), path),
            };
            diff.push_str(&file_diff(path, change.old.as_deref(), new_name, change.new.as_deref()));
            files.push(FileSummary {
                action: change.action,
                file_path: path.to_owned(),
                move_to: change.move_to.clone(),
                summary,
            });
        }
        let (preview, diff_truncated) = cap_preview(&diff);
        let count = files.len();
        let summary = if dry_run {
            format!("Patch preview ready for {count} file(s)")
        } else {
            format!("Applied patch to {count} file(s)")
        };
        let full_diff = diff_truncated.then_some(diff);
        Self { summary, file_count: count, files, diff: preview, diff_truncated, ref_id: None, full_diff }
    }
}

/// Parses `patch`, checks it against `files` and applies it to them, in memory.
///
/// # Errors
/// [`PatchError::Parse`] or [`PatchError::Rejected`]; `files` is then unchanged.
pub fn apply_to_memory(files: &mut MemoryFiles, patch: &str) -> Result<PatchOutput, PatchError> {
    let parsed = parse_patch(patch)?;
    let plan = plan_patch(&parsed, &*files)?;
    let output = PatchOutput::new(&plan, false);
    files.apply(plan);
    Ok(output)
}

/// Parses `patch`, checks it against the files below `sandbox` and, unless `dry_run`, writes it
/// all or nothing. This is the body of [`apply_patch()`].
///
/// # Errors
/// [`PatchError::Parse`] or [`PatchError::Rejected`] (nothing written), or
/// [`PatchError::WriteFailed`] / [`PatchError::RestoreFailed`] when the file system failed
/// while writing.
pub fn apply_patch_in(sandbox: &Sandbox, patch: &str, dry_run: bool) -> Result<PatchOutput, PatchError> {
    apply_unless_cancelled(sandbox, patch, dry_run, || false)
}

/// [`apply_patch_in`], asking `cancelled` once the files are read and checked, before the first
/// write: a patch cancelled by then writes nothing ([`PatchError::Cancelled`]). Once writing has
/// begun it runs to its end, so that the patch stays all or nothing.
fn apply_unless_cancelled(
    sandbox: &Sandbox,
    patch: &str,
    dry_run: bool,
    cancelled: impl Fn() -> bool,
) -> Result<PatchOutput, PatchError> {
    let parsed = parse_patch(patch)?;
    let plan = plan_patch(&parsed, &SandboxFiles::new(sandbox))?;
    if cancelled() {
        return Err(PatchError::Cancelled);
    }
    if !dry_run {
        disk::commit(sandbox, &plan.changes)?;
    }
    Ok(PatchOutput::new(&plan, dry_run))
}

/// The approval preview of an `apply_patch` call ([`Tool::preview`](tool_runtime::Tool::preview)):
/// the patch run as a dry run, `apply_patch: ` and its files' summaries (`A p`, `D p`, `M p`,
/// `R p -> q`, in patch order), then its unified diff ([`dry_run_preview`](crate::fs::dry_run_preview)).
fn patch_preview<'a>(
    arguments: &'a str,
    ctx: &'a ToolContext,
) -> tool_runtime::BoxFuture<'a, Result<String, tool_runtime::ToolError>> {
    Box::pin(crate::fs::dry_run_preview(apply_patch::TOOL, arguments, ctx, |output| {
        let files = output["files"].as_array().map(Vec::as_slice).unwrap_or_default();
        let summaries: Vec<&str> = files.iter().filter_map(|file| file["summary"].as_str()).collect();
        format!("apply_patch: {}", summaries.join(", "))
    }))
}

/// Change several files in one call, all or nothing: add, delete, update and rename. For one
/// change in one file, use edit.
///
/// ```text
/// *** Begin Patch
/// *** Add File: src/new.txt
/// +first line
/// *** Delete File: old.txt
/// *** Update File: a.py
/// *** Move to: b.py
/// @@ def f():
///  context line
/// -removed line
/// +added line
/// *** End Patch
/// ```
///
/// Paths are relative to the workspace root; `*** Move to` is optional. `@@` starts each chunk,
/// optionally with a line to find first. Give about 3 context lines around each change, chunks
/// in file order. Add fails on an existing file, Update and Delete on a missing one.
#[tool(set = "patch", resource(patch = "patch"), tags(destructive), preview = patch_preview)]
pub async fn apply_patch(
    patch: String,
    /// Only return the diff; write nothing.
    dry_run: Option<bool>,
    #[depends(SANDBOX)] sandbox: Sandbox,
    ctx: &ToolContext,
) -> Result<PatchOutput, PatchError> {
    // The patch is read, checked and written on the blocking pool; a cut diff is then kept whole
    // in the output cache. A runtime that shut down before the work ran wrote nothing.
    let token = ctx.cancellation().clone();
    let run = move || apply_unless_cancelled(&sandbox, &patch, dry_run.unwrap_or(false), || token.is_cancelled());
    let mut output = off_worker(run).await.ok_or(PatchError::Cancelled)??;
    if let Some(full) = output.full_diff.take() {
        output.ref_id = keep_full_diff(full, ctx).await;
    }
    Ok(output)
}
