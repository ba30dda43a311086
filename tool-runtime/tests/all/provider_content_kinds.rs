//! Audio, embedded resources and resource links in each provider's tool result: the kinds a
//! provider takes keep their shape, the others become their text projection.

use serde_json::json;
use tool_runtime::provider::Provider;
use tool_runtime::{ContentPart, ToolMessage, ToolResult};

/// One part of every kind beyond text and images: audio, an embedded text resource, embedded
/// binary resources without a MIME type, of PDF, PNG and ZIP type, and a resource link.
fn kinds() -> ToolMessage {
    ToolMessage::success(
        "call_4",
        "fetch",
        ToolResult::Parts(vec![
            ContentPart::audio("UklGRg==", "audio/wav"),
            ContentPart::resource_text("file:///notes.md", Some("text/markdown".to_owned()), "# notes"),
            ContentPart::resource_blob("file:///a.bin", None, "AAEC"),
            ContentPart::resource_blob("file:///docs/r.pdf", Some("application/pdf".to_owned()), "JVBERg=="),
            ContentPart::resource_blob("file:///shot.png", Some("image/png".to_owned()), "iVBORw0KGgo="),
            ContentPart::resource_blob("file:///a.zip", Some("application/zip".to_owned()), "UEsDBA=="),
            ContentPart::resource_link("file:///plain.txt", "plain.txt"),
        ]),
    )
}

/// The text projection of [`kinds`], one line per part.
const KINDS_TEXT: &str = "[audio]\n# notes\n[resource file:///a.bin]\n[resource file:///docs/r.pdf]\n\
                          [resource file:///shot.png]\n[resource file:///a.zip]\n[resource link file:///plain.txt]";

/// One result of a single part.
fn one(part: ContentPart) -> ToolMessage {
    ToolMessage::success("call_5", "fetch", ToolResult::Parts(vec![part]))
}

#[test]
fn text_projections_name_what_is_not_text() {
    let projections: Vec<String> = match &kinds().content {
        tool_runtime::MessageContent::Parts(parts) => parts.iter().map(|p| p.as_text().into_owned()).collect(),
        tool_runtime::MessageContent::Text(_) => panic!("parts expected"),
    };
    assert_eq!(
        projections,
        [
            "[audio]",
            "# notes",
            "[resource file:///a.bin]",
            "[resource file:///docs/r.pdf]",
            "[resource file:///shot.png]",
            "[resource file:///a.zip]",
            "[resource link file:///plain.txt]"
        ]
    );
    assert_eq!(kinds().text(), KINDS_TEXT);
}

#[test]
fn openai_chat_gets_text_parts_only() {
    assert_eq!(
        Provider::OpenAiChat.render_tool_results(&[kinds()]),
        vec![json!({
            "role": "tool",
            "tool_call_id": "call_4",
            "content": [
                {"type": "text", "text": "[audio]"},
                {"type": "text", "text": "# notes"},
                {"type": "text", "text": "[resource file:///a.bin]"},
                {"type": "text", "text": "[resource file:///docs/r.pdf]"},
                {"type": "text", "text": "[resource file:///shot.png]"},
                {"type": "text", "text": "[resource file:///a.zip]"},
                {"type": "text", "text": "[resource link file:///plain.txt]"},
            ],
        })]
    );
}

#[test]
fn openai_responses_gets_files_and_images_for_typed_blobs_and_text_for_the_rest() {
    assert_eq!(
        Provider::OpenAiResponses.render_tool_results(&[kinds()]),
        vec![json!({
            "type": "function_call_output",
            "call_id": "call_4",
            "output": [
                {"type": "input_text", "text": "[audio]"},
                {"type": "input_text", "text": "# notes"},
                {"type": "input_text", "text": "[resource file:///a.bin]"},
                {"type": "input_file", "filename": "r.pdf", "file_data": "data:application/pdf;base64,JVBERg=="},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                {"type": "input_file", "filename": "a.zip", "file_data": "data:application/zip;base64,UEsDBA=="},
                {"type": "input_text", "text": "[resource link file:///plain.txt]"},
            ],
        })]
    );
}

