//! The `read` and `read_line` tools.

use std::fs::File;

use tool_runtime::{ToolContext, tool};
use unicode_segmentation::UnicodeSegmentation;

use super::error::FsError;
use super::limits::{FS_LIMITS, FsLimits};
use super::scan::{ScanError, ScanSummary, Scanned, scan_lines};
use super::text::{cut_graphemes, metadata_footer, unhashed_metadata_footer};
use crate::sandbox::{Kind, OpenError, SANDBOX, Sandbox};

/// How many bytes of one line `read` looks at to cut it (1 MiB): enough for the 1000 graphemes it
/// shows of any realistic text; `read_line` reads lines whole.
const READ_KEEP_LINE_BYTES: usize = 1024 * 1024;

/// Read a UTF-8 text file as numbered lines, at most `limit` lines and 40 KiB a page. Read before
/// you edit; grep searches many files.
#[tool(set = "fs", blocking, tags(read_only))]
pub fn read(
    /// Relative to the workspace root.
    file_path: String,
    /// 0-based first line.
    #[arg(range(max = 9007199254740991))]
    offset: Option<usize>,
    /// Lines to show (default 1500).
    #[arg(range(min = 1, max = 100000))]
    limit: Option<usize>,
    #[depends(SANDBOX)] sandbox: Sandbox,
    #[depends(FS_LIMITS)] limits: FsLimits,
    ctx: &ToolContext,
) -> Result<String, FsError> {
    let offset = offset.unwrap_or(0);
    let limit = limit.unwrap_or(limits.read_default_lines);
    if limit == 0 {
        return Err(FsError::TooSmall { field: "limit", value: 0, min: 1 });
    }
    let (file, size) = open_text_file(&sandbox, &file_path)?;
    let stop_early = size > limits.read_whole_file_scan_max_bytes;

    let mut body = String::new();
    let mut cut_lines: Vec<usize> = Vec::new();
    let mut last_shown = offset;
    let mut capped = false;
    let scanned = scan(&file_path, "read", ctx, file, offset, READ_KEEP_LINE_BYTES, stop_early, |line| {
        let number = line.index + 1;
        let text = String::from_utf8_lossy(line.bytes);
        let (shown, cut) = cut_graphemes(&text, limits.read_max_line_graphemes);
        let cut = cut || !line.whole;
        let entry = format!("{number:>5}  {shown}{}", if cut { "..." } else { "" });
        let separator = usize::from(!body.is_empty());
        if !body.is_empty() && body.len() + separator + entry.len() > limits.read_max_output_bytes {
            capped = true;
            return false;
        }
        if separator == 1 {
            body.push('\n');
        }
        body.push_str(&entry);
        if cut {
            cut_lines.push(number);
        }
        last_shown = number;
        number < offset.saturating_add(limit)
    })?;
    // A pass stops early only after showing a line, so an offset past the end is always found
    // by a pass that read every byte, and its error gives the exact line count.
    let summary = match scanned {
        Scanned::Whole(summary) if offset >= summary.lines => {
            return Err(FsError::OffsetPastEnd { path: file_path, offset, lines: summary.lines });
        }
        Scanned::Whole(summary) => Some(summary),
        Scanned::Stopped => None,
    };

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
    } else {
        let first = offset + 1;
        match &summary {
            Some(summary) if last_shown < summary.lines => footers.push(format!(
                "[showing lines {first}-{last_shown} of {}] Use offset={last_shown} to read more.",
                summary.lines
            )),
            Some(_) => {}
            None => footers.push(format!(
                "[showing lines {first}-{last_shown} of a {size}-byte file; more lines follow] Use \
                 offset={last_shown} to read more."
            )),
        }
    }
    footers.push(read_metadata(summary.as_ref(), size, &limits));
    Ok(format!("{body}\n\n{}", footers.join("\n")))
}

