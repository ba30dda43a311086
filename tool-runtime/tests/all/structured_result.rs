//! `ToolResult::Structured`: content for the model beside a structured value for programs.

use serde_json::json;
use tool_runtime::{ContentPart, MessageContent, ToolMessage, ToolResult};

fn message(content: Vec<ContentPart>) -> ToolMessage {
    ToolMessage::success("c1", "counts", ToolResult::Structured { content, value: json!({"n": 2}) })
}

#[test]
fn one_text_part_is_shown_as_plain_text_beside_the_structured_value() {
    let message = message(vec![ContentPart::text("2 calls")]);
    assert_eq!(message.content, MessageContent::Text("2 calls".to_owned()));
    assert_eq!(message.structured_content, Some(json!({"n": 2})));
}

#[test]
fn without_content_the_model_sees_the_values_compact_json() {
    let message = message(Vec::new());
    assert_eq!(message.content, MessageContent::Text("{\"n\":2}".to_owned()));
    assert_eq!(message.structured_content, Some(json!({"n": 2})));
}

#[test]
fn several_parts_are_kept_in_order() {
    let parts = vec![ContentPart::text("a"), ContentPart::text("b")];
    assert_eq!(message(parts.clone()).content, MessageContent::Parts(parts));
}

#[test]
fn a_value_that_is_not_an_object_is_not_structured_content() {
    let message = ToolMessage::success(
        "c1",
        "n",
        ToolResult::Structured { content: vec![ContentPart::text("2")], value: json!(2) },
    );
    assert_eq!(message.structured_content, None);
}
