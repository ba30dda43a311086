//! Reading a stored output by line: a cursor from a line number, with the line index a store
//! keeps (a checkpoint every [`CHECKPOINT_LINES`] lines).

use std::fmt;
use std::io::{self, BufRead, BufReader};

use super::{CHECKPOINT_LINES, OutputStore, StoreError};

/// A cursor over the lines of a stored output, from 0-based `line` on ([`open_lines`]).
pub struct LineCursor {
    reader: Box<dyn BufRead + Send>,
    next: u64,
    ref_id: String,
}

impl fmt::Debug for LineCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineCursor").field("ref_id", &self.ref_id).field("next", &self.next).finish()
    }
}

/// The beginning of one line, as read by [`LineCursor::next_line`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinePrefix {
    /// The 0-based line number.
    pub line: u64,
    /// At most the asked number of bytes of the line (no `\n`), cut back to a character boundary;
    /// invalid UTF-8 shows as U+FFFD.
    pub text: String,
    /// Bytes of the whole line (no `\n`).
    pub len: u64,
}

/// A cursor at the start of 0-based `line`: it seeks to the nearest checkpoint and skips at most
/// [`CHECKPOINT_LINES`] lines, streaming.
///
/// # Errors
/// [`StoreError::LinePastEnd`] (with the 1-based line) when `line` is not below the line count, and
/// the errors of [`OutputStore::info`]. [`StoreError::Io`] when the text ends before `line` although
/// the line count says it is there (a damaged store, or an output replaced while it was opened).
pub fn open_lines(store: &dyn OutputStore, ref_id: &str, line: u64) -> Result<LineCursor, StoreError> {
    let info = store.info(ref_id)?;
    if line >= info.lines && !(line == 0 && info.lines == 0) {
        return Err(StoreError::LinePastEnd {
            ref_id: ref_id.to_owned(),
            line: line.saturating_add(1),
            lines: info.lines,
        });
    }
    let (at, offset) = store.checkpoint(ref_id, line)?;
    let reader = BufReader::with_capacity(64 * 1024, store.open_at(ref_id, offset)?);
    let mut cursor = LineCursor { reader: Box::new(reader), next: at, ref_id: ref_id.to_owned() };
    while cursor.next < line {
        // At the end of the text the cursor stays where it is: stop there, not loop.
        if !cursor.skip_line().map_err(|e| StoreError::io(ref_id, e))? {
            return Err(StoreError::io(
                ref_id,
                format_args!(
                    "its text ends before line {} of the {} lines its index counts: it is damaged or was replaced; call the tool again",
                    line + 1,
                    info.lines
                ),
            ));
        }
    }
    Ok(cursor)
}

impl LineCursor {
    /// The 0-based number of the line the cursor is at.
    pub fn position(&self) -> u64 {
        self.next
    }

    /// Streams the next line's bytes (without its `\n`) to `chunk`, in pieces; `false` at the end.
    ///
    /// # Errors
    /// The read error.
    pub fn stream_line(&mut self, mut chunk: impl FnMut(&[u8])) -> io::Result<bool> {
        let mut any = false;
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                if any {
                    self.next += 1;
                }
                return Ok(any);
            }
            any = true;
            match memchr::memchr(b'\n', buf) {
                Some(i) => {
                    chunk(&buf[..i]);
                    self.reader.consume(i + 1);
                    self.next += 1;
                    return Ok(true);
                }
                None => {
                    let n = buf.len();
                    chunk(buf);
                    self.reader.consume(n);
                }
            }
        }
    }

    /// Skips the next line; `false` at the end.
    ///
    /// # Errors
    /// The read error.
    pub fn skip_line(&mut self) -> io::Result<bool> {
        self.stream_line(|_| {})
    }

    /// The next line, keeping at most `keep` bytes of it; `None` at the end.
    ///
    /// # Errors
    /// The read error.
    pub fn next_line(&mut self, keep: usize) -> io::Result<Option<LinePrefix>> {
        let line = self.next;
        let mut kept: Vec<u8> = Vec::new();
        let mut len = 0u64;
        let found = self.stream_line(|piece| {
            len += piece.len() as u64;
            let room = keep.saturating_sub(kept.len());
            kept.extend_from_slice(&piece[..room.min(piece.len())]);
        })?;
        if !found {
            return Ok(None);
        }
        if (kept.len() as u64) < len {
            // Cut back to a character boundary: drop a trailing incomplete character.
            if let Err(e) = std::str::from_utf8(&kept)
                && e.error_len().is_none()
            {
                kept.truncate(e.valid_up_to());
            }
        }
        Ok(Some(LinePrefix { line, text: String::from_utf8_lossy(&kept).into_owned(), len }))
    }
}

/// Builds the line count and the checkpoints while the text streams in.
#[derive(Debug, Default)]
pub(crate) struct IndexBuilder {
    pub(crate) bytes: u64,
    newlines: u64,
    last: Option<u8>,
    /// The byte offsets of the checkpoints after the first (line 0 at byte 0, implied): a text
    /// shorter than [`CHECKPOINT_LINES`] lines, most of them, needs no allocation here.
    pub(crate) checkpoints: Vec<u64>,
}

impl IndexBuilder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        for i in memchr::memchr_iter(b'\n', chunk) {
            self.newlines += 1;
            if self.newlines.is_multiple_of(CHECKPOINT_LINES) {
                self.checkpoints.push(self.bytes + i as u64 + 1);
            }
        }
        self.bytes += chunk.len() as u64;
        if let Some(&b) = chunk.last() {
            self.last = Some(b);
        }
    }

    pub(crate) fn lines(&self) -> u64 {
        self.newlines + u64::from(self.last.is_some_and(|b| b != b'\n'))
    }
}

/// The checkpoint at or before 0-based `line`: `(its line, its byte offset)`. `later` holds the
/// byte offsets of the checkpoints after the first (line 0 at byte 0).
pub(super) fn checkpoint_of(later: &[u64], line: u64) -> (u64, u64) {
    let k = usize::try_from(line / CHECKPOINT_LINES).unwrap_or(usize::MAX).min(later.len());
    match k.checked_sub(1) {
        Some(i) => (k as u64 * CHECKPOINT_LINES, later[i]),
        None => (0, 0),
    }
}
