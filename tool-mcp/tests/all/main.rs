//! The integration tests of `tool-mcp` that share one binary: one module a subject, each
//! as its own file beside this one. A test that needs a process of its own (a global tracing
//! subscriber, `Registry::discover` over just its own tools, the test binary run again as a
//! child, or a check of the process's threads, files or children) stays a binary of its own in
//! `tests/`.

pub mod annotations;
pub mod approvals;
pub mod architecture;
#[cfg(feature = "auth")]
pub mod auth;
#[cfg(all(feature = "auth", feature = "client-auth"))]
pub mod auth_import;
pub mod busy_tool;
pub mod catalog;
pub mod catalog_sdk;
pub mod content_kinds;
#[cfg(feature = "client")]
pub mod gateway_approvals;
#[cfg(feature = "client")]
pub mod gateway_idempotency;
pub mod hostile_http;
pub mod hostile_stdio;
pub mod hostile_talk;
#[cfg(feature = "client")]
pub mod hostile_upstream;
pub mod http;
pub mod idempotency;
pub mod methods;
pub mod secrets;
pub mod server;
pub mod talk_back;
pub mod task_streams;
pub mod tasks;

// Support files the modules share, each compiled once.
#[path = "../common/mod.rs"]
mod common;
