//! An agent loop on async-openai's own client against a scripted Chat Completions server on
//! 127.0.0.1, answering in the recorded wire format of `openai-chat-parallel-1.json`: three model
//! turns (four parallel calls with a tool error, an unknown tool and a key sent twice; an image
//! result; the final answer), then the exact requests the client sent.

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionRequestMessage, ChatCompletionRequestUserMessage, CreateChatCompletionRequestArgs,
};
use provider_mock::{MockProvider, sample};
use serde_json::{Value, json};
use tool_runtime::{MessageContent, ToolContext};

fn client(server: &MockProvider) -> Client<OpenAIConfig> {
    Client::with_config(OpenAIConfig::new().with_api_base(format!("{}/v1", server.url())).with_api_key("sk-test"))
}

/// Runs the loop to its end (at most 5 requests) and returns the final text and every turn's
/// tool results' texts.
async fn run_loop(server: &MockProvider) -> (String, Vec<Vec<sample::Outcome>>) {
    let registry = sample::registry();
    let client = client(server);
    let tools = tool_openai::chat::tools(registry.definitions()).unwrap();
    let mut messages: Vec<ChatCompletionRequestMessage> =
        vec![ChatCompletionRequestUserMessage::from(sample::QUESTION).into()];
    let mut results = Vec::new();
    for _ in 0..5 {
        let request = CreateChatCompletionRequestArgs::default()
            .model("gpt-4o")
            .messages(messages.clone())
            .tools(tools.clone())
            .build()
            .unwrap();
        let response = client.chat().create(request).await.unwrap();
        let message = &response.choices[0].message;
        let turn = tool_openai::chat::answer(&registry, message, &ToolContext::new()).await.unwrap();
        if turn.results.is_empty() {
            return (message.content.clone().unwrap_or_default(), results);
        }
        results.push(turn.results.iter().map(sample::outcome).collect());
        messages.extend(turn.messages);
    }
    panic!("the loop did not end within 5 requests");
}

async fn three_turns() -> (MockProvider, String, Vec<Vec<sample::Outcome>>) {
    let server = MockProvider::start(sample::script(sample::openai_chat)).await.unwrap();
    let (answer, results) = run_loop(&server).await;
    (server, answer, results)
}

#[tokio::test]
async fn the_loop_runs_parallel_calls_an_error_an_unknown_tool_and_an_image_to_the_final_answer() {
    let (server, answer, results) = three_turns().await;
    assert_eq!(answer, sample::ANSWER);
    assert_eq!(results, sample::expected_outcomes());
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn the_first_request_sends_the_tools_strict_where_the_schema_allows() {
    let (server, _, _) = three_turns().await;
    let first = &server.requests()[0];
    assert_eq!((first.method.as_str(), first.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(first.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        first.body["tools"],
        json!([
            {"type": "function", "function": {
                "name": "get_weather", "description": "Get the current weather of a city.",
                "parameters": sample::city_schema("The city's name, e.g. `Paris`."), "strict": true}},
            {"type": "function", "function": {
                "name": "snapshot", "description": "Take a snapshot of a city's webcam.",
                "parameters": sample::city_schema("The city's name."), "strict": true}},
        ])
    );
    assert_eq!(first.body["messages"], json!([{"role": "user", "content": sample::QUESTION}]));
}

#[tokio::test]
async fn the_second_request_carries_the_assistant_calls_unchanged_and_one_tool_message_per_call() {
    let (server, _, _) = three_turns().await;
    let messages = server.requests()[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 6, "{messages:#?}");
    let calls: Vec<Value> = sample::FIRST_TURN.iter().map(|call| sample::openai_chat_call(*call)).collect();
    assert_eq!(messages[1], json!({"role": "assistant", "tool_calls": calls}));
    assert_eq!(
        messages[2..],
        [
            json!({"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 °C"}),
            json!({"role": "tool", "tool_call_id": "call_2", "content": "no weather station in Atlantis"}),
            json!({"role": "tool", "tool_call_id": "call_3", "content": "unknown tool `get_tides`; available tools: get_weather, snapshot"}),
            json!({"role": "tool", "tool_call_id": "call_4", "content": "invalid arguments for `get_weather`: `city`: the field is sent twice; send each field once"}),
        ]
    );
}

#[tokio::test]
async fn an_image_result_is_a_text_part_in_its_tool_message_and_an_image_in_a_user_message_after_it() {
    let (server, _, _) = three_turns().await;
    let messages = server.requests()[2].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 9, "{messages:#?}");
    assert_eq!(
        messages[6..],
        [
            json!({"role": "assistant", "tool_calls": [
                {"id": "call_5", "type": "function", "function": {"name": "snapshot", "arguments": "{\"city\":\"Oslo\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "call_5", "content": [
                {"type": "text", "text": "Webcam of Oslo"}, {"type": "text", "text": "[image]"}]}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "Images from tool call `call_5` (`snapshot`):"},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", sample::PIXEL_PNG)}}]}),
        ]
    );
}

#[test]
fn a_custom_tool_call_is_refused_with_its_path() {
    let message: async_openai::types::chat::ChatCompletionResponseMessage = serde_json::from_value(json!({
        "role": "assistant",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
            {"id": "call_2", "type": "custom", "custom_tool": {"name": "grammar", "input": "x"}}
        ]
    }))
    .unwrap();
    assert_eq!(
        tool_openai::chat::tool_calls(&message).unwrap_err().to_string(),
        "`tool_calls[1].type` is \"custom\"; expected \"function\""
    );
}

#[test]
fn a_plain_answer_has_no_tool_calls() {
    let message: async_openai::types::chat::ChatCompletionResponseMessage =
        serde_json::from_value(json!({"role": "assistant", "content": "Hello"})).unwrap();
    assert_eq!(tool_openai::chat::tool_calls(&message).unwrap(), []);
}

#[test]
fn a_tool_that_asks_for_strict_mode_with_a_non_strict_schema_is_refused_by_name() {
    let mut definition = sample::registry().definitions()[0].clone();
    definition.strict = Some(true);
    definition.input_schema = json!({"type": "object", "properties": {"x": {}}, "additionalProperties": true});
    let error = tool_openai::chat::tools(&[definition]).unwrap_err().to_string();
    assert!(error.contains("get_weather"), "{error}");
}

#[test]
fn a_text_result_is_a_tool_message_of_text_and_no_user_message() {
    let message = tool_runtime::ToolMessage::success("c1", "t", tool_runtime::ToolResult::Text("ok".into()));
    assert!(matches!(message.content, MessageContent::Text(_)));
    let rendered = serde_json::to_value(tool_openai::chat::tool_messages(&[message])).unwrap();
    assert_eq!(rendered, json!([{"role": "tool", "tool_call_id": "c1", "content": "ok"}]));
}
