//! A tool name registered twice is refused when the registry is built.

use tool_runtime::RegistryError;
use tool_runtime::prelude::*;

/// The first.
#[tool(name = "lookup")]
fn lookup_a() -> String {
    "a".to_owned()
}

mod other {
    use tool_runtime::prelude::*;

    /// The second.
    #[tool(name = "lookup")]
    pub(crate) fn lookup_b() -> String {
        "b".to_owned()
    }
}

#[test]
fn discover_refuses_a_duplicate_name_and_names_both_definitions() {
    let error = Registry::discover().unwrap_err();
    assert_eq!(
        error,
        RegistryError::DuplicateName {
            name: "lookup".to_owned(),
            first: "duplicate".to_owned(),
            second: "duplicate::other".to_owned(),
        }
    );
    assert_eq!(error.to_string(), "tool name `lookup` is registered twice: by `duplicate` and by `duplicate::other`");
}

#[test]
fn the_builder_refuses_a_duplicate_name_in_registration_order() {
    let error = Registry::builder().tool(other::lookup_b::TOOL).tool(lookup_a::TOOL).build().unwrap_err();
    assert_eq!(error.to_string(), "tool name `lookup` is registered twice: by `duplicate::other` and by `duplicate`");
}

#[test]
fn one_of_them_alone_registers() {
    let registry = Registry::builder().tool(lookup_a::TOOL).build().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["lookup"]);
}
