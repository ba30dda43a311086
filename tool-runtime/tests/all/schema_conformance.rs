//! The definitions of every standard tool and of a zoo of typed tools, checked by the providers'
//! own Python client libraries (`conformance/check.py`, installed by `scripts/test.sh`):
//! `jsonschema` (2020-12 and draft-07 meta-schemas, and the same verdict as our decoder on a table
//! of arguments), `openai-agents` (strict schemas), `google-genai` (Gemini declarations) and `mcp`
//! (MCP tool entries). No network: the packages only read the JSON written here.

#![allow(dead_code, unused_variables)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::{DynamicTool, ToolResult};

use crate::forms;
use crate::instances;

use forms::{Entry, FORMS};

// ---- the zoo ------------------------------------------------------------------------------

/// Takes nothing.
#[tool]
fn zoo_no_args() -> &'static str {
    "ok"
}

/// Strings, one optional.
#[tool]
fn zoo_strings(
    /// The query.
    q: String,
    /// A note, optional.
    note: Option<String>,
) -> &'static str {
    "ok"
}

/// A query with a defaulted limit.
#[derive(Deserialize, JsonSchema)]
struct Query {
    /// The text to search.
    q: String,
    /// How many results (default 0).
    #[serde(default, skip_serializing)]
    limit: u32,
}

/// A struct with a `#[serde(default)]` field.
#[tool]
fn zoo_defaulted(
    /// The query.
    query: Query,
) -> &'static str {
    "ok"
}

/// Signed integers of every width.
#[tool]
fn zoo_signed(a: i8, b: i16, c: i32, d: i64, e: isize) -> &'static str {
    "ok"
}

/// Unsigned integers of every width.
#[tool]
fn zoo_unsigned(a: u8, b: u16, c: u32, d: u64, e: usize) -> &'static str {
    "ok"
}

/// Floats and 128-bit integers.
#[tool]
fn zoo_wide(a: f32, b: f64, c: i128, d: u128) -> &'static str {
    "ok"
}

/// A page and a range.
#[derive(Deserialize, JsonSchema)]
struct Page {
    /// 0-based page number.
    page: usize,
    /// Half-open range of rows.
    span: std::ops::Range<usize>,
}

/// Ranges nest `uint` formats in a plain schemars schema.
#[tool]
fn zoo_page(
    /// Which page.
    page: Page,
) -> &'static str {
    "ok"
}

/// The inner part.
#[derive(Deserialize, JsonSchema)]
struct Inner {
    /// A number.
    x: i64,
    /// A label.
    label: String,
}

/// The outer part.
#[derive(Deserialize, JsonSchema)]
struct Outer {
    /// The inner part.
    inner: Inner,
    /// Optional inner part.
    spare: Option<Inner>,
}

/// Nested structs.
#[tool]
fn zoo_nested(
    /// The outer part.
    outer: Outer,
) -> &'static str {
    "ok"
}

/// One item.
#[derive(Deserialize, JsonSchema)]
struct Item {
    /// The id.
    id: u32,
    /// Tags.
    #[serde(default)]
    tags: Vec<String>,
}

/// A vector of structs.
#[tool]
fn zoo_items(
    /// The items.
    items: Vec<Item>,
) -> &'static str {
    "ok"
}

/// A map of numbers.
#[tool]
fn zoo_map(
    /// Counts by name.
    counts: HashMap<String, u32>,
) -> &'static str {
    "ok"
}

/// A map of structs.
#[tool]
fn zoo_map_structs(
    /// Items by name.
    by_name: BTreeMap<String, Item>,
) -> &'static str {
    "ok"
}

/// A colour.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Color {
    /// Like blood.
    Red,
    /// Like grass.
    Green,
    /// Like the sky.
    SkyBlue,
}

/// A unit enum.
#[tool]
fn zoo_color(
    /// The colour.
    color: Color,
) -> &'static str {
    "ok"
}

