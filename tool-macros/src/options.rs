//! The options of `#[tool(...)]`, parsed with darling (unknown keys get "did you mean").

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::TokenStream;

/// `#[tool(name = "...", description = "...", set = "...", crate = path)]`.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct ToolOptions {
    /// The tool name; default: the function name.
    pub(crate) name: Option<syn::LitStr>,
    /// The description; default: the function's doc comment.
    pub(crate) description: Option<syn::LitStr>,
    /// The set the tool belongs to.
    pub(crate) set: Option<syn::LitStr>,
    /// The path of the runtime crate; default `::tool_runtime`.
    #[darling(rename = "crate")]
    pub(crate) krate: Option<syn::Path>,
    /// Run alone, not concurrently with the other calls of a turn.
    pub(crate) sequential: darling::util::Flag,
    /// Fail the call after this many milliseconds.
    pub(crate) timeout_ms: Option<syn::LitInt>,
    /// The OpenAI strict-mode wish: `strict` or `strict = false`.
    pub(crate) strict: Option<darling::util::Override<syn::LitBool>>,
    /// Free-form tags: `tags(read_only, external)`.
    #[darling(default)]
    pub(crate) tags: darling::util::PathList,
}

impl ToolOptions {
    pub(crate) fn parse(attr: TokenStream) -> darling::Result<Self> {
        let items = NestedMeta::parse_meta_list(attr)?;
        Self::from_list(&items)
    }
}
