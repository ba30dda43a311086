//! The schema of a `#[tool]` function's arguments is assembled at run time, argument by argument
//! (`ArgumentSchema`), instead of being derived for the struct the arguments decode into. These
//! tests pin that it is the schema `#[derive(JsonSchema)]` gives a struct with the same fields,
//! docs, renames and defaults (`#[serde(deny_unknown_fields)]`), after the canonical rules, for
//! every kind of argument type: plain, optional (also through a type alias), nested, recursive,
//! maps, `serde_json::Value`, unit enums, borrowed `&str` and `&[T]`, defaulted and renamed ones,
//! tagged and untagged enums, tuples, fixed arrays, 128-bit integers, recursive types of one name
//! from two modules, generic and hand-written `JsonSchema` types; for doc comments and
//! `#[arg(description)]` in every written form; for model arguments between the context and
//! dependencies; and with schemas built on two threads at once.

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
    assert_eq!(schema["properties"]["lines"]["description"], json!("One line and another."));
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

/// Doc comments and `#[arg(description)]` in every form they are written in.
#[tool]
#[allow(clippy::too_many_arguments)]
fn doc_forms(
    /// Title paragraph.
    ///
    ///
    ///
    /// After three blank lines.
    blank_lines: u8,
    ///    Indented by four.
    indented: u8,
    /// - item one
    /// - item two
    ///
    /// ```json
    /// {"x": 1}
    /// ```
    markdown: u8,
    #[doc = " trailing spaces   "]
    #[doc = " and more  "]
    trailing: u8,
    #[arg(description = " leading space")] leading: u8,
    #[arg(description = "\nnewline first\n\nthen")] newline_first: u8,
    #[arg(description = "")] empty: u8,
    /** block doc
    indented line */
    block: u8,
    #[doc = "first"]
    #[doc = ""]
    #[doc = "second"]
    attributes: u8,
    /// # Heading
    /// Body under it.
    heading: u8,
    #[arg(description = "## Sub heading\n\ntext")] sub_heading: u8,
    undocumented: u8,
) -> String {
    let _ = (blank_lines, indented, markdown, trailing, leading, newline_first, empty, block, attributes);
    let _ = (heading, sub_heading);
    undocumented.to_string()
}

/// `doc_forms`'s arguments, derived, each with the doc text `#[tool]` reads from the parameter
/// (one leading space dropped per line, trailing spaces and blank edge lines removed; an
/// `#[arg(description)]` as written).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct DocForms {
    #[doc = "Title paragraph.\n\n\n\nAfter three blank lines."]
    blank_lines: u8,
    #[doc = "   Indented by four."]
    indented: u8,
    #[doc = "- item one\n- item two\n\n```json\n{\"x\": 1}\n```"]
    markdown: u8,
    #[doc = "trailing spaces\nand more"]
    trailing: u8,
    #[doc = " leading space"]
    leading: u8,
    #[doc = "\nnewline first\n\nthen"]
    newline_first: u8,
    empty: u8,
    #[doc = "block doc\n   indented line"]
    block: u8,
    #[doc = "first\n\nsecond"]
    attributes: u8,
    #[doc = "# Heading\nBody under it."]
    heading: u8,
    #[doc = "## Sub heading\n\ntext"]
    sub_heading: u8,
    undocumented: u8,
}

#[test]
fn argument_docs_in_every_written_form_are_described_as_the_derive_describes_them_reflowed() {
    let schema = doc_forms::TOOL.input_schema();
    assert_eq!(schema, &arguments_schema::<DocForms>());
    let description = |name: &str| schema["properties"][name].get("description").cloned();
    assert_eq!(description("indented"), Some(json!("Indented by four.")));
    assert_eq!(description("trailing"), Some(json!("trailing spaces and more")));
    assert_eq!(description("leading"), Some(json!("leading space")));
    assert_eq!(description("newline_first"), Some(json!("newline first\n\nthen")));
    assert_eq!(description("block"), Some(json!("block doc indented line")));
    // A doc opening with a markdown heading is schemars' title, folded back before the rest.
    assert_eq!(description("heading"), Some(json!("Heading\n\nBody under it.")));
    assert_eq!(description("sub_heading"), Some(json!("Sub heading\n\ntext")));
    assert_eq!((description("empty"), description("undocumented")), (None, None));
}

