//! The standard tools of the `#[tool]` framework.
//!
//! | set | module | tools |
//! |---|---|---|
//! | `"fs"` | [`fs`] | [`read`](fs::read()), [`read_line`](fs::read_line()), [`write`](fs::write()), [`edit`](fs::edit()), [`glob`](fs::glob()), [`grep`](fs::grep()) |
//! | `"patch"` | [`patch`] | [`apply_patch`](patch::apply_patch()) |
//! | `"todo"` | [`todo`](mod@todo) | [`todo_read`](todo::todo_read()), [`todo_new`](todo::todo_new()), [`todo_append`](todo::todo_append()), [`todo_patch`](todo::todo_patch()), [`todo_clear`](todo::todo_clear()) |
//! | `"cache"` | [`cache`] | [`tool_output_cache`](cache::tool_output_cache()), [`tool_output_cache_grep`](cache::tool_output_cache_grep()), [`tool_output_cache_line`](cache::tool_output_cache_line()) |
//! | `"web"` | [`web`] | [`webfetch`](web::webfetch()), [`search`](web::search()) (tagged `external`) |
//! | `"media"` | [`media`] | [`view_image`](media::view_image()) |
//! | `"control"` | [`control`] | [`done`](control::done()) |
//! | `"exec"` | [`exec`] | [`bash`](exec::bash()), [`bash_output`](exec::bash_output()), [`bash_kill`](exec::bash_kill()) (tagged `exec`: off unless allowed) |
//!
//! File tools resolve every path through a [`Sandbox`](sandbox::Sandbox), the dependency
//! [`SANDBOX`](sandbox::SANDBOX) (default: the current directory), and open it relative to the
//! sandbox's handle on its root, never by name (the module docs of [`sandbox`] say which
//! mechanism stops which attack). Todo lists live in session
//! meta, kept by the [`SessionStore`](session::SessionStore) of
//! [`SESSION_STORE`](session::SESSION_STORE) (default: JSON files in the user's state directory).
//! A program's own tools keep their state in the same stores with
//! [`UserState`](state::UserState): a typed value per key and caller, in memory, in files or in a
//! Redis that many server processes share (the module docs of [`state`] have an example).
//!
//! # Arguments
//! Every range a tool checks is stated in its schema (`#[arg(range(..), length(..))]`), so
//! decoding refuses a value outside it before the tool runs, with the field, the bound and the
//! value. Offsets and counts without a natural limit are bounded at 2^53 - 1
//! (9007199254740991), the largest integer every JSON parser reads exactly (RFC 8259, section 6).
//!
//! # How they run
//! No tool holds an async worker thread: every tool that touches the disk, walks a tree or
//! computes for long runs that work on tokio's blocking thread pool (as a plain `fn` tool, or with
//! `spawn_blocking` inside an `async fn`: the todo tools' store I/O and `todo_new`'s checks of its
//! items, `webfetch`'s decoding and rendering of a page, `search`'s parsing of a results page),
//! and the web tools do async I/O. Only `done`, a check of one string, runs inline on the worker
//! (`#[tool(inline)]`). Walks and long reads watch the call's
//! cancellation token between files or 64 KiB chunks (see [`fs`]); `apply_patch` checks it once
//! the files are read, before its first write.
//!
//! # Resource locks
//! `write`, `edit` and `apply_patch` lock each file they change, and `todo_new`, `todo_append`,
//! `todo_patch` and `todo_clear` the session's plan (`#[tool(resource ..)]`, see "Resource locks
//! and concurrency limits" on [`Registry`]): the calls of one turn, or of
//! concurrent requests, on one file run one after the other in arrival order, calls on other files
//! in parallel. [`registry_builder`] installs [`WorkspaceResources`](resources::WorkspaceResources),
//! which names a file by its real path in the sandbox, so two spellings of one file are one
//! resource; a registry built otherwise locks each path by its text. `apply_patch` no longer runs
//! alone in its turn (`sequential`): it waits only for the calls on its own files.
//!
//! # Tags
//! Each tool carries the tags that are true of it, which MCP servers turn into hints (`read_only`
//! → `readOnlyHint`, `destructive` → `destructiveHint`, `idempotent` → `idempotentHint`,
//! `external` → `openWorldHint`, with the meanings of the MCP specification's `ToolAnnotations`):
//! `read_only` on every tool that changes nothing (`read`, `read_line`, `glob`, `grep`,
//! `todo_read`, the cache tools, `view_image`, `done`, `webfetch`, `search`); `destructive` on
//! those that overwrite or delete (`write`, `edit`, `apply_patch`, `todo_new`, `todo_patch`,
//! `todo_clear`), with `idempotent` where the same call again changes nothing more (`write`,
//! `todo_new`, `todo_patch`, `todo_clear`); `external` on `webfetch` and `search`, which reach
//! outside the machine (the permission policy of `toolbox` refuses that tag until allowed).
//! `todo_append` only adds, and adds again when repeated: it has none of these tags.
//! The exec tools carry `exec`, which the [`DefaultPolicy`](tool_runtime::DefaultPolicy) and
//! `toolbox` refuse until allowed: `bash` and `bash_kill` are also `destructive`, `bash_output`
//! is `read_only`. Whether `bash` reaches outside the machine depends on
//! [`ExecConfig::network`](exec::ExecConfig::network), which a static tag cannot say: a
//! registry whose commands may use the network is built with
//! [`registry_builder_with_network_exec`], where the exec tools are tagged `external` too (so MCP
//! servers give them `openWorldHint: true`; `toolbox` does this with `--allow exec,external`).
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
//!
//! Beside your own tools, choose the standard sets with `RegistryBuilder::tagged_sets`, which
//! keeps every tool without a set (yours, unless they say `#[tool(set = "..")]`); `sets` would
//! drop them:
//!
//! ```no_run
//! use tool_runtime::prelude::*;
//!
//! /// Count the rows of the table.
//! #[tool]
//! fn count_rows() -> String {
//!     "3".to_owned()
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = tool_std::registry_builder()
//!     .tool(count_rows::TOOL) // or `.discover()`: every `#[tool]` of the binary
//!     .tagged_sets(["fs"]) // `read`, `read_line`, `write`, `edit`, `glob`, `grep` and `count_rows`
//!     .build()?;
//! # let _ = registry;
//! # Ok(())
//! # }
//! ```
//!
//! A change of a todo list retried with the same `idempotency_key` (or the same tool call id) is
//! applied once.
//!
//! # Cargo features
//! `redis` (off by default): sessions, and so todo plans, on Redis
//! (`session::RedisSessionStore`, on `tool_runtime::redis`), shared by many server processes.
//!
//! The shell tools, how each command is confined and how a policy judges its text, follow in
//! [A shell, confined, behind a policy](#a-shell-confined-behind-a-policy).
#![doc = include_str!("../docs/exec.md")]

