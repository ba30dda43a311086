//! The "cache" set: tool_output_cache, tool_output_cache_grep, tool_output_cache_line.

use std::sync::Arc;

use serde_json::json;
use tool_runtime::output::{FileStore, MemoryStore, OUTPUT_STORE, OutputLayer, OutputLimits, OutputStore, put_text};
use tool_runtime::{ContentPart, MessageContent, Registry, ToolCall, ToolContext, ToolMessage, tool};

/// Print many numbered lines.
#[tool]
fn many(
    /// How many lines.
    n: usize,
) -> String {
    (1..=n).map(|i| format!("row {i}")).collect::<Vec<_>>().join("\n")
}

struct Cache {
    store: Arc<dyn OutputStore>,
    registry: Registry,
    _dir: Option<tempfile::TempDir>,
}

impl Cache {
    fn memory() -> Self {
        Self::with(Arc::new(MemoryStore::new()), None)
    }

    fn files() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::new(dir.path()).unwrap();
        Self::with(Arc::new(store), Some(dir))
    }

    fn with(store: Arc<dyn OutputStore>, dir: Option<tempfile::TempDir>) -> Self {
        let registry = tool_std::registry_builder()
            .sets(["cache"])
            .override_dependency(&OUTPUT_STORE, store.clone())
            .output(OutputLayer::new())
            .build()
            .unwrap();
        Self { store, registry, _dir: dir }
    }

    fn put(&self, ref_id: &str, text: &str) {
        put_text(&*self.store, ref_id, text, &[]).unwrap();
    }

    async fn call(&self, tool: &str, args: serde_json::Value) -> ToolMessage {
        self.registry.call(&ToolCall::new("c1", tool, args.to_string()), &ToolContext::new()).await
    }

    async fn ok(&self, tool: &str, args: serde_json::Value) -> String {
        let message = self.call(tool, args).await;
        assert!(!message.is_error, "{}", message.text());
        message.text().into_owned()
    }

    async fn err(&self, tool: &str, args: serde_json::Value) -> String {
        let message = self.call(tool, args).await;
        assert!(message.is_error, "{}", message.text());
        message.text().into_owned()
    }
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn cache_reads_numbered_lines_like_read() {
    let cache = Cache::memory();
    cache.put("r1", "alpha\nbeta\n");

    assert_eq!(cache.ok("tool_output_cache", json!({"ref_id": "r1"})).await, "    1  alpha\n    2  beta");
}

#[tokio::test]
async fn cache_pages_with_offset_and_limit_and_says_how_to_continue() {
    let cache = Cache::files();
    cache.put("r1", &numbered(5000));

    let out = cache.ok("tool_output_cache", json!({"ref_id": "r1", "offset": 3000, "limit": 2})).await;

    assert_eq!(
        out,
        " 3001  line 3001\n 3002  line 3002\n\n[showing lines 3001-3002 of 5000] Use offset=3002 to read more."
    );
}

#[tokio::test]
async fn cache_cuts_long_lines_and_points_to_tool_output_cache_line() {
    let cache = Cache::memory();
    cache.put("r1", &format!("short\n{}", "é".repeat(1500)));

    let out = cache.ok("tool_output_cache", json!({"ref_id": "r1"})).await;

    assert_eq!(
        out,
        format!(
            "    1  short\n    2  {}...\n\n[truncated lines: 2] Lines over 1000 graphemes are cut with \"...\"; read the rest of line 2 with tool_output_cache_line {{\"ref_id\":\"r1\",\"line_number\":2,\"char_offset\":1000}}",
            "é".repeat(1000)
        )
    );
}

#[tokio::test]
async fn cache_stops_at_64_kib_and_names_the_offset() {
    let cache = Cache::memory();
    cache.put("r1", &format!("{}\n", "x".repeat(900)).repeat(100));

    let out = cache.ok("tool_output_cache", json!({"ref_id": "r1"})).await;

    assert!(
        out.ends_with("\n\n[output truncated at 65536 bytes] Use offset=72 to read more."),
        "{}",
        &out[out.len() - 100..]
    );
}