/// An optional unit enum.
#[tool]
fn zoo_optional_color(
    /// The colour, if any.
    color: Option<Color>,
) -> &'static str {
    "ok"
}

/// A shape (externally tagged).
#[derive(Deserialize, JsonSchema)]
enum Shape {
    /// A point.
    Point,
    /// A circle.
    Circle {
        /// The radius.
        radius: f64,
    },
    /// A square, by side.
    Square(f64),
}

/// An externally tagged enum.
#[tool]
fn zoo_shape(
    /// The shape.
    shape: Shape,
) -> &'static str {
    "ok"
}

/// An event (adjacently tagged).
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", content = "data")]
enum Event {
    /// A click.
    Click {
        /// Horizontal.
        x: i32,
        /// Vertical.
        y: i32,
    },
    /// A key.
    Key(String),
}

/// An adjacently tagged enum.
#[tool]
fn zoo_event(
    /// The event.
    event: Event,
) -> &'static str {
    "ok"
}

/// A command (internally tagged), as a field.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "op")]
enum Command {
    /// Move by.
    Move {
        /// Steps.
        steps: u8,
    },
    /// Say something.
    Say {
        /// The words.
        words: String,
    },
}

/// An internally tagged enum as a field.
#[tool]
fn zoo_command(
    /// The command.
    command: Command,
) -> &'static str {
    "ok"
}

/// A tree node.
#[derive(Deserialize, JsonSchema)]
struct Node {
    /// The name.
    name: String,
    /// The children.
    children: Vec<Node>,
}

/// Recursion.
#[tool]
fn zoo_tree(
    /// The root.
    root: Node,
) -> &'static str {
    "ok"
}

/// A linked list cell.
#[derive(Deserialize, JsonSchema)]
struct Chain {
    /// The value.
    value: i32,
    /// The next cell.
    next: Option<Box<Chain>>,
}

/// Recursion through an option.
#[tool]
fn zoo_chain(
    /// The head.
    head: Chain,
) -> &'static str {
    "ok"
}

/// Renamed fields.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Renamed {
    /// Snake in Rust, camel on the wire.
    first_name: String,
    /// A keyword on the wire.
    #[serde(rename = "type")]
    kind: String,
}

/// Serde renames.
#[tool]
fn zoo_renamed(
    /// The person.
    person: Renamed,
) -> &'static str {
    "ok"
}

/// The base part.
#[derive(Deserialize, JsonSchema)]
struct Base {
    /// The id.
    id: u32,
}

/// Flattened.
#[derive(Deserialize, JsonSchema)]
struct Flat {
    #[serde(flatten)]
    base: Base,
    /// Extra flag.
    extra: bool,
}

/// Serde flatten.
#[tool]
fn zoo_flatten(
    /// The record.
    record: Flat,
) -> &'static str {
    "ok"
}

/// Skipped field.
#[derive(Deserialize, JsonSchema)]
struct Skipped {
    /// Kept.
    keep: String,
    #[serde(skip)]
    hidden: u32,
}

/// Serde skip.
#[tool]
fn zoo_skipped(
    /// The record.
    record: Skipped,
) -> &'static str {
    "ok"
}

/// A property named `format`.
#[tool]
fn zoo_format(
    /// The output format.
    format: String,
    /// The value.
    value: u16,
) -> &'static str {
    "ok"
}

/// A tuple.
#[tool]
fn zoo_tuple(
    /// A pair.
    pair: (u8, String),
) -> &'static str {
    "ok"
}

/// A grid.
#[tool]
fn zoo_grid(
    /// Rows of cells.
    grid: Vec<Vec<u8>>,
) -> &'static str {
    "ok"
}

/// A filter.
#[derive(Deserialize, JsonSchema)]
struct Filter {
    /// Name to match.
    name: Option<String>,
    /// Minimum size in bytes.
    min_bytes: Option<u64>,
}

/// An optional struct.
#[tool]
fn zoo_filter(
    /// The filter.
    filter: Option<Filter>,
) -> &'static str {
    "ok"
}

