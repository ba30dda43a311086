//! An example of tool-runtime's "Defining tools" (`tool-runtime/docs/defining-tools.md`), as
//! written there, and checks of what it defines.

use tool_runtime::prelude::*;

/// Compute the byte sum of a text, modulo 2^32 (CPU-bound work: as a plain `fn`, it runs on the
/// blocking pool, and its time limit ends the call).
#[tool(set = "text", timeout_ms = 2_000, tags(read_only, idempotent))]
fn checksum(
    /// The text.
    content: &str,
) -> String {
    content.bytes().fold(0u32, |sum, b| sum.wrapping_add(u32::from(b))).to_string()
}

/// Delete a branch.
#[tool(
    name = "git-delete-branch",
    description = "Delete a local git branch. Refuses the current branch.",
    sequential,
    timeout_ms = 10_000,
    strict,
    tags(destructive, external)
)]
async fn delete_branch(
    /// The branch name.
    branch: String,
) -> Result<String, ToolError> {
    Ok(format!("deleted {branch}"))
}

mod framework {
    // A crate built on tool-runtime re-exports it; its users name it with `crate = ...`.
    pub(crate) use tool_runtime as runtime;
}

/// Say hello (a constant: cheap enough to run inline on the async worker).
#[tool(crate = crate::framework::runtime, inline, strict = false)]
fn hello() -> &'static str {
    "hello"
}

fn main() {
    let meta = checksum::TOOL.meta();
    assert!(meta.blocking);
    assert_eq!(meta.timeout_ms, Some(2_000));
    assert!(!hello::TOOL.meta().blocking);
    assert_eq!(checksum::TOOL.definition().tags, ["read_only", "idempotent"]);
    assert_eq!(checksum::TOOL.set(), Some("text"));
    let definition = delete_branch::TOOL.definition();
    assert_eq!(definition.name, "git-delete-branch");
    assert_eq!(definition.description, "Delete a local git branch. Refuses the current branch.");
    assert_eq!(definition.strict, Some(true));
    assert_eq!(definition.tags, ["destructive", "external"]);
    assert!(delete_branch::TOOL.meta().sequential);
    assert_eq!(delete_branch::TOOL.meta().timeout_ms, Some(10_000));
    assert_eq!(hello::TOOL.definition().strict, Some(false));
    assert_eq!(hello(), "hello");
}
