//! The code `#[tool]` generates for each function form, tried against hostile arguments: a sync
//! tool (called through its future here; `sync_tools.rs` tries every path) and its `async` twin
//! decode and answer exactly alike, nested and `#[input]` arguments refuse unknown keys at every
//! depth, and every return form, panic and error reaches the model as its documented text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime as rt;
use tool_runtime::ToolSpec;
use tool_runtime::prelude::*;

/// What a direct call of `spec` gives: `ok: <text>` or `err: <error's message>`.
async fn run(spec: &'static ToolSpec, arguments: &str) -> String {
    let ctx = ToolContext::new();
    match spec.call(arguments, &ctx).await {
        Ok(result) => format!("ok: {result:?}"),
        Err(error) => format!("err: {error}"),
    }
}

/// What the model sees for a call through a registry holding `spec`: `ok: ..` or `error: ..`.
async fn through_registry(spec: &'static ToolSpec, arguments: &str) -> String {
    let registry = Registry::builder().tool(spec).build().unwrap();
    let message = registry.call(&ToolCall::new("c1", spec.name(), arguments), &ToolContext::new()).await;
    format!("{}: {}", if message.is_error { "error" } else { "ok" }, message.text())
}

/// Asserts that the sync and async forms answer `inputs` alike, and returns their answers.
async fn twins(sync: &'static ToolSpec, asynchronous: &'static ToolSpec, inputs: &[&str]) -> Vec<String> {
    let mut answers = Vec::new();
    for input in inputs {
        let a = run(sync, input).await;
        let b = run(asynchronous, input).await.replace(asynchronous.name(), sync.name());
        assert_eq!(a, b, "the sync and async forms differ on {input:?}");
        answers.push(a);
    }
    answers
}

// ---------------------------------------------------------------------------------------------
// Borrowed arguments.

/// Joins borrowed arguments.
#[tool]
fn borrowed_sync(
    /// A text.
    text: &str,
    /// Numbers.
    items: &[u32],
    /// A path.
    path: PathBuf,
    /// An optional note.
    note: Option<String>,
) -> String {
    format!("{text}|{items:?}|{}|{note:?}", Path::display(&path))
}

/// Joins borrowed arguments.
#[tool]
async fn borrowed_async(
    /// A text.
    text: &str,
    /// Numbers.
    items: &[u32],
    /// A path.
    path: PathBuf,
    /// An optional note.
    note: Option<String>,
) -> String {
    format!("{text}|{items:?}|{}|{note:?}", Path::display(&path))
}

const BORROWED_INPUTS: &[&str] = &[
    r#"{"text":"a","items":[1,2],"path":"/tmp/x","note":"n"}"#,
    r#"{"text":"a","items":[],"path":"p","note":null}"#,
    r#"{"text":"a","items":[],"path":"p"}"#,
    r#"{"text":"a","items":[],"path":"p","extra":1}"#,
    r#"{"text":"a","items":[],"path":"p","text":"b"}"#,
    r#"{"text":null,"items":[],"path":"p"}"#,
    r#"{"text":"a","items":[-1],"path":"p"}"#,
    r#"{"text":"a","items":[1]}"#,
    r#"{"text":"a","items":[],"path":"p"} x"#,
    "\u{feff}{\"text\":\"a\",\"items\":[],\"path\":\"p\"}",
    "[]",
    "null",
    "",
];

