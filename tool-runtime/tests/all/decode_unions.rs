//! Decoding arguments that hold maps, any JSON, untagged unions and tagged variants: keys sent
//! twice, defaults for `null`, variants sharing a field, and errors that name the value at fault.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;

/// Takes counts by name.
#[tool]
fn counts(
    /// Counts by name.
    counts: BTreeMap<String, u32>,
) -> String {
    format!("{counts:?}")
}

/// Takes any JSON.
#[tool]
fn any(
    /// Any value.
    v: serde_json::Value,
) -> String {
    format!("{v}")
}

/// Takes any JSON and a boxed option, each with a default.
#[tool]
fn defaults(
    /// Any value.
    #[arg(default = serde_json::json!("dflt"))]
    v: serde_json::Value,
    /// A boxed option.
    #[arg(default = Box::new(Some(3)))]
    b: Box<Option<u32>>,
) -> String {
    format!("{v} {b:?}")
}

/// One setting.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CfgA {
    /// The x.
    x: u32,
}

/// Another setting.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CfgB {
    /// The y.
    y: u32,
}

/// Two variants that share the field `cfg`.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Overlap {
    /// With an x.
    A {
        /// The setting.
        cfg: CfgA,
    },
    /// With a y and a note.
    B {
        /// The setting.
        cfg: CfgB,
        /// A note.
        note: Option<String>,
    },
}

/// One item.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
struct Item {
    /// The id.
    id: u32,
}

/// An item, a word or nothing.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Mixed {
    /// An item.
    Whole(Item),
    /// A word.
    Word(String),
    /// Nothing.
    Nothing,
}

/// A file by path or by id.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Target {
    /// By path.
    Path {
        /// The path.
        path: String,
    },
    /// By id.
    Id {
        /// The id.
        id: u32,
    },
}

/// Takes untagged unions.
#[tool]
fn untagged(
    /// Overlapping variants.
    o: Option<Overlap>,
    /// Mixed variants.
    m: Option<Vec<Mixed>>,
    /// Files, some left out.
    t: Option<Vec<Option<Target>>>,
) -> String {
    format!("{o:?} {m:?} {t:?}")
}

/// How fast.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Speed {
    /// Fast.
    Fast,
    /// Slow.
    Slow,
}

/// An operation.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "op")]
enum Op {
    /// A character and a number.
    Chr {
        /// One character.
        c: char,
        /// A small number.
        z: u8,
    },
    /// A speed and a number.
    Run {
        /// How fast.
        speed: Speed,
        /// A small number.
        z: u8,
    },
}

/// Runs an operation.
#[tool]
fn act(
    /// The operation.
    op: Op,
) -> String {
    format!("{op:?}")
}

/// A level; one variant has a doc comment of its own.
#[derive(Debug, Deserialize, JsonSchema)]
enum Level {
    /// The lowest.
    Low,
    High,
    Mid,
}

/// Sets a level.
#[tool]
fn level(
    /// The level.
    level: Level,
) -> String {
    format!("{level:?}")
}

/// Sets a pace.
#[tool]
fn pace(
    /// How fast.
    speed: Speed,
    /// How fast later.
    later: Option<Speed>,
) -> String {
    format!("{speed:?} {later:?}")
}

/// Takes items by file name.
#[tool]
fn files(
    /// Items by file name.
    files: BTreeMap<String, Item>,
) -> String {
    format!("{files:?}")
}

async fn call(name: &str, arguments: &str) -> String {
    let registry = Registry::builder()
        .tool(counts::TOOL)
        .tool(any::TOOL)
        .tool(defaults::TOOL)
        .tool(untagged::TOOL)
        .tool(act::TOOL)
        .tool(pace::TOOL)
        .tool(level::TOOL)
        .tool(files::TOOL)
        .build()
        .unwrap();
    registry.call(&ToolCall::new("call_1", name, arguments), &ToolContext::new()).await.text().into_owned()
}

