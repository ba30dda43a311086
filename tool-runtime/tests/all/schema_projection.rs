//! `Provider::render_tool` and `ToolDefinition::mcp_entry`: the whole tool entry for each form, or an error naming the
//! tool and the schema path.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::provider::{SchemaError, openai_strict_schema};

use crate::forms;

use forms::{Entry, FORMS};

fn definition(name: &str, input_schema: Value, strict: Option<bool>) -> ToolDefinition {
    ToolDefinition {
        name: name.to_owned(),
        description: "Does it.".to_owned(),
        input_schema,
        set: None,
        tags: Vec::new(),
        strict,
        output_schema: None,
        callers: tool_runtime::Callers::Direct,
    }
}

/// Weather.
#[tool(strict)]
fn weather(
    /// The city.
    city: String,
    /// Days ahead.
    days: Option<u8>,
) -> String {
    format!("{city} {days:?}")
}

#[test]
fn strict_mode_makes_every_field_required_and_optional_ones_nullable() {
    let entry = weather::TOOL.definition().entry("openai-chat").unwrap();
    assert_eq!(
        entry,
        json!({
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Weather.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "The city."},
                        "days": {"type": ["integer", "null"], "minimum": 0, "maximum": 255, "description": "Days ahead."},
                    },
                    "required": ["city", "days"],
                    "additionalProperties": false,
                },
                "strict": true,
            },
        })
    );
}

#[tokio::test]
async fn null_sent_back_for_a_nullable_strict_field_decodes_as_absent() {
    let registry = Registry::builder().tool(weather::TOOL).build().unwrap();
    let message =
        registry.call(&ToolCall::new("c", "weather", r#"{"city":"Oslo","days":null}"#), &ToolContext::new()).await;
    assert_eq!(message.text(), "Oslo None");
}

#[test]
fn the_responses_entry_is_flat() {
    let entry = definition("t", json!({"type":"object","properties":{},"additionalProperties":false}), None)
        .entry("openai-responses")
        .unwrap();
    assert_eq!(
        entry,
        json!({"type":"function","name":"t","description":"Does it.","parameters":{"type":"object","properties":{},"additionalProperties":false},"strict":false})
    );
}

fn open_map_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"counts": {"type": "object", "additionalProperties": {"type": "integer"}}},
        "required": ["counts"],
        "additionalProperties": false,
    })
}

#[test]
fn explicit_strict_refuses_an_incompatible_schema_naming_the_tool_and_the_path() {
    let error = definition("tally", open_map_schema(), Some(true)).entry("openai-strict").unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool `tally` cannot be sent to openai-chat: `/properties/counts/additionalProperties`: strict mode refuses an open map (an object with `additionalProperties`); use a list of key/value objects"
    );
}

#[test]
fn auto_strict_sends_an_incompatible_schema_non_strict() {
    let entry = definition("tally", open_map_schema(), None).entry("openai-strict").unwrap();
    assert_eq!(entry["function"]["strict"], json!(false));
    assert_eq!(entry["function"]["parameters"], open_map_schema());
}

