//! Tool search over the generated 1,000-tool registry (`fixtures/tool-search/words.txt`): the 50
//! written queries, the size of the first request, and every deferred tool called by name.

use crate::corpus;

use serde_json::Value;
use tool_runtime::provider::{Deferral, Provider, Rendering};
use tool_runtime::search::{CALL_TOOL, SearchQuery, meta_tool_definitions};
use tool_runtime::{MessageContent, Registry, ToolCall, ToolContext};

/// The set left loaded in the first request; every other set is deferred.
const LOADED_SET: &str = "invoice";

fn deferred_registry() -> Registry {
    let deferred: Vec<String> = corpus::sets().into_iter().filter(|s| s != LOADED_SET).collect();
    corpus::builder().defer_sets(deferred).build().unwrap()
}

#[test]
fn the_generated_registry_has_1000_tools_and_50_queries() {
    assert_eq!(deferred_registry().len(), 1000);
    assert_eq!(corpus::queries().len(), 50);
}

#[test]
fn the_intended_tool_is_in_the_top_three_for_at_least_45_of_the_50_queries() {
    let registry = deferred_registry();
    let mut misses = Vec::new();
    for (intended, query) in corpus::queries() {
        let hits = registry.search(&SearchQuery::words(&query).limit(3)).unwrap();
        let names: Vec<&str> = hits.iter().map(|h| h.name.as_str()).collect();
        if !names.contains(&intended.as_str()) {
            misses.push(format!("{query:?}: wanted {intended}, got {names:?}"));
        }
    }
    eprintln!("{} of 50 queries missed their tool in the top 3:\n{}", misses.len(), misses.join("\n"));
    assert!(misses.len() <= 5, "{} misses:\n{}", misses.len(), misses.join("\n"));
}

/// The bytes of a `tools` array as sent (compact JSON).
fn bytes(tools: &[Value]) -> usize {
    serde_json::to_string(tools).unwrap().len()
}

#[test]
fn the_first_request_without_provider_search_is_at_most_5_percent_of_the_full_list() {
    let registry = deferred_registry();
    let deferred = |name: &str| registry.is_deferred(name);
    for provider in [Provider::OpenAiChat, Provider::Gemini] {
        let full = bytes(&provider.render_tools(registry.definitions()).unwrap());
        let first = provider
            .render_deferred_tools(registry.definitions(), deferred, Rendering::DEFAULT, &Deferral::default())
            .unwrap();
        let first = bytes(&first);
        eprintln!("{provider}: first request {first} bytes of {full} ({:.2}%)", 100.0 * first as f64 / full as f64);
        assert!(first * 20 <= full, "{provider}: {first} bytes is more than 5% of {full}");
    }
}

#[test]
fn the_first_mcp_list_is_at_most_5_percent_of_the_full_list_and_holds_the_loaded_set_and_the_meta_tools() {
    let registry = deferred_registry();
    let entries = |definitions: Vec<&tool_runtime::ToolDefinition>| -> Vec<Value> {
        definitions.into_iter().map(|d| d.mcp_entry().unwrap()).collect()
    };
    let full = entries(registry.definitions().iter().collect());
    let first = entries(registry.loaded_definitions().chain(meta_tool_definitions()).collect());
    assert_eq!(first.len(), 25 + 2);
    assert!(bytes(&first) * 20 <= bytes(&full), "{} bytes is more than 5% of {}", bytes(&first), bytes(&full));
}

fn text(message: &tool_runtime::ToolMessage) -> &str {
    match &message.content {
        MessageContent::Text(text) => text,
        MessageContent::Parts(_) => panic!("a text message, got {message:?}"),
    }
}

/// Arguments every generated tool accepts: its required properties, each with a value of its type.
fn arguments(definition: &tool_runtime::ToolDefinition) -> Value {
    let schema = &definition.input_schema;
    let mut arguments = serde_json::Map::new();
    for name in schema["required"].as_array().unwrap() {
        let name = name.as_str().unwrap();
        let value = match schema["properties"][name]["type"].as_str().unwrap() {
            "integer" => Value::from(7),
            "boolean" => Value::Bool(true),
            "array" => serde_json::json!(["x"]),
            _ => Value::from("x-1"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}

#[tokio::test]
async fn every_deferred_tool_is_callable_by_its_name_and_through_call_tool() {
    let registry = deferred_registry();
    let ctx = ToolContext::default();
    let mut called = 0;
    for definition in registry.deferred_definitions() {
        let arguments = arguments(definition);
        let direct = registry.call(&ToolCall::new("c1", &definition.name, arguments.to_string()), &ctx).await;
        let expected = format!("{} ran with {arguments}", definition.name);
        assert!(!direct.is_error, "{}: {}", definition.name, text(&direct));
        assert_eq!(text(&direct), expected);
        let meta_arguments = serde_json::json!({"name": definition.name, "arguments": arguments});
        let through =
            registry.call_with_search(&ToolCall::new("c2", CALL_TOOL, meta_arguments.to_string()), &ctx).await;
        assert_eq!(text(&through), expected);
        assert_eq!(through.tool_name, CALL_TOOL);
        called += 1;
    }
    assert_eq!(called, 975);
}
