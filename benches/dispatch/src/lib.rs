//! The tools the benchmarks of this crate dispatch, written once with `#[tool]` and once by hand.
//!
//! Each tool exists as a plain function over its argument struct (the hand-written dispatch:
//! `serde_json::from_str`, the function, `serde_json::to_string`) and as a `#[tool]` function
//! with the same body. The rmcp versions live in the bench files, since rmcp is a dev-dependency
//! of this crate only.
//!
//! Run the benches with `cargo bench -p tool-benches --features rmcp` (see `BENCHMARKS.md` at the
//! repository root).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::__private::{ArgumentSchema, BoxFuture, DecodingSchema, Invoke, ToolMeta, ToolSpec, argument_schema};
use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputLayer, OutputStore};
use tool_runtime::prelude::*;

/// The arguments every dispatch benchmark sends to `search`.
pub const SEARCH_ARGUMENTS: &str = r#"{"query":"rust tool macros","limit":10,"tags":["a","b","c"]}"#;

/// The arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// The text to look for.
    pub query: String,
    /// At most this many results (default 10).
    pub limit: Option<u32>,
    /// Only results with one of these tags.
    pub tags: Vec<String>,
}

/// What `search` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchOutput {
    /// The number of results.
    pub count: u32,
    /// The first tag, or the query when no tag was given.
    pub first: String,
}

/// The body of `search`, shared by every version of the tool.
pub fn search_body(query: &str, limit: Option<u32>, tags: &[String]) -> SearchOutput {
    let count = limit.unwrap_or(10) + u32::try_from(tags.len()).unwrap_or(u32::MAX);
    let first = tags.first().map_or_else(|| query.to_owned(), Clone::clone);
    SearchOutput { count, first }
}

/// Hand-written dispatch of `search`: decode, run, encode.
///
/// # Errors
/// serde_json's error when the arguments do not decode.
pub fn search_by_hand(arguments: &str) -> Result<String, serde_json::Error> {
    let args: SearchArgs = serde_json::from_str(arguments)?;
    let output = search_body(&args.query, args.limit, &args.tags);
    serde_json::to_string(&output)
}

/// Search the index.
#[tool]
pub async fn search(
    /// The text to look for.
    query: String,
    /// At most this many results (default 10).
    limit: Option<u32>,
    /// Only results with one of these tags.
    tags: Vec<String>,
) -> SearchOutput {
    search_body(&query, limit, &tags)
}

/// `search` as a plain `fn`, as hand-written dispatch calls it: a few microseconds of computing,
/// so `inline`, which `#[tool]` gives a synchronous invoke (`Tool::call_now`), with no future.
#[tool(inline)]
pub fn search_fn(
    /// The text to look for.
    query: String,
    /// At most this many results (default 10).
    limit: Option<u32>,
    /// Only results with one of these tags.
    tags: Vec<String>,
) -> SearchOutput {
    search_body(&query, limit, &tags)
}

/// `search` as a plain `fn` without `inline`: each call hops to tokio's blocking pool and back,
/// the cost the `_blocking` row measures beside `search_fn`, which runs inline.
#[tool]
pub fn search_blocking(
    /// The text to look for.
    query: String,
    /// At most this many results (default 10).
    limit: Option<u32>,
    /// Only results with one of these tags.
    tags: Vec<String>,
) -> SearchOutput {
    search_body(&query, limit, &tags)
}

/// The arguments every nested-arguments benchmark sends to `configure`: 20 arguments, six of
/// them objects or arrays of objects two levels deep.
pub const NESTED_ARGUMENTS: &str = r#"{"name":"build","path":"src/lib.rs","pattern":"fn \\w+","limit":50,"offset":0,
"case_sensitive":true,"include_hidden":false,"max_depth":8,"timeout_ms":30000,"label":"ci",
"owner":{"name":"ada","email":"ada@example.com","address":{"street":"1 Loop Rd","city":"Cupertino","zip":"95014"}},
"filters":[{"field":"kind","op":"eq","value":"fn"},{"field":"vis","op":"ne","value":"priv"}],
"range":{"start":{"line":1,"column":1},"end":{"line":200,"column":80}},
"retry":{"attempts":3,"backoff":{"initial_ms":100,"factor":2.0}},
"env":[{"key":"RUST_LOG","value":"debug"},{"key":"CI","value":"1"}],
"output":{"format":"json","pretty":false,"fields":["path","line","text"]},
"tags":["a","b","c"],"weights":[0.5,0.25,0.25],"dry_run":false,"note":"nightly"}"#;

