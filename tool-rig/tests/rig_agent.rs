//! A rig agent (rig-agent's own loop on rig-core's OpenAI Chat Completions client) with a
//! registry's tools, against a scripted server on 127.0.0.1 answering in the recorded wire format
//! of `openai-chat-parallel-1.json`: four model turns (three parallel calls with a tool error and
//! a key sent twice; an unknown tool; an image result; the final answer), then the exact requests
//! rig sent.
//!
//! The unknown tool has a turn of its own because rig runs none of a turn's calls when one of
//! them is invalid (`a_turn_with_an_unknown_tool_runs_none_of_its_calls`, rig's rule).

use std::sync::Arc;

use provider_mock::{MockProvider, sample};
use rig_agent::AgentBuilder;
use rig_core::providers::openai::OpenAIConfig;
use serde_json::{Value, json};
use tool_rig::RigTools;
use tool_runtime::{Registry, ToolCall, ToolContext, ToolErrorKind};

/// The scripted answers: the first turn's calls but the unknown tool, the unknown tool alone,
/// the image, the final answer.
fn script() -> Vec<Value> {
    let [paris, atlantis, unknown, twice] = sample::FIRST_TURN;
    vec![
        sample::openai_chat(&[paris, atlantis, twice], ""),
        sample::openai_chat(&[unknown], ""),
        sample::openai_chat(&[sample::SECOND_TURN], ""),
        sample::openai_chat(&[], sample::ANSWER),
    ]
}

/// Runs a rig agent with `tools` (and their hook when `hook`) on `script`; returns the server
/// and the agent's final answer.
async fn run_agent(tools: &RigTools, hook: bool, script: Vec<Value>) -> (MockProvider, String) {
    let server = MockProvider::start(script).await.unwrap();
    let model = OpenAIConfig::new("sk-test").with_base_url(format!("{}/v1", server.url())).client().chat("gpt-4o");
    let builder = AgentBuilder::new(model).tool_server_handle(tools.tool_server().unwrap().run());
    let agent = if hook { builder.add_hook(tools.hook()).build() } else { builder.build() };
    let answer = agent.prompt(sample::QUESTION).max_turns(6).await.unwrap();
    (server, answer.output())
}

fn tools() -> RigTools {
    RigTools::new(Arc::new(sample::registry()))
}

/// The `role: "tool"` messages of a request, as `(tool_call_id, text)`.
fn tool_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| (m["tool_call_id"].as_str().unwrap().to_owned(), text_of(&m["content"])))
        .collect()
}

/// A tool message's content as text: a string, or its text parts joined by newlines.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => {
            parts.iter().map(|p| p["text"].as_str().unwrap_or_default()).collect::<Vec<_>>().join("\n")
        }
        other => other.to_string(),
    }
}

fn owned(id: &str, text: &str) -> (String, String) {
    (id.to_owned(), text.to_owned())
}

#[tokio::test]
async fn a_rig_agent_runs_parallel_calls_an_error_an_unknown_tool_and_an_image_to_the_final_answer() {
    let (server, answer) = run_agent(&tools(), true, script()).await;
    assert_eq!(answer, sample::ANSWER);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!((requests[0].method.as_str(), requests[0].path.as_str()), ("POST", "/v1/chat/completions"));
    let names: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["get_weather", "snapshot"]);
    assert_eq!(
        tool_messages(&requests[3].body),
        [
            owned("call_1", "Sunny, 21 °C"),
            owned("call_2", "no weather station in Atlantis"),
            owned("call_4", "no weather station in Rome"),
            owned("call_3", "unknown tool `get_tides`; available tools: get_weather, snapshot"),
            owned("call_5", "Webcam of Oslo\n(see attached image)"),
        ]
    );
}

#[tokio::test]
async fn a_turn_with_an_unknown_tool_runs_none_of_its_calls() {
    let script = vec![sample::openai_chat(&sample::FIRST_TURN, ""), sample::openai_chat(&[], sample::ANSWER)];
    let (server, _) = run_agent(&tools(), true, script).await;
    let not_run = "Tool not executed because another tool call in the same assistant turn was invalid.";
    assert_eq!(
        tool_messages(&server.requests()[1].body),
        [
            owned("call_1", not_run),
            owned("call_2", not_run),
            owned("call_3", "unknown tool `get_tides`; available tools: get_weather, snapshot"),
            owned("call_4", not_run),
        ]
    );
}

