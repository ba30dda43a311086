//! `#[tool]` code compiles in a crate with the strictest lints: no warning, no `unsafe` (the
//! link-time registration included), every public item documented.
#![forbid(unsafe_code)]
#![deny(
    warnings,
    missing_docs,
    unreachable_pub,
    rust_2018_idioms,
    unused,
    nonstandard_style,
    missing_debug_implementations,
    clippy::all,
    clippy::pedantic
)]

/// Public tools, as a library of tools would define them.
pub mod tools {
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use tool_runtime::prelude::*;

    /// A value every tool shares.
    #[derive(Debug, Clone)]
    pub struct Greeting(pub String);

    fn open_greeting(_: &ToolContext) -> Result<Greeting, DependencyError> {
        Ok(Greeting("hello".to_owned()))
    }

    /// The greeting dependency.
    pub static GREETING: DependencyKey<Greeting> = DependencyKey::per_call("greeting", open_greeting);

    /// A filter.
    #[derive(Debug, Deserialize, JsonSchema)]
    pub struct Filter {
        /// The name to match.
        pub name: String,
    }

    /// A count.
    #[derive(Debug, Serialize)]
    pub struct Count {
        /// How many.
        pub count: usize,
    }

    /// Greet someone.
    #[tool(set = "demo", tags(read_only))]
    pub async fn greet(
        #[depends(GREETING)] greeting: Greeting,
        /// Who.
        name: &str,
        /// How many times.
        #[arg(default = 1)]
        times: usize,
        ctx: &ToolContext,
    ) -> String {
        let _ = ctx.call_id();
        vec![format!("{} {name}", greeting.0); times].join(" ")
    }

    /// Count the entries matching a filter.
    #[tool(blocking)]
    pub fn count(#[input] filter: Filter) -> Result<Count, ToolError> {
        Ok(Count { count: filter.name.len() })
    }

    /// Check a list.
    #[tool(strict, sequential, timeout_ms = 500)]
    pub(crate) async fn check(
        /// The entries.
        entries: &[String],
        /// A note.
        note: Option<String>,
    ) -> Vec<ContentPart> {
        let _ = note;
        entries.iter().map(ContentPart::text).collect()
    }

    /// Do nothing.
    #[tool(name = "no-op", description = "Do nothing at all.")]
    pub(crate) fn noop() {}
}

/// Tools as methods, with the attributes imported by name (each import is used).
pub mod server {
    use tool_runtime::{tool, tools};

    /// A counter whose tools are methods.
    #[derive(Debug, Default)]
    pub struct Counter {
        count: std::sync::atomic::AtomicUsize,
    }

    #[tools]
    impl Counter {
        /// Count one more; returns the count.
        #[tool]
        pub fn bump(&self) -> String {
            (self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1).to_string()
        }
    }
}

fn main() {
    /// Answer inside a function body.
    #[tool_runtime::tool]
    fn local() -> &'static str {
        "local"
    }

    let registry = tool_runtime::Registry::builder()
        .tool(tools::greet::TOOL)
        .tool(tools::count::TOOL)
        .tool(tools::check::TOOL)
        .tool(tools::noop::TOOL)
        .tool(local::TOOL)
        .tools_of(std::sync::Arc::new(server::Counter::default()))
        .build()
        .unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["bump", "check", "count", "greet", "local", "no-op"]);
    assert_eq!(local(), "local");
}
