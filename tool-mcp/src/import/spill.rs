//! Long strings of an upstream's messages, taken out as they arrive: a byte-level JSON filter
//! between an upstream's output and rmcp's parser, so that a huge tool result is stored through
//! the output layer instead of being buffered whole.
//!
//! # The rule
//! Every JSON string (a value or an object key) of a message whose decoded length passes
//! [`ImportLimits::inline_result_bytes`](super::ImportLimits::inline_result_bytes) is decoded as
//! it arrives (escapes, `\uXXXX` and surrogate pairs; a lone surrogate becomes U+FFFD) and:
//! - inside the top-level `"result"` of a message whose top-level `"id"` came before the string
//!   and names a running tool call of the connection (a response to it: a request of the server
//!   may reuse the number, and an error is not a result), streamed through a bounded pipe into
//!   the call's output store (on the blocking pool), the message passed on with a placeholder in
//!   its place: `[spilled <nonce> <n>]`, where the nonce is 128 random bits drawn per connection
//!   and never sent to the upstream, so an upstream cannot forge one; the call then replaces the
//!   placeholder ([`resolve`]). A string whose call ends (cancelled, timed out, answered) before
//!   the string does stops there: its pipe closes and what came stays stored;
//! - anywhere else (no id before the string, a notification, a request of the server, an error,
//!   an unknown id), cut: the first `inline_result_bytes` bytes (back to a character boundary)
//!   and a line saying how long the string was.
//!
//! A message longer than [`ImportLimits::max_result_bytes`](super::ImportLimits::max_result_bytes)
//! (its bytes as sent), or than [`MAX_OTHER_MESSAGE_BYTES`] (16 MiB) when its top-level `"id"`
//! did not name a running tool call before that point, is not passed on past that point: over stdio the rest is dropped up to the
//! end of the line, which rmcp's line reader then skips as unparsable; over HTTP the rest of the
//! body or SSE event is dropped ([`super::spill_http`]). A call it answers fails naming the server
//! and the setting. Over stdio, a dropped message whose `"id"` names another request of the client
//! (a listing) is followed by a JSON-RPC error answer to that request ([`over_cap_error`]), so
//! that it fails at once. What it had stored is left to the store's time to live.
//!
//! Memory: per connection, the filter holds at most one short string (its raw bytes and its
//! decoded bytes: at most 7 × `inline_result_bytes` + 24 bytes, as an escape is 6 bytes for 1),
//! the head of a cut string (`inline_result_bytes` + 3), a top-level id of at most 128 bytes, and
//! the read buffer (64 KiB); [`Spills::peak_held_bytes`] reports the most it held of strings.
//! The filtered message is then parsed whole by rmcp (over stdio without rmcp's 16 MiB line cap,
//! which the caps above replace): what it holds is the message with its long strings out. Over
//! stdio the pump holds that filtered line too, and parses it once before rmcp does
//! ([`unparsable_answer`]): at most the message's cap, in practice its short strings and
//! structure only.

use std::collections::HashMap;
use std::io::Read;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rmcp::RoleClient;
use rmcp::model::RequestId;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tool_runtime::output::{OUTPUT_STORE, OutputScope, STREAM_PREVIEW_BYTES, StoreError, StreamedOutput, store_stream};
use tool_runtime::{StoredResult, ToolContext, ToolResult};

use crate::limits::MAX_APPROVAL_PREVIEW_BYTES;

/// Containers deeper than this are not told apart (objects and arrays): a key in them is read as
/// a value. `serde_json` refuses messages nested past 128 levels anyway.
const TRACKED_DEPTH: usize = 1024;

/// The longest top-level `"id"` kept (its JSON text); a longer one names no call.
const MAX_ID_BYTES: usize = 128;

/// The most bytes (as sent) of a message that answers no running tool call of the connection
/// (a listing, a notification, an answer whose `id` comes after its content): 16 MiB, the line
/// cap rmcp's stdio transport keeps, which this filter lifts for call answers only (those are
/// capped by [`ImportLimits::max_result_bytes`](super::ImportLimits::max_result_bytes) with their
/// long strings out). Lower when `max_result_bytes` is.
pub(super) const MAX_OTHER_MESSAGE_BYTES: u64 = 16 << 20;

/// Appends, as a line of its own, a JSON-RPC error answer to the request `id` (its JSON text) of
/// a message of a line transport dropped past `cap` bytes: rmcp skips the cut line, and the
/// request it answered (a listing) then fails at once naming the cap, instead of at its timeout.
/// Not for a line with a top-level `"method"` (a request of the server's, whose id is its own).
fn over_cap_error(id: &str, cap: u64, out: &mut Vec<u8>) {
    let message = format!(
        "the server's message answering this request is over {cap} bytes as sent (the import's cap on a message \
         that answers no tool call); it was dropped"
    );
    out.extend_from_slice(&error_answer(id, &message));
}

/// A line holding a JSON-RPC error answer (-32603, `message`) to the request `id` (its JSON text),
/// put where an upstream's unreadable answer was.
fn error_answer(id: &str, message: &str) -> Vec<u8> {
    let error = serde_json::json!({"code": -32603, "message": message});
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}\n").into_bytes()
}

/// For a filtered `line` of a line transport that rmcp could not parse as a message (nested past
/// the 128 levels `serde_json` reads, or not a JSON-RPC message) and whose top-level `"id"` (its
/// JSON text) was read: a JSON-RPC error answer to that request in its place, so that the request
/// (a listing or a call) fails at once naming why, instead of at its timeout (rmcp skips a line it
/// cannot parse). `None`: pass the line on as it is.
fn unparsable_answer(line: &[u8], id: Option<&str>) -> Option<Vec<u8>> {
    let id = id?;
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    // As rmcp reads a line: without a UTF-8 byte order mark.
    let text = line.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(line);
    let error = serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(text).err()?;
    let reason = error.to_string();
    let message = if reason.starts_with("recursion limit exceeded") {
        "the server's answer to this request is nested deeper than the 128 levels the JSON parser reads, so it \
         cannot be read"
            .to_owned()
    } else {
        let reason = reason.split(": ").next().unwrap_or(&reason);
        format!("the server's answer to this request is not a JSON-RPC message ({})", crate::errors::echoed(reason))
    };
    Some(error_answer(id, &message))
}

/// Bytes read from the upstream at once.
const READ_BYTES: usize = 64 * 1024;

/// Pieces of a spilled string in flight to the store at once (each at most [`READ_BYTES`]).
const PIPE_PIECES: usize = 4;

/// The lock of `mutex`, poisoned or not.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the connection's filter tells the pump, in order.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// A long string of the message answering the call `id` (its JSON text) begins; its
    /// placeholder carries `seq`.
    Open { id: String, seq: u64 },
    /// Decoded bytes of the open string.
    Data(Vec<u8>),
    /// The open string ended.
    End,
    /// The message (answering the call `id`, if it named one before) went past
    /// `max_result_bytes`.
    Over { id: Option<String> },
}

/// How the string being read is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Short so far: raw and decoded bytes held.
    Short,
    /// Streamed to a call's store.
    Spill,
    /// Cut: the head held, the rest counted.
    Cut,
}

/// Where a string's escape is.
#[derive(Debug, Clone, Copy)]
enum Escape {
    None,
    Backslash,
    /// `\u` and `digits` hex digits read so far, worth `value`.
    Unicode {
        digits: u8,
        value: u16,
    },
}

/// The string being read.
struct Str {
    key: bool,
    mode: Mode,
    /// `Short`: its raw bytes from the opening quote.
    raw: Vec<u8>,
    /// `Short`: decoded; `Cut`: the head.
    decoded: Vec<u8>,
    /// Decoded bytes so far.
    length: u64,
    escape: Escape,
    /// A high surrogate waiting for its low half.
    high: Option<u16>,
}

/// Where the top-level `"id"` of the message is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum IdState {
    /// Not met (or met and done).
    Idle,
    /// The key `"id"` was read at the top level; its value comes next.
    Next,
    /// A scalar id being read.
    Scalar(Vec<u8>),
}

/// The incremental JSON filter over what one upstream sends (see the module's docs).
pub(super) struct Filter {
    threshold: usize,
    max_message: u64,
    /// The cap of the message being read: `max_message` once its `id` names a running call, else
    /// also at most [`MAX_OTHER_MESSAGE_BYTES`].
    cap: u64,
    nonce: String,
    seq: u64,
    /// Whether a request id (JSON text) names a running call that takes spills.
    registered: Box<dyn Fn(&str) -> bool + Send>,
    /// A line transport (stdio): a line end ends a message, whole or not, and a message past the
    /// cap is dropped to its line's end. Otherwise (one HTTP body or SSE event) a line end is
    /// whitespace and everything past the cap is dropped.
    lines: bool,
    stack: Vec<bool>,
    depth: usize,
    expect_key: bool,
    message_bytes: u64,
    dropping: bool,
    id: Option<String>,
    /// The line's top-level `"id"`, kept to its end (a line transport), and whether the line was
    /// dropped past the cap.
    line_id: Option<String>,
    /// Whether the line has a top-level `"method"` (a request or notification of the server's).
    line_request: bool,
    /// The ids of the answers among the lines ended so far, in order, and whether each line was
    /// dropped past its cap ([`Filter::ended_lines`]; a line transport only).
    ended: std::collections::VecDeque<(Option<String>, bool)>,
    id_state: IdState,
    /// Whether the top-level member being read is `"result"` (a response's result).
    in_result: bool,
    string: Option<Str>,
    peak: usize,
}