/// A postal address.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Address {
    /// Street and number.
    pub street: String,
    /// City.
    pub city: String,
    /// Postal code.
    pub zip: String,
}

/// A person.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Owner {
    /// Name.
    pub name: String,
    /// E-mail address.
    pub email: String,
    /// Postal address.
    pub address: Address,
}

/// One filter on a field.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// The field.
    pub field: String,
    /// `eq` or `ne`.
    pub op: String,
    /// The value compared with.
    pub value: String,
}

/// A 1-based line and column.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Position {
    /// Line, 1-based.
    pub line: u32,
    /// Column, 1-based.
    pub column: u32,
}

/// A range of positions, end inclusive.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Span {
    /// First position.
    pub start: Position,
    /// Last position.
    pub end: Position,
}

/// Exponential backoff.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Backoff {
    /// First wait in milliseconds.
    pub initial_ms: u64,
    /// Factor between waits.
    pub factor: f64,
}

/// Retry policy.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// Attempts in total.
    pub attempts: u32,
    /// Waits between attempts.
    pub backoff: Backoff,
}

/// One environment variable.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvVar {
    /// Name.
    pub key: String,
    /// Value.
    pub value: String,
}

/// Output format.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputFormat {
    /// `json` or `text`.
    pub format: String,
    /// Indent the output.
    pub pretty: bool,
    /// Fields to print.
    pub fields: Vec<String>,
}

/// The 20 arguments of `configure`, for the hand-written dispatch.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct ConfigureArgs {
    pub name: String,
    pub path: String,
    pub pattern: String,
    pub limit: Option<u32>,
    pub offset: Option<u32>,
    pub case_sensitive: bool,
    pub include_hidden: bool,
    pub max_depth: u32,
    pub timeout_ms: u64,
    pub label: Option<String>,
    pub owner: Owner,
    pub filters: Vec<Filter>,
    pub range: Span,
    pub retry: Retry,
    pub env: Vec<EnvVar>,
    pub output: OutputFormat,
    pub tags: Vec<String>,
    pub weights: Vec<f64>,
    pub dry_run: bool,
    pub note: Option<String>,
}

/// What `configure` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConfigureOutput {
    /// The number of filters, variables and tags.
    pub count: usize,
    /// The owner's city.
    pub first: String,
}

/// The body of `configure`: counts a few things and reads one nested field.
pub fn configure_body(owner: &Owner, filters: &[Filter], env: &[EnvVar], tags: &[String]) -> ConfigureOutput {
    ConfigureOutput { count: filters.len() + env.len() + tags.len(), first: owner.address.city.clone() }
}

/// Hand-written dispatch of `configure`.
///
/// # Errors
/// serde_json's error when the arguments do not decode.
pub fn configure_by_hand(arguments: &str) -> Result<String, serde_json::Error> {
    let args: ConfigureArgs = serde_json::from_str(arguments)?;
    serde_json::to_string(&configure_body(&args.owner, &args.filters, &args.env, &args.tags))
}