/// A recursive type named like the one below, in another module.
mod left {
    /// A node on the left.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    #[serde(deny_unknown_fields)]
    pub(crate) struct Node {
        /// The number.
        pub(crate) number: u8,
        /// Its children.
        pub(crate) children: Vec<Node>,
    }
}

/// A recursive type named like the one above, in another module.
mod right {
    /// A node on the right.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    #[serde(deny_unknown_fields)]
    pub(crate) struct Node {
        /// The word.
        pub(crate) word: String,
        /// Its next node.
        pub(crate) next: Option<Box<Node>>,
    }
}

/// A shape, internally tagged.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(dead_code)]
enum Shape {
    /// A circle.
    Circle {
        /// Radius in pixels.
        radius: f64,
    },
    /// A square.
    Square {
        /// Side in pixels.
        side: f32,
    },
}

/// An adjacently tagged change.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
#[allow(dead_code)]
enum Change {
    /// Set to a number.
    Set(u8),
    /// Rename.
    Rename {
        /// The new name.
        to: String,
    },
    /// Clear.
    Clear,
}

/// A number or a text.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum NumberOrText {
    /// A number.
    Number(i64),
    /// A text.
    Text(String),
}

/// A labelled value of any type.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Labelled<T> {
    /// The value.
    value: T,
    /// The label.
    label: String,
}

/// A type whose hand-written schema is always inlined and asks for another type's.
struct Points;

impl<'de> Deserialize<'de> for Points {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<(i32, i32)>::deserialize(deserializer).map(|_| Points)
    }
}

impl JsonSchema for Points {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Points".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let point = generator.subschema_for::<Point>();
        schemars::json_schema!({"type": "array", "items": point, "title": "Points", "default": []})
    }
}

/// Arguments of less common types.
#[tool]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn exotic(
    /// Absent, `null` or a value.
    twice: Option<Option<u8>>,
    boxed: Box<Point>,
    cow: std::borrow::Cow<'static, str>,
    by_id: std::collections::HashMap<u32, String>,
    unit: (),
    tuple: (u8, String, Option<bool>),
    array: [u16; 3],
    letter: char,
    huge: u128,
    signed_huge: i128,
    ratio: f32,
    positive: std::num::NonZeroU32,
    path: std::path::PathBuf,
    left: left::Node,
    right: Option<right::Node>,
    lefts: Vec<left::Node>,
    shape: Shape,
    change: Change,
    number_or_text: NumberOrText,
    labelled: Labelled<right::Node>,
    points: Points,
) -> String {
    let _ = (twice, boxed, cow, by_id, unit, tuple, array, letter, huge, signed_huge, ratio, positive, path);
    let _ = (left, right, lefts, shape, change, number_or_text, labelled, points);
    String::new()
}

/// `exotic`'s arguments, derived.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, clippy::type_complexity)]
struct Exotic {
    /// Absent, `null` or a value.
    twice: Option<Option<u8>>,
    boxed: Box<Point>,
    cow: std::borrow::Cow<'static, str>,
    by_id: std::collections::HashMap<u32, String>,
    unit: (),
    tuple: (u8, String, Option<bool>),
    array: [u16; 3],
    letter: char,
    huge: u128,
    signed_huge: i128,
    ratio: f32,
    positive: std::num::NonZeroU32,
    path: std::path::PathBuf,
    left: left::Node,
    right: Option<right::Node>,
    lefts: Vec<left::Node>,
    shape: Shape,
    change: Change,
    number_or_text: NumberOrText,
    labelled: Labelled<right::Node>,
    points: Points,
}

#[test]
fn arguments_of_less_common_types_are_described_as_the_derive_describes_them() {
    let schema = exotic::TOOL.input_schema();
    assert_eq!(schema, &arguments_schema::<Exotic>());
    // The two recursive `Node`s keep one definition each, under two names, and each refers to
    // its own.
    let defs: Vec<&String> = schema["$defs"].as_object().unwrap().keys().collect();
    assert_eq!(defs, ["Node", "Node2"]);
    assert_eq!(schema["properties"]["left"]["properties"]["children"]["items"]["$ref"], json!("#/$defs/Node"));
    assert_eq!(schema["properties"]["right"]["properties"]["next"]["$ref"], json!("#/$defs/Node2"));
}

