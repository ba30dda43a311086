//! `Registry::search` (BM25 and regex), deferral on the registry, and the two meta-tools.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::search::{CALL_TOOL, SEARCH_TOOL, SearchError, SearchQuery};
use tool_runtime::{DynamicTool, MessageContent, RegistryError, ToolMessage};

/// Read a UTF-8 file from the workspace.
#[tool(set = "fs")]
fn read_file(
    /// The path, relative to the workspace.
    path: String,
) -> String {
    format!("read {path}")
}

/// Send an email to a recipient.
#[tool(defer, set = "mail")]
fn send_email(
    /// The address to write to.
    to: String,
) -> String {
    format!("sent to {to}")
}

/// A tool with `description` and one string property `property` described by `about`.
fn dynamic(name: &str, description: &str, property: &str, about: &str) -> Arc<dyn Tool> {
    let schema = json!({"type": "object", "properties": {property: {"type": "string", "description": about}}});
    let answer = format!("{name} ran");
    Arc::new(
        DynamicTool::new(name, description, schema, move |_, _| {
            let answer = answer.clone();
            async move { Ok(ToolResult::Text(answer)) }
        })
        .unwrap()
        .with_set("misc"),
    )
}

fn registry() -> Registry {
    Registry::builder()
        .tool(read_file::TOOL)
        .tool(send_email::TOOL)
        .tool_dyn(dynamic("weather_now", "Current conditions for a city.", "city", "The city name."))
        .tool_dyn(dynamic(
            "convert_units",
            "Convert a quantity between units.",
            "quantity",
            "Kelvin or celsius temperature.",
        ))
        .build()
        .unwrap()
}

fn names(hits: &[tool_runtime::search::SearchHit]) -> Vec<&str> {
    hits.iter().map(|h| h.name.as_str()).collect()
}

#[test]
fn bm25_ranks_a_tool_named_by_the_query_first() {
    let hits = registry().search(&SearchQuery::words("read a file")).unwrap();
    assert_eq!(names(&hits), ["read_file"]);
}

#[test]
fn bm25_finds_a_tool_by_a_parameter_description_alone() {
    let hits = registry().search(&SearchQuery::words("celsius")).unwrap();
    assert_eq!(names(&hits), ["convert_units"]);
}

#[test]
fn bm25_finds_a_tool_by_a_parameter_name_and_a_plural() {
    let hits = registry().search(&SearchQuery::words("cities")).unwrap();
    assert_eq!(names(&hits), ["weather_now"]);
}

#[test]
fn tools_with_equal_scores_come_in_name_order() {
    let registry = Registry::builder()
        .tool_dyn(dynamic("zeta", "Count sheep.", "n", "How many."))
        .tool_dyn(dynamic("alpha", "Count sheep.", "n", "How many."))
        .build()
        .unwrap();
    let hits = registry.search(&SearchQuery::words("sheep")).unwrap();
    assert_eq!(names(&hits), ["alpha", "zeta"]);
    assert_eq!(hits[0].score, hits[1].score);
}

#[test]
fn the_limit_caps_the_results_best_first() {
    let hits = registry().search(&SearchQuery::regex("(?i)the|a").limit(2)).unwrap();
    assert_eq!(hits.len(), 2);
    assert!(hits[0].score >= hits[1].score);
}

#[test]
fn a_query_that_matches_nothing_gives_no_results() {
    assert_eq!(registry().search(&SearchQuery::words("spaceship")).unwrap(), []);
}

#[test]
fn a_limit_of_zero_or_over_fifty_is_refused() {
    let error = registry().search(&SearchQuery::words("file").limit(0)).unwrap_err();
    assert_eq!(error.to_string(), "`limit` is 0; give a limit from 1 to 50");
    let error = registry().search(&SearchQuery::words("file").limit(51)).unwrap_err();
    assert_eq!(error, SearchError::BadLimit { limit: 51, max: 50 });
}

#[test]
fn a_query_of_stop_words_only_is_refused() {
    let error = registry().search(&SearchQuery::words("the of a")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the query `the of a` has no words to search for; give words that say what the tool does"
    );
}

#[test]
fn a_query_over_1000_characters_is_refused() {
    let error = registry().search(&SearchQuery::words("x".repeat(1001))).unwrap_err();
    assert_eq!(error.to_string(), "the query is 1001 characters long; give at most 1000 characters");
}