/// Read part of one line that read cut at 1000 characters (graphemes).
#[tool(set = "fs", blocking, tags(read_only))]
pub fn read_line(
    /// Relative to the workspace root.
    file_path: String,
    /// 1-based.
    #[arg(range(min = 1, max = 9007199254740991))]
    line_number: usize,
    /// 0-based first character.
    #[arg(range(max = 9007199254740991))]
    char_offset: Option<usize>,
    /// Characters to show (default 10000).
    #[arg(range(min = 1, max = 100000))]
    char_limit: Option<usize>,
    #[depends(SANDBOX)] sandbox: Sandbox,
    #[depends(FS_LIMITS)] limits: FsLimits,
    ctx: &ToolContext,
) -> Result<String, FsError> {
    if line_number == 0 {
        return Err(FsError::TooSmall { field: "line_number", value: 0, min: 1 });
    }
    let char_offset = char_offset.unwrap_or(0);
    let char_limit = char_limit.unwrap_or(limits.read_line_default_graphemes);
    if !(1..=limits.read_line_max_graphemes).contains(&char_limit) {
        return Err(FsError::OutOfRange {
            field: "char_limit",
            value: char_limit,
            min: 1,
            max: limits.read_line_max_graphemes,
        });
    }
    let (file, size) = open_text_file(&sandbox, &file_path)?;
    let stop_early = size > limits.read_whole_file_scan_max_bytes;
    let mut found: Option<String> = None;
    let scanned = scan(&file_path, "read_line", ctx, file, line_number - 1, usize::MAX, stop_early, |line| {
        found = Some(String::from_utf8_lossy(line.bytes).into_owned());
        false
    })?;
    // A pass stops early only after handing the line over, so a line past the end is always found
    // by a pass that read every byte, and its error gives the exact line count.
    let (text, footer) = match (found, scanned) {
        (Some(text), Scanned::Whole(summary)) => (text, read_metadata(Some(&summary), size, &limits)),
        (Some(text), Scanned::Stopped) => (text, read_metadata(None, size, &limits)),
        (None, scanned) => {
            let lines = match scanned {
                Scanned::Whole(summary) => summary.lines,
                Scanned::Stopped => line_number - 1,
            };
            return Err(FsError::LinePastEnd { path: file_path, line: line_number, lines });
        }
    };

    let bounds: Vec<usize> = text.grapheme_indices(true).map(|(i, _)| i).collect();
    let length = bounds.len();
    if char_offset > 0 && char_offset >= length {
        return Err(FsError::CharOffsetPastEnd { path: file_path, line: line_number, offset: char_offset, length });
    }
    let end = char_offset.saturating_add(char_limit).min(length);
    let byte = |grapheme: usize| bounds.get(grapheme).copied().unwrap_or(text.len());
    let segment = &text[byte(char_offset)..byte(end)];
    let mut out =
        format!("line_number={line_number} line_length={length} char_range={char_offset}..{end}\n{segment}\n\n");
    if end < length {
        out.push_str(&format!("Use char_offset={end} to continue.\n"));
    }
    out.push_str(&footer);
    Ok(out)
}

/// Opens `path` through the sandbox's root handle as a regular file for reading; with its size in
/// bytes (`fstat` of the handle).
///
/// # Errors
/// The sandbox's (a FIFO, socket or device node is [`SandboxError::NotRegularFile`](crate::sandbox::SandboxError::NotRegularFile)),
/// [`FsError::FileNotFound`], [`FsError::IsDirectory`], [`FsError::Io`].
pub(crate) fn open_text_file(sandbox: &Sandbox, path: &str) -> Result<(File, u64), FsError> {
    let file = match sandbox.open(path) {
        Ok((file, Kind::File)) => file,
        Ok((_, Kind::Directory)) => return Err(FsError::IsDirectory { path: path.to_owned() }),
        Err(OpenError::Refused(refused)) => return Err(refused.into()),
        Err(OpenError::NotFound(_)) => return Err(FsError::FileNotFound { path: path.to_owned() }),
        Err(OpenError::Io(e)) => return Err(FsError::io(path, &e)),
    };
    let size = file.metadata().map_err(|e| FsError::io(path, &e))?.len();
    Ok((file, size))
}

/// The `[read_metadata]` footer of a file of `size` bytes: its hash when the pass read every byte
/// (`summary`), else why there is none.
fn read_metadata(summary: Option<&ScanSummary>, size: u64, limits: &FsLimits) -> String {
    match summary {
        Some(summary) => metadata_footer(&summary.sha256),
        None => unhashed_metadata_footer(size, limits.read_whole_file_scan_max_bytes),
    }
}

/// [`scan_lines`] for the tool `tool`, stopping at the next chunk once `ctx` is cancelled, with
/// its errors as the model reads them.
#[allow(clippy::too_many_arguments)]
fn scan(
    path: &str,
    tool: &'static str,
    ctx: &ToolContext,
    file: File,
    from_line: usize,
    keep_bytes: usize,
    stop_early: bool,
    visit: impl FnMut(super::scan::Line<'_>) -> bool,
) -> Result<Scanned, FsError> {
    scan_lines(file, from_line, keep_bytes, stop_early, || ctx.is_cancelled(), visit).map_err(|e| match e {
        ScanError::Binary(reason) => FsError::Binary { verb: "read", path: path.to_owned(), reason },
        ScanError::Io(e) => FsError::io(path, &e),
        ScanError::Cancelled => FsError::Cancelled { tool },
    })
}