#[tokio::test]
async fn cache_offset_past_the_end_is_an_error() {
    let cache = Cache::memory();
    cache.put("r1", "a\nb");

    assert_eq!(
        cache.err("tool_output_cache", json!({"ref_id": "r1", "offset": 2})).await,
        "offset 2 is past the end of ref_id `r1`, which has 2 lines; use an offset below 2"
    );
}

#[tokio::test]
async fn cache_of_an_unknown_ref_says_what_to_use() {
    let cache = Cache::memory();

    assert_eq!(
        cache.err("tool_output_cache", json!({"ref_id": "nope"})).await,
        "no tool output is cached under ref_id `nope` in this session; use the ref_id of a tool result of this \
         session"
    );
}

#[tokio::test]
async fn cache_limit_zero_is_an_error() {
    let cache = Cache::memory();
    cache.put("r1", "a");

    assert_eq!(
        cache.err("tool_output_cache", json!({"ref_id": "r1", "limit": 0})).await,
        "invalid arguments for `tool_output_cache`: `limit`: must be at least 1; got 0"
    );
}

#[tokio::test]
async fn cache_gives_stored_images_back_as_parts() {
    let cache = Cache::memory();
    let image =
        ContentPart::Image { data: "iVBORw0KGgo=".to_owned(), media_type: "image/png".to_owned(), detail: None };
    put_text(&*cache.store, "r1", "look:\n[image]", std::slice::from_ref(&image)).unwrap();

    let message = cache.call("tool_output_cache", json!({"ref_id": "r1"})).await;

    assert_eq!(message.content, MessageContent::Parts(vec![ContentPart::text("    1  look:\n    2  [image]"), image]));
}

#[tokio::test]
async fn the_cache_tools_own_messages_are_not_cached_again() {
    let cache = Cache::memory();
    cache.put("r1", "a");

    let message = cache.call("tool_output_cache", json!({"ref_id": "r1"})).await;

    assert_eq!(message.ref_id, None);
    assert!(matches!(cache.store.info("c1"), Err(tool_runtime::output::StoreError::NotFound { .. })));
}

#[tokio::test]
async fn cache_tools_are_exempt_from_the_per_message_cap() {
    let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new());
    let registry = tool_std::registry_builder()
        .sets(["cache"])
        .override_dependency(&OUTPUT_STORE, store.clone())
        .output(OutputLayer::new().limits(OutputLimits { max_lines: 1, max_bytes: 100 }))
        .build()
        .unwrap();
    put_text(&*store, "r1", &numbered(3), &[]).unwrap();
    let first = registry
        .call(
            &ToolCall::new("call_x", "tool_output_cache_grep", r#"{"ref_id":"r1","pattern":"line"}"#),
            &ToolContext::new(),
        )
        .await;
    assert_eq!(first.ref_id, None);
    assert_eq!(first.text(), "    1: line 1\n    2: line 2\n    3: line 3");
}

#[tokio::test]
async fn grep_shows_numbered_matches_with_context_in_blocks() {
    let cache = Cache::memory();
    cache.put("r1", "a\nerror one\nb\nc\nd\ne\nerror two\nf\n");

    let out =
        cache.ok("tool_output_cache_grep", json!({"ref_id": "r1", "pattern": "error", "before": 1, "after": 1})).await;

    assert_eq!(out, "    1- a\n    2: error one\n    3- b\n\n    6- e\n    7: error two\n    8- f");
}

#[tokio::test]
async fn grep_without_matches_says_no_matches_for_the_pattern() {
    let cache = Cache::memory();
    cache.put("r1", "a\nb");

    assert_eq!(
        cache.ok("tool_output_cache_grep", json!({"ref_id": "r1", "pattern": "zzz"})).await,
        "No matches for: zzz"
    );
}

#[tokio::test]
async fn grep_past_its_limit_ends_with_truncated() {
    let cache = Cache::files();
    cache.put("r1", &numbered(10));

    let out = cache.ok("tool_output_cache_grep", json!({"ref_id": "r1", "pattern": "line", "limit": 2})).await;

    assert_eq!(out, "    1: line 1\n    2: line 2\n\n... (truncated)");
}