/// Booleans.
#[tool]
fn zoo_bools(
    /// One flag.
    flag: bool,
    /// Many flags.
    flags: Vec<bool>,
) -> &'static str {
    "ok"
}

/// A char and a set.
#[tool]
fn zoo_char_set(
    /// One character.
    c: char,
    /// Unique tags.
    tags: HashSet<String>,
) -> &'static str {
    "ok"
}

/// A fixed-size array.
#[tool]
fn zoo_array(
    /// An RGB triple.
    rgb: [u8; 3],
) -> &'static str {
    "ok"
}

/// Metres.
#[derive(Deserialize, JsonSchema)]
struct Meters(f64);

/// A newtype.
#[tool]
fn zoo_newtype(
    /// The distance.
    distance: Meters,
) -> &'static str {
    "ok"
}

/// Any JSON value.
#[tool]
fn zoo_any(
    /// Anything.
    value: Value,
) -> &'static str {
    "ok"
}

/// Asks for strict mode.
#[tool(strict)]
fn zoo_strict(
    /// The city.
    city: String,
    /// Days ahead.
    days: Option<u8>,
    /// The unit.
    unit: Option<Color>,
) -> &'static str {
    "ok"
}

/// Refuses strict mode.
#[tool(strict = false)]
fn zoo_not_strict(
    /// The city.
    city: String,
) -> &'static str {
    "ok"
}

/// Browser action with a defaulted timeout.
#[derive(Deserialize, JsonSchema)]
struct Navigate {
    /// The action.
    action: String,
    /// The URL.
    url: String,
    /// Timeout in milliseconds (default 0: none).
    #[serde(default)]
    timeout_ms: u64,
}

/// A navigation.
#[tool]
fn zoo_navigate(
    /// What to do.
    step: Navigate,
) -> &'static str {
    "ok"
}

/// Tags for MCP annotations.
#[tool(tags(read_only, idempotent))]
fn zoo_tagged(
    /// What to look up.
    key: String,
) -> &'static str {
    "ok"
}

/// The whole input of a union tool.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "op")]
enum FileOp {
    /// Read a file.
    Read {
        /// The file to read.
        path: String,
    },
    /// Write a file.
    Write {
        /// The file to write.
        path: String,
        /// The new content.
        content: String,
        /// Append instead of replacing.
        #[serde(default)]
        append: bool,
    },
    /// Delete files.
    Delete {
        /// The files.
        paths: Vec<String>,
    },
}

/// A tool whose whole input is one Rust type (a union tool when `T` is a tagged enum), with the
/// canonical schema of `T` and the strict decoding of `T`.
struct TypedTool<T> {
    definition: ToolDefinition,
    decoding: Value,
    marker: std::marker::PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned + JsonSchema + 'static> TypedTool<T> {
    fn new(name: &str, description: &str) -> Self {
        let definition = ToolDefinition {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: tool_runtime::schema::arguments_schema::<T>(),
            set: None,
            tags: Vec::new(),
            strict: None,
            output_schema: None,
            callers: tool_runtime::Callers::Direct,
        };
        Self { definition, decoding: tool_runtime::schema::decoding_schema::<T>(), marker: std::marker::PhantomData }
    }
}

impl<T: DeserializeOwned + JsonSchema + 'static> Tool for TypedTool<T> {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(&'a self, arguments: &'a str, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        let decoded = tool_runtime::decode::decode_arguments::<T>(arguments, || &self.decoding)
            .map(|_| ToolResult::Text("ok".to_owned()))
            .map_err(|error| ToolError::InvalidArguments { tool: self.definition.name.clone(), error });
        Box::pin(async move { decoded })
    }
}

/// A hand-written schema with constraints, defined at run time.
fn dynamic_tool() -> DynamicTool {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$", "description": "Lowercase name."},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "role": {"type": "string", "enum": ["admin", "user"]},
        },
        "required": ["name"],
    });
    DynamicTool::new("zoo_dynamic", "A run-time tool.", schema, |_args, _ctx| async {
        Ok(ToolResult::Text("ok".to_owned()))
    })
    .expect("the hand-written schema compiles")
}

