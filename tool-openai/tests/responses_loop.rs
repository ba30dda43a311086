//! An agent loop on async-openai's own client against a scripted Responses server on 127.0.0.1,
//! answering in the recorded wire format of `openai-responses-parallel-1.json` (its reasoning
//! item kept): three model turns (four parallel calls with a tool error, an unknown tool and a key
//! sent twice; an image result; the final answer), then the exact requests the client sent.

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::responses::{CreateResponseArgs, EasyInputMessage, InputItem};
use provider_mock::{MockProvider, fixture, sample};
use serde_json::{Value, json};
use tool_runtime::ToolContext;

/// The recorded response with its output replaced by its reasoning item and `calls` (`(call_id,
/// name, arguments)`), or by one message of `text` when `calls` is empty.
fn response(calls: &[(&str, &str, &str)], text: &str) -> Value {
    let mut body = fixture("openai-responses-parallel-1.json");
    let reasoning = body["output"][0].clone();
    body["output"] = if calls.is_empty() {
        json!([{"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}])
    } else {
        std::iter::once(reasoning).chain(calls.iter().map(|call| function_call(*call))).collect()
    };
    body
}

fn function_call((call_id, name, arguments): (&str, &str, &str)) -> Value {
    json!({"id": format!("fc_{call_id}"), "type": "function_call", "status": "completed",
           "arguments": arguments, "call_id": call_id, "name": name})
}

/// Runs the loop to its end (at most 5 requests): the final text and each turn's results as
/// `(call id, text, is_error)`.
async fn run_loop(server: &MockProvider) -> (String, Vec<Vec<sample::Outcome>>) {
    let registry = sample::registry();
    let client =
        Client::with_config(OpenAIConfig::new().with_api_base(format!("{}/v1", server.url())).with_api_key("sk-test"));
    let tools = tool_openai::responses::tools(registry.definitions()).unwrap();
    let mut input: Vec<InputItem> = vec![EasyInputMessage::from(sample::QUESTION).into()];
    let mut results = Vec::new();
    for _ in 0..5 {
        let request =
            CreateResponseArgs::default().model("gpt-5.5").input(input.clone()).tools(tools.clone()).build().unwrap();
        let response = client.responses().create(request).await.unwrap();
        let turn = tool_openai::responses::answer(&registry, &response, &ToolContext::new()).await.unwrap();
        if turn.results.is_empty() {
            return (response.output_text().unwrap_or_default(), results);
        }
        results.push(turn.results.iter().map(sample::outcome).collect());
        input.extend(turn.messages);
    }
    panic!("the loop did not end within 5 requests");
}

async fn three_turns() -> (MockProvider, String, Vec<Vec<sample::Outcome>>) {
    let server = MockProvider::start(sample::script(response)).await.unwrap();
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
    assert_eq!((first.method.as_str(), first.path.as_str()), ("POST", "/v1/responses"));
    assert_eq!(
        first.body["tools"],
        json!([
            {"type": "function", "name": "get_weather", "description": "Get the current weather of a city.",
             "parameters": sample::city_schema("The city's name, e.g. `Paris`."), "strict": true},
            {"type": "function", "name": "snapshot", "description": "Take a snapshot of a city's webcam.",
             "parameters": sample::city_schema("The city's name."), "strict": true},
        ])
    );
}

#[tokio::test]
async fn the_second_request_replays_the_reasoning_and_the_calls_then_one_output_per_call() {
    let (server, _, _) = three_turns().await;
    let input = server.requests()[1].body["input"].as_array().unwrap().clone();
    assert_eq!(input.len(), 10, "{input:#?}");
    assert_eq!(input[1], fixture("openai-responses-parallel-1.json")["output"][0]);
    let calls: Vec<Value> = sample::FIRST_TURN.iter().map(|call| function_call(*call)).collect();
    assert_eq!(input[2..6], calls[..]);
    assert_eq!(
        input[6..],
        [
            json!({"type": "function_call_output", "call_id": "call_1", "output": "Sunny, 21 °C"}),
            json!({"type": "function_call_output", "call_id": "call_2", "output": "no weather station in Atlantis"}),
            json!({"type": "function_call_output", "call_id": "call_3", "output": "unknown tool `get_tides`; available tools: get_weather, snapshot"}),
            json!({"type": "function_call_output", "call_id": "call_4", "output": "invalid arguments for `get_weather`: `city`: the field is sent twice; send each field once"}),
        ]
    );
}

#[tokio::test]
async fn an_image_result_is_an_input_image_of_its_function_call_output() {
    let (server, _, _) = three_turns().await;
    let input = server.requests()[2].body["input"].as_array().unwrap().clone();
    assert_eq!(input.len(), 13, "{input:#?}");
    assert_eq!(
        input[12],
        json!({"type": "function_call_output", "call_id": "call_5", "output": [
            {"type": "input_text", "text": "Webcam of Oslo"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{}", sample::PIXEL_PNG), "detail": "auto"}]})
    );
}

#[test]
fn a_custom_tool_call_is_refused_with_its_path() {
    let mut body = response(&sample::FIRST_TURN, "");
    body["output"][2] =
        json!({"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_9", "name": "grammar", "input": "x"});
    let response: async_openai::types::responses::Response = serde_json::from_value(body).unwrap();
    assert_eq!(
        tool_openai::responses::tool_calls(&response).unwrap_err().to_string(),
        "`output[2].type` is \"custom_tool_call\"; expected \"function_call\""
    );
}

/// A program item of programmatic tool calling, as the API sends it: the program's `call_id`,
/// its JavaScript and the fingerprint that must be sent back unchanged.
fn program_item() -> Value {
    json!({"type": "program", "id": "prog_item_1", "call_id": "prog_1",
           "code": "const w = await tools.get_weather({city: 'Paris'}); return w;", "fingerprint": "fp_7f3a"})
}

/// A `function_call` the program made: its `caller` names the program's `call_id`.
fn program_call() -> Value {
    json!({"id": "fc_call_1", "type": "function_call", "status": "completed", "arguments": "{\"city\":\"Paris\"}",
           "call_id": "call_1", "name": "get_weather", "caller": {"type": "program", "caller_id": "prog_1"}})
}

/// Two responses: the program and its call; then the program's output and the final message.
fn program_script() -> Vec<Value> {
    let mut first = fixture("openai-responses-parallel-1.json");
    first["output"] = json!([program_item(), program_call()]);
    let mut second = fixture("openai-responses-parallel-1.json");
    second["output"] = json!([
        {"type": "program_output", "id": "prog_out_1", "call_id": "prog_1", "result": "Sunny, 21 °C", "status": "completed"},
        {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "text": "Paris is sunny.", "annotations": []}]}
    ]);
    vec![first, second]
}

#[tokio::test]
async fn a_programs_call_is_run_with_its_caller_and_the_program_item_is_replayed_before_it() {
    let server = MockProvider::start(program_script()).await.unwrap();
    let (answer, results) = run_loop(&server).await;
    assert_eq!(answer, "Paris is sunny.");
    assert_eq!(results, [vec![("call_1".to_owned(), "Sunny, 21 °C".to_owned(), false)]]);
    let input = server.requests()[1].body["input"].as_array().unwrap().clone();
    assert_eq!(
        input[1..],
        [
            program_item(),
            program_call(),
            json!({"type": "function_call_output", "call_id": "call_1", "output": "Sunny, 21 °C"}),
        ]
    );
}

#[test]
fn a_programs_call_carries_its_caller() {
    let mut body = fixture("openai-responses-parallel-1.json");
    body["output"] = json!([program_item(), program_call()]);
    let response: async_openai::types::responses::Response = serde_json::from_value(body).unwrap();
    assert_eq!(
        tool_openai::responses::tool_calls(&response).unwrap(),
        [tool_runtime::ToolCall::new("call_1", "get_weather", r#"{"city":"Paris"}"#).with_caller("prog_1")]
    );
}

#[test]
fn a_program_output_item_is_replayed_as_its_input_item() {
    let mut body = fixture("openai-responses-parallel-1.json");
    let output = json!({"type": "program_output", "id": "prog_out_1", "call_id": "prog_1", "result": "3", "status": "incomplete"});
    body["output"] = json!([output.clone()]);
    let response: async_openai::types::responses::Response = serde_json::from_value(body).unwrap();
    let history = tool_openai::responses::history(&response).unwrap();
    assert_eq!(serde_json::to_value(&history).unwrap(), json!([output]));
}
