//! Anthropic Messages (`POST /v1/messages`).
//!
//! Source: Anthropic API reference, "Messages", and the "Tool use" guide (`tool_use` blocks,
//! `tool_result` blocks with `is_error`, `tools[].input_schema`), checked against
//! `anthropic-tool-use-*.json` in the fixtures.

use serde_json::{Map, Value, json};

use super::{At, ProviderError};
use crate::{ContentPart, MessageContent, ResourceContents, ToolCall, ToolMessage};

/// The `content[]` blocks of `type: "tool_use"`: `{id, name, input, caller?}`. A `caller` of a
/// code execution type (`{"type": "code_execution_20250825", "tool_id": "srvtoolu_..."}`, a call
/// from a program: programmatic tool calling) gives [`ToolCall::caller`] its `tool_id`; a
/// `{"type": "direct"}` caller, or none, leaves it `None`.
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
        let call = ToolCall::new(id, name, input.value.to_string());
        calls.push(match block.optional("caller") {
            Some(caller) if caller.clone().object()?.field("type")?.str()? != "direct" => {
                call.with_caller(caller.field("tool_id")?.str()?)
            }
            _ => call,
        });
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

/// One block of `tool_result` content. The Messages API reference gives `tool_result.content`
/// as text, image, search result and document blocks (`ToolResultBlockParam`), a document's
/// `source` being base64 PDF or plain text (`Base64PDFSource`, `PlainTextSource`); so:
///
/// - text: a `text` block;
/// - image: an `image` block, `{"type":"base64","media_type","data"}` source;
/// - embedded text resource: a `document` block with a plain-text source,
///   `{"type":"document","source":{"type":"text","media_type":"text/plain","data":<text>},
///   "title":<uri>}` (`PlainTextSource` takes `text/plain` only, so the resource's own MIME type
///   is not sent);
/// - embedded binary resource of an `image/*` type: an `image` block as for images;
/// - embedded binary resource of type `application/pdf`: a `document` block, base64 source,
///   `"title":<uri>`;
/// - audio (Anthropic has no audio block), any other binary resource (no source takes it) and a
///   resource link (the `url` document source fetches PDFs only, over the public web): a `text`
///   block with the part's text projection ([`ContentPart::as_text`]: `[audio]`,
///   `[resource <uri>]`, `[resource link <uri>]`).
///
/// Image and PDF data go as they are (not capped).
fn block(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => json!({"type": "text", "text": text}),
        ContentPart::Image { data, media_type, .. } => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }
        ContentPart::Resource { media_type: Some(media_type), contents: ResourceContents::Blob(data), .. }
            if media_type.starts_with("image/") =>
        {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }
        ContentPart::Resource { uri, contents: ResourceContents::Text(text), .. } => json!({
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": text},
            "title": uri,
        }),
        ContentPart::Resource { uri, media_type: Some(media_type), contents: ResourceContents::Blob(data) }
            if media_type == "application/pdf" =>
        {
            json!({
                "type": "document",
                "source": {"type": "base64", "media_type": media_type, "data": data},
                "title": uri,
            })
        }
        ContentPart::Audio { .. } | ContentPart::Resource { .. } | ContentPart::ResourceLink { .. } => {
            json!({"type": "text", "text": part.as_text()})
        }
    }
}
