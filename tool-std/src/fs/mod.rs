//! The "fs" set: [`read()`], [`read_line()`], [`write()`], [`edit()`], [`glob()`] and [`grep()`].
//!
//! Every path goes through the [`Sandbox`](crate::sandbox::Sandbox) of the call
//! ([`SANDBOX`](crate::sandbox::SANDBOX)); a refused path is the error
//! `Path escapes workspace: <p>`. A path is opened relative to the sandbox's handle on its root
//! (`openat2` with `RESOLVE_BENEATH`, or an `O_NOFOLLOW` walk), never by name after the check,
//! and only a regular file is read or replaced: a FIFO, socket or device node is refused at once
//! with `<p> is a FIFO (named pipe), not a regular file; ...` (see [`crate::sandbox`]). Paths in `glob`/`grep` outputs are relative to the sandbox root
//! with `/` separators (absolute when a full-access sandbox reaches outside the root); the other
//! tools echo the path as given. Limits come from [`FS_LIMITS`]. The tools do blocking file I/O
//! on tokio's blocking thread pool, never on an async worker: `read`, `read_line`, `glob` and
//! `grep` are plain `fn` tools (which run there; they say `blocking`), `write` and `edit` run
//! their body with `spawn_blocking`. They watch the call's cancellation token: `glob` and `grep` before each file,
//! `read` and `read_line` before each 64 KiB chunk; a cancelled tool stops there with
//! [`FsError::Cancelled`]. `write` and `edit` are not stopped once they run (a write is atomic).
//!
//! # `read`
//! Lines are split at `\n` (a `\r` before it is not shown, nor is a UTF-8 byte order mark);
//! numbers are 1-based, `{n:>5}` then two spaces. Lengths of lines are counted in extended
//! grapheme clusters, the output cap in UTF-8 bytes of the numbered lines (footers not counted;
//! at least one line is always shown). The footers, after one empty line and in this order:
//!
//! ```text
//! [truncated lines: 3, 7] Lines over 1000 graphemes are cut with "..."; read the rest of line 3 with read_line {"file_path":"a.txt","line_number":3,"char_offset":1000}
//! [output truncated at 65536 bytes] Use offset to read beyond line 812.
//! [showing lines 1-2000 of 5120] Use offset=2000 to read more.
//! [read_metadata] content_sha256=<64 lowercase hex digits of the whole file's SHA-256>
//! ```
//!
//! The byte-cap footer and the `showing lines` footer exclude each other; the `read_metadata`
//! footer is always there. A file is binary when its first 8 KiB hold a NUL byte or more than 10%
//! bytes that are not UTF-8 (a character cut by the end of that window, in a longer file, counts
//! as valid). A text file with some invalid UTF-8 further on shows U+FFFD for it. The file is
//! streamed in 64 KiB chunks: memory holds one chunk and the page, whatever the file's size.
//!
//! ## Files over the whole-file scan limit
//! A file of at most [`FsLimits::read_whole_file_scan_max_bytes`] bytes (8 MiB by default, env
//! `TOOL_READ_WHOLE_FILE_SCAN_MAX_BYTES`) is read to its end on every call, for the line count
//! and the whole-file SHA-256 above. A larger file is read only as far as the page (plus at most
//! one more line, and the rest of the 64 KiB chunk that holds its end, to know whether more
//! follow), so the time to a page depends on where it ends, not on the file's size. Its total line count and hash are then unknown, and the two
//! footers become:
//!
//! ```text
//! [showing lines 1-2000 of a 52428800-byte file; more lines follow] Use offset=2000 to read more.
//! [read_metadata] content_sha256 not computed: the file is 52428800 bytes, over the 8388608-byte whole-file scan limit, and was not read to its end; write and edit work without expected_hash
//! ```
//!
//! The other footers do not change. A call whose page reaches the end of the file has read all of
//! it and ends as for a small file, with the hash. An offset past the end is found only by reading to the end, so its error still
//! gives the exact line count. `read_line` follows the same rule: its `read_metadata` footer has
//! no hash when the file is over the limit and the line is not its last.
//!
//! # `read_line`
//! One line by grapheme window, for lines `read` cuts: see [`read_line()`].
//!
//! # `write` and `edit`
//! Both replace the file atomically (temporary file created in a handle on the same directory,
//! renamed over the old one there, permissions kept, parents created by `mkdirat` through
//! handles), read an existing file of at most [`REWRITE_MAX_FILE_BYTES`] (64 MiB), refuse with nothing written when `expected_hash` does
//! not match the file, and return JSON with a [diff preview](diff_preview) (unified, 3 lines of
//! context, at most 120 lines / 16 KiB, head and tail kept around `...[N lines omitted]...`, and
//! `diff_truncated: true` then). The rules of the replacement are those of [`replace`].
//! The full diff of a cut preview ([`DiffPreview::full`]) is kept in the output cache
//! (`OUTPUT_STORE`) under a ref id of its own in the call's scope, named by `ref_id` in the output,
//! so the model can read all of it with `tool_output_cache`.
//!
//! # `glob` and `grep`
//! Both walk with ripgrep's `ignore` crate: `.gitignore`, `.ignore` and `.git/info/exclude` are
//! respected (also outside a git repository) unless `include_ignored` is true, hidden files are
//! searched, `.git` is always skipped, symlinks are not followed, and each file found is opened
//! again through the root handle (a FIFO, socket or device node, or a file reached through a
//! directory swapped for a symlink that points out, is skipped). Results are in path order: depth
//! first, names compared byte-wise, so `a/b.txt` comes before `a.txt`. `glob` matches its pattern
//! against the path relative to `path` with `*` not crossing `/`. `grep` prints `path:line: text`
//! for a matching line and `path-line- text` for a context line, `--` between groups that are not
//! adjacent; `include` has `.gitignore` syntax (`*.rs` matches at any depth). Files with a NUL
//! byte are skipped. A line over 500 graphemes is shown as a 200-grapheme window around its first
//! match, with `[showing columns a-b of n]`. Limits count files (`glob`) and matching lines
//! (`grep`, context lines not counted); the footer after them is `[showing N of M files]` /
//! `[showing N of M matching lines]` plus a hint. No match is the success text
//! `No matches for: <pattern>`.

mod diff;
mod edit_file;
mod error;
mod glob_files;
mod grep_files;
mod limits;
mod read_file;
mod replace;
mod scan;
pub(crate) mod text;
mod walk;
mod write_file;

pub use diff::{DIFF_CONTEXT_LINES, DiffPreview, diff_preview};
pub(crate) use diff::{dry_run_preview, keep_full_diff};
pub use edit_file::*;
pub use error::FsError;
pub use glob_files::*;
pub use grep_files::*;
pub use limits::{FS_LIMITS, FsLimits, READ_MAX_OUTPUT_BYTES_ENV, READ_WHOLE_FILE_SCAN_MAX_BYTES_ENV};
pub use read_file::*;
pub use replace::{BLOCK_ANCHOR_MIN_SIMILARITY, MatchMode, ReplaceError, Replaced, Replacement, replace};
pub use write_file::{REWRITE_MAX_FILE_BYTES, WriteOutput, write};
