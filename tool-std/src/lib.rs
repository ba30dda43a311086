//! The standard tools of the `#[tool]` framework.
//!
//! | set | module | tools |
//! |---|---|---|
//! | `"fs"` | [`fs`] | [`read`](fs::read()), [`glob`](fs::glob()), [`grep`](fs::grep()) |
//! | `"patch"` | [`patch`] | [`apply_patch`](patch::apply_patch()) |
//! | `"todo"` | [`todo`](mod@todo) | [`todo_new`](todo::todo_new()), [`todo_read`](todo::todo_read()) |
//!
//! The sets `"cache"`, `"web"`, `"media"` and `"control"` of the design, and the fs
//! tools `read_line`, `write` and `edit`, are not written yet.
//!
//! File tools resolve every path through a [`Sandbox`](sandbox::Sandbox), the dependency
//! [`SANDBOX`](sandbox::SANDBOX) (default: the current directory). Todo lists live in a
//! [`TodoStore`](todo::TodoStore), the registry-scoped dependency [`TODO_STORE`](todo::TODO_STORE).
//!
//! # Getting the tools
//! `Registry::discover()` finds these tools only when this crate is linked into the binary.
//! [`registry_builder`] registers each of them explicitly instead, so it works whether or not
//! link-time collection sees the crate; choose sets with `RegistryBuilder::sets`:
//!
//! ```no_run
//! use tool_std::sandbox::{SANDBOX, Sandbox};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = tool_std::registry_builder()
//!     .sets(["fs"])
//!     .override_dependency(&SANDBOX, Sandbox::new("/path/to/workspace")?)
//!     .build()?;
//! # let _ = registry;
//! # Ok(())
//! # }
//! ```

pub mod fs;
pub mod patch;
pub mod sandbox;
pub mod todo;

use tool_runtime::{Registry, RegistryBuilder};

/// A registry builder holding every tool of this crate (see the [crate docs](crate) for the
/// list), registered explicitly so that no link-time collection is needed. Add your own tools,
/// filter with `.sets([...])` and override dependencies before `.build()`.
pub fn registry_builder() -> RegistryBuilder {
    Registry::builder()
        .tool(fs::read::TOOL)
        .tool(fs::glob::TOOL)
        .tool(fs::grep::TOOL)
        .tool(patch::apply_patch::TOOL)
        .tool(todo::todo_new::TOOL)
        .tool(todo::todo_read::TOOL)
}