fn zoo_registry() -> Registry {
    let mut builder = tool_std::registry_builder();
    for spec in [
        zoo_no_args::TOOL,
        zoo_strings::TOOL,
        zoo_defaulted::TOOL,
        zoo_signed::TOOL,
        zoo_unsigned::TOOL,
        zoo_wide::TOOL,
        zoo_page::TOOL,
        zoo_nested::TOOL,
        zoo_items::TOOL,
        zoo_map::TOOL,
        zoo_map_structs::TOOL,
        zoo_color::TOOL,
        zoo_optional_color::TOOL,
        zoo_shape::TOOL,
        zoo_event::TOOL,
        zoo_command::TOOL,
        zoo_tree::TOOL,
        zoo_chain::TOOL,
        zoo_renamed::TOOL,
        zoo_flatten::TOOL,
        zoo_skipped::TOOL,
        zoo_format::TOOL,
        zoo_tuple::TOOL,
        zoo_grid::TOOL,
        zoo_filter::TOOL,
        zoo_bools::TOOL,
        zoo_char_set::TOOL,
        zoo_array::TOOL,
        zoo_newtype::TOOL,
        zoo_any::TOOL,
        zoo_strict::TOOL,
        zoo_not_strict::TOOL,
        zoo_navigate::TOOL,
        zoo_tagged::TOOL,
    ] {
        builder = builder.tool(spec);
    }
    builder
        .tool_dyn(Arc::new(TypedTool::<FileOp>::new("zoo_union", "Read, write or delete files.")))
        .tool_dyn(Arc::new(dynamic_tool()))
        .build()
        .expect("the zoo has unique names")
}

