//! Tool names registered more than once are refused when the registry is built: every shared name
//! at once, each definition named by its module path, file and line.

use std::sync::Arc;

use tool_runtime::prelude::*;
use tool_runtime::{DynamicTool, NameClash, RegistryError, ToolOrigin};

const FILE: &str = file!();

/// The line of `lookup_a`'s `#[tool]`.
const LOOKUP_A: u32 = line!() + 2;
/// The first.
#[tool(name = "lookup")]
fn lookup_a() -> String {
    "a".to_owned()
}

/// The line of `fetch_a`'s `#[tool]`.
const FETCH_A: u32 = line!() + 2;
/// Fetch, once.
#[tool(name = "fetch")]
fn fetch_a() -> String {
    "a".to_owned()
}

mod other {
    use tool_runtime::prelude::*;

    /// The line of `lookup_b`'s `#[tool]`.
    pub(crate) const LOOKUP_B: u32 = line!() + 2;
    /// The second.
    #[tool(name = "lookup")]
    pub(crate) fn lookup_b() -> String {
        "b".to_owned()
    }

    /// The line of `fetch_b`'s `#[tool]`.
    pub(crate) const FETCH_B: u32 = line!() + 2;
    /// Fetch, twice.
    #[tool(name = "fetch")]
    pub(crate) fn fetch_b() -> String {
        "b".to_owned()
    }
}

fn at(module_path: &'static str, line: u32) -> ToolOrigin {
    ToolOrigin { module_path: Some(module_path), file: Some(FILE), line }
}

#[test]
fn discover_reports_every_shared_name_at_once_with_each_definition_by_module_file_and_line() {
    let error = Registry::discover().unwrap_err();
    assert_eq!(
        error,
        RegistryError::DuplicateNames {
            clashes: vec![
                NameClash {
                    name: "fetch".to_owned(),
                    origins: vec![at("duplicate", FETCH_A), at("duplicate::other", other::FETCH_B)],
                },
                NameClash {
                    name: "lookup".to_owned(),
                    origins: vec![at("duplicate", LOOKUP_A), at("duplicate::other", other::LOOKUP_B)],
                },
            ],
        }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "tool name `fetch` is registered 2 times: by `duplicate` ({FILE}:{FETCH_A}), by `duplicate::other` ({FILE}:{}); \
             tool name `lookup` is registered 2 times: by `duplicate` ({FILE}:{LOOKUP_A}), by `duplicate::other` ({FILE}:{}); \
             give each tool its own name (`#[tool(name = \"...\")]`) or register only one of them",
            other::FETCH_B,
            other::LOOKUP_B,
        )
    );
}

#[test]
fn the_builder_names_the_definitions_of_a_shared_name_in_registration_order() {
    let error = Registry::builder().tool(other::lookup_b::TOOL).tool(lookup_a::TOOL).build().unwrap_err();
    assert_eq!(
        error,
        RegistryError::DuplicateNames {
            clashes: vec![NameClash {
                name: "lookup".to_owned(),
                origins: vec![at("duplicate::other", other::LOOKUP_B), at("duplicate", LOOKUP_A)],
            }],
        }
    );
}

#[test]
fn a_run_time_tool_sharing_a_name_is_named_by_the_line_that_made_it() {
    let (tool, line) = (
        DynamicTool::new("lookup", "Look up.", serde_json::json!({"type": "object"}), |_, _| async {
            Ok(ToolResult::text("dynamic"))
        })
        .unwrap(),
        line!(),
    );
    let error = Registry::builder().tool(lookup_a::TOOL).tool_dyn(Arc::new(tool)).build().unwrap_err();
    assert_eq!(
        error,
        RegistryError::DuplicateNames {
            clashes: vec![NameClash {
                name: "lookup".to_owned(),
                origins: vec![
                    at("duplicate", LOOKUP_A),
                    ToolOrigin { module_path: None, file: Some(FILE), line: line - 4 }
                ],
            }],
        }
    );
}

#[test]
fn the_same_tool_added_twice_is_kept_once() {
    let registry = Registry::builder().tool(lookup_a::TOOL).tool(lookup_a::TOOL).build().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["lookup"]);
}

#[test]
fn one_of_them_alone_registers() {
    let registry = Registry::builder().tool(lookup_a::TOOL).build().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["lookup"]);
}