#[tokio::test]
async fn sync_and_async_tools_with_borrowed_arguments_decode_alike() {
    let answers = twins(borrowed_sync::TOOL, borrowed_async::TOOL, BORROWED_INPUTS).await;
    assert_eq!(
        answers,
        [
            "ok: Text(\"a|[1, 2]|/tmp/x|Some(\\\"n\\\")\")",
            "ok: Text(\"a|[]|p|None\")",
            "ok: Text(\"a|[]|p|None\")",
            "err: invalid arguments for `borrowed_sync`: unknown field `extra`; expected one of `items`, `note`, `path`, `text`",
            "err: invalid arguments for `borrowed_sync`: `text`: the field is sent twice; send each field once",
            "err: invalid arguments for `borrowed_sync`: `text`: invalid type: null, expected a string",
            "err: invalid arguments for `borrowed_sync`: `items[0]`: must be at least 0; got -1",
            "err: invalid arguments for `borrowed_sync`: missing field `path`",
            "err: invalid arguments for `borrowed_sync`: not valid JSON: trailing characters at line 1 column 36; send one JSON object",
            "ok: Text(\"a|[]|p|None\")",
            "err: invalid arguments for `borrowed_sync`: expected a JSON object of arguments, got an array",
            "err: invalid arguments for `borrowed_sync`: expected a JSON object of arguments, got null",
            "err: invalid arguments for `borrowed_sync`: missing fields `text`, `items`, `path`"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Defaults, renames and raw identifiers.

fn three() -> u32 {
    3
}

/// Defaults and renames.
#[tool]
fn defaults_sync(
    /// A count.
    #[arg(default)]
    n: u32,
    /// A word.
    #[arg(default = "x")]
    word: String,
    /// A kind.
    #[arg(rename = "type")]
    kind: String,
    /// A number.
    #[arg(default = three())]
    m: u32,
) -> String {
    format!("{n}|{word}|{kind}|{m}")
}

/// Defaults and renames.
#[tool]
async fn defaults_async(
    /// A count.
    #[arg(default)]
    n: u32,
    /// A word.
    #[arg(default = "x")]
    word: String,
    /// A kind.
    #[arg(rename = "type")]
    kind: String,
    /// A number.
    #[arg(default = three())]
    m: u32,
) -> String {
    format!("{n}|{word}|{kind}|{m}")
}

const DEFAULTS_INPUTS: &[&str] = &[
    r#"{"type":"t"}"#,
    r#"{"type":"t","n":null,"word":null,"m":null}"#,
    r#"{"type":"t","n":5,"word":"w","m":9}"#,
    r#"{"kind":"t"}"#,
    r#"{"type":"t","type":"u"}"#,
    r#"{"type":null}"#,
    r#"{"type":"t","n":-1}"#,
    "{}",
];

#[tokio::test]
async fn sync_and_async_tools_with_defaults_and_renames_decode_alike() {
    let answers = twins(defaults_sync::TOOL, defaults_async::TOOL, DEFAULTS_INPUTS).await;
    assert_eq!(
        answers,
        [
            "ok: Text(\"0|x|t|3\")",
            "ok: Text(\"0|x|t|3\")",
            "ok: Text(\"5|w|t|9\")",
            "err: invalid arguments for `defaults_sync`: unknown field `kind`; expected one of `m`, `n`, `type`, `word`",
            "err: invalid arguments for `defaults_sync`: `type`: the field is sent twice; send each field once",
            "err: invalid arguments for `defaults_sync`: `type`: invalid type: null, expected a string",
            "err: invalid arguments for `defaults_sync`: `n`: must be at least 0; got -1",
            "err: invalid arguments for `defaults_sync`: missing field `type`"
        ]
    );
}

/// A raw identifier as name and argument.
#[tool]
fn r#type(
    /// The type.
    r#type: String,
    /// A match.
    r#match: u8,
) -> String {
    format!("{type}/{match}", type = r#type, match = r#match)
}

#[tokio::test]
async fn raw_identifiers_name_the_tool_and_the_arguments_without_their_prefix() {
    let mut got: Vec<String> = Vec::new();
    assert_eq!(r#type::TOOL.name(), "type");
    got.push(run(r#type::TOOL, r#"{"type":"a","match":2}"#).await);
    got.push(run(r#type::TOOL, r#"{"r#type":"a","match":2}"#).await);
    assert_eq!(
        got,
        [
            "ok: Text(\"a/2\")",
            "err: invalid arguments for `type`: unknown field `r#type`; expected one of `match`, `type`"
        ]
    );
}

/// Arguments named like what the generated code uses.
#[tool]
fn generated_names(
    /// One.
    decoded: String,
    /// Two.
    text: String,
    /// Three.
    lazy: u8,
    /// Four.
    json: u8,
    /// Five.
    ctx: u8,
    /// Six.
    raw: u8,
    /// Seven.
    out: u8,
) -> String {
    format!("{decoded}{text}{lazy}{json}{ctx}{raw}{out}")
}

#[tokio::test]
async fn arguments_named_like_generated_items_are_passed_as_sent() {
    let mut got: Vec<String> = Vec::new();
    let args = r#"{"decoded":"d","text":"t","lazy":1,"json":2,"ctx":3,"raw":4,"out":5}"#;
    got.push(run(generated_names::TOOL, args).await);
    assert_eq!(got, ["ok: Text(\"dt12345\")"]);
}

// ---------------------------------------------------------------------------------------------
// Nested arguments and `#[input]` types that ignore unknown fields themselves.

/// A leaf that ignores unknown fields.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Leaf {
    /// A name.
    name: String,
}

/// A tree that ignores unknown fields.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Node {
    /// The label.
    label: String,
    /// The children.
    #[serde(default)]
    children: Vec<Node>,
}

/// Input that ignores unknown fields at every level.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Deep {
    /// A leaf.
    leaf: Leaf,
    /// Leaves.
    #[serde(default)]
    list: Vec<Leaf>,
    /// Maybe a leaf.
    #[serde(default)]
    maybe: Option<Leaf>,
    /// Named leaves.
    #[serde(default)]
    map: BTreeMap<String, Leaf>,
    /// A tree.
    #[serde(default)]
    tree: Option<Node>,
}

/// Echoes its input.
#[tool]
fn input_sync(#[input] deep: Deep) -> String {
    serde_json::to_string(&deep).unwrap()
}

/// Echoes its input.
#[tool]
async fn input_async(#[input] deep: Deep) -> String {
    serde_json::to_string(&deep).unwrap()
}

/// Echoes nested arguments.
#[tool]
fn nested_sync(
    /// A leaf.
    leaf: Leaf,
    /// Leaves.
    list: Vec<Leaf>,
    /// Maybe a leaf.
    maybe: Option<Leaf>,
    /// Named leaves.
    map: BTreeMap<String, Leaf>,
    /// A tree.
    tree: Option<Node>,
) -> String {
    format!("{leaf:?}|{list:?}|{maybe:?}|{map:?}|{tree:?}")
}

/// Echoes nested arguments.
#[tool]
async fn nested_async(
    /// A leaf.
    leaf: Leaf,
    /// Leaves.
    list: Vec<Leaf>,
    /// Maybe a leaf.
    maybe: Option<Leaf>,
    /// Named leaves.
    map: BTreeMap<String, Leaf>,
    /// A tree.
    tree: Option<Node>,
) -> String {
    format!("{leaf:?}|{list:?}|{maybe:?}|{map:?}|{tree:?}")
}

const DEEP_INPUTS: &[&str] = &[
    r#"{"leaf":{"name":"a"},"list":[],"map":{}}"#,
    r#"{"leaf":{"name":"a","x":1},"list":[],"map":{}}"#,
    r#"{"leaf":{"name":"a"},"list":[{"name":"b"},{"name":"c","x":1}],"map":{}}"#,
    r#"{"leaf":{"name":"a"},"list":[],"maybe":{"name":"m","x":1},"map":{}}"#,
    r#"{"leaf":{"name":"a"},"list":[],"map":{"k":{"name":"v","x":1}}}"#,
    r#"{"leaf":{"name":"a"},"list":[],"map":{},"tree":{"label":"r","children":[{"label":"c","children":[{"label":"g","x":1}]}]}}"#,
    r#"{"leaf":{"name":"a"},"list":[],"map":{},"tree":{"label":"r","children":[{"label":"c","children":[{"label":"g"}]}]}}"#,
    r#"{"leaf":{"name":"a","name":"b"},"list":[],"map":{}}"#,
    r#"{"leaf":{"name":"a"},"list":[],"map":{"k":{"name":"v"},"k":{"name":"w"}}}"#,
    r#"{"leaf":{"name":"a"},"list":[],"maybe":null,"map":{},"tree":null}"#,
    r#"{"leaf":{"name":"a"},"list":[],"map":{},"extra":true}"#,
];

#[tokio::test]
async fn an_input_type_that_ignores_unknown_fields_is_refused_them_at_every_depth_sync_and_async_alike() {
    let answers = twins(input_sync::TOOL, input_async::TOOL, DEEP_INPUTS).await;
    assert_eq!(
        answers,
        [
            "ok: Text(\"{\\\"leaf\\\":{\\\"name\\\":\\\"a\\\"},\\\"list\\\":[],\\\"maybe\\\":null,\\\"map\\\":{},\\\"tree\\\":null}\")",
            "err: invalid arguments for `input_sync`: unknown field `leaf.x`; expected one of `name`",
            "err: invalid arguments for `input_sync`: unknown field `list[1].x`; expected one of `name`",
            "err: invalid arguments for `input_sync`: unknown field `maybe.x`; expected one of `name`",
            "err: invalid arguments for `input_sync`: unknown field `map.k.x`; expected one of `name`",
            "err: invalid arguments for `input_sync`: unknown field `tree.children[0].children[0].x`; expected one of `children`, `label`",
            "ok: Text(\"{\\\"leaf\\\":{\\\"name\\\":\\\"a\\\"},\\\"list\\\":[],\\\"maybe\\\":null,\\\"map\\\":{},\\\"tree\\\":{\\\"label\\\":\\\"r\\\",\\\"children\\\":[{\\\"label\\\":\\\"c\\\",\\\"children\\\":[{\\\"label\\\":\\\"g\\\",\\\"children\\\":[]}]}]}}\")",
            "err: invalid arguments for `input_sync`: `leaf.name`: the field is sent twice; send each field once",
            "err: invalid arguments for `input_sync`: `map.k`: the field is sent twice; send each field once",
            "ok: Text(\"{\\\"leaf\\\":{\\\"name\\\":\\\"a\\\"},\\\"list\\\":[],\\\"maybe\\\":null,\\\"map\\\":{},\\\"tree\\\":null}\")",
            "err: invalid arguments for `input_sync`: unknown field `extra`; expected one of `leaf`, `list`, `map`, `maybe`, `tree`"
        ]
    );
}

#[tokio::test]
async fn nested_arguments_that_ignore_unknown_fields_are_refused_them_at_every_depth_sync_and_async_alike() {
    let answers = twins(nested_sync::TOOL, nested_async::TOOL, DEEP_INPUTS).await;
    assert_eq!(
        answers,
        [
            "ok: Text(\"Leaf { name: \\\"a\\\" }|[]|None|{}|None\")",
            "err: invalid arguments for `nested_sync`: unknown field `leaf.x`; expected one of `name`",
            "err: invalid arguments for `nested_sync`: unknown field `list[1].x`; expected one of `name`",
            "err: invalid arguments for `nested_sync`: unknown field `maybe.x`; expected one of `name`",
            "err: invalid arguments for `nested_sync`: unknown field `map.k.x`; expected one of `name`",
            "err: invalid arguments for `nested_sync`: unknown field `tree.children[0].children[0].x`; expected one of `children`, `label`",
            "ok: Text(\"Leaf { name: \\\"a\\\" }|[]|None|{}|Some(Node { label: \\\"r\\\", children: [Node { label: \\\"c\\\", children: [Node { label: \\\"g\\\", children: [] }] }] })\")",
            "err: invalid arguments for `nested_sync`: `leaf.name`: the field is sent twice; send each field once",
            "err: invalid arguments for `nested_sync`: `map.k`: the field is sent twice; send each field once",
            "ok: Text(\"Leaf { name: \\\"a\\\" }|[]|None|{}|None\")",
            "err: invalid arguments for `nested_sync`: unknown field `extra`; expected one of `leaf`, `list`, `map`, `maybe`, `tree`"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Return forms, errors and panics.

/// A serialisable result.
#[derive(Serialize, JsonSchema)]
struct Sum {
    /// The total.
    total: i64,
}

/// An error like anyhow's: `Display` and `Debug`, not `std::error::Error`.
#[derive(Debug)]
struct Oops(String);

impl std::fmt::Display for Oops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oops: {}", self.0)
    }
}

/// Text or an error.
#[tool]
fn returns_result_text(
    /// Fail?
    fail: bool,
) -> Result<String, std::io::Error> {
    if fail { Err(std::io::Error::other("the disk is full")) } else { Ok("fine".to_owned()) }
}

/// JSON or an error.
#[tool]
fn returns_result_json(
    /// Fail?
    fail: bool,
) -> Result<Sum, Oops> {
    if fail { Err(Oops("bad".to_owned())) } else { Ok(Sum { total: 3 }) }
}

/// JSON with an output schema.
#[tool(output_schema)]
fn returns_structured() -> Result<Sum, Oops> {
    Ok(Sum { total: 4 })
}

/// A tool result.
#[tool]
fn returns_tool_result() -> ToolResult {
    ToolResult::Json(serde_json::json!({"b": 1, "a": 2}))
}

/// Nothing.
#[tool]
fn returns_unit() {}

/// Panics.
#[tool]
fn panics_sync(
    /// What to say.
    message: String,
) -> String {
    panic!("it broke: {message}")
}

/// Panics.
#[tool]
async fn panics_async(
    /// What to say.
    message: String,
) -> String {
    panic!("it broke: {message}")
}

#[tokio::test]
async fn every_return_form_of_a_sync_tool_reaches_the_model_as_its_text() {
    let mut got: Vec<String> = Vec::new();
    got.push(run(returns_result_text::TOOL, r#"{"fail":false}"#).await);
    got.push(run(returns_result_text::TOOL, r#"{"fail":true}"#).await);
    got.push(run(returns_result_json::TOOL, r#"{"fail":false}"#).await);
    got.push(run(returns_result_json::TOOL, r#"{"fail":true}"#).await);
    got.push(run(returns_structured::TOOL, "").await);
    got.push(run(returns_tool_result::TOOL, "").await);
    got.push(run(returns_unit::TOOL, "").await);
    assert_eq!(
        got,
        [
            "ok: Text(\"fine\")",
            "err: the disk is full",
            "ok: Text(\"{\\\"total\\\":3}\")",
            "err: oops: bad",
            "ok: Structured { content: [Text { text: \"{\\\"total\\\":4}\" }], value: Object {\"total\": Number(4)} }",
            "ok: Json(Object {\"a\": Number(2), \"b\": Number(1)})",
            "ok: Text(\"\")"
        ]
    );
}

#[tokio::test]
async fn a_sync_tool_error_through_the_registry_is_an_error_message() {
    let mut got: Vec<String> = Vec::new();
    got.push(through_registry(returns_result_text::TOOL, r#"{"fail":true}"#).await);
    got.push(through_registry(returns_result_json::TOOL, r#"{"fail":true}"#).await);
    let registry = Registry::builder().tool(returns_structured::TOOL).build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "returns_structured", ""), &ToolContext::new()).await;
    assert_eq!(message.structured_content, Some(serde_json::json!({"total": 4})));
    assert_eq!(got, ["error: the disk is full", "error: oops: bad"]);
}

#[tokio::test]
async fn a_sync_tool_that_panics_is_a_panicked_message_like_an_async_one() {
    let mut got: Vec<String> = Vec::new();
    got.push(through_registry(panics_sync::TOOL, r#"{"message":"m"}"#).await);
    got.push(through_registry(panics_async::TOOL, r#"{"message":"m"}"#).await);
    let registry = Registry::builder().tool(panics_sync::TOOL).build().unwrap();
    let batch =
        registry.call_batch(&[ToolCall::new("c1", "panics_sync", r#"{"message":"b"}"#)], &ToolContext::new()).await;
    got.push(batch.messages[0].text().into_owned());
    assert_eq!(
        got,
        [
            "error: tool `panics_sync` panicked: it broke: m",
            "error: tool `panics_async` panicked: it broke: m",
            "tool `panics_sync` panicked: it broke: b"
        ]
    );
}

#[tokio::test]
async fn a_sync_tool_runs_when_its_future_is_first_polled_not_when_it_is_called() {
    let ctx = ToolContext::new();
    let future = panics_sync::TOOL.call(r#"{"message":"late"}"#, &ctx);
    drop(future);
}

// ---------------------------------------------------------------------------------------------
// Blocking tools, context and placement.

/// Blocks without the context.
#[tool(blocking)]
fn blocking_plain(
    /// A word.
    word: &str,
) -> String {
    word.to_uppercase()
}

/// Blocks with the context.
#[tool(blocking)]
fn blocking_ctx(
    /// A word.
    word: String,
    ctx: &ToolContext,
) -> String {
    format!("{word}@{}", ctx.call_id().unwrap_or("none"))
}

/// Reads the context.
#[tool]
fn sync_ctx(ctx: &ToolContext) -> String {
    ctx.call_id().unwrap_or("none").to_owned()
}

#[tokio::test]
async fn blocking_tools_run_with_and_without_the_context() {
    let mut got: Vec<String> = Vec::new();
    got.push(through_registry(blocking_plain::TOOL, r#"{"word":"hi"}"#).await);
    got.push(through_registry(blocking_ctx::TOOL, r#"{"word":"hi"}"#).await);
    got.push(through_registry(sync_ctx::TOOL, "").await);
    assert_eq!(got, ["ok: HI", "ok: hi@c1", "ok: c1"]);
}

#[test]
fn only_tools_without_context_or_dependencies_say_they_do_not_read_it() {
    let reads = |spec: &'static ToolSpec| spec.reads_context();
    assert_eq!(
        [
            reads(blocking_plain::TOOL),
            reads(blocking_ctx::TOOL),
            reads(sync_ctx::TOOL),
            reads(input_sync::TOOL),
            reads(returns_unit::TOOL)
        ],
        [false, true, true, false, false]
    );
}

mod inner {
    use tool_runtime::prelude::*;

    /// First in a module.
    #[tool]
    pub(crate) fn first(
        /// A.
        a: u8,
    ) -> String {
        format!("first {a}")
    }

    /// Second in a module.
    #[tool]
    pub(crate) async fn second(
        /// A.
        a: u8,
    ) -> String {
        format!("second {a}")
    }
}

#[tokio::test]
async fn tools_in_a_module_and_in_a_function_body_are_called_as_others() {
    let mut got: Vec<String> = Vec::new();
    /// In a body, sync.
    #[tool]
    fn in_body_sync(
        /// A.
        a: u8,
    ) -> String {
        format!("sync {a}")
    }

    /// In a body, async (its arguments struct goes into a module of its own).
    #[tool]
    async fn in_body_async(
        /// A.
        a: u8,
    ) -> String {
        format!("async {a}")
    }

    got.push(run(inner::first::TOOL, r#"{"a":1}"#).await);
    got.push(run(inner::second::TOOL, r#"{"a":2}"#).await);
    got.push(run(in_body_sync::TOOL, r#"{"a":3}"#).await);
    got.push(run(in_body_async::TOOL, r#"{"a":4}"#).await);
    assert_eq!(
        got,
        ["ok: Text(\"first 1\")", "ok: Text(\"second 2\")", "ok: Text(\"sync 3\")", "ok: Text(\"async 4\")"]
    );
}

// ---------------------------------------------------------------------------------------------
// Tools without arguments or with every argument defaulted.

/// No arguments.
#[tool]
fn none_sync() -> &'static str {
    "none"
}

/// No arguments.
#[tool]
async fn none_async() -> &'static str {
    "none"
}

const EMPTY_INPUTS: &[&str] =
    &["", "  \n", "{}", "null", "[]", "{} {}", "{}x", "\u{feff}{}", r#"{"a":1}"#, r#"{"a":null}"#, "\"{}\"", "{"];

#[tokio::test]
async fn a_tool_without_arguments_takes_only_nothing_or_an_empty_object_sync_and_async_alike() {
    let answers = twins(none_sync::TOOL, none_async::TOOL, EMPTY_INPUTS).await;
    assert_eq!(
        answers,
        [
            "ok: Text(\"none\")",
            "ok: Text(\"none\")",
            "ok: Text(\"none\")",
            "err: invalid arguments for `none_sync`: expected a JSON object of arguments, got null",
            "err: invalid arguments for `none_sync`: expected a JSON object of arguments, got an array",
            "err: invalid arguments for `none_sync`: not valid JSON: trailing characters at line 1 column 4; send one JSON object",
            "err: invalid arguments for `none_sync`: not valid JSON: trailing characters at line 1 column 3; send one JSON object",
            "ok: Text(\"none\")",
            "err: invalid arguments for `none_sync`: unknown field `a`; no fields are accepted there",
            "err: invalid arguments for `none_sync`: unknown field `a`; no fields are accepted there",
            "err: invalid arguments for `none_sync`: expected a JSON object of arguments, got a string",
            "err: invalid arguments for `none_sync`: not valid JSON: EOF while parsing an object at line 1 column 1; send one JSON object"
        ]
    );
}

/// Every argument defaulted.
#[tool]
fn all_defaults_sync(
    /// A.
    #[arg(default)]
    a: u8,
    /// B.
    #[arg(default = "b")]
    b: String,
) -> String {
    format!("{a}{b}")
}

/// Every argument defaulted.
#[tool]
async fn all_defaults_async(
    /// A.
    #[arg(default)]
    a: u8,
    /// B.
    #[arg(default = "b")]
    b: String,
) -> String {
    format!("{a}{b}")
}

#[tokio::test]
async fn a_tool_whose_arguments_are_all_defaulted_takes_nothing_sync_and_async_alike() {
    let answers = twins(all_defaults_sync::TOOL, all_defaults_async::TOOL, EMPTY_INPUTS).await;
    assert_eq!(
        answers,
        [
            "ok: Text(\"0b\")",
            "ok: Text(\"0b\")",
            "ok: Text(\"0b\")",
            "err: invalid arguments for `all_defaults_sync`: expected a JSON object of arguments, got null",
            "err: invalid arguments for `all_defaults_sync`: expected a JSON object of arguments, got an array",
            "err: invalid arguments for `all_defaults_sync`: not valid JSON: trailing characters at line 1 column 4; send one JSON object",
            "err: invalid arguments for `all_defaults_sync`: not valid JSON: trailing characters at line 1 column 3; send one JSON object",
            "ok: Text(\"0b\")",
            "ok: Text(\"1b\")",
            "ok: Text(\"0b\")",
            "err: invalid arguments for `all_defaults_sync`: expected a JSON object of arguments, got a string",
            "err: invalid arguments for `all_defaults_sync`: not valid JSON: EOF while parsing an object at line 1 column 1; send one JSON object"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Open values, unions, escaped keys, numbers and depth.

/// An operation, internally tagged.
#[derive(Debug, Deserialize, JsonSchema)]
#[expect(dead_code, reason = "the fields are read through `Debug`")]
#[serde(tag = "op")]
enum Op {
    /// Reads.
    Read {
        /// The path.
        path: String,
    },
    /// Writes.
    Write {
        /// The path.
        path: String,
        /// The content.
        content: String,
    },
}

/// Takes anything, a union and a number.
#[tool]
fn open_sync(
    /// Anything.
    value: serde_json::Value,
    /// An operation.
    op: Option<Op>,
    /// A count.
    #[arg(default)]
    n: u32,
) -> String {
    format!("{value}|{op:?}|{n}")
}

/// Takes anything, a union and a number.
#[tool]
async fn open_async(
    /// Anything.
    value: serde_json::Value,
    /// An operation.
    op: Option<Op>,
    /// A count.
    #[arg(default)]
    n: u32,
) -> String {
    format!("{value}|{op:?}|{n}")
}

#[tokio::test]
async fn open_values_unions_escaped_keys_and_numbers_decode_alike_sync_and_async() {
    let deep = format!(r#"{{"value":{}{}}}"#, "[".repeat(200), "]".repeat(200));
    let inputs = [
        r#"{"value":{"a":1,"b":{"c":null}}}"#,
        r#"{"value":{"a":1,"a":2}}"#,
        r#"{"value":[{"a":1,"a":2}]}"#,
        r#"{"value":1,"op":{"op":"Read","path":"p"}}"#,
        r#"{"value":1,"op":{"op":"Read","path":"p","content":"c"}}"#,
        r#"{"value":1,"op":{"op":"Delete"}}"#,
        r#"{"valu\u0065":1,"\u006e":2}"#,
        r#"{"value":1,"n":1.0}"#,
        r#"{"value":1,"n":1e2}"#,
        r#"{"value":1,"n":4294967296}"#,
        r#"{"value":1,"n":"3"}"#,
        &deep,
    ];
    let answers = twins(open_sync::TOOL, open_async::TOOL, &inputs).await;
    assert_eq!(
        answers,
        [
            "ok: Text(\"{\\\"a\\\":1,\\\"b\\\":{\\\"c\\\":null}}|None|0\")",
            "err: invalid arguments for `open_sync`: `value.a`: the field is sent twice; send each field once",
            "err: invalid arguments for `open_sync`: `value[0].a`: the field is sent twice; send each field once",
            "ok: Text(\"1|Some(Read { path: \\\"p\\\" })|0\")",
            "err: invalid arguments for `open_sync`: `op.content`: unknown field for `op` = `Read`; `Read` accepts `op`, `path`",
            "err: invalid arguments for `open_sync`: `op.op`: unknown variant `Delete`, expected `Read` or `Write`",
            "ok: Text(\"1|None|2\")",
            // JSON Schema takes `1.0` and `1e2` as the integers 1 and 100.
            "ok: Text(\"1|None|1\")",
            "ok: Text(\"1|None|100\")",
            "err: invalid arguments for `open_sync`: `n`: invalid value: integer `4294967296`, expected an integer from 0 to 4294967295",
            "err: invalid arguments for `open_sync`: `n`: invalid type: string \"3\", expected an integer from 0 to 4294967295",
            "err: invalid arguments for `open_sync`: not valid JSON: recursion limit exceeded at line 1 column 136; send one JSON object"
        ]
    );
}

#[tokio::test]
async fn an_escaped_key_is_the_key_it_spells_for_the_key_check_of_an_input_type() {
    let inputs = [
        r#"{"le\u0061f":{"n\u0061me":"a"},"list":[],"map":{}}"#,
        r#"{"leaf":{"name":"a","\u0078":1},"list":[],"map":{}}"#,
    ];
    let answers = twins(input_sync::TOOL, input_async::TOOL, &inputs).await;
    assert_eq!(
        answers,
        [
            "ok: Text(\"{\\\"leaf\\\":{\\\"name\\\":\\\"a\\\"},\\\"list\\\":[],\\\"maybe\\\":null,\\\"map\\\":{},\\\"tree\\\":null}\")",
            "err: invalid arguments for `input_sync`: unknown field `leaf.x`; expected one of `name`"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// More sync forms: the context beside an `#[input]`, a non-text panic, boxed errors, a struct
// with an output schema, and a default computed by a function of the enclosing body.

/// Input and the context.
#[tool]
fn input_and_ctx(#[input] leaf: Leaf, ctx: &ToolContext) -> String {
    format!("{}@{}", leaf.name, ctx.call_id().unwrap_or("none"))
}

/// Panics with a number.
#[tool]
fn panics_with_a_number() -> String {
    std::panic::panic_any(5_u8)
}

/// Fails with a boxed error.
#[tool]
fn boxed_error() -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    Err("no such file".into())
}

/// A struct with its schema.
#[tool(output_schema)]
fn structured_struct() -> Sum {
    Sum { total: 7 }
}

#[tokio::test]
async fn more_sync_forms_answer_as_their_async_counterparts_would() {
    fn ten() -> u32 {
        10
    }

    /// A default from the body.
    #[tool]
    fn body_default(
        /// A count.
        #[arg(default = ten())]
        n: u32,
    ) -> String {
        n.to_string()
    }

    let got = [
        through_registry(input_and_ctx::TOOL, r#"{"name":"a"}"#).await,
        through_registry(input_and_ctx::TOOL, r#"{"name":"a","x":1}"#).await,
        through_registry(panics_with_a_number::TOOL, "").await,
        through_registry(boxed_error::TOOL, "").await,
        run(structured_struct::TOOL, "").await,
        run(body_default::TOOL, "").await,
        run(body_default::TOOL, r#"{"n":null}"#).await,
    ];
    assert_eq!(
        got,
        [
            "ok: a@c1",
            "error: invalid arguments for `input_and_ctx`: unknown field `x`; expected one of `name`",
            "error: tool `panics_with_a_number` panicked: Box<dyn Any>",
            "error: no such file",
            "ok: Structured { content: [Text { text: \"{\\\"total\\\":7}\" }], value: Object {\"total\": Number(7)} }",
            "ok: Text(\"10\")",
            "ok: Text(\"10\")"
        ]
    );
    assert_eq!(
        structured_struct::TOOL.definition().output_schema.as_ref().map(|s| s["properties"]["total"]["type"].clone()),
        Some(serde_json::json!("integer"))
    );
}

/// The flattened part of [`Flat`].
#[derive(Debug, Deserialize, JsonSchema)]
#[expect(dead_code, reason = "the fields are read through `Debug`")]
struct FlatInner {
    /// A.
    a: u8,
}

/// An input with a flattened part and an alias, ignoring unknown fields.
#[derive(Debug, Deserialize, JsonSchema)]
#[expect(dead_code, reason = "the fields are read through `Debug`")]
struct Flat {
    /// X.
    #[serde(alias = "ex")]
    x: u8,
    /// The rest.
    #[serde(flatten)]
    inner: FlatInner,
}

/// Echoes a flattened input.
#[tool]
fn flat_sync(#[input] flat: Flat) -> String {
    format!("{flat:?}")
}

/// Echoes a flattened input.
#[tool]
async fn flat_async(#[input] flat: Flat) -> String {
    format!("{flat:?}")
}

#[tokio::test]
async fn a_flattened_input_refuses_a_key_sent_twice_an_alias_and_an_unknown_key_sync_and_async_alike() {
    let inputs = [
        r#"{"x":1,"a":2}"#,
        r#"{"x":1,"a":2,"a":3}"#,
        r#"{"x":1,"x":1,"a":2}"#,
        r#"{"x":1,"a":2,"b":3}"#,
        r#"{"ex":1,"a":2}"#,
        r#"{"x":1,"a":null}"#,
    ];
    let answers = twins(flat_sync::TOOL, flat_async::TOOL, &inputs).await;
    assert_eq!(
        answers,
        [
            "ok: Text(\"Flat { x: 1, inner: FlatInner { a: 2 } }\")",
            "err: invalid arguments for `flat_sync`: `a`: the field is sent twice; send each field once",
            "err: invalid arguments for `flat_sync`: `x`: the field is sent twice; send each field once",
            "err: invalid arguments for `flat_sync`: unknown field `b`; expected one of `a`, `x`",
            "err: invalid arguments for `flat_sync`: unknown field `ex`; expected one of `a`, `x`",
            "err: invalid arguments for `flat_sync`: `a`: invalid type: null, expected an integer from 0 to 255"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// The runtime named through a `use` alias, which a module beside the function does not see.

/// Async, every argument generic, the runtime named by an alias.
#[tool(crate = rt)]
async fn aliased_async(
    /// A.
    a: u8,
) -> String {
    format!("async {a}")
}

/// Sync, the runtime named by an alias.
#[tool(crate = rt)]
fn aliased_sync(
    /// A.
    a: u8,
) -> String {
    format!("sync {a}")
}

/// Async, every argument generic, the runtime named by an absolute path.
#[tool(crate = ::tool_runtime)]
async fn absolute_async(
    /// A.
    a: u8,
) -> String {
    format!("absolute {a}")
}

#[tokio::test]
async fn the_runtime_named_by_a_use_alias_serves_sync_and_async_tools() {
    let got = [
        run(aliased_async::TOOL, r#"{"a":1}"#).await,
        run(aliased_sync::TOOL, r#"{"a":2}"#).await,
        run(absolute_async::TOOL, r#"{"a":3}"#).await,
        run(aliased_async::TOOL, r#"{"a":1,"b":2}"#).await,
    ];
    assert_eq!(
        got,
        [
            "ok: Text(\"async 1\")",
            "ok: Text(\"sync 2\")",
            "ok: Text(\"absolute 3\")",
            "err: invalid arguments for `aliased_async`: unknown field `b`; expected one of `a`"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Schemas of the twins, and renames in the arguments struct's own module.

/// Renamed and raw arguments, sync.
#[tool]
fn renamed_sync(
    /// The kind.
    #[arg(rename = "type")]
    kind: String,
    /// A match.
    r#match: Option<u8>,
) -> String {
    format!("{kind}/{match:?}", match = r#match)
}

/// Renamed and raw arguments, async: every argument generic, so its struct is in a module.
#[tool]
async fn renamed_async(
    /// The kind.
    #[arg(rename = "type")]
    kind: String,
    /// A match.
    r#match: Option<u8>,
) -> String {
    format!("{kind}/{match:?}", match = r#match)
}

#[tokio::test]
async fn renamed_and_raw_arguments_decode_alike_in_the_struct_beside_the_function_and_in_its_module() {
    let inputs = [r#"{"type":"t","match":1}"#, r#"{"type":"t"}"#, r#"{"kind":"t"}"#, r#"{"type":"t","r#match":1}"#];
    let answers = twins(renamed_sync::TOOL, renamed_async::TOOL, &inputs).await;
    assert_eq!(
        answers,
        [
            "ok: Text(\"t/Some(1)\")",
            "ok: Text(\"t/None\")",
            "err: invalid arguments for `renamed_sync`: unknown field `kind`; expected one of `match`, `type`",
            "err: invalid arguments for `renamed_sync`: unknown field `r#match`; expected one of `match`, `type`"
        ]
    );
}

#[test]
fn sync_and_async_twins_show_the_model_the_same_schema() {
    let pairs: [(&'static ToolSpec, &'static ToolSpec); 8] = [
        (borrowed_sync::TOOL, borrowed_async::TOOL),
        (defaults_sync::TOOL, defaults_async::TOOL),
        (input_sync::TOOL, input_async::TOOL),
        (nested_sync::TOOL, nested_async::TOOL),
        (none_sync::TOOL, none_async::TOOL),
        (all_defaults_sync::TOOL, all_defaults_async::TOOL),
        (open_sync::TOOL, open_async::TOOL),
        (renamed_sync::TOOL, renamed_async::TOOL),
    ];
    for (sync, asynchronous) in pairs {
        assert_eq!(sync.definition().input_schema, asynchronous.definition().input_schema, "{}", sync.name());
    }
    assert_eq!(
        renamed_async::TOOL.definition().input_schema,
        serde_json::json!({
            "type": "object",
            "properties": {
                "type": {"description": "The kind.", "type": "string"},
                "match": {"description": "A match.", "type": "integer", "minimum": 0, "maximum": 255}
            },
            "required": ["type"],
            "additionalProperties": false
        })
    );
}

// ---------------------------------------------------------------------------------------------
// A result that borrows an argument, and a blocking tool's errors, panics and structured result.

/// Echoes its argument as a borrow of it.
#[tool]
fn borrow_sync(
    /// The text.
    text: &str,
) -> &str {
    text
}

/// Echoes its argument as a borrow of it.
#[tool]
async fn borrow_async(
    /// The text.
    text: &str,
) -> &str {
    text
}

/// Echoes its argument as a borrow of it, on the blocking pool.
#[tool(blocking)]
fn borrow_blocking(
    /// The text.
    text: &str,
) -> Result<&str, Oops> {
    if text.is_empty() { Err(Oops("empty".to_owned())) } else { Ok(text) }
}

/// Panics on the blocking pool.
#[tool(blocking)]
fn panics_blocking() -> String {
    panic!("blocked")
}

/// A structured result from the blocking pool.
#[tool(blocking, output_schema)]
fn structured_blocking() -> Sum {
    Sum { total: 9 }
}

#[tokio::test]
async fn a_result_borrowing_an_argument_is_returned_by_sync_async_and_blocking_tools() {
    let got = [
        through_registry(borrow_sync::TOOL, r#"{"text":"a"}"#).await,
        through_registry(borrow_async::TOOL, r#"{"text":"b"}"#).await,
        through_registry(borrow_blocking::TOOL, r#"{"text":"c"}"#).await,
        through_registry(borrow_blocking::TOOL, r#"{"text":""}"#).await,
        through_registry(panics_blocking::TOOL, "").await,
        run(structured_blocking::TOOL, "").await,
    ];
    assert_eq!(
        got,
        [
            "ok: a",
            "ok: b",
            "ok: c",
            "error: oops: empty",
            "error: tool `panics_blocking` panicked: blocked",
            "ok: Structured { content: [Text { text: \"{\\\"total\\\":9}\" }], value: Object {\"total\": Number(9)} }"
        ]
    );
}
