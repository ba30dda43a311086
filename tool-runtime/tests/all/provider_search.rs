//! Deferred tools per provider: the first request's `tools`, the search calls of a response, and
//! their answers.

use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::provider::{
    AnthropicSearch, Deferral, MAX_ANTHROPIC_DEFERRED, OpenAiSearch, ProjectionError, Provider, ProviderError,
    Rendering, SchemaError, SearchCall,
};
use tool_runtime::search::{SearchQuery, meta_tool_definitions};

/// Read a UTF-8 file.
#[tool(set = "fs")]
fn read_file(
    /// The path.
    path: String,
) -> String {
    format!("read {path}")
}

/// Send an email.
#[tool(set = "mail")]
fn send_email(
    /// The address.
    to: String,
) -> String {
    format!("sent to {to}")
}

/// Archive an email thread.
#[tool(set = "mail")]
fn archive_email(
    /// The thread id.
    thread: String,
) -> String {
    format!("archived {thread}")
}

fn registry() -> Registry {
    Registry::builder()
        .tool(read_file::TOOL)
        .tool(send_email::TOOL)
        .tool(archive_email::TOOL)
        .defer_sets(["mail"])
        .build()
        .unwrap()
}

fn render(provider: Provider, deferral: &Deferral) -> Vec<Value> {
    let registry = registry();
    provider
        .render_deferred_tools(registry.definitions(), |n| registry.is_deferred(n), Rendering::DEFAULT, deferral)
        .unwrap()
}

fn entry(provider: Provider, name: &str, deferred: bool) -> Value {
    let registry = registry();
    let mut entry = provider.render_tool(registry.definition(name).unwrap()).unwrap();
    if deferred {
        entry["defer_loading"] = json!(true);
    }
    entry
}

#[test]
fn anthropic_sends_every_tool_with_defer_loading_on_the_deferred_ones_and_the_client_search_tool_last() {
    let tools = render(Provider::Anthropic, &Deferral::default());
    let search = Provider::Anthropic.render_tool(&meta_tool_definitions()[0]).unwrap();
    assert_eq!(
        tools,
        [
            entry(Provider::Anthropic, "archive_email", true),
            entry(Provider::Anthropic, "read_file", false),
            entry(Provider::Anthropic, "send_email", true),
            search,
        ]
    );
    assert_eq!(tools[3]["name"], "search_tools");
}

#[test]
fn anthropic_server_search_tools_are_the_regex_and_bm25_entries() {
    let regex = Deferral { anthropic: AnthropicSearch::ServerRegex, ..Deferral::default() };
    let bm25 = Deferral { anthropic: AnthropicSearch::ServerBm25, ..Deferral::default() };
    assert_eq!(
        render(Provider::Anthropic, &regex)[3],
        json!({"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"})
    );
    assert_eq!(
        render(Provider::Anthropic, &bm25)[3],
        json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
    );
}

#[test]
fn openai_responses_sends_loaded_functions_then_deferred_ones_then_a_client_tool_search() {
    let tools = render(Provider::OpenAiResponses, &Deferral::default());
    let search = &meta_tool_definitions()[0];
    assert_eq!(
        tools,
        [
            entry(Provider::OpenAiResponses, "read_file", false),
            entry(Provider::OpenAiResponses, "archive_email", true),
            entry(Provider::OpenAiResponses, "send_email", true),
            json!({"type": "tool_search", "execution": "client", "description": search.description, "parameters": search.input_schema}),
        ]
    );
}

#[test]
fn openai_responses_puts_the_deferred_tools_of_a_named_set_in_a_namespace() {
    let deferral = Deferral {
        openai: OpenAiSearch::Server,
        namespaces: vec![("mail".to_owned(), "Email tools.".to_owned())],
        ..Deferral::default()
    };
    assert_eq!(
        render(Provider::OpenAiResponses, &deferral),
        [
            entry(Provider::OpenAiResponses, "read_file", false),
            json!({
                "type": "namespace",
                "name": "mail",
                "description": "Email tools.",
                "tools": [entry(Provider::OpenAiResponses, "archive_email", true), entry(Provider::OpenAiResponses, "send_email", true)],
            }),
            json!({"type": "tool_search"}),
        ]
    );
}

#[test]
fn openai_chat_and_gemini_send_the_loaded_tools_and_the_two_meta_tools() {
    let [search, call] = meta_tool_definitions().clone();
    let registry = registry();
    let read = registry.definition("read_file").unwrap().clone();
    for provider in [Provider::OpenAiChat, Provider::Gemini] {
        let expected = provider.render_tools(&[read.clone(), search.clone(), call.clone()]).unwrap();
        assert_eq!(render(provider, &Deferral::default()), expected, "{provider}");
    }
}

