//! The MCP annotations of every standard tool (`tool_std::registry_builder()`, every set), exactly:
//! `readOnlyHint` on every tool that writes nothing, `destructiveHint` on those that overwrite or
//! delete, `idempotentHint` where repeating a call changes nothing more, `openWorldHint` true for
//! the tools that reach outside the machine.

use serde_json::{Value, json};

#[test]
fn every_standard_tool_carries_the_hints_that_are_true_of_it() {
    let registry = tool_std::registry_builder().build().unwrap();
    let annotations: Vec<(String, Value)> = registry
        .definitions()
        .iter()
        .map(|definition| {
            let entry = tool_mcp::tool_entry(definition);
            (entry.name.to_string(), serde_json::to_value(entry.annotations).unwrap())
        })
        .collect();
    let closed = |hints: Value| {
        let mut hints = hints;
        hints["openWorldHint"] = json!(false);
        hints
    };
    let expected: Vec<(String, Value)> = [
        ("apply_patch", closed(json!({"destructiveHint": true}))),
        ("bash", closed(json!({"destructiveHint": true}))),
        ("bash_kill", closed(json!({"destructiveHint": true}))),
        ("bash_output", closed(json!({"readOnlyHint": true}))),
        ("done", closed(json!({"readOnlyHint": true}))),
        ("edit", closed(json!({"destructiveHint": true}))),
        ("glob", closed(json!({"readOnlyHint": true}))),
        ("grep", closed(json!({"readOnlyHint": true}))),
        ("read", closed(json!({"readOnlyHint": true}))),
        ("read_line", closed(json!({"readOnlyHint": true}))),
        ("search", json!({"readOnlyHint": true, "openWorldHint": true})),
        ("todo_append", closed(json!({"destructiveHint": false}))),
        ("todo_clear", closed(json!({"destructiveHint": true, "idempotentHint": true}))),
        ("todo_new", closed(json!({"destructiveHint": true, "idempotentHint": true}))),
        ("todo_patch", closed(json!({"destructiveHint": true, "idempotentHint": true}))),
        ("todo_read", closed(json!({"readOnlyHint": true}))),
        ("tool_output_cache", closed(json!({"readOnlyHint": true}))),
        ("tool_output_cache_grep", closed(json!({"readOnlyHint": true}))),
        ("tool_output_cache_line", closed(json!({"readOnlyHint": true}))),
        ("view_image", closed(json!({"readOnlyHint": true}))),
        ("webfetch", json!({"readOnlyHint": true, "openWorldHint": true})),
        ("write", closed(json!({"destructiveHint": true, "idempotentHint": true}))),
    ]
    .into_iter()
    .map(|(name, hints)| (name.to_owned(), hints))
    .collect();
    assert_eq!(annotations, expected);
}
