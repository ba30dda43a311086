//! A union tool (an internally tagged enum as the whole input) under OpenAI strict mode: the
//! hoisted schema lists every variant's fields, strict mode makes each nullable and required, and
//! the model sends `null` for the fields of the variants it did not choose. Those decode as
//! absent; a value for another variant's field is still refused.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::provider::{Provider, Rendering, Strict};

/// A file operation.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
enum FileAction {
    /// Read a file.
    Read {
        /// The file.
        path: String,
    },
    /// Write a file.
    Write {
        /// The file.
        path: String,
        /// The new content.
        content: String,
        /// Make the parent directories.
        parents: Option<bool>,
    },
}

/// Reads or writes a file.
#[tool]
fn file(#[input] action: FileAction) -> String {
    format!("{action:?}")
}

async fn call(arguments: &str) -> String {
    let registry = Registry::builder().tool(file::TOOL).build().unwrap();
    registry.call(&ToolCall::new("call_1", "file", arguments), &ToolContext::new()).await.text().into_owned()
}

#[test]
fn strict_mode_makes_every_variants_field_required_and_nullable() {
    let entry = Provider::OpenAiChat
        .render_tool_with(file::TOOL.definition(), Rendering::DEFAULT.strict(Strict::WherePossible))
        .unwrap();
    assert_eq!(entry["function"]["strict"], json!(true));
    assert_eq!(entry["function"]["parameters"]["required"], json!(["action", "content", "parents", "path"]));
    assert_eq!(entry["function"]["parameters"]["properties"]["content"]["type"], json!(["string", "null"]));
}

#[tokio::test]
async fn null_for_the_fields_of_another_variant_decodes_as_absent() {
    assert_eq!(call(r#"{"action":"read","path":"a","content":null,"parents":null}"#).await, r#"Read { path: "a" }"#);
}

#[tokio::test]
async fn null_for_an_optional_field_of_the_chosen_variant_decodes_as_none() {
    assert_eq!(
        call(r#"{"action":"write","path":"a","content":"x","parents":null}"#).await,
        r#"Write { path: "a", content: "x", parents: None }"#
    );
}

#[tokio::test]
async fn a_value_for_another_variants_field_is_still_refused() {
    assert_eq!(
        call(r#"{"action":"read","path":"a","content":"x"}"#).await,
        "invalid arguments for `file`: `content`: unknown field for `action` = `read`; `read` accepts `action`, `path`"
    );
}

#[tokio::test]
async fn null_for_a_required_field_of_the_chosen_variant_is_still_refused() {
    assert_eq!(
        call(r#"{"action":"write","path":"a","content":null}"#).await,
        "invalid arguments for `file`: `content`: invalid type: null, expected a string"
    );
}