#[test]
fn auto_strict_sends_a_compatible_schema_strict() {
    let schema =
        json!({"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false});
    let entry = definition("find", schema.clone(), None).entry("openai-strict").unwrap();
    assert_eq!(entry["function"]["strict"], json!(true));
    assert_eq!(entry["function"]["parameters"], schema);
}

#[test]
fn a_tool_that_refuses_strict_is_sent_non_strict_by_the_strict_target() {
    let schema = json!({"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":false});
    let entry = definition("find", schema.clone(), Some(false)).entry("openai-strict").unwrap();
    assert_eq!(entry["function"]["strict"], json!(false));
    assert_eq!(entry["function"]["parameters"], schema);
}

#[test]
fn strict_mode_refuses_a_value_of_any_type() {
    let schema = json!({"type":"object","properties":{"v":{"description":"Anything."}},"required":["v"],"additionalProperties":false});
    assert_eq!(
        openai_strict_schema(&schema),
        Err(SchemaError {
            path: "/properties/v".to_owned(),
            message: "a value of any JSON type has no strict form; give it a type".to_owned()
        })
    );
}

#[test]
fn strict_mode_turns_one_of_into_any_of_and_wraps_an_optional_enum() {
    let schema = json!({
        "type": "object",
        "properties": {
            "shape": {"oneOf": [{"type":"string","enum":["point"]}, {"type":"object","properties":{"r":{"type":"number"}},"required":["r"],"additionalProperties":false}]},
            "unit": {"type": "string", "enum": ["c", "f"], "description": "The unit."},
        },
        "required": ["shape"],
        "additionalProperties": false,
    });
    assert_eq!(
        openai_strict_schema(&schema).unwrap(),
        json!({
            "type": "object",
            "properties": {
                "shape": {"anyOf": [{"type":"string","enum":["point"]}, {"type":"object","properties":{"r":{"type":"number"}},"required":["r"],"additionalProperties":false}]},
                "unit": {"anyOf": [{"type": "string", "enum": ["c", "f"]}, {"type": "null"}], "description": "The unit."},
            },
            "required": ["shape", "unit"],
            "additionalProperties": false,
        })
    );
}

#[test]
fn strict_mode_refuses_objects_nested_deeper_than_ten_levels() {
    let mut schema = json!({"type":"object","properties":{"leaf":{"type":"string"}},"required":["leaf"],"additionalProperties":false});
    for _ in 0..10 {
        schema = json!({"type":"object","properties":{"n":schema},"required":["n"],"additionalProperties":false});
    }
    let error = openai_strict_schema(&schema).unwrap_err();
    assert_eq!(error.message, "strict mode allows at most 10 levels of nested objects");
    assert_eq!(error.path, "/properties/n".repeat(10));
}

#[derive(Deserialize, JsonSchema)]
struct Node {
    /// The name.
    name: String,
    /// The children.
    children: Vec<Node>,
}

/// A tree.
#[tool]
fn tree(
    /// The root node.
    root: Node,
    /// The level.
    level: Option<Level>,
    /// Any value.
    extra: Value,
    /// Counts.
    counts: HashMap<String, u32>,
) -> &'static str {
    let _ = (root.name, root.children, level, extra, counts);
    "ok"
}

/// A level.
#[derive(Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "lowercase")]
enum Level {
    /// Quiet.
    Low,
    /// Loud.
    High,
}

#[test]
fn gemini_inlines_refs_cuts_recursion_and_keeps_only_its_subset() {
    let entry = tree::TOOL.definition().entry("gemini").unwrap();
    assert_eq!(
        entry,
        json!({
            "name": "tree",
            "description": "A tree.",
            "parameters": {
                "type": "object",
                "properties": {
                    "root": {
                        "type": "object",
                        "description": "The root node.",
                        "properties": {
                            "name": {"type": "string", "description": "The name."},
                            "children": {"type": "array", "description": "The children.", "items": {
                                "type": "object",
                                "properties": {
                                    "name": {"type": "string", "description": "The name."},
                                    "children": {"type": "array", "description": "The children.", "items": {
                                        "type": "string",
                                        "description": "(a JSON object, written as a string)",
                                    }},
                                },
                                "required": ["name", "children"],
                            }},
                        },
                        "required": ["name", "children"],
                    },
                    "level": {"type": "string", "enum": ["low", "high"], "description": "The level.\n- low: Quiet.\n- high: Loud."},
                    "extra": {"type": "string", "description": "Any value. (a JSON object, written as a string)"},
                    "counts": {"type": "string", "description": "Counts. (a JSON object, written as a string)"},
                },
                "required": ["root", "extra", "counts"],
            },
        })
    );
}

#[test]
fn gemini_projects_const_to_a_string_enum_and_integer_sets_to_bounds() {
    let schema = json!({
        "type": "object",
        "properties": {
            "kind": {"const": "a"},
            "size": {"enum": [1, 2, 4]},
            "note": {"type": ["string", "null"]},
        },
        "required": ["kind", "size"],
        "additionalProperties": false,
    });
    let entry = definition("t", schema, None).entry("gemini").unwrap();
    assert_eq!(
        entry["parameters"]["properties"],
        json!({
            "kind": {"type": "string", "enum": ["a"]},
            "size": {"type": "integer", "minimum": 1, "maximum": 4, "description": "Allowed values: 1, 2, 4"},
            "note": {"type": "string", "nullable": true},
        })
    );
}

#[test]
fn gemini_leaves_out_the_parameters_of_a_tool_without_properties() {
    let entry = definition("t", json!({"type":"object","properties":{},"additionalProperties":false}), None)
        .entry("gemini")
        .unwrap();
    assert_eq!(entry, json!({"name": "t", "description": "Does it."}));
}

#[test]
fn anthropic_gets_the_canonical_schema_as_input_schema() {
    let entry = weather::TOOL.definition().entry("anthropic").unwrap();
    assert_eq!(
        entry,
        json!({"name": "weather", "description": "Weather.", "input_schema": weather::TOOL.definition().input_schema})
    );
}

#[test]
fn anthropic_refuses_a_property_name_outside_its_pattern_naming_the_path() {
    let schema = json!({"type":"object","properties":{"a b":{"type":"string"}},"additionalProperties":false});
    let error = definition("t", schema, None).entry("anthropic").unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool `t` cannot be sent to anthropic: `/properties/a b`: property name `a b` is not accepted by Anthropic (`^[a-zA-Z0-9_.-]{1,64}$`); rename it"
    );
}

