//! OpenAI Chat Completions (`POST /v1/chat/completions`).
//!
//! Source: OpenAI API reference, "Chat Completions" (the chat completion object, the `tool`
//! message, `tools[].function`), checked against `openai-chat-*.json` in the fixtures.

use serde_json::{Value, json};

use super::{At, ProviderError};
use crate::{ContentPart, MessageContent, ToolCall, ToolMessage};

/// `choices[0].message.tool_calls[]`: `{id, type: "function", function: {name, arguments}}`.
pub(super) fn parse_tool_calls(response: &Value) -> Result<Vec<ToolCall>, ProviderError> {
    let message = At::root(response).field("choices")?.first()?.object()?.field("message")?.object()?;
    let Some(calls) = message.optional("tool_calls") else {
        return Ok(Vec::new());
    };
    calls
        .elements()?
        .into_iter()
        .map(|call| {
            let call = call.object()?;
            if let Some(kind) = call.optional("type")
                && kind.value != "function"
            {
                return Err(ProviderError::Unsupported {
                    path: kind.path,
                    found: kind.value.to_string(),
                    expected: "\"function\"",
                });
            }
            let id = call.field("id")?.str()?;
            let function = call.field("function")?.object()?;
            let name = function.field("name")?.str()?;
            let arguments = function.field("arguments")?.str()?;
            Ok(ToolCall::new(id, name, arguments))
        })
        .collect()
}

/// One `{"role":"tool","tool_call_id","content"}` message per result.
///
/// The Chat Completions reference gives a `tool` message's `content` as a string or an array of
/// text parts (`{"type":"text","text"}`) only: there is no image, audio or file part for a tool
/// message. So every part becomes a text part with its text projection
/// ([`ContentPart::as_text`]): an image `[image]`, audio `[audio]`, an embedded text resource its
/// text, an embedded binary resource `[resource <uri>]` (a PDF too), a resource link
/// `[resource link <uri>]`. The bytes of images, audio and binary resources are not sent.
pub(super) fn render_tool_results(messages: &[ToolMessage]) -> Vec<Value> {
    messages
        .iter()
        .map(|message| {
            let content = match &message.content {
                MessageContent::Text(text) => Value::String(text.clone()),
                MessageContent::Parts(parts) => {
                    parts.iter().map(|part| json!({"type": "text", "text": ContentPart::as_text(part)})).collect()
                }
            };
            json!({"role": "tool", "tool_call_id": message.tool_call_id, "content": content})
        })
        .collect()
}
