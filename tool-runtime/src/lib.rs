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
//! `#[tool]` functions are items of a module (not local items inside a function body): the
//! generated registration lives beside them.

mod call;
mod context;
pub mod decode;
mod depends;
mod error;
pub mod output;
pub mod provider;
mod registry;
mod result;
pub mod schema;
mod tool;

pub use call::ToolCall;
pub use context::{ToolContext, ToolContextBuilder};
pub use depends::{DependencyKey, Scope};
pub use error::{ArgumentError, DependencyError, RegistryError, ToolError};
pub use registry::{Registry, RegistryBuilder};
pub use result::{ContentPart, IntoToolResult, MessageContent, ToolMessage, ToolResult};
pub use tool::{InvokeFn, Tool, ToolDefinition, ToolMeta, ToolRegistration, ToolSpec};
pub use tool_macros::tool;

/// Re-exports for tool authors: `use tool_runtime::prelude::*;`.
pub mod prelude {
    pub use crate::{
        ContentPart, DependencyError, DependencyKey, MessageContent, Registry, Scope, Tool, ToolCall, ToolContext,
        ToolDefinition, ToolError, ToolMessage, ToolResult, tool,
    };
}

/// The one path generated code uses. Not public API: it may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use futures::future::BoxFuture;
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;

    pub use crate::{IntoToolResult, Tool, ToolContext, ToolError, ToolMeta, ToolRegistration, ToolResult, ToolSpec};

    /// Decodes a call's arguments for the tool `spec`.
    pub fn decode<T: serde::de::DeserializeOwned>(spec: &'static ToolSpec, raw: &str) -> Result<T, ToolError> {
        crate::decode::decode_arguments(raw, || spec.input_schema())
            .map_err(|error| ToolError::InvalidArguments { tool: spec.name().to_owned(), error })
    }

    /// The canonical schema of a tool's generated arguments struct.
    pub fn schema<T: schemars::JsonSchema>() -> serde_json::Value {
        crate::schema::arguments_schema::<T>()
    }

    /// A return value of a text-like type.
    pub fn text<T: IntoToolResult>(value: T) -> Result<ToolResult, ToolError> {
        Ok(value.into_tool_result())
    }

    /// A return value of any `Serialize` type.
    pub fn json<T: serde::Serialize>(value: &T) -> Result<ToolResult, ToolError> {
        serde_json::to_value(value)
            .map(ToolResult::Json)
            .map_err(|e| ToolError::Failed(format!("the tool's result could not be serialised as JSON: {e}")))
    }

    /// The `Err` of a tool returning `Result<T, E: Display>`.
    pub fn failed<E: std::fmt::Display>(error: E) -> ToolError {
        ToolError::failed(error)
    }
}
