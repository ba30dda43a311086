//! OpenAI Responses (`POST /v1/responses`).
//!
//! Source: OpenAI API reference, "Responses" (the response object's `output` items, the
//! `function_call_output` input item, function `tools`), checked against
//! `openai-responses-parallel-1.json` in the fixtures.

use serde_json::{Value, json};

use super::{At, ProviderError};
use crate::{ContentPart, MessageContent, ToolCall, ToolMessage};

/// The `output[]` items of `type: "function_call"`: `{call_id, name, arguments}`.
pub(super) fn parse_tool_calls(response: &Value) -> Result<Vec<ToolCall>, ProviderError> {
    let mut calls = Vec::new();
    for item in At::root(response).field("output")?.elements()? {
        let item = item.object()?;
        if item.field("type")?.str()? != "function_call" {
            continue;
        }
        let id = item.field("call_id")?.str()?;
        let name = item.field("name")?.str()?;
        let arguments = item.field("arguments")?.str()?;
        calls.push(ToolCall::new(id, name, arguments));
    }
    Ok(calls)
}

/// One `{"type":"function_call_output","call_id","output"}` item per result.
pub(super) fn render_tool_results(messages: &[ToolMessage]) -> Vec<Value> {
    messages
        .iter()
        .map(|message| {
            let output = match &message.content {
                MessageContent::Text(text) => Value::String(text.clone()),
                MessageContent::Parts(parts) => parts.iter().map(part).collect(),
            };
            json!({"type": "function_call_output", "call_id": message.tool_call_id, "output": output})
        })
        .collect()
}

/// A text part becomes `input_text`, an image `input_image` (a base64 data URL, with its `detail`).
/// Function call outputs take no audio part here, and resources have no part of their own: audio,
/// embedded resources and resource links become `input_text` with their text projection
/// ([`ContentPart::as_text`]).
fn part(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => json!({"type": "input_text", "text": text}),
        ContentPart::Image { data, media_type, detail } => {
            let mut image = json!({"type": "input_image", "image_url": format!("data:{media_type};base64,{data}")});
            if let Some(detail) = detail {
                image["detail"] = json!(detail.as_str());
            }
            image
        }
        ContentPart::Audio { .. } | ContentPart::Resource { .. } | ContentPart::ResourceLink { .. } => {
            json!({"type": "input_text", "text": part.as_text()})
        }
    }
}
