//! The `write` tool, and the atomic replace and `expected_hash` guard it shares with `edit`.

use std::os::unix::fs::PermissionsExt as _;

use schemars::JsonSchema;
use serde::Serialize;
use tool_runtime::{ToolContext, tool};

use super::diff::{diff_preview, file_preview, keep_full_diff};
use super::error::FsError;
use super::limits::{FS_LIMITS, FsLimits};
use super::text::sha256_hex;
use crate::sandbox::{Kind, OpenError, SANDBOX, Sandbox, Target, read_capped};
use tool_runtime::off_worker;

/// What `write` returns (as JSON; its JSON Schema is the tool's output schema).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct WriteOutput {
    /// `Wrote N bytes to <file_path>` (N = UTF-8 bytes of `content`).
    pub summary: String,
    /// The path as given.
    pub file_path: String,
    /// `true` when the file did not exist before.
    pub created: bool,
    /// Lowercase hex SHA-256 of the new content, for the `expected_hash` of a later call.
    pub content_sha256: String,
    /// Unified diff of the old content (empty for a new file) to the new, capped at 120 lines /
    /// 16 KiB with head and tail kept (see [`diff_preview`]).
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

/// Write a whole UTF-8 file, creating it and its directories; atomic. To change part of a file use
/// edit.
#[tool(set = "fs", output_schema, resource(path = "file_path"), tags(destructive, idempotent), preview = write_preview)]
pub async fn write(
    /// Relative to the workspace root.
    file_path: String,
    /// The whole new content.
    content: String,
    /// content_sha256 of your last read; nothing is written if the file changed since.
    expected_hash: Option<String>,
    #[depends(SANDBOX)] sandbox: Sandbox,
    #[depends(FS_LIMITS)] limits: FsLimits,
    ctx: &ToolContext,
) -> Result<WriteOutput, FsError> {
    // The body runs on the blocking pool; a cut diff is then kept whole in the output cache.
    let run = move || -> Result<WriteOutput, FsError> {
        let expected = expected_hash.as_deref().map(parse_hash).transpose()?;
        let target = sandbox.target(&file_path)?;
        let old = read_existing(&sandbox, &target)?;
        check_hash(&file_path, old.as_ref().map(|o| &o.bytes[..]), expected.as_deref())?;
        atomic_write(&sandbox, &target, content.as_bytes(), old.as_ref().map(|o| o.mode))?;

        let old_text = old.as_ref().map(|o| String::from_utf8_lossy(&o.bytes)).unwrap_or_default();
        let diff = diff_preview(&file_path, &old_text, &content, limits.diff_max_lines, limits.diff_max_bytes);
        Ok(WriteOutput {
            summary: format!("Wrote {} bytes to {file_path}", content.len()),
            file_path,
            created: old.is_none(),
            content_sha256: sha256_hex(content.as_bytes()),
            diff: diff.preview,
            diff_truncated: diff.truncated,
            ref_id: None,
            full_diff: diff.truncated.then(|| diff.full.clone()),
        })
    };
    let mut output = off_worker(run).await.ok_or(FsError::Cancelled { tool: "write" })??;
    if let Some(full) = output.full_diff.take() {
        output.ref_id = keep_full_diff(full, ctx).await;
    }
    Ok(output)
}

/// The arguments of `write`, as its approval preview reads them (decoded by the tool's schema).
#[derive(serde::Deserialize)]
struct WriteArguments {
    file_path: String,
    content: String,
    expected_hash: Option<String>,
}

/// The approval preview of a `write` call ([`Tool::preview`](tool_runtime::Tool::preview)):
/// `write `<file_path>`` (with ` (new file)` when it does not exist) and the unified diff of the
/// file as it is to `content`, capped as `write`'s own `diff` is. Reads through the call's
/// sandbox on the blocking pool and writes nothing.
///
/// # Errors
/// The errors `write` would meet before writing: arguments that do not decode, a path outside
/// the workspace or not a regular file, an `expected_hash` that does not match.
fn write_preview<'a>(
    arguments: &'a str,
    ctx: &'a ToolContext,
) -> tool_runtime::BoxFuture<'a, Result<String, tool_runtime::ToolError>> {
    use tool_runtime::{Tool as _, ToolError};
    Box::pin(async move {
        let WriteArguments { file_path, content, expected_hash } =
            tool_runtime::decode::decode_arguments(arguments, || &write::TOOL.definition().input_schema)
                .map_err(|error| ToolError::InvalidArguments { tool: "write".to_owned(), error })?;
        let sandbox = ctx.resolve(&SANDBOX).await?;
        let limits = ctx.resolve(&FS_LIMITS).await?;
        let run = move || -> Result<String, FsError> {
            let expected = expected_hash.as_deref().map(parse_hash).transpose()?;
            let target = sandbox.target(&file_path)?;
            let old = read_existing(&sandbox, &target)?;
            check_hash(&file_path, old.as_ref().map(|o| &o.bytes[..]), expected.as_deref())?;
            let old_text = old.as_ref().map(|o| String::from_utf8_lossy(&o.bytes)).unwrap_or_default();
            let diff = diff_preview(&file_path, &old_text, &content, limits.diff_max_lines, limits.diff_max_bytes);
            let new = if old.is_none() { " (new file)" } else { "" };
            Ok(file_preview(&format!("write `{file_path}`{new}"), &diff.preview))
        };
        off_worker(run).await.unwrap_or(Err(FsError::Cancelled { tool: "write" })).map_err(ToolError::failed)
    })
}

