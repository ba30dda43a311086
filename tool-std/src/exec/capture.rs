//! The output of one command as it arrives: all of it in a spill file or the output cache, its
//! head and tail in memory.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tool_runtime::ToolResult;
use tool_runtime::output::{OutputScope, OutputStore, StreamedOutput, store_stream};

/// Bytes read from the command's pipe at a time.
const CHUNK_BYTES: usize = 64 * 1024;

/// The most often progress is reported while output arrives.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// The note that ends a result whose output was not valid UTF-8.
pub(crate) const LOSSY_NOTE: &str = "[note: the output is not valid UTF-8; invalid bytes are shown as U+FFFD]";

/// Where the output of a command goes as it arrives.
pub(crate) enum Sink {
    /// A spill file, which `bash_output` reads as it grows (a background command).
    File(File),
    /// The output cache, under a new ref id in the call's scope (its session and principal),
    /// through the output layer's streaming path ([`store_stream`]; a foreground command).
    Store {
        /// The call's output store.
        store: Arc<dyn OutputStore>,
        /// The call's session id.
        session: Option<String>,
        /// The call's principal.
        principal: Option<String>,
    },
}

/// The output of one command: up to `max_bytes` of it written to its [`Sink`] as it arrives (a
/// spill file, which the command cannot write: it lies outside its writable directories; or the
/// output cache), its first `head` bytes and its last `preview` bytes kept in memory. Memory stays
/// at about `head + 2 * preview` bytes plus one read chunk (and, for the cache, the preview of
/// [`store_stream`]), however long the output.
#[derive(Debug)]
pub(crate) struct Capture {
    /// The spill file, for a [`Sink::File`].
    path: Option<PathBuf>,
    preview: usize,
    head: usize,
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
    stored: Option<Result<String, String>>,
}

/// A snapshot of a capture's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    /// Bytes of output so far.
    pub(crate) written: u64,
    /// Bytes of it kept: in the spill file (all of them, unless the output passed the cap or
    /// writing the file failed), or within the cap for the output cache.
    pub(crate) kept: u64,
    /// `true` when the pipe reached its end (every process holding it closed it).
    pub(crate) done: bool,
    /// `true` when some of the output so far is not valid UTF-8.
    pub(crate) lossy: bool,
    /// Why reading the output or writing the spill file failed, when it did (the output past that
    /// point is lost).
    pub(crate) error: Option<String>,
    /// For a [`Sink::Store`], once the output ended: the ref id the kept output is stored under,
    /// or why it is not stored.
    pub(crate) stored: Option<Result<String, String>>,
}

impl Capture {
    /// A capture writing at most `max_bytes` to the new spill file `path`.
    pub(crate) fn to_file(path: PathBuf, preview: usize, max_bytes: u64) -> io::Result<(Self, Sink)> {
        let file = File::options().write(true).create_new(true).open(&path)?;
        let capture = Self { path: Some(path), preview, head: preview, max_bytes, state: Mutex::default() };
        Ok((capture, Sink::File(file)))
    }

    /// A capture storing at most `max_bytes` in the output cache (`sink`, a [`Sink::Store`]), and
    /// keeping the first `head` bytes (at least `preview`) in memory: an output up to `head` bytes
    /// is then had whole from [`Capture::whole`].
    pub(crate) fn to_store(sink: Sink, preview: usize, head: usize, max_bytes: u64) -> (Self, Sink) {
        let capture = Self { path: None, preview, head: head.max(preview), max_bytes, state: Mutex::default() };
        (capture, sink)
    }

