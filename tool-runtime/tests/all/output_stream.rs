//! A result as a stream: stored as it arrives, with only the head and tail of its preview held.

use std::io::Read;
use std::sync::Arc;

use tool_runtime::output::{
    FileStore, GrepQuery, MemoryStore, OUTPUT_STORE, OutputLayer, OutputScope, OutputStore, STREAM_PREVIEW_BYTES,
    ScopedStore, StoredInfo, grep_stored, store_stream, stream_result,
};
use tool_runtime::{Registry, StoredResult, ToolCall, ToolContext, ToolResult, tool};

/// `lines` lines `line 000000001` .. (15 bytes each with the `\n`), made as they are read.
struct Generated {
    next: u64,
    lines: u64,
    pending: Vec<u8>,
}

impl Generated {
    fn new(lines: u64) -> Self {
        Self { next: 1, lines, pending: Vec::new() }
    }
}

impl Read for Generated {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pending.len() < buf.len() && self.next <= self.lines {
            self.pending.extend_from_slice(format!("line {:09}\n", self.next).as_bytes());
            self.next += 1;
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

/// A temp dir in memory when the system has one (`/dev/shm`), so 100 MB need no disk.
fn memory_backed_tempdir() -> tempfile::TempDir {
    match std::path::Path::new("/dev/shm") {
        shm if shm.is_dir() => tempfile::tempdir_in(shm).unwrap(),
        _ => tempfile::tempdir().unwrap(),
    }
}

const SCOPE: OutputScope<'static> = OutputScope { session: Some("s1"), principal: None };

#[test]
fn a_100_mb_stream_is_stored_whole_while_only_the_preview_is_held() {
    let dir = memory_backed_tempdir();
    let store = FileStore::new(dir.path()).unwrap();
    let lines = 6_666_667; // 100,000,005 bytes
    let streamed = store_stream(&store, SCOPE, &mut Generated::new(lines), STREAM_PREVIEW_BYTES).unwrap();

    assert_eq!(streamed.bytes, 100_000_005);
    assert!(streamed.peak_held_bytes <= STREAM_PREVIEW_BYTES, "{}", streamed.peak_held_bytes);
    assert_eq!(streamed.peak_held_bytes, STREAM_PREVIEW_BYTES);
    let ToolResult::Stored(StoredResult { ref_id, text, cut }) = streamed.result else { panic!("a stored result") };
    assert!(cut);
    assert_eq!(store.info(&ref_id).unwrap(), StoredInfo { bytes: 100_000_005, lines, parts: 0 });
    let query = GrepQuery {
        pattern: "line 006666667".to_owned(),
        regex: false,
        before: 0,
        after: 0,
        max_matches: 5,
        max_line_bytes: 100,
    };
    let hits = grep_stored(&ScopedStore::new(&store, SCOPE), &ref_id, &query).unwrap();
    assert_eq!((hits.matches, hits.blocks[0][0].number), (1, lines));
    // The preview: 12 KiB of head, the marker, 4 KiB of tail.
    assert!(text.starts_with("line 000000001\nline 000000002\n"));
    assert!(text.ends_with("line 006666666\nline 006666667\n"));
    let marker = format!(
        "\n[... {} bytes omitted of 100000005; the whole output is cached: read it with tool_output_cache \
         {{\"ref_id\":\"{ref_id}\"}} or search it with tool_output_cache_grep]\n",
        100_000_005 - STREAM_PREVIEW_BYTES
    );
    assert_eq!(text.len(), STREAM_PREVIEW_BYTES + marker.len());
    assert!(text.contains(&marker), "{}", &text[12_000..12_600]);
}

#[test]
fn a_stream_shorter_than_the_preview_is_shown_whole_and_stored() {
    let store = MemoryStore::new();
    let streamed = store_stream(&store, SCOPE, &mut Generated::new(3), STREAM_PREVIEW_BYTES).unwrap();
    let ToolResult::Stored(StoredResult { ref_id, text, cut }) = streamed.result else { panic!("a stored result") };
    assert_eq!((text.as_str(), cut), ("line 000000001\nline 000000002\nline 000000003\n", false));
    assert_eq!(store.info(&ref_id).unwrap().bytes, 45);
}

#[test]
fn a_preview_never_splits_a_character() {
    let store = MemoryStore::new();
    // 'é' is two bytes: 100 of them put a character across every odd cut.
    let text = "é".repeat(100);
    let streamed = store_stream(&store, SCOPE, &mut text.as_bytes(), 33).unwrap();
    let ToolResult::Stored(StoredResult { text: preview, .. }) = streamed.result else { panic!("a stored result") };
    let (head, rest) = preview.split_once('\n').unwrap();
    let tail = rest.rsplit_once('\n').unwrap().1;
    // 25 bytes of head keep 12 characters, 8 bytes of tail keep 4.
    assert_eq!((head, tail), ("é".repeat(12).as_str(), "é".repeat(4).as_str()));
    assert!(preview.contains("[... 168 bytes omitted of 200;"), "{preview}");
}

#[test]
fn a_stream_that_fails_stores_nothing() {
    struct Broken(u8);
    impl Read for Broken {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::other("the pipe broke"));
            }
            self.0 -= 1;
            buf[0] = b'x';
            Ok(1)
        }
    }
    let store = MemoryStore::new();
    let error = store_stream(&store, SCOPE, &mut Broken(3), STREAM_PREVIEW_BYTES).unwrap_err();
    assert!(error.to_string().ends_with(": the pipe broke"), "{error}");
    assert!(store.is_empty());
}

/// Streams `lines` generated lines as its result.
#[tool]
async fn dump(
    /// How many lines.
    lines: u64,
    ctx: &ToolContext,
) -> Result<ToolResult, String> {
    stream_result(ctx, Generated::new(lines)).await.map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_streamed_result_reaches_the_model_as_its_preview_with_the_ref_of_the_whole_output() {
    let store = Arc::new(MemoryStore::new());
    let registry = Registry::builder()
        .tool(dump::TOOL)
        .tool(tool_std::cache::tool_output_cache_grep::TOOL)
        .override_dependency(&OUTPUT_STORE, store.clone() as Arc<dyn OutputStore>)
        .output(OutputLayer::new())
        .build()
        .unwrap();
    let ctx = ToolContext::builder().session_id("s1").build();

    let message = registry.call(&ToolCall::new("c1", "dump", r#"{"lines":100000}"#), &ctx).await;

    let ref_id = message.ref_id.clone().unwrap();
    assert!(message.trimmed);
    assert_eq!(store.len(), 1, "stored once, not again by the layer");
    assert_eq!(store.info(&ref_id).unwrap().bytes, 1_500_000);
    assert!(message.text().ends_with("line 000100000\n"));
    let arguments = serde_json::json!({"ref_id": ref_id, "pattern": "line 000100000"}).to_string();
    let found = registry.call(&ToolCall::new("c2", "tool_output_cache_grep", arguments.clone()), &ctx).await;
    assert_eq!(found.text(), "100000: line 000100000");
    let elsewhere = ToolContext::builder().session_id("s2").build();
    let refused = registry.call(&ToolCall::new("c3", "tool_output_cache_grep", arguments), &elsewhere).await;
    assert!(refused.is_error, "{}", refused.text());
}
