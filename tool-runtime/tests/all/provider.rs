//! Provider shapes: parsing recorded responses, rendering results and tools, the Gemini schema
//! projection, and the errors for malformed bodies.

use serde_json::{Value, json};
use tool_runtime::provider::{GeminiParameters, Provider, ProviderError, Rendering, Strict, gemini_schema};
use tool_runtime::{ContentPart, ToolCall, ToolDefinition, ToolMessage, ToolResult};

const OPENAI_CHAT_SINGLE: &str = include_str!("../../../fixtures/provider-responses/openai-chat-single-1.json");
const OPENAI_CHAT_PARALLEL: &str = include_str!("../../../fixtures/provider-responses/openai-chat-parallel-1.json");
const OPENAI_RESPONSES_PARALLEL: &str =
    include_str!("../../../fixtures/provider-responses/openai-responses-parallel-1.json");
const ANTHROPIC_TOOL_USE: &str = include_str!("../../../fixtures/provider-responses/anthropic-tool-use-1.json");
const ANTHROPIC_PARALLEL: &str =
    include_str!("../../../fixtures/provider-responses/anthropic-tool-use-parallel-1.json");
const GEMINI_FUNCTION_CALL: &str = include_str!("../../../fixtures/provider-responses/gemini-function-call-1.json");
const GEMINI_PARALLEL: &str = include_str!("../../../fixtures/provider-responses/gemini-parallel-1.json");
const GEMINI_UNKNOWN_TOOL: &str = include_str!("../../../fixtures/provider-responses/gemini-unknown-tool-1.json");

fn body(text: &str) -> Value {
    serde_json::from_str(text).expect("fixture is JSON")
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall::new(id, name, arguments)
}

fn success() -> ToolMessage {
    ToolMessage::success("call_1", "read", ToolResult::text("hello"))
}

fn error() -> ToolMessage {
    ToolMessage::error("call_2", "read", "file not found: a.txt")
}

fn parts() -> ToolMessage {
    ToolMessage::success(
        "call_3",
        "view_image",
        ToolResult::Parts(vec![
            ContentPart::text("a.png, 1x1"),
            ContentPart::Image { data: "iVBORw0KGgo=".to_owned(), media_type: "image/png".to_owned(), detail: None },
        ]),
    )
}

fn read_definition() -> ToolDefinition {
    ToolDefinition {
        name: "read".to_owned(),
        description: "Read a file.".to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "The path."}},
            "required": ["path"],
            "additionalProperties": false,
        }),
        set: Some("fs".to_owned()),
        tags: Vec::new(),
        strict: None,
        output_schema: None,
        callers: tool_runtime::Callers::Direct,
    }
}

fn no_argument_definition() -> ToolDefinition {
    ToolDefinition {
        name: "done".to_owned(),
        description: "Finish.".to_owned(),
        input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        set: None,
        tags: Vec::new(),
        strict: None,
        output_schema: None,
        callers: tool_runtime::Callers::Direct,
    }
}

fn parse_error(provider: Provider, response: Value) -> String {
    provider.parse_tool_calls(&response).expect_err("the body is malformed").to_string()
}

// ---------------------------------------------------------------------------------------------
// Ids, Display, FromStr

#[test]
fn ids_are_the_documented_strings() {
    let ids: Vec<&str> = Provider::ALL.iter().map(|p| p.id()).collect();
    assert_eq!(ids, ["openai-chat", "openai-responses", "anthropic", "gemini"]);
}

#[test]
fn display_writes_the_id_and_from_str_reads_it_back() {
    for provider in Provider::ALL {
        assert_eq!(provider.to_string(), provider.id());
        assert_eq!(provider.id().parse::<Provider>(), Ok(provider));
    }
}

#[test]
fn from_str_of_an_unknown_id_lists_the_accepted_ids() {
    let error = "openai".parse::<Provider>().unwrap_err();
    assert_eq!(error, ProviderError::UnknownProvider { name: "openai".to_owned() });
    assert_eq!(
        error.to_string(),
        "unknown provider `openai`; expected one of `openai-chat`, `openai-responses`, `anthropic`, `gemini`"
    );
}

// ---------------------------------------------------------------------------------------------
// Detection

#[test]
fn detect_reads_a_choices_array_as_openai_chat() {
    assert_eq!(Provider::detect(&json!({"choices": []})), Some(Provider::OpenAiChat));
}

