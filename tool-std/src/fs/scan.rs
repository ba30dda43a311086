//! One streaming pass over a file: the SHA-256 of every byte, the number of lines, and the lines a
//! tool wants, without holding the whole file in memory; or, when asked to, only as far as those
//! lines.

use std::io::{self, Read};

use memchr::memchr_iter;
use sha2::{Digest, Sha256};

use super::text::{SNIFF_BYTES, sniff_binary};

/// Size of each read (bytes).
const CHUNK_BYTES: usize = 64 * 1024;

/// What a pass that read every byte found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanSummary {
    /// Lowercase hex SHA-256 of every byte of the file.
    pub(crate) sha256: String,
    /// Lines as `read` counts them: `\n` ends a line, a last line without `\n` counts, an empty
    /// file is one empty line.
    pub(crate) lines: usize,
}

/// How a pass ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scanned {
    /// Every byte was read: the file's hash and line count.
    Whole(ScanSummary),
    /// The visitor stopped, the pass was allowed to stop with it, and bytes were left unread: at
    /// least one more line follows the last line handed over. Nothing is known of the rest.
    Stopped,
}

/// Why a pass stopped.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// The first 8 KiB sniff as binary (see `sniff_binary`).
    Binary(&'static str),
    /// Reading failed.
    Io(io::Error),
    /// `cancelled` said so before a chunk was read.
    Cancelled,
}

impl From<io::Error> for ScanError {
    fn from(error: io::Error) -> Self {
        Self::Io(error)
    }
}

/// A line handed to the visitor of [`scan_lines`].
pub(crate) struct Line<'a> {
    /// 0-based line index.
    pub(crate) index: usize,
    /// The line's bytes without its `\n` (nor a `\r` before it, nor a UTF-8 byte order mark on
    /// line 0), at most `keep_bytes` of them.
    pub(crate) bytes: &'a [u8],
    /// `false` when the line was longer than `keep_bytes` and `bytes` is its prefix.
    pub(crate) whole: bool,
}

/// Reads `reader` in 64 KiB chunks. Sniffs the first 8 KiB (an error for binary data), hashes
/// every byte read, counts lines, and hands each line from the 0-based index `from_line` on to
/// `visit` (keeping at most `keep_bytes` of each) until `visit` returns `false`.
///
/// Then, with `stop_early` false, the rest of the file is only hashed and counted and the result
/// is [`Scanned::Whole`]. With `stop_early` true the pass ends there: [`Scanned::Stopped`] when
/// any byte follows the last line handed over (at most one more chunk is read to find out), and
/// [`Scanned::Whole`] when that line ended the file. A pass whose visitor never stops (an empty
/// page, a line past the end) always reads to the end. Memory stays at one chunk plus one kept
/// line.
///
/// `cancelled` is asked before each chunk is read; when it says `true` the pass ends with
/// [`ScanError::Cancelled`].
pub(crate) fn scan_lines<R: Read>(
    mut reader: R,
    from_line: usize,
    keep_bytes: usize,
    stop_early: bool,
    cancelled: impl Fn() -> bool,
    mut visit: impl FnMut(Line<'_>) -> bool,
) -> Result<Scanned, ScanError> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0_u8; CHUNK_BYTES];
    let mut first = true;
    let mut wanting = true;
    let mut index = 0_usize;
    // The current line: its kept bytes and its full length.
    let mut current: Vec<u8> = Vec::new();
    let mut current_len = 0_usize;
    // The last byte of the current line so far (0 while it is empty).
    let mut current_last = 0_u8;
    let mut last_byte: Option<u8> = None;
    let mut total = 0_usize;
    loop {
        if cancelled() {
            return Err(ScanError::Cancelled);
        }
        let filled = fill(&mut reader, &mut buffer)?;
        if filled == 0 {
            break;
        }
        if stop_early && !wanting {
            // The visitor stopped at the end of the previous chunk, and the file goes on.
            return Ok(Scanned::Stopped);
        }
        let chunk = &buffer[..filled];
        if first {
            first = false;
            let window = &chunk[..chunk.len().min(SNIFF_BYTES)];
            // The window is cut when the file goes on past it.
            if let Some(reason) = sniff_binary(window, chunk.len() > SNIFF_BYTES) {
                return Err(ScanError::Binary(reason));
            }
        }
        hasher.update(chunk);
        total += filled;
        last_byte = chunk.last().copied();
        if !wanting {
            index += memchr_iter(b'\n', chunk).count();
            continue;
        }
        let mut start = 0;
        for end in memchr_iter(b'\n', chunk) {
            if wanting && index >= from_line {
                keep(&mut current, &chunk[start..end], keep_bytes);
                current_len += end - start;
                if end > start {
                    current_last = chunk[end - 1];
                }
                let ends_with_cr = current_len > 0 && current_last == b'\r';
                wanting = finish(&current, current_len, ends_with_cr, index, keep_bytes, &mut visit);
            }
            current_len = 0;
            current_last = 0;
            current.clear();
            index += 1;
            start = end + 1;
            if !wanting {
                if stop_early && start < chunk.len() {
                    return Ok(Scanned::Stopped);
                }
                index += memchr_iter(b'\n', &chunk[start..]).count();
                break;
            }
        }
        if wanting && index >= from_line && start < chunk.len() {
            keep(&mut current, &chunk[start..], keep_bytes);
            current_len += chunk.len() - start;
            current_last = chunk[chunk.len() - 1];
        }
    }
    let ends_with_newline = last_byte == Some(b'\n');
    let lines = if total == 0 { 1 } else { index + usize::from(!ends_with_newline) };
    if wanting && index >= from_line && (total == 0 || !ends_with_newline) {
        // The last line has no `\n` (or the file is empty): hand it over as it is.
        let line = if index == 0 { strip_bom(&current) } else { &current[..] };
        visit(Line { index, bytes: line, whole: current_len <= keep_bytes });
    }
    Ok(Scanned::Whole(ScanSummary { sha256: format!("{:x}", hasher.finalize()), lines }))
}

