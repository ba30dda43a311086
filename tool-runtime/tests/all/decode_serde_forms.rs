//! Forms serde reads but the JSON Schema a model is shown refuses are refused at decode, with an
//! error that says what to send instead, and forms JSON Schema accepts that serde alone would
//! refuse are read as JSON Schema reads them: a struct sent as an array of its fields, a unit
//! variant sent as an object (`{"high":null}`), `-0` and `100.0` for an integer (JSON Schema's
//! numbers compare by value: `-0` is `0`, `100.0` is the integer `100`), and the range a wrong
//! type is told against (the declared one, the same on serde's line and on an `also:` line).
//!
//! Each form is sent three ways: as it is (the fast path: the key-check pass, or `from_str` alone
//! for a flat schema), after a `null` for an optional argument (the key-check pass stops at the
//! `null`, so the full path alone decides), and through [`decode_arguments`] with a derived type.

#![allow(dead_code, unused_variables)] // Fields are read through `Debug`; `note` is only sent.

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::decode::decode_arguments;
use tool_runtime::prelude::*;
use tool_runtime::schema::decoding_schema;
use tool_runtime::{ToolCall, ToolSpec};

/// A point.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Point {
    /// Across.
    x: i64,
    /// Down.
    y: i64,
}

/// How loud.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Level {
    Low,
    High,
}

/// A size.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Size {
    /// Width.
    w: u32,
    /// Height.
    h: u32,
}

/// Marks a point (a nested struct: the key-check pass runs).
#[tool]
fn mark(
    /// Where.
    point: Point,
    /// How loud.
    level: Option<Level>,
    /// A note.
    note: Option<String>,
) -> String {
    format!("{point:?} {level:?}")
}

/// Picks things (every argument a scalar or an enum: a flat schema).
#[tool]
fn pick(
    /// How loud.
    level: Level,
    /// How many, 1 to 50.
    #[arg(range(min = 1, max = 50))]
    limit: Option<u32>,
    /// A count.
    count: Option<u64>,
    /// A note.
    note: Option<String>,
) -> String {
    format!("{level:?} {limit:?} {count:?}")
}

/// Resizes.
#[tool]
fn resize(
    /// The size.
    size: Option<Size>,
    /// How deep, 0 to 9.
    #[arg(range(max = 9))]
    depth: Option<u8>,
    /// How many, 1 to 50.
    #[arg(range(min = 1, max = 50))]
    limit: Option<u32>,
    /// A note.
    note: Option<String>,
) -> String {
    format!("{size:?} {depth:?} {limit:?}")
}

/// The arguments of `mark` as a derived type, for [`decode_arguments`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct MarkArgs {
    point: Point,
    level: Option<Level>,
    count: Option<u64>,
    note: Option<String>,
}

async fn call(tool: &'static ToolSpec, arguments: &str) -> String {
    let registry = Registry::builder().tool(tool).build().unwrap();
    let call = ToolCall::new("c1", tool.name(), arguments);
    registry.call(&call, &ToolContext::builder().build()).await.text().into_owned()
}