pub mod cache;
pub mod control;
pub mod exec;
pub mod fs;
pub mod media;
pub mod patch;
pub mod resources;
pub mod sandbox;
pub mod session;
pub mod state;
pub mod todo;
pub mod web;

use tool_runtime::{Registry, RegistryBuilder};

/// A registry builder holding every tool of this crate (see the [crate docs](crate) for the
/// list), registered explicitly so that no link-time collection is needed. Add your own tools
/// (`.discover()` adds every `#[tool]` of the binary and keeps those of this crate once), filter
/// with `.tagged_sets([...])` (which keeps your tools without a set) or `.sets([...])` (which
/// drops them), and override dependencies before `.build()`.
pub fn registry_builder() -> RegistryBuilder {
    without_exec().tool(exec::bash::TOOL).tool(exec::bash_output::TOOL).tool(exec::bash_kill::TOOL)
}

/// As [`registry_builder`], for a registry whose commands may use the network
/// ([`ExecConfig::network`](exec::ExecConfig::network)): the exec tools are also tagged
/// `external` ([`exec::open_world_tools`]), so that policies treat them as reaching outside the
/// machine and MCP servers give them `openWorldHint: true`.
pub fn registry_builder_with_network_exec() -> RegistryBuilder {
    exec::open_world_tools().into_iter().fold(without_exec(), RegistryBuilder::tool_dyn)
}

/// Every tool but the exec set.
fn without_exec() -> RegistryBuilder {
    Registry::builder()
        .resource_resolver(resources::WorkspaceResources)
        .tool(fs::read::TOOL)
        .tool(fs::read_line::TOOL)
        .tool(fs::write::TOOL)
        .tool(fs::edit::TOOL)
        .tool(fs::glob::TOOL)
        .tool(fs::grep::TOOL)
        .tool(patch::apply_patch::TOOL)
        .tool(todo::todo_read::TOOL)
        .tool(cache::tool_output_cache::TOOL)
        .tool(cache::tool_output_cache_grep::TOOL)
        .tool(cache::tool_output_cache_line::TOOL)
        .tool(todo::todo_new::TOOL)
        .tool(todo::todo_append::TOOL)
        .tool(todo::todo_patch::TOOL)
        .tool(todo::todo_clear::TOOL)
        .tool(web::webfetch::TOOL)
        .tool(web::search::TOOL)
        .tool(media::view_image::TOOL)
        .tool(control::done::TOOL)
}