#[tokio::test]
async fn an_image_result_reaches_the_model_as_rig_sends_images_of_tool_results() {
    let (server, _) = run_agent(&tools(), true, script()).await;
    let messages = server.requests()[3].body["messages"].as_array().unwrap().clone();
    assert_eq!(
        messages[messages.len() - 2..],
        [
            json!({"role": "tool", "tool_call_id": "call_5", "content": "Webcam of Oslo\n(see attached image)"}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "Attached image(s) from tool result:"},
                {"type": "image_url", "image_url": {
                    "url": format!("data:image/png;base64,{}", sample::PIXEL_PNG), "detail": "auto"}}]}),
        ]
    );
}

/// A registry with one tool that reports the call id it ran under.
mod echo {
    use tool_runtime::prelude::*;

    /// Report the call id this call runs under.
    #[tool]
    pub(crate) fn whoami(ctx: &ToolContext) -> String {
        ctx.call_id().unwrap_or("none").to_owned()
    }
}

/// What `whoami` saw as its call id when a rig agent called it as `call_9`, with or without the
/// hook.
async fn call_id_seen(hook: bool) -> String {
    let registry = Arc::new(Registry::builder().tool(echo::whoami::TOOL).build().unwrap());
    let script = vec![sample::openai_chat(&[("call_9", "whoami", "{}")], ""), sample::openai_chat(&[], "done")];
    let (server, _) = run_agent(&RigTools::new(registry), hook, script).await;
    tool_messages(&server.requests()[1].body).remove(0).1
}

#[tokio::test]
async fn with_the_hook_the_tool_runs_under_the_provider_call_id() {
    assert_eq!(call_id_seen(true).await, "call_9");
}

#[tokio::test]
async fn without_the_hook_the_tool_runs_under_the_rig_effect_id() {
    let seen = call_id_seen(false).await;
    assert!(seen.starts_with("rig-effect-") && seen.len() > "rig-effect-".len(), "{seen}");
}

