//! The resources the standard tools lock, as keys: [`WorkspaceResources`], the
//! [`ResourceResolver`] [`registry_builder`](crate::registry_builder) installs.
//!
//! | tool | declares | keys |
//! |---|---|---|
//! | `write`, `edit` | `resource(path = "file_path")` | `path:<real path>` |
//! | `apply_patch` | `resource(patch = "patch")` | `path:<real path>` of every path the patch may add, delete, update or move to |
//! | `todo_new`, `todo_append`, `todo_patch`, `todo_clear` | `resource(todo_plan)` | `todo_plan:<session id>` |
//!
//! A real path is the file's path after the sandbox resolves it ([`Sandbox::resolve`]: `..`, `.`
//! and symlinks followed), so `notes.txt`, `./notes.txt` and `dir/../notes.txt` are one resource,
//! and `apply_patch` and `edit` of one file wait for each other. A path the sandbox refuses keeps
//! its text as key (the tool then refuses the call itself, without writing).

use futures::future::BoxFuture;
use serde_json::Value;
use tool_runtime::ToolContext;
use tool_runtime::locks::ResourceResolver;

use crate::sandbox::{SANDBOX, Sandbox};

/// The resolver of the standard tools' resources (see the [module docs](self)); it knows the kinds
/// `path` (a path relative to the workspace root), `patch` (a patch's text) and `todo_plan`.
///
/// Resolving a path costs a few system calls on the thread that polls the call (the sandbox's
/// `SANDBOX` dependency is resolved as the tool resolves it).
#[derive(Debug, Clone, Copy, Default)]
pub struct WorkspaceResources;

impl ResourceResolver for WorkspaceResources {
    fn resolve<'a>(
        &'a self,
        kind: &'a str,
        value: Option<&'a Value>,
        ctx: &'a ToolContext,
    ) -> Option<BoxFuture<'a, Vec<String>>> {
        match kind {
            "path" | "patch" => Some(Box::pin(async move {
                let text = value.and_then(Value::as_str).unwrap_or_default();
                let paths = if kind == "path" { vec![text] } else { crate::patch::patch_paths(text) };
                let sandbox = ctx.resolve(&SANDBOX).await.ok();
                paths.into_iter().map(|path| path_key(sandbox.as_ref(), path)).collect()
            })),
            "todo_plan" => {
                let key = format!("todo_plan:{}", crate::todo::session_key(ctx));
                Some(Box::pin(std::future::ready(vec![key])))
            }
            _ => None,
        }
    }
}

/// `path:<real path>`, or `path:<path as given>` when there is no sandbox or it refuses the path.
fn path_key(sandbox: Option<&Sandbox>, path: &str) -> String {
    match sandbox.and_then(|sandbox| sandbox.resolve(path).ok()) {
        Some(real) => format!("path:{}", real.to_string_lossy()),
        None => format!("path:{path}"),
    }
}