/// Arguments and the tool they are sent to. Our decoder's verdict on each is written beside it;
/// `check.py` asserts that `jsonschema` gives the same verdict against the decoding schema.
fn argument_cases() -> Vec<(&'static str, Value)> {
    vec![
        ("zoo_no_args", json!({})),
        ("zoo_no_args", json!({"x": 1})),
        ("zoo_strings", json!({"q": "a"})),
        ("zoo_strings", json!({"q": "a", "note": "b"})),
        ("zoo_strings", json!({"note": "b"})),
        ("zoo_strings", json!({"q": 1})),
        ("zoo_defaulted", json!({"query": {"q": "a"}})),
        ("zoo_defaulted", json!({"query": {"q": "a", "limit": 5}})),
        ("zoo_defaulted", json!({"query": {"q": "a", "limit": -1}})),
        ("zoo_defaulted", json!({"query": {"q": "a", "lmit": 5}})),
        ("zoo_signed", json!({"a": -128, "b": -1, "c": 1, "d": -9_000_000_000i64, "e": 0})),
        ("zoo_signed", json!({"a": -129, "b": 0, "c": 0, "d": 0, "e": 0})),
        ("zoo_signed", json!({"a": 0, "b": 40000, "c": 0, "d": 0, "e": 0})),
        ("zoo_unsigned", json!({"a": 255, "b": 65535, "c": 4_294_967_295u64, "d": 0, "e": 0})),
        ("zoo_unsigned", json!({"a": 256, "b": 0, "c": 0, "d": 0, "e": 0})),
        ("zoo_unsigned", json!({"a": 0, "b": 0, "c": 0, "d": -1, "e": 0})),
        ("zoo_unsigned", json!({"a": 1.5, "b": 0, "c": 0, "d": 0, "e": 0})),
        ("zoo_wide", json!({"a": 1.5, "b": -2.25, "c": -5, "d": 5})),
        ("zoo_wide", json!({"a": "1.5", "b": 0, "c": 0, "d": 0})),
        ("zoo_page", json!({"page": {"page": 0, "span": {"start": 1, "end": 4}}})),
        ("zoo_page", json!({"page": {"page": 0, "span": {"start": 1}}})),
        ("zoo_nested", json!({"outer": {"inner": {"x": 1, "label": "a"}}})),
        ("zoo_nested", json!({"outer": {"inner": {"x": 1, "label": "a"}, "spare": {"x": 2, "label": "b"}}})),
        ("zoo_nested", json!({"outer": {"inner": {"x": 1, "label": "a", "extra": true}}})),
        ("zoo_items", json!({"items": [{"id": 1}, {"id": 2, "tags": ["a"]}]})),
        ("zoo_items", json!({"items": [{"id": 1}, {"idd": 2}]})),
        ("zoo_map", json!({"counts": {"a": 1, "b": 2}})),
        ("zoo_map", json!({"counts": {"a": -1}})),
        ("zoo_map_structs", json!({"by_name": {"a": {"id": 1}}})),
        ("zoo_map_structs", json!({"by_name": {"a": {"id": 1, "nope": 0}}})),
        ("zoo_color", json!({"color": "sky_blue"})),
        ("zoo_color", json!({"color": "SkyBlue"})),
        ("zoo_optional_color", json!({})),
        ("zoo_shape", json!({"shape": "Point"})),
        ("zoo_shape", json!({"shape": {"Circle": {"radius": 2.0}}})),
        ("zoo_shape", json!({"shape": {"Square": 3.0}})),
        ("zoo_shape", json!({"shape": {"Triangle": 3.0}})),
        ("zoo_event", json!({"event": {"kind": "Click", "data": {"x": 1, "y": 2}}})),
        ("zoo_event", json!({"event": {"kind": "Key", "data": "a"}})),
        ("zoo_event", json!({"event": {"kind": "Key", "data": 1}})),
        ("zoo_command", json!({"command": {"op": "Move", "steps": 3}})),
        ("zoo_command", json!({"command": {"op": "Move", "words": "hi"}})),
        ("zoo_command", json!({"command": {"op": "Say", "words": "hi"}})),
        ("zoo_command", json!({"command": {"op": "Jump"}})),
        ("zoo_tree", json!({"root": {"name": "a", "children": [{"name": "b", "children": []}]}})),
        ("zoo_tree", json!({"root": {"name": "a", "children": [{"name": "b"}]}})),
        ("zoo_tree", json!({"root": {"name": "a", "children": [{"name": "b", "children": [], "x": 1}]}})),
        ("zoo_chain", json!({"head": {"value": 1, "next": {"value": 2}}})),
        ("zoo_renamed", json!({"person": {"firstName": "a", "type": "b"}})),
        ("zoo_renamed", json!({"person": {"first_name": "a", "type": "b"}})),
        ("zoo_flatten", json!({"record": {"id": 1, "extra": true}})),
        ("zoo_flatten", json!({"record": {"id": 1, "extra": true, "more": 1}})),
        ("zoo_skipped", json!({"record": {"keep": "a"}})),
        ("zoo_skipped", json!({"record": {"keep": "a", "hidden": 1}})),
        ("zoo_format", json!({"format": "json", "value": 3})),
        ("zoo_tuple", json!({"pair": [1, "a"]})),
        ("zoo_tuple", json!({"pair": [1, 2]})),
        ("zoo_tuple", json!({"pair": [1]})),
        ("zoo_grid", json!({"grid": [[1, 2], [3]]})),
        ("zoo_grid", json!({"grid": [[1, 300]]})),
        ("zoo_filter", json!({"filter": {"name": "a"}})),
        ("zoo_filter", json!({"filter": {"nmae": "a"}})),
        ("zoo_bools", json!({"flag": true, "flags": [false]})),
        ("zoo_bools", json!({"flag": "true", "flags": []})),
        ("zoo_char_set", json!({"c": "x", "tags": ["a", "b"]})),
        ("zoo_char_set", json!({"c": "xy", "tags": []})),
        ("zoo_array", json!({"rgb": [1, 2, 3]})),
        ("zoo_array", json!({"rgb": [1, 2]})),
        ("zoo_newtype", json!({"distance": 2.5})),
        ("zoo_any", json!({"value": {"anything": [1, "x"]}})),
        ("zoo_strict", json!({"city": "Paris"})),
        ("zoo_strict", json!({"city": "Paris", "days": 3, "unit": "red"})),
        ("zoo_navigate", json!({"step": {"action": "navigate", "url": "https://example.com"}})),
        ("zoo_union", json!({"op": "Read", "path": "a"})),
        ("zoo_union", json!({"op": "Read", "path": "a", "content": "x"})),
        ("zoo_union", json!({"op": "Write", "path": "a", "content": "x", "append": true})),
        ("zoo_union", json!({"op": "Write", "path": "a"})),
        ("zoo_union", json!({"op": "Delete", "paths": ["a", "b"]})),
        ("zoo_union", json!({"op": "Move", "path": "a"})),
        ("zoo_dynamic", json!({"name": "ann", "age": 30, "role": "admin"})),
        ("zoo_dynamic", json!({"name": "Ann"})),
        ("zoo_dynamic", json!({"name": "annannannann"})),
        ("zoo_dynamic", json!({"name": "ann", "age": -1})),
        ("zoo_dynamic", json!({"name": "ann", "role": "root"})),
        ("zoo_dynamic", json!({"name": "ann", "nick": "a"})),
        ("read", json!({"path": "a.txt"})),
        ("read", json!({"paht": "a.txt"})),
        ("todo_new", json!({})),
    ]
}

