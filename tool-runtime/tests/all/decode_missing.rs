//! A call that leaves out several required fields is told about every one of them in one error,
//! not only the first serde meets.

use serde::Deserialize;
use tool_runtime::prelude::*;
use tool_runtime::{DynamicTool, ToolCall, ToolSpec};

/// Create a note.
#[tool]
fn note(
    /// The title.
    title: String,
    /// The body.
    body: String,
    /// The tags.
    tags: Vec<String>,
    /// How many copies.
    #[arg(default)]
    copies: u32,
) -> String {
    format!("{title} {body} {tags:?} {copies}")
}

/// Where.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Place {
    /// The city.
    city: String,
    /// The street.
    street: String,
    /// The number.
    number: Option<u32>,
}

/// Store a place.
#[tool]
fn place(
    /// The label.
    label: String,
    /// The place.
    at: Place,
) -> String {
    format!("{label}: {} {} {:?}", at.city, at.street, at.number)
}

async fn call(tool: &'static ToolSpec, arguments: &str) -> String {
    let registry = Registry::builder().tool(tool).build().unwrap();
    let call = ToolCall::new("c1", tool.name(), arguments);
    registry.call(&call, &ToolContext::builder().build()).await.text().into_owned()
}

#[tokio::test]
async fn every_missing_required_argument_is_named_in_one_error_in_declaration_order() {
    assert_eq!(call(note::TOOL, "{}").await, "invalid arguments for `note`: missing fields `title`, `body`, `tags`");
}

#[tokio::test]
async fn an_argument_with_a_default_is_not_listed_as_missing() {
    assert_eq!(
        call(note::TOOL, r#"{"body":"b"}"#).await,
        "invalid arguments for `note`: missing fields `title`, `tags`"
    );
}

#[tokio::test]
async fn one_missing_argument_reads_as_before() {
    assert_eq!(
        call(note::TOOL, r#"{"title":"t","body":"b"}"#).await,
        "invalid arguments for `note`: missing field `tags`"
    );
}

#[tokio::test]
async fn the_missing_fields_of_a_nested_object_are_named_by_their_paths() {
    assert_eq!(
        call(place::TOOL, r#"{"label":"home","at":{"number":4}}"#).await,
        "invalid arguments for `place`: missing fields `at.city`, `at.street`"
    );
}

#[tokio::test]
async fn a_run_time_tool_names_every_missing_field_in_one_line() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}},
        "required": ["a", "b", "c"],
    });
    let tool = DynamicTool::new("abc", "Takes three.", schema, |_, _| async { Ok(ToolResult::text("ran")) }).unwrap();
    assert_eq!(tool.validate(r#"{"b":"x"}"#).unwrap_err().to_string(), "missing fields `a`, `c`");
}

#[tokio::test]
async fn a_wrong_type_is_told_with_every_other_wrong_value_and_missing_field() {
    // serde's own error first, then the others in key order (the layout's), depth first.
    assert_eq!(
        call(note::TOOL, r#"{"title":12,"body":3}"#).await,
        "invalid arguments for `note`: `body`: invalid type: integer `3`, expected a string\n\
         also: missing field `tags`\n\
         also: `title`: invalid type: integer `12`, expected a string"
    );
    assert_eq!(
        call(note::TOOL, r#"{"title":"t","body":"b","tags":["a",2,false],"copies":"two"}"#).await,
        "invalid arguments for `note`: `copies`: invalid type: string \"two\", expected an integer from 0 to 4294967295\n\
         also: `tags[1]`: invalid type: integer `2`, expected a string\n\
         also: `tags[2]`: invalid type: boolean `false`, expected a string"
    );
}

#[tokio::test]
async fn a_missing_field_is_told_with_the_wrong_values_beside_it_and_below() {
    assert_eq!(
        call(place::TOOL, r#"{"at":{"city":5,"number":"7"}}"#).await,
        "invalid arguments for `place`: `at.city`: invalid type: integer `5`, expected a string\n\
         also: missing field `label`\n\
         also: missing field `at.street`\n\
         also: `at.number`: invalid type: string \"7\", expected an integer from 0 to 4294967295"
    );
}

#[tokio::test]
async fn one_wrong_value_alone_is_one_error() {
    assert_eq!(
        call(note::TOOL, r#"{"title":"t","body":"b","tags":"x"}"#).await,
        "invalid arguments for `note`: `tags`: invalid type: string \"x\", expected a sequence"
    );
}