#[test]
fn detect_reads_object_response_or_an_output_array_as_openai_responses() {
    assert_eq!(Provider::detect(&json!({"object": "response"})), Some(Provider::OpenAiResponses));
    assert_eq!(Provider::detect(&json!({"output": []})), Some(Provider::OpenAiResponses));
}

#[test]
fn detect_reads_a_message_with_a_content_array_as_anthropic() {
    assert_eq!(Provider::detect(&json!({"type": "message", "content": []})), Some(Provider::Anthropic));
    assert_eq!(Provider::detect(&json!({"type": "message", "content": "hi"})), None);
}

#[test]
fn detect_reads_a_candidates_array_as_gemini() {
    assert_eq!(Provider::detect(&json!({"candidates": []})), Some(Provider::Gemini));
}

#[test]
fn detect_gives_none_for_an_error_body() {
    let body = json!({"error": {"message": "Invalid API key", "type": "invalid_request_error"}});
    assert_eq!(Provider::detect(&body), None);
    assert_eq!(Provider::detect(&json!([1, 2])), None);
}

// ---------------------------------------------------------------------------------------------
// Parsing the recorded responses

#[test]
fn openai_chat_single_fixture_gives_its_call_with_the_arguments_unchanged() {
    let response = body(OPENAI_CHAT_SINGLE);
    assert_eq!(Provider::detect(&response), Some(Provider::OpenAiChat));
    assert_eq!(
        Provider::OpenAiChat.parse_tool_calls(&response).unwrap(),
        [call("call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", r#"{"country":"Crumpet"}"#)]
    );
}

#[test]
fn openai_chat_parallel_fixture_gives_both_calls_with_the_recorded_spacing() {
    let response = body(OPENAI_CHAT_PARALLEL);
    assert_eq!(Provider::detect(&response), Some(Provider::OpenAiChat));
    assert_eq!(
        Provider::OpenAiChat.parse_tool_calls(&response).unwrap(),
        [
            call("call_jYdIdRZHxZTn5bWCq5jlMrJi", "delete_file", r#"{"path": ".env"}"#),
            call("call_TmlTVWQbzrXCZ4jNsCVNbNqu", "create_file", r#"{"path": "test.txt"}"#),
        ]
    );
}

#[test]
fn openai_responses_fixture_gives_the_function_calls_by_call_id_and_skips_reasoning() {
    let response = body(OPENAI_RESPONSES_PARALLEL);
    assert_eq!(Provider::detect(&response), Some(Provider::OpenAiResponses));
    assert_eq!(
        Provider::OpenAiResponses.parse_tool_calls(&response).unwrap(),
        [
            call("call_WbWwKw4J6EXQ7Sn93fgmuZe3", "db_lookup", r#"{"key":"begin"}"#),
            call("call_et3hsNc1ipjCfuBylmAwqkEy", "db_lookup", r#"{"key":"value"}"#),
            call("call_J4rpPS0QEz4CIdsVGKEKG6k3", "db_lookup", r#"{"key":"the value 7"}"#),
            call("call_gd2cYY61KkICSgB6qNd7ZC66", "db_lookup", r#"{"key":"Begin with the value 7."}"#),
            call("call_nInKAmdZObYpqc3OR3WC61K3", "db_lookup", r#"{"key":"start2"}"#),
        ]
    );
}

#[test]
fn anthropic_fixture_gives_the_tool_use_block_with_its_input_as_compact_json() {
    let response = body(ANTHROPIC_TOOL_USE);
    assert_eq!(Provider::detect(&response), Some(Provider::Anthropic));
    assert_eq!(
        Provider::Anthropic.parse_tool_calls(&response).unwrap(),
        [call("toolu_01YC8RhZeDTZRbb8n1gUFTmb", "memory", r#"{"command":"view","path":"/memories"}"#)]
    );
}

#[test]
fn anthropic_parallel_fixture_gives_every_tool_use_block_in_order_and_skips_text() {
    let response = body(ANTHROPIC_PARALLEL);
    assert_eq!(Provider::detect(&response), Some(Provider::Anthropic));
    assert_eq!(
        Provider::Anthropic.parse_tool_calls(&response).unwrap(),
        [
            call("toolu_0167cfEnoQaPviGdVXA95zcu", "retrieve_entity_info", r#"{"name":"Alice"}"#),
            call("toolu_01EEe2V5HD1Ac4rKiUR4HD2T", "retrieve_entity_info", r#"{"name":"Bob"}"#),
            call("toolu_01XFyAjstT3966qvRynZyVPo", "retrieve_entity_info", r#"{"name":"Charlie"}"#),
            call("toolu_013mnQZbgtK2oe3Mo3XKJsx3", "retrieve_entity_info", r#"{"name":"Daisy"}"#),
        ]
    );
}

#[test]
fn gemini_fixture_without_response_id_gets_a_random_stem_and_the_call_index() {
    let response = body(GEMINI_FUNCTION_CALL);
    assert_eq!(Provider::detect(&response), Some(Provider::Gemini));
    let calls = Provider::Gemini.parse_tool_calls(&response).unwrap();
    assert_eq!(calls.len(), 1);
    let id = &calls[0].id;
    let stem = id.strip_prefix("gemini_").and_then(|rest| rest.strip_suffix("_0")).unwrap();
    assert_eq!(stem.len(), 22, "{id}");
    assert!(stem.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'), "{id}");
    assert_eq!(calls[0], call(id, "get_capital", r#"{"country":"France"}"#));
}

#[test]
fn gemini_calls_without_ids_in_two_turns_never_share_an_id() {
    let response = body(GEMINI_FUNCTION_CALL);
    let first = Provider::Gemini.parse_tool_calls(&response).unwrap();
    let second = Provider::Gemini.parse_tool_calls(&response).unwrap();
    assert_ne!(first[0].id, second[0].id);
}

#[test]
fn gemini_calls_of_one_response_without_an_id_share_a_stem_and_count_up() {
    let response = json!({"candidates": [{"content": {"parts": [
        {"functionCall": {"name": "read"}},
        {"functionCall": {"name": "read"}},
    ]}}]});
    let calls = Provider::Gemini.parse_tool_calls(&response).unwrap();
    let stem = calls[0].id.strip_suffix("_0").unwrap();
    assert_eq!(calls[1].id, format!("{stem}_1"));
}

#[test]
fn gemini_parallel_fixture_gets_ids_from_the_response_id_and_the_call_index() {
    let response = body(GEMINI_PARALLEL);
    assert_eq!(Provider::detect(&response), Some(Provider::Gemini));
    assert_eq!(
        Provider::Gemini.parse_tool_calls(&response).unwrap(),
        [
            call("gemini_wOd8abGuO5rgz7IP5tLEGA_0", "generate_topic", "{}"),
            call("gemini_wOd8abGuO5rgz7IP5tLEGA_1", "generate_topic", "{}"),
            call("gemini_wOd8abGuO5rgz7IP5tLEGA_2", "generate_topic", "{}"),
        ]
    );
}

#[test]
fn gemini_unknown_tool_fixture_gives_the_undeclared_call_as_recorded() {
    let response = body(GEMINI_UNKNOWN_TOOL);
    assert_eq!(Provider::detect(&response), Some(Provider::Gemini));
    assert_eq!(
        Provider::Gemini.parse_tool_calls(&response).unwrap(),
        [call("gemini_tOCTaZfIBovgz7IPp8f_mAo_0", "list_files", "{}")]
    );
}

// ---------------------------------------------------------------------------------------------
// Parsing rules beyond the recordings

#[test]
fn openai_chat_message_without_tool_calls_gives_no_calls() {
    let missing = json!({"choices": [{"message": {"role": "assistant", "content": "YES"}}]});
    let null = json!({"choices": [{"message": {"role": "assistant", "content": "YES", "tool_calls": null}}]});
    assert_eq!(Provider::OpenAiChat.parse_tool_calls(&missing).unwrap(), []);
    assert_eq!(Provider::OpenAiChat.parse_tool_calls(&null).unwrap(), []);
}

#[test]
fn openai_responses_output_without_function_calls_gives_no_calls() {
    let response = json!({"object": "response", "output": [{"type": "message", "content": []}]});
    assert_eq!(Provider::OpenAiResponses.parse_tool_calls(&response).unwrap(), []);
}

#[test]
fn anthropic_content_of_text_only_gives_no_calls() {
    let response = json!({"type": "message", "content": [{"type": "text", "text": "Paris."}]});
    assert_eq!(Provider::Anthropic.parse_tool_calls(&response).unwrap(), []);
}

#[test]
fn gemini_call_with_an_id_keeps_it() {
    let response = json!({
        "responseId": "r1",
        "candidates": [{"content": {"parts": [{"functionCall": {"id": "fc-7", "name": "read", "args": {"path": "a"}}}]}}],
    });
    assert_eq!(Provider::Gemini.parse_tool_calls(&response).unwrap(), [call("fc-7", "read", r#"{"path":"a"}"#)]);
}

#[test]
fn gemini_call_without_args_has_empty_object_arguments() {
    let response =
        json!({"responseId": "r1", "candidates": [{"content": {"parts": [{"functionCall": {"name": "done"}}]}}]});
    assert_eq!(Provider::Gemini.parse_tool_calls(&response).unwrap(), [call("gemini_r1_0", "done", "{}")]);
}

#[test]
fn gemini_generated_ids_count_function_calls_only() {
    let response = json!({"responseId": "r1", "candidates": [{"content": {"parts": [
        {"text": "Let me look."},
        {"functionCall": {"name": "read", "args": {}}},
        {"text": "And here."},
        {"functionCall": {"name": "read", "args": {}}},
    ]}}]});
    assert_eq!(
        Provider::Gemini.parse_tool_calls(&response).unwrap(),
        [call("gemini_r1_0", "read", "{}"), call("gemini_r1_1", "read", "{}")]
    );
}

#[test]
fn gemini_candidate_without_content_gives_no_calls() {
    let response = json!({"candidates": [{"finishReason": "SAFETY", "index": 0}]});
    assert_eq!(Provider::Gemini.parse_tool_calls(&response).unwrap(), []);
}

// ---------------------------------------------------------------------------------------------
// Errors for malformed bodies

#[test]
fn openai_chat_arguments_that_are_not_a_string_name_their_path() {
    let mut response = body(OPENAI_CHAT_PARALLEL);
    response["choices"][0]["message"]["tool_calls"][1]["function"]["arguments"] = json!({"path": "test.txt"});
    let error = Provider::OpenAiChat.parse_tool_calls(&response).unwrap_err();
    assert_eq!(
        error,
        ProviderError::WrongType {
            path: "choices[0].message.tool_calls[1].function.arguments".to_owned(),
            expected: "a string",
        }
    );
    assert_eq!(error.to_string(), "`choices[0].message.tool_calls[1].function.arguments` is not a string");
}

#[test]
fn openai_chat_body_without_choices_is_missing_choices() {
    assert_eq!(parse_error(Provider::OpenAiChat, json!({"id": "chatcmpl-1"})), "`choices` is missing");
}

#[test]
fn openai_chat_empty_choices_is_missing_the_first_choice() {
    assert_eq!(parse_error(Provider::OpenAiChat, json!({"choices": []})), "`choices[0]` is missing");
}

#[test]
fn openai_chat_tool_calls_that_are_not_an_array_name_their_path() {
    let response = json!({"choices": [{"message": {"tool_calls": {"id": "call_1"}}}]});
    assert_eq!(parse_error(Provider::OpenAiChat, response), "`choices[0].message.tool_calls` is not an array");
}

#[test]
fn openai_chat_tool_call_of_another_type_is_unsupported() {
    let response =
        json!({"choices": [{"message": {"tool_calls": [{"id": "call_1", "type": "custom", "custom": {}}]}}]});
    let error = Provider::OpenAiChat.parse_tool_calls(&response).unwrap_err();
    assert_eq!(
        error,
        ProviderError::Unsupported {
            path: "choices[0].message.tool_calls[0].type".to_owned(),
            found: "\"custom\"".to_owned(),
            expected: "\"function\"",
        }
    );
    assert_eq!(error.to_string(), r#"`choices[0].message.tool_calls[0].type` is "custom"; expected "function""#);
}

#[test]
fn openai_responses_function_call_without_call_id_names_its_path() {
    let mut response = body(OPENAI_RESPONSES_PARALLEL);
    response["output"][1].as_object_mut().unwrap().remove("call_id");
    let error = Provider::OpenAiResponses.parse_tool_calls(&response).unwrap_err();
    assert_eq!(error, ProviderError::Missing { path: "output[1].call_id".to_owned() });
    assert_eq!(error.to_string(), "`output[1].call_id` is missing");
}

#[test]
fn openai_responses_output_that_is_not_an_array_names_it() {
    assert_eq!(parse_error(Provider::OpenAiResponses, json!({"output": null})), "`output` is not an array");
}

#[test]
fn anthropic_input_that_is_not_an_object_names_its_path() {
    let mut response = body(ANTHROPIC_TOOL_USE);
    response["content"][1]["input"] = json!(r#"{"command":"view"}"#);
    assert_eq!(parse_error(Provider::Anthropic, response), "`content[1].input` is not an object");
}

#[test]
fn anthropic_block_without_type_names_its_path() {
    let response = json!({"type": "message", "content": [{"text": "hi"}]});
    assert_eq!(parse_error(Provider::Anthropic, response), "`content[0].type` is missing");
}

#[test]
fn gemini_function_call_without_name_names_its_path() {
    let mut response = body(GEMINI_PARALLEL);
    response["candidates"][0]["content"]["parts"][2]["functionCall"].as_object_mut().unwrap().remove("name");
    assert_eq!(
        parse_error(Provider::Gemini, response),
        "`candidates[0].content.parts[2].functionCall.name` is missing"
    );
}

#[test]
fn gemini_args_that_are_not_an_object_name_their_path() {
    let mut response = body(GEMINI_FUNCTION_CALL);
    response["candidates"][0]["content"]["parts"][0]["functionCall"]["args"] = json!("France");
    assert_eq!(
        parse_error(Provider::Gemini, response),
        "`candidates[0].content.parts[0].functionCall.args` is not an object"
    );
}

#[test]
fn gemini_body_without_candidates_is_missing_candidates() {
    let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}});
    assert_eq!(parse_error(Provider::Gemini, blocked), "`candidates` is missing");
}

// ---------------------------------------------------------------------------------------------
// Rendering results: OpenAI Chat

#[test]
fn openai_chat_renders_a_success_as_a_tool_message() {
    assert_eq!(
        Provider::OpenAiChat.render_tool_results(&[success()]),
        [json!({"role": "tool", "tool_call_id": "call_1", "content": "hello"})]
    );
}

#[test]
fn openai_chat_renders_an_error_as_its_text() {
    assert_eq!(
        Provider::OpenAiChat.render_tool_results(&[error()]),
        [json!({"role": "tool", "tool_call_id": "call_2", "content": "file not found: a.txt"})]
    );
}

#[test]
fn openai_chat_renders_parts_as_text_parts_with_images_as_their_projection() {
    assert_eq!(
        Provider::OpenAiChat.render_tool_results(&[parts()]),
        [json!({
            "role": "tool",
            "tool_call_id": "call_3",
            "content": [{"type": "text", "text": "a.png, 1x1"}, {"type": "text", "text": "[image]"}],
        })]
    );
}

#[test]
fn openai_chat_renders_one_message_per_result_in_order() {
    let rendered = Provider::OpenAiChat.render_tool_results(&[success(), error()]);
    let ids: Vec<&Value> = rendered.iter().map(|m| &m["tool_call_id"]).collect();
    assert_eq!(ids, ["call_1", "call_2"]);
}

// ---------------------------------------------------------------------------------------------
// Rendering results: OpenAI Responses

#[test]
fn openai_responses_renders_a_success_as_a_function_call_output() {
    assert_eq!(
        Provider::OpenAiResponses.render_tool_results(&[success()]),
        [json!({"type": "function_call_output", "call_id": "call_1", "output": "hello"})]
    );
}

#[test]
fn openai_responses_renders_an_error_as_its_text() {
    assert_eq!(
        Provider::OpenAiResponses.render_tool_results(&[error()]),
        [json!({"type": "function_call_output", "call_id": "call_2", "output": "file not found: a.txt"})]
    );
}

#[test]
fn openai_responses_renders_parts_as_input_text_and_input_image_data_urls() {
    assert_eq!(
        Provider::OpenAiResponses.render_tool_results(&[parts()]),
        [json!({
            "type": "function_call_output",
            "call_id": "call_3",
            "output": [
                {"type": "input_text", "text": "a.png, 1x1"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ],
        })]
    );
}

// ---------------------------------------------------------------------------------------------
// Rendering results: Anthropic

#[test]
fn anthropic_renders_a_success_as_a_tool_result_without_is_error() {
    assert_eq!(
        Provider::Anthropic.render_tool_results(&[success()]),
        [json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "hello"}]})]
    );
}

#[test]
fn anthropic_renders_an_error_with_is_error_true() {
    assert_eq!(
        Provider::Anthropic.render_tool_results(&[error()]),
        [json!({"role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": "call_2",
            "content": "file not found: a.txt",
            "is_error": true,
        }]})]
    );
}

#[test]
fn anthropic_renders_parts_as_text_and_base64_image_blocks() {
    assert_eq!(
        Provider::Anthropic.render_tool_results(&[parts()]),
        [json!({"role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": "call_3",
            "content": [
                {"type": "text", "text": "a.png, 1x1"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            ],
        }]})]
    );
}

#[test]
fn anthropic_renders_all_results_in_one_user_message() {
    assert_eq!(
        Provider::Anthropic.render_tool_results(&[success(), error()]),
        [json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "hello"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": "file not found: a.txt", "is_error": true},
        ]})]
    );
}

#[test]
fn anthropic_renders_no_results_as_no_message() {
    assert_eq!(Provider::Anthropic.render_tool_results(&[]), Vec::<Value>::new());
}

// ---------------------------------------------------------------------------------------------
// Rendering results: Gemini

#[test]
fn gemini_renders_a_success_as_a_function_response_output() {
    assert_eq!(
        Provider::Gemini.render_tool_results(&[success()]),
        [json!({"role": "user", "parts": [
            {"functionResponse": {"name": "read", "id": "call_1", "response": {"output": "hello"}}},
        ]})]
    );
}

#[test]
fn gemini_renders_an_error_as_a_function_response_error() {
    assert_eq!(
        Provider::Gemini.render_tool_results(&[error()]),
        [json!({"role": "user", "parts": [
            {"functionResponse": {"name": "read", "id": "call_2", "response": {"error": "file not found: a.txt"}}},
        ]})]
    );
}

#[test]
fn gemini_renders_parts_as_their_text_projection_with_images_inline() {
    assert_eq!(
        Provider::Gemini.render_tool_results(&[parts()]),
        [json!({"role": "user", "parts": [
            {"functionResponse": {
                "name": "view_image",
                "id": "call_3",
                "response": {"output": "a.png, 1x1\n[image]"},
                "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}],
            }},
        ]})]
    );
}

#[test]
fn gemini_leaves_out_the_ids_it_generated() {
    let calls = Provider::Gemini.parse_tool_calls(&body(GEMINI_PARALLEL)).unwrap();
    let messages: Vec<ToolMessage> =
        calls.iter().take(2).map(|c| ToolMessage::success(&c.id, &c.name, ToolResult::text("cats"))).collect();
    assert_eq!(
        Provider::Gemini.render_tool_results(&messages),
        [json!({"role": "user", "parts": [
            {"functionResponse": {"name": "generate_topic", "response": {"output": "cats"}}},
            {"functionResponse": {"name": "generate_topic", "response": {"output": "cats"}}},
        ]})]
    );
}

#[test]
fn gemini_renders_no_results_as_no_content() {
    assert_eq!(Provider::Gemini.render_tool_results(&[]), Vec::<Value>::new());
}

// ---------------------------------------------------------------------------------------------
// Rendering tools

#[test]
fn openai_chat_renders_a_function_tool_with_the_canonical_schema_non_strict() {
    assert_eq!(
        Provider::OpenAiChat.render_tools(&[read_definition()]).unwrap(),
        [json!({
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": read_definition().input_schema,
                "strict": false,
            },
        })]
    );
}

#[test]
fn openai_responses_renders_a_flat_function_tool_non_strict() {
    assert_eq!(
        Provider::OpenAiResponses.render_tools(&[read_definition()]).unwrap(),
        [json!({
            "type": "function",
            "name": "read",
            "description": "Read a file.",
            "parameters": read_definition().input_schema,
            "strict": false,
        })]
    );
}

#[test]
fn anthropic_renders_name_description_and_input_schema() {
    assert_eq!(
        Provider::Anthropic.render_tools(&[read_definition()]).unwrap(),
        [json!({"name": "read", "description": "Read a file.", "input_schema": read_definition().input_schema})]
    );
}

#[test]
fn gemini_renders_one_entry_of_function_declarations_with_projected_parameters() {
    assert_eq!(
        Provider::Gemini.render_tools(&[read_definition(), no_argument_definition()]).unwrap(),
        [json!({"functionDeclarations": [
            {
                "name": "read",
                "description": "Read a file.",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string", "description": "The path."}},
                    "required": ["path"],
                },
            },
            {"name": "done", "description": "Finish."},
        ]})]
    );
}

#[test]
fn gemini_renders_no_definitions_as_no_entry() {
    assert_eq!(Provider::Gemini.render_tools(&[]).unwrap(), Vec::<Value>::new());
}

/// `read_definition` with `#[tool(strict)]`'s wish, or none.
fn strict_read(strict: Option<bool>) -> ToolDefinition {
    ToolDefinition { strict, ..read_definition() }
}

/// `read_definition`'s schema in OpenAI strict form (every property required already).
fn strict_read_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"path": {"type": "string", "description": "The path."}},
        "required": ["path"],
        "additionalProperties": false,
    })
}

#[test]
fn render_tools_sends_a_tool_that_asks_for_strict_mode_strict_for_both_openai_apis() {
    let chat = Provider::OpenAiChat.render_tools(&[strict_read(Some(true))]).unwrap();
    let responses = Provider::OpenAiResponses.render_tools(&[strict_read(Some(true))]).unwrap();
    assert_eq!(
        (chat[0]["function"]["strict"].clone(), chat[0]["function"]["parameters"].clone()),
        (json!(true), strict_read_schema())
    );
    assert_eq!(
        (responses[0]["strict"].clone(), responses[0]["parameters"].clone()),
        (json!(true), strict_read_schema())
    );
}

#[test]
fn render_tools_fails_for_a_tool_that_asks_for_strict_mode_its_schema_cannot_take() {
    let definition = ToolDefinition {
        input_schema: json!({"type": "object", "properties": {"meta": {"type": "object", "additionalProperties": {"type": "string"}}}}),
        ..strict_read(Some(true))
    };
    let error = Provider::OpenAiChat.render_tools(&[definition]).unwrap_err();
    assert_eq!(
        (error.tool.as_str(), error.target, error.error.path.as_str()),
        ("read", "openai-chat", "/properties/meta/additionalProperties")
    );
}

#[test]
fn strict_where_possible_sends_a_complying_tool_strict_unless_it_refuses() {
    let rendering = Rendering::DEFAULT.strict(Strict::WherePossible);
    let entries =
        Provider::OpenAiChat.render_tools_with(&[strict_read(None), strict_read(Some(false))], rendering).unwrap();
    let strict: Vec<&Value> = entries.iter().map(|e| &e["function"]["strict"]).collect();
    assert_eq!(strict, [&json!(true), &json!(false)]);
}

#[test]
fn render_tool_is_one_entry_of_render_tools_for_every_provider() {
    let definition = strict_read(Some(true));
    for provider in Provider::ALL {
        let tools = provider.render_tools(std::slice::from_ref(&definition)).unwrap();
        let one = provider.render_tool(&definition).unwrap();
        let listed = if provider == Provider::Gemini { &tools[0]["functionDeclarations"][0] } else { &tools[0] };
        assert_eq!(listed, &one, "{provider}");
    }
}

#[test]
fn gemini_json_schema_sends_the_canonical_schema_as_parameters_json_schema() {
    let rendering = Rendering::DEFAULT.gemini(GeminiParameters::JsonSchema);
    assert_eq!(
        Provider::Gemini.render_tool_with(&read_definition(), rendering).unwrap(),
        json!({"name": "read", "description": "Read a file.", "parametersJsonSchema": read_definition().input_schema})
    );
}

// ---------------------------------------------------------------------------------------------
// The Gemini schema projection

#[test]
fn gemini_schema_inlines_a_ref_and_keeps_the_use_site_description() {
    let schema = json!({
        "type": "object",
        "properties": {"origin": {"$ref": "#/$defs/Point", "description": "Where to start."}},
        "$defs": {"Point": {
            "type": "object",
            "description": "A point.",
            "properties": {"x": {"type": "integer"}},
            "required": ["x"],
        }},
    });
    assert_eq!(
        gemini_schema(&schema),
        json!({
            "type": "object",
            "properties": {"origin": {
                "type": "object",
                "description": "Where to start.",
                "properties": {"x": {"type": "integer"}},
                "required": ["x"],
            }},
        })
    );
}

#[test]
fn gemini_schema_stops_a_recursive_ref_at_the_cycle_with_a_string_of_json() {
    let schema = json!({
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            },
        }},
    });
    assert_eq!(
        gemini_schema(&schema),
        json!({
            "type": "object",
            "properties": {"tree": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {
                        "type": "string",
                        "description": "(a JSON object, written as a string)",
                    }},
                },
            }},
        })
    );
}

