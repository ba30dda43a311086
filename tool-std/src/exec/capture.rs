//! The output of one command as it arrives: all of it on disk, its head and tail in memory.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Bytes read from the command's pipe at a time.
const CHUNK_BYTES: usize = 64 * 1024;

/// The most often progress is reported while output arrives.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// The note that ends a result whose output was not valid UTF-8.
pub(crate) const LOSSY_NOTE: &str = "[note: the output is not valid UTF-8; invalid bytes are shown as U+FFFD]";

/// The output of one command: written to a file (the spill file, which the command cannot
/// write: it lies outside its writable directories) up to `max_bytes`, its first and last
/// `preview` bytes kept in memory. Memory stays at about `3 * preview` bytes plus one read chunk,
/// however long the output.
#[derive(Debug)]
pub(crate) struct Capture {
    path: PathBuf,
    preview: usize,
    max_bytes: u64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    written: u64,
    kept: u64,
    head: Vec<u8>,
    /// The last bytes; between `preview` and `2 * preview` long once that much has arrived.
    tail: Vec<u8>,
    utf8: Utf8Check,
    done: bool,
    error: Option<String>,
}

/// A snapshot of a capture's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    /// Bytes of output so far.
    pub(crate) written: u64,
    /// Bytes of it in the spill file: all of them, unless the output passed the cap (or writing
    /// the file failed).
    pub(crate) kept: u64,
    /// `true` when the pipe reached its end (every process holding it closed it).
    pub(crate) done: bool,
    /// `true` when some of the output so far is not valid UTF-8.
    pub(crate) lossy: bool,
    /// Why writing the spill file failed, when it did (the output past that point is lost).
    pub(crate) error: Option<String>,
}

impl Capture {
    /// A capture writing at most `max_bytes` to the new file `path`.
    pub(crate) fn create(path: PathBuf, preview: usize, max_bytes: u64) -> io::Result<(Self, File)> {
        let file = File::options().write(true).create_new(true).open(&path)?;
        Ok((Self { path, preview, max_bytes, state: Mutex::new(State::default()) }, file))
    }

    /// The spill file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The counters now.
    pub(crate) fn seen(&self) -> Seen {
        let state = self.state();
        Seen {
            written: state.written,
            kept: state.kept,
            done: state.done,
            lossy: state.utf8.invalid,
            error: state.error.clone(),
        }
    }

    /// Reads `pipe` to its end into `file` (up to the cap), keeping the head and tail, and calls
    /// `progress` with the bytes so far after the first chunk, then at most every 200 ms.
    /// Blocking: run it on a blocking thread.
    pub(crate) fn pump(&self, mut pipe: impl Read, mut file: File, progress: &dyn Fn(u64)) {
        let mut buffer = vec![0; CHUNK_BYTES];
        // The first chunk is reported at once, later ones at most every `PROGRESS_EVERY`.
        let mut reported: Option<Instant> = None;
        loop {
            let read = match pipe.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    self.state().error = Some(format!("reading the output failed: {error}"));
                    break;
                }
            };
            let chunk = &buffer[..read];
            let written = {
                let mut state = self.state();
                // Past the cap the output is still read (the command never waits on a full pipe),
                // its tail kept in memory, but no longer written.
                let room = usize::try_from(self.max_bytes - state.kept).unwrap_or(usize::MAX).min(chunk.len());
                if state.error.is_none() && room > 0 {
                    match file.write_all(&chunk[..room]) {
                        Ok(()) => state.kept += room as u64,
                        Err(error) => {
                            state.error =
                                Some(format!("writing the output to {} failed: {error}", self.path.display()));
                        }
                    }
                }
                state.keep(chunk, self.preview);
                state.written
            };
            if reported.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY) {
                progress(written);
                reported = Some(Instant::now());
            }
        }
        let mut state = self.state();
        state.utf8.finish();
        state.done = true;
    }

    /// The first and the last bytes of the output as text (lossy), when the whole is longer
    /// than both: the head cut after its last newline and the tail from after its first one
    /// (when they have one), each at most `max_lines` lines, and how many bytes lie between them.
    pub(crate) fn preview(&self, max_lines: usize) -> (String, u64, String) {
        let state = self.state();
        let mut head = match state.head.iter().rposition(|&b| b == b'\n') {
            Some(end) => &state.head[..=end],
            None => &state.head[..],
        };
        if let Some((end, _)) = head.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(max_lines.saturating_sub(1)) {
            head = &head[..=end];
        }
        let tail = &state.tail[state.tail.len().saturating_sub(self.preview)..];
        let mut tail = match tail.iter().position(|&b| b == b'\n') {
            Some(start) if start + 1 < tail.len() => &tail[start + 1..],
            _ => tail,
        };
        // The newline that ends the tail does not start another line.
        let body = tail.strip_suffix(b"\n").unwrap_or(tail);
        if let Some((start, _)) =
            body.iter().enumerate().rev().filter(|(_, b)| **b == b'\n').nth(max_lines.saturating_sub(1))
        {
            tail = &tail[start + 1..];
        }
        let omitted = state.written - head.len() as u64 - tail.len() as u64;
        (String::from_utf8_lossy(head).into_owned(), omitted, String::from_utf8_lossy(tail).into_owned())
    }

    /// Opens the spill file at `offset` for reading.
    pub(crate) fn open_at(&self, offset: u64) -> io::Result<File> {
        let mut file = File::open(&self.path)?;
        file.seek(SeekFrom::Start(offset))?;
        Ok(file)
    }
}

