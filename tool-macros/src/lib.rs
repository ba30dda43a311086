//! The `#[tool]` attribute macro. Use it through `tool_runtime::tool` (or the prelude): the
//! generated code names only `::tool_runtime::__private`, so a user crate needs no direct
//! dependency on serde, schemars or inventory.
//!
//! The work is in plain `proc_macro2` modules: [`options`] and [`model`] parse, [`expand`]
//! generates code; errors from every step are collected and reported together, and the user's
//! function is always emitted so that one mistake does not cascade.

mod docs;
mod expand;
mod model;
mod options;

use proc_macro::TokenStream;

/// Turns a function into a tool an LLM can call.
///
/// ```ignore
/// /// Read a UTF-8 file and return it with line numbers.
/// #[tool(set = "fs")]
/// async fn read(
///     /// Path relative to the workspace root.
///     file_path: String,
///     /// 0-based line to start at.
///     offset: Option<usize>,
///     #[depends(SANDBOX)] sandbox: Sandbox,
///     ctx: &ToolContext,
/// ) -> Result<String, ToolError> { ... }
/// ```
///
/// - Each parameter is a model argument (any `Deserialize + JsonSchema` type; `Option<T>` is not
///   required), a dependency (`#[depends(KEY)]` with a `DependencyKey<T>` of the parameter's type),
///   or the call context (`&ToolContext`, at most one).
/// - The function's doc comment is the tool description; parameter doc comments describe the
///   properties of the JSON Schema.
/// - Options: `name = "..."` (default: the function name), `description = "..."` (default: the doc
///   comment), `set = "..."` (a group such as `"fs"`), `crate = path` (where `tool_runtime` is,
///   for re-exports; default `::tool_runtime`).
/// - Returns: `String`, `&'static str`, `()`, `ToolResult`, `Vec<ContentPart>`, any `Serialize`
///   type (sent as JSON), or `Result<T, E: Display>` of these (`Err` becomes an error result).
/// - The function stays callable as written. The macro adds a module of the same name holding
///   `TOOL`, the tool's `&'static ToolSpec` (`Registry::builder().tool(read::TOOL)`), and submits
///   the tool to `inventory` for `Registry::discover()`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(attr.into(), item.into()).into()
}
