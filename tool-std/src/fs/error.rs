//! What the fs tools tell the model when a call fails.

use crate::sandbox::SandboxError;

/// Why an fs tool failed. The `Display` text is the error result the model reads; paths are the
/// ones the model gave.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// The sandbox refused the path.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// `read`, `read_line`: nothing exists at the path.
    #[error("File not found: {path}")]
    FileNotFound {
        /// The path as given.
        path: String,
    },
    /// `glob`, `grep`: the `path` to search does not exist.
    #[error("Path not found: {path}")]
    PathNotFound {
        /// The path as given.
        path: String,
    },
    /// `read`, `read_line`: the path is a directory.
    #[error("Not a file: {path} is a directory; use glob to list its files")]
    IsDirectory {
        /// The path as given.
        path: String,
    },
    /// `glob`: the `path` to search is a file.
    #[error("Not a directory: {path}; glob searches below a directory")]
    NotADirectory {
        /// The path as given.
        path: String,
    },
    /// `read`, `read_line`, `edit`: the file sniffs as binary.
    #[error("Cannot {verb} binary file: {path} ({reason}); {verb} works on UTF-8 text only")]
    Binary {
        /// `read` or `edit`.
        verb: &'static str,
        /// The path as given.
        path: String,
        /// `contains a NUL byte`, or `more than 10% of its first 8 KiB is not UTF-8`.
        reason: &'static str,
    },
    /// `edit`: the file passed the binary sniff but is not valid UTF-8 further on.
    #[error(
        "Cannot edit {path}: it is not valid UTF-8 (first bad byte at offset {offset}); edit changes UTF-8 text \
         only, use write to replace the whole file"
    )]
    NotUtf8 {
        /// The path as given.
        path: String,
        /// 0-based byte offset of the first invalid byte (after a byte order mark, if any).
        offset: usize,
    },
    /// `read_line`: `line_number` is past the last line.
    #[error(
        "Line {line} is past the end of {path} ({lines} {}); use a line_number from 1 to {lines}",
        if *.lines == 1 { "line" } else { "lines" }
    )]
    LinePastEnd {
        /// The path as given.
        path: String,
        /// The 1-based line asked for.
        line: usize,
        /// The number of lines in the file (at least 1).
        lines: usize,
    },
    /// `read_line`: `char_offset` is at or past the end of a non-empty line (or above 0 on an
    /// empty line).
    #[error(
        "char_offset {offset} is past the end of line {line} of {path} ({length} graphemes); use a char_offset from \
         0 to {}",
        .length.saturating_sub(1)
    )]
    CharOffsetPastEnd {
        /// The path as given.
        path: String,
        /// The 1-based line.
        line: usize,
        /// The 0-based grapheme offset asked for.
        offset: usize,
        /// The line's length in grapheme clusters.
        length: usize,
    },
    /// `write`, `edit`: `expected_hash` is not 64 hex digits.
    #[error(
        "expected_hash must be the 64 hex digits of a content_sha256 footer, got `{value}`; copy it from the \
         [read_metadata] line of read, or leave expected_hash out when that line says it was not computed"
    )]
    InvalidHash {
        /// The value given.
        value: String,
    },
    /// `write`, `edit`: the file changed since the model read it.
    #[error(
        "{path} changed since it was read (its content_sha256 is {actual}, expected_hash was {expected}); read it \
         again and redo the change on the current content. Nothing was written"
    )]
    HashMismatch {
        /// The path as given.
        path: String,
        /// The hash the call gave (lowercase).
        expected: String,
        /// The hash of the file now.
        actual: String,
    },
    /// `write`, `edit`: `expected_hash` was given for a file that does not exist.
    #[error(
        "expected_hash was given but {path} does not exist (it was moved or deleted since it was read); read the \
         directory again, or omit expected_hash to create the file. Nothing was written"
    )]
    HashForMissingFile {
        /// The path as given.
        path: String,
    },
    /// `edit`: the file does not exist and `old_string` is not empty.
    #[error("File not found: {path}; to create it, call edit with an empty old_string, or use write")]
    EditFileNotFound {
        /// The path as given.
        path: String,
    },
    /// `edit`: `old_string` is empty but the file has content.
    #[error(
        "old_string is empty but {path} is not empty ({bytes} bytes); an empty old_string only creates a file or \
         fills an empty one. Give the text to replace, or use write to replace the whole file"
    )]
    EmptyOldString {
        /// The path as given.
        path: String,
        /// The file's size.
        bytes: u64,
    },
    /// `edit`: `old_string` was not found with the mode(s) tried.
    #[error(
        "old_string not found in {path} (match_mode {tried}); read the file again and copy the text to replace \
         exactly, with enough surrounding lines to be unique"
    )]
    OldStringNotFound {
        /// The path as given.
        path: String,
        /// The modes tried, e.g. `auto: exact, line_trimmed, block_anchor`.
        tried: String,
    },
    /// `edit`: `old_string` matches more than once and neither `replace_all` nor
    /// `expected_replacements` allows it.
    #[error(
        "old_string matches {count} places (lines {}); add context or set replace_all",
        list_lines(.lines)
    )]
    Ambiguous {
        /// The path as given.
        path: String,
        /// How many places match.
        count: usize,
        /// The 1-based first line of each match.
        lines: Vec<usize>,
    },
    /// `edit`: the number of matches differs from `expected_replacements`.
    #[error(
        "expected_replacements is {expected} but old_string matches {count} {} in {path}{}; nothing was written",
        if *.count == 1 { "place" } else { "places" },
        if .lines.is_empty() { String::new() } else { format!(" (lines {})", list_lines(.lines)) }
    )]
    ReplacementCount {
        /// The path as given.
        path: String,
        /// `expected_replacements`.
        expected: usize,
        /// How many places match.
        count: usize,
        /// The 1-based first line of each match.
        lines: Vec<usize>,
    },
    /// `edit` with `match_mode: block_anchor`: `old_string` has fewer than 3 lines.
    #[error(
        "match_mode block_anchor needs an old_string of at least 3 lines (first and last are the anchors), got \
         {lines}; use exact or line_trimmed"
    )]
    BlockTooShort {
        /// The number of lines of `old_string`.
        lines: usize,
    },
    /// `write`, `edit`: the path is a directory.
    #[error("Not a file: {path} is a directory; give the path of a file")]
    WriteToDirectory {
        /// The path as given.
        path: String,
    },
    /// `write`, `edit`: the existing file is larger than
    /// [`REWRITE_MAX_FILE_BYTES`](super::REWRITE_MAX_FILE_BYTES).
    #[error(
        "{path} is over {max} bytes, more than write and edit read; nothing was written. Change it with a command \
         made for large files"
    )]
    TooLarge {
        /// The path as given.
        path: String,
        /// The limit in bytes.
        max: u64,
    },
    /// `glob`, `grep`: an ignore file in the searched directory or a parent of it is a FIFO,
    /// socket or device node (reading its rules would block).
    #[error(
        "{path} is {kind}, not a regular file, and glob and grep read it for ignore rules; remove it, or set \
         include_ignored to search without ignore files"
    )]
    SpecialIgnoreFile {
        /// The ignore file, as shown (relative to the root when inside it).
        path: String,
        /// As in [`SandboxError::NotRegularFile`].
        kind: &'static str,
    },
    /// `write`, `edit`: writing failed; the file is as it was.
    #[error("Cannot write {path}: {message}; nothing was changed")]
    Write {
        /// The path as given.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// `read`: `offset` is at or past the number of lines.
    #[error(
        "Offset {offset} is past the end of {path} ({lines} {}); use an offset from 0 to {}",
        if *.lines == 1 { "line" } else { "lines" },
        .lines - 1
    )]
    OffsetPastEnd {
        /// The path as given.
        path: String,
        /// The 0-based line asked for.
        offset: usize,
        /// The number of lines in the file (at least 1).
        lines: usize,
    },
    /// A numeric argument outside its range.
    #[error("{field} must be between {min} and {max}, got {value}")]
    OutOfRange {
        /// The argument's name.
        field: &'static str,
        /// The value given.
        value: usize,
        /// The smallest accepted value.
        min: usize,
        /// The largest accepted value.
        max: usize,
    },
    /// A numeric argument below its minimum.
    #[error("{field} must be at least {min}, got {value}")]
    TooSmall {
        /// The argument's name.
        field: &'static str,
        /// The value given.
        value: usize,
        /// The smallest accepted value.
        min: usize,
    },
    /// `glob`: the pattern, or `grep`: the `include` glob, does not parse.
    #[error("Invalid glob `{pattern}`: {message}")]
    InvalidGlob {
        /// The glob as given.
        pattern: String,
        /// The parser's message.
        message: String,
    },
    /// `grep`: the regex does not parse.
    #[error("Invalid regex `{pattern}`: {message}; fix it, or set regex=false to search for the text literally")]
    InvalidRegex {
        /// The pattern as given.
        pattern: String,
        /// The parser's message.
        message: String,
    },
    /// The call's cancellation token was cancelled, or the runtime shut down, before the tool
    /// finished. `glob` and `grep` stop before the next file, `read` and `read_line` before the
    /// next 64 KiB chunk; `write` and `edit` are cancelled only before they start, so nothing was
    /// written. (Through a registry the caller gets the registry's cancelled error instead.)
    #[error("`{tool}` was cancelled before it finished; call it again to run it to its end")]
    Cancelled {
        /// The tool's name.
        tool: &'static str,
    },
    /// Any other I/O failure.
    #[error("Cannot read {path}: {message}")]
    Io {
        /// The path as given (or as shown, for a file found while walking).
        path: String,
        /// The operating system's message.
        message: String,
    },
}

/// `1, 2, 3` (at most 20 numbers, then `...`).
fn list_lines(lines: &[usize]) -> String {
    let mut text = lines.iter().take(20).map(usize::to_string).collect::<Vec<_>>().join(", ");
    if lines.len() > 20 {
        text.push_str(", ...");
    }
    text
}

impl FsError {
    pub(crate) fn io(path: &str, error: &std::io::Error) -> Self {
        Self::Io { path: path.to_owned(), message: error.to_string() }
    }

    pub(crate) fn write(path: &str, error: &std::io::Error) -> Self {
        Self::Write { path: path.to_owned(), message: error.to_string() }
    }
}
