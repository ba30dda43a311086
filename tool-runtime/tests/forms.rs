//! The function forms `#[tool]` accepts, and what each becomes.

use serde::Serialize;
use serde_json::json;
use tool_runtime::prelude::*;

/// Adds two numbers.
///
/// Works on **integers** only.
#[tool]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> String {
    (a + b).to_string()
}

/// Greets.
#[tool(name = "say_hello", description = "Say hello to someone by name.", set = "demo")]
async fn greet(
    /// Who.
    name: String,
    ctx: &ToolContext,
) -> String {
    format!("hello {name} from {}", ctx.call_id().unwrap_or("nowhere"))
}

/// A point.
#[derive(Serialize)]
struct Point {
    x: i32,
    y: i32,
}

/// Returns a point as JSON.
#[tool]
fn origin() -> Point {
    Point { x: 0, y: 0 }
}

/// Returns a result with a JSON value.
#[tool]
async fn maybe(
    /// Whether to fail.
    fail: bool,
) -> Result<Point, std::io::Error> {
    if fail { Err(std::io::Error::other("disk on fire")) } else { Ok(Point { x: 1, y: 2 }) }
}

/// Returns a ToolResult.
#[tool]
fn parts() -> ToolResult {
    ToolResult::Parts(vec![ContentPart::text("one"), ContentPart::text("two")])
}

/// Returns nothing.
#[tool]
fn nothing() {}

/// Returns a static string.
#[tool]
fn fixed() -> &'static str {
    "fixed"
}

/// Returns a serde_json value.
#[tool]
fn value() -> serde_json::Value {
    json!({"ok": true})
}

async fn run(name: &str, arguments: &str) -> ToolMessage {
    let registry = Registry::discover().unwrap();
    registry.call(&ToolCall::new("call_9", name, arguments), &ToolContext::new()).await
}

#[tokio::test]
async fn the_function_stays_callable_as_written() {
    assert_eq!(add(2, 3), "5");
    assert_eq!(greet("Ada".to_owned(), &ToolContext::new()).await, "hello Ada from nowhere");
}

#[tokio::test]
async fn a_plain_fn_is_a_tool() {
    assert_eq!(run("add", r#"{"a":2,"b":-5}"#).await.text(), "-3");
}

#[tokio::test]
async fn an_async_fn_with_the_context_sees_the_call() {
    assert_eq!(run("say_hello", r#"{"name":"Ada"}"#).await.text(), "hello Ada from call_9");
}

#[test]
fn the_doc_comment_is_the_description_and_parameter_docs_describe_properties() {
    let definition = add::TOOL.definition();
    assert_eq!(definition.description, "Adds two numbers.\n\nWorks on **integers** only.");
    assert_eq!(
        definition.input_schema,
        json!({
            "type": "object",
            "properties": {
                "a": {"description": "The first addend.", "type": "integer"},
                "b": {"description": "The second addend.", "type": "integer"}
            },
            "required": ["a", "b"],
            "additionalProperties": false
        })
    );
    assert_eq!(definition.set, None);
}

#[test]
fn options_set_the_name_the_description_and_the_set() {
    let definition = greet::TOOL.definition();
    assert_eq!(definition.name, "say_hello");
    assert_eq!(definition.description, "Say hello to someone by name.");
    assert_eq!(definition.set.as_deref(), Some("demo"));
    assert_eq!(
        definition.input_schema,
        json!({
            "type": "object",
            "properties": {"name": {"description": "Who.", "type": "string"}},
            "required": ["name"],
            "additionalProperties": false
        })
    );
}

#[tokio::test]
async fn a_serialize_return_value_is_sent_as_compact_json() {
    assert_eq!(run("origin", "{}").await.text(), r#"{"x":0,"y":0}"#);
    assert_eq!(run("value", "{}").await.text(), r#"{"ok":true}"#);
}

#[tokio::test]
async fn a_result_is_its_ok_value_or_an_error_with_the_err_text() {
    assert_eq!(run("maybe", r#"{"fail":false}"#).await.text(), r#"{"x":1,"y":2}"#);
    let message = run("maybe", r#"{"fail":true}"#).await;
    assert_eq!(message, ToolMessage::error("call_9", "maybe", "disk on fire"));
}

#[tokio::test]
async fn text_like_returns_are_text() {
    assert_eq!(run("fixed", "{}").await.content, MessageContent::Text("fixed".to_owned()));
    assert_eq!(run("nothing", "{}").await.content, MessageContent::Text(String::new()));
    assert_eq!(
        run("parts", "{}").await.content,
        MessageContent::Parts(vec![ContentPart::text("one"), ContentPart::text("two")])
    );
}

#[test]
fn a_set_filter_keeps_only_the_tools_of_those_sets() {
    let registry = Registry::builder().discover().sets(["demo"]).build().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["say_hello"]);
}

/// Deletes everything, slowly.
#[tool(sequential, timeout_ms = 1500, strict, tags(destructive, external))]
async fn wipe() -> &'static str {
    "wiped"
}

/// Reads, never strict.
#[tool(strict = false)]
fn peek() -> &'static str {
    "peeked"
}

#[test]
fn execution_options_reach_the_spec_and_descriptive_ones_the_definition() {
    assert!(wipe::TOOL.meta().sequential);
    assert_eq!(wipe::TOOL.meta().timeout_ms, Some(1500));
    assert_eq!(Tool::timeout(wipe::TOOL), Some(std::time::Duration::from_millis(1500)));
    let definition = wipe::TOOL.definition();
    assert_eq!(definition.tags, ["destructive", "external"]);
    assert_eq!(definition.strict, Some(true));
    assert_eq!(peek::TOOL.definition().strict, Some(false));
    assert_eq!(peek::TOOL.meta().tags, &[] as &[&str]);
    assert!(!peek::TOOL.meta().sequential);
}