#[test]
fn openai_responses_names_a_file_after_the_last_segment_of_its_uri() {
    let output = |uri: &str| {
        let rendered = Provider::OpenAiResponses.render_tool_results(&[one(ContentPart::resource_blob(
            uri,
            Some("application/pdf".to_owned()),
            "JVBERg==",
        ))]);
        rendered[0]["output"][0]["filename"].clone()
    };
    assert_eq!(output("https://example.com/docs/r.pdf?v=2#page=3"), json!("r.pdf"));
    assert_eq!(output("r.pdf"), json!("r.pdf"));
    assert_eq!(output("https://example.com/"), json!("https://example.com/"));
}

#[test]
fn anthropic_gets_documents_for_text_and_pdf_resources_and_text_for_the_rest() {
    assert_eq!(
        Provider::Anthropic.render_tool_results(&[kinds()]),
        vec![json!({
            "role": "user",
            "content": [{
                "type": "tool_result",
                "tool_use_id": "call_4",
                "content": [
                    {"type": "text", "text": "[audio]"},
                    {
                        "type": "document",
                        "source": {"type": "text", "media_type": "text/plain", "data": "# notes"},
                        "title": "file:///notes.md",
                    },
                    {"type": "text", "text": "[resource file:///a.bin]"},
                    {
                        "type": "document",
                        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERg=="},
                        "title": "file:///docs/r.pdf",
                    },
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                    {"type": "text", "text": "[resource file:///a.zip]"},
                    {"type": "text", "text": "[resource link file:///plain.txt]"},
                ],
            }],
        })]
    );
}

#[test]
fn anthropic_sends_a_text_resource_without_a_media_type_as_a_plain_text_document() {
    assert_eq!(
        Provider::Anthropic.render_tool_results(&[one(ContentPart::resource_text("mem://log", None, "line 1"))]),
        vec![json!({
            "role": "user",
            "content": [{
                "type": "tool_result",
                "tool_use_id": "call_5",
                "content": [{
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "line 1"},
                    "title": "mem://log",
                }],
            }],
        })]
    );
}

#[test]
fn gemini_gets_the_text_projection_and_inline_data_for_pdf_and_png_blobs() {
    assert_eq!(
        Provider::Gemini.render_tool_results(&[kinds()]),
        vec![json!({
            "role": "user",
            "parts": [{"functionResponse": {
                "name": "fetch",
                "id": "call_4",
                "response": {"output": KINDS_TEXT},
                "parts": [
                    {"inlineData": {"mimeType": "application/pdf", "data": "JVBERg=="}},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                ],
            }}],
        })]
    );
}

#[test]
fn gemini_sends_audio_as_its_text_projection_only() {
    assert_eq!(
        Provider::Gemini.render_tool_results(&[one(ContentPart::audio("UklGRg==", "audio/wav"))]),
        vec![json!({
            "role": "user",
            "parts": [{"functionResponse": {"name": "fetch", "id": "call_5", "response": {"output": "[audio]"}}}],
        })]
    );
}

#[test]
fn gemini_sends_an_error_s_image_inline_under_the_error_text() {
    let mut message = one(ContentPart::image("R0lGOD==", "image/webp"));
    message.is_error = true;
    assert_eq!(
        Provider::Gemini.render_tool_results(&[message]),
        vec![json!({
            "role": "user",
            "parts": [{"functionResponse": {
                "name": "fetch",
                "id": "call_5",
                "response": {"error": "[image]"},
                "parts": [{"inlineData": {"mimeType": "image/webp", "data": "R0lGOD=="}}],
            }}],
        })]
    );
}

#[test]
fn parts_round_trip_through_serde_with_a_type_tag() {
    let part = ContentPart::Resource {
        uri: "file:///notes.md".to_owned(),
        media_type: None,
        contents: tool_runtime::ResourceContents::Text("# notes".to_owned()),
    };
    let value = serde_json::to_value(&part).unwrap();
    assert_eq!(value, json!({"type": "resource", "uri": "file:///notes.md", "contents": {"text": "# notes"}}));
    assert_eq!(serde_json::from_value::<ContentPart>(value).unwrap(), part);
}
