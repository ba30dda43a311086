//! Audio, embedded resources and resource links in each provider's tool result: the kinds a
//! provider takes keep their shape, the others become their text projection.

use serde_json::json;
use tool_runtime::provider::Provider;
use tool_runtime::{ContentPart, ToolMessage, ToolResult};

/// One part of every kind beyond text and images, and a PDF that Anthropic takes as a document.
fn kinds() -> ToolMessage {
    ToolMessage::success(
        "call_4",
        "fetch",
        ToolResult::Parts(vec![
            ContentPart::audio("UklGRg==", "audio/wav"),
            ContentPart::resource_text("file:///notes.md", Some("text/markdown".to_owned()), "# notes"),
            ContentPart::resource_blob("file:///a.bin", None, "AAEC"),
            ContentPart::resource_blob("file:///r.pdf", Some("application/pdf".to_owned()), "JVBERg=="),
            ContentPart::resource_link("file:///plain.txt", "plain.txt"),
        ]),
    )
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
            "[resource file:///r.pdf]",
            "[resource link file:///plain.txt]"
        ]
    );
    assert_eq!(
        kinds().text(),
        "[audio]\n# notes\n[resource file:///a.bin]\n[resource file:///r.pdf]\n[resource link file:///plain.txt]"
    );
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
                {"type": "text", "text": "[resource file:///r.pdf]"},
                {"type": "text", "text": "[resource link file:///plain.txt]"},
            ],
        })]
    );
}

#[test]
fn openai_responses_gets_input_text_for_each_kind() {
    assert_eq!(
        Provider::OpenAiResponses.render_tool_results(&[kinds()]),
        vec![json!({
            "type": "function_call_output",
            "call_id": "call_4",
            "output": [
                {"type": "input_text", "text": "[audio]"},
                {"type": "input_text", "text": "# notes"},
                {"type": "input_text", "text": "[resource file:///a.bin]"},
                {"type": "input_text", "text": "[resource file:///r.pdf]"},
                {"type": "input_text", "text": "[resource link file:///plain.txt]"},
            ],
        })]
    );
}

#[test]
fn anthropic_gets_a_pdf_as_a_document_and_text_for_the_rest() {
    assert_eq!(
        Provider::Anthropic.render_tool_results(&[kinds()]),
        vec![json!({
            "role": "user",
            "content": [{
                "type": "tool_result",
                "tool_use_id": "call_4",
                "content": [
                    {"type": "text", "text": "[audio]"},
                    {"type": "text", "text": "# notes"},
                    {"type": "text", "text": "[resource file:///a.bin]"},
                    {
                        "type": "document",
                        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERg=="},
                    },
                    {"type": "text", "text": "[resource link file:///plain.txt]"},
                ],
            }],
        })]
    );
}

#[test]
fn gemini_gets_the_text_projection() {
    assert_eq!(
        Provider::Gemini.render_tool_results(&[kinds()]),
        vec![json!({
            "role": "user",
            "parts": [{"functionResponse": {
                "name": "fetch",
                "id": "call_4",
                "response": {"output": "[audio]\n# notes\n[resource file:///a.bin]\n[resource file:///r.pdf]\n[resource link file:///plain.txt]"},
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