#[test]
fn a_registry_without_deferred_tools_renders_as_render_tools() {
    let registry = Registry::builder().tool(read_file::TOOL).build().unwrap();
    for provider in Provider::ALL {
        let tools = provider
            .render_deferred_tools(
                registry.definitions(),
                |n| registry.is_deferred(n),
                Rendering::DEFAULT,
                &Deferral::default(),
            )
            .unwrap();
        assert_eq!(tools, provider.render_tools(registry.definitions()).unwrap(), "{provider}");
    }
}

/// `count` copies of `send_email`, named `tool_0` .. , all deferred.
fn many_deferred(count: usize) -> Vec<ToolDefinition> {
    let registry = registry();
    let one = registry.definition("send_email").unwrap();
    (0..count)
        .map(|n| {
            let mut definition = one.clone();
            definition.name = format!("tool_{n}");
            definition
        })
        .collect()
}

#[test]
fn anthropic_takes_ten_thousand_deferred_tools_and_refuses_one_more_naming_it() {
    let render = |definitions: &[ToolDefinition], provider: Provider| {
        provider.render_deferred_tools(definitions, |_| true, Rendering::DEFAULT, &Deferral::default())
    };
    let at_limit = many_deferred(MAX_ANTHROPIC_DEFERRED);
    // Every deferred tool, then the search tool.
    assert_eq!(render(&at_limit, Provider::Anthropic).unwrap().len(), 10_001);

    let past = many_deferred(MAX_ANTHROPIC_DEFERRED + 2);
    let error = render(&past, Provider::Anthropic).unwrap_err();
    assert_eq!(
        error,
        ProjectionError {
            tool: "tool_10000".to_owned(),
            target: "anthropic",
            error: SchemaError {
                path: String::new(),
                message: "anthropic takes at most 10000 deferred tools (`defer_loading`) in one request, and this is deferred tool 10001 of 10002: defer fewer tools, or render fewer of them".to_owned(),
            },
        }
    );
    assert_eq!(
        error.to_string(),
        "tool `tool_10000` cannot be sent to anthropic: ``: anthropic takes at most 10000 deferred tools (`defer_loading`) in one request, and this is deferred tool 10001 of 10002: defer fewer tools, or render fewer of them"
    );
    // The others state no such limit.
    assert_eq!(render(&past, Provider::OpenAiResponses).unwrap().len(), 10_003);
    assert_eq!(render(&past, Provider::OpenAiChat).unwrap().len(), 2);
}

fn anthropic_response() -> Value {
    json!({
        "type": "message",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_regex", "input": {"pattern": "mail"}},
            {"type": "tool_use", "id": "toolu_1", "name": "search_tools", "input": {"query": "send an email", "limit": 2}},
            {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "a.txt"}},
            {"type": "tool_use", "id": "toolu_3", "name": "search_tools", "input": {"qurey": "mail"}}
        ]
    })
}

#[test]
fn anthropic_search_calls_are_the_search_tools_uses_and_server_searches_are_skipped() {
    let calls = Provider::Anthropic.parse_search_calls(&anthropic_response()).unwrap();
    assert_eq!(
        calls,
        [
            SearchCall { call_id: "toolu_1".to_owned(), query: Ok(SearchQuery::words("send an email").limit(2)) },
            SearchCall {
                call_id: "toolu_3".to_owned(),
                query: Err("unknown field `qurey`, expected one of `query`, `mode`, `limit`".to_owned())
            },
        ]
    );
}

#[tokio::test]
async fn anthropic_answers_searches_with_tool_reference_blocks_in_the_user_message_of_the_other_results() {
    let registry = registry();
    let response = anthropic_response();
    let searches = Provider::Anthropic.parse_search_calls(&response).unwrap();
    let read = ToolCall::new("toolu_2", "read_file", r#"{"path":"a.txt"}"#);
    let message = registry.call(&read, &ToolContext::default()).await;
    let turn = Provider::Anthropic.render_turn_results(&registry, Rendering::DEFAULT, &searches, &[message]).unwrap();
    assert_eq!(
        turn,
        [json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                {"type": "tool_reference", "tool_name": "send_email"},
                {"type": "tool_reference", "tool_name": "archive_email"},
            ]},
            {"type": "tool_result", "tool_use_id": "toolu_3", "is_error": true, "content": [{"type": "text", "text": "unknown field `qurey`, expected one of `query`, `mode`, `limit`"}]},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "read a.txt"},
        ]})]
    );
}

