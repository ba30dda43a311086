//! The integration tests of `tool-runtime` that share one binary: one module a subject, each
//! as its own file beside this one. A test that needs a process of its own (a global tracing
//! subscriber, `Registry::discover` over just its own tools, the test binary run again as a
//! child, or a check of the process's threads, files or children) stays a binary of its own in
//! `tests/`.

pub mod approvals;
pub mod architecture;
pub mod batch;
pub mod context;
pub mod decode_bounds;
pub mod decode_edges;
pub mod decode_fuzz;
pub mod decode_missing;
pub mod decode_models;
pub mod decode_paths;
pub mod decode_patterns;
pub mod decode_repair_duplicates;
pub mod decode_serde_forms;
pub mod decode_strict_nulls;
pub mod decode_unions;
pub mod failures;
pub mod forgotten_depends;
pub mod forms_arguments;
pub mod forms_blocking;
pub mod forms_output_schema;
pub mod forms_returns;
pub mod forms_review;
pub mod forms_shadow;
pub mod held_worker;
pub mod idempotency;
pub mod lifecycle;
pub mod locks;
#[cfg(feature = "redis")]
pub mod locks_redis;
pub mod mcp_hints;
pub mod output_bounds;
pub mod output_budget;
pub mod output_dispatch;
pub mod output_misc;
pub mod output_store;
pub mod output_stream;
pub mod output_truncate;
pub mod parameter_descriptions;
pub mod policy;
pub mod principal;
pub mod provided;
pub mod provider;
pub mod provider_content_kinds;
pub mod provider_search;
pub mod provider_trim;
#[cfg(feature = "redis")]
pub mod redis_idempotency;
#[cfg(feature = "redis")]
pub mod redis_store;
pub mod schema;
pub mod schema_arguments;
pub mod schema_conformance;
pub mod schema_defaults;
pub mod schema_dynamic;
pub mod schema_economy;
pub mod schema_projection;
pub mod schema_rules;
pub mod search;
pub mod search_corpus;
pub mod secret_schema;
pub mod secret_sinks;
pub mod structured_result;
pub mod sync_tools;
pub mod talk;
pub mod telemetry;
pub mod tracing;

// Support files the modules share, each compiled once.
#[path = "../support/tool_search_corpus.rs"]
mod corpus;
#[path = "../support/fields.rs"]
mod fields;
#[path = "../support/forms.rs"]
mod forms;
use test_support::instances;
#[cfg(feature = "redis")]
use test_support::redis_server;