#[test]
fn gemini_schema_turns_const_into_a_one_value_enum() {
    assert_eq!(gemini_schema(&json!({"const": "view"})), json!({"type": "string", "enum": ["view"]}));
}

#[test]
fn gemini_schema_turns_a_type_array_with_null_into_nullable() {
    assert_eq!(gemini_schema(&json!({"type": ["string", "null"]})), json!({"type": "string", "nullable": true}));
}

#[test]
fn gemini_schema_turns_an_integer_enum_into_bounds_with_the_values_described() {
    assert_eq!(
        gemini_schema(&json!({"type": "integer", "enum": [4, 1, 2], "description": "Indent width."})),
        json!({"type": "integer", "minimum": 1, "maximum": 4, "description": "Indent width.\nAllowed values: 4, 1, 2"})
    );
}

#[test]
fn gemini_schema_drops_additional_properties_and_other_unknown_keys() {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"tags": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}},
        "additionalProperties": false,
        "patternProperties": {"^x-": {}},
    });
    assert_eq!(
        gemini_schema(&schema),
        json!({"type": "object", "properties": {"tags": {"type": "object", "properties": {"a": {"type": "string"}}}}})
    );
}

#[test]
fn gemini_schema_turns_a_null_any_of_branch_into_nullable() {
    assert_eq!(
        gemini_schema(
            &json!({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "description": "Limit."})
        ),
        json!({"type": "integer", "minimum": 0, "nullable": true, "description": "Limit."})
    );
}

