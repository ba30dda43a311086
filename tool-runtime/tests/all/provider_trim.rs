//! Context trimming over the four history shapes of the provider module.

use serde_json::{Value, json};
use tool_runtime::provider::Provider;
use tool_runtime::provider::{HistoryShape, trim_context};
use tool_runtime::{ToolMessage, ToolResult};

/// The output refs of the calls, as the messages that answered them carry them: as long as the
/// call id (so the token counts are those of the call id) but another text: `call_a` has
/// `Rk9s_a`, `toolu_1` has `Qm2xw_1`.
fn refs(call_id: &str) -> Option<String> {
    Some(call_id.replace("call", "Rk9s").replace("toolu", "Qm2xw"))
}

fn openai_history() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "look"}),
        json!({"role": "assistant", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "read", "arguments": "{}"}},
            {"id": "call_b", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        ]}),
        json!({"role": "tool", "tool_call_id": "call_a", "content": "a".repeat(400)}),
        json!({"role": "tool", "tool_call_id": "call_b", "content": [
            {"type": "text", "text": "b".repeat(400)},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}
        ]}),
        json!({"role": "assistant", "tool_calls": [
            {"id": "call_c", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        ]}),
        json!({"role": "tool", "tool_call_id": "call_c", "content": "c".repeat(400)}),
    ]
}

#[test]
fn the_oldest_outputs_are_replaced_until_the_estimate_fits() {
    let mut history = openai_history();

    let report = trim_context(&mut history, HistoryShape::OpenAiChat, 200, &refs);

    assert_eq!(report.trimmed, ["call_a", "call_b"]);
    assert_eq!((report.tokens_before, report.tokens_after), (300, 118));
    assert_eq!(history[2]["content"], "[tool output trimmed; ref_id=Rk9s_a]");
    assert_eq!(history[5]["content"], "c".repeat(400));
}

#[test]
fn a_trimmed_result_keeps_its_call_and_its_call_id() {
    let mut history = openai_history();

    trim_context(&mut history, HistoryShape::OpenAiChat, 200, &refs);

    assert_eq!(history[1]["tool_calls"][1]["id"], "call_b");
    assert_eq!(history[3]["tool_call_id"], "call_b");
    assert_eq!(history.len(), 6);
}

#[test]
fn an_image_result_becomes_a_placeholder_with_the_same_call_id() {
    let mut history = openai_history();

    trim_context(&mut history, HistoryShape::OpenAiChat, 200, &refs);

    assert_eq!(
        history[3],
        json!({"role": "tool", "tool_call_id": "call_b", "content": "[tool output trimmed; ref_id=Rk9s_b]"})
    );
}

#[test]
fn nothing_is_trimmed_within_the_budget() {
    let mut history = openai_history();
    let before = history.clone();

    let report = trim_context(&mut history, HistoryShape::OpenAiChat, 300, &refs);

    assert!(report.trimmed.is_empty());
    assert_eq!(history, before);
}

#[test]
fn anthropic_tool_results_are_trimmed_in_place_and_keep_is_error() {
    let mut history = vec![
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}},
            {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}}
        ]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true, "content": "x".repeat(800)},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": [
                {"type": "text", "text": "y".repeat(80)},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}
            ]}
        ]}),
    ];

    let report = trim_context(&mut history, HistoryShape::Anthropic, 100, &refs);

    assert_eq!(report.trimmed, ["toolu_1"]);
    assert_eq!(
        history[1]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true, "content": "[tool output trimmed; ref_id=Qm2xw_1]"})
    );
    assert_eq!(history[1]["content"][1]["content"][1]["type"], "image");
}

#[test]
fn trimming_twice_changes_nothing_more() {
    let mut history = openai_history();
    trim_context(&mut history, HistoryShape::OpenAiChat, 0, &refs);
    let once = history.clone();

    let report = trim_context(&mut history, HistoryShape::OpenAiChat, 0, &refs);

    assert!(report.trimmed.is_empty());
    assert_eq!(history, once);
}

#[test]
fn an_output_without_a_ref_becomes_a_placeholder_without_one() {
    let mut history = openai_history();

    trim_context(&mut history, HistoryShape::OpenAiChat, 200, &|_| None);

    assert_eq!(history[2]["content"], "[tool output trimmed]");
}

#[test]
fn openai_responses_outputs_are_trimmed_in_place_and_keep_their_call_id() {
    let mut history = vec![
        json!({"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{}"}),
        json!({"type": "function_call_output", "call_id": "call_1", "output": "r".repeat(800)}),
        json!({"type": "function_call", "call_id": "call_2", "name": "read", "arguments": "{}"}),
        json!({"type": "function_call_output", "call_id": "call_2", "output": [
            {"type": "input_text", "text": "s".repeat(80)},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBO"}
        ]}),
    ];

    let report = trim_context(&mut history, HistoryShape::OpenAiResponses, 100, &refs);

    assert_eq!(report.trimmed, ["call_1"]);
    assert_eq!((report.tokens_before, report.tokens_after), (220, 29));
    assert_eq!(
        history[1],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "[tool output trimmed; ref_id=Rk9s_1]"})
    );
    assert_eq!(history[3]["output"][1]["type"], "input_image");
}

