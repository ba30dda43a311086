//! Every tool's name follows the rule of `#[tool]` names, `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`, also
//! a tool added with `tool_dyn`: the registry refuses the others, all of them in one error.

use std::sync::Arc;

use futures::future::BoxFuture;
use tool_runtime::prelude::*;
use tool_runtime::{RegistryError, Tool, ToolDefinition, ToolOrigin, is_valid_tool_name};

/// A tool written by hand with any name.
struct Named(ToolDefinition);

impl Named {
    fn tool(name: &str) -> Arc<dyn Tool> {
        Arc::new(Self(ToolDefinition {
            name: name.to_owned(),
            description: "A tool.".to_owned(),
            input_schema: serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
            set: None,
            tags: Vec::new(),
            strict: None,
            output_schema: None,
            callers: tool_runtime::Callers::Direct,
        }))
    }
}

impl Tool for Named {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }

    fn call<'a>(&'a self, _: &'a str, _: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        Box::pin(async { Ok(ToolResult::text("ran")) })
    }
}

/// Echo.
#[tool]
fn echo() -> String {
    "echo".to_owned()
}

fn here(line: u32) -> ToolOrigin {
    ToolOrigin { module_path: None, file: Some(file!()), line }
}

#[test]
fn tool_dyn_with_a_name_outside_the_rule_fails_the_build_naming_the_line_that_added_it() {
    let (builder, line) = (Registry::builder().tool_dyn(Named::tool("bad name with spaces!")), line!());
    let error = builder.build().unwrap_err();
    assert_eq!(error, RegistryError::InvalidNames { tools: vec![("bad name with spaces!".to_owned(), here(line))] });
    assert_eq!(
        error.to_string(),
        format!(
            "tool name `bad name with spaces!` (by {}:{line}) is not accepted by every provider; use a name matching `^[A-Za-z_][A-Za-z0-9_-]{{0,63}}$` (a letter or `_`, then at most 63 letters, digits, `_` or `-`)",
            file!()
        )
    );
}

#[test]
fn every_name_outside_the_rule_is_reported_at_once_in_registration_order() {
    let long = "a".repeat(65);
    let line = line!();
    let builder = Registry::builder()
        .tool_dyn(Named::tool("9lives"))
        .tool_dyn(Named::tool("ok_name"))
        .tool_dyn(Named::tool(&long));
    assert_eq!(
        builder.build().unwrap_err(),
        RegistryError::InvalidNames {
            tools: vec![("9lives".to_owned(), here(line + 2)), (long.clone(), here(line + 4))]
        }
    );
}

#[test]
fn a_name_within_the_rule_registers_beside_a_tool_fn() {
    let registry = Registry::builder().tool(echo::TOOL).tool_dyn(Named::tool("a-Name_64")).build().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["a-Name_64", "echo"]);
}

#[test]
fn the_rule_takes_a_letter_or_underscore_then_up_to_63_letters_digits_underscores_or_hyphens() {
    let verdicts: Vec<(String, bool)> =
        ["_", "a", "A-9_", "-a", "1a", "", "a b", "é", &"a".repeat(64), &"a".repeat(65)]
            .iter()
            .map(|name| ((*name).to_owned(), is_valid_tool_name(name)))
            .collect();
    let expected: Vec<(String, bool)> = [
        ("_", true),
        ("a", true),
        ("A-9_", true),
        ("-a", false),
        ("1a", false),
        ("", false),
        ("a b", false),
        ("é", false),
    ]
    .iter()
    .map(|(n, v)| ((*n).to_owned(), *v))
    .chain([("a".repeat(64), true), ("a".repeat(65), false)])
    .collect();
    assert_eq!(verdicts, expected);
}

#[test]
fn discover_and_an_explicit_tool_of_the_same_fn_keep_it_once() {
    let registry = Registry::builder().tool(echo::TOOL).discover().build().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["echo"]);
}

#[test]
fn the_same_arc_added_twice_with_tool_dyn_is_kept_once() {
    let tool = Named::tool("shared");
    let registry = Registry::builder().tool_dyn(tool.clone()).tool_dyn(tool).build().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["shared"]);
}