// ---- driving the Python checks -------------------------------------------------------------

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tool-runtime/ sits in the repository root").to_path_buf()
}

/// The Python to run the checks with: `TOOL_CONFORMANCE_PYTHON` (set by `scripts/test.sh`), else
/// the venv `scripts/test.sh` creates.
fn conformance_python() -> PathBuf {
    match std::env::var_os("TOOL_CONFORMANCE_PYTHON") {
        Some(python) => PathBuf::from(python),
        None => repo_root().join("target/conformance-venv/bin/python"),
    }
}

/// Writes one JSON file per tool: its projections, its decoding schema, and the verdict of our
/// decoder on each argument case sent to it.
async fn write_definitions(dir: &Path) -> usize {
    let registry = zoo_registry();
    let mut verdicts: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (index, (tool, arguments)) in argument_cases().into_iter().enumerate() {
        assert!(registry.get(tool).is_some(), "case {index} names the unknown tool {tool}");
        let call = ToolCall::new(format!("call_{index}"), tool, arguments.to_string());
        let message = registry.call(&call, &ToolContext::new()).await;
        let accepted = !message.is_error || !message.text().starts_with("invalid arguments");
        verdicts.entry(tool.to_owned()).or_default().push(json!({
            "arguments": arguments,
            "accepted": accepted,
            "message": message.text(),
        }));
    }
    for definition in registry.definitions() {
        let tool = registry.get(&definition.name).expect("listed");
        let decoding = decoding_schema_of(tool, definition);
        let mut entry = serde_json::Map::new();
        entry.insert("tool".to_owned(), json!(definition.name));
        entry.insert("canonical".to_owned(), definition.input_schema.clone());
        entry.insert("decoding".to_owned(), decoding);
        for target in FORMS {
            let projected = definition
                .entry(target)
                .unwrap_or_else(|e| panic!("the zoo's definitions project for every target: {e}"));
            entry.insert(target.to_owned(), projected);
        }
        entry.insert("cases".to_owned(), Value::Array(verdicts.remove(&definition.name).unwrap_or_default()));
        let path = dir.join(format!("{}.json", definition.name));
        std::fs::write(&path, serde_json::to_vec_pretty(&Value::Object(entry)).unwrap()).unwrap();
    }
    registry.len()
}

