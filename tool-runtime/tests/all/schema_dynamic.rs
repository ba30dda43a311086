//! Tools defined at run time: a JSON Schema and a handler closure, validated with the
//! `jsonschema` crate in the error style of `#[tool]`.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::{DynamicTool, DynamicToolError};

use crate::forms;

use forms::{Entry, FORMS};

fn schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "CreateUser",
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$", "description": "Lowercase login."},
            "age": {"type": "integer", "minimum": 0, "format": "uint8"},
            "role": {"type": "string", "enum": ["admin", "user"], "default": "user"},
            "address": {
                "type": "object",
                "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                "required": ["zip"],
            },
        },
        "required": ["name"],
    })
}

fn create_user() -> DynamicTool {
    DynamicTool::new("create_user", "Creates a user.", schema(), |arguments, _ctx| async move {
        Ok(ToolResult::Text(format!("created {arguments}")))
    })
    .unwrap()
}

async fn call(arguments: &str) -> ToolMessage {
    let registry = Registry::builder().tool_dyn(Arc::new(create_user())).build().unwrap();
    registry.call(&ToolCall::new("c", "create_user", arguments), &ToolContext::new()).await
}

#[tokio::test]
async fn valid_arguments_reach_the_handler_with_optional_nulls_removed() {
    let message = call(r#"{"name":"ann","age":30,"role":null}"#).await;
    assert!(!message.is_error);
    assert_eq!(message.text(), r#"created {"age":30,"name":"ann"}"#);
}

#[tokio::test]
async fn a_violated_max_length_names_the_path() {
    let message = call(r#"{"name":"abcdefghij"}"#).await;
    assert_eq!(message.text(), r#"invalid arguments for `create_user`: `name`: must be at most 8 characters; got 10"#);
}

#[tokio::test]
async fn a_violated_pattern_names_the_path() {
    let message = call(r#"{"name":"Ann"}"#).await;
    assert_eq!(
        message.text(),
        r#"invalid arguments for `create_user`: `name`: must match the pattern `^[a-z]+$`; got "Ann""#
    );
}

#[tokio::test]
async fn a_violated_minimum_names_the_path() {
    let message = call(r#"{"name":"ann","age":-1}"#).await;
    assert_eq!(message.text(), "invalid arguments for `create_user`: `age`: must be at least 0; got -1");
}

#[tokio::test]
async fn a_violated_enum_names_the_path() {
    let message = call(r#"{"name":"ann","role":"root"}"#).await;
    assert_eq!(
        message.text(),
        r#"invalid arguments for `create_user`: `role`: "root" is not one of "admin" or "user""#
    );
}

#[tokio::test]
async fn a_nested_violation_names_the_nested_path() {
    let message = call(r#"{"name":"ann","address":{"zip":"12"}}"#).await;
    assert_eq!(
        message.text(),
        r#"invalid arguments for `create_user`: `address.zip`: must match the pattern `^[0-9]{5}$`; got "12""#
    );
}

#[tokio::test]
async fn a_missing_nested_field_is_named_like_a_tool_argument() {
    let message = call(r#"{"name":"ann","address":{}}"#).await;
    assert_eq!(message.text(), "invalid arguments for `create_user`: missing field `address.zip`");
}

#[tokio::test]
async fn an_unknown_field_lists_the_accepted_ones() {
    let message = call(r#"{"name":"ann","nick":"a"}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `create_user`: unknown field `nick`; expected one of `address`, `age`, `name`, `role`"
    );
}

#[tokio::test]
async fn several_violations_are_all_listed() {
    let message = call(r#"{"name":"Ann","age":-1}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `create_user`: `age`: must be at least 0; got -1\nalso: `name`: must match the pattern `^[a-z]+$`; got \"Ann\""
    );
}

#[tokio::test]
async fn trailing_text_is_refused_as_for_typed_tools() {
    let message = call(r#"{"name":"ann"} x"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `create_user`: not valid JSON: trailing characters at line 1 column 16; send one JSON object"
    );
}

#[test]
fn the_definition_goes_through_the_canonical_passes() {
    let tool = create_user();
    assert_eq!(
        tool.definition().input_schema,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$", "description": "Lowercase login."},
                "age": {"type": "integer", "minimum": 0},
                "role": {"type": "string", "enum": ["admin", "user"], "default": "user"},
                "address": {
                    "type": "object",
                    "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                    "required": ["zip"],
                    "additionalProperties": false,
                },
            },
            "required": ["name"],
            "additionalProperties": false,
        })
    );
}

#[test]
fn the_definition_projects_for_every_target() {
    let tool = create_user().with_tags(["destructive"]);
    for target in FORMS {
        let entry = tool.definition().entry(target).unwrap();
        assert!(entry.to_string().contains("Lowercase login."), "{target}: {entry}");
    }
    assert_eq!(
        tool.definition().entry("mcp").unwrap()["annotations"],
        json!({"destructiveHint": true, "openWorldHint": false})
    );
}

#[test]
fn a_schema_that_does_not_compile_is_refused_with_the_tool_name() {
    let error =
        DynamicTool::new("bad", "Bad.", json!({"type":"object","properties":{"a":{"type":"strang"}}}), |_, _| async {
            Ok(ToolResult::Text(String::new()))
        })
        .unwrap_err();
    assert!(matches!(&error, DynamicToolError::InvalidSchema { tool, .. } if tool == "bad"), "{error}");
    assert!(error.to_string().starts_with("the input schema of `bad` is not a valid JSON Schema: "), "{error}");
}

#[test]
fn a_schema_that_is_not_an_object_is_refused() {
    let error =
        DynamicTool::new("bad", "Bad.", json!({"type":"string"}), |_, _| async { Ok(ToolResult::Text(String::new())) })
            .unwrap_err();
    assert_eq!(error.to_string(), "the input schema of `bad` must be a JSON object schema with `\"type\": \"object\"`");
}

#[test]
fn a_name_outside_the_provider_intersection_is_refused() {
    let error = DynamicTool::new("get weather", "Bad.", json!({"type":"object"}), |_, _| async {
        Ok(ToolResult::Text(String::new()))
    })
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool name `get weather` is not accepted by every provider; use `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`"
    );
}