impl Filter {
    /// A filter spilling strings past `threshold` decoded bytes, with placeholders carrying
    /// `nonce`, and cutting messages past `max_message` bytes; `lines`: see [`Filter::lines`].
    pub(super) fn new(
        threshold: usize,
        max_message: u64,
        nonce: String,
        registered: Box<dyn Fn(&str) -> bool + Send>,
        lines: bool,
    ) -> Self {
        Self {
            threshold,
            max_message,
            cap: max_message.min(MAX_OTHER_MESSAGE_BYTES),
            nonce,
            seq: 0,
            registered,
            lines,
            stack: Vec::new(),
            depth: 0,
            expect_key: false,
            message_bytes: 0,
            dropping: false,
            id: None,
            line_id: None,
            line_request: false,
            ended: std::collections::VecDeque::new(),
            id_state: IdState::Idle,
            in_result: false,
            string: None,
            peak: 0,
        }
    }

    /// The most bytes of strings held at once so far.
    pub(super) fn peak_held_bytes(&self) -> usize {
        self.peak
    }

    /// Filters `input`: what to pass on goes to `out`, what happened to `events`.
    pub(super) fn feed(&mut self, input: &[u8], out: &mut Vec<u8>, events: &mut Vec<Event>) {
        let mut i = 0;
        while i < input.len() {
            if self.dropping && !self.lines {
                return;
            }
            if self.dropping {
                // Past the cap: the rest of the line is dropped, its end passed on.
                match memchr::memchr(b'\n', &input[i..]) {
                    Some(at) => {
                        i += at + 1;
                        let answered = self.unregistered_id().filter(|_| !self.line_request);
                        let cap = self.cap;
                        self.end_message();
                        out.push(b'\n');
                        if let Some(id) = answered {
                            over_cap_error(&id, cap, out);
                            self.ended.push_back((None, false));
                        }
                    }
                    None => i = input.len(),
                }
                continue;
            }
            if self.string.is_some() {
                i += self.string_bytes(&input[i..], out, events);
                continue;
            }
            let b = input[i];
            i += 1;
            if b == b'\n' && self.lines {
                // A line ends a message of a line transport, whole or not.
                self.end_message();
                out.push(b);
                continue;
            }
            if self.count(1, events) {
                continue;
            }
            out.push(b);
            self.structural(b);
        }
    }

    /// Counts `n` more bytes of the message; `true` when that passed the cap (the rest of the
    /// line is then dropped).
    fn count(&mut self, n: usize, events: &mut Vec<Event>) -> bool {
        self.message_bytes += n as u64;
        if self.message_bytes <= self.cap {
            return false;
        }
        self.dropping = true;
        if self.string.take().is_some_and(|s| s.mode == Mode::Spill) {
            events.push(Event::End);
        }
        let id = self.id.clone().filter(|id| (self.registered)(id));
        events.push(Event::Over { id });
        true
    }

    /// The message's top-level `"id"` (its JSON text) when it names no running tool call: a
    /// request of the client's other than a call (a listing), which waits for this answer.
    fn unregistered_id(&self) -> Option<String> {
        self.id.clone().filter(|id| !(self.registered)(id))
    }

    /// The ids of the lines ended since the last call (their JSON text), in the order of the line
    /// ends passed on, each with whether the line was dropped past its cap (a line transport).
    pub(super) fn ended_lines(&mut self) -> std::collections::VecDeque<(Option<String>, bool)> {
        std::mem::take(&mut self.ended)
    }

    /// Forgets the line's state.
    fn end_message(&mut self) {
        if self.lines {
            // Only an answer's id: a request of the server's has ids of its own.
            let id = self.line_id.take().filter(|_| !self.line_request);
            self.ended.push_back((id, self.dropping));
            self.line_request = false;
        }
        self.stack.clear();
        self.depth = 0;
        self.expect_key = false;
        self.message_bytes = 0;
        self.cap = self.max_message.min(MAX_OTHER_MESSAGE_BYTES);
        self.dropping = false;
        self.id = None;
        self.id_state = IdState::Idle;
        self.in_result = false;
        self.string = None;
    }

    /// One byte outside strings (passed on already).
    fn structural(&mut self, b: u8) {
        if let IdState::Scalar(text) = &mut self.id_state {
            if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                let text = std::mem::take(text);
                self.id_state = IdState::Idle;
                if text.len() <= MAX_ID_BYTES {
                    self.id = String::from_utf8(text).ok();
                    self.line_id.clone_from(&self.id);
                    if self.id.as_deref().is_some_and(|id| (self.registered)(id)) {
                        self.cap = self.max_message;
                    }
                }
            } else {
                if text.len() <= MAX_ID_BYTES {
                    text.push(b);
                }
                return;
            }
        }
        match b {
            b'{' | b'[' => {
                if self.depth < TRACKED_DEPTH {
                    self.stack.push(b == b'{');
                }
                self.depth += 1;
                self.expect_key = b == b'{';
                if self.id_state == IdState::Next {
                    self.id_state = IdState::Idle;
                }
            }
            b'}' | b']' => {
                if self.depth <= TRACKED_DEPTH {
                    self.stack.pop();
                }
                self.depth = self.depth.saturating_sub(1);
                self.expect_key = false;
                if self.depth == 0 {
                    self.id = None;
                    self.id_state = IdState::Idle;
                    self.in_result = false;
                }
            }
            b',' => self.expect_key = self.in_object(),
            b':' => self.expect_key = false,
            b'"' if self.depth > 0 => {
                self.string = Some(Str {
                    key: self.expect_key && self.in_object(),
                    mode: Mode::Short,
                    raw: Vec::new(),
                    decoded: Vec::new(),
                    length: 0,
                    escape: Escape::None,
                    high: None,
                });
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ if self.id_state == IdState::Next && self.depth == 1 => self.id_state = IdState::Scalar(vec![b]),
            _ => {}
        }
    }

    fn in_object(&self) -> bool {
        self.depth <= TRACKED_DEPTH && self.stack.last() == Some(&true)
    }

    /// Bytes of the open string from the start of `input`; returns how many were used (the
    /// closing quote included).
    fn string_bytes(&mut self, input: &[u8], out: &mut Vec<u8>, events: &mut Vec<Event>) -> usize {
        let threshold = self.threshold as u64;
        let Some(s) = &mut self.string else { return 0 };
        if matches!(s.escape, Escape::None) && s.high.is_none() {
            // The fast path: plain bytes up to the next quote, backslash or line end; a short
            // string's run ends one byte past the threshold, so that at most that much is held.
            let mut run = memchr::memchr3(b'"', b'\\', b'\n', input).unwrap_or(input.len());
            if s.mode == Mode::Short {
                run = run
                    .min(usize::try_from(threshold.saturating_add(1) - s.length.min(threshold)).unwrap_or(usize::MAX));
            }
            if run > 0 {
                if s.mode == Mode::Short {
                    s.raw.extend_from_slice(&input[..run]);
                }
                if !self.count(run, events) {
                    self.decoded(&input[..run], out, events);
                }
                return run;
            }
        }
        let b = input[0];
        if b == b'\n' {
            // A raw line end cannot be in a JSON string: the message is broken; its line ends,
            // passed on as far as it came.
            match s.mode {
                Mode::Spill => events.push(Event::End),
                Mode::Short => out.extend_from_slice(&s.raw),
                Mode::Cut => {}
            }
            self.end_message();
            out.push(b);
            return 1;
        }
        if s.mode == Mode::Short {
            s.raw.push(b);
        }
        if self.count(1, events) {
            return 1;
        }
        let Some(s) = &mut self.string else { return 1 };
        let mut text = String::new();
        let mut close = false;
        // A byte outside escapes that is no quote nor backslash is itself (UTF-8 passes through).
        let plain = matches!(s.escape, Escape::None) && b != b'"' && b != b'\\';
        match s.escape {
            Escape::None => {
                // A high surrogate's low half can only follow as `\u`.
                if b != b'\\' && s.high.take().is_some() {
                    text.push('\u{FFFD}');
                }
                match b {
                    b'"' => close = true,
                    b'\\' => s.escape = Escape::Backslash,
                    _ => {}
                }
            }
            Escape::Backslash => {
                s.escape = Escape::None;
                if b == b'u' {
                    s.escape = Escape::Unicode { digits: 0, value: 0 };
                } else {
                    if s.high.take().is_some() {
                        text.push('\u{FFFD}');
                    }
                    text.push(match b {
                        b'b' => '\u{8}',
                        b'f' => '\u{C}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        other => char::from(other),
                    });
                }
            }
            Escape::Unicode { digits, value } => match char::from(b).to_digit(16).and_then(|d| u16::try_from(d).ok()) {
                None => {
                    // Not JSON; what was read stands for one unknown character.
                    s.escape = Escape::None;
                    s.high = None;
                    text.push('\u{FFFD}');
                }
                Some(d) if digits < 3 => s.escape = Escape::Unicode { digits: digits + 1, value: value * 16 + d },
                Some(d) => {
                    s.escape = Escape::None;
                    let unit = value * 16 + d;
                    match (s.high.take(), unit) {
                        (Some(high), 0xDC00..=0xDFFF) => {
                            let c = 0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                            text.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
                        }
                        (high, 0xD800..=0xDBFF) => {
                            if high.is_some() {
                                text.push('\u{FFFD}');
                            }
                            s.high = Some(unit);
                        }
                        (high, unit) => {
                            if high.is_some() {
                                text.push('\u{FFFD}');
                            }
                            text.push(char::from_u32(u32::from(unit)).unwrap_or('\u{FFFD}'));
                        }
                    }
                }
            },
        }
        if !text.is_empty() {
            self.decoded(text.as_bytes(), out, events);
        }
        if plain {
            self.decoded(&[b], out, events);
        }
        if close {
            self.close_string(out, events);
        }
        1
    }

