//! Tools that talk back over MCP: input requests as input-required results with a sealed request
//! state (protocol 2026-07-28, stateless Streamable HTTP), as server-to-client requests on a
//! connection of an earlier protocol (stdio), the missing-capability error, and log messages at
//! the level the client asked for.

use crate::common;

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_mcp::McpServer;
use tool_runtime::talk::Elicitation;
use tool_runtime::{LogLevel, Registry, SamplingRequest, TalkBackError, ToolContext, tool};

use common::{RawClient, Response, Running, post};

const BOUND: Duration = Duration::from_secs(10);

/// A name.
#[derive(Deserialize, JsonSchema)]
struct Name {
    /// Your name.
    name: String,
}

/// A colour.
#[derive(Deserialize, JsonSchema)]
struct Colour {
    color: String,
}

/// Greet the user by the name they give.
#[tool]
async fn greet(ctx: &ToolContext) -> Result<String, TalkBackError> {
    Ok(match ctx.elicit::<Name>("What is your name?").key("user_name").await? {
        Elicitation::Accept(Name { name }) => format!("Hello, {name}!"),
        Elicitation::Decline => "declined".to_owned(),
        Elicitation::Cancel => "cancelled".to_owned(),
    })
}

/// Ask two questions, one after the other.
#[tool]
async fn two_questions(ctx: &ToolContext, prefix: String) -> Result<String, TalkBackError> {
    let Elicitation::Accept(Name { name }) = ctx.elicit::<Name>("Name?").await? else {
        return Ok("stopped".to_owned());
    };
    let Elicitation::Accept(Colour { color }) = ctx.elicit::<Colour>("Colour?").await? else {
        return Ok("stopped".to_owned());
    };
    Ok(format!("{prefix}{name} likes {color}"))
}

/// Ask the client's model.
#[tool]
async fn ask_model(ctx: &ToolContext) -> Result<String, TalkBackError> {
    let answer = ctx.sample(SamplingRequest::new("Capital of France?", 10)).await?;
    Ok(answer.text().unwrap_or_default().to_owned())
}

/// Log at three levels.
#[tool]
async fn chatty(ctx: &ToolContext) -> String {
    ctx.log(LogLevel::Debug, "a detail");
    ctx.log(LogLevel::Warning, "a warning");
    ctx.log(LogLevel::Error, "an error");
    "done".to_owned()
}

/// Delete a file.
#[tool(tags(destructive))]
fn remove(path: String) -> String {
    format!("removed {path}")
}

fn registry() -> Registry {
    Registry::builder()
        .tool(remove::TOOL)
        .confirm_tag("destructive")
        .tool(greet::TOOL)
        .tool(two_questions::TOOL)
        .tool(ask_model::TOOL)
        .tool(chatty::TOOL)
        .build()
        .unwrap()
}

