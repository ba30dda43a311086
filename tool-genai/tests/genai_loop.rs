//! An agent loop on genai's own client against scripted Anthropic Messages and Gemini
//! `generateContent` servers on 127.0.0.1, answering in the recorded wire formats of
//! `anthropic-tool-use-parallel-1.json` and `gemini-parallel-1.json`: three model turns (four
//! parallel calls with a tool error and an unknown tool; an image result; the final answer), then
//! the exact requests genai sent (Gemini's thought signature sent back with its call).
//!
//! Both wires carry a call's arguments as a JSON object, so the first turn's fourth call (the
//! key sent twice in [`sample::FIRST_TURN`]) is that object as JSON parses it: the last value.

use genai::chat::{ChatMessage, ChatRequest};
use genai::resolver::{AuthData, Endpoint};
use genai::{Client, ServiceTarget};
use provider_mock::{MockProvider, fixture, sample};
use serde_json::{Value, json};
use tool_runtime::ToolContext;

/// The arguments object of a scripted call (a key sent twice keeps its last value).
fn arguments(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// The recorded Anthropic message with its content replaced by `calls`' `tool_use` blocks, or by
/// one text block.
fn anthropic(calls: &[sample::Call<'_>], text: &str) -> Value {
    let mut body = fixture("anthropic-tool-use-parallel-1.json");
    body["content"] = if calls.is_empty() {
        body["stop_reason"] = json!("end_turn");
        json!([{"type": "text", "text": text}])
    } else {
        calls
            .iter()
            .map(|(id, name, args)| json!({"type": "tool_use", "id": id, "name": name, "input": arguments(args)}))
            .collect()
    };
    body
}

/// The recorded Gemini response with its parts replaced by `calls`' function calls (Gemini sends
/// no call ids; the first keeps the recorded thought signature), or by one text part.
fn gemini(calls: &[sample::Call<'_>], text: &str) -> Value {
    let mut body = fixture("gemini-parallel-1.json");
    body["candidates"][0]["content"]["parts"] =
        if calls.is_empty() { json!([{"text": text}]) } else { gemini_parts(calls) };
    body
}

/// `calls` as Gemini's function call parts, the first with the recorded thought signature.
fn gemini_parts(calls: &[sample::Call<'_>]) -> Value {
    let signature = &fixture("gemini-parallel-1.json")["candidates"][0]["content"]["parts"][0]["thoughtSignature"];
    let mut parts: Vec<Value> =
        calls.iter().map(|(_, name, args)| json!({"functionCall": {"name": name, "args": arguments(args)}})).collect();
    parts[0]["thoughtSignature"] = signature.clone();
    Value::Array(parts)
}

/// genai's client with every request sent to `server` under `/v1/`, with a test key.
fn client(server: &MockProvider) -> Client {
    let base = format!("{}/v1/", server.url());
    Client::builder()
        .with_service_target_resolver_fn(move |mut target: ServiceTarget| {
            target.endpoint = Endpoint::from_owned(base.clone());
            target.auth = AuthData::from_single("test-key");
            Ok(target)
        })
        .build()
        .unwrap()
}

/// Runs the loop on `model` to its end (at most 5 requests): the final text and each turn's
/// results.
async fn run_loop(server: &MockProvider, model: &str) -> (String, Vec<Vec<sample::Outcome>>) {
    let registry = sample::registry();
    let client = client(server);
    let mut request = ChatRequest::new(vec![ChatMessage::user(sample::QUESTION)])
        .with_tools(tool_genai::tools(registry.definitions()));
    let mut results = Vec::new();
    for _ in 0..5 {
        let response = client.exec_chat(model, request.clone(), None).await.unwrap();
        let turn = tool_genai::answer(&registry, &response, &ToolContext::new()).await;
        if turn.results.is_empty() {
            return (response.first_text().unwrap_or_default().to_owned(), results);
        }
        results.push(turn.results.iter().map(sample::outcome).collect());
        request = request.append_messages(turn.messages);
    }
    panic!("the loop did not end within 5 requests");
}

/// [`sample::expected_outcomes`] with the fourth call's key sent twice arriving as its last
/// value, and the call ids `ids` (Gemini's are genai's).
fn expected(ids: &[String]) -> Vec<Vec<sample::Outcome>> {
    let mut expected = sample::expected_outcomes();
    expected[0][3].1 = "no weather station in Rome".to_owned();
    for (outcome, id) in expected.iter_mut().flatten().zip(ids) {
        outcome.0.clone_from(id);
    }
    expected
}

#[tokio::test]
async fn an_anthropic_loop_runs_parallel_calls_an_error_an_unknown_tool_and_an_image_to_the_final_answer() {
    let server = MockProvider::start(sample::script(anthropic)).await.unwrap();
    let (answer, results) = run_loop(&server, "claude-haiku-4-5").await;
    assert_eq!(answer, sample::ANSWER);
    let ids: Vec<String> = (1..=5).map(|n| format!("call_{n}")).collect();
    assert_eq!(results, expected(&ids));

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!((requests[0].method.as_str(), requests[0].path.as_str()), ("POST", "/v1/messages"));
    assert_eq!(requests[0].header("x-api-key"), Some("test-key"));
    assert_eq!(
        requests[0].body["tools"],
        json!([
            {"name": "get_weather", "description": "Get the current weather of a city.",
             "input_schema": sample::city_schema("The city's name, e.g. `Paris`.")},
            {"name": "snapshot", "description": "Take a snapshot of a city's webcam.",
             "input_schema": sample::city_schema("The city's name.")},
        ])
    );
}

#[tokio::test]
async fn an_anthropic_history_has_the_tool_uses_then_one_user_message_of_their_results_then_the_images() {
    let server = MockProvider::start(sample::script(anthropic)).await.unwrap();
    run_loop(&server, "claude-haiku-4-5").await;
    let messages = server.requests()[2].body["messages"].as_array().unwrap().clone();
    let tool_uses: Vec<Value> = sample::FIRST_TURN
        .iter()
        .map(|(id, name, args)| json!({"type": "tool_use", "id": id, "name": name, "input": arguments(args)}))
        .collect();
    let result = |id: &str, text: &str| json!({"type": "tool_result", "tool_use_id": id, "content": text});
    assert_eq!(
        messages,
        [
            json!({"role": "user", "content": sample::QUESTION}),
            json!({"role": "assistant", "content": tool_uses}),
            json!({"role": "user", "content": [
                result("call_1", "Sunny, 21 °C"),
                result("call_2", "no weather station in Atlantis"),
                result("call_3", "unknown tool `get_tides`; available tools: get_weather, snapshot"),
                result("call_4", "no weather station in Rome"),
            ]}),
            json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": "call_5", "name": "snapshot", "input": {"city": "Oslo"}}]}),
            json!({"role": "user", "content": [result("call_5", "Webcam of Oslo\n[image]")]}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "Images from tool call `call_5` (`snapshot`):"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": sample::PIXEL_PNG}}]}),
        ]
    );
}

#[tokio::test]
async fn a_gemini_loop_runs_parallel_calls_an_error_an_unknown_tool_and_an_image_to_the_final_answer() {
    let server = MockProvider::start(sample::script(gemini)).await.unwrap();
    let (answer, results) = run_loop(&server, "gemini-3-flash-preview").await;
    assert_eq!(answer, sample::ANSWER);
    let ids: Vec<String> = results.iter().flatten().map(|outcome| outcome.0.clone()).collect();
    assert_eq!(results, expected(&ids));

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].path, "/v1/models/gemini-3-flash-preview:generateContent");
    assert_eq!(requests[0].header("x-goog-api-key"), Some("test-key"));
    assert_eq!(
        requests[0].body["tools"],
        json!([{"functionDeclarations": [
            {"name": "get_weather", "description": "Get the current weather of a city.",
             "parametersJsonSchema": sample::city_schema("The city's name, e.g. `Paris`.")},
            {"name": "snapshot", "description": "Take a snapshot of a city's webcam.",
             "parametersJsonSchema": sample::city_schema("The city's name.")},
        ]}])
    );
    let second = &requests[1].body["contents"];
    assert_eq!(second[1], json!({"role": "model", "parts": gemini_parts(&sample::FIRST_TURN)}));
    let response = |name: &str, text: &str| json!({"functionResponse": {"name": name, "response": {"name": name, "content": text}}});
    assert_eq!(
        second[2],
        json!({"role": "user", "parts": [
            response("get_weather", "Sunny, 21 °C"),
            response("get_weather", "no weather station in Atlantis"),
            response("get_tides", "unknown tool `get_tides`; available tools: get_weather, snapshot"),
            response("get_weather", "no weather station in Rome"),
        ]})
    );
}

#[test]
fn tools_send_the_canonical_schema_and_strict_only_as_a_tool_declares_it() {
    let mut definitions = sample::registry().definitions().to_vec();
    definitions[1].strict = Some(true);
    let tools = tool_genai::tools(&definitions);
    assert_eq!(
        tools.iter().map(|t| (t.schema.clone(), t.strict)).collect::<Vec<_>>(),
        [
            (Some(sample::city_schema("The city's name, e.g. `Paris`.")), None),
            (Some(sample::city_schema("The city's name.")), Some(true)),
        ]
    );
}

#[test]
fn no_results_make_no_messages() {
    assert!(tool_genai::tool_messages(&[]).is_empty());
}
