//! The dispatch pipeline: lookup, strict decoding, running, and every failure as an error result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::ToolErrorKind;
use tool_runtime::prelude::*;

/// What to look for.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Filter {
    /// The name to match.
    name: String,
}

/// Search the catalogue.
#[tool]
async fn search(
    /// What to match.
    filter: Filter,
    /// At most this many results.
    limit: Option<u32>,
) -> String {
    format!("name={} limit={limit:?}", filter.name)
}

/// A list item.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Item {
    /// The id.
    id: u32,
}

/// Count items.
#[tool]
fn count(
    /// The items.
    items: Vec<Item>,
) -> String {
    items.iter().map(|i| i.id).sum::<u32>().to_string()
}

/// The answer.
#[derive(Serialize)]
struct Answer {
    value: u32,
    label: &'static str,
}

/// Always fails.
#[tool]
fn fails(
    /// Ignored.
    reason: String,
) -> Result<String, String> {
    Err(format!("File not found: {reason}"))
}

/// Panics on purpose.
#[tool]
fn explode() -> String {
    panic!("boom")
}

/// Answers with JSON.
#[tool]
fn answer() -> Answer {
    Answer { value: 42, label: "the answer" }
}

/// Sleeps, then echoes.
#[tool]
async fn echo(
    /// The text.
    text: String,
    /// Milliseconds to sleep first.
    delay_ms: u64,
) -> String {
    tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
    text
}

fn registry() -> Registry {
    Registry::discover().expect("no duplicate names")
}

async fn call(name: &str, arguments: &str) -> ToolMessage {
    registry().call(&ToolCall::new("call_1", name, arguments), &ToolContext::new()).await
}