#[test]
fn an_anthropic_search_that_finds_nothing_says_so() {
    let searches = [SearchCall { call_id: "toolu_9".to_owned(), query: Ok(SearchQuery::words("spaceship")) }];
    let turn = Provider::Anthropic.render_turn_results(&registry(), Rendering::DEFAULT, &searches, &[]).unwrap();
    assert_eq!(
        turn[0]["content"][0]["content"],
        json!([{"type": "text", "text": "no tool matches; search again with other words"}])
    );
}

fn responses_response() -> Value {
    json!({
        "object": "response",
        "output": [
            {"type": "tool_search_call", "id": "ts_0", "call_id": null, "execution": "server", "status": "completed", "arguments": {"paths": ["mail"]}},
            {"type": "tool_search_call", "id": "ts_1", "call_id": "call_s1", "execution": "client", "status": "completed", "arguments": {"query": "archive a thread", "limit": 1}},
            {"type": "tool_search_call", "id": "ts_2", "call_id": "call_s2", "execution": "client", "status": "completed", "arguments": "{\"query\":\"^send\",\"mode\":\"regex\"}"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_f1", "name": "read_file", "arguments": "{\"path\":\"b.txt\"}"}
        ]
    })
}

#[test]
fn openai_search_calls_are_the_client_tool_search_calls_with_object_or_text_arguments() {
    let calls = Provider::OpenAiResponses.parse_search_calls(&responses_response()).unwrap();
    assert_eq!(
        calls,
        [
            SearchCall { call_id: "call_s1".to_owned(), query: Ok(SearchQuery::words("archive a thread").limit(1)) },
            SearchCall { call_id: "call_s2".to_owned(), query: Ok(SearchQuery::regex("^send")) },
        ]
    );
}

#[tokio::test]
async fn openai_answers_searches_with_tool_search_output_items_before_the_function_results() {
    let registry = registry();
    let searches = Provider::OpenAiResponses.parse_search_calls(&responses_response()).unwrap();
    let message =
        registry.call(&ToolCall::new("call_f1", "read_file", r#"{"path":"b.txt"}"#), &ToolContext::default()).await;
    let turn =
        Provider::OpenAiResponses.render_turn_results(&registry, Rendering::DEFAULT, &searches, &[message]).unwrap();
    let function = |name: &str| Provider::OpenAiResponses.render_tool(registry.definition(name).unwrap()).unwrap();
    assert_eq!(
        turn,
        [
            json!({"type": "tool_search_output", "call_id": "call_s1", "execution": "client", "status": "completed", "tools": [function("archive_email")]}),
            json!({"type": "tool_search_output", "call_id": "call_s2", "execution": "client", "status": "completed", "tools": [function("send_email")]}),
            json!({"type": "function_call_output", "call_id": "call_f1", "output": "read b.txt"}),
        ]
    );
}

#[test]
fn a_client_tool_search_call_without_a_call_id_is_an_error_naming_the_path() {
    let response =
        json!({"output": [{"type": "tool_search_call", "execution": "client", "arguments": {"query": "x"}}]});
    assert_eq!(
        Provider::OpenAiResponses.parse_search_calls(&response).unwrap_err(),
        ProviderError::Missing { path: "output[0].call_id".to_owned() }
    );
    let response =
        json!({"output": [{"type": "tool_search_call", "execution": "client", "call_id": "c", "arguments": 3}]});
    assert_eq!(
        Provider::OpenAiResponses.parse_search_calls(&response).unwrap_err().to_string(),
        "`output[0].arguments` is not an object"
    );
}

#[test]
fn chat_and_gemini_have_no_search_calls_of_their_own() {
    let chat = json!({"choices": [{"message": {"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search_tools", "arguments": "{\"query\":\"mail\"}"}}]}}]});
    assert_eq!(Provider::OpenAiChat.parse_search_calls(&chat).unwrap(), []);
    assert_eq!(Provider::OpenAiChat.parse_tool_calls(&chat).unwrap()[0].name, "search_tools");
}

#[tokio::test]
async fn gemini_gets_call_tools_arguments_as_json_text_and_call_tool_reads_that_text() {
    let tools = Provider::Gemini.render_tools(&meta_tool_definitions()[1..]).unwrap();
    let arguments = &tools[0]["functionDeclarations"][0]["parameters"]["properties"]["arguments"];
    assert_eq!(arguments["type"], "string");
    let response = json!({"candidates": [{"content": {"parts": [
        {"functionCall": {"name": "call_tool", "args": {"name": "send_email", "arguments": "{\"to\":\"a@b.c\"}"}}}
    ]}}]});
    let calls = Provider::Gemini.parse_tool_calls(&response).unwrap();
    let message = registry().call_with_search(&calls[0], &ToolContext::default()).await;
    assert_eq!(message.content, tool_runtime::MessageContent::Text("sent to a@b.c".to_owned()));
}
