//! Spill files: a large result written to a content-addressed, read-only file, with a preview.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Results up to this many bytes stay inline; larger ones can be spilled (16 KiB = 16384).
/// Source: the Go seed's `InlineResultBytes`.
pub const INLINE_RESULT_BYTES: usize = 16 * 1024;

/// A spilled result: where the whole text is, and a preview of its beginning and end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpilledResult {
    /// The file holding the whole text: `<dir>/<24 hex digits>.txt`, the first 12 bytes of the
    /// text's SHA-256 in lowercase hex.
    pub path: PathBuf,
    /// Bytes of the whole text.
    pub total_bytes: usize,
    /// The beginning: 3/4 of [`INLINE_RESULT_BYTES`], cut back to a UTF-8 character boundary.
    pub head: String,
    /// The end: the last 1/4 of [`INLINE_RESULT_BYTES`], starting on a character boundary.
    pub tail: String,
}

impl SpilledResult {
    /// What the model sees: head, a marker naming the file and the omitted bytes, tail.
    pub fn preview(&self) -> String {
        let omitted = self.total_bytes - self.head.len() - self.tail.len();
        format!(
            "{}\n[... {omitted} bytes omitted; the whole output ({} bytes) is in {}]\n{}",
            self.head,
            self.total_bytes,
            self.path.display(),
            self.tail
        )
    }
}

/// Spills `content` to `dir` when it is over [`INLINE_RESULT_BYTES`]; `Ok(None)` when it fits
/// inline (nothing is written).
///
/// The file name is content-addressed, so a retry with the same content finds its file. It is
/// published without replacing: written to a temp file in `dir`, made read-only, then hard-linked
/// to its final name; when that name exists already (the same content spilled before), the existing
/// file is kept. `dir` is created when missing.
///
/// # Errors
/// The I/O error, with the path, when `dir` cannot be created or the file cannot be written.
pub fn spill_result(dir: &Path, content: &str) -> std::io::Result<Option<SpilledResult>> {
    if content.len() <= INLINE_RESULT_BYTES {
        return Ok(None);
    }
    let digest = Sha256::digest(content.as_bytes());
    let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    let path = dir.join(format!("{name}.txt"));
    let context =
        |what: &str, p: &Path, e: std::io::Error| std::io::Error::new(e.kind(), format!("{what} {}: {e}", p.display()));
    std::fs::create_dir_all(dir).map_err(|e| context("cannot create the spill directory", dir, e))?;
    if !path.exists() {
        let temp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), super::store::unique()));
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(content.as_bytes())?;
            file.sync_all()?;
            let mut permissions = file.metadata()?.permissions();
            permissions.set_readonly(true);
            std::fs::set_permissions(&temp, permissions)?;
            match std::fs::hard_link(&temp, &path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(e),
            }
        };
        let written = write();
        let _ = std::fs::remove_file(&temp);
        written.map_err(|e| context("cannot write the spill file", &path, e))?;
    }
    let mut head_end = INLINE_RESULT_BYTES * 3 / 4;
    while !content.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = content.len() - INLINE_RESULT_BYTES / 4;
    while !content.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    Ok(Some(SpilledResult {
        path,
        total_bytes: content.len(),
        head: content[..head_end].to_owned(),
        tail: content[tail_start..].to_owned(),
    }))
}