#[tokio::test]
async fn grep_with_regex_true_uses_a_regular_expression() {
    let cache = Cache::memory();
    cache.put("r1", &numbered(12));

    let out =
        cache.ok("tool_output_cache_grep", json!({"ref_id": "r1", "pattern": "^line 1[01]$", "regex": true})).await;

    assert_eq!(out, "   10: line 10\n   11: line 11");
}

#[tokio::test]
async fn grep_shows_a_window_of_a_huge_matching_line_and_points_to_the_line_tool() {
    let cache = Cache::memory();
    cache.put("r1", &format!("{}NEEDLE{}", "a".repeat(5000), "b".repeat(5000)));

    let out = cache.ok("tool_output_cache_grep", json!({"ref_id": "r1", "pattern": "NEEDLE"})).await;

    assert_eq!(
        out,
        format!(
            "    1: ...{}NEEDLE{}... [line 1 has 10006 bytes; read it with tool_output_cache_line {{\"ref_id\":\"r1\",\"line_number\":1,\"char_offset\":4750}}]",
            "a".repeat(250),
            "b".repeat(744)
        )
    );
}

#[tokio::test]
async fn grep_with_case_insensitive_matches_a_regex_in_any_case() {
    let cache = Cache::memory();
    cache.put("r1", "Error one\nok\nERROR two\nerr\n");

    let out = cache
        .ok("tool_output_cache_grep", json!({"ref_id": "r1", "pattern": "^error", "case_insensitive": true}))
        .await;

    assert_eq!(out, "    1: Error one\n\n    3: ERROR two");
}

#[tokio::test]
async fn grep_with_case_insensitive_matches_a_literal_text_in_any_case_and_nothing_else() {
    let cache = Cache::memory();
    cache.put("r1", "A.B\naXb\na.b\n");

    let arguments = json!({"ref_id": "r1", "pattern": "a.b", "regex": false, "case_insensitive": true});
    let out = cache.ok("tool_output_cache_grep", arguments).await;

    assert_eq!(out, "    1: A.B\n\n    3: a.b");
}

#[tokio::test]
async fn grep_without_case_insensitive_keeps_case() {
    let cache = Cache::memory();
    cache.put("r1", "Error one\nerror two\n");

    let out = cache.ok("tool_output_cache_grep", json!({"ref_id": "r1", "pattern": "error"})).await;

    assert_eq!(out, "    2: error two");
}

#[tokio::test]
async fn an_invalid_regex_with_case_insensitive_is_named_as_given() {
    let cache = Cache::memory();
    cache.put("r1", "a");

    let arguments = json!({"ref_id": "r1", "pattern": "(", "regex": true, "case_insensitive": true});
    let error = cache.err("tool_output_cache_grep", arguments).await;

    assert!(error.starts_with("invalid regex `(`: "), "{error}");
}

#[tokio::test]
async fn grep_with_an_invalid_regex_is_an_error() {
    let cache = Cache::memory();
    cache.put("r1", "a");

    let error = cache.err("tool_output_cache_grep", json!({"ref_id": "r1", "pattern": "(", "regex": true})).await;

    assert!(error.starts_with("invalid regex `(`: "), "{error}");
}

#[tokio::test]
async fn grep_bad_arguments_name_the_field() {
    let cache = Cache::memory();
    cache.put("r1", "a");

    assert_eq!(
        cache.err("tool_output_cache_grep", json!({"ref_id": "r1", "pattern": ""})).await,
        "invalid arguments for `tool_output_cache_grep`: `pattern`: must be at least 1 character; got 0"
    );
    assert_eq!(
        cache.err("tool_output_cache_grep", json!({"ref_id": "r1", "pattern": "a", "after": 51})).await,
        "invalid arguments for `tool_output_cache_grep`: `after`: must be at most 50; got 51"
    );
    assert_eq!(
        cache.err("tool_output_cache_grep", json!({"ref_id": "r1", "pattern": "a", "limit": 0})).await,
        "invalid arguments for `tool_output_cache_grep`: `limit`: must be at least 1; got 0"
    );
}