fn open_store(_: &ToolContext) -> Result<Vec<u8>, DependencyError> {
    Ok(vec![1, 2])
}

static STORE: DependencyKey<Vec<u8>> = DependencyKey::per_call("store", open_store);

/// Model arguments between the context and a dependency, defaulted ones among them.
#[tool]
#[allow(clippy::too_many_arguments)]
async fn interleaved(
    /// Defaulted first.
    #[arg(default = 5)]
    first: u8,
    ctx: &ToolContext,
    /// A text.
    second: String,
    #[depends(STORE)] store: Vec<u8>,
    /// Defaulted points.
    #[arg(default)]
    third: Vec<Point>,
    /// Maybe a size.
    fourth: Option<Size>,
    /// Defaulted word.
    #[arg(default = "z", rename = "fifth-word")]
    fifth: String,
    /// A tree.
    sixth: Tree,
) -> String {
    let _ = (ctx, third, fourth, sixth);
    format!("{first} {second} {} {fifth}", store.len())
}

fn five() -> u8 {
    5
}

fn z() -> String {
    "z".to_owned()
}

/// `interleaved`'s arguments, derived.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Interleaved {
    /// Defaulted first.
    #[serde(default = "five")]
    first: u8,
    /// A text.
    second: String,
    /// Defaulted points.
    #[serde(default)]
    third: Vec<Point>,
    /// Maybe a size.
    fourth: Option<Size>,
    /// Defaulted word.
    #[serde(default = "z", rename = "fifth-word")]
    fifth: String,
    /// A tree.
    sixth: Tree,
}

#[test]
fn each_argument_between_context_dependencies_and_defaults_gets_its_own_type_schema() {
    let schema = interleaved::TOOL.input_schema();
    assert_eq!(schema, &arguments_schema::<Interleaved>());
    assert_eq!(schema["required"], json!(["second", "sixth"]));
    assert_eq!(schema["properties"]["third"]["type"], json!("array"));
    assert_eq!(schema["properties"]["fifth-word"]["type"], json!("string"));
}

/// Two argument lists whose schemas are built many times on two threads at once.
static NUMBERS: [tool_runtime::__private::ArgumentSchema; 2] = [
    tool_runtime::__private::ArgumentSchema::new(
        "count",
        "How many.",
        false,
        tool_runtime::__private::argument_schema::<u32>,
    ),
    tool_runtime::__private::ArgumentSchema::new(
        "tree",
        "A tree.",
        false,
        tool_runtime::__private::argument_schema::<Tree>,
    ),
];
static WORDS: [tool_runtime::__private::ArgumentSchema; 2] = [
    tool_runtime::__private::ArgumentSchema::new(
        "word",
        "A word.",
        true,
        tool_runtime::__private::argument_schema::<String>,
    )
    .with_default(|| Some(serde_json::Value::from(""))),
    tool_runtime::__private::ArgumentSchema::new(
        "point",
        "",
        false,
        tool_runtime::__private::argument_schema::<Option<Point>>,
    ),
];

/// `NUMBERS`, derived.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Numbers {
    /// How many.
    count: u32,
    /// A tree.
    tree: Tree,
}

/// `WORDS`, derived.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Words {
    /// A word.
    #[serde(default)]
    word: String,
    point: Option<Point>,
}

#[test]
fn schemas_built_on_two_threads_at_once_each_describe_their_own_arguments() {
    use tool_runtime::schema::{arguments_decoding_schema, decoding_schema};
    let barrier = std::sync::Barrier::new(2);
    let build = |arguments: &'static [tool_runtime::__private::ArgumentSchema]| {
        barrier.wait();
        (0..200).map(|_| arguments_decoding_schema(arguments)).collect::<Vec<_>>()
    };
    let (numbers, words) = std::thread::scope(|scope| {
        let numbers = scope.spawn(|| build(&NUMBERS));
        let words = scope.spawn(|| build(&WORDS));
        (numbers.join().unwrap(), words.join().unwrap())
    });
    let (expected_numbers, expected_words) = (decoding_schema::<Numbers>(), decoding_schema::<Words>());
    assert!(
        numbers.iter().all(|schema| *schema == expected_numbers),
        "{:?}",
        numbers.iter().find(|s| **s != expected_numbers)
    );
    assert!(words.iter().all(|schema| *schema == expected_words), "{:?}", words.iter().find(|s| **s != expected_words));
}
