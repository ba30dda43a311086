//! Decoding a tool call's arguments alone, beside `serde_json::from_str` of the same struct: the
//! `search` arguments (flat: three scalar or scalar-list fields) and the nested `configure`
//! arguments (20 fields, objects two levels deep), each through `tool_runtime::__private::decode`
//! (what a `#[tool]` function calls), plus the `search` arguments with an optional `null` (the
//! full path) and with a wrong type (an error, which `from_str` reports without a path).
//!
//! `cargo bench -p tool-benches --bench decode`

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tool_benches::{ConfigureArgs, NESTED_ARGUMENTS, SEARCH_ARGUMENT_SCHEMAS, SEARCH_ARGUMENTS, SearchArgs};
use tool_runtime::__private::{BoxFuture, DecodingSchema, Invoke, ToolMeta, ToolSpec};
use tool_runtime::prelude::*;

fn never_called<'a>(_: &'a str, _: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
    Box::pin(async { Err(ToolError::Failed("not called by the decode benchmarks".to_owned())) })
}

fn configure_schema() -> Value {
    tool_runtime::schema::arguments_schema::<ConfigureArgs>()
}

/// `search` with its arguments described as `#[tool]` describes them, so that the decoder knows
/// what `#[tool]`'s spec knows (the `minimum: 0` of `limit` is the type's own: the arguments are
/// flat).
static SEARCH: ToolSpec = ToolSpec::decoded(
    "search",
    "Search.",
    None,
    module_path!(),
    ToolMeta::DEFAULT,
    DecodingSchema::Arguments(&SEARCH_ARGUMENT_SCHEMAS),
    Invoke::Async(never_called),
);
static CONFIGURE: ToolSpec =
    ToolSpec::new("configure", "Configure.", None, module_path!(), ToolMeta::DEFAULT, configure_schema, never_called);

fn one<T: DeserializeOwned + JsonSchema>(
    c: &mut Criterion,
    group_name: &str,
    spec: &'static ToolSpec,
    arguments: &'static str,
) {
    // Both decode (or both refuse) the same text.
    assert_eq!(
        serde_json::from_str::<T>(arguments).is_ok(),
        tool_runtime::__private::decode::<T>(spec, arguments).is_ok(),
        "{group_name}"
    );
    let mut group = c.benchmark_group(group_name);
    group.bench_function("from_str", |b| b.iter(|| serde_json::from_str::<T>(black_box(arguments)).ok()));
    group.bench_function("ours_decode", |b| {
        b.iter(|| tool_runtime::__private::decode::<T>(spec, black_box(arguments)).ok());
    });
    group.finish();
}

fn decode(c: &mut Criterion) {
    one::<SearchArgs>(c, "decode_search", &SEARCH, SEARCH_ARGUMENTS);
    one::<ConfigureArgs>(c, "decode_nested", &CONFIGURE, NESTED_ARGUMENTS);
    one::<SearchArgs>(
        c,
        "decode_search_null",
        &SEARCH,
        r#"{"query":"rust tool macros","limit":null,"tags":["a","b","c"]}"#,
    );
    one::<SearchArgs>(
        c,
        "decode_search_error",
        &SEARCH,
        r#"{"query":"rust tool macros","limit":"10","tags":["a","b","c"]}"#,
    );
}

criterion_group!(benches, decode);
criterion_main!(benches);