    /// The spill file (`None` for a capture into the output cache).
    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
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
            stored: state.stored.clone(),
        }
    }

    /// Reads `pipe` to its end into `sink` (up to the cap), keeping the head and tail, and calls
    /// `progress` with the bytes so far after the first chunk, then at most every 200 ms. Past
    /// the cap, or once the sink failed, the output is still read (the command never waits on a
    /// full pipe) and its tail kept in memory. Blocking: run it on a blocking thread.
    pub(crate) fn pump(&self, pipe: impl Read, sink: Sink, progress: &dyn Fn(u64)) {
        let mut source = Source { capture: self, pipe, progress, reported: None };
        match sink {
            Sink::File(file) => self.spill(&mut source, file),
            Sink::Store { store, session, principal } => {
                let scope = OutputScope { session: session.as_deref(), principal: principal.as_deref() };
                let mut capped = (&mut source).take(self.max_bytes);
                let stored = match store_stream(&*store, scope, &mut capped, self.preview) {
                    Ok(StreamedOutput { result: ToolResult::Stored(stored), .. }) => Ok(stored.ref_id),
                    Ok(_) => Err("the output cache gave no ref id".to_owned()),
                    Err(error) => Err(error.to_string()),
                };
                self.state().stored = Some(stored);
            }
        }
        // What is left past the cap (or after a failure) is read and only counted.
        let _ = io::copy(&mut source, &mut io::sink());
        let mut state = self.state();
        state.utf8.finish();
        state.done = true;
    }

    /// [`Capture::pump`] into a spill file.
    fn spill(&self, source: &mut Source<'_, impl Read>, mut file: File) {
        let mut buffer = vec![0; CHUNK_BYTES];
        loop {
            let read = match source.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            let mut state = self.state();
            let room = usize::try_from(self.max_bytes - state.kept).unwrap_or(usize::MAX).min(read);
            if state.error.is_none() && room > 0 {
                match file.write_all(&buffer[..room]) {
                    Ok(()) => state.kept += room as u64,
                    Err(error) => {
                        let path = self.path.as_deref().unwrap_or(Path::new("the spill file")).display();
                        state.error = Some(format!("writing the output to {path} failed: {error}"));
                    }
                }
            }
            if room < read || state.error.is_some() {
                // The rest is only counted ([`Capture::pump`]).
                break;
            }
        }
    }

    /// The whole kept output as text (lossy), when all of it is in memory: an output of at most
    /// the `head` bytes of [`Capture::to_store`].
    pub(crate) fn whole(&self) -> Option<String> {
        let state = self.state();
        let kept = usize::try_from(state.kept).ok().filter(|&kept| kept <= state.head.len())?;
        Some(String::from_utf8_lossy(&state.head[..kept]).into_owned())
    }

    /// The first and the last bytes of the output as text (lossy), when the whole is longer
    /// than both: the head (its first `preview` bytes) cut after its last newline and the tail
    /// from after its first one (when they have one), each at most `max_lines` lines, and how many
    /// bytes lie between them.
    pub(crate) fn preview(&self, max_lines: usize) -> (String, u64, String) {
        let state = self.state();
        let head = &state.head[..state.head.len().min(self.preview)];
        let mut head = match head.iter().rposition(|&b| b == b'\n') {
            Some(end) => &head[..=end],
            None => head,
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
        let path = self.path.as_deref().ok_or_else(|| io::Error::other("the output went to the output cache"))?;
        let mut file = File::open(path)?;
        file.seek(SeekFrom::Start(offset))?;
        Ok(file)
    }
}

/// The command's pipe as the sink reads it: each chunk counted, checked as UTF-8, its head and
/// tail kept, progress reported. A read error ends the stream (and is kept in the state).
struct Source<'a, R> {
    capture: &'a Capture,
    pipe: R,
    progress: &'a dyn Fn(u64),
    /// When progress was last reported: the first chunk is reported at once, later ones at most
    /// every [`PROGRESS_EVERY`].
    reported: Option<Instant>,
}

