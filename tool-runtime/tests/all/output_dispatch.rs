//! The dispatcher with an output layer: ref_id, the per-message cap, the turn budget.

use std::sync::Arc;

use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputLayer, OutputLimits, OutputScope, OutputStore, put_text};
use tool_runtime::prelude::*;

/// Repeat a line.
#[tool]
fn lines(
    /// The line.
    text: String,
    /// How many times.
    n: usize,
) -> String {
    vec![text; n].join("\n")
}

/// A picture with a caption.
#[tool]
fn picture() -> Vec<ContentPart> {
    vec![
        ContentPart::text("caption ".repeat(100)),
        ContentPart::Image { data: "iVBORw0KGgo=".to_owned(), media_type: "image/png".to_owned(), detail: None },
    ]
}

/// A log embedded as a text resource, beside a link to it.
#[tool]
fn log_resource() -> Vec<ContentPart> {
    vec![
        ContentPart::resource_text("file:///build.log", Some("text/plain".to_owned()), "line\n".repeat(100)),
        ContentPart::resource_link("file:///build.log", "build.log"),
    ]
}

/// Stands in for the cache reader (same name, so the layer exempts it).
#[tool]
fn tool_output_cache(
    /// Ignored.
    ref_id: String,
) -> String {
    format!("{ref_id}\n").repeat(1000)
}

fn registry(store: &Arc<MemoryStore>, layer: OutputLayer) -> Registry {
    Registry::builder()
        .tool(lines::TOOL)
        .tool(picture::TOOL)
        .tool(log_resource::TOOL)
        .tool(tool_output_cache::TOOL)
        .override_dependency(&OUTPUT_STORE, store.clone() as Arc<dyn OutputStore>)
        .output(layer)
        .build()
        .unwrap()
}

/// The message's `ref_id`, which must be a minted ref id (not its call id).
fn minted_ref(message: &ToolMessage) -> String {
    let ref_id = message.ref_id.clone().expect("a ref_id");
    assert_eq!(ref_id.len(), tool_runtime::output::REF_ID_LEN, "{ref_id}");
    assert_ne!(ref_id, message.tool_call_id);
    ref_id
}

fn call(id: &str, text: &str, n: usize) -> ToolCall {
    ToolCall::new(id, "lines", serde_json::json!({ "text": text, "n": n }).to_string())
}

#[tokio::test]
async fn every_message_gets_its_ref_id_and_is_stored() {
    let store = Arc::new(MemoryStore::new());
    let registry = registry(&store, OutputLayer::new());

    let message = registry.call(&call("call.1", "hi", 2), &ToolContext::new()).await;

    let ref_id = minted_ref(&message);
    assert_eq!((message.text().as_ref(), message.trimmed), ("hi\nhi", false));
    assert_eq!(store.info(&ref_id).unwrap().lines, 2);
}

#[tokio::test]
async fn errors_are_stored_too() {
    let store = Arc::new(MemoryStore::new());
    let registry = registry(&store, OutputLayer::new());

    let message = registry.call(&ToolCall::new("c9", "nope", "{}"), &ToolContext::new()).await;

    assert!(message.is_error);
    let ref_id = minted_ref(&message);
    assert_eq!(store.info(&ref_id).unwrap().bytes, message.text().len() as u64);
}

#[tokio::test]
async fn a_message_over_the_cap_keeps_whole_lines_and_ends_with_the_marker() {
    let store = Arc::new(MemoryStore::new());
    let layer = OutputLayer::new().limits(OutputLimits { max_lines: 2000, max_bytes: 20 });
    let registry = registry(&store, layer);

    let message = registry.call(&call("c1", "abcdef", 10), &ToolContext::new()).await;

    let ref_id = minted_ref(&message);
    assert_eq!(message.text(), format!("abcdef\nabcdef\nabcdef\n[tool output truncated; ref_id={ref_id}]"));
    assert!(message.trimmed);
    assert_eq!(store.info(&ref_id).unwrap().bytes, 69);
}

#[tokio::test]
async fn the_line_cap_applies_per_message() {
    let store = Arc::new(MemoryStore::new());
    let layer = OutputLayer::new().limits(OutputLimits { max_lines: 3, max_bytes: 1000 });
    let registry = registry(&store, layer);

    let message = registry.call(&call("c1", "x", 5), &ToolContext::new()).await;

    assert_eq!(message.text(), format!("x\nx\nx\n[tool output truncated; ref_id={}]", minted_ref(&message)));
}