/// `arguments` with `"note":null` first: the key-check pass stops at that `null`, before the
/// value under test, and the full path decides alone.
fn after_null(arguments: &str) -> String {
    let rest = arguments.strip_prefix('{').unwrap();
    if rest == "}" { r#"{"note":null}"#.to_owned() } else { format!(r#"{{"note":null,{rest}"#) }
}

/// The answer of `tool` to `arguments`, the same on both paths (asserted).
async fn both(tool: &'static ToolSpec, arguments: &str) -> String {
    let fast = call(tool, arguments).await;
    let full = call(tool, &after_null(arguments)).await;
    assert_eq!(fast, full, "the two paths answer {arguments} differently");
    fast
}

fn derived(arguments: &str) -> Result<String, String> {
    let schema = decoding_schema::<MarkArgs>();
    decode_arguments::<MarkArgs>(arguments, || &schema).map(|a| format!("{a:?}")).map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_struct_sent_as_an_array_of_its_fields_is_refused_naming_the_fields_to_send() {
    assert_eq!(
        both(mark::TOOL, r#"{"point":[1,2]}"#).await,
        "invalid arguments for `mark`: `point`: invalid type: sequence, expected an object with the fields `x`, `y`"
    );
    assert_eq!(
        derived(r#"{"point":[1,2]}"#).unwrap_err(),
        "`point`: invalid type: sequence, expected an object with the fields `x`, `y`"
    );
    assert_eq!(
        derived(r#"{"note":null,"point":[1,2]}"#).unwrap_err(),
        "`point`: invalid type: sequence, expected an object with the fields `x`, `y`"
    );
}

#[tokio::test]
async fn a_unit_variant_sent_as_an_object_is_refused_naming_the_strings_to_send() {
    assert_eq!(
        both(pick::TOOL, r#"{"level":{"high":null}}"#).await,
        "invalid arguments for `pick`: `level`: invalid type: map, expected one of `low`, `high`"
    );
    assert_eq!(
        both(mark::TOOL, r#"{"point":{"x":1,"y":2},"level":{"high":null}}"#).await,
        "invalid arguments for `mark`: `level`: invalid type: map, expected one of `low`, `high`"
    );
    assert_eq!(
        derived(r#"{"point":{"x":1,"y":2},"level":{"high":null}}"#).unwrap_err(),
        "`level`: invalid type: map, expected one of `low`, `high`"
    );
}

#[tokio::test]
async fn a_struct_as_an_array_and_a_variant_as_an_object_are_told_together() {
    assert_eq!(
        both(mark::TOOL, r#"{"point":[1,2],"level":{"low":null}}"#).await,
        "invalid arguments for `mark`: `level`: invalid type: map, expected one of `low`, `high`\n\
         also: `point`: invalid type: sequence, expected an object with the fields `x`, `y`"
    );
}

/// `-0` (which serde_json reads as the float `-0.0`) is `0`; `100.0` and `1e2` are `100`.
#[tokio::test]
async fn a_number_json_schema_takes_as_an_integer_is_that_integer() {
    let calls: [(&'static ToolSpec, &str, &str); 6] = [
        (pick::TOOL, r#"{"level":"low","count":-0}"#, "Low None Some(0)"),
        (pick::TOOL, r#"{"level":"low","count":-0.0}"#, "Low None Some(0)"),
        (mark::TOOL, r#"{"point":{"x":-0,"y":0}}"#, "Point { x: 0, y: 0 } None"),
        (pick::TOOL, r#"{"level":"high","limit":20.0,"count":100.0}"#, "High Some(20) Some(100)"),
        (pick::TOOL, r#"{"level":"high","count":1e2}"#, "High None Some(100)"),
        (mark::TOOL, r#"{"point":{"x":-3.0,"y":2.0}}"#, "Point { x: -3, y: 2 } None"),
    ];
    for (tool, arguments, answer) in calls {
        assert_eq!(both(tool, arguments).await, answer, "{arguments}");
    }
    let derived_calls = [(r#"{"point":{"x":1,"y":2},"count":-0}"#, 0), (r#"{"point":{"x":1.0,"y":2},"count":7.0}"#, 7)];
    for (arguments, count) in derived_calls {
        assert_eq!(
            derived(arguments).unwrap(),
            format!("MarkArgs {{ point: Point {{ x: 1, y: 2 }}, level: None, count: Some({count}), note: None }}")
        );
    }
}

#[tokio::test]
async fn an_integral_number_outside_the_declared_range_is_told_as_sent() {
    assert_eq!(
        both(pick::TOOL, r#"{"level":"high","limit":100.0}"#).await,
        "invalid arguments for `pick`: `limit`: must be at most 50; got 100.0"
    );
}

#[tokio::test]
async fn a_number_with_a_fraction_for_an_integer_names_the_declared_range() {
    assert_eq!(
        both(pick::TOOL, r#"{"level":"high","limit":1.5}"#).await,
        "invalid arguments for `pick`: `limit`: invalid type: floating point `1.5`, expected an integer from 1 to 50"
    );
    assert_eq!(
        both(pick::TOOL, r#"{"level":"high","count":0.5}"#).await,
        "invalid arguments for `pick`: `count`: invalid type: floating point `0.5`, expected an integer from 0 to 18446744073709551615"
    );
}

#[tokio::test]
async fn a_wrong_type_names_the_declared_range_not_the_type_s() {
    assert_eq!(
        both(pick::TOOL, r#"{"level":"high","limit":"5"}"#).await,
        "invalid arguments for `pick`: `limit`: invalid type: string \"5\", expected an integer from 1 to 50"
    );
    assert_eq!(
        both(resize::TOOL, r#"{"depth":true}"#).await,
        "invalid arguments for `resize`: `depth`: invalid type: boolean `true`, expected an integer from 0 to 9"
    );
}

#[tokio::test]
async fn serde_s_line_and_an_also_line_name_one_range_alike() {
    // Without a declared range: the type's, on both lines (in key order: the full path writes
    // the object with its keys sorted).
    assert_eq!(
        both(resize::TOOL, r#"{"size":{"w":"1","h":"2"}}"#).await,
        "invalid arguments for `resize`: `size.h`: invalid type: string \"2\", expected an integer from 0 to 4294967295\n\
         also: `size.w`: invalid type: string \"1\", expected an integer from 0 to 4294967295"
    );
    // With one: the declared range, on both lines.
    assert_eq!(
        both(resize::TOOL, r#"{"limit":"y","depth":"x"}"#).await,
        "invalid arguments for `resize`: `depth`: invalid type: string \"x\", expected an integer from 0 to 9\n\
         also: `limit`: invalid type: string \"y\", expected an integer from 1 to 50"
    );
}

#[tokio::test]
async fn the_forms_json_schema_takes_are_still_taken() {
    assert_eq!(both(mark::TOOL, r#"{"point":{"x":1,"y":2},"level":"high"}"#).await, "Point { x: 1, y: 2 } Some(High)");
    assert_eq!(both(mark::TOOL, r#"{"point":{"x":1,"y":2}}"#).await, "Point { x: 1, y: 2 } None");
    assert_eq!(both(pick::TOOL, r#"{"level":"low","limit":50,"count":0}"#).await, "Low Some(50) Some(0)");
    // A `{` inside a string is no object (a flat schema's text with a second `{` takes the
    // key-check pass).
    assert_eq!(call(pick::TOOL, r#"{"level":"low","note":"a {brace} in a string"}"#).await, "Low None None");
    assert_eq!(call(pick::TOOL, r#"{"note":"{","level":"low","count":null}"#).await, "Low None None");
    assert_eq!(
        both(resize::TOOL, r#"{"size":{"w":1,"h":2},"depth":9}"#).await,
        "Some(Size { w: 1, h: 2 }) Some(9) None"
    );
    assert_eq!(
        derived(r#"{"point":{"x":1,"y":2},"level":"low"}"#).unwrap(),
        "MarkArgs { point: Point { x: 1, y: 2 }, level: Some(Low), count: None, note: None }"
    );
}
