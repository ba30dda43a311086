//! The integration tests of `tool-std` that share one binary: one module a subject, each
//! as its own file beside this one. A test that needs a process of its own (a global tracing
//! subscriber, `Registry::discover` over just its own tools, the test binary run again as a
//! child, or a check of the process's threads, files or children) stays a binary of its own in
//! `tests/`.

pub mod approval_previews;
pub mod architecture;
pub mod cache;
pub mod cancel;
pub mod continuation;
pub mod diff;
pub mod done;
pub mod edit;
pub mod edit_props;
pub mod glob;
pub mod grep;
pub mod grep_progress;
pub mod locks;
pub mod off_worker;
pub mod patch;
pub mod patch_fuzz;
pub mod read;
pub mod read_line;
#[cfg(feature = "redis")]
pub mod redis_sessions;
pub mod sandbox;
pub mod sandbox_race;
pub mod schema_instances;
pub mod scope;
pub mod search;
pub mod session;
pub mod session_scope;
pub mod special_files;
pub mod state;
pub mod todo;
pub mod view_image;
pub mod webfetch;
pub mod webfetch_addresses;
pub mod write;

// Support files the modules share, each compiled once.
#[path = "../common/mod.rs"]
mod common;
#[path = "../grep_record/mod.rs"]
mod grep_record;
use test_support::instances;
#[cfg(feature = "redis")]
use test_support::redis_server;
#[path = "../webfetch_support/mod.rs"]
mod webfetch_support;