    /// Decoded bytes of the open string.
    fn decoded(&mut self, bytes: &[u8], out: &mut Vec<u8>, events: &mut Vec<Event>) {
        let threshold = self.threshold;
        let Some(s) = self.string.as_mut() else { return };
        s.length += bytes.len() as u64;
        match s.mode {
            Mode::Short => {
                s.decoded.extend_from_slice(bytes);
                if s.length <= threshold as u64 {
                    return;
                }
                let held = s.raw.len() + s.decoded.len();
                s.raw = Vec::new();
                self.peak = self.peak.max(held);
                // Only a response's result is a call's: a request of the server may reuse the id
                // of a running call (the two sides number their requests apart), and an error's
                // text is shown as it is.
                let in_result = self.in_result && !(s.key && self.depth == 1);
                let spill = self.id.as_deref().filter(|id| in_result && (self.registered)(id)).map(str::to_owned);
                let Some(s) = self.string.as_mut() else { return };
                match spill {
                    Some(id) => {
                        s.mode = Mode::Spill;
                        self.seq += 1;
                        events.push(Event::Open { id, seq: self.seq });
                        events.push(Event::Data(std::mem::take(&mut s.decoded)));
                        out.extend_from_slice(placeholder(&self.nonce, self.seq).as_bytes());
                        out.push(b'"');
                    }
                    None => {
                        s.mode = Mode::Cut;
                        s.decoded.truncate(threshold);
                    }
                }
            }
            Mode::Spill => match events.last_mut() {
                Some(Event::Data(data)) => data.extend_from_slice(bytes),
                _ => events.push(Event::Data(bytes.to_vec())),
            },
            Mode::Cut => {
                let room = threshold.saturating_sub(s.decoded.len());
                s.decoded.extend_from_slice(&bytes[..room.min(bytes.len())]);
            }
        }
    }

    /// The closing quote of the open string.
    fn close_string(&mut self, out: &mut Vec<u8>, events: &mut Vec<Event>) {
        let Some(s) = self.string.take() else { return };
        self.peak = self.peak.max(s.raw.len() + s.decoded.len());
        match s.mode {
            Mode::Short => {
                out.extend_from_slice(&s.raw);
                if self.depth == 1 {
                    if s.key {
                        self.in_result = s.decoded == b"result";
                        if s.decoded == b"id" {
                            self.id_state = IdState::Next;
                        }
                        if s.decoded == b"method" {
                            self.line_request = true;
                        }
                    } else if self.id_state == IdState::Next {
                        self.id_state = IdState::Idle;
                        if s.raw.len() < MAX_ID_BYTES {
                            let mut text = vec![b'"'];
                            text.extend_from_slice(&s.raw);
                            self.id = String::from_utf8(text).ok();
                            self.line_id.clone_from(&self.id);
                            if self.id.as_deref().is_some_and(|id| (self.registered)(id)) {
                                self.cap = self.max_message;
                            }
                        }
                    }
                }
            }
            Mode::Spill => events.push(Event::End),
            Mode::Cut => {
                let head = match std::str::from_utf8(&s.decoded) {
                    Ok(text) => text.to_owned(),
                    Err(e) if e.error_len().is_none() => {
                        String::from_utf8_lossy(&s.decoded[..e.valid_up_to()]).into_owned()
                    }
                    Err(_) => String::from_utf8_lossy(&s.decoded).into_owned(),
                };
                let text = format!(
                    "{head}\n[... cut: the server's string was {} bytes, over the import's inline_result_bytes ({})]",
                    s.length, self.threshold
                );
                let quoted = serde_json::to_string(&text).unwrap_or_default();
                // The opening quote was passed on already.
                out.extend_from_slice(&quoted.as_bytes()[1..]);
            }
        }
        if self.depth == 1 && s.key {
            self.expect_key = false;
            if s.mode != Mode::Short {
                self.in_result = false;
            }
        } else if self.depth == 1 && self.id_state == IdState::Next {
            self.id_state = IdState::Idle;
        }
    }
}

/// The placeholder of spilled string `seq` of the connection with `nonce`.
fn placeholder(nonce: &str, seq: u64) -> String {
    format!("[spilled {nonce} {seq}]")
}

/// A spilled string of a call, as stored.
struct Spilled {
    seq: u64,
    stored: oneshot::Receiver<Result<StreamedOutput, StoreError>>,
}

/// A running call that takes spills: its context (whose output store and scope take its
/// strings), where it is registered, and what was spilled.
pub(super) struct CallSpills {
    ctx: ToolContext,
    /// The connection and request id it is registered under, once its request was sent.
    registered: Mutex<Option<(Weak<Spills>, RequestId)>>,
    /// The nonce of the connection it was registered on, kept for [`resolve`] when that
    /// connection is gone (its answer came before it was lost).
    nonce: Mutex<Option<String>>,
    spilled: Mutex<Vec<Spilled>>,
    /// The pipes of its spills still open, by number: the only strong senders, so that a pipe
    /// closes when its string ends ([`Pipe`] dropped) or when the call's answer came or the call
    /// ended (cleared), whichever is first, and its storing thread is never left waiting on a
    /// stalled upstream.
    open: Mutex<HashMap<u64, mpsc::Sender<Vec<u8>>>>,
    /// Set when its answer went past `max_result_bytes`.
    over: tokio::sync::watch::Sender<bool>,
    /// The `_meta["tool-framework/approval"]` of its answer, taken out of the message before
    /// rmcp reads (and traces) it ([`Spills::hold_approval`]); still undecoded.
    approval: Mutex<Option<HeldApproval>>,
}

impl CallSpills {
    /// A call of `ctx`.
    pub(super) fn new(ctx: &ToolContext) -> Arc<Self> {
        Arc::new(Self {
            ctx: ctx.clone(),
            registered: Mutex::new(None),
            nonce: Mutex::new(None),
            spilled: Mutex::new(Vec::new()),
            open: Mutex::new(HashMap::new()),
            over: tokio::sync::watch::channel(false).0,
            approval: Mutex::new(None),
        })
    }

    /// The approval request its answer carried ([`Spills::hold_approval`]), once, its long
    /// strings resolved ([`resolve`]).
    pub(super) fn take_approval(&self) -> Option<HeldApproval> {
        lock(&self.approval).take()
    }

    /// Ends when the call's answer went past `max_result_bytes`.
    pub(super) async fn went_over(&self) {
        let mut over = self.over.subscribe();
        let _ = over.wait_for(|over| *over).await;
    }

    /// Forgets the call on its connection (its answer came, or it ended otherwise), closing the
    /// pipes of its spills still open (what they stored stays, cut where it stopped).
    pub(super) fn unregister(&self) {
        lock(&self.open).clear();
        if let Some((spills, id)) = lock(&self.registered).take()
            && let Some(spills) = spills.upgrade()
        {
            let key = serde_json::to_string(&id).unwrap_or_default();
            lock(&spills.calls).remove(&key);
        }
    }
}

/// The pump's end of an open spill's pipe: a weak sender (the call keeps the strong one, see
/// [`CallSpills::open`]); dropped when the string ends, it closes the pipe.
pub(super) struct Pipe {
    call: Arc<CallSpills>,
    seq: u64,
    sender: mpsc::WeakSender<Vec<u8>>,
}

impl Drop for Pipe {
    fn drop(&mut self) {
        lock(&self.call.open).remove(&self.seq);
    }
}

/// The marker a `tools/call` request carries in its extensions (never sent): the call takes
/// spills, registered as the request is sent ([`Spills::register`]).
#[derive(Clone)]
pub(super) struct SpillCall(pub(super) Arc<CallSpills>);

/// The spills of one connection: its nonce and its running calls by request id.
pub(super) struct Spills {
    nonce: String,
    calls: Mutex<HashMap<String, Arc<CallSpills>>>,
    peak: AtomicUsize,
    threshold: usize,
    max_message: u64,
    server: String,
    this: Weak<Spills>,
}

impl Spills {
    /// The spills of a new connection to `server` with the import's `limits`, and a fresh nonce.
    pub(super) fn new(server: &str, limits: &super::ImportLimits) -> Arc<Self> {
        let mut bytes = [0u8; 16];
        if getrandom::fill(&mut bytes).is_err() {
            // No randomness: the time, which the upstream does not see either.
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            bytes = now.as_nanos().to_le_bytes();
        }
        let nonce = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Arc::new_cyclic(|this| Self {
            nonce,
            calls: Mutex::new(HashMap::new()),
            peak: AtomicUsize::new(0),
            threshold: limits.inline_result_bytes,
            max_message: limits.max_result_bytes as u64,
            server: server.to_owned(),
            this: this.clone(),
        })
    }

    /// Registers the call of the request `id` as the request is sent, before any answer can come.
    pub(super) fn register(&self, id: &RequestId, call: &Arc<CallSpills>) {
        let key = serde_json::to_string(id).unwrap_or_default();
        *lock(&call.registered) = Some((self.this.clone(), id.clone()));
        *lock(&call.nonce) = Some(self.nonce.clone());
        lock(&self.calls).insert(key, call.clone());
    }

    /// The most bytes of strings the connection's filter held at once.
    pub(super) fn peak_held_bytes(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// A filter of the connection; `lines`: see [`Filter::lines`].
    pub(super) fn filter(&self, lines: bool) -> Filter {
        let this = self.this.clone();
        let registered = move |id: &str| this.upgrade().is_some_and(|spills| lock(&spills.calls).contains_key(id));
        Filter::new(self.threshold, self.max_message, self.nonce.clone(), Box::new(registered), lines)
    }

    /// Reads `upstream` to its end through the filter, writing what passes to `downstream`
    /// (rmcp's side); ends when either side closes.
    pub(super) async fn pump(
        self: Arc<Self>,
        mut upstream: impl AsyncRead + Unpin,
        mut downstream: impl AsyncWrite + Unpin,
    ) {
        let mut filter = self.filter(true);
        let mut buf = vec![0u8; READ_BYTES];
        let mut out = Vec::with_capacity(READ_BYTES);
        let mut events = Vec::new();
        let mut pipe: Option<Pipe> = None;
        // The filtered line so far: rmcp gets each line whole, once it is known to parse.
        let mut line = Vec::new();
        'read: loop {
            let n = match upstream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            out.clear();
            filter.feed(&buf[..n], &mut out, &mut events);
            self.note_peak(&filter);
            self.handle(&mut events, &mut pipe).await;
            let mut ended = filter.ended_lines();
            let mut rest = out.as_slice();
            while let Some(at) = memchr::memchr(b'\n', rest) {
                line.extend_from_slice(&rest[..=at]);
                rest = &rest[at + 1..];
                let (id, dropped) = ended.pop_front().unwrap_or((None, false));
                let passed = if dropped { None } else { unparsable_answer(&line, id.as_deref()) };
                let written = downstream.write_all(passed.as_deref().unwrap_or(&line)).await;
                line.clear();
                if written.is_err() {
                    break 'read;
                }
            }
            line.extend_from_slice(rest);
        }
        if !line.is_empty() {
            let _ = downstream.write_all(&line).await;
        }
        let _ = downstream.shutdown().await;
    }