#[tokio::test]
async fn errors_keep_their_kind() {
    let registry = sample::registry();
    let ctx = ToolContext::new();
    let cases = [
        (ToolCall::new("c1", "get_tides", "{}"), ToolErrorKind::UnknownTool, rig_core::tool::ToolErrorKind::NotFound),
        (
            ToolCall::new("c2", "get_weather", r#"{"town":"Paris"}"#),
            ToolErrorKind::InvalidArguments,
            rig_core::tool::ToolErrorKind::InvalidArgs,
        ),
        (
            ToolCall::new("c3", "get_weather", r#"{"city":"Atlantis"}"#),
            ToolErrorKind::Failed,
            rig_core::tool::ToolErrorKind::Other,
        ),
    ];
    for (call, kind, rig_kind) in cases {
        let message = registry.call(&call, &ctx).await;
        assert_eq!(message.error_kind, Some(kind), "{message:?}");
        let text = message.text().into_owned();
        let result = tool_rig::rig_result(message);
        let error = result.error().unwrap();
        assert_eq!((error.kind(), result.output().as_text()), (rig_kind, Some(text.as_str())));
    }
}

#[test]
fn only_keeps_the_tools_named_and_refuses_unknown_names() {
    let tools = tools().only(["snapshot", "snapshot"]).unwrap();
    let names: Vec<String> = tools.registered_tools().unwrap().iter().map(|t| t.name()).collect();
    assert_eq!(names, ["snapshot"]);
    let error = match RigTools::new(Arc::new(sample::registry())).only(["snapshot", "get_tides", "x"]) {
        Err(error) => error.to_string(),
        Ok(_) => panic!("unknown names were accepted"),
    };
    assert_eq!(error, "the registry has no tool `get_tides`, `x`; it has: `get_weather`, `snapshot`");
}

#[test]
fn a_success_keeps_its_text_and_parts() {
    let message = tool_runtime::ToolMessage::success("c", "t", tool_runtime::ToolResult::Text("ok".into()));
    assert_eq!(tool_rig::rig_result(message).output().as_text(), Some("ok"));
}

/// The notes `delete_note` deleted (each test deletes notes of its own).
static DELETED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Delete a note (an effect that needs the user's approval).
#[tool_runtime::tool(tags(confirm))]
async fn delete_note(
    /// The note's id.
    id: String,
) -> String {
    DELETED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(id.clone());
    format!("deleted {id}")
}

fn deleted(id: &str) -> usize {
    DELETED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().filter(|n| *n == id).count()
}

/// A registry of `delete_note` under approval tokens.
fn approving() -> Arc<Registry> {
    let store = tool_runtime::idempotency::MemoryIdempotencyStore::new();
    let tokens = tool_runtime::ApprovalTokens::new(store).server_key([3u8; 32]).unwrap();
    Arc::new(Registry::builder().tool(delete_note::TOOL).approval_tokens(tokens).build().unwrap())
}

#[tokio::test]
async fn the_host_gets_a_refused_calls_approval_and_runs_the_call_with_its_token_while_the_model_reads_none() {
    let registry = approving();
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let noted = asked.clone();
    let tools = RigTools::new(registry.clone()).on_approval(move |request| noted.lock().unwrap().push(request));
    let script = vec![
        sample::openai_chat(&[("call_9", "delete_note", r#"{"id":"n1"}"#)], ""),
        sample::openai_chat(&[], "Waiting for your approval."),
    ];
    let (server, answer) = run_agent(&tools, true, script).await;
    assert_eq!(answer, "Waiting for your approval.");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    let [asked] = &asked[..] else { unreachable!() };
    assert_eq!(asked.call, ToolCall::new("call_9", "delete_note", r#"{"id":"n1"}"#));
    assert_eq!(asked.request.tool, "delete_note");
    assert_eq!(asked.request.preview, "call `delete_note` with\n\"id\": \"n1\"");
    // The model read the refusal with the preview, never the token.
    let read = tool_messages(&server.requests()[1].body);
    assert_eq!(read.len(), 1);
    assert!(read[0].1.contains("it needs the user's approval"), "{read:?}");
    assert!(!read[0].1.contains(&asked.request.token), "{read:?}");
    assert_eq!(deleted("n1"), 0);
    // The person approves: the host runs that exact call with the token, once.
    let approved = registry.call(&asked.approved_call(), &ToolContext::new()).await;
    assert_eq!(approved.text(), "deleted n1");
    let again = registry.call(&asked.approved_call(), &ToolContext::new()).await;
    assert_eq!(again.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert_eq!(deleted("n1"), 1);
}

/// A call whose arguments rig finds malformed (not a JSON object) is answered by the hook, through
/// the registry, which decodes arguments before it asks for approval: the model reads the decoding
/// error, and the host is asked nothing (no approval is minted for a call that cannot run).
#[tokio::test]
async fn a_call_with_malformed_arguments_of_a_tool_needing_approval_gets_the_decoding_error_and_no_approval() {
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let noted = asked.clone();
    let tools = RigTools::new(approving()).on_approval(move |request| noted.lock().unwrap().push(request));
    let script = vec![
        sample::openai_chat(&[("call_7", "delete_note", r#"["n7"]"#)], ""),
        sample::openai_chat(&[], "The arguments were wrong."),
    ];
    let (server, _) = run_agent(&tools, true, script).await;
    assert!(asked.lock().unwrap().is_empty(), "no approval for the host");
    let read = tool_messages(&server.requests()[1].body);
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].1, "invalid arguments for `delete_note`: expected a JSON object of arguments, got an array");
    assert_eq!(deleted("n7"), 0);
}

#[test]
fn an_approval_asked_shows_no_token_in_its_debug_form() {
    let asked = tool_rig::ApprovalAsked {
        call: ToolCall::new("call_9", "delete_note", "{}"),
        request: tool_runtime::ApprovalRequest {
            tool: "delete_note".to_owned(),
            preview: "call `delete_note`".to_owned(),
            token: "ap1.9.ab.cd".to_owned(),
            expires_at: 9,
            servers: Vec::new(),
        },
    };
    let shown = format!("{:?}", asked.approved_call());
    assert!(!shown.contains("ap1.9.ab.cd") && shown.contains("[redacted]"), "{shown}");
    assert!(!format!("{asked:?}").contains("ap1.9.ab.cd"), "{asked:?}");
}