impl<R: Read> Read for Source<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let buf_len = buf.len().min(CHUNK_BYTES);
        let read = loop {
            match self.pipe.read(&mut buf[..buf_len]) {
                Ok(read) => break read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    let mut state = self.capture.state();
                    if state.error.is_none() {
                        state.error = Some(format!("reading the output failed: {error}"));
                    }
                    return Err(error);
                }
            }
        };
        if read == 0 {
            return Ok(0);
        }
        let written = {
            let mut state = self.capture.state();
            state.keep(&buf[..read], self.capture.head, self.capture.preview);
            if self.capture.path.is_none() {
                // Into the output cache: what lies within the cap is kept (the sink reads it).
                state.kept = state.written.min(self.capture.max_bytes);
            }
            state.written
        };
        if self.reported.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY) {
            (self.progress)(written);
            self.reported = Some(Instant::now());
        }
        Ok(read)
    }
}

impl State {
    fn keep(&mut self, chunk: &[u8], head: usize, preview: usize) {
        self.written += chunk.len() as u64;
        self.utf8.feed(chunk);
        let room = head.saturating_sub(self.head.len());
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
    use tool_runtime::output::MemoryStore;

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
        let (capture, sink) = Capture::to_file(dir.path().join("out"), 4, 6).unwrap();
        capture.pump(&b"one\ntwo\nthree\n"[..], sink, &|_| {});
        let seen = capture.seen();
        assert_eq!((seen.written, seen.kept), (14, 6));
        assert_eq!(std::fs::read_to_string(capture.path().unwrap()).unwrap(), "one\ntw");
        assert_eq!(capture.preview(10).2, "ree\n");
    }

    #[test]
    fn head_and_tail_keep_at_most_max_lines_each() {
        let dir = tempfile::tempdir().unwrap();
        let (capture, sink) = Capture::to_file(dir.path().join("out"), 16, u64::MAX).unwrap();
        let text: String = (0..20).map(|n| format!("{}\n", n % 10)).collect();
        capture.pump(text.as_bytes(), sink, &|_| {});
        let (head, omitted, tail) = capture.preview(3);
        assert_eq!((head.as_str(), omitted, tail.as_str()), ("0\n1\n2\n", 28, "7\n8\n9\n"));
    }

