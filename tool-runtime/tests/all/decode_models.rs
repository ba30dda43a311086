//! Decoding what real models send, and the opt-in repairs.

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tool_runtime::decode::{Repair, RepairPolicy};
use tool_runtime::prelude::*;

/// Takes only optional arguments.
#[tool]
fn optional_only(
    /// A label.
    label: Option<String>,
) -> String {
    format!("label={label:?}")
}

/// Takes a required argument.
#[tool]
fn needs_x(
    /// The x.
    x: i64,
) -> String {
    format!("x={x}")
}

/// A browser step.
#[derive(Deserialize, JsonSchema)]
struct Step {
    /// What to do.
    action: String,
    /// Where.
    url: String,
    /// Timeout in milliseconds (default 0).
    #[serde(default)]
    timeout_ms: u64,
}

/// Runs a browser step, flattened into the arguments by hand.
#[tool]
fn browse(
    /// What to do.
    action: String,
    /// Where.
    url: String,
    /// The step options.
    options: Option<Step>,
) -> String {
    format!("{action} {url} {:?}", options.map(|o| (o.action, o.url, o.timeout_ms)))
}

/// Searches with a filter.
#[derive(Deserialize, JsonSchema)]
struct Filter {
    /// Name to match.
    name: String,
    /// Tags.
    #[serde(default)]
    tags: Vec<String>,
}

/// Searches.
#[tool]
fn search(
    /// The filter.
    filter: Filter,
    /// How many.
    limit: Option<u32>,
    /// A free text that may look like JSON.
    note: Option<String>,
) -> String {
    format!("{} {:?} {} {:?} {note:?}", filter.name, filter.tags, filter.tags.len(), limit)
}

fn registry(policy: RepairPolicy) -> Registry {
    Registry::builder()
        .tool(optional_only::TOOL)
        .tool(needs_x::TOOL)
        .tool(browse::TOOL)
        .tool(search::TOOL)
        .repair(policy)
        .build()
        .unwrap()
}

async fn call_with(policy: RepairPolicy, name: &str, arguments: &str) -> ToolMessage {
    registry(policy).call(&ToolCall::new("call_1", name, arguments), &ToolContext::new()).await
}

async fn call(name: &str, arguments: &str) -> ToolMessage {
    call_with(RepairPolicy::none(), name, arguments).await
}

#[tokio::test]
async fn an_empty_string_is_an_empty_object_for_a_tool_with_nothing_required() {
    assert_eq!(call("optional_only", "").await.text(), "label=None");
}

#[tokio::test]
async fn whitespace_is_an_empty_object_for_a_tool_with_nothing_required() {
    assert_eq!(call("optional_only", " \n\t").await.text(), "label=None");
}

#[tokio::test]
async fn an_empty_string_for_a_tool_with_a_required_field_names_the_missing_field() {
    let message = call("needs_x", "").await;
    assert!(message.is_error);
    assert_eq!(message.text(), "invalid arguments for `needs_x`: missing field `x`");
}

