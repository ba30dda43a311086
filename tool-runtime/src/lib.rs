//! The runtime of the `#[tool]` framework for LLM agent tools.
//!
//! Write a plain function, put [`#[tool]`](tool) on it, and get what an agent needs: the JSON
//! Schema a model sees, strict decoding of the model's arguments, dependency injection with
//! `#[depends(KEY)]`, registration into a dispatch table ([`Registry`]), and the tool-call shapes
//! of OpenAI, Anthropic and Gemini ([`provider`]).
//!
//! ```
//! use tool_runtime::prelude::*;
//!
//! /// Add two integers.
//! #[tool]
//! fn add(
//!     /// The first addend.
//!     a: i64,
//!     /// The second addend.
//!     b: i64,
//! ) -> String {
//!     (a + b).to_string()
//! }
//!
//! # fn main() {
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let registry = Registry::builder().tool(add::TOOL).build().unwrap();
//! let message = registry.call(&ToolCall::new("call_1", "add", r#"{"a":2,"b":3}"#), &ToolContext::new()).await;
//! assert_eq!(message.text(), "5");
//! assert_eq!(add(2, 3), "5"); // the function stays callable as written
//! # });
//! # }
//! ```
//!
//! `#[tool]` works on free functions, in a module or inside a function body, and on `&self`
//! methods of an `impl` block marked [`#[tools]`](tools), whose tools a registry serves on one
//! instance ([`RegistryBuilder::tools_of`]; discovery never finds them). Beside a function it
//! generates `add::TOOL`, the tool's `&'static ToolSpec`,
//! and an `inventory` submission for [`Registry::discover`]. Both compile under
//! `#![forbid(unsafe_code)]`, `#![deny(warnings)]` and clippy's pedantic lints in the user's crate;
//! registering with [`Registry::builder`] needs no link-time collection at all. Every form and
//! option is described on [`tool`] and in [Defining tools](#defining-tools) below; misuse is a
//! compile error on the token at fault. [Sending the tools to a
//! provider](#sending-the-tools-to-a-provider), [tool search](#many-tools-deferred-loading-and-tool-search)
//! and what the standard tools cost in a request ([Definition sizes](#definition-sizes)) follow it.
//!
//! The calls of one model turn go to [`Registry::call_batch`]: a [permission
//! policy](PermissionPolicy) is asked about each first, then they run concurrently (tools marked
//! `#[tool(sequential)]` alone), each within its time limit and the [`ToolContext`]'s
//! cancellation, each failure (a panic too) an error result for the model. [`Batch::stop`] tells
//! the agent loop when to stop: a tool returned [`ToolResult::done`], or the policy stopped the
//! turn. [`Registry::close`] releases what tools and registry-scoped dependencies hold.
//!
//! # Cargo features
//!
//! All off by default: a crate with `#[tool]` fns and a [`Registry`] builds none of them, and pays
//! nothing for them. An item a feature brings is absent without it (a use of it is a compile
//! error, never a run-time one), and its doc names the feature.
//!
//! | feature | turns on | brings | turned on by |
//! |---|---|---|---|
//! | `dynamic` | `DynamicTool`, `DynamicToolError`: tools whose JSON Schema arrives at run time | `jsonschema` | `tool-mcp` (feature `client`: imported tools) |
//! | `grep` | `output::grep_stored`, `output::grep_matcher` and their types: regex search over a stored output | `grep-searcher`, `grep-regex`, `unicode-segmentation` | `tool-std` (`tool_output_cache_grep`) |
//! | `file-store` | `output::FileStore`, `output::default_cache_dir`; the default [`output::OUTPUT_STORE`] becomes a `FileStore` in the user's cache directory (a [`output::MemoryStore`] without it) | `dirs` | `tool-std`, `toolbox` |
//! | `paging` | `output::parse_page`, `output::page_rows`, `output::offset_token`: opaque page tokens for tools that list rows page by page | `base64` | none in this workspace (a tool author who pages) |
//! | `redis` | the module `redis`: an [`output::OutputStore`] on Redis, and the connection and bookkeeping that `tool-std`'s Redis session store shares, for state shared by many server processes | `redis` | `tool-std`'s feature `redis`; `toolbox` |
//!
//! The `redis` store lives here, beside the store trait it implements, so that the default build
//! has no Redis client at all.
#![doc = include_str!("../docs/defining-tools.md")]
#![doc = include_str!("../docs/providers.md")]

pub mod approvals;
mod call;
mod client;
mod clock;
mod context;
pub mod decode;
mod depends;
#[cfg(feature = "dynamic")]
mod dynamic;
mod error;
pub mod idempotency;
mod lifecycle;
pub mod locks;
mod mac;
mod methods;
pub mod output;
mod policy;
mod progress;
pub mod provider;
mod ref_id;
mod registry;
mod resource;
mod result;
pub mod rustdoc;
pub mod schema;
pub mod search;
mod secret;
pub mod talk;
pub mod telemetry;
mod tool;
mod waits;
mod worker;

pub use approvals::ApprovalTokens;
pub use call::ToolCall;
pub use clock::{Clock, FixedClock, SystemClock};
pub use context::{ImageSupport, ToolAccess, ToolContext, ToolContextBuilder};
pub use depends::{DependencyKey, DependencyValue, Scope};
#[cfg(feature = "dynamic")]
pub use dynamic::{DynamicTool, DynamicToolError};
pub use error::{
    ApprovalProblem, ApprovalRequest, ArgumentError, BoxError, CloseError, CloseFailure, DependencyError,
    DependencyName, KeyTypedArgument, MissingDependency, NameClash, RegistryError, ToolError, ToolErrorKind,
    ToolOrigin, UndescribedParameters, UnsupportedPattern,
};
/// A boxed `Send` future: what `per_call_async` and `shared_async` keys, hand-written [`Tool`]s and
/// [`PermissionPolicy`] implementations return (from `futures`).
pub use futures::future::BoxFuture;
pub use methods::ToolMethods;
/// Stores on Redis, for state shared by many server processes (feature `redis`): the
/// [`output::OutputStore`] on Redis and the connection and bookkeeping `tool-std`'s Redis session
/// store shares.
#[cfg(feature = "redis")]
pub use output::store::redis;
pub use policy::{DefaultPolicy, EXEC_TAG, EXTERNAL_TAG, Permission, PermissionPolicy, PermissionRequest};
pub use progress::{Progress, ProgressListener};
pub use registry::{Batch, Registry, RegistryBuilder, TurnStop};
pub use resource::Resource;
pub use result::{
    ContentPart, ImageDetail, IntoToolResult, MessageContent, ResourceContents, StoredResult, ToolMessage, ToolResult,
};
pub use secret::{REDACTED, Secret, redact_arguments, replace_secrets};
pub use talk::{ClientCapabilities, ClientChannel, Elicitation, LogLevel, SamplingRequest, TalkBackError};
/// The token that cancels calls ([`ToolContextBuilder::cancellation`]), from `tokio-util`.
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    Callers, InvokeFn, PreviewFn, Tool, ToolDefinition, ToolMeta, ToolRegistration, ToolSpec, is_valid_tool_name,
};
pub use tool_macros::{tool, tools};
pub use worker::off_worker;

/// Re-exports for tool authors: `use tool_runtime::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Batch, ContentPart, DependencyError, DependencyKey, MessageContent, Permission, Registry, Scope, Secret, Tool,
        ToolCall, ToolContext, ToolDefinition, ToolError, ToolMessage, ToolMethods, ToolResult, TurnStop, tool, tools,
    };
}

/// The one path generated code uses. Not public API: it may change in any release.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
