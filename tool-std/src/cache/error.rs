//! What the cache tools report when a call cannot be served.

use tool_runtime::output::{GrepError, StoreError};

/// Why a cache tool call failed; the text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The store could not serve the ref.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The search could not run.
    #[error(transparent)]
    Grep(#[from] GrepError),
    /// A numeric argument is out of its range.
    #[error("{field} must be between {min} and {max}, got {value}")]
    OutOfRange {
        /// The argument's name.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The smallest value accepted.
        min: u64,
        /// The largest value accepted.
        max: u64,
    },
    /// `offset` is at or past the last line.
    #[error(
        "offset {offset} is past the end of ref_id `{ref_id}`, which has {lines} lines; use an offset below {lines}"
    )]
    OffsetPastEnd {
        /// The ref id.
        ref_id: String,
        /// The 0-based offset given.
        offset: u64,
        /// The number of lines stored.
        lines: u64,
    },
    /// `char_offset` is past the end of the line.
    #[error(
        "char_offset {char_offset} is past the end of line {line_number}, which has {length} characters (graphemes)"
    )]
    CharOffsetPastEnd {
        /// The 1-based line.
        line_number: u64,
        /// The offset given.
        char_offset: usize,
        /// The line's length in graphemes.
        length: usize,
    },
    /// The pattern is empty.
    #[error("pattern must not be empty; give the text (or regex) to search for")]
    EmptyPattern,
    /// Reading the stored text failed.
    #[error("the output cache failed for ref_id `{ref_id}`: {message}")]
    Io {
        /// The ref id.
        ref_id: String,
        /// The error.
        message: String,
    },
}

impl CacheError {
    pub(crate) fn io(ref_id: &str, error: &std::io::Error) -> Self {
        Self::Io { ref_id: ref_id.to_owned(), message: error.to_string() }
    }
}
