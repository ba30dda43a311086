//! A binary in which discovery finds no `#[tool]` (here: none is defined or linked) gets an error
//! that says how to link a crate of tools, not an empty registry.

use tool_runtime::{Registry, RegistryError};

#[test]
fn discover_with_no_tool_linked_is_an_error_saying_how_to_link_a_tools_crate() {
    let error = Registry::discover().unwrap_err();
    assert_eq!(error, RegistryError::NothingDiscovered { methods_blocks: vec![] });
    assert_eq!(
        error.to_string(),
        "discovery found no `#[tool]` linked into this binary; a crate of tools is linked only when the binary refers to it: add `use my_tools as _;` (with your crate's name) to the binary, or register the tools with `Registry::builder().tool(my_tools::my_tool::TOOL)`"
    );
}

#[test]
fn the_builders_discover_finding_nothing_fails_the_build() {
    assert_eq!(
        Registry::builder().discover().build().unwrap_err(),
        RegistryError::NothingDiscovered { methods_blocks: vec![] }
    );
}

#[test]
fn a_builder_that_never_discovers_may_be_empty() {
    assert_eq!(Registry::builder().build().unwrap().len(), 0);
}
