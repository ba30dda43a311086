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
    /// `read`: nothing exists at the path.
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
    /// `read`: the path is a directory.
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
    /// `read`: the file sniffs as binary.
    #[error("Cannot read binary file: {path} ({reason}); read shows UTF-8 text only")]
    Binary {
        /// The path as given.
        path: String,
        /// `contains a NUL byte`, or `more than 10% of its first 8 KiB is not UTF-8`.
        reason: &'static str,
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
    /// Any other I/O failure.
    #[error("Cannot read {path}: {message}")]
    Io {
        /// The path as given (or as shown, for a file found while walking).
        path: String,
        /// The operating system's message.
        message: String,
    },
}

impl FsError {
    pub(crate) fn io(path: &str, error: &std::io::Error) -> Self {
        Self::Io { path: path.to_owned(), message: error.to_string() }
    }
}
