//! Argument forms of `#[tool]`: borrowed arguments, optional ones, defaults, renames,
//! descriptions from every source, `#[input]` structs, and dependencies in any position.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::prelude::*;

async fn run(spec: &'static tool_runtime::ToolSpec, arguments: &str) -> ToolMessage {
    let registry = Registry::builder().tool(spec).build().unwrap();
    registry.call(&ToolCall::new("call_1", spec.name(), arguments), &ToolContext::new()).await
}

fn schema(spec: &'static tool_runtime::ToolSpec) -> Value {
    spec.definition().input_schema.clone()
}

/// Joins words.
#[tool]
fn join(
    /// The words.
    words: &[String],
    /// What goes between them.
    separator: &str,
) -> String {
    words.join(separator)
}

#[tokio::test]
async fn str_and_slice_arguments_are_decoded_owned_and_passed_borrowed() {
    assert_eq!(join(&["a".to_owned(), "b".to_owned()], "+"), "a+b");
    assert_eq!(run(join::TOOL, r#"{"words":["x","y","z"],"separator":", "}"#).await.text(), "x, y, z");
    assert_eq!(
        schema(join::TOOL),
        json!({
            "type": "object",
            "properties": {
                "words": {"description": "The words.", "type": "array", "items": {"type": "string"}},
                "separator": {"description": "What goes between them.", "type": "string"}
            },
            "required": ["words", "separator"],
            "additionalProperties": false
        })
    );
}

/// Repeats a text.
#[tool]
fn repeat(
    /// The text.
    text: String,
    /// How many times; default 1.
    times: Option<usize>,
    /// Put a newline between the copies.
    #[arg(default)]
    lines: bool,
    /// The prefix of every copy.
    #[arg(default = "> ")]
    prefix: String,
    /// At most this many characters.
    #[arg(default = 20)]
    limit: usize,
) -> String {
    let copies = vec![format!("{prefix}{text}"); times.unwrap_or(1)];
    let joined = copies.join(if lines { "\n" } else { "" });
    joined.chars().take(limit).collect()
}

#[tokio::test]
async fn option_and_default_arguments_take_their_value_when_absent() {
    assert_eq!(run(repeat::TOOL, r#"{"text":"hi"}"#).await.text(), "> hi");
}

#[tokio::test]
async fn option_and_default_arguments_take_their_value_when_null() {
    let message = run(repeat::TOOL, r#"{"text":"hi","times":null,"lines":null,"prefix":null,"limit":null}"#).await;
    assert_eq!(message.text(), "> hi");
}

#[tokio::test]
async fn option_and_default_arguments_take_the_value_sent() {
    let message = run(repeat::TOOL, r#"{"text":"hi","times":3,"lines":true,"prefix":"","limit":5}"#).await;
    assert_eq!(message.text(), "hi\nhi");
}

#[test]
fn option_and_default_arguments_are_not_required_and_defaults_show_their_value() {
    assert_eq!(
        schema(repeat::TOOL),
        json!({
            "type": "object",
            "properties": {
                "text": {"description": "The text.", "type": "string"},
                "times": {"description": "How many times; default 1.", "type": "integer", "minimum": 0},
                "lines": {"description": "Put a newline between the copies.", "type": "boolean", "default": false},
                "prefix": {"description": "The prefix of every copy.", "type": "string", "default": "> "},
                "limit": {"description": "At most this many characters.", "type": "integer", "minimum": 0, "default": 20}
            },
            "required": ["text"],
            "additionalProperties": false
        })
    );
}

/// Looks a user up.
#[tool]
fn lookup(
    /// Ignored: the option wins.
    #[arg(rename = "userId", description = "The user's numeric id.")]
    user_id: u64,
) -> String {
    format!("user {user_id}")
}

#[tokio::test]
async fn a_renamed_argument_is_sent_under_its_new_name() {
    assert_eq!(run(lookup::TOOL, r#"{"userId":7}"#).await.text(), "user 7");
}

#[tokio::test]
async fn a_renamed_argument_is_unknown_under_its_rust_name() {
    let message = run(lookup::TOOL, r#"{"user_id":7}"#).await;
    assert_eq!(message.text(), "invalid arguments for `lookup`: unknown field `user_id`; expected one of `userId`");
}

#[test]
fn the_description_option_of_an_argument_wins_over_its_doc_comment() {
    assert_eq!(
        schema(lookup::TOOL),
        json!({
            "type": "object",
            "properties": {"userId": {"description": "The user's numeric id.", "type": "integer", "minimum": 0}},
            "required": ["userId"],
            "additionalProperties": false
        })
    );
}

/// Moves a file.
///
/// Overwrites **nothing**.
///
/// # Arguments
///
/// * `from` - Where the file is now.
/// * `to` - Where it goes,
///   relative to the root.
///
/// # Errors
///
/// When `to` exists.
#[tool]
fn move_file(
    from: String,
    /// The parameter's own doc comment wins.
    to: String,
) -> String {
    format!("{from} -> {to}")
}

#[test]
fn an_arguments_section_describes_parameters_and_leaves_the_description() {
    let definition = move_file::TOOL.definition();
    assert_eq!(definition.description, "Moves a file.\n\nOverwrites **nothing**.\n\n# Errors\n\nWhen `to` exists.");
    assert_eq!(
        definition.input_schema,
        json!({
            "type": "object",
            "properties": {
                "from": {"description": "Where the file is now.", "type": "string"},
                "to": {"description": "The parameter's own doc comment wins.", "type": "string"}
            },
            "required": ["from", "to"],
            "additionalProperties": false
        })
    );
}

#[doc = include_str!("forms_description.md")]
#[tool]
fn find(
    /// The glob pattern.
    pattern: String,
) -> String {
    pattern
}

#[test]
fn an_included_doc_file_is_the_description_without_surrounding_blank_lines() {
    assert_eq!(
        find::TOOL.definition().description,
        "Find the files whose names match a glob pattern.\n\nPatterns use `**` for any number of directories."
    );
}

/// The query of a search.
#[derive(Debug, Deserialize, JsonSchema)]
struct SearchQuery {
    /// The words to look for.
    text: String,
    /// At most this many results.
    limit: Option<u32>,
}

/// The index searched.
#[derive(Clone)]
struct Index(Vec<&'static str>);

fn open_index(_: &ToolContext) -> Result<Index, DependencyError> {
    Ok(Index(vec!["alpha", "beta", "alphabet"]))
}

static INDEX: DependencyKey<Index> = DependencyKey::per_call("index", open_index);

fn open_suffix(_: &ToolContext) -> Result<String, DependencyError> {
    Ok("!".to_owned())
}

static SUFFIX: DependencyKey<String> = DependencyKey::per_call("suffix", open_suffix);

/// Searches the index.
#[tool]
async fn search(
    #[depends(INDEX)] index: Index,
    ctx: &ToolContext,
    #[input] query: SearchQuery,
    #[depends(SUFFIX)] suffix: String,
) -> String {
    let hits: Vec<&str> = index.0.into_iter().filter(|w| w.contains(&query.text)).collect();
    let limit = query.limit.map_or(hits.len(), |l| l as usize);
    format!("{}: {}{suffix}", ctx.call_id().unwrap_or("-"), hits[..limit.min(hits.len())].join(","))
}

#[test]
fn an_input_struct_gives_the_top_level_properties_without_its_own_description() {
    assert_eq!(
        schema(search::TOOL),
        json!({
            "type": "object",
            "properties": {
                "text": {"description": "The words to look for.", "type": "string"},
                "limit": {"description": "At most this many results.", "type": "integer", "minimum": 0}
            },
            "required": ["text"],
            "additionalProperties": false
        })
    );
}

#[tokio::test]
async fn an_input_struct_is_decoded_beside_dependencies_and_the_context() {
    assert_eq!(run(search::TOOL, r#"{"text":"alpha","limit":null}"#).await.text(), "call_1: alpha,alphabet!");
    assert_eq!(run(search::TOOL, r#"{"text":"alpha","limit":1}"#).await.text(), "call_1: alpha!");
}

#[tokio::test]
async fn an_input_struct_refuses_unknown_fields() {
    assert_eq!(
        run(search::TOOL, r#"{"text":"a","limt":1}"#).await.text(),
        "invalid arguments for `search`: unknown field `limt`; expected one of `limit`, `text`"
    );
}

#[tokio::test]
async fn a_tool_declared_inside_a_function_body_works() {
    /// Doubles a number.
    #[tool]
    fn double(
        /// The number.
        n: i32,
    ) -> String {
        (n * 2).to_string()
    }
    assert_eq!(double(4), "8");
    assert_eq!(run(double::TOOL, r#"{"n":21}"#).await.text(), "42");
}

/// Where the runtime is re-exported, as a framework built on it would do.
mod reexport {
    pub(crate) use tool_runtime as runtime;
}

/// Answers through a re-exported runtime.
#[tool(crate = crate::forms_arguments::reexport::runtime)]
fn through_reexport() -> &'static str {
    "re-exported"
}

#[tokio::test]
async fn the_crate_option_reaches_the_runtime_through_a_reexport() {
    assert_eq!(run(through_reexport::TOOL, "").await.text(), "re-exported");
}
