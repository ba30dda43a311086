//! The canonical schema rules with the exact examples they are specified by.

// Most types here only describe schemas; their fields are never read.
#![allow(dead_code)]

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::schema::{arguments_schema, decoding_schema};
use tool_runtime::{ArgumentError, ToolDefinition};

use crate::forms;

use forms::{Entry, FORMS};

#[derive(Deserialize, JsonSchema)]
struct A {
    q: String,
    #[serde(default, skip_serializing)]
    limit: u32,
}

#[test]
fn a_serde_default_field_is_not_required_and_carries_no_write_only_noise() {
    assert_eq!(
        arguments_schema::<A>(),
        json!({
            "type": "object",
            "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "minimum": 0}},
            "required": ["q"],
            "additionalProperties": false,
        })
    );
}

#[derive(Deserialize, JsonSchema)]
struct P {
    page: usize,
    span: std::ops::Range<usize>,
}

fn formats(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if key == "format"
                    && let Value::String(format) = child
                {
                    found.push(format.clone());
                }
                formats(child, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| formats(i, found)),
        _ => {}
    }
}

#[test]
fn unsigned_integers_have_minimum_zero_and_no_uint_format_at_any_depth() {
    let schema = arguments_schema::<P>();
    let mut found = Vec::new();
    formats(&schema, &mut found);
    assert_eq!(found, Vec::<String>::new());
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "page": {"type": "integer", "minimum": 0},
                "span": {
                    "type": "object",
                    "properties": {"start": {"type": "integer", "minimum": 0}, "end": {"type": "integer", "minimum": 0}},
                    "required": ["start", "end"],
                    "additionalProperties": false,
                },
            },
            "required": ["page", "span"],
            "additionalProperties": false,
        })
    );
}

/// The root's own doc.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "op")]
enum Args {
    /// Read a file.
    Read {
        /// The file to read.
        path: String,
    },
    /// Write a file.
    Write {
        /// The file to write.
        path: String,
        /// The new content.
        content: String,
    },
}

#[test]
fn a_union_root_is_hoisted_into_one_object_with_the_tag_as_a_string_enum() {
    assert_eq!(
        arguments_schema::<Args>(),
        json!({
            "type": "object",
            "properties": {
                "op": {
                    "type": "string",
                    "enum": ["Read", "Write"],
                    "description": "The action: one of Read, Write.\n- Read: Read a file.\n- Write: Write a file.",
                },
                "path": {
                    "type": "string",
                    "description": "Used when op is Read (required): The file to read.; Write (required): The file to write.",
                },
                "content": {"type": "string", "description": "Used when op is Write (required): The new content."},
            },
            "required": ["op", "path"],
            "additionalProperties": false,
        })
    );
}

#[test]
fn the_decoding_schema_of_a_union_keeps_one_closed_object_per_variant() {
    let schema = decoding_schema::<Args>();
    let branches = schema["oneOf"].as_array().unwrap();
    assert_eq!(branches.len(), 2);
    assert_eq!(branches[0]["properties"]["op"], json!({"type": "string", "const": "Read"}));
    assert_eq!(branches[0]["additionalProperties"], json!(false));
    assert_eq!(branches[1]["required"], json!(["op", "path", "content"]));
}

fn decode_args(raw: &str) -> Result<Args, ArgumentError> {
    let schema = decoding_schema::<Args>();
    tool_runtime::decode::decode_arguments::<Args>(raw, || &schema)
}

#[test]
fn a_union_decodes_strictly_per_variant_naming_the_field_and_what_the_variant_accepts() {
    let error = decode_args(r#"{"op":"Read","path":"a","content":"x"}"#).unwrap_err();
    assert_eq!(error.to_string(), "`content`: unknown field for `op` = `Read`; `Read` accepts `op`, `path`");
}

#[test]
fn a_union_decodes_each_variant_it_accepts() {
    assert!(matches!(decode_args(r#"{"op":"Read","path":"a"}"#), Ok(Args::Read { path }) if path == "a"));
    assert!(matches!(
        decode_args(r#"{"op":"Write","path":"a","content":"x"}"#),
        Ok(Args::Write { path, content }) if path == "a" && content == "x"
    ));
}

#[test]
fn a_union_names_an_unknown_tag_value() {
    let error = decode_args(r#"{"op":"Move","path":"a"}"#).unwrap_err();
    assert_eq!(error.to_string(), "`op`: unknown variant `Move`, expected `Read` or `Write`");
}

#[test]
fn every_target_accepts_a_hoisted_union_root() {
    let definition = ToolDefinition {
        name: "files".to_owned(),
        description: "Files.".to_owned(),
        input_schema: arguments_schema::<Args>(),
        set: None,
        tags: Vec::new(),
        strict: Some(true),
        output_schema: None,
        callers: tool_runtime::Callers::Direct,
    };
    for target in FORMS {
        let entry = definition.entry(target).unwrap();
        assert!(!entry.to_string().contains("oneOf"), "{target}: {entry}");
    }
}

#[derive(Deserialize, JsonSchema)]
struct Node {
    name: String,
    children: Vec<Node>,
}

#[derive(Deserialize, JsonSchema)]
struct Tree {
    /// The root node.
    root: Node,
}

#[test]
fn recursion_is_the_only_use_of_defs_and_ref() {
    assert_eq!(
        arguments_schema::<Tree>(),
        json!({
            "type": "object",
            "properties": {
                "root": {
                    "description": "The root node.",
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                    "required": ["name", "children"],
                    "additionalProperties": false,
                }
            },
            "required": ["root"],
            "additionalProperties": false,
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                    "required": ["name", "children"],
                    "additionalProperties": false,
                }
            },
        })
    );
}

#[derive(Deserialize, JsonSchema)]
struct Pair {
    /// A pair of a count and a name.
    pair: (u8, String),
}

#[test]
fn a_tuple_is_prefix_items_valid_under_both_drafts() {
    assert_eq!(
        arguments_schema::<Pair>()["properties"]["pair"],
        json!({
            "type": "array",
            "description": "A pair of a count and a name.",
            "prefixItems": [{"type": "integer", "minimum": 0, "maximum": 255}, {"type": "string"}],
            "minItems": 2,
            "maxItems": 2,
        })
    );
}

/// Filter docs at the type.
#[derive(Deserialize, JsonSchema)]
struct Documented {
    /// The city, by name.
    city: String,
    /// Days ahead, 0-based.
    days: Option<u8>,
}

#[test]
fn field_docs_survive_every_projection() {
    let definition = ToolDefinition {
        name: "weather".to_owned(),
        description: "Weather.".to_owned(),
        input_schema: arguments_schema::<Documented>(),
        set: None,
        tags: Vec::new(),
        strict: None,
        output_schema: None,
        callers: tool_runtime::Callers::Direct,
    };
    assert_eq!(definition.input_schema.get("description"), None, "the root carries no description");
    for target in FORMS {
        let text = definition.entry(target).unwrap().to_string();
        assert!(text.contains("The city, by name."), "{target}: {text}");
        assert!(text.contains("Days ahead, 0-based."), "{target}: {text}");
    }
}
