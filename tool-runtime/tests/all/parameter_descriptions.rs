//! `RegistryBuilder::require_parameter_descriptions`: an opt-in rule that every parameter of every
//! tool has a description; off by default, where a parameter without a doc comment is sent
//! without one.

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;
use tool_runtime::{RegistryError, UndescribedParameters};

/// Ping a host.
#[tool]
fn ping(
    host: String,
    /** Tries, at most. */
    tries: Option<u8>,
    port: Option<u16>,
) -> String {
    format!("{host}:{port:?} x{tries:?}")
}

/// Ping a host, every parameter described.
#[tool]
fn ping_described(
    /// The host name or address.
    host: String,
    #[arg(description = "The port; 7 when absent.")] port: Option<u16>,
) -> String {
    format!("{host}:{port:?}")
}

/// No parameters at all.
#[tool]
fn uptime() -> &'static str {
    "3 days"
}

/// Where to look.
#[derive(Deserialize, JsonSchema)]
struct Lookup {
    /// The name to look up.
    name: String,
    /// A nested value, described by its field's doc comment.
    scope: Scope,
    zone: Option<String>,
}

/// A nested type with a description of its own.
#[derive(Deserialize, JsonSchema)]
struct Scope {
    /// The scope's path.
    path: String,
}

/// Look up a name.
#[tool]
fn lookup(#[input] input: Lookup) -> String {
    format!("{} in {} {:?}", input.name, input.scope.path, input.zone)
}

#[test]
fn by_default_a_parameter_without_a_doc_comment_is_accepted_and_has_no_description() {
    let registry = Registry::builder().tool(ping::TOOL).build().unwrap();
    let schema = &registry.definition("ping").unwrap().input_schema;
    assert_eq!(schema["properties"]["host"].get("description"), None);
    assert_eq!(schema["properties"]["tries"]["description"], "Tries, at most.");
}

#[test]
fn with_the_rule_a_tool_with_undescribed_parameters_fails_to_build_naming_each() {
    let error = Registry::builder().tool(ping::TOOL).require_parameter_descriptions().build().unwrap_err();
    assert_eq!(
        error,
        RegistryError::UndescribedParameters {
            tools: vec![UndescribedParameters {
                tool: "ping".to_owned(),
                parameters: vec!["host".to_owned(), "port".to_owned()]
            }]
        }
    );
    assert_eq!(
        error.to_string(),
        "this registry requires a description of every parameter (`require_parameter_descriptions`), and the tool `ping` (`host`, `port`) has parameters without one: give each a doc comment (`/// What it is.`) or `#[arg(description = \"...\")]`; a field of an `#[input]` struct, a doc comment on the field"
    );
}

#[test]
fn with_the_rule_every_tool_is_reported_at_once_input_struct_fields_included() {
    let error = Registry::builder()
        .tool(ping::TOOL)
        .tool(lookup::TOOL)
        .tool(ping_described::TOOL)
        .require_parameter_descriptions()
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        RegistryError::UndescribedParameters {
            tools: vec![
                UndescribedParameters { tool: "lookup".to_owned(), parameters: vec!["zone".to_owned()] },
                UndescribedParameters {
                    tool: "ping".to_owned(),
                    parameters: vec!["host".to_owned(), "port".to_owned()]
                },
            ]
        }
    );
    assert!(
        error.to_string().contains("the tools `lookup` (`zone`), `ping` (`host`, `port`) have parameters without one")
    );
}

#[test]
fn with_the_rule_described_parameters_and_tools_without_parameters_build() {
    let registry = Registry::builder()
        .tool(ping_described::TOOL)
        .tool(uptime::TOOL)
        .require_parameter_descriptions()
        .build()
        .unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["ping_described", "uptime"]);
}

#[test]
fn with_the_rule_a_tool_left_out_by_sets_is_not_checked() {
    let registry = Registry::builder()
        .tool(ping::TOOL)
        .tool(uptime::TOOL)
        .sets(["none"])
        .require_parameter_descriptions()
        .build()
        .unwrap();
    assert_eq!(registry.len(), 0);
}
