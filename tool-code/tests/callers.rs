//! Who may call a tool (`#[tool(callers = ...)]`), as the provider projections show it, and the
//! provider loop of programmatic tool calling: calls that carry a `caller`, and their answers.

use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::provider::Provider;
use tool_runtime::{Callers, DynamicTool};

/// Read a note.
#[tool(callers = both)]
async fn note(
    /// The note's name.
    name: String,
) -> String {
    format!("the note {name}")
}

/// Sum numbers (programs only).
#[tool(callers = code)]
async fn sum(numbers: Vec<i64>) -> String {
    numbers.iter().sum::<i64>().to_string()
}

/// Say hello (direct calls only, the default).
#[tool]
async fn hello() -> String {
    "hello".to_owned()
}

fn registry() -> Registry {
    Registry::builder().tool(note::TOOL).tool(sum::TOOL).tool(hello::TOOL).build().unwrap()
}

#[test]
fn the_callers_option_sets_the_definitions_field_and_adds_no_tag() {
    let registry = registry();
    assert_eq!(registry.definition("note").unwrap().callers, Callers::Both);
    assert_eq!(registry.definition("sum").unwrap().callers, Callers::Code);
    assert_eq!(registry.definition("hello").unwrap().callers, Callers::Direct);
    for name in ["note", "sum", "hello"] {
        assert!(registry.definition(name).unwrap().tags.is_empty(), "{name}");
    }
}

#[test]
fn the_field_is_serialized_in_lower_case_and_left_out_when_direct() {
    let registry = registry();
    let note = serde_json::to_value(registry.definition("note").unwrap()).unwrap();
    assert_eq!(note["callers"], json!("both"));
    let hello = serde_json::to_value(registry.definition("hello").unwrap()).unwrap();
    assert_eq!(hello.get("callers"), None);
    let read: ToolDefinition = serde_json::from_value(note).unwrap();
    assert_eq!(read.callers, Callers::Both);
}

#[test]
fn an_unknown_callers_value_in_a_serialized_definition_is_an_error_naming_the_three() {
    let error = serde_json::from_value::<ToolDefinition>(json!({
        "name": "x", "description": "", "input_schema": {"type": "object"}, "callers": "everyone",
    }))
    .unwrap_err();
    assert_eq!(error.to_string(), "unknown variant `everyone`, expected one of `direct`, `code`, `both`");
}

/// A tool built at run time that declares who may call it.
fn dynamic(name: &str) -> DynamicTool {
    DynamicTool::new(name, "A tool built at run time.", json!({"type": "object"}), |_, _| async {
        Ok(ToolResult::Text("ok".to_owned()))
    })
    .unwrap()
}

#[test]
fn a_dynamic_tool_sets_the_field_with_with_callers() {
    let registry =
        Registry::builder().tool_dyn(std::sync::Arc::new(dynamic("late").with_callers(Callers::Code))).build().unwrap();
    assert_eq!(registry.definition("late").unwrap().callers, Callers::Code);
    let entry = Provider::OpenAiResponses.render_tool(&registry.definitions()[0]).unwrap();
    assert_eq!(entry["allowed_callers"], json!(["programmatic"]));
}

#[test]
#[allow(deprecated)]
fn the_deprecated_tag_form_still_declares_it_and_the_registry_shows_it_in_the_field() {
    let registry =
        Registry::builder().tool_dyn(std::sync::Arc::new(dynamic("old").with_tags(["callers:both"]))).build().unwrap();
    let definition = registry.definition("old").unwrap();
    assert_eq!(definition.callers, Callers::Both);
    assert_eq!(definition.callers(), Callers::Both);
    assert_eq!(Callers::Code.tag(), Some("callers:code"));
    let entry = Provider::Anthropic.render_tool(definition).unwrap();
    assert_eq!(entry["allowed_callers"], json!(["direct", "code_execution_20250825"]));
}

#[test]
fn anthropic_and_openai_responses_entries_carry_allowed_callers() {
    let registry = registry();
    let entry = |provider: Provider, name: &str| provider.render_tool(registry.definition(name).unwrap()).unwrap();
    assert_eq!(entry(Provider::Anthropic, "note")["allowed_callers"], json!(["direct", "code_execution_20250825"]));
    assert_eq!(entry(Provider::Anthropic, "sum")["allowed_callers"], json!(["code_execution_20250825"]));
    assert_eq!(entry(Provider::OpenAiResponses, "note")["allowed_callers"], json!(["direct", "programmatic"]));
    assert_eq!(entry(Provider::OpenAiResponses, "sum")["allowed_callers"], json!(["programmatic"]));
}

#[test]
fn a_direct_only_tool_and_the_providers_without_programmatic_calling_get_no_allowed_callers() {
    let registry = registry();
    let entry = |provider: Provider, name: &str| provider.render_tool(registry.definition(name).unwrap()).unwrap();
    for provider in [Provider::Anthropic, Provider::OpenAiResponses] {
        assert_eq!(entry(provider, "hello").get("allowed_callers"), None);
    }
    for provider in [Provider::OpenAiChat, Provider::Gemini] {
        let note = entry(provider, "note");
        assert_eq!(note.get("allowed_callers"), None);
        assert_eq!(note.pointer("/function/allowed_callers"), None);
    }
}

#[tokio::test]
async fn an_anthropic_call_from_code_execution_is_parsed_with_its_caller_run_and_answered_by_its_id() {
    let response = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use",
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution",
             "input": {"code": "print(sum(await note(name='a')))"}},
            {"type": "tool_use", "id": "toolu_1", "name": "note", "input": {"name": "a"},
             "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}},
            {"type": "tool_use", "id": "toolu_2", "name": "hello", "input": {}, "caller": {"type": "direct"}}
        ]
    });
    let calls = Provider::Anthropic.parse_tool_calls(&response).unwrap();
    assert_eq!(
        calls,
        [
            ToolCall::new("toolu_1", "note", r#"{"name":"a"}"#).with_caller("srvtoolu_1"),
            ToolCall::new("toolu_2", "hello", "{}"),
        ]
    );
    let batch = registry().call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(
        Provider::Anthropic.render_tool_results(&batch.messages),
        [json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "the note a"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "hello"}
        ]})]
    );
}

#[tokio::test]
async fn an_openai_responses_call_from_a_program_is_parsed_with_its_caller_and_the_program_item_skipped() {
    let response = json!({
        "id": "resp_1", "object": "response", "status": "completed",
        "output": [
            {"type": "program", "id": "prog_item_1", "call_id": "prog_1", "code": "await sum({numbers: [1, 2]})"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "sum",
             "arguments": "{\"numbers\":[1,2]}", "caller": {"type": "program", "caller_id": "prog_1"}}
        ]
    });
    let calls = Provider::OpenAiResponses.parse_tool_calls(&response).unwrap();
    assert_eq!(calls, [ToolCall::new("call_1", "sum", r#"{"numbers":[1,2]}"#).with_caller("prog_1")]);
    let batch = registry().call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(
        Provider::OpenAiResponses.render_tool_results(&batch.messages),
        [json!({"type": "function_call_output", "call_id": "call_1", "output": "3"})]
    );
}

#[test]
fn a_caller_without_its_id_is_an_error_naming_the_path() {
    let response = json!({"content": [{"type": "tool_use", "id": "toolu_1", "name": "note", "input": {},
                                       "caller": {"type": "code_execution_20250825"}}]});
    let error = Provider::Anthropic.parse_tool_calls(&response).unwrap_err();
    assert_eq!(error.to_string(), "`content[0].caller.tool_id` is missing");
}