/// `expected_hash` as 64 lowercase hex digits.
pub(crate) fn parse_hash(value: &str) -> Result<String, FsError> {
    let trimmed = value.trim();
    let trimmed = trimmed.strip_prefix("content_sha256=").unwrap_or(trimmed);
    if trimmed.len() == 64 && trimmed.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(trimmed.to_ascii_lowercase())
    } else {
        Err(FsError::InvalidHash { value: value.to_owned() })
    }
}

/// The largest existing file `write`, `edit` and `apply_patch` read (for its hash, its diff, its
/// replacement): 64 MiB = 67108864 bytes. At most one byte more is ever read, whatever the file's
/// size claims.
pub const REWRITE_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// A file as it was before a write.
pub(crate) struct Existing {
    /// Its bytes.
    pub(crate) bytes: Vec<u8>,
    /// Its permission bits (`fstat` of the handle read).
    pub(crate) mode: u32,
}

/// The current bytes of the file of `target` (opened through the sandbox's root handle), or
/// `None` when it does not exist.
///
/// # Errors
/// [`FsError::WriteToDirectory`] for a directory, [`FsError::Write`] when a parent is a file,
/// [`FsError::TooLarge`] over [`REWRITE_MAX_FILE_BYTES`], the sandbox's refusal (a FIFO, socket
/// or device node, a symlink swapped in), [`FsError::Io`] when it cannot be read.
pub(crate) fn read_existing(sandbox: &Sandbox, target: &Target) -> Result<Option<Existing>, FsError> {
    let path = target.given.as_str();
    let file = match sandbox.open_target(target) {
        Ok((_, Kind::Directory)) => return Err(FsError::WriteToDirectory { path: path.to_owned() }),
        Ok((file, Kind::File)) => file,
        Err(OpenError::NotFound(_)) => return Ok(None),
        // A parent of the path is a file: nothing can be created there.
        Err(OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotADirectory => return Err(FsError::write(path, &e)),
        Err(OpenError::Io(e)) => return Err(FsError::io(path, &e)),
        Err(OpenError::Refused(refused)) => return Err(refused.into()),
    };
    let mode = file.metadata().map_err(|e| FsError::io(path, &e))?.permissions().mode() & 0o7777;
    match read_capped(&file, REWRITE_MAX_FILE_BYTES).map_err(|e| FsError::io(path, &e))? {
        Some(bytes) => Ok(Some(Existing { bytes, mode })),
        None => Err(FsError::TooLarge { path: path.to_owned(), max: REWRITE_MAX_FILE_BYTES }),
    }
}

/// The `expected_hash` guard: the file must exist and hash to `expected`.
pub(crate) fn check_hash(path: &str, current: Option<&[u8]>, expected: Option<&str>) -> Result<(), FsError> {
    let Some(expected) = expected else { return Ok(()) };
    let Some(current) = current else {
        return Err(FsError::HashForMissingFile { path: path.to_owned() });
    };
    let actual = sha256_hex(current);
    if actual == expected {
        Ok(())
    } else {
        Err(FsError::HashMismatch { path: path.to_owned(), expected: expected.to_owned(), actual })
    }
}

/// Replaces the file of `target` with `bytes` atomically, through handles: missing parents are
/// made by `mkdirat` one component at a time, the bytes go to a temporary file created in a
/// handle on the parent (`O_CREAT | O_EXCL | O_NOFOLLOW`, flushed to disk), which takes `mode`
/// (the old file's permissions; a new file gets 0666 less the umask) and is renamed over the
/// target within that handle. On any error the old file is untouched and the temporary file is
/// removed.
///
/// # Errors
/// The sandbox's refusal (a symlink swapped in on the way), else [`FsError::Write`].
pub(crate) fn atomic_write(sandbox: &Sandbox, target: &Target, bytes: &[u8], mode: Option<u32>) -> Result<(), FsError> {
    let path = target.given.as_str();
    let slot = sandbox.slot(target, Some(&mut Vec::new())).map_err(|e| match e {
        OpenError::Refused(refused) => FsError::Sandbox(refused),
        OpenError::NotFound(e) | OpenError::Io(e) => FsError::write(path, &e),
    })?;
    slot.replace(bytes, mode).map_err(|e| FsError::write(path, &e))
}
