//! Return types of `#[tool]` functions and the tool result each becomes.

use std::borrow::Cow;
use std::fmt;

use tool_runtime::prelude::*;

async fn run(spec: &'static tool_runtime::ToolSpec, arguments: &str) -> ToolMessage {
    let registry = Registry::builder().tool(spec).build().unwrap();
    registry.call(&ToolCall::new("call_1", spec.name(), arguments), &ToolContext::new()).await
}

/// An error with a cause, shown like `anyhow` does: `{}` the outer text, `{:#}` the whole chain.
#[derive(Debug)]
struct Chained;

impl fmt::Display for Chained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() { write!(f, "config unreadable: permission denied") } else { write!(f, "config unreadable") }
    }
}

/// Fails with a chained error.
#[tool]
fn chained() -> Result<String, Chained> {
    Err(Chained)
}

#[tokio::test]
async fn an_err_keeps_the_whole_error_chain() {
    assert_eq!(
        run(chained::TOOL, "").await,
        ToolMessage::error("call_1", "chained", "config unreadable: permission denied")
    );
}

/// Fails with a tool error.
#[tool]
fn refuses() -> Result<(), ToolError> {
    Err(ToolError::failed("not allowed here; try `read`"))
}

#[tokio::test]
async fn a_tool_error_is_the_error_text() {
    assert_eq!(run(refuses::TOOL, "").await, ToolMessage::error("call_1", "refuses", "not allowed here; try `read`"));
}

/// Succeeds with nothing.
#[tool]
fn done(
    /// Fail instead.
    fail: bool,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    if fail { Err("it failed".into()) } else { Ok(()) }
}

#[tokio::test]
async fn a_unit_ok_is_an_empty_text_and_a_boxed_error_its_text() {
    assert_eq!(run(done::TOOL, r#"{"fail":false}"#).await.content, MessageContent::Text(String::new()));
    assert_eq!(run(done::TOOL, r#"{"fail":true}"#).await, ToolMessage::error("call_1", "done", "it failed"));
}

/// Returns parts.
#[tool]
async fn picture() -> Result<Vec<ContentPart>, String> {
    Ok(vec![
        ContentPart::text("a red dot:"),
        ContentPart::Image { data: "iVBORw0KGgo=".to_owned(), media_type: "image/png".to_owned(), detail: None },
    ])
}

#[tokio::test]
async fn content_parts_stay_parts() {
    assert_eq!(
        run(picture::TOOL, "").await.content,
        MessageContent::Parts(vec![
            ContentPart::text("a red dot:"),
            ContentPart::Image { data: "iVBORw0KGgo=".to_owned(), media_type: "image/png".to_owned(), detail: None },
        ])
    );
}

/// Returns a borrowed-or-owned text.
#[tool]
fn cow() -> Cow<'static, str> {
    Cow::Borrowed("cow")
}

#[tokio::test]
async fn a_cow_str_is_text() {
    assert_eq!(run(cow::TOOL, "").await.content, MessageContent::Text("cow".to_owned()));
}

/// Returns numbers as JSON.
#[tool]
fn numbers() -> Result<Vec<u32>, String> {
    Ok(vec![1, 2, 3])
}

#[tokio::test]
async fn a_serialize_ok_value_is_compact_json() {
    assert_eq!(run(numbers::TOOL, "").await.content, MessageContent::Text("[1,2,3]".to_owned()));
}

/// Returns a static text or an error.
#[tool]
fn maybe_static(
    /// Fail instead.
    fail: bool,
) -> std::io::Result<&'static str> {
    if fail { Err(std::io::Error::other("no")) } else { Ok("static") }
}

#[tokio::test]
async fn a_result_alias_with_its_error_fixed_is_a_result() {
    assert_eq!(run(maybe_static::TOOL, r#"{"fail":false}"#).await.text(), "static");
    assert_eq!(run(maybe_static::TOOL, r#"{"fail":true}"#).await, ToolMessage::error("call_1", "maybe_static", "no"));
}
