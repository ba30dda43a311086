//! `#[tool(output_schema)]`: the JSON Schema of the result type on the definition, and the JSON
//! value of a result on the tool message.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use tool_runtime::prelude::*;

async fn run(spec: &'static tool_runtime::ToolSpec, arguments: &str) -> ToolMessage {
    let registry = Registry::builder().tool(spec).build().unwrap();
    registry.call(&ToolCall::new("call_1", spec.name(), arguments), &ToolContext::new()).await
}

/// The size of a file.
#[derive(Serialize, JsonSchema)]
struct Size {
    /// The path as given.
    path: String,
    /// Bytes.
    bytes: u64,
    /// The media type, when known.
    media_type: Option<String>,
}

/// Report a size.
#[tool(output_schema)]
fn size(path: String) -> Result<Size, ToolError> {
    if path.is_empty() {
        return Err(ToolError::failed("path is empty; give a file path"));
    }
    Ok(Size { path, bytes: 12, media_type: None })
}

/// Report a size, without an output schema.
#[tool]
fn plain_size(path: String) -> Size {
    Size { path, bytes: 12, media_type: None }
}

/// Count, as text.
#[tool]
fn count() -> String {
    "3".to_owned()
}

#[test]
fn the_output_schema_is_the_result_types_serialization_schema() {
    assert_eq!(
        size::TOOL.definition().output_schema,
        Some(json!({
            "description": "The size of a file.",
            "type": "object",
            "properties": {
                "path": {"description": "The path as given.", "type": "string"},
                "bytes": {"description": "Bytes.", "type": "integer", "format": "uint64", "minimum": 0},
                "media_type": {"description": "The media type, when known.", "type": ["string", "null"]}
            },
            "required": ["path", "bytes", "media_type"]
        }))
    );
}

#[test]
fn a_tool_without_the_option_has_no_output_schema() {
    assert_eq!(plain_size::TOOL.definition().output_schema, None);
}

#[test]
fn the_canonical_definition_serializes_the_output_schema_only_when_there_is_one() {
    let with = serde_json::to_value(size::TOOL.definition()).unwrap();
    assert_eq!(with["output_schema"]["type"], "object");
    let without = serde_json::to_value(plain_size::TOOL.definition()).unwrap();
    assert_eq!(without.get("output_schema"), None);
}

#[tokio::test]
async fn a_json_result_keeps_its_value_as_structured_content_and_its_text_as_content() {
    let message = run(size::TOOL, r#"{"path":"a.txt"}"#).await;
    assert_eq!(message.structured_content, Some(json!({"path": "a.txt", "bytes": 12, "media_type": null})));
    assert_eq!(message.content, MessageContent::Text(r#"{"path":"a.txt","bytes":12,"media_type":null}"#.to_owned()));
}

/// Keys whose order in the type (`zone`, `alpha`, `middle`) is neither sorted nor reversed.
#[derive(Serialize, JsonSchema)]
struct Unsorted {
    /// Last alphabetically, first here.
    zone: String,
    /// First alphabetically.
    alpha: u8,
    /// A nested object, in its own type's order.
    middle: Size,
}

/// Report an unsorted result.
#[tool(output_schema)]
fn unsorted() -> Unsorted {
    Unsorted { zone: "z".to_owned(), alpha: 1, middle: Size { path: "p".to_owned(), bytes: 2, media_type: None } }
}

/// By construction, whatever `serde_json/preserve_order` says: without it (this build) a
/// `serde_json::Map` sorts its keys, so a text made from the value would read `alpha`, `middle`,
/// `zone`; with it, the map keeps the type's order, which is the text's order already.
#[tokio::test]
async fn the_text_of_an_output_schema_result_keeps_the_types_key_order_at_every_depth() {
    let message = run(unsorted::TOOL, "").await;
    assert_eq!(
        message.content,
        MessageContent::Text(r#"{"zone":"z","alpha":1,"middle":{"path":"p","bytes":2,"media_type":null}}"#.to_owned())
    );
    assert_eq!(
        message.structured_content,
        Some(json!({"zone": "z", "alpha": 1, "middle": {"path": "p", "bytes": 2, "media_type": null}}))
    );
}

#[test]
fn this_build_sorts_the_keys_of_a_json_map_so_the_key_order_test_would_see_a_text_made_from_one() {
    let value = serde_json::to_value(unsorted()).unwrap();
    assert_eq!(value.to_string(), r#"{"alpha":1,"middle":{"bytes":2,"media_type":null,"path":"p"},"zone":"z"}"#);
}

#[tokio::test]
async fn a_json_result_of_a_tool_without_the_option_is_its_text_in_field_order_without_a_value() {
    let message = run(plain_size::TOOL, r#"{"path":"a.txt"}"#).await;
    assert_eq!(message.content, MessageContent::Text(r#"{"path":"a.txt","bytes":12,"media_type":null}"#.to_owned()));
    assert_eq!(message.structured_content, None);
}

#[tokio::test]
async fn an_error_result_has_no_structured_content() {
    let message = run(size::TOOL, r#"{"path":""}"#).await;
    assert_eq!(message, ToolMessage::error("call_1", "size", "path is empty; give a file path"));
    assert_eq!(message.structured_content, None);
}

/// Count, as a JSON number.
#[tool]
fn count_json() -> u32 {
    3
}

#[tokio::test]
async fn a_json_result_that_is_not_an_object_has_no_structured_content() {
    let message = run(count_json::TOOL, "").await;
    assert_eq!(message.content, MessageContent::Text("3".to_owned()));
    assert_eq!(message.structured_content, None);
}

#[tokio::test]
async fn a_text_result_has_no_structured_content() {
    let message = run(count::TOOL, "").await;
    assert_eq!(message.structured_content, None);
}