#[tokio::test]
async fn null_for_an_option_is_none() {
    assert_eq!(call("optional_only", r#"{"label":null}"#).await.text(), "label=None");
}

#[tokio::test]
async fn null_for_a_defaulted_field_is_the_default() {
    let arguments = r#"{"action":"navigate","url":"https://example.com","options":{"action":"navigate","url":"https://example.com","timeout_ms":null}}"#;
    assert_eq!(
        call("browse", arguments).await.text(),
        r#"navigate https://example.com Some(("navigate", "https://example.com", 0))"#
    );
}

#[tokio::test]
async fn null_for_a_required_field_names_the_field() {
    let message = call("needs_x", r#"{"x":null}"#).await;
    assert!(message.is_error);
    assert_eq!(
        message.text(),
        "invalid arguments for `needs_x`: `x`: invalid type: null, expected an integer from -9223372036854775808 to 9223372036854775807"
    );
}

#[tokio::test]
async fn trailing_text_after_the_json_names_the_tool_and_the_column() {
    let message = call("needs_x", r#"{"x":1} thanks"#).await;
    assert!(message.is_error);
    assert_eq!(
        message.text(),
        "invalid arguments for `needs_x`: not valid JSON: trailing characters at line 1 column 9; send one JSON object"
    );
}

#[tokio::test]
async fn two_objects_back_to_back_name_the_tool_and_the_column() {
    let message = call("needs_x", r#"{"x":1}{"x":2}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `needs_x`: not valid JSON: trailing characters at line 1 column 8; send one JSON object"
    );
}

#[tokio::test]
async fn an_unknown_nested_field_names_its_path_and_the_accepted_fields() {
    let message = call("search", r#"{"filter":{"nmae":"a","name":"b"}}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `search`: unknown field `filter.nmae`; expected one of `name`, `tags`"
    );
}

#[tokio::test]
async fn repairs_are_off_by_default() {
    let message = call("search", r#"{"filter":{"name":"a"},"limit":"5"}"#).await;
    assert!(message.is_error);
    assert_eq!(
        message.text(),
        "invalid arguments for `search`: `limit`: invalid type: string \"5\", expected an integer from 0 to 4294967295"
    );
}

#[tokio::test]
async fn a_top_level_string_holding_the_object_is_unwrapped_under_the_policy() {
    let arguments = serde_json::to_string(r#"{"filter":{"name":"a"}}"#).unwrap();
    let message = call_with(RepairPolicy::all(), "search", &arguments).await;
    assert_eq!(message.text(), r#"a [] 0 None None"#);
}

#[tokio::test]
async fn a_nested_array_sent_as_a_string_is_parsed_under_the_policy() {
    let message = call_with(RepairPolicy::all(), "search", r#"{"filter":{"name":"a","tags":"[\"x\",\"y\"]"}}"#).await;
    assert_eq!(message.text(), r#"a ["x", "y"] 2 None None"#);
}

#[tokio::test]
async fn a_nested_object_sent_as_a_string_is_parsed_under_the_policy() {
    let message = call_with(RepairPolicy::all(), "search", r#"{"filter":"{\"name\":\"a\"}"}"#).await;
    assert_eq!(message.text(), r#"a [] 0 None None"#);
}

#[tokio::test]
async fn a_number_sent_as_a_string_is_read_under_the_policy() {
    let message = call_with(RepairPolicy::all(), "search", r#"{"filter":{"name":"a"},"limit":"5"}"#).await;
    assert_eq!(message.text(), r#"a [] 0 Some(5) None"#);
}

#[tokio::test]
async fn an_ambiguous_number_string_is_not_repaired() {
    let message = call_with(RepairPolicy::all(), "search", r#"{"filter":{"name":"a"},"limit":"5 items"}"#).await;
    assert!(message.is_error);
    assert_eq!(
        message.text(),
        "invalid arguments for `search`: `limit`: invalid type: string \"5 items\", expected an integer from 0 to 4294967295"
    );
}

#[tokio::test]
async fn a_string_field_that_looks_like_json_is_never_touched() {
    let message = call_with(RepairPolicy::all(), "search", r#"{"filter":{"name":"[1]"},"note":"{\"a\":1}"}"#).await;
    assert_eq!(message.text(), r#"[1] [] 0 None Some("{\"a\":1}")"#);
}

#[test]
fn each_repair_is_named_with_its_path() {
    let schema = search::TOOL.definition().input_schema.clone();
    let raw = serde_json::to_string(r#"{"filter":{"name":"a","tags":"[\"x\"]"},"limit":"7"}"#).unwrap();
    let repaired = RepairPolicy::all().repair(&raw, &schema);
    assert_eq!(
        repaired.repairs,
        [
            Repair::UnwrappedString,
            Repair::ParsedString { path: "filter.tags".to_owned() },
            Repair::NumberFromString { path: "limit".to_owned() },
        ]
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&repaired.arguments).unwrap(),
        json!({"filter":{"name":"a","tags":["x"]},"limit":7})
    );
    assert_eq!(
        repaired.repairs.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "unwrapped a JSON string holding the arguments object",
            "parsed `filter.tags` from a string",
            "read `limit` as a number"
        ]
    );
}

#[test]
fn a_policy_with_one_repair_turned_off_does_not_make_it() {
    let schema = search::TOOL.definition().input_schema.clone();
    let policy = RepairPolicy::all().numbers_from_strings(false);
    let repaired = policy.repair(r#"{"filter":{"name":"a"},"limit":"7"}"#, &schema);
    assert_eq!(repaired.repairs, []);
    assert_eq!(repaired.arguments, r#"{"filter":{"name":"a"},"limit":"7"}"#);
}

#[tokio::test]
async fn the_observer_hears_every_repaired_call_for_logs() {
    let heard: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = heard.clone();
    let policy = RepairPolicy::all().on_repair(move |tool, repairs| {
        sink.lock()
            .unwrap()
            .push(format!("{tool}: {}", repairs.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")));
    });
    let message = call_with(policy, "search", r#"{"filter":{"name":"a"},"limit":"5"}"#).await;
    assert!(!message.is_error);
    assert_eq!(*heard.lock().unwrap(), ["search: read `limit` as a number"]);
}
