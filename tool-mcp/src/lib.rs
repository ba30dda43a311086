#![doc = include_str!("../docs/overview.md")]
#![doc = include_str!("../docs/serving.md")]
#![doc = include_str!("../docs/talk-back.md")]
#![doc = include_str!("../docs/catalog.md")]
#![doc = include_str!("../docs/auth.md")]
#![doc = include_str!("../docs/conformance.md")]
#![doc = include_str!("../docs/import.md")]
#![doc = include_str!("../docs/tasks.md")]

// The floors of ARCHITECTURE.md, bottom first; a module imports only its floor and those below
// (tests/all/architecture.rs checks it).
//
// 1. Leaves that know no server.
mod call_id;
mod content;
mod errors;
mod incoming;
mod limits;
mod protocol;
mod sealed;
mod shutdown;
// 2. What each feature keeps.
#[cfg(feature = "auth")]
pub mod auth;
pub mod catalog;
#[cfg(feature = "client")]
pub mod import;
pub mod runner;
pub mod talk;
pub mod tasks;
pub mod telemetry;
// 3. The server.
mod server;
// 4. Running one call.
mod call;
// 5. The protocol surface.
mod handler;
// 6. The transports.
mod http;
mod stdio;
// 7. The builder.
mod builder;

pub use crate::builder::McpServerBuilder;
pub use crate::catalog::{
    Completes, CompletionRequest, MAX_COMPLETION_VALUES, Prompt, PromptMessage, PromptRequest, RequestError, Resource,
    ResourceRequest, ResourceTemplate, Role, TemplateError,
};
pub use crate::content::{call_result, tool_entry};
pub use crate::errors::{RequestStateKeyError, ServeError, TaskKeyError};
pub use crate::http::{HttpService, MCP_PATH, RESERVED_DESCRIPTORS, check_allowed_origin, connection_cap};
pub use crate::limits::{
    DEFAULT_GRACE_PERIOD, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_FRAME_BYTES, DEFAULT_REQUEST_BODY_TIMEOUT, OFF_WORKER_BODY_BYTES, STREAM_LINGER,
};
pub use crate::protocol::{APPROVAL_META, APPROVAL_TOKEN_META, IDEMPOTENCY_KEY_META, UNAVAILABLE_META};
pub use crate::server::{CallRequest, McpServer};
pub use crate::shutdown::shutdown_signal;
