//! OpenAI Responses (`POST /v1/responses`).
//!
//! Source: OpenAI API reference, "Responses" (the response object's `output` items, the
//! `function_call_output` input item and its `output` array of `input_text`, `input_image` and
//! `input_file` items, function `tools`), checked against
//! `openai-responses-parallel-1.json` in the fixtures.

use serde_json::{Value, json};

use super::{At, ProviderError};
use crate::{ContentPart, MessageContent, ResourceContents, ToolCall, ToolMessage};

/// The `output[]` items of `type: "function_call"`: `{call_id, name, arguments, caller?}`. A
/// `caller` of type `program` (`{"type": "program", "caller_id": "..."}`, a call from a program:
/// programmatic tool calling) gives [`ToolCall::caller`] its `caller_id`; a `{"type": "direct"}`
/// caller, or none, leaves it `None`. Other items, the program's own among them, are not calls
/// for the client and are skipped.
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
        let call = ToolCall::new(id, name, arguments);
        calls.push(match item.optional("caller") {
            Some(caller) if caller.clone().object()?.field("type")?.str()? != "direct" => {
                call.with_caller(caller.field("caller_id")?.str()?)
            }
            _ => call,
        });
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

/// One item of a `function_call_output`'s `output` array. The Responses API reference gives that
/// array as `input_text`, `input_image` and `input_file` items; so:
///
/// - text: `input_text`;
/// - image: `input_image` with a base64 data URL (`data:<media_type>;base64,<data>`) and the
///   part's `detail` when it has one;
/// - embedded text resource: `input_text` with its text;
/// - embedded binary resource of an `image/*` type: `input_image`, a data URL as for images;
/// - embedded binary resource of another type (a PDF, say): `input_file` with `file_data` a
///   base64 data URL and `filename` the last segment of the URI ([`file_name`]);
/// - audio (the array has no audio item), a binary resource without a MIME type (a data URL
///   needs one) and a resource link (`input_file.file_url` fetches over the public web, and the
///   link is often a local URI): `input_text` with the part's text projection
///   ([`ContentPart::as_text`]: `[audio]`, `[resource <uri>]`, `[resource link <uri>]`).
///
/// Image and file data go as they are (not capped).
fn part(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => json!({"type": "input_text", "text": text}),
        ContentPart::Image { data, media_type, detail } => {
            let mut image = json!({"type": "input_image", "image_url": data_url(media_type, data)});
            if let Some(detail) = detail {
                image["detail"] = json!(detail.as_str());
            }
            image
        }
        ContentPart::Resource { media_type: Some(media_type), contents: ResourceContents::Blob(data), .. }
            if media_type.starts_with("image/") =>
        {
            json!({"type": "input_image", "image_url": data_url(media_type, data)})
        }
        ContentPart::Resource { uri, media_type: Some(media_type), contents: ResourceContents::Blob(data) } => {
            json!({"type": "input_file", "filename": file_name(uri), "file_data": data_url(media_type, data)})
        }
        ContentPart::Audio { .. } | ContentPart::Resource { .. } | ContentPart::ResourceLink { .. } => {
            json!({"type": "input_text", "text": part.as_text()})
        }
    }
}

/// `data:<media_type>;base64,<data>`.
fn data_url(media_type: &str, data: &str) -> String {
    format!("data:{media_type};base64,{data}")
}

/// The file name an `input_file` gets for a resource: the URI's last path segment, without a
/// query or fragment (`file:///docs/r.pdf?v=2` gives `r.pdf`); the whole URI when that segment is
/// empty (`https://example.com/`).
fn file_name(uri: &str) -> &str {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    match path.rsplit('/').next() {
        Some(segment) if !segment.is_empty() => segment,
        _ => uri,
    }
}