#[tokio::test]
async fn line_reads_a_window_and_says_where_to_continue() {
    let cache = Cache::memory();
    cache.put("r1", &format!("first\n{}\n", "e\u{301}x".repeat(10)));

    let out = cache
        .ok("tool_output_cache_line", json!({"ref_id": "r1", "line_number": 2, "char_offset": 3, "char_limit": 4}))
        .await;

    assert_eq!(out, "line_number=2 line_length=20 char_range=3..7\nxe\u{301}xe\u{301}\nUse char_offset=7 to continue.");
}

#[tokio::test]
async fn line_at_its_end_has_no_continuation() {
    let cache = Cache::files();
    cache.put("r1", &numbered(3000));

    let out = cache.ok("tool_output_cache_line", json!({"ref_id": "r1", "line_number": 2500})).await;

    assert_eq!(out, "line_number=2500 line_length=9 char_range=0..9\nline 2500");
}

#[tokio::test]
async fn line_streams_a_long_line_across_read_pieces() {
    let cache = Cache::files();
    let line = "中".repeat(100_000);
    cache.put("r1", &line);

    let out = cache
        .ok("tool_output_cache_line", json!({"ref_id": "r1", "line_number": 1, "char_offset": 99_998, "char_limit": 5}))
        .await;

    assert_eq!(out, "line_number=1 line_length=100000 char_range=99998..100000\n中中");
}

#[tokio::test]
async fn line_errors_name_the_bad_value() {
    let cache = Cache::memory();
    cache.put("r1", "abc\nd");

    assert_eq!(
        cache.err("tool_output_cache_line", json!({"ref_id": "r1", "line_number": 3})).await,
        "line 3 is past the end of ref_id `r1`, which has 2 lines"
    );
    assert_eq!(
        cache.err("tool_output_cache_line", json!({"ref_id": "r1", "line_number": 0})).await,
        "invalid arguments for `tool_output_cache_line`: `line_number`: must be at least 1; got 0"
    );
    assert_eq!(
        cache.err("tool_output_cache_line", json!({"ref_id": "r1", "line_number": 1, "char_offset": 3})).await,
        "char_offset 3 is past the end of line 1, which has 3 characters (graphemes)"
    );
    assert_eq!(
        cache.err("tool_output_cache_line", json!({"ref_id": "r1", "line_number": 1, "char_limit": 100_001})).await,
        "invalid arguments for `tool_output_cache_line`: `char_limit`: must be at most 100000; got 100001"
    );
}

#[tokio::test]
async fn a_bad_ref_id_says_which_characters_are_allowed() {
    let cache = Cache::memory();

    assert_eq!(
        cache.err("tool_output_cache_line", json!({"ref_id": "../etc", "line_number": 1})).await,
        "ref_id `../etc` is not valid: use 1 to 128 of the characters A-Z a-z 0-9 _ - (the ref_id of a tool result)"
    );
}

#[tokio::test]
async fn what_the_per_message_cap_cut_is_read_back_by_ref() {
    let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new());
    let registry = tool_std::registry_builder()
        .tool(many::TOOL)
        .override_dependency(&OUTPUT_STORE, store)
        .output(OutputLayer::new().limits(OutputLimits { max_lines: 2, max_bytes: 1000 }))
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let cut = registry.call(&ToolCall::new("call_9", "many", r#"{"n":5}"#), &ctx).await;
    let ref_id = cut.ref_id.clone().unwrap();
    assert_eq!(cut.text(), format!("row 1\nrow 2\n[tool output truncated; ref_id={ref_id}]"));

    let arguments = json!({"ref_id": ref_id, "offset": 2}).to_string();
    let rest = registry.call(&ToolCall::new("call_10", "tool_output_cache", arguments), &ctx).await;

    assert_eq!(rest.text(), "    3  row 3\n    4  row 4\n    5  row 5");
}
