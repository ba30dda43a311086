//! Anthropic Messages (`POST /v1/messages`).
//!
//! Source: Anthropic API reference, "Messages", and the "Tool use" guide (`tool_use` blocks,
//! `tool_result` blocks with `is_error`, `tools[].input_schema`), checked against
//! `anthropic-tool-use-*.json` in the fixtures.

use serde_json::{Map, Value, json};

use super::{At, ProviderError};
use crate::{ContentPart, MessageContent, ResourceContents, ToolCall, ToolMessage};

/// The `content[]` blocks of `type: "tool_use"`: `{id, name, input}`.
pub(super) fn parse_tool_calls(response: &Value) -> Result<Vec<ToolCall>, ProviderError> {
    let mut calls = Vec::new();
    for block in At::root(response).field("content")?.elements()? {
        let block = block.object()?;
        if block.field("type")?.str()? != "tool_use" {
            continue;
        }
        let id = block.field("id")?.str()?;
        let name = block.field("name")?.str()?;
        let input = block.field("input")?.object()?;
        calls.push(ToolCall::new(id, name, input.value.to_string()));
    }
    Ok(calls)
}

/// One `{"role":"user","content":[tool_result, ...]}` message; none for no results.
pub(super) fn render_tool_results(messages: &[ToolMessage]) -> Vec<Value> {
    if messages.is_empty() {
        return Vec::new();
    }
    let results: Vec<Value> = messages.iter().map(tool_result).collect();
    vec![json!({"role": "user", "content": results})]
}

fn tool_result(message: &ToolMessage) -> Value {
    let content = match &message.content {
        MessageContent::Text(text) => Value::String(text.clone()),
        MessageContent::Parts(parts) => parts.iter().map(block).collect(),
    };
    let mut result = Map::new();
    result.insert("type".to_owned(), json!("tool_result"));
    result.insert("tool_use_id".to_owned(), json!(message.tool_call_id));
    result.insert("content".to_owned(), content);
    if message.is_error {
        result.insert("is_error".to_owned(), Value::Bool(true));
    }
    Value::Object(result)
}

/// `tool_result` content takes text, image and document blocks: a text part becomes a `text`
/// block, an image an `image` block (base64 source), an embedded binary resource of type
/// `application/pdf` a `document` block (base64 source). Audio, other embedded resources and
/// resource links become `text` blocks with their text projection ([`ContentPart::as_text`]; an
/// embedded text resource's text).
fn block(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => json!({"type": "text", "text": text}),
        ContentPart::Image { data, media_type, .. } => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }
        ContentPart::Resource { media_type: Some(media_type), contents: ResourceContents::Blob(data), .. }
            if media_type == "application/pdf" =>
        {
            json!({"type": "document", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }
        ContentPart::Audio { .. } | ContentPart::Resource { .. } | ContentPart::ResourceLink { .. } => {
            json!({"type": "text", "text": part.as_text()})
        }
    }
}
