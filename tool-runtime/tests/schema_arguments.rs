//! The schema of a `#[tool]` function's arguments is assembled at run time, argument by argument
//! (`ArgumentSchema`), instead of being derived for the struct the arguments decode into. These
//! tests pin that it is the schema `#[derive(JsonSchema)]` gives a struct with the same fields,
//! docs, renames and defaults (`#[serde(deny_unknown_fields)]`), after the canonical rules, for
//! every kind of argument type: plain, optional (also through a type alias), nested, recursive,
//! maps, `serde_json::Value`, unit enums, borrowed `&str` and `&[T]`, defaulted and renamed ones.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::schema::arguments_schema;

/// A point on the grid.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Point {
    /// Column, 0-based.
    pub x: i32,
    /// Row, 0-based.
    pub y: i32,
}

/// How big.
#[derive(Deserialize, JsonSchema)]
pub enum Size {
    /// Small.
    Small,
    /// Large.
    Large,
}

/// A labelled tree.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tree {
    /// The label.
    pub label: String,
    /// The subtrees.
    pub children: Vec<Tree>,
}

/// An `Option` under another name: still not required.
pub type MaybeCount = Option<u32>;

fn default_word() -> String {
    "x".to_owned()
}

/// Every kind of argument.
#[tool]
#[allow(clippy::too_many_arguments)]
fn every_kind(
    /// The text.
    text: String,
    /// Title line.
    ///
    /// More text after a blank line.
    titled: u64,
    /// One line
    /// and another.
    lines: Option<bool>,
    /// A point.
    point: Point,
    /// Maybe a point.
    maybe_point: Option<Point>,
    size: Size,
    /// A tree.
    tree: Tree,
    /// Counts by name.
    counts: BTreeMap<String, u32>,
    /// Any JSON.
    value: serde_json::Value,
    /// An optional count, through an alias.
    maybe: MaybeCount,
    /// A number with a default.
    #[arg(default)]
    n: u32,
    /// A word with a default.
    #[arg(default = "x")]
    word: String,
    /// The type.
    #[arg(rename = "type")]
    kind: String,
    /// A keyword as a name.
    r#loop: bool,
    /// Borrowed items.
    items: &[String],
    /// A borrowed text.
    s: &str,
) -> String {
    let _ = (text, titled, lines, point, maybe_point, size, tree, counts, value, maybe, n, word, kind, r#loop);
    format!("{}{s}", items.len())
}

/// `every_kind`'s arguments, derived.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct EveryKind {
    /// The text.
    text: String,
    /// Title line.
    ///
    /// More text after a blank line.
    titled: u64,
    /// One line
    /// and another.
    lines: Option<bool>,
    /// A point.
    point: Point,
    /// Maybe a point.
    maybe_point: Option<Point>,
    size: Size,
    /// A tree.
    tree: Tree,
    /// Counts by name.
    counts: BTreeMap<String, u32>,
    /// Any JSON.
    value: serde_json::Value,
    /// An optional count, through an alias.
    maybe: MaybeCount,
    /// A number with a default.
    #[serde(default)]
    n: u32,
    /// A word with a default.
    #[serde(default = "default_word")]
    word: String,
    /// The type.
    #[serde(rename = "type")]
    kind: String,
    /// A keyword as a name.
    r#loop: bool,
    /// Borrowed items.
    items: Vec<String>,
    /// A borrowed text.
    s: String,
}

#[test]
fn the_arguments_schema_is_the_schema_derived_for_a_struct_of_the_same_fields() {
    assert_eq!(every_kind::TOOL.input_schema(), &arguments_schema::<EveryKind>());
}

#[test]
fn every_argument_is_a_property_and_required_lists_the_others_in_declaration_order() {
    let schema = every_kind::TOOL.input_schema();
    let names: Vec<&str> = schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    // serde_json's map keeps keys sorted (no `preserve_order`); every argument is there.
    assert_eq!(
        sorted,
        [
            "counts",
            "items",
            "lines",
            "loop",
            "maybe",
            "maybe_point",
            "n",
            "point",
            "s",
            "size",
            "text",
            "titled",
            "tree",
            "type",
            "value",
            "word"
        ]
    );
    assert_eq!(
        schema["required"],
        json!(["text", "titled", "point", "size", "tree", "counts", "value", "type", "loop", "items", "s"])
    );
    assert_eq!(schema["properties"]["titled"]["description"], json!("Title line.\n\nMore text after a blank line."));
    assert_eq!(schema["properties"]["lines"]["description"], json!("One line\nand another."));
    assert_eq!(schema["additionalProperties"], json!(false));
}

/// Takes nothing.
#[tool]
fn nothing() -> String {
    String::new()
}

/// `nothing`'s arguments, derived.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Nothing {}

#[test]
fn a_tool_without_arguments_has_the_empty_closed_object_schema() {
    let expected = json!({"type": "object", "properties": {}, "additionalProperties": false});
    assert_eq!((nothing::TOOL.input_schema(), &arguments_schema::<Nothing>()), (&expected, &expected));
}

/// Takes only defaulted arguments.
#[tool]
fn only_defaults(
    /// How many.
    #[arg(default = 3)]
    count: u8,
    /// Which way.
    #[arg(default = "up", rename = "dir")]
    direction: String,
) -> String {
    format!("{count} {direction}")
}

fn three() -> u8 {
    3
}

/// `only_defaults`'s arguments, derived.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct OnlyDefaults {
    /// How many.
    #[serde(default = "three")]
    count: u8,
    /// Which way.
    #[serde(default = "up", rename = "dir")]
    direction: String,
}

fn up() -> String {
    "up".to_owned()
}

#[test]
fn defaulted_arguments_are_described_as_the_derive_describes_them() {
    assert_eq!(only_defaults::TOOL.input_schema(), &arguments_schema::<OnlyDefaults>());
    assert_eq!(only_defaults::TOOL.input_schema().get("required"), None);
}

/// Two tools whose schemas are built on one thread, one inside the other's argument type: each
/// gets its own arguments.
#[derive(Deserialize)]
pub struct Nested;

impl JsonSchema for Nested {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Nested".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // Builds another tool's schema while this one's is being built.
        let inner = inner::TOOL.input_schema().clone();
        schemars::json_schema!({"type": "object", "properties": {"inner": inner}, "required": ["inner"]})
    }
}

/// Takes one number; its schema is built only inside `Nested`'s.
#[tool]
fn inner(
    /// The number.
    number: u8,
) -> String {
    number.to_string()
}

/// Takes a value whose schema builds another tool's.
#[tool]
fn outer(
    /// The nested value.
    nested: Nested,
    /// A flag after it.
    flag: bool,
) -> String {
    let _ = (nested, flag);
    String::new()
}

#[test]
fn a_schema_built_while_another_is_built_leaves_the_outer_arguments_whole() {
    let schema = outer::TOOL.input_schema();
    assert_eq!(schema["required"], json!(["nested", "flag"]));
    assert_eq!(schema["properties"]["flag"], json!({"type": "boolean", "description": "A flag after it."}));
    assert_eq!(schema["properties"]["nested"]["properties"]["inner"]["required"], json!(["number"]));
}