#[tokio::test]
async fn a_valid_call_returns_the_tool_text() {
    let message = call("search", r#"{"filter":{"name":"x"},"limit":3}"#).await;
    assert_eq!(
        message,
        ToolMessage {
            tool_call_id: "call_1".to_owned(),
            tool_name: "search".to_owned(),
            content: MessageContent::Text("name=x limit=Some(3)".to_owned()),
            is_error: false,
            ref_id: None,
            trimmed: false,
            done: false,
            structured_content: None,
            error_kind: None,
            approval: None,
        }
    );
}

#[tokio::test]
async fn an_unknown_nested_field_names_its_path_and_the_accepted_fields() {
    let message = call("search", r#"{"filter":{"nmae":"x"}}"#).await;
    assert!(message.is_error);
    assert_eq!(message.text(), "invalid arguments for `search`: unknown field `filter.nmae`; expected one of `name`");
}

#[tokio::test]
async fn an_unknown_top_level_field_lists_the_tool_parameters() {
    let message = call("search", r#"{"filter":{"name":"x"},"limt":3}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `search`: unknown field `limt`; expected one of `filter`, `limit`"
    );
}

#[tokio::test]
async fn an_unknown_field_inside_an_array_element_names_the_index() {
    let message = call("count", r#"{"items":[{"id":1},{"id":2,"idd":3}]}"#).await;
    assert_eq!(message.text(), "invalid arguments for `count`: unknown field `items[1].idd`; expected one of `id`");
}

#[tokio::test]
async fn invalid_json_is_an_error_with_line_and_column() {
    let message = call("search", r#"{"filter": "#).await;
    assert!(message.is_error);
    assert_eq!(
        message.text(),
        "invalid arguments for `search`: not valid JSON: EOF while parsing a value at line 1 column 11; send one JSON object"
    );
}

#[tokio::test]
async fn trailing_text_after_the_json_is_an_error() {
    let message = call("answer", "{} {}").await;
    assert_eq!(
        message.text(),
        "invalid arguments for `answer`: not valid JSON: trailing characters at line 1 column 4; send one JSON object"
    );
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_an_error() {
    let message = call("count", r#"[[{"id":1}]]"#).await;
    assert_eq!(message.text(), "invalid arguments for `count`: expected a JSON object of arguments, got an array");
}

#[tokio::test]
async fn a_value_of_the_wrong_type_names_its_path() {
    let message = call("count", r#"{"items":[{"id":"one"}]}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `count`: `items[0].id`: invalid type: string \"one\", expected an integer from 0 to 4294967295"
    );
}

#[tokio::test]
async fn a_missing_required_field_is_named() {
    let message = call("search", "{}").await;
    assert_eq!(message.text(), "invalid arguments for `search`: missing field `filter`");
    let message = call("search", r#"{"filter":{}}"#).await;
    assert_eq!(message.text(), "invalid arguments for `search`: missing field `filter.name`");
}

#[tokio::test]
async fn null_for_an_optional_field_is_absent_and_null_for_a_required_one_is_named() {
    let message = call("search", r#"{"filter":{"name":"x"},"limit":null}"#).await;
    assert_eq!(message.text(), "name=x limit=None");
    let message = call("search", r#"{"filter":{"name":null}}"#).await;
    assert_eq!(message.text(), "invalid arguments for `search`: `filter.name`: invalid type: null, expected a string");
}

#[tokio::test]
async fn empty_arguments_mean_an_empty_object() {
    assert_eq!(call("answer", "").await.text(), r#"{"value":42,"label":"the answer"}"#);
    assert_eq!(call("answer", "  \n").await.text(), r#"{"value":42,"label":"the answer"}"#);
    assert_eq!(call("search", "").await.text(), "invalid arguments for `search`: missing field `filter`");
}

#[tokio::test]
async fn an_unknown_tool_lists_the_available_names() {
    let message = call("list_files", "{}").await;
    assert_eq!(
        message,
        ToolMessage::error(
            "call_1",
            "list_files",
            "unknown tool `list_files`; available tools: answer, count, echo, explode, fails, search"
        )
    );
}

#[tokio::test]
async fn a_tool_returning_err_is_an_error_result_with_its_text() {
    let message = call("fails", r#"{"reason":"src/a.rs"}"#).await;
    assert_eq!(message, ToolMessage::error("call_1", "fails", "File not found: src/a.rs"));
}

#[tokio::test]
async fn a_panicking_tool_is_an_error_result_and_the_registry_keeps_serving() {
    let registry = registry();
    let ctx = ToolContext::new();
    let message = registry.call(&ToolCall::new("call_1", "explode", "{}"), &ctx).await;
    assert_eq!(message, ToolMessage::error("call_1", "explode", "tool `explode` panicked: boom"));
    let message = registry.call(&ToolCall::new("call_2", "answer", "{}"), &ctx).await;
    assert!(!message.is_error);
}

#[tokio::test]
async fn call_batch_returns_results_in_call_order() {
    let registry = registry();
    let calls = [
        ToolCall::new("a", "echo", r#"{"text":"slow","delay_ms":30}"#),
        ToolCall::new("b", "explode", "{}"),
        ToolCall::new("c", "echo", r#"{"text":"fast","delay_ms":0}"#),
        ToolCall::new("d", "nope", "{}"),
    ];
    let messages = registry.call_batch(&calls, &ToolContext::new()).await;
    let summary: Vec<(&str, bool, String)> =
        messages.iter().map(|m| (m.tool_call_id.as_str(), m.is_error, m.text().into_owned())).collect();
    assert_eq!(
        summary,
        vec![
            ("a", false, "slow".to_owned()),
            ("b", true, "tool `explode` panicked: boom".to_owned()),
            ("c", false, "fast".to_owned()),
            ("d", true, "unknown tool `nope`; available tools: answer, count, echo, explode, fails, search".to_owned()),
        ]
    );
}

#[tokio::test]
async fn definitions_are_sorted_by_name_and_built_once() {
    let registry = registry();
    let names: Vec<&str> = registry.definitions().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["answer", "count", "echo", "explode", "fails", "search"]);
    assert!(std::ptr::eq(registry.definitions(), registry.definitions()));
}

#[tokio::test]
async fn each_error_result_keeps_the_kind_of_its_failure_and_a_success_has_none() {
    let cases = [
        ("nope", "{}", Some(ToolErrorKind::UnknownTool)),
        ("search", r#"{"filter":{"nmae":"x"}}"#, Some(ToolErrorKind::InvalidArguments)),
        ("search", r#"{"filter":{"name":"x"},"filter":{"name":"y"}}"#, Some(ToolErrorKind::InvalidArguments)),
        ("fails", r#"{"reason":"a.txt"}"#, Some(ToolErrorKind::Failed)),
        ("explode", "{}", Some(ToolErrorKind::Panicked)),
        ("answer", "{}", None),
    ];
    for (name, arguments, kind) in cases {
        let message = call(name, arguments).await;
        assert_eq!((message.is_error, message.error_kind), (kind.is_some(), kind), "{name} {arguments}");
    }
}

#[test]
fn a_hand_made_error_message_is_a_failure_and_a_success_takes_no_kind() {
    let made = ToolMessage::error("c", "t", "no");
    assert_eq!(made.error_kind, Some(ToolErrorKind::Failed));
    let timed_out = made.clone().with_error_kind(ToolErrorKind::TimedOut);
    assert_eq!(timed_out.error_kind, Some(ToolErrorKind::TimedOut));
    assert_eq!(timed_out, made, "equality leaves the kind out");
    let success = ToolMessage::success("c", "t", ToolResult::Text("ok".into()));
    assert_eq!(success.with_error_kind(ToolErrorKind::TimedOut).error_kind, None);
}