#[test]
fn regex_searches_names_descriptions_and_parameters_case_sensitively() {
    let registry = registry();
    assert_eq!(names(&registry.search(&SearchQuery::regex("^send_")).unwrap()), ["send_email"]);
    assert_eq!(names(&registry.search(&SearchQuery::regex("Kelvin")).unwrap()), ["convert_units"]);
    assert_eq!(registry.search(&SearchQuery::regex("kelvin")).unwrap(), []);
    assert_eq!(names(&registry.search(&SearchQuery::regex("(?i)kelvin")).unwrap()), ["convert_units"]);
}

#[test]
fn a_regex_name_match_outscores_a_description_match() {
    let registry = Registry::builder()
        .tool_dyn(dynamic("mail_a", "Nothing here.", "x", "Nothing."))
        .tool_dyn(dynamic("other", "Writes mail.", "x", "Nothing."))
        .build()
        .unwrap();
    let hits = registry.search(&SearchQuery::regex("mail")).unwrap();
    assert_eq!(names(&hits), ["mail_a", "other"]);
    assert_eq!((hits[0].score, hits[1].score), (3.0, 1.0));
}

#[test]
fn a_pattern_of_200_characters_is_accepted_and_201_is_refused() {
    let registry = registry();
    assert!(registry.search(&SearchQuery::regex("a".repeat(200))).is_ok());
    let error = registry.search(&SearchQuery::regex("a".repeat(201))).unwrap_err();
    assert_eq!(error.to_string(), "the pattern is 201 characters long; give a pattern of at most 200 characters");
}

#[test]
fn an_invalid_or_empty_pattern_is_refused() {
    let registry = registry();
    let error = registry.search(&SearchQuery::regex("read(")).unwrap_err();
    assert!(matches!(&error, SearchError::InvalidPattern { pattern, .. } if pattern == "read("), "{error:?}");
    assert!(error.to_string().starts_with("the pattern `read(` is not a valid regular expression: "), "{error}");
    assert_eq!(registry.search(&SearchQuery::regex("")).unwrap_err(), SearchError::EmptyQuery { query: String::new() });
}

#[test]
fn deferred_only_leaves_out_the_tools_that_are_listed() {
    let registry = registry();
    let all = registry.search(&SearchQuery::regex("(?i)e")).unwrap();
    let deferred = registry.search(&SearchQuery::regex("(?i)e").deferred_only(true)).unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(names(&deferred), ["send_email"]);
}

#[test]
fn the_defer_option_defers_a_tool_and_the_builder_defers_by_set_and_name() {
    let registry = registry();
    assert!(registry.is_deferred("send_email"));
    assert!(!registry.is_deferred("read_file"));
    let registry = Registry::builder()
        .tool(read_file::TOOL)
        .tool_dyn(dynamic("weather_now", "Now.", "city", "City."))
        .tool_dyn(dynamic("plain", "Plain.", "x", "X."))
        .defer_sets(["fs"])
        .defer_tools(["weather_now"])
        .build()
        .unwrap();
    let deferred: Vec<&str> = registry.deferred_definitions().map(|d| d.name.as_str()).collect();
    let loaded: Vec<&str> = registry.loaded_definitions().map(|d| d.name.as_str()).collect();
    assert_eq!((deferred, loaded), (vec!["read_file", "weather_now"], vec!["plain"]));
}

#[test]
fn deferring_an_unknown_name_or_set_is_an_error_naming_them_and_the_sets_there_are() {
    let error =
        Registry::builder().tool(read_file::TOOL).defer_tools(["raed_file"]).defer_sets(["web"]).build().unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot defer: no tool is named `raed_file`; no tool is in the set `web` (the sets: `fs`); give the names and sets of registered tools"
    );
}

#[test]
fn a_tool_named_like_a_meta_tool_is_refused_when_tools_are_deferred() {
    let error = Registry::builder()
        .tool(send_email::TOOL)
        .tool_dyn(dynamic("search_tools", "Mine.", "x", "X."))
        .build()
        .unwrap_err();
    assert!(matches!(&error, RegistryError::ReservedNames { names } if names == &["search_tools"]));
    assert_eq!(
        error.to_string(),
        "the tool `search_tools` is named like a tool-search meta-tool (`search_tools`, `call_tool`) while tools are deferred; rename it"
    );
    // Without deferred tools the name is free.
    assert!(Registry::builder().tool_dyn(dynamic("search_tools", "Mine.", "x", "X.")).build().is_ok());
}

fn text(message: &ToolMessage) -> &str {
    match &message.content {
        MessageContent::Text(text) => text,
        MessageContent::Parts(_) => panic!("a text message, got {message:?}"),
    }
}