#[tokio::test]
async fn a_first_line_over_the_cap_keeps_its_prefix() {
    let store = Arc::new(MemoryStore::new());
    let layer = OutputLayer::new().limits(OutputLimits { max_lines: 10, max_bytes: 7 });
    let registry = registry(&store, layer);

    let message = registry.call(&call("c1", "ééééé", 1), &ToolContext::new()).await;

    assert_eq!(message.text(), format!("ééé\n[tool output truncated; ref_id={}]", minted_ref(&message)));
}

#[tokio::test]
async fn an_embedded_text_resource_is_capped_like_text_and_a_link_stays() {
    let store = Arc::new(MemoryStore::new());
    let layer = OutputLayer::new().limits(OutputLimits { max_lines: 2, max_bytes: 1000 });
    let registry = registry(&store, layer);

    let message = registry.call(&ToolCall::new("r1", "log_resource", "{}"), &ToolContext::new()).await;

    let ref_id = minted_ref(&message);
    let MessageContent::Parts(parts) = &message.content else { panic!("parts expected: {message:?}") };
    assert_eq!(
        parts.as_slice(),
        [
            ContentPart::resource_text(
                "file:///build.log",
                Some("text/plain".to_owned()),
                format!("line\nline\n[tool output truncated; ref_id={ref_id}]")
            ),
            ContentPart::resource_link("file:///build.log", "build.log"),
        ]
    );
    assert!(message.trimmed);
    assert_eq!(store.parts(&ref_id).unwrap(), [ContentPart::resource_link("file:///build.log", "build.log")]);
}

#[tokio::test]
async fn images_stay_structured_and_are_stored_as_parts() {
    let store = Arc::new(MemoryStore::new());
    let layer = OutputLayer::new().limits(OutputLimits { max_lines: 10, max_bytes: 16 });
    let registry = registry(&store, layer);

    let message = registry.call(&ToolCall::new("p1", "picture", "{}"), &ToolContext::new()).await;

    let ref_id = minted_ref(&message);
    let MessageContent::Parts(parts) = &message.content else { panic!("parts expected: {message:?}") };
    assert_eq!(parts[0], ContentPart::text(format!("caption caption \n[tool output truncated; ref_id={ref_id}]")));
    assert!(matches!(&parts[1], ContentPart::Image { media_type, .. } if media_type == "image/png"));
    assert_eq!(store.parts(&ref_id).unwrap().len(), 1);
}