fn gemini_history() -> Vec<Value> {
    vec![
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "read", "id": "fc_1", "args": {}}},
            {"functionCall": {"name": "grep", "args": {}}}
        ]}),
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "read", "id": "fc_1", "response": {"error": "e".repeat(400)}}},
            {"functionResponse": {"name": "grep", "response": {"output": "g".repeat(400)}}}
        ]}),
        json!({"role": "model", "parts": [{"functionCall": {"name": "read", "id": "fc_3", "args": {}}}]}),
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "read", "id": "fc_3", "response": {"output": "h".repeat(400)}}}
        ]}),
    ]
}

#[test]
fn gemini_function_responses_are_trimmed_in_place_and_keep_their_error_key() {
    let mut history = gemini_history();

    let report = trim_context(&mut history, HistoryShape::Gemini, 150, &refs);

    assert_eq!(report.trimmed, ["fc_1", "grep"]);
    assert_eq!((report.tokens_before, report.tokens_after), (300, 115));
    assert_eq!(
        history[1]["parts"][0],
        json!({"functionResponse": {"name": "read", "id": "fc_1", "response": {"error": "[tool output trimmed; ref_id=fc_1]"}}})
    );
    assert_eq!(history[3]["parts"][0]["functionResponse"]["response"]["output"], "h".repeat(400));
}

#[test]
fn a_gemini_response_without_an_id_gets_a_placeholder_without_a_ref() {
    let mut history = gemini_history();

    trim_context(&mut history, HistoryShape::Gemini, 150, &refs);

    assert_eq!(
        history[1]["parts"][1],
        json!({"functionResponse": {"name": "grep", "response": {"output": "[tool output trimmed]"}}})
    );
}

#[test]
fn a_gemini_response_without_output_or_error_is_trimmed_as_a_whole() {
    let mut history = vec![json!({"role": "user", "parts": [
        {"functionResponse": {"name": "stats", "id": "fc_9", "response": {"rows": "x".repeat(400)}}}
    ]})];

    let report = trim_context(&mut history, HistoryShape::Gemini, 10, &refs);

    assert_eq!(report.trimmed, ["fc_9"]);
    assert_eq!(
        history[0]["parts"][0]["functionResponse"]["response"],
        json!({"output": "[tool output trimmed; ref_id=fc_9]"})
    );
}

#[test]
fn the_results_every_provider_renders_are_trimmed_oldest_first() {
    let messages = [
        ToolMessage::success("call_old", "read", ToolResult::text("o".repeat(800))),
        ToolMessage::success("call_new", "read", ToolResult::text("n".repeat(80))),
    ];
    let trimmed: Vec<(String, Vec<String>)> = Provider::ALL
        .into_iter()
        .map(|provider| {
            let mut history = provider.render_tool_results(&messages);
            let report = trim_context(&mut history, HistoryShape::from(provider), 100, &refs);
            (provider.id().to_owned(), report.trimmed)
        })
        .collect();

    let expected: Vec<(String, Vec<String>)> = ["openai-chat", "openai-responses", "anthropic", "gemini"]
        .into_iter()
        .map(|id| (id.to_owned(), vec!["call_old".to_owned()]))
        .collect();
    assert_eq!(trimmed, expected);
}

#[test]
fn an_anthropic_plain_text_document_counts_as_text_and_is_trimmed() {
    let message = ToolMessage::success(
        "toolu_1",
        "read",
        ToolResult::Parts(vec![tool_runtime::ContentPart::resource_text("file:///log.txt", None, "l".repeat(800))]),
    );
    let mut history = Provider::Anthropic.render_tool_results(&[message]);

    let report = trim_context(&mut history, HistoryShape::Anthropic, 100, &refs);

    assert_eq!((report.trimmed, report.tokens_before), (vec!["toolu_1".to_owned()], 200));
    assert_eq!(history[0]["content"][0]["content"], json!("[tool output trimmed; ref_id=Qm2xw_1]"));
}

#[test]
fn a_trimmed_gemini_response_loses_its_inline_media_too() {
    let message = ToolMessage::success(
        "fc_1",
        "view",
        ToolResult::Parts(vec![
            tool_runtime::ContentPart::text("t".repeat(400)),
            tool_runtime::ContentPart::image("iVBORw0KGgo=", "image/png"),
        ]),
    );
    let mut history = Provider::Gemini.render_tool_results(&[message]);

    let report = trim_context(&mut history, HistoryShape::Gemini, 10, &refs);

    assert_eq!(report.trimmed, ["fc_1"]);
    assert_eq!(
        history[0]["parts"][0],
        json!({"functionResponse": {"name": "view", "id": "fc_1", "response": {"output": "[tool output trimmed; ref_id=fc_1]"}}})
    );
}