#[test]
fn gemini_schema_keeps_only_required_names_that_are_properties() {
    assert_eq!(
        gemini_schema(&json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]})),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    );
}

#[test]
fn gemini_schema_notes_an_unsupported_string_format_in_the_description() {
    assert_eq!(
        gemini_schema(&json!({"type": "string", "format": "email", "description": "Who."})),
        json!({"type": "string", "description": "Who.\n(format: email)"})
    );
    assert_eq!(
        gemini_schema(&json!({"type": "string", "format": "date-time"})),
        json!({"type": "string", "format": "date-time"})
    );
}

#[test]
fn gemini_schema_gives_an_unconstrained_property_a_type_the_api_accepts() {
    let text = json!({"type": "string", "description": "(a JSON object, written as a string)"});
    assert_eq!(
        gemini_schema(&json!({"type": "object", "properties": {"value": true, "list": {"items": {}}}})),
        json!({"type": "object", "properties": {
            "value": text,
            "list": {"type": "array", "items": text},
        }})
    );
}

#[test]
fn gemini_schema_gives_an_open_map_a_string_of_json() {
    assert_eq!(
        gemini_schema(&json!({"type": "object", "properties": {"counts": {
            "type": "object",
            "description": "Counts by name.",
            "additionalProperties": {"type": "integer"},
        }}})),
        json!({"type": "object", "properties": {"counts": {
            "type": "string",
            "description": "Counts by name. (a JSON object, written as a string)",
        }}})
    );
}

