//! The `read` tool.

use tool_runtime::tool;

use super::error::FsError;
use super::limits::{FS_LIMITS, FsLimits};
use super::text::{cut_graphemes, metadata_footer, sniff_binary};
use crate::sandbox::{SANDBOX, Sandbox};

/// Read a UTF-8 text file. Each line is shown as its 1-based number right-aligned in 5 columns,
/// two spaces, then the text.
///
/// Lines longer than 1000 graphemes are cut with "..." and listed in a `[truncated lines: ...]`
/// footer with a read_line call for the rest. At most 64 KiB of lines are returned per call; a
/// footer then says which offset to continue from. The output always ends with
/// `[read_metadata] content_sha256=<hex>`, the SHA-256 of the whole file. An empty file reads as
/// one empty line 1. An offset past the end, a directory and a binary file are errors.
#[tool(set = "fs")]
pub fn read(
    /// Path of the file, relative to the workspace root.
    file_path: String,
    /// 0-based line to start at (default 0).
    offset: Option<usize>,
    /// How many lines to show (default 2000).
    limit: Option<usize>,
    #[depends(SANDBOX)] sandbox: Sandbox,
    #[depends(FS_LIMITS)] limits: FsLimits,
) -> Result<String, FsError> {
    let offset = offset.unwrap_or(0);
    let limit = limit.unwrap_or(limits.read_default_lines);
    if limit == 0 {
        return Err(FsError::TooSmall { field: "limit", value: 0, min: 1 });
    }
    let real = sandbox.resolve(&file_path)?;
    let metadata = std::fs::metadata(&real).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => FsError::FileNotFound { path: file_path.clone() },
        _ => FsError::io(&file_path, &e),
    })?;
    if metadata.is_dir() {
        return Err(FsError::IsDirectory { path: file_path });
    }
    if !metadata.is_file() {
        return Err(FsError::Io { path: file_path, message: "not a regular file".to_owned() });
    }
    let bytes = std::fs::read(&real).map_err(|e| FsError::io(&file_path, &e))?;
    if let Some(reason) = sniff_binary(&bytes) {
        return Err(FsError::Binary { path: file_path, reason });
    }
    let text = String::from_utf8_lossy(&bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let lines: Vec<&str> = if text.is_empty() { vec![""] } else { text.lines().collect() };
    if offset >= lines.len() {
        return Err(FsError::OffsetPastEnd { path: file_path, offset, lines: lines.len() });
    }

    let end = offset.saturating_add(limit).min(lines.len());
    let mut body = String::new();
    let mut cut_lines: Vec<usize> = Vec::new();
    let mut last_shown = offset;
    let mut capped = false;
    for (index, line) in lines[offset..end].iter().enumerate() {
        let number = offset + index + 1;
        let (shown, cut) = cut_graphemes(line, limits.read_max_line_graphemes);
        let entry = format!("{number:>5}  {shown}{}", if cut { "..." } else { "" });
        let separator = usize::from(!body.is_empty());
        if !body.is_empty() && body.len() + separator + entry.len() > limits.read_max_output_bytes {
            capped = true;
            break;
        }
        if separator == 1 {
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
        let list = cut_lines.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
        let max = limits.read_max_line_graphemes;
        let path = serde_json::Value::String(file_path.clone());
        footers.push(format!(
            "[truncated lines: {list}] Lines over {max} graphemes are cut with \"...\"; read the rest of line \
             {first} with read_line {{\"file_path\":{path},\"line_number\":{first},\"char_offset\":{max}}}"
        ));
    }
    if capped {
        footers.push(format!(
            "[output truncated at {} bytes] Use offset to read beyond line {last_shown}.",
            limits.read_max_output_bytes
        ));
    } else if end < lines.len() {
        footers.push(format!(
            "[showing lines {}-{last_shown} of {}] Use offset={last_shown} to read more.",
            offset + 1,
            lines.len()
        ));
    }
    footers.push(metadata_footer(&bytes));
    Ok(format!("{body}\n\n{}", footers.join("\n")))
}