    /// Carries out what a filter of the connection said (`events`, emptied), with `pipe` the
    /// open spill's (kept between calls, as a string goes on across reads).
    pub(super) async fn handle(&self, events: &mut Vec<Event>, pipe: &mut Option<Pipe>) {
        for event in events.drain(..) {
            match event {
                Event::Open { id, seq } => *pipe = self.open(&id, seq).await,
                Event::Data(data) => {
                    // The call may have ended (its pipe closed): the rest of the string is dropped.
                    let sender = pipe.as_ref().and_then(|pipe| pipe.sender.upgrade());
                    let sent = match sender {
                        Some(sender) => sender.send(data).await.is_ok(),
                        None => false,
                    };
                    if !sent {
                        *pipe = None;
                    }
                }
                Event::End => *pipe = None,
                Event::Over { id } => {
                    *pipe = None;
                    tracing::warn!(server = %self.server, max_result_bytes = self.max_message,
                        "an imported MCP server sent a message over the import's max_result_bytes; dropped its rest");
                    let call = id.and_then(|id| lock(&self.calls).get(&id).cloned());
                    if let Some(call) = call {
                        call.over.send_replace(true);
                    }
                }
            }
        }
    }

    /// [`ImportLimits::max_result_bytes`](super::ImportLimits::max_result_bytes).
    pub(super) fn max_message(&self) -> usize {
        usize::try_from(self.max_message).unwrap_or(usize::MAX)
    }

    /// Counts what `filter` held at most in [`Spills::peak_held_bytes`].
    pub(super) fn note_peak(&self, filter: &Filter) {
        self.peak.fetch_max(filter.peak_held_bytes(), Ordering::Relaxed);
    }

    /// Keeps `approval`, the `_meta["tool-framework/approval"]` of the answer to the request `id`,
    /// for that running call alone ([`CallSpills::take_approval`]); dropped when `id` names no
    /// running call (an answer to nothing is not passed on).
    pub(super) fn hold_approval(&self, id: &RequestId, approval: Value) {
        let call = lock(&self.calls).get(&serde_json::to_string(id).unwrap_or_default()).cloned();
        if let Some(call) = call {
            *lock(&call.approval) = Some(Ok(approval));
        }
    }

    /// Whether `id` (a request id's JSON text) is a running call that takes spills.
    pub(super) fn takes(&self, id: &RequestId) -> bool {
        lock(&self.calls).contains_key(&serde_json::to_string(id).unwrap_or_default())
    }

    /// Starts storing spilled string `seq` of the call `id` on the blocking pool; the pipe to it
    /// (`None`: the call is gone, and the string with it).
    async fn open(&self, id: &str, seq: u64) -> Option<Pipe> {
        let call = lock(&self.calls).get(id).cloned()?;
        let (done, stored) = oneshot::channel();
        lock(&call.spilled).push(Spilled { seq, stored });
        let store = match call.ctx.resolve(&OUTPUT_STORE).await {
            Ok(store) => store,
            Err(error) => {
                let _ = done.send(Err(StoreError::Io { ref_id: String::new(), message: error.to_string() }));
                return None;
            }
        };
        let (sender, receiver) = mpsc::channel(PIPE_PIECES);
        let (session, principal) = (call.ctx.session_id().map(str::to_owned), call.ctx.principal().map(str::to_owned));
        tokio::task::spawn_blocking(move || {
            let mut reader = PipeReader { receiver, piece: Vec::new(), at: 0 };
            let scope = OutputScope { session: session.as_deref(), principal: principal.as_deref() };
            let _ = done.send(store_stream(&*store, scope, &mut reader, STREAM_PREVIEW_BYTES));
        });
        let pipe = Pipe { call: call.clone(), seq, sender: sender.downgrade() };
        lock(&call.open).insert(seq, sender);
        // The call may have ended since it was looked up: its pipes are closed then.
        if lock(&call.registered).is_none() {
            lock(&call.open).clear();
        }
        Some(pipe)
    }
}

/// A stdio server's transport: the child's standard output read through the connection's
/// [filter](Spills::pump), its standard input written by rmcp. Dropped, it kills the child.
pub(super) struct ChildTransport {
    inner: AsyncRwTransport<RoleClient, tokio::io::DuplexStream, tokio::process::ChildStdin>,
    child: tokio::process::Child,
    _pump: tokio_util::task::AbortOnDropHandle<()>,
}

impl ChildTransport {
    /// Starts `command` (standard input and output piped, standard error inherited, killed on
    /// drop) with its output filtered by `spills`; the transport and the child's process id.
    ///
    /// # Errors
    /// The command could not be started.
    pub(super) fn spawn(
        mut command: tokio::process::Command,
        spills: Arc<Spills>,
    ) -> std::io::Result<(Self, Option<u32>)> {
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).kill_on_drop(true);
        let mut child = command.spawn()?;
        let pid = child.id();
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the child's standard input or output was not piped"));
        };
        let (rmcp_side, pump_side) = tokio::io::duplex(READ_BYTES);
        let pump = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(spills.pump(stdout, pump_side)));
        // The filter caps a line at `max_result_bytes` as sent, so rmcp's own line cap (16 MiB)
        // is lifted: a message between the two would otherwise be dropped unanswered.
        let inner = AsyncRwTransport::new_client(rmcp_side, stdin).with_max_line_length(usize::MAX);
        Ok((Self { inner, child, _pump: pump }, pid))
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    /// Closes the child's standard input and waits up to 3 s for it to exit, then (Unix) sends
    /// it SIGTERM and waits 3 s more, then kills it: the MCP stdio shutdown sequence, as rmcp's
    /// child transport does it.
    async fn close(&mut self) -> Result<(), Self::Error> {
        let wait = std::time::Duration::from_secs(3);
        self.inner.close().await?;
        if tokio::time::timeout(wait, self.child.wait()).await.is_ok() {
            return Ok(());
        }
        #[cfg(unix)]
        if let Some(pid) = self.child.id().and_then(|pid| rustix::process::Pid::from_raw(pid.cast_signed())) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            if tokio::time::timeout(wait, self.child.wait()).await.is_ok() {
                return Ok(());
            }
        }
        self.child.kill().await
    }
}

/// The reading end of a spill's pipe, on the blocking pool.
struct PipeReader {
    receiver: mpsc::Receiver<Vec<u8>>,
    piece: Vec<u8>,
    at: usize,
}