/// Appends what still fits under `cap` of `bytes` to `current`.
fn keep(current: &mut Vec<u8>, bytes: &[u8], cap: usize) {
    let room = cap.saturating_sub(current.len());
    current.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

/// Hands a line that ended with `\n` to `visit`, without a `\r` before the `\n`.
fn finish(
    current: &[u8],
    len: usize,
    ends_with_cr: bool,
    index: usize,
    cap: usize,
    visit: &mut impl FnMut(Line<'_>) -> bool,
) -> bool {
    let content_len = if ends_with_cr { len - 1 } else { len };
    let kept = &current[..current.len().min(content_len)];
    let kept = if index == 0 { strip_bom(kept) } else { kept };
    visit(Line { index, bytes: kept, whole: content_len <= cap })
}

fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// Reads until `buffer` is full or the reader is at its end; returns the bytes read.
fn fill<R: Read>(reader: &mut R, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::text::sha256_hex;

    fn lines_of(bytes: &[u8], from: usize, cap: usize) -> (Vec<(usize, String, bool)>, usize) {
        let mut seen = Vec::new();
        let scanned = scan_lines(
            bytes,
            from,
            cap,
            false,
            || false,
            |line| {
                seen.push((line.index, String::from_utf8_lossy(line.bytes).into_owned(), line.whole));
                true
            },
        )
        .unwrap();
        let Scanned::Whole(summary) = scanned else { panic!("a pass that never stops reads to the end") };
        (seen, summary.lines)
    }

    /// A pass allowed to stop early whose visitor stops after `pages` lines: the lines seen and
    /// how the pass ended.
    fn stopping_after(bytes: &[u8], pages: usize) -> (Vec<String>, Scanned) {
        let mut seen = Vec::new();
        let scanned = scan_lines(
            bytes,
            0,
            100,
            true,
            || false,
            |line| {
                seen.push(String::from_utf8_lossy(line.bytes).into_owned());
                seen.len() < pages
            },
        )
        .unwrap();
        (seen, scanned)
    }

    #[test]
    fn lines_end_at_newline_and_lose_a_carriage_return_before_it() {
        let (seen, count) = lines_of(b"a\r\nb\nc", 0, 100);
        assert_eq!(seen, [(0, "a".into(), true), (1, "b".into(), true), (2, "c".into(), true)]);
        assert_eq!(count, 3);
    }

    #[test]
    fn a_final_newline_does_not_start_another_line() {
        let (seen, count) = lines_of(b"a\nb\n", 1, 100);
        assert_eq!(seen, [(1, "b".into(), true)]);
        assert_eq!(count, 2);
    }

    #[test]
    fn an_empty_file_is_one_empty_line() {
        let (seen, count) = lines_of(b"", 0, 100);
        assert_eq!(seen, [(0, String::new(), true)]);
        assert_eq!(count, 1);
    }

    #[test]
    fn long_lines_keep_a_prefix_and_say_so() {
        let (seen, _) = lines_of(b"abcdef\nxy\r\n", 0, 3);
        assert_eq!(seen, [(0, "abc".into(), false), (1, "xy".into(), true)]);
    }

    #[test]
    fn a_line_one_byte_over_the_cap_because_of_its_carriage_return_is_whole() {
        let (seen, _) = lines_of(b"abc\r\nd", 0, 3);
        assert_eq!(seen, [(0, "abc".into(), true), (1, "d".into(), true)]);
    }

    #[test]
    fn a_byte_order_mark_on_line_0_is_not_part_of_the_line() {
        let (seen, _) = lines_of(b"\xEF\xBB\xBFhi\n", 0, 100);
        assert_eq!(seen, [(0, "hi".into(), true)]);
    }

    #[test]
    fn lines_spanning_chunks_are_joined() {
        let mut text = "x".repeat(CHUNK_BYTES - 1);
        text.push_str("yz\nlast");
        let (seen, count) = lines_of(text.as_bytes(), 0, usize::MAX);
        assert_eq!(seen[0].1.len(), CHUNK_BYTES + 1);
        assert_eq!(seen[1], (1, "last".into(), true));
        assert_eq!(count, 2);
    }

    #[test]
    fn counting_goes_on_after_the_visitor_stops() {
        let mut visits = 0;
        let scanned = scan_lines(
            &b"1\n2\n3\n4\n"[..],
            0,
            10,
            false,
            || false,
            |_| {
                visits += 1;
                visits < 2
            },
        )
        .unwrap();
        assert_eq!(visits, 2);
        assert_eq!(scanned, Scanned::Whole(ScanSummary { sha256: sha256_hex(b"1\n2\n3\n4\n"), lines: 4 }));
    }

    #[test]
    fn stopping_early_with_bytes_left_says_stopped() {
        let (seen, scanned) = stopping_after(b"1\n2\n3\n4\n", 2);
        assert_eq!(seen, ["1", "2"]);
        assert_eq!(scanned, Scanned::Stopped);
    }

    #[test]
    fn stopping_early_at_the_last_line_is_a_whole_pass() {
        let (_, ended_by_newline) = stopping_after(b"1\n2\n", 2);
        assert_eq!(ended_by_newline, Scanned::Whole(ScanSummary { sha256: sha256_hex(b"1\n2\n"), lines: 2 }));
        let (_, without_newline) = stopping_after(b"1\n2", 2);
        assert_eq!(without_newline, Scanned::Whole(ScanSummary { sha256: sha256_hex(b"1\n2"), lines: 2 }));
    }

    #[test]
    fn stopping_early_at_the_end_of_a_chunk_looks_at_the_next_one() {
        let mut text = "x".repeat(CHUNK_BYTES - 1);
        text.push('\n');
        let (_, whole) = stopping_after(text.as_bytes(), 1);
        assert_eq!(whole, Scanned::Whole(ScanSummary { sha256: sha256_hex(text.as_bytes()), lines: 1 }));
        text.push('y');
        let (_, stopped) = stopping_after(text.as_bytes(), 1);
        assert_eq!(stopped, Scanned::Stopped);
    }

    #[test]
    fn stopping_early_leaves_the_rest_of_the_file_unread() {
        // A reader that fails after two chunks: a pass that read on would fail.
        let mut text = "1\n".repeat(CHUNK_BYTES);
        text.truncate(CHUNK_BYTES);
        let reader = text.as_bytes().chain(text.as_bytes()).chain(Failing);
        let scanned = scan_lines(reader, 0, 100, true, || false, |line| line.index < 10).unwrap();
        assert_eq!(scanned, Scanned::Stopped);
    }

    #[test]
    fn a_visitor_that_never_stops_reads_to_the_end_even_when_stopping_early_is_allowed() {
        let (seen, scanned) = stopping_after(b"1\n2\n3", usize::MAX);
        assert_eq!(seen, ["1", "2", "3"]);
        assert_eq!(scanned, Scanned::Whole(ScanSummary { sha256: sha256_hex(b"1\n2\n3"), lines: 3 }));
    }

    #[test]
    fn a_cancelled_pass_stops_before_the_next_chunk() {
        // Cancelled once the first chunk is read: the reader's failing third chunk is never asked.
        let text = "1\n".repeat(CHUNK_BYTES / 2);
        let reader = text.as_bytes().chain(text.as_bytes()).chain(Failing);
        let asked = std::cell::Cell::new(0);
        let mut seen = 0;
        let scanned = scan_lines(
            reader,
            0,
            100,
            false,
            || {
                asked.set(asked.get() + 1);
                asked.get() > 1
            },
            |_| {
                seen += 1;
                true
            },
        );
        assert!(matches!(scanned, Err(ScanError::Cancelled)));
        assert_eq!((asked.get(), seen), (2, CHUNK_BYTES / 2));
    }

    /// A reader whose every read fails.
    struct Failing;

    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::other("read past the page"))
        }
    }
}
