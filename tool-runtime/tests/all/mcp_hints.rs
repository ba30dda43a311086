//! MCP tool annotations back to tags (`tags_from_mcp_annotations`), for tools imported from other
//! MCP servers: MCP's defaults for absent hints, and the way back of `mcp_annotations`.

use serde_json::{Map, Value, json};
use tool_runtime::ToolDefinition;
use tool_runtime::provider::{mcp_annotations, tags_from_mcp_annotations};

fn tags(annotations: Value) -> Vec<String> {
    tags_from_mcp_annotations(annotations.as_object().unwrap())
}

#[test]
fn a_tool_without_annotations_is_destructive_and_external_as_mcp_defaults_say() {
    assert_eq!(tags(json!({})), ["destructive", "external"]);
}

#[test]
fn a_read_only_closed_world_tool_is_read_only_only() {
    assert_eq!(tags(json!({"readOnlyHint": true, "openWorldHint": false})), ["read_only"]);
}

#[test]
fn a_read_only_tool_is_never_destructive_whatever_its_destructive_hint() {
    assert_eq!(tags(json!({"readOnlyHint": true, "destructiveHint": true, "openWorldHint": false})), ["read_only"]);
}

#[test]
fn an_idempotent_additive_open_world_tool() {
    assert_eq!(
        tags(json!({"destructiveHint": false, "idempotentHint": true, "openWorldHint": true})),
        ["idempotent", "external"]
    );
}

#[test]
fn a_hint_that_is_not_a_boolean_counts_as_absent() {
    assert_eq!(tags(json!({"readOnlyHint": "yes", "openWorldHint": 0})), ["destructive", "external"]);
}

#[test]
fn the_tags_of_a_served_tool_come_back_from_its_annotations() {
    let cases: [&[&str]; 7] = [
        &[],
        &["read_only"],
        &["destructive"],
        &["idempotent"],
        &["external"],
        &["read_only", "external"],
        &["destructive", "idempotent", "external"],
    ];
    for case in cases {
        let definition = ToolDefinition {
            name: "t".to_owned(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            set: None,
            tags: case.iter().map(|t| (*t).to_owned()).collect(),
            strict: None,
            output_schema: None,
            callers: tool_runtime::Callers::Direct,
        };
        let annotations: Map<String, Value> = mcp_annotations(&definition);
        assert_eq!(tags_from_mcp_annotations(&annotations), case, "{annotations:?}");
    }
}