impl State {
    fn keep(&mut self, chunk: &[u8], preview: usize) {
        self.written += chunk.len() as u64;
        self.utf8.feed(chunk);
        let room = preview.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..room.min(chunk.len())]);
        self.tail.extend_from_slice(&chunk[chunk.len().saturating_sub(2 * preview)..]);
        if self.tail.len() > 2 * preview {
            let excess = self.tail.len() - preview;
            self.tail.drain(..excess);
        }
    }
}

/// Checks that a byte stream is UTF-8, chunk by chunk (a character may be cut between two
/// chunks).
#[derive(Debug, Default)]
struct Utf8Check {
    carry: Vec<u8>,
    invalid: bool,
}

impl Utf8Check {
    fn feed(&mut self, chunk: &[u8]) {
        if self.invalid {
            return;
        }
        let joined;
        let bytes = if self.carry.is_empty() {
            chunk
        } else {
            joined = [self.carry.as_slice(), chunk].concat();
            joined.as_slice()
        };
        match std::str::from_utf8(bytes) {
            Ok(_) => self.carry.clear(),
            Err(error) if error.error_len().is_none() => self.carry = bytes[error.valid_up_to()..].to_vec(),
            Err(_) => self.invalid = true,
        }
    }

    /// The stream ended: a character still cut is invalid.
    fn finish(&mut self) {
        if !self.carry.is_empty() {
            self.invalid = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_cut_between_two_chunks_is_valid_utf8() {
        let mut check = Utf8Check::default();
        let text = "é".as_bytes();
        check.feed(&text[..1]);
        check.feed(&text[1..]);
        check.finish();
        assert!(!check.invalid);
    }

    #[test]
    fn a_stray_continuation_byte_or_a_cut_last_character_is_invalid_utf8() {
        let mut check = Utf8Check::default();
        check.feed(b"ok \x80 no");
        assert!(check.invalid);
        let mut check = Utf8Check::default();
        check.feed(&"é".as_bytes()[..1]);
        check.finish();
        assert!(check.invalid);
    }

    #[test]
    fn past_the_cap_the_output_is_counted_and_its_tail_kept_but_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let (capture, file) = Capture::create(dir.path().join("out"), 4, 6).unwrap();
        capture.pump(&b"one\ntwo\nthree\n"[..], file, &|_| {});
        let seen = capture.seen();
        assert_eq!((seen.written, seen.kept), (14, 6));
        assert_eq!(std::fs::read_to_string(capture.path()).unwrap(), "one\ntw");
        assert_eq!(capture.preview(10).2, "ree\n");
    }

    #[test]
    fn head_and_tail_keep_at_most_max_lines_each() {
        let dir = tempfile::tempdir().unwrap();
        let (capture, file) = Capture::create(dir.path().join("out"), 16, u64::MAX).unwrap();
        let text: String = (0..20).map(|n| format!("{}\n", n % 10)).collect();
        capture.pump(text.as_bytes(), file, &|_| {});
        let (head, omitted, tail) = capture.preview(3);
        assert_eq!((head.as_str(), omitted, tail.as_str()), ("0\n1\n2\n", 28, "7\n8\n9\n"));
    }

    #[test]
    fn head_and_tail_keep_whole_lines_around_the_omitted_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (capture, file) = Capture::create(dir.path().join("out"), 8, u64::MAX).unwrap();
        let text: String = (0..10).map(|n| format!("line{n}\n")).collect();
        capture.pump(text.as_bytes(), file, &|_| {});
        let (head, omitted, tail) = capture.preview(100);
        assert_eq!((head.as_str(), omitted, tail.as_str()), ("line0\n", 48, "line9\n"));
        assert_eq!(std::fs::read_to_string(capture.path()).unwrap(), text);
    }
}