    #[test]
    fn head_and_tail_keep_whole_lines_around_the_omitted_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (capture, sink) = Capture::to_file(dir.path().join("out"), 8, u64::MAX).unwrap();
        let text: String = (0..10).map(|n| format!("line{n}\n")).collect();
        capture.pump(text.as_bytes(), sink, &|_| {});
        let (head, omitted, tail) = capture.preview(100);
        assert_eq!((head.as_str(), omitted, tail.as_str()), ("line0\n", 48, "line9\n"));
        assert_eq!(std::fs::read_to_string(capture.path().unwrap()).unwrap(), text);
    }

    fn into_store(store: &Arc<MemoryStore>, preview: usize, head: usize, max_bytes: u64) -> (Capture, Sink) {
        let store = store.clone() as Arc<dyn OutputStore>;
        let sink = Sink::Store { store, session: Some("s1".to_owned()), principal: None };
        Capture::to_store(sink, preview, head, max_bytes)
    }

    fn stored_text(store: &MemoryStore, ref_id: &str) -> String {
        let mut text = String::new();
        store.open_at(ref_id, 0).unwrap().read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn into_the_output_cache_the_whole_output_is_stored_in_the_calls_scope_under_a_new_ref() {
        let store = Arc::new(MemoryStore::new());
        let (capture, sink) = into_store(&store, 8, 8, u64::MAX);
        let text: String = (0..10).map(|n| format!("line{n}\n")).collect();
        capture.pump(text.as_bytes(), sink, &|_| {});
        let seen = capture.seen();
        let Some(Ok(ref_id)) = seen.stored else { panic!("not stored: {seen:?}") };
        assert_eq!((seen.written, seen.kept, seen.done), (60, 60, true));
        assert_eq!(stored_text(&store, &ref_id), text);
        let session = OutputScope { session: Some("s1"), principal: None };
        assert_eq!(store.check_scope(&ref_id, session), Ok(()));
        assert!(store.check_scope(&ref_id, OutputScope::NONE).is_err());
        assert_eq!(capture.preview(100), ("line0\n".to_owned(), 48, "line9\n".to_owned()));
    }

    #[test]
    fn into_the_output_cache_past_the_cap_the_output_is_counted_and_its_tail_kept_but_not_stored() {
        let store = Arc::new(MemoryStore::new());
        let (capture, sink) = into_store(&store, 4, 4, 6);
        capture.pump(&b"one\ntwo\nthree\n"[..], sink, &|_| {});
        let seen = capture.seen();
        let Some(Ok(ref_id)) = seen.stored else { panic!("not stored: {seen:?}") };
        assert_eq!((seen.written, seen.kept), (14, 6));
        assert_eq!(stored_text(&store, &ref_id), "one\ntw");
        assert_eq!(capture.preview(10).2, "ree\n");
    }

    #[test]
    fn an_output_within_the_head_is_had_whole_from_memory() {
        let store = Arc::new(MemoryStore::new());
        let (capture, sink) = into_store(&store, 4, 32, u64::MAX);
        capture.pump(&b"one\ntwo\nthree\n"[..], sink, &|_| {});
        assert_eq!(capture.whole().as_deref(), Some("one\ntwo\nthree\n"));
        let (capture, sink) = into_store(&store, 4, 8, u64::MAX);
        capture.pump(&b"one\ntwo\nthree\n"[..], sink, &|_| {});
        assert_eq!(capture.whole(), None);
    }

    #[test]
    fn a_failing_output_cache_is_named_and_the_output_still_read_to_its_end() {
        use tool_runtime::ContentPart;
        use tool_runtime::output::{StoreError, StoredInfo};

        /// Reads two bytes of an output, then fails as a full disk would.
        struct Full;
        impl OutputStore for Full {
            fn put_scoped(
                &self,
                _: OutputScope<'_>,
                ref_id: &str,
                text: &mut dyn Read,
                _: &[ContentPart],
            ) -> Result<StoredInfo, StoreError> {
                let mut two = [0; 2];
                text.read_exact(&mut two)
                    .map_err(|e| StoreError::Io { ref_id: ref_id.to_owned(), message: e.to_string() })?;
                Err(StoreError::Io { ref_id: ref_id.to_owned(), message: "no space left on the device".to_owned() })
            }
            fn check_scope(&self, ref_id: &str, _: OutputScope<'_>) -> Result<(), StoreError> {
                Err(StoreError::NotFound { ref_id: ref_id.to_owned() })
            }
            fn info(&self, ref_id: &str) -> Result<StoredInfo, StoreError> {
                Err(StoreError::NotFound { ref_id: ref_id.to_owned() })
            }
            fn open_at(&self, ref_id: &str, _: u64) -> Result<Box<dyn Read + Send>, StoreError> {
                Err(StoreError::NotFound { ref_id: ref_id.to_owned() })
            }
            fn checkpoint(&self, ref_id: &str, _: u64) -> Result<(u64, u64), StoreError> {
                Err(StoreError::NotFound { ref_id: ref_id.to_owned() })
            }
            fn parts(&self, ref_id: &str) -> Result<Vec<ContentPart>, StoreError> {
                Err(StoreError::NotFound { ref_id: ref_id.to_owned() })
            }
        }
        let sink = Sink::Store { store: Arc::new(Full), session: None, principal: None };
        let (capture, sink) = Capture::to_store(sink, 4, 64, u64::MAX);
        capture.pump(&b"one\ntwo\nthree\n"[..], sink, &|_| {});
        let seen = capture.seen();
        let Some(Err(error)) = &seen.stored else { panic!("stored: {seen:?}") };
        let ref_id = error.split('`').nth(1).unwrap();
        assert_eq!(error, &format!("the output cache failed for ref_id `{ref_id}`: no space left on the device"));
        // Read to its end all the same (the command never waits on a full pipe), and shown.
        assert_eq!((seen.written, seen.done, seen.error), (14, true, None));
        assert_eq!(capture.whole().as_deref(), Some("one\ntwo\nthree\n"));
    }
}
