//! The "cache" set: read back what the output layer stored.
//!
//! Every tool message the dispatcher finishes is stored in the output cache under a ref id the
//! output layer mints (the message's `ref_id`: 22 random characters of `[A-Za-z0-9_-]`), in
//! the scope of its call: its session and principal; see `tool_runtime::output`. A ref reads only
//! in the scope that made it: asked for a ref of another session or principal, these tools answer
//! exactly as for an unknown ref, and for a ref of this scope that the store let go (its time to
//! live passed, or the size cap evicted it) they say so and ask to run the tool again. They read
//! through the store of the registry, the
//! registry-scoped dependency [`OUTPUT_STORE`](tool_runtime::output::OUTPUT_STORE) (default: files
//! in the user's cache directory; override it to choose another store). They stream: a 1 GB output
//! is paged, read line by line and searched without loading it whole. Their own messages are not
//! stored again (`tool_runtime::output::CACHE_TOOLS`).
//!
//! - [`tool_output_cache()`]: numbered lines, like `read`: `{n:>5}` (1-based), two spaces, the text.
//!   Lines over 1000 graphemes are cut with `...` and listed in a `[truncated lines: ...]` footer
//!   with a ready `tool_output_cache_line` call; at most 64 KiB of numbered lines per call, then
//!   `[output truncated at 65536 bytes] Use offset=L to read more.`; otherwise, when lines remain,
//!   `[showing lines a-b of N] Use offset=b to read more.`. An output stored with images or
//!   documents gives them back as parts after the text of the first page (offset 0).
//! - [`tool_output_cache_grep()`]: `{n:>5}: text` for a matching line, `{n:>5}- text` for a context
//!   line; blocks of adjacent lines separated by one empty line; `... (truncated)` after the last
//!   block when more than `limit` lines match or the 64 KiB cap is reached; the success text
//!   `No matches for: <pattern>` when nothing matches. A line over 1000 bytes shows a window around
//!   its first match and a `tool_output_cache_line` call that starts at that window. Its
//!   parameters are `grep`'s where the two tools meet (`pattern`, `regex` (default true),
//!   `case_insensitive`, `before`, `after`, `limit` (default 100)), with one schema each.
//! - [`tool_output_cache_line()`]: one line by grapheme window, header
//!   `line_number=N line_length=G char_range=a..b`, the segment, then
//!   `Use char_offset=b to continue.` when more of the line remains.

mod error;
mod grep_cache;
mod line_cache;
mod read_cache;

pub use error::CacheError;
pub use grep_cache::*;
pub use line_cache::*;
pub use read_cache::*;

/// Graphemes of a line shown by `tool_output_cache` before it is cut with `...`.
pub const MAX_LINE_GRAPHEMES: usize = 1000;

/// Bytes of numbered lines (or matches) one call returns at most (64 KiB).
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// The ready call that reads the rest of a line.
pub(crate) fn line_call(ref_id: &str, line_number: u64, char_offset: usize) -> String {
    format!(
        "tool_output_cache_line {{\"ref_id\":{},\"line_number\":{line_number},\"char_offset\":{char_offset}}}",
        serde_json::Value::String(ref_id.to_owned())
    )
}