/// A `tools/call` of protocol 2026-07-28: `_meta` with the client's capabilities, `extra` merged
/// into the params (`inputResponses`, `requestState`, `_meta` keys).
fn call(id: u64, tool: &str, arguments: Value, capabilities: Value, extra: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }});
    for (key, value) in extra.as_object().unwrap() {
        if key == "_meta" {
            params["_meta"].as_object_mut().unwrap().extend(value.as_object().unwrap().clone());
        } else {
            params[key] = value.clone();
        }
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

async fn send(running: &Running, tool: &str, body: &Value) -> Response {
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", tool)];
    tokio::time::timeout(BOUND, post(running.addr, "/mcp", "127.0.0.1", &headers, body)).await.unwrap()
}

/// The JSON-RPC response of a plain JSON or event-stream body (the last event).
fn message(response: &Response) -> Value {
    match response.header("content-type") {
        Some("text/event-stream") => response.events().pop().unwrap(),
        _ => serde_json::from_str(&response.body).unwrap(),
    }
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap()
}

fn elicitation(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_is_an_input_required_result_and_the_retry_with_the_answer_completes() {
    let running = Running::start(McpServer::builder(registry()).build()).await;
    let both = json!({"elicitation": {}, "sampling": {}});
    let first = message(&send(&running, "greet", &call(1, "greet", json!({}), both.clone(), json!({}))).await);
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"],
        json!({"user_name": {"method": "elicitation/create", "params": {
            "message": "What is your name?",
            "mode": "form",
            "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "Your name."}}, "required": ["name"]}}}})
    );
    let state = result["requestState"].as_str().unwrap().to_owned();

    let retry = json!({"inputResponses": {"user_name": elicitation(json!({"name": "Alice"}))}, "requestState": state});
    let second = message(&send(&running, "greet", &call(2, "greet", json!({}), both.clone(), retry)).await);
    assert_eq!(text_of(&second["result"]), "Hello, Alice!");
    assert_eq!(second["result"]["isError"], false);

    let declined = json!({"inputResponses": {"user_name": {"action": "decline"}}});
    let third = message(&send(&running, "greet", &call(3, "greet", json!({}), both, declined)).await);
    assert_eq!(text_of(&third["result"]), "declined");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_round_keeps_the_first_answer_in_the_sealed_state() {
    let running = Running::start(McpServer::builder(registry()).build()).await;
    let caps = json!({"elicitation": {}});
    let args = json!({"prefix": "> "});
    let first = message(
        &send(&running, "two_questions", &call(1, "two_questions", args.clone(), caps.clone(), json!({}))).await,
    );
    assert_eq!(first["result"]["inputRequests"]["input-1"]["params"]["message"], "Name?");
    let state = first["result"]["requestState"].clone();

    let answer = json!({"inputResponses": {"input-1": elicitation(json!({"name": "Ana"}))}, "requestState": state});
    let second =
        message(&send(&running, "two_questions", &call(2, "two_questions", args.clone(), caps.clone(), answer)).await);
    let requests = second["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["input-2"]);
    assert_eq!(requests["input-2"]["params"]["message"], "Colour?");
    let state2 = second["result"]["requestState"].clone();
    assert_ne!(state2, state);

    // Only the second answer is sent: the first comes back in the state.
    let answer = json!({"inputResponses": {"input-2": elicitation(json!({"color": "blue"}))}, "requestState": state2});
    let third = message(&send(&running, "two_questions", &call(3, "two_questions", args, caps, answer)).await);
    assert_eq!(text_of(&third["result"]), "> Ana likes blue");
    running.stop().await;
}

const REFUSED: &str = "the requestState was refused: it is not one this server sealed for this call and caller, or \
                       it has expired; send the call again without requestState and inputResponses to start over";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_state_or_one_made_for_other_arguments_or_by_another_key_is_refused() {
    let key = b"a request state key of 32 bytes!".to_vec();
    let server = || McpServer::builder(registry()).request_state_key(key.clone()).unwrap().build();
    let running = Running::start(server()).await;
    let caps = json!({"elicitation": {}});
    let args = json!({"prefix": "a"});
    let first = message(
        &send(&running, "two_questions", &call(1, "two_questions", args.clone(), caps.clone(), json!({}))).await,
    );
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = |state: &str| json!({"inputResponses": {"input-1": elicitation(json!({"name": "Ana"}))}, "requestState": state});

    for (what, arguments, state) in [
        ("tampered", args.clone(), format!("{state}-TAMPERED")),
        ("other arguments", json!({"prefix": "b"}), state.clone()),
        ("not a state", args.clone(), "hello".to_owned()),
    ] {
        let response =
            send(&running, "two_questions", &call(2, "two_questions", arguments, caps.clone(), answer(&state))).await;
        let reply = message(&response);
        assert_eq!(reply["error"], json!({"code": -32602, "message": REFUSED}), "{what}");
        assert_eq!(reply["id"], 2, "{what}");
    }

    // Another worker with the same key opens it; one with its own random key does not.
    let twin = Running::start(server()).await;
    let reply = message(
        &send(&twin, "two_questions", &call(3, "two_questions", args.clone(), caps.clone(), answer(&state))).await,
    );
    assert_eq!(reply["result"]["inputRequests"]["input-2"]["params"]["message"], "Colour?");
    let stranger = Running::start(McpServer::builder(registry()).build()).await;
    let reply = message(&send(&stranger, "two_questions", &call(4, "two_questions", args, caps, answer(&state))).await);
    assert_eq!(reply["error"]["message"], REFUSED);
    for running in [running, twin, stranger] {
        running.stop().await;
    }
}

#[test]
fn a_request_state_key_under_32_bytes_is_refused() {
    let error = McpServer::builder(registry()).request_state_key(b"short".to_vec()).err().unwrap();
    assert_eq!(error.to_string(), "a request state key needs at least 32 bytes, got 5; give 32 random bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_needs_an_undeclared_capability_is_a_missing_capability_error_with_status_400() {
    let running = Running::start(McpServer::builder(registry()).build()).await;
    let response =
        send(&running, "ask_model", &call(7, "ask_model", json!({}), json!({"elicitation": {}}), json!({}))).await;
    assert_eq!(response.status, 400);
    assert_eq!(
        message(&response),
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32021,
            "message": "the client did not declare the `sampling` capability; use a client that supports sampling and declares it",
            "data": {"requiredCapabilities": {"sampling": {}}}}})
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_answer_is_invalid_params_and_says_what_was_expected() {
    let running = Running::start(McpServer::builder(registry()).build()).await;
    let caps = json!({"elicitation": {}});
    for (answer, said) in [
        (
            json!(12345),
            "the client's answer to input request `user_name` is not an elicitation result (an object with `action`): 12345",
        ),
        (
            json!({"action": "maybe"}),
            "the client's answer to input request `user_name` has action `maybe`; an elicitation result's action is `accept`, `decline` or `cancel`",
        ),
        (
            elicitation(json!({"name": 5})),
            "the client's answer to input request `user_name` does not fit the requested schema: `name`: invalid type: integer `5`, expected a string",
        ),
        (
            elicitation(json!({"name": "Al", "age": 3})),
            "the client's answer to input request `user_name` does not fit the requested schema: unknown field `age`; expected one of `name`",
        ),
    ] {
        let extra = json!({"inputResponses": {"user_name": answer}});
        let reply = message(&send(&running, "greet", &call(1, "greet", json!({}), caps.clone(), extra)).await);
        assert_eq!(reply["error"], json!({"code": -32602, "message": said}));
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_messages_reach_the_client_at_the_level_it_asked_for_and_none_without_one() {
    let running = Running::start(McpServer::builder(registry()).build()).await;
    let at_warning = json!({"_meta": {"io.modelcontextprotocol/logLevel": "warning"}});
    let response = send(&running, "chatty", &call(1, "chatty", json!({}), json!({}), at_warning)).await;
    let events = response.events();
    let logs: Vec<&Value> =
        events.iter().filter(|e| e["method"] == "notifications/message").map(|e| &e["params"]).collect();
    assert_eq!(
        logs,
        [
            &json!({"level": "warning", "logger": "chatty", "data": "a warning"}),
            &json!({"level": "error", "logger": "chatty", "data": "an error"}),
        ]
    );
    assert_eq!(text_of(&events.last().unwrap()["result"]), "done");

    let quiet = send(&running, "chatty", &call(2, "chatty", json!({}), json!({}), json!({}))).await;
    assert_eq!(quiet.header("content-type"), Some("application/json"));
    assert_eq!(text_of(&message(&quiet)["result"]), "done");
    running.stop().await;
}

/// A stdio connection of protocol 2025-06-18 whose client declared `capabilities`.
async fn stdio_client(
    capabilities: Value,
) -> (RawClient<tokio::io::DuplexStream, tokio::io::DuplexStream>, tokio::sync::oneshot::Sender<()>) {
    let server = McpServer::builder(registry()).build();
    let (server_read, client_write) = tokio::io::duplex(64 * 1024);
    let (client_read, server_write) = tokio::io::duplex(64 * 1024);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        server
            .serve_lines_until(server_read, server_write, async {
                let _ = stopped.await;
            })
            .await
    });
    (RawClient::initialize_with(client_read, client_write, capabilities).await, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_an_elicitation_is_a_server_request_answered_in_the_same_call() {
    let (mut client, _stop) = stdio_client(json!({"elicitation": {}})).await;
    client.call(5, "greet", json!({}), false).await;
    let request = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "What is your name?");
    assert_eq!(request["params"]["requestedSchema"]["required"], json!(["name"]));
    client
        .send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"name": "Bo"}}}))
        .await;
    let reply = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!(reply["id"], 5);
    assert_eq!(text_of(&reply["result"]), "Hello, Bo!");

    client.call(6, "greet", json!({}), false).await;
    let request = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    client.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "cancel"}})).await;
    assert_eq!(text_of(&tokio::time::timeout(BOUND, client.recv()).await.unwrap()["result"]), "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_logging_follows_set_level_and_sampling_is_a_server_request() {
    let (mut client, _stop) = stdio_client(json!({"sampling": {}})).await;
    client.call(1, "chatty", json!({}), false).await;
    let quiet = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!((quiet["id"].clone(), text_of(&quiet["result"])), (json!(1), "done"));

    client.send(json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "error"}})).await;
    assert_eq!(
        tokio::time::timeout(BOUND, client.recv()).await.unwrap(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {}})
    );
    client.call(3, "chatty", json!({}), false).await;
    let log = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!(
        log,
        json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "error", "logger": "chatty", "data": "an error"}})
    );
    assert_eq!(text_of(&tokio::time::timeout(BOUND, client.recv()).await.unwrap()["result"]), "done");

    client.call(4, "ask_model", json!({}), false).await;
    let request = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!(request["method"], "sampling/createMessage");
    let mut params = request["params"].clone();
    params.as_object_mut().unwrap().remove("_meta"); // rmcp's progress token for the request
    assert_eq!(
        params,
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}], "maxTokens": 10})
    );
    client
        .send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {
            "role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}}))
        .await;
    assert_eq!(text_of(&tokio::time::timeout(BOUND, client.recv()).await.unwrap()["result"]), "Paris");

    // This client did not declare elicitation: the tool fails with the missing-capability error.
    client.call(5, "greet", json!({}), false).await;
    let refused = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!(refused["error"]["code"], -32021);
    assert_eq!(refused["error"]["data"], json!({"requiredCapabilities": {"elicitation": {}}}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_needs_approval_asks_the_user_with_an_input_request_and_runs_once_accepted() {
    let running = Running::start(McpServer::builder(registry()).build()).await;
    let caps = json!({"elicitation": {}});
    let args = json!({"path": "notes.txt"});
    let first = message(&send(&running, "remove", &call(1, "remove", args.clone(), caps.clone(), json!({}))).await);
    assert_eq!(
        first["result"]["inputRequests"],
        json!({"approval": {"method": "elicitation/create", "params": {
            "message": "Allow the tool `remove` to run with these arguments?\n\"path\": \"notes.txt\"",
            "mode": "form", "requestedSchema": {"type": "object", "properties": {}}}}})
    );
    let state = first["result"]["requestState"].clone();
    let accept = json!({"inputResponses": {"approval": {"action": "accept", "content": {}}}, "requestState": state});
    let second = message(&send(&running, "remove", &call(2, "remove", args.clone(), caps.clone(), accept)).await);
    assert_eq!(text_of(&second["result"]), "removed notes.txt");

    let decline = json!({"inputResponses": {"approval": {"action": "decline"}}});
    let third = message(&send(&running, "remove", &call(3, "remove", args.clone(), caps, decline)).await);
    assert_eq!(third["result"]["isError"], true);
    assert_eq!(
        text_of(&third["result"]),
        "Permission denied: the user declined to run it; do not call it again unless the user asks for it"
    );

    // A client that cannot ask its user gets a tool error that says how to allow the tool.
    let unasked = message(&send(&running, "remove", &call(4, "remove", args, json!({}), json!({}))).await);
    assert_eq!(unasked["result"]["isError"], true);
    assert!(
        text_of(&unasked["result"]).starts_with("Permission denied: it needs the user's approval (tag `destructive`)")
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_protocol_over_stateless_http_gets_an_error_instead_of_a_request_it_could_never_answer() {
    let running = Running::start(McpServer::builder(registry()).build()).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greet", "arguments": {},
        "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}});
    let headers = [("MCP-Protocol-Version", "2025-11-25")];
    let response = tokio::time::timeout(BOUND, post(running.addr, "/mcp", "127.0.0.1", &headers, &body)).await.unwrap();
    let reply = message(&response);
    assert_eq!(reply["result"]["isError"], true);
    assert_eq!(
        text_of(&reply["result"]),
        "the input request failed: `elicitation/create` cannot reach the client on stateless Streamable HTTP before \
         protocol 2026-07-28 (no session carries the answer back); send the call at protocol 2026-07-28, or use stdio \
         or a server with legacy sessions"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_can_ask_the_user_too_and_its_state_is_bound_to_the_prompt() {
    use tool_mcp::{Prompt, PromptMessage};
    let server = McpServer::builder(registry())
        .prompt(Prompt::new("intro").description("Introduce the user."), |request| async move {
            let text = match request.ctx.elicit::<Name>("Who are you?").await? {
                Elicitation::Accept(Name { name }) => format!("Introduce {name}."),
                _ => "Introduce nobody.".to_owned(),
            };
            Ok(vec![PromptMessage::user(tool_runtime::ContentPart::text(text))])
        })
        .build();
    let running = Running::start(server).await;
    let get = |id: u64, extra: Value| {
        let mut params = json!({"name": "intro", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({"jsonrpc": "2.0", "id": id, "method": "prompts/get", "params": params})
    };
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "prompts/get"), ("Mcp-Name", "intro")];
    let first = message(&post(running.addr, "/mcp", "127.0.0.1", &headers, &get(1, json!({}))).await);
    assert_eq!(first["result"]["resultType"], "input_required");
    assert_eq!(first["result"]["inputRequests"]["input-1"]["params"]["message"], "Who are you?");
    let state = first["result"]["requestState"].clone();
    let answer = json!({"inputResponses": {"input-1": elicitation(json!({"name": "Ana"}))}, "requestState": state});
    let second = message(&post(running.addr, "/mcp", "127.0.0.1", &headers, &get(2, answer)).await);
    assert_eq!(
        second["result"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Introduce Ana."}}])
    );

    // The prompt's state does not open a tool call's round.
    let tool_call = call(3, "two_questions", json!({}), json!({"elicitation": {}}), json!({"requestState": state}));
    let refused = message(&send(&running, "two_questions", &tool_call).await);
    assert_eq!(refused["error"]["message"], REFUSED);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_responses_that_are_not_an_object_and_a_request_state_that_is_not_a_string_are_invalid_params() {
    let running = Running::start(McpServer::builder(registry()).build()).await;
    let caps = json!({"elicitation": {}});
    for (extra, said) in [
        (
            json!({"inputResponses": [1, 2]}),
            "`params.inputResponses` must be an object of the answers by input request key (or left out), not an array",
        ),
        (
            json!({"inputResponses": "yes"}),
            "`params.inputResponses` must be an object of the answers by input request key (or left out), not a string",
        ),
        (
            json!({"requestState": 7}),
            "`params.requestState` must be the string the server sent in its input-required result, not a number",
        ),
    ] {
        let reply = message(&send(&running, "greet", &call(9, "greet", json!({}), caps.clone(), extra)).await);
        assert_eq!(reply["error"], json!({"code": -32602, "message": said}));
        assert_eq!(reply["id"], 9);
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_may_answer_only_what_the_last_result_asked_and_never_change_a_sealed_answer() {
    let running = Running::start(McpServer::builder(registry()).build()).await;
    let caps = json!({"elicitation": {}});
    let args = json!({"prefix": "> "});
    let first = message(
        &send(&running, "two_questions", &call(1, "two_questions", args.clone(), caps.clone(), json!({}))).await,
    );
    let state = first["result"]["requestState"].clone();
    let answer = json!({"inputResponses": {"input-1": elicitation(json!({"name": "Ana"}))}, "requestState": state});
    let second =
        message(&send(&running, "two_questions", &call(2, "two_questions", args.clone(), caps.clone(), answer)).await);
    let state2 = second["result"]["requestState"].clone();

    // Mallory adds a new answer for the first step beside the sealed one.
    let changed = json!({"inputResponses": {
        "input-1": elicitation(json!({"name": "mallory"})), "input-2": elicitation(json!({"color": "red"}))},
        "requestState": state2.clone()});
    let refused =
        message(&send(&running, "two_questions", &call(3, "two_questions", args.clone(), caps.clone(), changed)).await);
    assert_eq!(
        refused["error"],
        json!({"code": -32602, "message": "inputResponses answers `input-1`, but its answer is sealed in the requestState \
               already and cannot change; send only answers to the input requests of the last result, with its \
               requestState"})
    );
    // An answer to a step that was never asked.
    let stray = json!({"inputResponses": {
        "input-2": elicitation(json!({"color": "red"})), "input-9": elicitation(json!({}))},
        "requestState": state2.clone()});
    let refused =
        message(&send(&running, "two_questions", &call(4, "two_questions", args.clone(), caps.clone(), stray)).await);
    assert_eq!(
        refused["error"]["message"],
        "inputResponses answers `input-9`, but the last input-required result did not ask it; send only answers to \
         the input requests of the last result, with its requestState"
    );
    // The honest retry still works.
    let answer = json!({"inputResponses": {"input-2": elicitation(json!({"color": "blue"}))}, "requestState": state2});
    let third = message(&send(&running, "two_questions", &call(5, "two_questions", args, caps, answer)).await);
    assert_eq!(text_of(&third["result"]), "> Ana likes blue");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_over_the_servers_limit_are_refused_before_anything_is_sealed() {
    let running = Running::start(McpServer::builder(registry()).max_input_response_bytes(1_000).build()).await;
    let caps = json!({"elicitation": {}});
    let args = json!({"prefix": "> "});
    let first = message(
        &send(&running, "two_questions", &call(1, "two_questions", args.clone(), caps.clone(), json!({}))).await,
    );
    let state = first["result"]["requestState"].clone();
    let big =
        json!({"inputResponses": {"input-1": elicitation(json!({"name": "a".repeat(2_000)}))}, "requestState": state});
    let refused = message(&send(&running, "two_questions", &call(2, "two_questions", args, caps, big)).await);
    assert_eq!(
        refused["error"],
        json!({"code": -32602, "message": "the answers of this call are 2053 bytes of JSON, over this server's limit \
               of 1000; answer the input requests with less"})
    );
    running.stop().await;
}
