//! Every form of the code `#[tool]` generates compiles in a crate with the strictest lints: sync
//! tools with a synchronous invoke (with the context, borrowed arguments, a result borrowing one,
//! defaults, raw identifiers, `#[input]`, `()`, a JSON result with its schema, `#[deprecated]`),
//! `async` tools whose arguments struct sits in a module of its own (beside the function, and in a
//! function body), and the runtime named through a `use` alias.
#![forbid(unsafe_code)]
#![deny(
    warnings,
    missing_docs,
    unreachable_pub,
    rust_2018_idioms,
    unused,
    unused_qualifications,
    unused_results,
    nonstandard_style,
    missing_debug_implementations,
    clippy::all,
    clippy::pedantic
)]

/// Public tools, as a library of tools would define them.
pub mod tools {
    use tool_runtime as rt;
    use tool_runtime::prelude::*;

    /// Echo a word with the call's id.
    #[tool]
    pub fn echo(
        /// The word.
        word: &str,
        /// Numbers.
        numbers: &[u32],
        /// A suffix.
        #[arg(default = "!")]
        suffix: String,
        ctx: &ToolContext,
    ) -> String {
        format!("{word}{numbers:?}{suffix}@{}", ctx.call_id().unwrap_or("none"))
    }

    /// Name a type.
    #[tool]
    pub fn r#type(
        /// The type.
        r#type: String,
    ) -> Result<String, ToolError> {
        Ok(r#type)
    }

    /// The first word of a text, borrowed from it.
    #[tool]
    pub fn first_word(
        /// A text.
        text: &str,
    ) -> &str {
        text.split_whitespace().next().unwrap_or_default()
    }

    /// What a search asks for.
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    pub struct Query {
        /// The pattern.
        pub pattern: String,
    }

    /// A sum.
    #[derive(Debug, serde::Serialize, schemars::JsonSchema)]
    pub struct Total {
        /// The total.
        pub total: i64,
    }

    /// Look for nothing, through an alias of the runtime.
    #[tool(crate = rt)]
    pub fn look(#[input] _query: Query) {}

    /// Add terms.
    #[tool(output_schema)]
    pub fn total(
        /// The terms.
        terms: &[i64],
    ) -> Result<Total, ToolError> {
        Ok(Total { total: terms.iter().sum() })
    }

    /// Kept for old prompts.
    #[deprecated = "use `first_word`"]
    #[tool]
    pub fn old_first_word(
        /// A text.
        text: String,
    ) -> String {
        text
    }

    /// Add asynchronously.
    #[tool]
    pub async fn add(
        /// A.
        a: i64,
        /// B.
        b: i64,
    ) -> i64 {
        a + b
    }

    /// Add through an alias of the runtime.
    #[tool(crate = rt)]
    pub async fn add_aliased(
        /// A.
        a: i64,
    ) -> i64 {
        a
    }
}

fn main() {
    /// Add inside a function body.
    #[tool_runtime::tool]
    async fn local_add(
        /// A.
        a: u8,
    ) -> u8 {
        a
    }

    let registry = tool_runtime::Registry::builder()
        .tool(tools::echo::TOOL)
        .tool(tools::r#type::TOOL)
        .tool(tools::add::TOOL)
        .tool(tools::add_aliased::TOOL)
        .tool(tools::first_word::TOOL)
        .tool(tools::look::TOOL)
        .tool(tools::total::TOOL)
        .tool(tools::old_first_word::TOOL)
        .tool(local_add::TOOL)
        .build()
        .unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), [
            "add",
            "add_aliased",
            "echo",
            "first_word",
            "local_add",
            "look",
            "old_first_word",
            "total",
            "type"
        ]);
}
