//! The `write` tool, and the atomic replace and `expected_hash` guard it shares with `edit`.

use std::io::Write as _;
use std::path::Path;

use schemars::JsonSchema;
use serde::Serialize;
use tool_runtime::{ToolContext, tool};

use super::diff::{diff_preview, keep_full_diff};
use super::error::FsError;
use super::limits::{FS_LIMITS, FsLimits};
use super::text::sha256_hex;
use crate::sandbox::{SANDBOX, Sandbox};
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
#[tool(set = "fs", output_schema, tags(destructive, idempotent))]
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
        let real = sandbox.resolve(&file_path)?;
        let old = read_existing(&real, &file_path)?;
        check_hash(&file_path, old.as_deref(), expected.as_deref())?;
        atomic_write(&real, content.as_bytes()).map_err(|e| FsError::write(&file_path, &e))?;

        let old_text = old.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
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

/// The current bytes of the file at `real`, or `None` when it does not exist.
///
/// # Errors
/// [`FsError::WriteToDirectory`] for a directory, [`FsError::Write`] when a parent is a file,
/// [`FsError::Io`] when it cannot be read.
pub(crate) fn read_existing(real: &Path, path: &str) -> Result<Option<Vec<u8>>, FsError> {
    match std::fs::metadata(real) {
        Ok(metadata) if metadata.is_dir() => Err(FsError::WriteToDirectory { path: path.to_owned() }),
        Ok(_) => std::fs::read(real).map(Some).map_err(|e| FsError::io(path, &e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        // A parent of the path is a file: nothing can be created there.
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => Err(FsError::write(path, &e)),
        Err(e) => Err(FsError::io(path, &e)),
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

/// Replaces the file at `real` with `bytes` atomically: parents are created, the bytes go to a
/// temporary file in the same directory (flushed to disk), which takes the old file's
/// permissions and is renamed over it. On any error the old file is untouched and the temporary
/// file is removed.
pub(crate) fn atomic_write(real: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = real.parent().ok_or_else(|| std::io::Error::other("the path has no parent directory"))?;
    std::fs::create_dir_all(parent)?;
    let permissions = std::fs::metadata(real).ok().map(|m| m.permissions());
    let name = real.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        // A new file gets the usual mode (0666 less the umask), not the 0600 of temporary files.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut temp = builder.tempfile_in(parent)?;
    temp.write_all(bytes)?;
    if let Some(permissions) = permissions {
        temp.as_file().set_permissions(permissions)?;
    }
    temp.as_file().sync_all()?;
    temp.persist(real).map_err(|e| e.error)?;
    Ok(())
}
