//! A binary whose only tools are `#[tools]` methods: discovery finds no `#[tool]` function, and
//! its error names the impl blocks and points at `tools_of`; `discover().tools_of(..)` builds.

use std::sync::Arc;

use tool_runtime::RegistryError;
use tool_runtime::prelude::*;

/// Notes, a `#[tools]` block.
struct Notes;

#[tools]
impl Notes {
    /// Count the characters of a note.
    #[tool(inline)]
    fn count(&self, text: String) -> String {
        text.chars().count().to_string()
    }
}

/// An archive, another `#[tools]` block.
struct Archive;

#[tools]
impl Archive {
    /// Say whether the archive is open.
    #[tool(inline)]
    fn is_open(&self) -> String {
        "open".to_owned()
    }
}

#[test]
fn discover_in_a_binary_of_methods_alone_names_the_blocks_and_points_at_tools_of() {
    let error = Registry::discover().unwrap_err();

    let blocks = vec![
        "`Archive` (tool-runtime/tests/discover_methods.rs:24)".to_owned(),
        "`Notes` (tool-runtime/tests/discover_methods.rs:12)".to_owned(),
    ];
    assert_eq!(error, RegistryError::NothingDiscovered { methods_blocks: blocks });
    assert_eq!(
        error.to_string(),
        "discovery found no `#[tool]` function in this binary, only the `#[tools]` impl blocks `Archive` \
         (tool-runtime/tests/discover_methods.rs:24), `Notes` (tool-runtime/tests/discover_methods.rs:12), whose \
         methods need an instance and are never discovered: add their tools with \
         `Registry::builder().tools_of(Arc::new(value))` (`.discover().tools_of(..)` when there are `#[tool]` \
         functions too)"
    );
}

#[tokio::test]
async fn discover_with_tools_of_builds_a_registry_of_the_methods() {
    let registry =
        Registry::builder().discover().tools_of(Arc::new(Notes)).tools_of(Arc::new(Archive)).build().unwrap();

    assert_eq!(registry.names().collect::<Vec<_>>(), ["count", "is_open"]);
    let message = registry.call(&ToolCall::new("c1", "count", r#"{"text":"héllo"}"#), &ToolContext::default()).await;
    assert_eq!(message.text(), "5");
}