/// The schema arguments are decoded against: the hoisted union's own, else the canonical one.
fn decoding_schema_of(_tool: &dyn Tool, definition: &ToolDefinition) -> Value {
    if definition.name == "zoo_union" {
        tool_runtime::schema::decoding_schema::<FileOp>()
    } else {
        definition.input_schema.clone()
    }
}

#[tokio::test]
async fn every_definition_passes_the_providers_own_client_libraries() {
    let python = conformance_python();
    let probe =
        std::process::Command::new(&python).args(["-c", "import jsonschema, agents, google.genai, mcp"]).output();
    match probe {
        Ok(output) if output.status.success() => {}
        Ok(output) => panic!(
            "the conformance packages are missing from {}: run `scripts/test.sh`, which installs \
             conformance/requirements.txt into target/conformance-venv and runs the tests\n{}",
            python.display(),
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => panic!(
            "no Python at {} ({error}): run `scripts/test.sh`, which creates target/conformance-venv \
             and runs the tests",
            python.display()
        ),
    }
    let dir = tempfile::tempdir().unwrap();
    let count = write_definitions(dir.path()).await;
    assert!(count >= 35, "tool-std and the zoo give {count} tools");
    let output = std::process::Command::new(&python)
        .arg(repo_root().join("conformance/check.py"))
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "conformance/check.py failed:\n{stdout}\n{stderr}");
    println!("{stdout}");
    assert!(stdout.contains(&format!("checked {count} tools: ")), "{stdout}");
    // The checks must have had something to check: strict schemas, and verdicts both ways.
    let numbers: Vec<usize> = stdout.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
    let [_, strict, accepted, rejected] = numbers[..] else { panic!("unexpected summary: {stdout}") };
    assert!(strict >= 20 && accepted >= 20 && rejected >= 20, "{stdout}");
}

#[test]
fn the_argument_table_has_at_least_forty_cases_on_both_sides_of_the_verdict() {
    let cases = argument_cases();
    assert!(cases.len() >= 40, "{}", cases.len());
    assert!(zoo_registry().len() >= 30 + 5, "{}", zoo_registry().len());
}

/// Schema and decoding agree on every `#[tool]` of this binary (the zoo, the union and the
/// run-time tool): instances generated from each tool's decoding schema (seeded, at most
/// `instances::INSTANCES` per tool, within 60 seconds in all) that `jsonschema` accepts are
/// decoded, and one mutation of each of them of every kind (a type change, an extra key, a struct
/// as an array, a unit variant as an object, a missing required key, a number out of range) that
/// `jsonschema` refuses is refused at decode. The standard tools are checked with the same
/// generator in `tool-std/tests/all/schema_instances.rs`, in a workspace of their own.
#[tokio::test]
async fn generated_instances_and_their_mutations_get_the_same_verdict_from_jsonschema_and_decoding() {
    let registry = zoo_registry();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut found = instances::Agreement::default();
    let zoo: Vec<&ToolDefinition> = registry.definitions().iter().filter(|d| d.name.starts_with("zoo_")).collect();
    assert!(zoo.len() >= 35, "{} zoo tools", zoo.len());
    for (index, definition) in zoo.into_iter().enumerate() {
        let tool = registry.get(&definition.name).expect("listed");
        let schema = decoding_schema_of(tool, definition);
        let name = definition.name.clone();
        let registry = &registry;
        instances::agree(&mut found, &name, &schema, 0x5eed + index as u64, deadline, |arguments: Value| {
            let call = ToolCall::new("c", name.clone(), arguments.to_string());
            async move { registry.call(&call, &ToolContext::new()).await.text().into_owned() }
        })
        .await;
    }
    let (valid, mutations) = (found.valid, found.mutations);
    println!("{valid} schema-valid instances, {mutations} schema-invalid mutations");
    assert!(valid >= 300 && mutations >= 300, "{valid} valid, {mutations} mutations");
    assert_eq!(found.disagreements, Vec::<String>::new());
}