#[tokio::test]
async fn a_key_sent_twice_in_a_map_is_refused() {
    assert_eq!(
        call("counts", r#"{"counts":{"a":1,"a":2}}"#).await,
        "invalid arguments for `counts`: `counts.a`: the field is sent twice; send each field once"
    );
}

#[tokio::test]
async fn a_key_sent_twice_in_any_json_is_refused() {
    assert_eq!(
        call("any", r#"{"v":{"a":1,"a":2}}"#).await,
        "invalid arguments for `any`: `v.a`: the field is sent twice; send each field once"
    );
}

#[tokio::test]
async fn null_for_arguments_that_take_null_is_their_default() {
    assert_eq!(call("defaults", r#"{"v":null}"#).await, r#""dflt" Some(3)"#);
    assert_eq!(call("defaults", r#"{"b":null}"#).await, r#""dflt" Some(3)"#);
}

#[tokio::test]
async fn untagged_variants_sharing_a_field_take_the_variant_that_fits() {
    assert_eq!(
        call("untagged", r#"{"o":{"cfg":{"y":1}}}"#).await,
        "Some(B { cfg: CfgB { y: 1 }, note: None }) None None"
    );
}

#[tokio::test]
async fn an_unknown_field_in_a_list_of_optional_untagged_unions_is_refused() {
    assert_eq!(
        call("untagged", r#"{"t":[{"path":"p","zz":1}]}"#).await,
        "invalid arguments for `untagged`: unknown field `t[0].zz`; expected one of `id`, `path`"
    );
}

#[tokio::test]
async fn an_unknown_field_in_an_untagged_union_with_a_word_variant_is_refused() {
    assert_eq!(
        call("untagged", r#"{"m":[{"id":1,"zz":2}]}"#).await,
        "invalid arguments for `untagged`: unknown field `m[0].zz`; expected one of `id`"
    );
}

#[tokio::test]
async fn a_character_too_long_in_a_tagged_variant_is_blamed_on_itself() {
    assert_eq!(
        call("act", r#"{"op":{"op":"Chr","c":"ab","z":300}}"#).await,
        "invalid arguments for `act`: `op.c`: must be at most 1 character; got 2\nalso: `op.z`: must be at most 255; got 300"
    );
}

#[tokio::test]
async fn an_unknown_enum_value_in_a_tagged_variant_names_its_path() {
    assert_eq!(
        call("act", r#"{"op":{"op":"Run","speed":"medium","z":1}}"#).await,
        "invalid arguments for `act`: `op.speed`: unknown variant `medium`, expected `fast` or `slow`"
    );
}

#[tokio::test]
async fn a_key_with_a_backtick_is_quoted_in_a_path() {
    assert_eq!(
        call("files", r#"{"files":{"a`b":{"id":1,"idd":2}}}"#).await,
        r#"invalid arguments for `files`: unknown field `files["a`b"].idd`; expected one of `id`"#
    );
}

#[tokio::test]
async fn an_enum_of_names_sent_a_number_a_boolean_or_an_array_says_what_it_takes() {
    let cases = [
        (r#"{"speed":1}"#, "`speed`: invalid type: integer `1`, expected one of `fast`, `slow`"),
        (r#"{"speed":true}"#, "`speed`: invalid type: boolean `true`, expected one of `fast`, `slow`"),
        (r#"{"speed":1.5}"#, "`speed`: invalid type: floating point `1.5`, expected one of `fast`, `slow`"),
        (r#"{"speed":["fast"]}"#, "`speed`: invalid type: sequence, expected one of `fast`, `slow`"),
        (r#"{"speed":"fast","later":2}"#, "`later`: invalid type: integer `2`, expected one of `fast`, `slow`"),
    ];
    for (arguments, error) in cases {
        assert_eq!(call("pace", arguments).await, format!("invalid arguments for `pace`: {error}"), "{arguments}");
    }
    assert_eq!(call("pace", r#"{"speed":"slow","later":"fast"}"#).await, "Slow Some(Fast)");
}

#[tokio::test]
async fn an_enum_whose_variants_are_described_apart_names_every_variant() {
    assert_eq!(
        call("level", r#"{"level":3}"#).await,
        "invalid arguments for `level`: `level`: invalid type: integer `3`, expected one of `High`, `Mid`, `Low`"
    );
}