impl Read for PipeReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.piece.len() {
            match self.receiver.blocking_recv() {
                Some(piece) => {
                    self.piece = piece;
                    self.at = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.piece.len() - self.at);
        buf[..n].copy_from_slice(&self.piece[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// What one spilled string became.
struct Resolved {
    /// The preview (head, marker, tail), or the whole when it fit.
    text: String,
    ref_id: String,
    cut: bool,
    bytes: u64,
}

/// Replaces the placeholders of `spills` in `result` (a `tools/call` result as JSON), for the
/// server `server`:
/// - the `text` of a text block, or of an embedded text resource: the stored text's preview (its
///   head, a marker naming the ref id, its tail), which [`ToolResult::Stored`] carries when it is
///   the result's one text block;
/// - the `data` of an image or audio block, or the `blob` of a binary resource: the block becomes
///   a text block `[an image, image/png: 52428800 bytes of base64, stored, not shown; ...ref_id]`
///   (the stored text is the base64 itself);
/// - any other string (a key included): `[a string of N bytes from the server, stored; ref_id=...]`.
///
/// The approval request the answer carried, held apart ([`Spills::hold_approval`]), is resolved
/// too ([`resolve_approval`]), so that no placeholder (and its nonce) reaches the host or the
/// model through an approval.
///
/// One stored text per spilled string. A placeholder of another nonce or an unknown number is the
/// server's own text and stays. Returns the result as a stored one when it is a single spilled
/// text block (no `structuredContent`, not an error).
///
/// # Errors
/// A message naming the server when a spilled string could not be stored.
pub(super) async fn resolve(call: &CallSpills, server: &str, result: &mut Value) -> Result<Option<ToolResult>, String> {
    // Every string of the answer ended before it was parsed: a pipe still open is another
    // message's of the same id (over HTTP, another stream), which is not waited for.
    lock(&call.open).clear();
    let pending: Vec<Spilled> = std::mem::take(&mut *lock(&call.spilled));
    let nonce = lock(&call.nonce).clone();
    let Some(nonce) = nonce.filter(|_| !pending.is_empty()) else { return Ok(None) };
    let mut resolved = HashMap::new();
    for spilled in pending {
        let output = match spilled.stored.await {
            Ok(Ok(output)) => output,
            Ok(Err(error)) => return Err(format!("cannot store a long string MCP server `{server}` sent: {error}")),
            Err(_) => return Err(format!("cannot store a long string MCP server `{server}` sent: the store stopped")),
        };
        let ToolResult::Stored(StoredResult { ref_id, text, cut }) = output.result else { continue };
        resolved.insert(placeholder(&nonce, spilled.seq), Resolved { text, ref_id, cut, bytes: output.bytes });
    }
    let mut single = None;
    if let Some(Value::Array(blocks)) = result.get_mut("content") {
        let one = blocks.len() == 1;
        for block in blocks.iter_mut() {
            resolve_block(block, &resolved, one.then_some(&mut single));
        }
    }
    replace_strings(result, &resolved);
    let held = lock(&call.approval).take();
    if let Some(held) = held {
        let held = resolve_approval(call, held, &resolved).await;
        *lock(&call.approval) = Some(held);
    }
    let plain = result.get("structuredContent").is_none_or(Value::is_null)
        && result.get("isError").and_then(Value::as_bool) != Some(true);
    Ok(single.filter(|_| plain))
}

/// The approval request of an answer as its call holds it: undecoded, or refused before it is
/// decoded (why, as [`crate::content::with_approval`] says it).
pub(super) type HeldApproval = Result<Value, String>;

/// The placeholders of `held`, an approval request of `call`'s answer ([`resolve`]): a spilled
/// `preview` is read back whole from the call's output store (it is the text the person is shown,
/// and at most [`MAX_APPROVAL_PREVIEW_BYTES`] is passed on); any other spilled string becomes the
/// `[a string of N bytes ...]` line, as in a result.
///
/// # Errors
/// Why the request is not passed on: its spilled preview is over [`MAX_APPROVAL_PREVIEW_BYTES`],
/// or cannot be read back.
async fn resolve_approval(call: &CallSpills, held: HeldApproval, resolved: &HashMap<String, Resolved>) -> HeldApproval {
    let mut approval = held?;
    if let Some(r) = approval.get("preview").and_then(Value::as_str).and_then(|text| resolved.get(text)) {
        if r.bytes > MAX_APPROVAL_PREVIEW_BYTES as u64 {
            return Err(format!("its preview is {} bytes, over the {MAX_APPROVAL_PREVIEW_BYTES} passed on", r.bytes));
        }
        let preview = if r.cut { read_back(call, &r.ref_id).await? } else { r.text.clone() };
        approval["preview"] = Value::String(preview);
    }
    replace_strings(&mut approval, resolved);
    Ok(approval)
}

/// The whole text stored under `ref_id` in `call`'s output store (at most
/// [`MAX_APPROVAL_PREVIEW_BYTES`]), read on the blocking pool.
///
/// # Errors
/// Why it cannot be read: the store, the read, or a text over the bound or not UTF-8.
async fn read_back(call: &CallSpills, ref_id: &str) -> Result<String, String> {
    let cannot = |why: &dyn std::fmt::Display| format!("its preview, cached as it arrived, cannot be read back: {why}");
    let store = call.ctx.resolve(&OUTPUT_STORE).await.map_err(|error| cannot(&error))?;
    let ref_id = ref_id.to_owned();
    let read = tool_runtime::off_worker(move || -> Result<Vec<u8>, String> {
        let reader = store.open_at(&ref_id, 0).map_err(|error| error.to_string())?;
        let mut bytes = Vec::new();
        reader
            .take(MAX_APPROVAL_PREVIEW_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| error.to_string())?;
        Ok(bytes)
    });
    let bytes = read.await.ok_or_else(|| cannot(&"the runtime is shutting down"))?.map_err(|error| cannot(&error))?;
    if bytes.len() > MAX_APPROVAL_PREVIEW_BYTES {
        return Err(cannot(&format_args!("it is over {MAX_APPROVAL_PREVIEW_BYTES} bytes")));
    }
    String::from_utf8(bytes).map_err(|_| cannot(&"it is not UTF-8"))
}

/// One content block's placeholders; `single`: set to the stored result when this block is the
/// result's only one and a spilled text.
fn resolve_block(block: &mut Value, resolved: &HashMap<String, Resolved>, single: Option<&mut Option<ToolResult>>) {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
    let media = |block: &Value, at: &[&str]| {
        let mut value = block;
        for key in at {
            value = &value[*key];
        }
        value.as_str().unwrap_or("application/octet-stream").to_owned()
    };
    let spilled = |value: &Value| value.as_str().and_then(|text| resolved.get(text));
    match kind.as_str() {
        "text" => {
            if let Some(r) = spilled(&block["text"]) {
                if let Some(single) = single {
                    *single = Some(ToolResult::Stored(StoredResult {
                        ref_id: r.ref_id.clone(),
                        text: r.text.clone(),
                        cut: r.cut,
                    }));
                }
                block["text"] = Value::String(r.text.clone());
            }
        }
        "image" | "audio" => {
            if let Some(r) = spilled(&block["data"]) {
                let what = if kind == "image" { "an image" } else { "audio" };
                *block = binary_block(what, &media(block, &["mimeType"]), r);
            }
        }
        "resource" => {
            if let Some(r) = spilled(&block["resource"]["text"]) {
                block["resource"]["text"] = Value::String(r.text.clone());
            } else if let Some(r) = spilled(&block["resource"]["blob"]) {
                let uri = block["resource"]["uri"].as_str().unwrap_or_default().to_owned();
                *block = binary_block(&format!("the resource {uri}"), &media(block, &["resource", "mimeType"]), r);
            }
        }
        _ => {}
    }
}

/// The text block standing for a spilled base64 payload.
fn binary_block(what: &str, media_type: &str, r: &Resolved) -> Value {
    let id = Value::String(r.ref_id.clone());
    serde_json::json!({
        "type": "text",
        "text": format!(
            "[{what}, {media_type}: {} bytes of base64, too large to show; the base64 is cached: read it with \
             tool_output_cache {{\"ref_id\":{id}}}]",
            r.bytes
        ),
    })
}

/// Every other placeholder in `value` (keys too).
fn replace_strings(value: &mut Value, resolved: &HashMap<String, Resolved>) {
    let say = |r: &Resolved| {
        format!(
            "[a string of {} bytes from the server, cached: read it with tool_output_cache {{\"ref_id\":{}}}]",
            r.bytes,
            Value::String(r.ref_id.clone())
        )
    };
    match value {
        Value::String(text) => {
            if let Some(r) = resolved.get(text.as_str()) {
                *text = say(r);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| replace_strings(item, resolved)),
        Value::Object(map) => {
            if map.keys().any(|key| resolved.contains_key(key)) {
                let old = std::mem::take(map);
                for (key, item) in old {
                    let key = resolved.get(&key).map_or(key, say);
                    map.insert(key, item);
                }
            }
            map.values_mut().for_each(|item| replace_strings(item, resolved));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONCE: &str = "n0";

    /// Runs `input` through a filter in chunks of `chunk` bytes; what passed, and the events.
    fn run(input: &[u8], chunk: usize, threshold: usize, registered: &'static [&'static str]) -> (String, Vec<Event>) {
        let mut filter =
            Filter::new(threshold, 1 << 30, NONCE.to_owned(), Box::new(move |id| registered.contains(&id)), true);
        let (mut out, mut events) = (Vec::new(), Vec::new());
        for piece in input.chunks(chunk) {
            filter.feed(piece, &mut out, &mut events);
        }
        (String::from_utf8(out).unwrap(), merge(events))
    }

    /// Events with consecutive data merged (chunking splits it anywhere).
    fn merge(events: Vec<Event>) -> Vec<Event> {
        let mut merged: Vec<Event> = Vec::new();
        for event in events {
            match (merged.last_mut(), event) {
                (Some(Event::Data(data)), Event::Data(more)) => data.extend(more),
                (_, event) => merged.push(event),
            }
        }
        merged
    }

    const CHUNKS: [usize; 5] = [1, 2, 3, 7, 4096];

    #[test]
    fn a_message_without_long_strings_passes_unchanged() {
        let line = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\\\"b\\\\c\\u00e9\"}],\"n\":[1,2.5e3,true,null]}}\n";
        for chunk in CHUNKS {
            assert_eq!(run(line.as_bytes(), chunk, 64, &["1"]), (line.to_owned(), vec![]), "chunk {chunk}");
        }
    }

    #[test]
    fn escapes_and_surrogate_pairs_split_across_reads_decode_exactly() {
        let line = r#"{"id":7,"result":{"text":"0123456789ab\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00z\u4e2d"}}"#;
        let want = "0123456789ab\"\\/\u{8}\u{c}\n\r\té😀z中";
        for chunk in CHUNKS {
            let (out, events) = run(line.as_bytes(), chunk, 24, &["7"]);
            assert_eq!(out, r#"{"id":7,"result":{"text":"[spilled n0 1]"}}"#, "chunk {chunk}");
            assert_eq!(
                events,
                vec![Event::Open { id: "7".to_owned(), seq: 1 }, Event::Data(want.as_bytes().to_vec()), Event::End],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn a_lone_surrogate_decodes_as_the_replacement_character() {
        let line = r#"{"id":"a","result":"xxxx\ud800yy\udc00"}"#;
        for chunk in CHUNKS {
            let (_, events) = run(line.as_bytes(), chunk, 8, &["\"a\""]);
            assert_eq!(events[1], Event::Data("xxxx\u{FFFD}yy\u{FFFD}".as_bytes().to_vec()), "chunk {chunk}");
        }
    }

    #[test]
    fn a_long_string_of_a_message_naming_no_running_call_is_cut_to_the_threshold() {
        let line = r#"{"method":"notifications/message","params":{"data":"0123456789abcdefghijklmnopqrstuvwxyz"}}"#;
        for chunk in CHUNKS {
            let (out, events) = run(line.as_bytes(), chunk, 24, &["1"]);
            assert_eq!(
                out,
                r#"{"method":"notifications/message","params":{"data":"0123456789abcdefghijklmn\n[... cut: the server's string was 36 bytes, over the import's inline_result_bytes (24)]"}}"#,
                "chunk {chunk}"
            );
            assert_eq!(events, vec![]);
        }
    }

    #[test]
    fn an_id_after_the_long_string_names_no_call() {
        let line = r#"{"result":{"text":"0123456789"},"id":1}"#;
        let (out, events) = run(line.as_bytes(), 3, 8, &["1"]);
        assert!(out.starts_with(r#"{"result":{"text":"01234567\n[... cut"#), "{out}");
        assert_eq!(events, vec![]);
    }

    #[test]
    fn a_nested_id_is_not_the_messages_id() {
        let line = r#"{"result":{"id":1,"text":"0123456789"}}"#;
        let (_, events) = run(line.as_bytes(), 5, 8, &["1"]);
        assert_eq!(events, vec![]);
    }

    #[test]
    fn a_long_key_is_spilled_like_a_value() {
        let line = r#"{"id":1,"result":{"0123456789":1}}"#;
        let (out, _) = run(line.as_bytes(), 4096, 8, &["1"]);
        assert_eq!(out, r#"{"id":1,"result":{"[spilled n0 1]":1}}"#);
    }

    #[test]
    fn a_request_of_the_server_reusing_a_running_calls_id_is_cut_not_stored() {
        // The server numbers its own requests: its `sampling/createMessage` 1 is not call 1's answer.
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"t":"0123456789"}}"#;
        for chunk in CHUNKS {
            let (out, events) = run(line.as_bytes(), chunk, 8, &["1"]);
            assert!(out.ends_with(r#""params":{"t":"01234567\n[... cut: the server's string was 10 bytes, over the import's inline_result_bytes (8)]"}}"#), "{out}");
            assert_eq!(events, vec![], "chunk {chunk}");
        }
    }

    #[test]
    fn an_error_answer_to_a_running_call_is_cut_not_stored() {
        let line = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"0123456789"}}"#;
        let (out, events) = run(line.as_bytes(), 3, 8, &["1"]);
        assert!(out.contains(r#""message":"01234567\n[... cut"#), "{out}");
        assert_eq!(events, vec![]);
    }

    #[test]
    fn a_long_top_level_key_after_the_result_is_cut_not_stored() {
        let line = r#"{"id":1,"result":{},"0123456789":1}"#;
        let (out, events) = run(line.as_bytes(), 2, 8, &["1"]);
        assert!(out.starts_with(r#"{"id":1,"result":{},"01234567\n[... cut"#), "{out}");
        assert_eq!(events, vec![]);
    }

    #[test]
    fn a_forged_placeholder_is_the_servers_text() {
        let line = r#"{"id":1,"result":"[spilled n0 1]"}"#;
        assert_eq!(run(line.as_bytes(), 4096, 64, &["1"]), (line.to_owned(), vec![]));
    }

    #[test]
    fn each_long_string_gets_its_own_number_and_the_id_resets_per_line() {
        let input = "{\"id\":1,\"result\":[\"aaaaaaaaaa\",\"bbbbbbbbbb\"]}\n{\"id\":2,\"result\":\"cccccccccc\"}\n";
        let (out, events) = run(input.as_bytes(), 4096, 8, &["1"]);
        assert_eq!(
            out,
            "{\"id\":1,\"result\":[\"[spilled n0 1]\",\"[spilled n0 2]\"]}\n{\"id\":2,\"result\":\"cccccccc\\n[... cut: the server's string was 10 bytes, over the import's inline_result_bytes (8)]\"}\n"
        );
        assert_eq!(
            events,
            vec![
                Event::Open { id: "1".to_owned(), seq: 1 },
                Event::Data(b"aaaaaaaaaa".to_vec()),
                Event::End,
                Event::Open { id: "1".to_owned(), seq: 2 },
                Event::Data(b"bbbbbbbbbb".to_vec()),
                Event::End,
            ]
        );
    }

    #[test]
    fn a_message_over_the_cap_is_dropped_to_its_line_end_and_its_call_told() {
        let input = "{\"id\":1,\"result\":\"0123456789abcdef\"}\n{\"id\":2}\n";
        for chunk in CHUNKS {
            let mut filter = Filter::new(8, 20, NONCE.to_owned(), Box::new(|id| id == "1"), true);
            let (mut out, mut events) = (Vec::new(), Vec::new());
            for piece in input.as_bytes().chunks(chunk) {
                filter.feed(piece, &mut out, &mut events);
            }
            assert_eq!(String::from_utf8(out).unwrap(), "{\"id\":1,\"result\":\"\n{\"id\":2}\n", "chunk {chunk}");
            assert_eq!(events, vec![Event::Over { id: Some("1".to_owned()) }], "chunk {chunk}");
        }
    }

    /// `{"jsonrpc":"2.0","id":<id>,"result":{"tools":[...]}}` of short strings, about 17 MiB.
    fn listing_of_short_strings(id: &str) -> Vec<u8> {
        let mut text = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"tools\":[").into_bytes();
        let entry = format!("\"{}\",", "t".repeat(998));
        while text.len() < 17 << 20 {
            text.extend_from_slice(entry.as_bytes());
        }
        text.extend_from_slice(b"\"end\"]}}\n{\"id\":9}\n");
        text
    }

    #[test]
    fn a_message_answering_no_running_call_is_capped_at_sixteen_mebibytes_whatever_max_result_bytes() {
        let input = listing_of_short_strings("7");
        let mut filter = Filter::new(1 << 20, 256 << 20, NONCE.to_owned(), Box::new(|id| id == "1"), true);
        let (mut out, mut events) = (Vec::new(), Vec::new());
        for piece in input.chunks(64 * 1024) {
            filter.feed(piece, &mut out, &mut events);
        }
        assert_eq!(events, vec![Event::Over { id: None }]);
        // Passed on: the message up to its last whole string within 16 MiB (the string the cap
        // fell in is dropped), its line end, an error answer to its request 7 (so that the
        // request fails at once), and the next message whole.
        let error = "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32603,\"message\":\"the server's message \
                     answering this request is over 16777216 bytes as sent (the import's cap on a message that \
                     answers no tool call); it was dropped\"}}\n";
        let tail = format!("\"\n{error}{{\"id\":9}}\n");
        let cut = out.len() - tail.len();
        assert!(cut <= 16 << 20 && cut > (16 << 20) - 1001, "{cut}");
        assert_eq!(String::from_utf8_lossy(&out[cut..]), tail);
    }

    #[test]
    fn an_answer_to_a_running_call_is_capped_by_max_result_bytes_alone() {
        let input = listing_of_short_strings("1");
        let mut filter = Filter::new(1 << 20, 256 << 20, NONCE.to_owned(), Box::new(|id| id == "1"), true);
        let (mut out, mut events) = (Vec::new(), Vec::new());
        for piece in input.chunks(64 * 1024) {
            filter.feed(piece, &mut out, &mut events);
        }
        assert_eq!(events, vec![]);
        assert_eq!(out, input);
    }

    #[test]
    fn nesting_past_the_tracked_depth_holds_no_stack_beyond_it() {
        let mut filter = Filter::new(8, u64::MAX, NONCE.to_owned(), Box::new(|_| true), true);
        let (mut out, mut events) = (Vec::new(), Vec::new());
        filter.feed(&vec![b'['; 100_000], &mut out, &mut events);
        filter.feed(br#""0123456789"]"#, &mut out, &mut events);
        assert_eq!(filter.stack.len(), TRACKED_DEPTH);
        assert_eq!(filter.depth, 99_999);
        // No id at the top level: the long string is cut, not stored.
        assert!(out.ends_with(
            br#""01234567\n[... cut: the server's string was 10 bytes, over the import's inline_result_bytes (8)]"]"#
        ));
        assert_eq!(events, vec![]);
    }

    #[test]
    fn a_broken_line_ends_its_message_and_the_next_line_is_read_afresh() {
        // A raw line end inside a string, then a bad `\u` escape: neither is JSON; each line is
        // passed on as it came, and the next message's id still counts.
        let input =
            "{\"id\":1,\"result\":\"abc\n{\"id\":1,\"result\":\"\\uZZ\"}\n{\"id\":2,\"result\":\"0123456789\"}\n";
        let (out, events) = run(input.as_bytes(), 3, 8, &["2"]);
        assert_eq!(
            out,
            "{\"id\":1,\"result\":\"abc\n{\"id\":1,\"result\":\"\\uZZ\"}\n{\"id\":2,\"result\":\"[spilled n0 1]\"}\n"
        );
        assert_eq!(
            events,
            vec![Event::Open { id: "2".to_owned(), seq: 1 }, Event::Data(b"0123456789".to_vec()), Event::End]
        );
    }

    #[test]
    fn an_id_longer_than_its_cap_names_no_call() {
        let id = "9".repeat(MAX_ID_BYTES + 1);
        let line = format!("{{\"id\":{id},\"result\":\"0123456789\"}}");
        let mut filter = Filter::new(8, u64::MAX, NONCE.to_owned(), Box::new(|_| true), true);
        let (mut out, mut events) = (Vec::new(), Vec::new());
        filter.feed(line.as_bytes(), &mut out, &mut events);
        assert_eq!(events, vec![]);
    }

    #[test]
    fn over_http_a_line_end_is_whitespace_and_a_message_past_the_cap_is_dropped_to_its_end() {
        let body = "{\n \"id\": 1,\n \"result\": \"0123456789\"\n}";
        let mut filter = Filter::new(8, u64::MAX, NONCE.to_owned(), Box::new(|id| id == "1"), false);
        let (mut out, mut events) = (Vec::new(), Vec::new());
        filter.feed(body.as_bytes(), &mut out, &mut events);
        assert_eq!(String::from_utf8(out).unwrap(), "{\n \"id\": 1,\n \"result\": \"[spilled n0 1]\"\n}");
        let mut filter = Filter::new(8, 14, NONCE.to_owned(), Box::new(|id| id == "1"), false);
        let (mut out, mut events) = (Vec::new(), Vec::new());
        filter.feed(format!("{body}\n{body}").as_bytes(), &mut out, &mut events);
        assert_eq!(String::from_utf8(out).unwrap(), "{\n \"id\": 1,\n \"");
        assert_eq!(events, vec![Event::Over { id: Some("1".to_owned()) }]);
    }

    #[test]
    fn the_largest_threshold_passes_every_string_on() {
        let line = r#"{"id":1,"result":"0123456789"}"#;
        assert_eq!(run(line.as_bytes(), 3, usize::MAX, &["1"]), (line.to_owned(), vec![]));
    }

    #[test]
    fn the_filter_holds_no_more_than_a_short_string_whatever_the_length() {
        let mut filter = Filter::new(1024, u64::MAX, NONCE.to_owned(), Box::new(|_| true), true);
        let (mut out, mut events) = (Vec::new(), Vec::new());
        filter.feed(br#"{"id":1,"result":""#, &mut out, &mut events);
        let piece = vec![b'x'; 65536];
        for _ in 0..160 {
            filter.feed(&piece, &mut out, &mut events);
            events.clear();
        }
        filter.feed(b"\"}\n", &mut out, &mut events);
        assert_eq!(String::from_utf8(out).unwrap(), "{\"id\":1,\"result\":\"[spilled n0 1]\"}\n");
        assert!(filter.peak_held_bytes() <= 2 * 1024 + 2, "held {}", filter.peak_held_bytes());
    }

    /// A connection spilling past 8 bytes, and its call 1 (in a context whose output store is a
    /// memory store), registered.
    fn a_running_call() -> (Arc<Spills>, Arc<CallSpills>) {
        let limits = super::super::ImportLimits { inline_result_bytes: 8, ..super::super::ImportLimits::default() };
        let spills = Spills::new("s", &limits);
        let call = a_call(ToolContext::builder());
        spills.register(&RequestId::Number(1), &call);
        (spills, call)
    }

    /// A call's spills, in the context `builder` makes with a memory store as its output store.
    fn a_call(builder: tool_runtime::ToolContextBuilder) -> Arc<CallSpills> {
        let store: Arc<dyn tool_runtime::output::OutputStore> = Arc::new(tool_runtime::output::MemoryStore::new());
        CallSpills::new(&builder.override_dependency(&OUTPUT_STORE, store).build())
    }

    /// [`a_running_call`] with the call's first spill opened and left open: the string
    /// `0123456789` began and never ended (a stalled upstream). The pipe is returned so that the
    /// pump's side stays open, as it does while the upstream sends nothing.
    async fn a_stalled_spill() -> (Arc<Spills>, Arc<CallSpills>, Option<Pipe>) {
        let (spills, call) = a_running_call();
        let mut filter = spills.filter(true);
        let (mut out, mut events, mut pipe) = (Vec::new(), Vec::new(), None);
        filter.feed(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"0123456789"#,
            &mut out,
            &mut events,
        );
        spills.handle(&mut events, &mut pipe).await;
        assert!(pipe.is_some(), "the spill is open");
        (spills, call, pipe)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_spill_left_open_when_its_call_ends_is_closed_and_its_storing_thread_freed() {
        let (_spills, call, _pipe) = a_stalled_spill().await;
        // The call is cancelled or times out: its registration goes.
        call.unregister();
        let stored = lock(&call.spilled).pop().expect("one spill").stored;
        let stored = tokio::time::timeout(std::time::Duration::from_secs(20), stored)
            .await
            .expect("the storing thread still waits for the rest of the string")
            .expect("the storing task ended without an answer")
            .expect("stored");
        assert_eq!(stored.bytes, 10);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_answer_ends_its_call_while_another_message_of_its_id_stalls_mid_string() {
        // Over HTTP another stream may carry a message of the call's id: the call resolves its own
        // answer (which has no placeholder) without waiting for the stalled one.
        let (_spills, call, _pipe) = a_stalled_spill().await;
        let mut result = serde_json::json!({"content": [{"type": "text", "text": "done"}]});
        let resolved = tokio::time::timeout(std::time::Duration::from_secs(20), resolve(&call, "s", &mut result))
            .await
            .expect("resolving waits for the stalled string");
        assert!(matches!(resolved, Ok(None)), "{resolved:?}");
        assert_eq!(result, serde_json::json!({"content": [{"type": "text", "text": "done"}]}));
    }

    #[test]
    fn a_line_that_never_ends_passes_at_most_the_cap_and_tells_its_call_once() {
        // 20 MB of one message without a line end, none of it in a string, against a 1 MiB cap.
        let cap = 1 << 20;
        let mut filter = Filter::new(4096, cap, NONCE.to_owned(), Box::new(|id| id == "1"), true);
        let (mut out, mut events, mut passed) = (Vec::new(), Vec::new(), 0);
        filter.feed(br#"{"jsonrpc":"2.0","id":1,"result":["#, &mut out, &mut events);
        let piece = b"12345678,".repeat(7282);
        for _ in 0..(20 << 20) / piece.len() {
            filter.feed(&piece, &mut out, &mut events);
            passed += out.len();
            out.clear();
        }
        // What passed, the head included, is the cap exactly.
        assert_eq!(u64::try_from(passed).unwrap_or(u64::MAX), cap);
        assert_eq!(events, vec![Event::Over { id: Some("1".to_owned()) }]);
        // The most held: the key `jsonrpc`, raw (with its closing quote) and decoded.
        assert_eq!(filter.peak_held_bytes(), 8 + 7);
        // Its end comes: the line ends and the next message is read afresh.
        filter.feed(b"1]}\n{\"id\":2}\n", &mut out, &mut events);
        assert_eq!(String::from_utf8(out).unwrap(), "\n{\"id\":2}\n");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_placeholder_of_another_calls_spill_stays_text_even_with_the_nonce() {
        // Call 1 (one principal) spills a string; the server, knowing the nonce, names that spill
        // in its answer to call 2 (another principal): call 2 does not get call 1's ref id.
        let (spills, call1) = a_running_call();
        let call2 = a_call(ToolContext::builder().principal("bo"));
        spills.register(&RequestId::Number(2), &call2);
        let mut filter = spills.filter(true);
        let (mut out, mut events, mut pipe) = (Vec::new(), Vec::new(), None);
        filter.feed(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"0123456789"}]}}"#,
            &mut out,
            &mut events,
        );
        spills.handle(&mut events, &mut pipe).await;
        let forged = placeholder(&spills.nonce, 1);
        let mut answer = serde_json::json!({"content": [{"type": "text", "text": forged}]});
        assert!(matches!(resolve(&call2, "s", &mut answer).await, Ok(None)));
        assert_eq!(answer, serde_json::json!({"content": [{"type": "text", "text": forged}]}));
        // Call 1 resolves its own.
        let mut own = serde_json::json!({"content": [{"type": "text", "text": forged}]});
        assert!(matches!(resolve(&call1, "s", &mut own).await, Ok(Some(ToolResult::Stored(_)))));
        assert_eq!(own["content"][0]["text"], "0123456789");
    }

    /// A memory store whose writes wait until its gate's sender is dropped: a stalled disk.
    struct Gated {
        inner: tool_runtime::output::MemoryStore,
        gate: Mutex<std::sync::mpsc::Receiver<()>>,
    }

    impl tool_runtime::output::OutputStore for Gated {
        fn put_scoped(
            &self,
            scope: OutputScope<'_>,
            ref_id: &str,
            text: &mut dyn Read,
            parts: &[tool_runtime::ContentPart],
        ) -> Result<tool_runtime::output::StoredInfo, StoreError> {
            let _ = lock(&self.gate).recv();
            self.inner.put_scoped(scope, ref_id, text, parts)
        }
        fn check_scope(&self, ref_id: &str, scope: OutputScope<'_>) -> Result<(), StoreError> {
            self.inner.check_scope(ref_id, scope)
        }
        fn info(&self, ref_id: &str) -> Result<tool_runtime::output::StoredInfo, StoreError> {
            self.inner.info(ref_id)
        }
        fn open_at(&self, ref_id: &str, offset: u64) -> Result<Box<dyn Read + Send>, StoreError> {
            self.inner.open_at(ref_id, offset)
        }
        fn checkpoint(&self, ref_id: &str, line: u64) -> Result<(u64, u64), StoreError> {
            self.inner.checkpoint(ref_id, line)
        }
        fn parts(&self, ref_id: &str) -> Result<Vec<tool_runtime::ContentPart>, StoreError> {
            self.inner.parts(ref_id)
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stalled_store_stops_the_reading_of_the_upstream_and_then_gets_the_whole_string() {
        let (open, gate) = std::sync::mpsc::channel::<()>();
        let store = Arc::new(Gated { inner: tool_runtime::output::MemoryStore::new(), gate: Mutex::new(gate) });
        let limits = super::super::ImportLimits { inline_result_bytes: 4096, ..super::super::ImportLimits::default() };
        let spills = Spills::new("s", &limits);
        let ctx = ToolContext::builder()
            .override_dependency(&OUTPUT_STORE, store.clone() as Arc<dyn tool_runtime::output::OutputStore>)
            .build();
        let call = CallSpills::new(&ctx);
        spills.register(&RequestId::Number(1), &call);
        let (mut upstream, pumped) = tokio::io::duplex(READ_BYTES);
        let pump = tokio::spawn(spills.clone().pump(pumped, tokio::io::sink()));
        // The server writes 20 MiB of one string, counting what it could write.
        let written = Arc::new(AtomicUsize::new(0));
        let writer = tokio::spawn({
            let written = written.clone();
            async move {
                upstream.write_all(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""#).await?;
                let piece = vec![b'x'; 64 * 1024];
                for _ in 0..320 {
                    upstream.write_all(&piece).await?;
                    written.fetch_add(piece.len(), Ordering::Relaxed);
                }
                upstream.write_all(b"\"}]}}\n").await?;
                upstream.shutdown().await
            }
        });
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        // The store waits: what the server could write is what the pipes hold (the duplex, the
        // pump's read buffer, the spill's pipe and the reader's piece), not the string.
        let held = written.load(Ordering::Relaxed);
        assert!(held <= 16 * READ_BYTES, "the server wrote {held} bytes while the store waited");
        drop(open);
        tokio::time::timeout(std::time::Duration::from_secs(60), writer).await.unwrap().unwrap().unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(60), pump).await.unwrap().unwrap();
        let mut answer = serde_json::json!({"content": [{"type": "text", "text": placeholder(&spills.nonce, 1)}]});
        let Ok(Some(ToolResult::Stored(StoredResult { ref_id, cut: true, .. }))) =
            resolve(&call, "s", &mut answer).await
        else {
            panic!("not stored: {answer}")
        };
        let mut whole = Vec::new();
        tool_runtime::output::OutputStore::open_at(&*store, &ref_id, 0).unwrap().read_to_end(&mut whole).unwrap();
        assert_eq!(whole.len(), 320 * 64 * 1024);
        assert!(whole.iter().all(|b| *b == b'x'));
    }

    #[test]
    fn a_message_with_a_second_top_level_id_reaches_no_call() {
        // The filter stores the string for call 1 (the id before it); rmcp refuses the message
        // (duplicate `id`), so no call, 1 or 2, is answered with a placeholder of the other's.
        let line = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"0123456789"}]},"id":2}"#;
        let (out, events) = run(line, 5, 8, &["1", "2"]);
        assert_eq!(events[0], Event::Open { id: "1".to_owned(), seq: 1 });
        let parsed = serde_json::from_str::<rmcp::model::ServerJsonRpcMessage>(&out);
        assert_eq!(parsed.map_err(|e| e.to_string()).err().as_deref(), Some("unrecognized JSON-RPC message"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn invalid_utf8_inside_a_spilled_string_is_stored_with_replacement_characters() {
        let (spills, call) = a_running_call();
        let mut filter = spills.filter(true);
        let (mut out, mut events, mut pipe) = (Vec::new(), Vec::new(), None);
        filter.feed(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"abcdefgh\xff\xfeij\"}]}}\n", &mut out, &mut events);
        spills.handle(&mut events, &mut pipe).await;
        let mut message: Value = serde_json::from_slice(&out).unwrap();
        let resolved = resolve(&call, "s", &mut message["result"]).await;
        let Ok(Some(ToolResult::Stored(StoredResult { text, cut: false, .. }))) = resolved else {
            panic!("{resolved:?}")
        };
        assert_eq!(text, "abcdefgh\u{FFFD}\u{FFFD}ij");
        assert_eq!(message["result"]["content"][0]["text"], "abcdefgh\u{FFFD}\u{FFFD}ij");
    }

    /// Random JSON written with random escapes and whitespace, through the filter at random
    /// chunk sizes: what passes parses as the input with its long strings replaced (spilled in
    /// the result of a running call's answer, cut elsewhere), and every spilled string arrives
    /// whole, in order.
    mod random_json {
        use proptest::prelude::*;
        use serde_json::{Map, Value};

        use super::super::{Event, Filter};
        use super::{NONCE, merge};

        const THRESHOLD: usize = 16;

        /// A splitmix64 step: the choices of writing and chunking, from proptest's seed.
        fn next(state: &mut u64) -> u64 {
            *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn text() -> impl Strategy<Value = String> {
            let chars = vec!['a', 'z', 'é', '中', '😀', '"', '\\', '/', '\n', '\t', '\u{0}', '\u{1f}', '\u{7f}', ' '];
            prop::collection::vec(prop::sample::select(chars), 0..40).prop_map(String::from_iter)
        }

        fn value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                any::<u64>().prop_map(Value::from),
                prop::sample::select(vec![0.5, -2.25, 1e300, -1.5e-300]).prop_map(Value::from),
                text().prop_map(Value::String),
            ];
            leaf.prop_recursive(4, 48, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                    prop::collection::btree_map(text(), inner, 0..6)
                        .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
                ]
            })
        }

        /// Random whitespace; a line end only in an HTTP body (`lines` false), where it is one.
        fn space(rng: &mut u64, out: &mut String, lines: bool) {
            let kinds: &[char] = if lines { &[' ', '\t', '\r'] } else { &[' ', '\t', '\r', '\n'] };
            for _ in 0..next(rng) % 3 {
                out.push(kinds[usize::try_from(next(rng)).unwrap_or(0) % kinds.len()]);
            }
        }

        /// `text` as a JSON string, each character written raw, as its short escape or as
        /// `\uXXXX` (a surrogate pair past U+FFFF), at random where JSON allows.
        fn write_str(text: &str, rng: &mut u64, out: &mut String) {
            out.push('"');
            for c in text.chars() {
                let short = match c {
                    '"' => Some("\\\""),
                    '\\' => Some("\\\\"),
                    '/' => Some("\\/"),
                    '\n' => Some("\\n"),
                    '\t' => Some("\\t"),
                    _ => None,
                };
                let raw_ok = c != '"' && c != '\\' && u32::from(c) >= 0x20;
                match next(rng) % 3 {
                    0 if raw_ok => out.push(c),
                    1 if short.is_some() => out.push_str(short.unwrap_or_default()),
                    _ => {
                        let mut units = [0u16; 2];
                        for unit in c.encode_utf16(&mut units) {
                            if next(rng).is_multiple_of(2) {
                                out.push_str(&format!("\\u{unit:04x}"));
                            } else {
                                out.push_str(&format!("\\u{unit:04X}"));
                            }
                        }
                    }
                }
            }
            out.push('"');
        }

        fn write(value: &Value, rng: &mut u64, out: &mut String, lines: bool) {
            space(rng, out, lines);
            match value {
                Value::String(text) => write_str(text, rng, out),
                Value::Array(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        write(item, rng, out, lines);
                    }
                    space(rng, out, lines);
                    out.push(']');
                }
                Value::Object(map) => {
                    out.push('{');
                    for (i, (key, item)) in map.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        space(rng, out, lines);
                        write_str(key, rng, out);
                        space(rng, out, lines);
                        out.push(':');
                        write(item, rng, out, lines);
                    }
                    space(rng, out, lines);
                    out.push('}');
                }
                other => out.push_str(&other.to_string()),
            }
            space(rng, out, lines);
        }

        /// `text` cut as the filter cuts a string past the threshold.
        fn cut(text: &str) -> String {
            let mut end = THRESHOLD;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            format!(
                "{}\n[... cut: the server's string was {} bytes, over the import's inline_result_bytes ({THRESHOLD})]",
                &text[..end],
                text.len()
            )
        }

        /// `value` with each string (keys too) past the threshold replaced by `long`, in the
        /// order they are written.
        fn replace(value: &Value, long: &mut impl FnMut(&str) -> String) -> Value {
            let mut one = |text: &str| if text.len() > THRESHOLD { long(text) } else { text.to_owned() };
            match value {
                Value::String(text) => Value::String(one(text)),
                Value::Array(items) => Value::Array(items.iter().map(|item| replace(item, long)).collect()),
                Value::Object(map) => {
                    let mut replaced = Map::new();
                    for (key, item) in map {
                        let key = if key.len() > THRESHOLD { long(key) } else { key.clone() };
                        replaced.insert(key, replace(item, long));
                    }
                    Value::Object(replaced)
                }
                other => other.clone(),
            }
        }

        /// `message` written at random (as a line of stdio, or with `http` as an HTTP body) through
        /// a filter of a connection whose running call is 1, in random chunks; what passed,
        /// parsed, and the spilled strings.
        fn filtered(message: &Value, seed: u64, http: bool) -> (Value, Vec<Vec<u8>>) {
            let mut rng = seed;
            let mut text = String::new();
            write(message, &mut rng, &mut text, !http);
            if !http {
                text.push('\n');
            }
            let mut filter = Filter::new(THRESHOLD, 1 << 30, NONCE.to_owned(), Box::new(|id| id == "1"), !http);
            let (mut out, mut events) = (Vec::new(), Vec::new());
            let mut rest = text.as_bytes();
            while !rest.is_empty() {
                let n = usize::try_from(1 + next(&mut rng) % 9).unwrap_or(1).min(rest.len());
                filter.feed(&rest[..n], &mut out, &mut events);
                rest = &rest[n..];
            }
            let parsed = serde_json::from_slice(&out)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nfrom: {text}", String::from_utf8_lossy(&out)));
            let mut spilled = Vec::new();
            let mut seq = 0;
            for event in merge(events) {
                match event {
                    Event::Open { id, seq: n } => {
                        seq += 1;
                        assert_eq!((id.as_str(), n), ("1", seq));
                        spilled.push(Vec::new());
                    }
                    Event::Data(data) => spilled.last_mut().expect("data before an open").extend(data),
                    Event::End => {}
                    Event::Over { .. } => panic!("over the cap"),
                }
            }
            (parsed, spilled)
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 192, failure_persistence: None, ..ProptestConfig::default() })]

            #[test]
            fn a_running_calls_result_keeps_its_meaning_with_its_long_strings_spilled(
                result in value(), seed in any::<u64>(), http in any::<bool>()
            ) {
                let message = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": result});
                let (parsed, spilled) = filtered(&message, seed, http);
                let (mut seq, mut long) = (0, Vec::new());
                let expected = replace(&result, &mut |text: &str| {
                    seq += 1;
                    long.push(text.as_bytes().to_vec());
                    format!("[spilled {NONCE} {seq}]")
                });
                prop_assert_eq!(parsed, serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": expected}));
                prop_assert_eq!(spilled, long);
            }

            #[test]
            fn an_answer_to_no_running_call_keeps_its_meaning_with_its_long_strings_cut(
                result in value(), seed in any::<u64>()
            ) {
                let message = serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": result});
                let (parsed, spilled) = filtered(&message, seed, seed % 2 == 0);
                let expected = replace(&result, &mut |text: &str| cut(text));
                prop_assert_eq!(parsed, serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": expected}));
                prop_assert!(spilled.is_empty());
            }

            #[test]
            fn a_request_of_the_server_with_a_running_calls_id_has_its_long_strings_cut(
                params in value(), seed in any::<u64>()
            ) {
                let message = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "sampling/m", "params": params});
                let (parsed, spilled) = filtered(&message, seed, seed % 2 == 0);
                let expected = replace(&params, &mut |text: &str| cut(text));
                prop_assert_eq!(
                    parsed,
                    serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "sampling/m", "params": expected})
                );
                prop_assert!(spilled.is_empty());
            }
        }
    }
}