#[test]
fn anthropic_refuses_a_root_union() {
    let schema = json!({"type":"object","oneOf":[{"type":"object","properties":{}}]});
    let error = definition("t", schema, None).entry("anthropic").unwrap_err();
    assert_eq!(error.error.path, "/oneOf");
}

#[test]
fn every_target_refuses_a_root_that_is_not_an_object() {
    for target in FORMS {
        let error = definition("t", json!({"type": "string"}), None).entry(target).unwrap_err();
        assert_eq!(error.error.path, "", "{target}");
        assert_eq!(error.tool, "t");
    }
}

/// Looks up a key.
#[tool(tags(read_only, external, custom))]
fn lookup(
    /// The key.
    key: String,
) -> String {
    key
}

#[test]
fn the_mcp_entry_carries_annotations_from_tags() {
    let entry = lookup::TOOL.definition().entry("mcp").unwrap();
    assert_eq!(
        entry,
        json!({
            "name": "lookup",
            "description": "Looks up a key.",
            "inputSchema": lookup::TOOL.definition().input_schema,
            "annotations": {"readOnlyHint": true, "openWorldHint": true},
        })
    );
}

#[test]
fn the_mcp_entry_carries_an_object_output_schema_and_leaves_out_another() {
    let mut definition = weather::TOOL.definition().clone();
    assert_eq!(definition.entry("mcp").unwrap().get("outputSchema"), None);
    definition.output_schema = Some(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
    assert_eq!(
        definition.entry("mcp").unwrap()["outputSchema"],
        json!({"type": "object", "properties": {"n": {"type": "integer"}}})
    );
    definition.output_schema = Some(json!({"type": "array"}));
    assert_eq!(definition.entry("mcp").unwrap().get("outputSchema"), None);
}

#[test]
fn the_mcp_entry_of_a_tool_without_tags_says_it_is_not_destructive_and_closed_world() {
    // MCP's defaults for absent hints are `destructiveHint: true` and `openWorldHint: true`.
    let entry = weather::TOOL.definition().entry("mcp").unwrap();
    assert_eq!(entry["annotations"], json!({"destructiveHint": false, "openWorldHint": false}));
}

#[test]
fn gemini_json_schema_sends_the_canonical_schema_as_parameters_json_schema() {
    let entry = tree::TOOL.definition().entry("gemini-json-schema").unwrap();
    assert_eq!(
        entry,
        json!({
            "name": "tree",
            "description": "A tree.",
            "parametersJsonSchema": tree::TOOL.definition().input_schema,
        })
    );
}

#[test]
fn gemini_json_schema_leaves_out_the_schema_of_a_tool_without_properties() {
    let entry = definition("t", json!({"type":"object","properties":{},"additionalProperties":false}), None)
        .entry("gemini-json-schema")
        .unwrap();
    assert_eq!(entry, json!({"name": "t", "description": "Does it."}));
}

#[test]
fn openai_strict_says_string_lengths_in_the_description_and_keeps_numeric_bounds() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The name.", "minLength": 1, "maxLength": 80},
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        },
        "required": ["name", "limit", "tags"],
        "additionalProperties": false,
    });
    let entry = definition("t", schema, Some(true)).entry("openai-strict").unwrap();
    assert_eq!(
        entry["function"]["parameters"]["properties"],
        json!({
            "name": {"type": "string", "description": "The name. (at least 1 character, at most 80 characters)"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        })
    );
}