#[test]
fn gemini_schema_says_an_exclusive_bound_in_the_description_and_keeps_the_others() {
    assert_eq!(
        gemini_schema(&json!({"type": "object", "properties": {"x": {
            "type": "number",
            "description": "A ratio.",
            "exclusiveMinimum": 0,
            "maximum": 1,
        }, "s": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^a"}}})),
        json!({"type": "object", "properties": {
            "x": {"type": "number", "description": "A ratio. (greater than 0)", "maximum": 1},
            "s": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^a"},
        }})
    );
}

#[test]
fn gemini_schema_reads_one_of_as_any_of() {
    assert_eq!(
        gemini_schema(&json!({"oneOf": [{"type": "string"}, {"type": "integer", "format": "int64"}]})),
        json!({"anyOf": [{"type": "string"}, {"type": "integer", "format": "int64"}]})
    );
}

#[test]
fn gemini_schema_merges_all_of_branches_into_the_node() {
    let schema = json!({
        "description": "A range.",
        "allOf": [
            {"type": "object", "properties": {"start": {"type": "integer"}}, "required": ["start"]},
            {"properties": {"end": {"type": "integer"}}, "required": ["end"]},
        ],
    });
    assert_eq!(
        gemini_schema(&schema),
        json!({
            "type": "object",
            "description": "A range.",
            "properties": {"start": {"type": "integer"}, "end": {"type": "integer"}},
            "required": ["start", "end"],
        })
    );
}

#[test]
fn openai_responses_sends_the_image_detail_when_the_tool_set_one() {
    let message = ToolMessage::success(
        "call_1",
        "view_image",
        ToolResult::Parts(vec![ContentPart::Image {
            data: "iVBORw0KGgo=".to_owned(),
            media_type: "image/png".to_owned(),
            detail: Some(tool_runtime::ImageDetail::Low),
        }]),
    );
    assert_eq!(
        Provider::OpenAiResponses.render_tool_results(&[message]),
        [json!({
            "type": "function_call_output",
            "call_id": "call_1",
            "output": [{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}]
        })]
    );
}
