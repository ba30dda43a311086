//! The canonical JSON Schema of a tool's arguments.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::schema::{arguments_schema, canonicalize};

fn schema_of(spec: &'static tool_runtime::ToolSpec) -> serde_json::Value {
    spec.definition().input_schema.clone()
}

/// Takes nothing.
#[tool]
fn ping() -> &'static str {
    "pong"
}

#[test]
fn a_tool_without_arguments_has_an_empty_closed_object() {
    assert_eq!(schema_of(ping::TOOL), json!({"type":"object","properties":{},"additionalProperties":false}));
}

/// A page of results.
#[derive(Deserialize, JsonSchema)]
pub struct Page {
    /// 0-based page number.
    page: usize,
    /// Rows on the page.
    size: Option<u8>,
    /// Half-open byte range.
    span: std::ops::Range<u64>,
}

/// Lists pages.
#[tool]
fn list(
    /// Which page.
    page: Page,
    /// A label.
    label: Option<String>,
    /// How many, signed.
    delta: i32,
) -> String {
    let _ = (page.page, page.size, page.span, label, delta);
    String::new()
}

#[test]
fn the_canonical_schema_has_no_noise_and_marks_every_struct_closed() {
    assert_eq!(
        schema_of(list::TOOL),
        json!({
            "type": "object",
            "properties": {
                "page": {
                    "description": "Which page.",
                    "type": "object",
                    "properties": {
                        "page": {"description": "0-based page number.", "type": "integer", "minimum": 0},
                        "size": {"description": "Rows on the page.", "type": "integer", "minimum": 0, "maximum": 255},
                        "span": {
                            "description": "Half-open byte range.",
                            "type": "object",
                            "properties": {
                                "start": {"type": "integer", "minimum": 0},
                                "end": {"type": "integer", "minimum": 0}
                            },
                            "required": ["start", "end"],
                            "additionalProperties": false
                        }
                    },
                    "required": ["page", "span"],
                    "additionalProperties": false
                },
                "label": {"description": "A label.", "type": "string"},
                "delta": {"description": "How many, signed.", "type": "integer"}
            },
            "required": ["page", "delta"],
            "additionalProperties": false
        })
    );
}

#[test]
fn no_schema_keyword_title_or_rust_format_appears_at_any_depth() {
    let text = schema_of(list::TOOL).to_string();
    for noise in ["$schema", "\"title\"", "uint", "int32", "int64", "\"format\""] {
        assert!(!text.contains(noise), "{noise} in {text}");
    }
}

/// A query with a property literally named `format`.
#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
pub struct Export {
    /// The output format.
    format: String,
    /// When.
    at: Option<String>,
}

#[test]
fn a_property_named_format_is_kept() {
    let schema = arguments_schema::<Export>();
    assert_eq!(schema["properties"]["format"], json!({"description": "The output format.", "type": "string"}));
}

/// Two styles.
#[derive(Deserialize, JsonSchema)]
pub enum Style {
    /// Short lines.
    Terse,
    /// Long lines.
    Verbose,
}

/// Prints.
#[tool]
fn print(
    /// How to print.
    style: Option<Style>,
) -> String {
    String::new() + if matches!(style, Some(Style::Terse)) { "t" } else { "v" }
}

#[test]
fn a_unit_enum_is_a_string_enum_with_variant_docs_in_the_description() {
    assert_eq!(
        schema_of(print::TOOL)["properties"]["style"],
        json!({
            "type": "string",
            "enum": ["Terse", "Verbose"],
            "description": "How to print.\n- Terse: Short lines.\n- Verbose: Long lines."
        })
    );
}

#[test]
fn optional_fields_lose_their_null_branch_but_required_ones_keep_theirs() {
    let raw = json!({
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"anyOf": [{"type": "object", "properties": {}}, {"type": "null"}], "description": "B."},
            "c": {"type": ["string", "null"]}
        },
        "required": ["c"]
    });
    assert_eq!(
        canonicalize(raw),
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "object", "properties": {}, "additionalProperties": false, "description": "B."},
                "c": {"type": ["string", "null"]}
            },
            "required": ["c"],
            "additionalProperties": false
        })
    );
}

#[test]
fn maps_keep_their_value_schema() {
    let schema = arguments_schema::<MapArgs>();
    assert_eq!(
        schema["properties"]["env"],
        json!({"type": "object", "additionalProperties": {"type": "string"}, "description": "Variables."})
    );
}

/// Arguments with a map.
#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
pub struct MapArgs {
    /// Variables.
    env: std::collections::BTreeMap<String, String>,
}

/// A tree.
#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
pub struct Node {
    /// The name.
    name: String,
    /// The children.
    children: Vec<Node>,
}

#[test]
fn recursive_types_keep_a_local_reference() {
    let schema = arguments_schema::<Node>();
    assert_eq!(schema["properties"]["children"]["items"], json!({"$ref": "#"}));
}
