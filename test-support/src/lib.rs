//! Helpers shared by the workspace's tests; a dev-dependency of the crates that use it, never a
//! dependency. Each module is one job:
//!
//! - [`approvals`]: the approval tokens a model would find in a tool result's text;
//! - [`architecture`]: the import rules of ARCHITECTURE.md, checked on a crate's sources;
//! - [`redis_server`]: a real `redis-server` on a free loopback port;
//! - [`procs`]: watching processes by pid (`/proc`), for tests of commands;
//! - [`instances`]: instances of a tool's input schema and mutations the schema refuses;
//! - [`process`]: a child killed on drop, and starting a server that says its address;
//! - [`haproxy`]: a real haproxy round-robin in front of loopback servers;
//! - [`python`]: the Python with the MCP SDK that client tests run;
//! - [`log`]: a log written into memory, for a test's `tracing` subscriber.

pub mod approvals;
pub mod architecture;
pub mod haproxy;
pub mod instances;
pub mod log;
pub mod process;
pub mod procs;
pub mod python;
pub mod redis_server;