/// Configure a search run.
#[tool]
#[allow(clippy::too_many_arguments)]
pub async fn configure(
    /// Run name.
    name: String,
    /// Path searched.
    path: String,
    /// Regex searched for.
    pattern: String,
    /// At most this many results.
    limit: Option<u32>,
    /// Results skipped.
    offset: Option<u32>,
    /// Match case.
    case_sensitive: bool,
    /// Search hidden files.
    include_hidden: bool,
    /// Directory depth.
    max_depth: u32,
    /// Time limit in milliseconds.
    timeout_ms: u64,
    /// Label of the run.
    label: Option<String>,
    /// Who runs it.
    owner: Owner,
    /// Filters on the results.
    filters: Vec<Filter>,
    /// Lines searched.
    range: Span,
    /// Retry policy.
    retry: Retry,
    /// Environment of the run.
    env: Vec<EnvVar>,
    /// Output format.
    output: OutputFormat,
    /// Tags.
    tags: Vec<String>,
    /// Weights.
    weights: Vec<f64>,
    /// Only print what would run.
    dry_run: bool,
    /// Free text.
    note: Option<String>,
) -> ConfigureOutput {
    let _ = (name, path, pattern, limit, offset, case_sensitive, include_hidden, max_depth, timeout_ms);
    let _ = (label, range, retry, output, weights, dry_run, note);
    configure_body(&owner, &filters, &env, &tags)
}

/// A registry of `search`, `search_fn`, `search_blocking` and `configure` on the core path (no
/// output layer).
///
/// # Panics
/// Never: the names differ.
pub fn core_registry() -> Registry {
    Registry::builder()
        .tool(search::TOOL)
        .tool(search_fn::TOOL)
        .tool(search_blocking::TOOL)
        .tool(configure::TOOL)
        .build()
        .expect("distinct names")
}

/// A registry of `search`, `search_fn` and `configure` with the default output layer over an
/// in-memory store.
///
/// # Panics
/// Never: the names differ.
pub fn output_registry() -> Registry {
    let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new());
    Registry::builder()
        .tool(search::TOOL)
        .tool(search_fn::TOOL)
        .tool(configure::TOOL)
        .output(OutputLayer::new())
        .override_dependency(&OUTPUT_STORE, store)
        .build()
        .expect("distinct names")
}

fn search_invoke<'a>(raw: &'a str, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
    Box::pin(async move {
        let args: SearchArgs = serde_json::from_str(raw).map_err(|e| ToolError::Failed(e.to_string()))?;
        let out = search_body(&args.query, args.limit, &args.tags);
        Ok(ToolResult::text(serde_json::to_string(&out).unwrap_or_default()))
    })
}

/// `search`'s arguments as `#[tool]` describes them: each argument's name, description and type,
/// the schema assembled from schemars' type information at first use.
pub static SEARCH_ARGUMENT_SCHEMAS: [ArgumentSchema; 3] = [
    ArgumentSchema::new("query", "The text to look for.", false, argument_schema::<String>),
    ArgumentSchema::new("limit", "At most this many results (default 10).", false, argument_schema::<Option<u32>>),
    ArgumentSchema::new("tags", "Only results with one of these tags.", false, argument_schema::<Vec<String>>),
];

/// `n` tools named `tool_0000` ... with `search`'s schema (built at run time from schemars'
/// type information, as `#[tool]` does) and a hand-written invoke that reads no context; their
/// definitions are not built yet.
pub fn fresh_specs(n: usize) -> Vec<Arc<dyn Tool>> {
    (0..n)
        .map(|i| {
            let name: &'static str = Box::leak(format!("tool_{i:04}").into_boxed_str());
            let spec = ToolSpec::decoded(
                name,
                "Search the index.",
                None,
                module_path!(),
                ToolMeta::new(false, false, None, None, &[]),
                DecodingSchema::Arguments(&SEARCH_ARGUMENT_SCHEMAS),
                Invoke::Async(search_invoke),
            )
            // As `#[tool]` marks a function that takes no context: `search_invoke` reads none.
            .context_free();
            Arc::new(spec) as Arc<dyn Tool>
        })
        .collect()
}

/// A registry of `tools` (core path).
///
/// # Panics
/// When two tools share a name.
pub fn registry_of(tools: Vec<Arc<dyn Tool>>) -> Registry {
    tools.into_iter().fold(Registry::builder(), |b, t| b.tool_dyn(t)).build().expect("distinct names")
}
