//! The quickstart's replay of every recorded provider response, with the exact tool results.

#[allow(unreachable_pub)]
#[path = "../quickstart.rs"]
mod quickstart;

use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::provider::Provider;

struct Turn {
    replay: quickstart::Replay,
    _workspace: tempfile::TempDir,
    workspace_files: Vec<String>,
}

async fn replay(fixture: &str) -> Turn {
    let workspace = tempfile::tempdir().unwrap();
    quickstart::seed_workspace(workspace.path()).unwrap();
    let registry = quickstart::registry(workspace.path()).unwrap();
    let (name, body) = quickstart::FIXTURES.iter().find(|(name, _)| *name == fixture).unwrap();
    let replay = quickstart::replay(&registry, name, body).await.unwrap();
    let mut workspace_files: Vec<String> = std::fs::read_dir(workspace.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    workspace_files.sort();
    Turn { replay, _workspace: workspace, workspace_files }
}

fn ok(id: &str, name: &str, text: &str) -> ToolMessage {
    ToolMessage::success(id, name, ToolResult::text(text))
}

fn error(id: &str, name: &str, text: &str) -> ToolMessage {
    ToolMessage::error(id, name, text)
}

const AVAILABLE: &str = "can_have_dragons, create_file, db_lookup, delete_file, final_result, generate_topic, \
                         get_capital, get_file, lookup_population, memory, retrieve_entity_info";

#[tokio::test]
async fn openai_chat_single_call_looks_up_the_population() {
    let turn = replay("openai-chat-single-1.json").await;
    assert_eq!(turn.replay.provider, Provider::OpenAiChat);
    assert_eq!(
        turn.replay.calls,
        [ToolCall::new("call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", r#"{"country":"Crumpet"}"#)]
    );
    assert_eq!(turn.replay.messages, [ok("call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", "123124")]);
    assert_eq!(
        turn.replay.rendered,
        [json!({"role": "tool", "tool_call_id": "call_TTY8UFNo7rNCaOBUNtlRSvMG", "content": "123124"})]
    );
}

#[tokio::test]
async fn openai_chat_parallel_calls_delete_and_create_files_in_the_workspace() {
    let turn = replay("openai-chat-parallel-1.json").await;
    assert_eq!(
        turn.replay.messages,
        [
            ok("call_jYdIdRZHxZTn5bWCq5jlMrJi", "delete_file", "Deleted .env"),
            ok("call_TmlTVWQbzrXCZ4jNsCVNbNqu", "create_file", "Created test.txt"),
        ]
    );
    assert_eq!(turn.workspace_files, ["test.txt"]);
    assert_eq!(
        turn.replay.rendered,
        [
            json!({"role": "tool", "tool_call_id": "call_jYdIdRZHxZTn5bWCq5jlMrJi", "content": "Deleted .env"}),
            json!({"role": "tool", "tool_call_id": "call_TmlTVWQbzrXCZ4jNsCVNbNqu", "content": "Created test.txt"}),
        ]
    );
}

#[tokio::test]
async fn openai_responses_parallel_lookups_keep_their_order_and_report_unknown_keys() {
    let turn = replay("openai-responses-parallel-1.json").await;
    let unknown = |key: &str| format!("No entry for key `{key}`; known keys: begin, start, start2, value");
    assert_eq!(
        turn.replay.messages,
        [
            ok("call_WbWwKw4J6EXQ7Sn93fgmuZe3", "db_lookup", "Begin with the value 7."),
            ok("call_et3hsNc1ipjCfuBylmAwqkEy", "db_lookup", "7"),
            error("call_J4rpPS0QEz4CIdsVGKEKG6k3", "db_lookup", &unknown("the value 7")),
            error("call_gd2cYY61KkICSgB6qNd7ZC66", "db_lookup", &unknown("Begin with the value 7.")),
            ok("call_nInKAmdZObYpqc3OR3WC61K3", "db_lookup", "Multiply the value by 6."),
        ]
    );
    assert_eq!(
        turn.replay.rendered[2],
        json!({"type": "function_call_output", "call_id": "call_J4rpPS0QEz4CIdsVGKEKG6k3", "output": unknown("the value 7")})
    );
    assert_eq!(turn.replay.rendered.len(), 5);
}

#[tokio::test]
async fn anthropic_memory_view_of_an_empty_directory() {
    let turn = replay("anthropic-tool-use-1.json").await;
    assert_eq!(turn.replay.provider, Provider::Anthropic);
    assert_eq!(turn.replay.messages, [ok("toolu_01YC8RhZeDTZRbb8n1gUFTmb", "memory", "Directory: /memories\n(empty)")]);
    assert_eq!(
        turn.replay.rendered,
        [json!({
            "role": "user",
            "content": [{
                "type": "tool_result",
                "tool_use_id": "toolu_01YC8RhZeDTZRbb8n1gUFTmb",
                "content": "Directory: /memories\n(empty)"
            }]
        })]
    );
}

#[tokio::test]
async fn anthropic_four_parallel_calls_answer_in_one_user_message() {
    let turn = replay("anthropic-tool-use-parallel-1.json").await;
    assert_eq!(
        turn.replay.messages,
        [
            ok(
                "toolu_0167cfEnoQaPviGdVXA95zcu",
                "retrieve_entity_info",
                r#"{"name":"Alice","age":42,"role":"mother"}"#
            ),
            ok("toolu_01EEe2V5HD1Ac4rKiUR4HD2T", "retrieve_entity_info", r#"{"name":"Bob","age":44,"role":"father"}"#),
            ok("toolu_01XFyAjstT3966qvRynZyVPo", "retrieve_entity_info", r#"{"name":"Charlie","age":12,"role":"son"}"#),
            ok(
                "toolu_013mnQZbgtK2oe3Mo3XKJsx3",
                "retrieve_entity_info",
                r#"{"name":"Daisy","age":9,"role":"daughter"}"#
            ),
        ]
    );
    assert_eq!(turn.replay.rendered.len(), 1);
    let ids: Vec<&str> = turn.replay.rendered[0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "toolu_0167cfEnoQaPviGdVXA95zcu",
            "toolu_01EEe2V5HD1Ac4rKiUR4HD2T",
            "toolu_01XFyAjstT3966qvRynZyVPo",
            "toolu_013mnQZbgtK2oe3Mo3XKJsx3"
        ]
    );
}

#[tokio::test]
async fn gemini_call_without_an_id_gets_a_generated_one_that_is_not_sent_back() {
    let turn = replay("gemini-function-call-1.json").await;
    // The response carries no `responseId`: the stem is 22 random URL-safe characters, so that
    // ids never repeat across turns.
    let id = turn.replay.calls[0].id.clone();
    let stem = id.strip_prefix("gemini_").and_then(|rest| rest.strip_suffix("_0")).unwrap_or_default();
    assert_eq!(stem.len(), 22, "{id}");
    assert!(stem.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{id}");
    assert_eq!(turn.replay.calls, [ToolCall::new(id.clone(), "get_capital", r#"{"country":"France"}"#)]);
    assert_eq!(turn.replay.messages, [ok(&id, "get_capital", "Paris")]);
    assert_eq!(
        turn.replay.rendered,
        [json!({
            "role": "user",
            "parts": [{"functionResponse": {"name": "get_capital", "response": {"output": "Paris"}}}]
        })]
    );
}

#[tokio::test]
async fn gemini_parallel_calls_deal_topics_from_one_registry_scoped_deck() {
    let turn = replay("gemini-parallel-1.json").await;
    assert_eq!(
        turn.replay.messages,
        [
            ok("gemini_wOd8abGuO5rgz7IP5tLEGA_0", "generate_topic", "cats"),
            ok("gemini_wOd8abGuO5rgz7IP5tLEGA_1", "generate_topic", "coffee"),
            ok("gemini_wOd8abGuO5rgz7IP5tLEGA_2", "generate_topic", "computers"),
        ]
    );
}

#[tokio::test]
async fn gemini_call_of_an_undeclared_tool_is_an_unknown_tool_error_result() {
    let turn = replay("gemini-unknown-tool-1.json").await;
    let text = format!("unknown tool `list_files`; available tools: {AVAILABLE}");
    assert_eq!(turn.replay.messages, [error("gemini_tOCTaZfIBovgz7IPp8f_mAo_0", "list_files", &text)]);
    assert_eq!(
        turn.replay.rendered,
        [json!({
            "role": "user",
            "parts": [{"functionResponse": {"name": "list_files", "response": {"error": text}}}]
        })]
    );
}

#[test]
fn the_declared_tools_are_discovered_and_rendered_for_openai_and_anthropic() {
    let workspace = tempfile::tempdir().unwrap();
    let registry = quickstart::registry(workspace.path()).unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>().join(", "), AVAILABLE);
    let openai = Provider::OpenAiChat.render_tools(registry.definitions()).unwrap();
    let anthropic = Provider::Anthropic.render_tools(registry.definitions()).unwrap();
    assert_eq!(openai.len(), 11);
    assert_eq!(anthropic.len(), 11);
    let capital_schema = json!({
        "type": "object",
        "properties": {"country": {"description": "The country's name.", "type": "string"}},
        "required": ["country"],
        "additionalProperties": false
    });
    assert_eq!(
        openai[6],
        json!({
            "type": "function",
            "function": {
                "name": "get_capital",
                "description": "Get the capital city of a country.",
                "parameters": capital_schema,
                "strict": false
            }
        })
    );
    assert_eq!(
        anthropic[6],
        json!({"name": "get_capital", "description": "Get the capital city of a country.", "input_schema": capital_schema})
    );
}

#[test]
fn the_memory_command_is_a_string_enum_with_each_command_described() {
    let workspace = tempfile::tempdir().unwrap();
    let registry = quickstart::registry(workspace.path()).unwrap();
    let memory = registry.get("memory").unwrap().definition();
    assert_eq!(
        memory.input_schema["properties"]["command"],
        json!({
            "type": "string",
            "enum": ["view", "create", "str_replace", "delete"],
            "description": "The operation.\n- view: List a directory or show a file with line numbers.\n- create: Create or \
                            overwrite a file with `file_text`.\n- str_replace: Replace the unique `old_str` in a file \
                            with `new_str`.\n- delete: Delete a file."
        })
    );
}
