//! Helpers shared by the workspace's tests; a dev-dependency of the crates that use it, never a
//! dependency. Each module is one job:
//!
//! - [`architecture`]: the import rules of ARCHITECTURE.md, checked on a crate's sources.

pub mod architecture;
