//! Large results as a stream: stored as they are read, with only a head and a tail kept in memory.

use std::collections::VecDeque;
use std::io::{self, Read};

use super::scope::OutputScope;
use super::store::{OUTPUT_STORE, OutputStore, StoreError};
use crate::context::ToolContext;
use crate::ref_id::mint_ref_id;
use crate::result::{StoredResult, ToolResult};

/// Bytes of a streamed result the message shows by default (16 KiB = 16384): the first 3/4
/// (12 KiB) and the last 1/4 (4 KiB). Source: the Go seed's `InlineResultBytes` (16 KiB inline).
pub const STREAM_PREVIEW_BYTES: usize = 16 * 1024;

/// What [`store_stream`] stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamedOutput {
    /// The result for the model: [`ToolResult::Stored`] with the ref id and the preview (the whole
    /// text when it fit in the preview, else head, marker, tail).
    pub result: ToolResult,
    /// Bytes read from the stream (all stored).
    pub bytes: u64,
    /// The most bytes of the text held in memory at once while storing it (head and tail): at
    /// most the preview size, whatever the stream's length. The store's own buffers are not
    /// counted (a `FileStore` streams in 64 KiB pieces; a
    /// [`MemoryStore`](super::MemoryStore) holds the whole text by design).
    pub peak_held_bytes: usize,
}

/// Passes a stream through to the store, keeping its first `head_cap` bytes and a window of its
/// last `tail_cap` bytes.
struct Tee<'a> {
    inner: &'a mut dyn Read,
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    bytes: u64,
    peak: usize,
}

impl Read for Tee<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut chunk = &buf[..n];
        self.bytes += n as u64;
        let to_head = chunk.len().min(self.head_cap - self.head.len());
        self.head.extend_from_slice(&chunk[..to_head]);
        chunk = &chunk[to_head..];
        if chunk.len() >= self.tail_cap {
            self.tail.clear();
            chunk = &chunk[chunk.len() - self.tail_cap..];
        }
        let overflow = (self.tail.len() + chunk.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(chunk);
        self.peak = self.peak.max(self.head.len() + self.tail.len());
        Ok(n)
    }
}

/// The preview of a stored stream: the whole text when nothing was dropped, else the head (cut
/// back to a character boundary), a marker naming the ref, and the tail (from a character
/// boundary).
fn preview(head: &[u8], tail: &[u8], bytes: u64, ref_id: &str) -> (String, bool) {
    let kept = (head.len() + tail.len()) as u64;
    if kept == bytes {
        let mut whole = head.to_vec();
        whole.extend_from_slice(tail);
        return (String::from_utf8_lossy(&whole).into_owned(), false);
    }
    let head = match std::str::from_utf8(head) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
    };
    // A character cut at the window's start shows as at most 3 continuation bytes: skip them.
    let start = tail.iter().take(3).take_while(|&&b| b & 0xC0 == 0x80).count();
    let tail = &tail[start..];
    let omitted = bytes - head.len() as u64 - tail.len() as u64;
    let tail = String::from_utf8_lossy(tail);
    let id = serde_json::Value::String(ref_id.to_owned());
    (
        format!(
            "{head}\n[... {omitted} bytes omitted of {bytes}; the whole output is cached: read it with tool_output_cache \
             {{\"ref_id\":{id}}} or search it with tool_output_cache_grep]\n{tail}"
        ),
        true,
    )
}

/// Stores the text read from `reader` (to its end) in `store` under a new ref id
/// ([`mint_ref_id`]) made in `scope`, as it arrives, keeping in memory only the first 3/4 and the
/// last 1/4 of `preview_bytes`; returns the result the model sees ([`ToolResult::Stored`]).
///
/// This is the one path for a result too large for a `String`: the output layer does not store a
/// stored result again (its message keeps the ref id as `ref_id`), and caps its preview like
/// any other text.
///
/// # Errors
/// [`StoreError::Io`] when no ref id can be minted, or reading the stream or writing the store
/// fails (nothing is then published).
pub fn store_stream(
    store: &dyn OutputStore,
    scope: OutputScope<'_>,
    reader: &mut dyn Read,
    preview_bytes: usize,
) -> Result<StreamedOutput, StoreError> {
    let ref_id = mint_ref_id().map_err(|e| StoreError::Io { ref_id: String::new(), message: e.to_string() })?;
    let head_cap = preview_bytes - preview_bytes / 4;
    let mut tee = Tee {
        inner: reader,
        head: Vec::with_capacity(head_cap.min(64 * 1024)),
        head_cap,
        tail: VecDeque::new(),
        tail_cap: preview_bytes / 4,
        bytes: 0,
        peak: 0,
    };
    store.put_scoped(scope, &ref_id, &mut tee, &[])?;
    let (text, cut) = preview(&tee.head, tee.tail.make_contiguous(), tee.bytes, &ref_id);
    Ok(StreamedOutput {
        result: ToolResult::Stored(StoredResult { ref_id, text, cut }),
        bytes: tee.bytes,
        peak_held_bytes: tee.peak,
    })
}

/// [`store_stream`] for a tool: into the call's output store ([`OUTPUT_STORE`]) in the call's
/// scope, with [`STREAM_PREVIEW_BYTES`], on the blocking pool when a tokio runtime is running (the
/// reading and writing block). A tool returns its result:
///
/// ```ignore
/// #[tool]
/// async fn dump(ctx: &ToolContext) -> Result<ToolResult, String> {
///     let file = std::fs::File::open("big.log").map_err(|e| e.to_string())?;
///     tool_runtime::output::stream_result(ctx, file).await.map_err(|e| e.to_string())
/// }
/// ```
///
/// # Errors
/// As [`store_stream`]; [`StoreError::Io`] when the store cannot be had or the blocking task
/// failed.
pub async fn stream_result(ctx: &ToolContext, reader: impl Read + Send + 'static) -> Result<ToolResult, StoreError> {
    let io = |message: String| StoreError::Io { ref_id: String::new(), message };
    let store = ctx.resolve(&OUTPUT_STORE).await.map_err(|e| io(e.to_string()))?;
    let (session, principal) = (ctx.session_id().map(str::to_owned), ctx.principal().map(str::to_owned));
    let work = move || {
        let mut reader = reader;
        let scope = OutputScope { session: session.as_deref(), principal: principal.as_deref() };
        store_stream(&*store, scope, &mut reader, STREAM_PREVIEW_BYTES).map(|s| s.result)
    };
    crate::off_worker(work).await.unwrap_or_else(|| Err(io("the runtime is shutting down".to_owned())))
}
