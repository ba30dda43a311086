//! The continuation a tool promises survives the output layer at its default settings (2000 lines
//! / 50 KiB per message): `read`'s page of a 3,000-line file keeps its "use offset=N" footer and
//! its content hash, and `grep` with 1,000 matching lines keeps its `[showing N of M]` line.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputLayer, OutputStore};
use tool_runtime::prelude::*;
use tool_std::sandbox::{SANDBOX, Sandbox};

struct Layered {
    dir: tempfile::TempDir,
    registry: Registry,
}

impl Layered {
    /// The standard tools on a temp workspace, behind the default output layer.
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new());
        let registry = tool_std::registry_builder()
            .override_dependency(&SANDBOX, Sandbox::new(dir.path()).unwrap())
            .override_dependency(&OUTPUT_STORE, store)
            .output(OutputLayer::new())
            .build()
            .unwrap();
        Self { dir, registry }
    }

    fn write(&self, path: &str, text: &str) {
        std::fs::write(self.dir.path().join(path), text).unwrap();
    }

    async fn text(&self, tool: &str, arguments: Value) -> String {
        let message =
            self.registry.call(&ToolCall::new("call_1", tool, arguments.to_string()), &ToolContext::new()).await;
        assert!(!message.is_error, "{}", message.text());
        message.text().into_owned()
    }
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len() - n..].to_vec()
}

#[tokio::test]
async fn reading_a_3000_line_file_keeps_the_offset_footer_and_the_hash() {
    let layered = Layered::new();
    layered.write("long.txt", &(1..=3000).map(|n| format!("line {n}\n")).collect::<String>());

    let text = layered.text("read", json!({"file_path": "long.txt"})).await;

    let end = tail(&text, 2);
    assert_eq!(end[0], "[showing lines 1-1500 of 3000] Use offset=1500 to read more.");
    assert!(end[1].starts_with("[read_metadata] content_sha256="), "{}", end[1]);
    assert!(!text.contains("truncated"), "the layer cut the page");
}

#[tokio::test]
async fn reading_a_3000_line_file_of_wide_lines_keeps_the_byte_cap_footer_and_the_hash() {
    let layered = Layered::new();
    layered.write("wide.txt", &format!("{}\n", "x".repeat(100)).repeat(3000));

    let text = layered.text("read", json!({"file_path": "wide.txt"})).await;

    let end = tail(&text, 2);
    assert_eq!(end[0], "[output truncated at 40960 bytes] Use offset to read beyond line 379.");
    assert!(end[1].starts_with("[read_metadata] content_sha256="), "{}", end[1]);
}

#[tokio::test]
async fn grep_with_1000_matches_at_its_largest_limit_keeps_its_showing_line() {
    let layered = Layered::new();
    let line = format!("match {}", "y".repeat(80));
    layered.write("many.txt", &format!("{line}\n").repeat(1000));

    let text = layered.text("grep", json!({"pattern": "match", "limit": 1000})).await;

    // Each line is `many.txt:N: match yyy…` (91 to 95 bytes): 406 of them fit in 40 KiB.
    assert_eq!(
        tail(&text, 1)[0],
        "[showing 406 of 1000 matching lines: a page stops at 40960 bytes or 1900 lines] Narrow the pattern, \
         path or include."
    );
    assert_eq!(text.lines().filter(|l| l.starts_with("many.txt:")).count(), 406);
}

#[tokio::test]
async fn grep_with_1000_matches_at_its_default_limit_keeps_its_showing_line() {
    let layered = Layered::new();
    layered.write("many.txt", &"match\n".repeat(1000));

    let text = layered.text("grep", json!({"pattern": "match"})).await;

    assert_eq!(
        tail(&text, 1)[0],
        "[showing 100 of 1000 matching lines] Narrow the pattern, path or include, or raise limit (max 1000)."
    );
}