#[tokio::test]
async fn cache_tools_are_not_stored_again_nor_capped() {
    let store = Arc::new(MemoryStore::new());
    let layer = OutputLayer::new().limits(OutputLimits { max_lines: 10, max_bytes: 10 });
    let registry = registry(&store, layer);

    let message =
        registry.call(&ToolCall::new("r1", "tool_output_cache", r#"{"ref_id":"a"}"#), &ToolContext::new()).await;

    assert_eq!((message.ref_id.as_deref(), message.text().len()), (None, 2000));
    assert!(store.is_empty());
}

/// The turn-budget marker of the second call of a batch of two 1,000-byte results with a budget
/// of 600, in a registry of `lines` and the cache tools `readers`.
async fn budget_marker(readers: &[&'static tool_runtime::ToolSpec]) -> String {
    let store = Arc::new(MemoryStore::new());
    let registry = readers
        .iter()
        .fold(Registry::builder().tool(lines::TOOL), |builder, spec| builder.tool(spec))
        .override_dependency(&OUTPUT_STORE, store.clone() as Arc<dyn OutputStore>)
        .output(OutputLayer::new().turn_bytes(600))
        .build()
        .unwrap();
    let messages = registry.call_batch(&[call("a1", "a", 500), call("b1", "b", 500)], &ToolContext::new()).await;
    let text = messages[1].text();
    let start = text.find("\n[...").unwrap();
    let end = text[start..].find("]\n").unwrap() + start + 2;
    text[start..end].replace(&minted_ref(&messages[1]), "REF")
}

#[tokio::test]
async fn the_turn_budget_marker_names_only_the_cache_tools_the_registry_has() {
    assert_eq!(
        budget_marker(&[]).await,
        "\n[... 824 bytes omitted by the turn output budget; narrow the call (a smaller limit or a more specific pattern) to see them]\n"
    );
    assert_eq!(
        budget_marker(&[tool_output_cache::TOOL]).await,
        "\n[... 820 bytes omitted by the turn output budget; read them with tool_output_cache {\"ref_id\":\"REF\"}]\n"
    );
}

#[tokio::test]
async fn a_batch_shares_the_turn_budget_fairly() {
    let store = Arc::new(MemoryStore::new());
    let layer = OutputLayer::new().turn_bytes(600);
    let registry = registry(&store, layer);
    let calls = [call("small", "s", 50), call("big1", "b", 1000), call("big2", "c", 1000)];

    let messages = registry.call_batch(&calls, &ToolContext::new()).await;

    assert_eq!(messages[0].text().len(), 99);
    assert!(!messages[0].trimmed);
    for m in &messages[1..] {
        assert!(m.trimmed);
        assert!(m.text().contains("bytes omitted by the turn output budget; read them with tool_output_cache"));
        assert!(m.text().len() <= 251, "{}", m.text().len());
    }
    assert_eq!(store.info(&minted_ref(&messages[1])).unwrap().bytes, 1999);
}

#[tokio::test]
async fn without_a_layer_messages_are_left_as_the_tools_made_them() {
    let registry = Registry::builder().tool(lines::TOOL).build().unwrap();

    let message = registry.call(&call("c1", "x", 3), &ToolContext::new()).await;

    assert_eq!((message.ref_id, message.trimmed), (None, false));
}

#[tokio::test]
async fn a_store_that_fails_leaves_the_message_whole() {
    struct Failing;
    impl OutputStore for Failing {
        fn put_scoped(
            &self,
            _: OutputScope<'_>,
            ref_id: &str,
            _: &mut dyn std::io::Read,
            _: &[ContentPart],
        ) -> Result<tool_runtime::output::StoredInfo, tool_runtime::output::StoreError> {
            Err(tool_runtime::output::StoreError::Io { ref_id: ref_id.to_owned(), message: "disk full".to_owned() })
        }
        fn check_scope(&self, ref_id: &str, _: OutputScope<'_>) -> Result<(), tool_runtime::output::StoreError> {
            Err(tool_runtime::output::StoreError::NotFound { ref_id: ref_id.to_owned() })
        }
        fn info(&self, ref_id: &str) -> Result<tool_runtime::output::StoredInfo, tool_runtime::output::StoreError> {
            Err(tool_runtime::output::StoreError::NotFound { ref_id: ref_id.to_owned() })
        }
        fn open_at(
            &self,
            ref_id: &str,
            _: u64,
        ) -> Result<Box<dyn std::io::Read + Send>, tool_runtime::output::StoreError> {
            Err(tool_runtime::output::StoreError::NotFound { ref_id: ref_id.to_owned() })
        }
        fn checkpoint(&self, ref_id: &str, _: u64) -> Result<(u64, u64), tool_runtime::output::StoreError> {
            Err(tool_runtime::output::StoreError::NotFound { ref_id: ref_id.to_owned() })
        }
        fn parts(&self, ref_id: &str) -> Result<Vec<ContentPart>, tool_runtime::output::StoreError> {
            Err(tool_runtime::output::StoreError::NotFound { ref_id: ref_id.to_owned() })
        }
    }
    let registry = Registry::builder()
        .tool(lines::TOOL)
        .override_dependency(&OUTPUT_STORE, Arc::new(Failing) as Arc<dyn OutputStore>)
        .output(OutputLayer::new().limits(OutputLimits { max_lines: 1, max_bytes: 10 }))
        .build()
        .unwrap();

    let message = registry.call(&call("c1", "x", 3), &ToolContext::new()).await;

    assert_eq!((message.text().as_ref(), message.ref_id.as_deref(), message.trimmed), ("x\nx\nx", None, false));
}

#[test]
fn finish_message_works_without_a_registry() {
    let store = MemoryStore::new();
    put_text(&store, "other", "kept", &[]).unwrap();
    let message = ToolMessage::success("c1", "t", ToolResult::text("a\nb\nc"));

    let message = OutputLayer::new().limits(OutputLimits { max_lines: 1, max_bytes: 100 }).finish_message(
        message,
        &store,
        OutputScope::NONE,
    );

    assert_eq!(message.text(), format!("a\n[tool output truncated; ref_id={}]", minted_ref(&message)));
    assert_eq!(store.len(), 2);
}

/// A store that records the thread of every `put` and forwards everything to `inner`, `blocks`
/// included, as a wrapping store should.
struct ThreadRecording<S> {
    inner: S,
    puts: std::sync::Mutex<Vec<std::thread::ThreadId>>,
}

impl<S: OutputStore> ThreadRecording<S> {
    fn new(inner: S) -> Arc<Self> {
        Arc::new(Self { inner, puts: std::sync::Mutex::new(Vec::new()) })
    }

    /// For each `put` so far, whether it ran on the thread `here`.
    fn put_on(&self, here: std::thread::ThreadId) -> Vec<bool> {
        self.puts.lock().unwrap().iter().map(|thread| *thread == here).collect()
    }
}

impl<S: OutputStore> OutputStore for ThreadRecording<S> {
    fn put_scoped(
        &self,
        scope: OutputScope<'_>,
        ref_id: &str,
        text: &mut dyn std::io::Read,
        parts: &[ContentPart],
    ) -> Result<tool_runtime::output::StoredInfo, tool_runtime::output::StoreError> {
        self.puts.lock().unwrap().push(std::thread::current().id());
        self.inner.put_scoped(scope, ref_id, text, parts)
    }
    fn check_scope(&self, ref_id: &str, scope: OutputScope<'_>) -> Result<(), tool_runtime::output::StoreError> {
        self.inner.check_scope(ref_id, scope)
    }
    fn info(&self, ref_id: &str) -> Result<tool_runtime::output::StoredInfo, tool_runtime::output::StoreError> {
        self.inner.info(ref_id)
    }
    fn open_at(
        &self,
        ref_id: &str,
        offset: u64,
    ) -> Result<Box<dyn std::io::Read + Send>, tool_runtime::output::StoreError> {
        self.inner.open_at(ref_id, offset)
    }
    fn checkpoint(&self, ref_id: &str, line: u64) -> Result<(u64, u64), tool_runtime::output::StoreError> {
        self.inner.checkpoint(ref_id, line)
    }
    fn parts(&self, ref_id: &str) -> Result<Vec<ContentPart>, tool_runtime::output::StoreError> {
        self.inner.parts(ref_id)
    }
    fn blocks(&self) -> bool {
        self.inner.blocks()
    }
}

/// A call and a batch of two through a registry whose output store is `store`, on the test's
/// current-thread runtime (the thread that polls every call): the ref of each message.
async fn three_messages(store: Arc<dyn OutputStore>) -> Vec<Option<String>> {
    let registry = Registry::builder()
        .tool(lines::TOOL)
        .override_dependency(&OUTPUT_STORE, store)
        .output(OutputLayer::new())
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let one = registry.call(&call("c1", "a", 2), &ctx).await;
    let batch = registry.call_batch(&[call("c2", "b", 2), call("c3", "c", 2)], &ctx).await;
    [one].iter().chain(&batch.messages).map(|m| m.ref_id.clone()).collect()
}

#[tokio::test]
async fn a_file_store_is_written_off_the_thread_that_polls_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let store = ThreadRecording::new(tool_runtime::output::FileStore::new(dir.path()).unwrap());
    let refs = three_messages(store.clone()).await;
    assert_eq!(refs.iter().map(|r| r.as_ref().map(String::len)).collect::<Vec<_>>(), [Some(22); 3]);
    assert_eq!(store.put_on(std::thread::current().id()), [false, false, false]);
    assert_eq!(store.info(refs[2].as_deref().unwrap()).unwrap().bytes, 3);
}

#[tokio::test]
async fn a_memory_store_is_written_on_the_thread_that_polls_the_call() {
    let store = ThreadRecording::new(MemoryStore::new());
    let refs = three_messages(store.clone()).await;
    assert_eq!(refs.iter().map(|r| r.as_ref().map(String::len)).collect::<Vec<_>>(), [Some(22); 3]);
    assert_eq!(store.put_on(std::thread::current().id()), [true, true, true]);
}

#[test]
fn a_file_store_says_it_blocks_and_a_memory_store_that_it_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let file = tool_runtime::output::FileStore::new(dir.path()).unwrap();
    assert_eq!([file.blocks(), MemoryStore::new().blocks()], [true, false]);
}
