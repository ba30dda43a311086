//! Bounds stated once, with `#[arg(range(..), length(..), pattern = "..")]` on a parameter or
//! schemars' `#[schemars(range(..), length(..), regex(..))]` on an input struct's field, are in
//! the canonical schema and refused at decode with one error naming the field, the bound and the
//! value, on the fast path and on the full path alike.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tool_runtime::prelude::*;

/// Lists lines.
#[tool]
fn page(
    /// How many lines.
    #[arg(range(min = 1, max = 1000))]
    limit: u32,
    /// Where to start, 1-based.
    #[arg(default = 1, range(min = 1))]
    offset: u64,
    /// A scale factor.
    #[arg(range(min = -1.5, max = 2.5))]
    scale: Option<f64>,
    /// A name.
    #[arg(length(min = 1, max = 8), pattern = "^[a-z]+$")]
    name: Option<String>,
    /// Tags.
    #[arg(length(max = 2))]
    tags: Option<Vec<String>>,
) -> String {
    format!("{limit} {offset} {scale:?} {name:?} {tags:?}")
}

/// A filter.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Filter {
    /// Most results.
    #[schemars(range(min = 1, max = 50))]
    max: u32,
    /// A word.
    #[schemars(length(max = 4))]
    word: Option<String>,
}

/// A query.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Query {
    /// The code.
    #[schemars(regex(pattern = r"^[A-Z]{3}$"))]
    code: String,
    /// The filter.
    filter: Filter,
}

/// Finds things.
#[tool]
fn find(#[input] query: Query) -> String {
    format!("{query:?}")
}

async fn call(name: &str, arguments: &str) -> String {
    let registry = Registry::builder().tool(page::TOOL).tool(find::TOOL).build().unwrap();
    registry.call(&ToolCall::new("call_1", name, arguments), &ToolContext::new()).await.text().into_owned()
}

fn property(definition: &ToolDefinition, path: &str) -> serde_json::Value {
    definition.input_schema.pointer(path).cloned().unwrap()
}

#[test]
fn parameter_bounds_are_in_the_canonical_schema() {
    let definition = page::TOOL.definition();
    assert_eq!(
        property(definition, "/properties/limit"),
        json!({"type": "integer", "minimum": 1, "maximum": 1000, "description": "How many lines."})
    );
    assert_eq!(
        property(definition, "/properties/offset"),
        json!({"type": "integer", "minimum": 1, "default": 1, "description": "Where to start, 1-based."})
    );
    assert_eq!(
        property(definition, "/properties/scale"),
        json!({"type": "number", "minimum": -1.5, "maximum": 2.5, "description": "A scale factor."})
    );
    assert_eq!(
        property(definition, "/properties/name"),
        json!({"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z]+$", "description": "A name."})
    );
    assert_eq!(
        property(definition, "/properties/tags"),
        json!({"type": "array", "items": {"type": "string"}, "maxItems": 2, "description": "Tags."})
    );
}

#[test]
fn schemars_field_bounds_are_in_the_canonical_schema() {
    let definition = find::TOOL.definition();
    assert_eq!(property(definition, "/properties/code/pattern"), json!("^[A-Z]{3}$"));
    assert_eq!(property(definition, "/properties/filter/properties/max/minimum"), json!(1));
    assert_eq!(property(definition, "/properties/filter/properties/max/maximum"), json!(50));
    assert_eq!(property(definition, "/properties/filter/properties/word/maxLength"), json!(4));
}

#[tokio::test]
async fn values_on_the_bounds_are_taken() {
    assert_eq!(
        call("page", r#"{"limit":1000,"offset":1,"scale":-1.5,"name":"abcdefgh","tags":["a","b"]}"#).await,
        r#"1000 1 Some(-1.5) Some("abcdefgh") Some(["a", "b"])"#
    );
}

#[tokio::test]
async fn a_number_above_its_maximum_is_refused_with_the_bound_and_the_value() {
    assert_eq!(
        call("page", r#"{"limit":1001}"#).await,
        "invalid arguments for `page`: `limit`: must be at most 1000; got 1001"
    );
}

#[tokio::test]
async fn a_number_below_its_minimum_is_refused_with_the_bound_and_the_value() {
    assert_eq!(
        call("page", r#"{"limit":0}"#).await,
        "invalid arguments for `page`: `limit`: must be at least 1; got 0"
    );
}

#[tokio::test]
async fn a_float_outside_its_range_is_refused() {
    assert_eq!(
        call("page", r#"{"limit":5,"scale":2.75}"#).await,
        "invalid arguments for `page`: `scale`: must be at most 2.5; got 2.75"
    );
}

#[tokio::test]
async fn a_string_longer_than_its_length_is_refused() {
    assert_eq!(
        call("page", r#"{"limit":5,"name":"abcdefghi"}"#).await,
        "invalid arguments for `page`: `name`: must be at most 8 characters; got 9"
    );
}

#[tokio::test]
async fn a_string_outside_its_pattern_is_refused() {
    assert_eq!(
        call("page", r#"{"limit":5,"name":"Ab"}"#).await,
        "invalid arguments for `page`: `name`: must match the pattern `^[a-z]+$`; got \"Ab\""
    );
}

#[tokio::test]
async fn an_array_longer_than_its_length_is_refused() {
    assert_eq!(
        call("page", r#"{"limit":5,"tags":["a","b","c"]}"#).await,
        "invalid arguments for `page`: `tags`: must hold at most 2 items; got 3"
    );
}

#[tokio::test]
async fn a_bound_is_checked_when_the_full_path_decodes_a_null() {
    assert_eq!(
        call("page", r#"{"limit":2000,"name":null}"#).await,
        "invalid arguments for `page`: `limit`: must be at most 1000; got 2000"
    );
}

#[tokio::test]
async fn a_schemars_bound_of_a_nested_field_is_refused_with_its_path() {
    assert_eq!(
        call("find", r#"{"code":"ABC","filter":{"max":51}}"#).await,
        "invalid arguments for `find`: `filter.max`: must be at most 50; got 51"
    );
}

#[tokio::test]
async fn a_schemars_pattern_is_refused() {
    assert_eq!(
        call("find", r#"{"code":"abc","filter":{"max":5}}"#).await,
        "invalid arguments for `find`: `code`: must match the pattern `^[A-Z]{3}$`; got \"abc\""
    );
}

#[tokio::test]
async fn schemars_bounds_take_values_inside_them() {
    assert_eq!(
        call("find", r#"{"code":"ABC","filter":{"max":50,"word":"abcd"}}"#).await,
        r#"Query { code: "ABC", filter: Filter { max: 50, word: Some("abcd") } }"#
    );
}

#[tokio::test]
async fn a_value_out_of_bounds_is_told_with_the_wrong_values_and_missing_fields_beside_it() {
    assert_eq!(
        call("page", r#"{"limit":5000,"name":5,"scale":9}"#).await,
        "invalid arguments for `page`: `limit`: must be at most 1000; got 5000\n\
         also: `scale`: must be at most 2.5; got 9\n\
         also: `name`: invalid type: integer `5`, expected a string"
    );
    assert_eq!(
        call("page", r#"{"limit":0,"tags":[1]}"#).await,
        "invalid arguments for `page`: `limit`: must be at least 1; got 0\n\
         also: `tags[0]`: invalid type: integer `1`, expected a string"
    );
}