#[tokio::test]
async fn a_deferred_tool_runs_exactly_as_when_it_is_not_deferred() {
    let deferred = registry();
    let plain = Registry::builder().tool(send_email::TOOL).tool(read_file::TOOL).build().unwrap();
    let ctx = ToolContext::default();
    for arguments in [r#"{"to":"ana@example.com"}"#, r#"{"to":"ana@example.com","cc":1}"#, "{}"] {
        let call = ToolCall::new("c1", "send_email", arguments);
        assert_eq!(deferred.call(&call, &ctx).await, plain.call(&call, &ctx).await, "{arguments}");
    }
}

#[tokio::test]
async fn search_tools_answers_the_mcp_entries_of_the_deferred_tools_found() {
    let registry = registry();
    let call = ToolCall::new("c1", SEARCH_TOOL, r#"{"query":"email someone","limit":3}"#);
    let message = registry.call_with_search(&call, &ToolContext::default()).await;
    assert!(!message.is_error, "{message:?}");
    let answer: Value = serde_json::from_str(text(&message)).unwrap();
    assert_eq!(answer, json!({"tools": [registry.definition("send_email").unwrap().mcp_entry().unwrap()]}));
}

#[tokio::test]
async fn search_tools_with_bad_arguments_says_what_to_change() {
    let registry = registry();
    let ctx = ToolContext::default();
    let cases = [
        (
            r#"{"qurey":"mail"}"#,
            "invalid arguments for `search_tools`: unknown field `qurey`, expected one of `query`, `mode`, `limit`",
        ),
        (
            r#"{"query":"mail","mode":"fuzzy"}"#,
            "invalid arguments for `search_tools`: unknown variant `fuzzy`, expected `bm25` or `regex`",
        ),
        (
            r#"{"query":"x","mode":"regex","limit":0}"#,
            "invalid arguments for `search_tools`: `limit` is 0; give a limit from 1 to 50",
        ),
        ("{}", "invalid arguments for `search_tools`: missing field `query`"),
    ];
    for (arguments, expected) in cases {
        let message = registry.call_with_search(&ToolCall::new("c1", SEARCH_TOOL, arguments), &ctx).await;
        assert!(message.is_error, "{arguments}");
        assert_eq!(text(&message), expected, "{arguments}");
    }
}

#[tokio::test]
async fn call_tool_applies_the_named_tools_strict_decoding() {
    let registry = registry();
    let ctx = ToolContext::default();
    let direct = registry.call(&ToolCall::new("c1", "send_email", r#"{"to":"a@b.c","cc":1}"#), &ctx).await;
    let through = registry
        .call_with_search(
            &ToolCall::new("c1", CALL_TOOL, r#"{"name":"send_email","arguments":{"to":"a@b.c","cc":1}}"#),
            &ctx,
        )
        .await;
    assert!(through.is_error);
    assert_eq!(text(&through), text(&direct));
    let ok = registry
        .call_with_search(&ToolCall::new("c2", CALL_TOOL, r#"{"name":"send_email","arguments":{"to":"a@b.c"}}"#), &ctx)
        .await;
    assert_eq!((text(&ok), ok.tool_name.as_str(), ok.tool_call_id.as_str()), ("sent to a@b.c", CALL_TOOL, "c2"));
}

#[tokio::test]
async fn call_tool_refuses_unknown_tools_meta_tools_and_arguments_that_are_not_an_object() {
    let registry = registry();
    let ctx = ToolContext::default();
    let cases = [
        (
            r#"{"name":"nope"}"#,
            "unknown tool `nope`; available tools: convert_units, read_file, send_email, weather_now",
        ),
        (
            r#"{"name":"search_tools","arguments":{"query":"x"}}"#,
            "invalid arguments for `call_tool`: `search_tools` is a meta-tool; call it directly, not through `call_tool`",
        ),
        (
            r#"{"name":"send_email","arguments":[1]}"#,
            "invalid arguments for `call_tool`: `arguments` must be an object of the tool's arguments, not `[1]`",
        ),
        (
            r#"{"tool":"send_email"}"#,
            "invalid arguments for `call_tool`: unknown field `tool`, expected `name` or `arguments`",
        ),
    ];
    for (arguments, expected) in cases {
        let message = registry.call_with_search(&ToolCall::new("c1", CALL_TOOL, arguments), &ctx).await;
        assert!(message.is_error, "{arguments}");
        assert_eq!(text(&message), expected, "{arguments}");
    }
}
