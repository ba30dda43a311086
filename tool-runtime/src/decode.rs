//! Strict decoding of a tool call's arguments.
//!
//! The rules, in order:
//! 1. `""` or whitespace is `{}` (models send it for tools without arguments). A leading byte
//!    order mark (U+FEFF) is ignored, as RFC 8259 (section 8.1) lets a parser do.
//! 2. The text must be one JSON object: anything else, or text after it, is an error that gives
//!    serde_json's 1-based line and column.
//! 3. `null` for a property the schema does not require is dropped before decoding, at every
//!    depth, so that it decodes as absent (serde alone rejects `null` for a `#[serde(default)]`
//!    `u64`). `null` for a required property stays an error that names it. In a tagged union,
//!    `null` for a property of another variant is dropped too: the hoisted schema a model is shown
//!    lists every variant's properties, and OpenAI's strict mode sends `null` for each one left
//!    out (`{"action":"read","path":"a","content":null}`).
//! 4. Fields the tool does not accept, at any depth, are an error naming their paths
//!    (`filter.nmae`) and the fields accepted there; nothing is silently dropped. A union (an
//!    internally tagged enum such as `#[serde(tag = "op")]`) is strict per variant: a field of
//!    another variant (`content` sent with `"op":"Read"`) is an error naming it and listing what
//!    that variant accepts.
//! 5. A value of the wrong type names its path and what was expected, also inside a value serde
//!    buffers before decoding it (an internally or adjacently tagged enum, a `#[serde(flatten)]`
//!    struct), whose errors serde reports at the enclosing value or at none: there the schema
//!    finds the value at fault (the first whose JSON type, `minimum`/`maximum`, `enum` or `const`
//!    it refuses) and the object that lacks a missing field. serde stops at its first error;
//!    after it (or after the values out of their bounds, which are found before serde runs),
//!    every other value whose JSON type, `minimum` or `maximum` the schema refuses, and every
//!    closed object that lacks required fields, is listed in the same error
//!    (`` `body`: invalid type: integer `3`, expected a string\nalso: missing field `tags` ``),
//!    depth first in key order. A primitive type serde expected is named in JSON Schema's words,
//!    with the range the schema declares where it is tighter than the type's (`an integer from 0
//!    to 4294967295` for `u32`, `an integer from 1 to 50` under `#[arg(range(min = 1, max =
//!    50))]`, `a number` for `f64`), alike on serde's line and on an `also:` line (an `also:`
//!    line knows the integer type's range for the parameters of a `#[tool]` function, whose
//!    schema the pass that removes `format` makes; for an `#[input]` type and
//!    [`decode_arguments`] it words only what the schema states: `of at least 0`); an enum of
//!    names sent anything but a string says the names it takes, and a struct sent anything but an
//!    object its fields. A message over 400 bytes
//!    (serde quotes the value at fault, which may be a whole file) keeps its first 200 and last
//!    120 bytes around `…[N bytes cut]…`.
//! 6. A key sent twice in one object is an error naming its path (a JSON object with equal keys
//!    would keep only the last value).
//! 7. Forms serde reads but the schema refuses are refused: an array where the schema's `type`
//!    allows none (a struct sent as an array of its fields, `{"point":[1,2]}`) and an object
//!    where it allows none (a unit variant sent as `{"high":null}`, which the schema says to
//!    send as `"high"`). A number JSON Schema reads as an integer (`100.0`, `1e2`, `-0`: its
//!    numbers compare by value) is that integer where the schema's `type` is `integer`; one
//!    beyond 64 bits stays a float, which an integer type refuses (a `u64`'s schema states no
//!    `maximum`, so there JSON Schema takes `1e20` and decoding does not).
//!
//! Unknown fields are found by walking the schema beside the value: every object the schema
//! describes field by field is closed (`additionalProperties: false`, the canonical rule for every
//! struct), so a key it does not list is refused, at any depth: in nested structs, list items,
//! tuple positions, map values (checked against the map's value schema, also for maps whose keys
//! have a form, `patternProperties`, such as integer keys), the selected variant of a tagged
//! union, the payload of an externally tagged enum variant (`{"Circle":{..}}`), and an untagged
//! union of structs (a key no variant lists is unknown; the message lists every variant's
//! fields; an externally tagged key that names no variant reads the same). The
//! walk also sees the fields serde buffers and never reports (those of `#[serde(flatten)]`
//! structs and tagged enums). A field the schema does not list is refused even when serde would
//! take it (a `#[serde(alias)]`): the schema is what the model was shown. Where the schema leaves
//! an object open (`additionalProperties: true` or absent, a `serde_json::Value`), every key is
//! the type's to take or refuse: a hand-written `JsonSchema` that declares an object open must
//! belong to a type that does not ignore keys there.
//!
//! The arguments type's `Deserialize` is instantiated once, with serde_json's `from_str`, as in
//! hand-written code. Most calls take a fast path that never builds a `serde_json::Value`: one
//! pass over the text checks every key against the schema, compiled once per tool into a tree of
//! hash maps (allocating only the keys of maps, to find one sent twice), then the
//! arguments are decoded straight from the text. For the struct `#[tool]` generates, which refuses
//! unknown fields itself, and a flat schema (every property a scalar, an enum, or an array of them),
//! the key-check pass is skipped, also when the text holds a `null` (what OpenAI's strict mode
//! sends for every optional argument left out): that struct reads `null` as the default of an
//! argument that has one (`#[arg(default)]`), as the full path does by dropping it, and as `None`
//! for an `Option`; a flat schema's text with a second `{` (an object below the root, which a
//! flat schema allows nowhere) takes the key-check pass. Anything the fast path does not
//! handle alike (a `null`, a union (`oneOf`/`anyOf`/`allOf`), a tuple, an object whose schema is
//! not closed, an unknown field, an array or an object where the schema's `type` allows none, a
//! value out of its bounds, any decoding error) sends the call down the full path: the text
//! is parsed into a `serde_json::Value`, checked (rules 2 to 4), and written back as text in a
//! layout where every value starts on a line of its own; `from_str` decodes that text, and the
//! line of its error names the path of rule 5. So both paths accept and refuse exactly the same
//! arguments, and the full path alone produces the errors.
//!
//! What real models also send (a JSON string holding the object, arrays as strings, numbers as
//! strings) is only accepted under an opt-in [`RepairPolicy`].

use serde::Deserializer;
use serde::de::{DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::ArgumentError;
use crate::schema::{Canonical, IntegerRange, Segment, format_path, resolve, union_tag};

pub(crate) mod bounds;
mod repair;

use bounds::Bounds;
pub use repair::{Repair, RepairPolicy, Repaired};

/// Decodes `raw` arguments into `T` by the module's rules. `schema` gives the schema to decode
/// against: the tool's canonical schema, or for a union root its
/// [`decoding_schema`](crate::schema::decoding_schema).
///
/// The schema is compiled for the key-check pass on every call (linear in the schema's size);
/// the registry compiles each tool's once.
///
/// # Errors
/// An [`ArgumentError`] that says what to change.
pub fn decode_arguments<'s, T: DeserializeOwned>(
    raw: &str,
    schema: impl FnOnce() -> &'s Value,
) -> Result<T, ArgumentError> {
    let schema = schema();
    decode_with(raw, schema, Some(&KeyTree::compile(schema)))
}

/// A tool's decoding schema and what the fast path needs to know of it, worked out once.
#[derive(Debug)]
pub(crate) struct Decoding {
    /// The schema arguments are decoded against.
    pub(crate) schema: Value,
    /// The root is a closed object whose properties are all scalars, enums or arrays of them (see
    /// `definite`; no nested `properties`, `additionalProperties`, `$ref` or union), and no bound
    /// is stated beyond what the properties' types refuse themselves: only the root's keys need
    /// checking.
    pub(crate) flat: bool,
    /// A flat schema with an `enum` or a `const` (a unit-only enum's `{"type":"string","enum":
    /// [..]}`): serde reads such an enum's variant from an object too (`{"high":null}`), so a
    /// text with a second `{` takes the key-check pass. Without one, every property is a
    /// string, number, boolean or an array of them, which serde reads from no object (a
    /// hand-written `JsonSchema` that says a scalar must belong to a type that refuses a map).
    flat_enums: bool,
    /// The schema compiled for the key-check pass, on first use (a flat schema decoded into the
    /// struct `#[tool]` generates never needs it unless its text holds an object below the root).
    keys: std::sync::OnceLock<KeyTree>,
    /// The integer types' ranges the schema pass found (see [`Canonical::integer_ranges`]).
    integer_ranges: Vec<(String, IntegerRange)>,
    /// Those ranges by node, on first use (by an error only).
    ranges: std::sync::OnceLock<IntegerRanges>,
}

/// The inclusive range of each integer node of a schema whose Rust type the schema pass knew
/// (see [`Canonical::integer_ranges`]), keyed by the node's address in that schema: a
/// [`Decoding`]'s schema is never changed after it is built, so its nodes stay where they are.
#[derive(Debug, Default)]
pub(crate) struct IntegerRanges(std::collections::HashMap<usize, IntegerRange, foldhash::fast::RandomState>);

impl IntegerRanges {
    /// The range of the integer node `node` (a node of the schema these were resolved in).
    fn of(&self, node: &Value) -> Option<IntegerRange> {
        self.0.get(&std::ptr::from_ref(node).addr()).copied()
    }
}

impl Decoding {
    /// The decoding of a schema, with whether it states a bound its Rust types do not enforce
    /// themselves ([`Canonical::states_bounds`]): such a schema is not flat, since the key-check
    /// pass is what sends a value out of bounds to the full path that reports it.
    pub(crate) fn new(Canonical { schema, states_bounds, integer_ranges }: Canonical) -> Self {
        let flat = schema.get("additionalProperties") == Some(&Value::Bool(false))
            && !has_nested_keywords(&schema, true)
            && !states_bounds
            && schema
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| p.values().all(|v| !has_nested_keywords(v, false) && definite(v)));
        let flat_enums = flat && has_enum(&schema["properties"]);
        Self {
            schema,
            flat,
            flat_enums,
            keys: std::sync::OnceLock::new(),
            integer_ranges,
            ranges: std::sync::OnceLock::new(),
        }
    }

    /// The integer types' ranges by node of [`Decoding::schema`] (resolved on the first call).
    pub(crate) fn ranges(&self) -> &IntegerRanges {
        self.ranges.get_or_init(|| {
            let by_node = self.integer_ranges.iter().filter_map(|(pointer, range)| {
                Some((std::ptr::from_ref(self.schema.pointer(pointer)?).addr(), *range))
            });
            IntegerRanges(by_node.collect())
        })
    }

    /// The text to decode straight away, when the fast path applies to `raw`; `None` when only
    /// the full path decides. With `keys`, or for a schema that is not flat, the key-check pass
    /// runs; for a flat schema decoded into the struct `#[tool]` generates it runs only when the
    /// schema has an enum and the text holds a second `{` (an object where the schema allows
    /// none: serde would read `{"high":null}` as the unit variant `high`, which the schema says
    /// to send as `"high"`).
    pub(crate) fn fast_text<'r>(&self, raw: &'r str, keys: bool) -> Option<&'r str> {
        let text = arguments_text(raw);
        let check = keys || !self.flat || (self.flat_enums && second_brace(text));
        fast_path_applies(text, check.then(|| self.keys())).then_some(text)
    }

    /// The schema compiled for the key-check pass (built on the first call).
    pub(crate) fn keys(&self) -> &KeyTree {
        self.keys.get_or_init(|| KeyTree::compile(&self.schema))
    }
}

/// Whether `node` (a schema, at any depth) has an `enum` or a `const` keyword.
fn has_enum(node: &Value) -> bool {
    match node {
        Value::Object(map) => map.contains_key("enum") || map.contains_key("const") || map.values().any(has_enum),
        Value::Array(items) => items.iter().any(has_enum),
        _ => false,
    }
}

/// Whether `text` holds a `{` after its first (inside a string too: such a text only takes the
/// key-check pass, which accepts it).
fn second_brace(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr(b'{', bytes).is_some_and(|first| memchr::memchr(b'{', &bytes[first + 1..]).is_some())
}

/// Whether the schema `node`'s `type` allows the JSON type `kind` (any, when it has no `type`).
fn allows_kind(node: &Value, kind: &str) -> bool {
    match node.get("type") {
        Some(Value::String(k)) => k == kind,
        Some(Value::Array(kinds)) => kinds.iter().any(|k| k == kind),
        _ => true,
    }
}

/// A schema compiled for the key-check pass: for every schema location the pass can reach (each
/// node once, so recursive schemas stay finite), what an array and what an object found there
/// need, with an object's properties in a hash map. Built in one walk of the schema, so the pass
/// does no `$ref` resolution and no lookup in the schema's own maps.
#[derive(Debug)]
pub(crate) struct KeyTree {
    nodes: Vec<KeyNode>,
}

/// What the key-check pass does with a value at one schema location.
#[derive(Debug)]
struct KeyNode {
    /// An array here: the node of its items, or `None` when it is left to the full path (a
    /// tuple, or a `$ref` that does not resolve).
    items: Option<usize>,
    object: ObjectRule,
    /// The bounds stated here: a value outside them is left to the full path, which reports it.
    bounds: Option<Box<Bounds>>,
}

/// What the key-check pass does with an object at one schema location.
#[derive(Debug)]
enum ObjectRule {
    /// Left to the full path: a union, an open object, an object the schema does not describe, a
    /// `$ref` that does not resolve.
    Full,
    /// A map: every value is checked against this node; a key sent twice is left to the full path
    /// (serde keeps the last of two equal keys of a map).
    Map(usize),
    /// A closed struct: its properties' nodes; any other key is left to the full path.
    Struct(Properties),
}

/// A closed struct's properties: name -> node.
type Properties = std::collections::HashMap<Box<str>, usize, foldhash::fast::RandomState>;

impl KeyTree {
    /// The node of a value where the schema says nothing: scalars and arrays of scalars pass, an
    /// object goes to the full path.
    const ANY: usize = 0;
    /// The node of the root.
    const ROOT: usize = 1;

    pub(crate) fn compile(root: &Value) -> Self {
        let mut tree = Self { nodes: Vec::new() };
        let mut seen = std::collections::HashMap::new();
        let any = tree.node(&ANY, root, &mut seen);
        let top = tree.node(root, root, &mut seen);
        debug_assert_eq!((any, top), (Self::ANY, Self::ROOT));
        tree
    }

    /// The index of `node`'s compiled form, compiling it (and what it reaches) the first time.
    fn node(&mut self, node: &Value, root: &Value, seen: &mut std::collections::HashMap<*const Value, usize>) -> usize {
        if let Some(&index) = seen.get(&std::ptr::from_ref(node)) {
            return index;
        }
        let index = self.nodes.len();
        self.nodes.push(KeyNode { items: None, object: ObjectRule::Full, bounds: None });
        seen.insert(std::ptr::from_ref(node), index);
        let Some(node) = resolve(root, node) else { return index };
        // An array where the schema's `type` allows none (a struct sent as an array of its
        // fields, which serde reads) is left to the full path, which refuses it.
        let items = match node.get("prefixItems") {
            Some(_) => None,
            None if !allows_kind(node, "array") => None,
            None => Some(self.node(node.get("items").filter(|i| i.is_object()).unwrap_or(&ANY), root, seen)),
        };
        let object = if ["oneOf", "anyOf", "allOf"].iter().any(|k| node.get(k).is_some()) {
            ObjectRule::Full
        } else {
            let properties = node.get("properties").and_then(Value::as_object);
            let additional = node.get("additionalProperties");
            let closed = additional == Some(&Value::Bool(false));
            // A map's values (`additionalProperties: {schema}`) are checked against that schema.
            match (properties, additional.filter(|a| a.is_object())) {
                (Some(properties), _) if closed => ObjectRule::Struct(
                    properties.iter().map(|(key, value)| (key.as_str().into(), self.node(value, root, seen))).collect(),
                ),
                (None, Some(values)) => ObjectRule::Map(self.node(values, root, seen)),
                // An open struct, or an object the schema does not describe: the full path alone
                // decides what a `null` there means.
                _ => ObjectRule::Full,
            }
        };
        self.nodes[index] = KeyNode { items, object, bounds: Bounds::of(node).map(Box::new) };
        index
    }
}

/// Whether a property schema says what its values are without allowing an object: a scalar
/// `type`, an `enum` or `const`, or an array of such items. A schema that allows anything (a
/// `serde_json::Value`: `true`, `{}`) is not: an object there may hold a key sent twice, which
/// only the full path finds.
fn definite(node: &Value) -> bool {
    if node.get("enum").is_some() || node.get("const").is_some() {
        return true;
    }
    let scalar = |kind: &str| !matches!(kind, "object" | "array");
    match node.get("type") {
        Some(Value::String(kind)) if kind == "array" => node.get("items").is_some_and(definite),
        Some(Value::String(kind)) => scalar(kind),
        Some(Value::Array(kinds)) => kinds.iter().all(|k| k.as_str().is_some_and(scalar)),
        _ => false,
    }
}

/// Whether `node` (a schema, at any depth) has a keyword that describes objects or unions; at the
/// root, `properties` and `additionalProperties` are the root's own and not counted.
fn has_nested_keywords(node: &Value, root: bool) -> bool {
    const NESTED: &[&str] =
        &["properties", "additionalProperties", "patternProperties", "$ref", "$defs", "oneOf", "anyOf", "allOf"];
    match node {
        Value::Object(map) if root => map.keys().any(|k| NESTED[2..].contains(&k.as_str())),
        Value::Object(map) => map.iter().any(|(k, v)| NESTED.contains(&k.as_str()) || has_nested_keywords(v, false)),
        Value::Array(items) => items.iter().any(|v| has_nested_keywords(v, false)),
        _ => false,
    }
}

/// Decodes `raw` into `T` with one instantiation of `T`'s `Deserialize`, serde_json's
/// `from_str`: first straight from the text when the fast path applies, else from the text the
/// full path writes. `keys` is `schema` compiled for the key-check pass; `None` skips that pass,
/// for a flat schema (see [`Decoding::flat`]) when `T` refuses unknown fields itself
/// (`#[serde(deny_unknown_fields)]`, as the arguments struct `#[tool]` generates does).
pub(crate) fn decode_with<T: DeserializeOwned>(
    raw: &str,
    schema: &Value,
    keys: Option<&KeyTree>,
) -> Result<T, ArgumentError> {
    let mut decoded = None;
    decode_into(raw, schema, keys, &mut |text| {
        decoded = Some(serde_json::from_str(text)?);
        Ok(())
    })?;
    // `decode_into` returns `Ok` only after a `parse` that set `decoded`.
    decoded.ok_or_else(|| ArgumentError::Syntax { message: "the arguments could not be decoded".to_owned() })
}

/// [`decode_with`] without its type: `parse` runs `from_str` on the text to decode and keeps the
/// value; `Ok` means the last `parse` succeeded. Only `parse` is compiled once per decoded type
/// (the code `#[tool]` generates calls this through `__private::decode`); the paths around it are
/// compiled once.
pub(crate) fn decode_into(
    raw: &str,
    schema: &Value,
    keys: Option<&KeyTree>,
    parse: &mut dyn FnMut(&str) -> Result<(), serde_json::Error>,
) -> Result<(), ArgumentError> {
    let text = arguments_text(raw);
    // Without `keys` the schema is flat (see `decode_with`): a second `{` still takes the pass.
    let compiled;
    let keys = match keys {
        None if second_brace(text) => {
            compiled = KeyTree::compile(schema);
            Some(&compiled)
        }
        keys => keys,
    };
    if fast_path_applies(text, keys) && parse(text).is_ok() {
        return Ok(());
    }
    decode_full(raw, schema, None, parse)
}

/// The text rule 1 leaves of `raw`: without a leading byte order mark, and `{}` for nothing.
fn arguments_text(raw: &str) -> &str {
    let raw = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    if raw.trim().is_empty() { "{}" } else { raw }
}

/// The full path of [`decode_into`] alone (for arguments the fast path did not decode).
/// `ranges` are the integer types' ranges of `schema`'s nodes, when known (a [`Decoding`]'s).
pub(crate) fn decode_full(
    raw: &str,
    schema: &Value,
    ranges: Option<&IntegerRanges>,
    parse: &mut dyn FnMut(&str) -> Result<(), serde_json::Error>,
) -> Result<(), ArgumentError> {
    let (layout, violations) = prepare_slow(arguments_text(raw), schema, ranges)?;
    let first = if violations.is_empty() {
        match parse(&layout.text) {
            Ok(()) => return Ok(()),
            Err(error) => Some(layout.locate(&error, schema)),
        }
    } else {
        None
    };
    // Values out of bounds are told once, with their bound, and nothing below them.
    let skip: Vec<String> = violations
        .iter()
        .filter_map(|v| match v {
            ArgumentError::Invalid { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    let mut errors = violations;
    let at = first.as_ref().map(|(path, message)| (path.as_slice(), message.starts_with("missing field")));
    if let Some((path, message)) = &first {
        errors.push(ArgumentError::Invalid { path: format_path(path), message: shorten(message.clone()) });
    }
    let leave = Faults { first: at, skip: &skip, ranges };
    other_faults(&layout.value, schema, schema, &mut Vec::new(), leave, &mut errors);
    all_of(errors)
}

/// What [`other_faults`] leaves out: the value of serde's first error (with `true` when it is a
/// missing field, whose object's other fields are still visited), and the paths of values out
/// of bounds, already told.
#[derive(Clone, Copy)]
struct Faults<'a> {
    first: Option<(&'a [Segment], bool)>,
    skip: &'a [String],
    /// The integer types' ranges, named in the messages.
    ranges: Option<&'a IntegerRanges>,
}

/// Whether `from_str` on `text` would decode what the full path decodes, when it succeeds (see
/// the module docs). Without `keys`, the schema is flat and `T` is the struct `#[tool]`
/// generates, which refuses unknown keys itself and reads `null` as the default of an argument
/// that has one, so `from_str` alone decides.
fn fast_path_applies(text: &str, keys: Option<&KeyTree>) -> bool {
    // Rule 2: serde would take an array for a struct.
    if !text.trim_start().starts_with('{') {
        return false;
    }
    let Some(tree) = keys else { return true };
    let mut checker = serde_json::Deserializer::from_str(text);
    KeyCheck { tree, node: KeyTree::ROOT }.deserialize(&mut checker).is_ok() && checker.end().is_ok()
}

/// Parses `text` into a `Value` in one pass, refusing an object that holds a key twice (a `Value`
/// would keep only the last of the two values): the error then names the key's path.
pub(crate) fn parse_arguments(text: &str) -> Result<Value, ArgumentError> {
    let duplicate = std::cell::RefCell::new(None);
    let mut path = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = ValueSeed { path: &mut path, duplicate: &duplicate }
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    if let Some(path) = duplicate.into_inner() {
        return Err(ArgumentError::Invalid {
            path: format_path(&path),
            message: "the field is sent twice; send each field once".to_owned(),
        });
    }
    parsed.map_err(|e| ArgumentError::Syntax { message: e.to_string() })
}

/// Builds a `Value` as `serde_json` does, and stops at the first object key seen twice, recording
/// its path.
struct ValueSeed<'p> {
    path: &'p mut Vec<Segment>,
    duplicate: &'p std::cell::RefCell<Option<Vec<Segment>>>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.path.push(Segment::Index(items.len()));
            let next = seq.next_element_seed(ValueSeed { path: &mut *self.path, duplicate: self.duplicate });
            self.path.pop();
            match next? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.path.push(Segment::Key(key.clone()));
            if object.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some(self.path.clone());
                return Err(serde::de::Error::custom("a key sent twice"));
            }
            let value = map.next_value_seed(ValueSeed { path: &mut *self.path, duplicate: self.duplicate })?;
            self.path.pop();
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// A value where the schema says nothing (see [`KeyTree::ANY`]).
static ANY: Value = Value::Null;

/// Walks one JSON value beside its compiled schema node and fails on what the fast path leaves to
/// the full path: a key that a closed object does not list, a `null`, a union node.
#[derive(Clone, Copy)]
struct KeyCheck<'t> {
    tree: &'t KeyTree,
    node: usize,
}

impl<'de> DeserializeSeed<'de> for KeyCheck<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeyCheck<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<(), E> {
        #[allow(clippy::cast_precision_loss)]
        self.within(|b| b.number(value as f64, &value))
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<(), E> {
        #[allow(clippy::cast_precision_loss)]
        self.within(|b| b.number(value as f64, &value))
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<(), E> {
        self.within(|b| b.number(value, &value))
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<(), E> {
        self.within(|b| b.string(value))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Err(E::custom("null is left to the full path"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some(items) = self.tree.nodes[self.node].items else {
            return Err(serde::de::Error::custom("this array is left to the full path"));
        };
        let mut count = 0;
        while seq.next_element_seed(KeyCheck { tree: self.tree, node: items })?.is_some() {
            count += 1;
        }
        self.within(|b| b.items(count))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        match &self.tree.nodes[self.node].object {
            ObjectRule::Full => Err(serde::de::Error::custom("this object is left to the full path")),
            &ObjectRule::Map(values) => {
                let mut seen = std::collections::HashSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    if !seen.insert(key) {
                        return Err(serde::de::Error::custom("a key sent twice is left to the full path"));
                    }
                    map.next_value_seed(KeyCheck { tree: self.tree, node: values })?;
                }
                Ok(())
            }
            ObjectRule::Struct(properties) => {
                while let Some(node) = map.next_key_seed(KeyLookup { properties })? {
                    map.next_value_seed(KeyCheck { tree: self.tree, node })?;
                }
                Ok(())
            }
        }
    }
}

impl KeyCheck<'_> {
    /// `Ok` when the value fits the bounds of this node (`check` says what is wrong with it), an
    /// error that sends the call down the full path otherwise.
    fn within<E: serde::de::Error>(self, check: impl FnOnce(&Bounds) -> Option<String>) -> Result<(), E> {
        match self.tree.nodes[self.node].bounds.as_deref().and_then(check) {
            Some(_) => Err(E::custom("a value out of bounds is left to the full path")),
            None => Ok(()),
        }
    }
}

/// Looks a key up among a closed struct's properties without allocating: the property's node, or
/// an error for a key the struct does not list.
struct KeyLookup<'t> {
    properties: &'t Properties,
}

impl<'de> DeserializeSeed<'de> for KeyLookup<'_> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyLookup<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a property name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<usize, E> {
        self.properties.get(key).copied().ok_or_else(|| E::custom("an unknown field is left to the full path"))
    }
}

/// The full path up to decoding, without `T`: parses the text into a `Value` (refusing a key sent
/// twice, rule 6), checks it is an
/// object (rule 2), drops optional nulls (rule 3) and finds unknown fields by the schema (rule 4),
/// then writes the cleaned value back as text in the [`Layout`] that maps serde_json's error
/// line to a path (rule 5); beside it, the values out of the bounds their schema states, which
/// [`decode_full`] reports (with the other faults) instead of decoding.
fn prepare_slow(
    text: &str,
    schema: &Value,
    ranges: Option<&IntegerRanges>,
) -> Result<(Layout, Vec<ArgumentError>), ArgumentError> {
    let mut value = parse_arguments(text)?;
    if !value.is_object() {
        return Err(ArgumentError::NotAnObject { found: kind_of(&value) });
    }
    drop_optional_nulls(&mut value, schema, schema);
    let mut unknown = Unknown::default();
    if let Some(error) = unknown_by_schema(&value, schema, schema, &mut Vec::new(), &mut unknown) {
        return Err(error);
    }
    if !unknown.paths.is_empty() {
        return Err(ArgumentError::UnknownFields {
            fields: unknown.paths.iter().map(|p| format_path(p)).collect(),
            accepted: unknown.accepted,
        });
    }
    let mut violations = Vec::new();
    schema_refusals(&mut value, schema, schema, &mut Vec::new(), ranges, &mut violations);
    Ok((Layout::of(value), violations))
}

/// `Ok` for no errors, the error for one, and for more the first with the others listed after it
/// (`` `age`: must be at least 0; got -1\nalso: `name`: ... ``).
pub(crate) fn all_of(mut errors: Vec<ArgumentError>) -> Result<(), ArgumentError> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => {
            let first = errors.remove(0);
            let rest: Vec<String> = errors.iter().map(ToString::to_string).collect();
            Err(ArgumentError::Invalid {
                path: String::new(),
                message: format!("{first}\nalso: {}", rest.join("\nalso: ")),
            })
        }
    }
}

/// Pushes onto `found`, depth first in input order, each value of `value` that the schema
/// refuses although serde might read it, as an error naming its path and what to send: a value
/// outside the bounds its schema node states (with the bound), and an array or an object where
/// the node's `type` allows none (a struct sent as an array of its fields, a unit variant sent as
/// `{"high":null}`: serde reads both). Below such a value nothing more is checked. On the way,
/// a number written with a fraction or an exponent whose value is an integer (`100.0`, `1e2`,
/// `-0`, which serde_json reads as the float `-0.0`) is made that integer where the node's `type`
/// is `integer`: JSON Schema (2020-12, section 6.1.1 of the validation vocabulary) takes it as
/// one, while serde refuses a float for an integer type. An integer beyond 64 bits stays a float
/// (and is refused by serde). Values whose schema the walk cannot tell (an untagged union's) are
/// left to the type.
fn schema_refusals(
    value: &mut Value,
    node: &Value,
    root: &Value,
    path: &mut Vec<Segment>,
    ranges: Option<&IntegerRanges>,
    found: &mut Vec<ArgumentError>,
) {
    let Some(node) = resolve(root, node) else { return };
    let node = select_branch(value, node, root).0;
    let bounds = Bounds::of(node).and_then(|b| b.check(value));
    let form = match value {
        Value::Array(_) | Value::Object(_) => refusal(value, node, root, ranges),
        _ => None,
    };
    if let Some(message) = bounds.or(form) {
        found.push(ArgumentError::Invalid { path: format_path(path), message: shorten(message) });
        return;
    }
    match value {
        Value::Number(number) if number.is_f64() && node.get("type").is_some() => {
            if allows_kind(node, "integer")
                && !allows_kind(node, "number")
                && let Some(integer) = number.as_f64().and_then(integral)
            {
                *value = integer;
            }
        }
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if let Some(schema) = property_schema(node, key) {
                    path.push(Segment::Key(key.clone()));
                    schema_refusals(child, schema, root, path, ranges, found);
                    path.pop();
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                if let Some(schema) = item_schema(node, index) {
                    path.push(Segment::Index(index));
                    schema_refusals(item, schema, root, path, ranges, found);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

/// `n` as a JSON integer when it is one that fits 64 bits (`-0.0` as `0`).
fn integral(n: f64) -> Option<Value> {
    // 2^64 and -2^63, exact as `f64`; within them, an integral `f64` converts exactly.
    const TWO_64: f64 = 18_446_744_073_709_551_616.0;
    const MINUS_TWO_63: f64 = -9_223_372_036_854_775_808.0;
    if n.fract() != 0.0 || !n.is_finite() {
        return None;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    if (0.0..TWO_64).contains(&n) || n == 0.0 {
        Some(Value::from(n.abs() as u64))
    } else if (MINUS_TWO_63..0.0).contains(&n) {
        Some(Value::from(n as i64))
    } else {
        None
    }
}

/// A cleaned arguments value written back as JSON text in which every value starts on a line of
/// its own, so that the line of a serde_json error names the value at fault:
///
/// ```text
/// {
/// "filter":
/// {
/// "name":
/// 5
/// }
/// ,"tags":
/// [
/// "a"
/// ,"b"
/// ]
/// }
/// ```
///
/// A value's first line belongs to it; a key line (`"name":`, `,"tags":`) and a closing line
/// (`}`, `]`) belong to the enclosing object or array. serde_json reports a wrong value after
/// reading it (on its line), a missing field after the object's `}` (the object's line), an
/// unknown key or variant on the key's line, and an array too long for a tuple on the line of
/// its first extra element.
struct Layout {
    value: Value,
    text: String,
}

/// What a line of a [`Layout`] holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// The first line of a value: the path is the value's.
    Value,
    /// A key, or the closing `}` or `]`: the path is the enclosing container's.
    Container,
}

impl Layout {
    fn of(value: Value) -> Self {
        let mut text = Vec::new();
        let mut writer = LayoutWriter { text: &mut text, line: 1, target: None, path: Vec::new(), found: None };
        writer.value(&value);
        // serde_json writes valid UTF-8.
        let text = String::from_utf8(text).unwrap_or_default();
        Self { value, text }
    }

    /// The error of decoding [`Layout::text`]: the path serde_json's line points to, and the
    /// message.
    fn locate(&self, error: &serde_json::Error, schema: &Value) -> (Vec<Segment>, String) {
        let line = error.line();
        let mut message = error.to_string();
        if line != 0 {
            let suffix = format!(" at line {line} column {}", error.column());
            if message.ends_with(&suffix) {
                message.truncate(message.len() - suffix.len());
            }
        }
        let (mut path, kind) = if line == 0 {
            // No position: an error from a buffered value (a tagged enum, a flattened struct)
            // after the whole text was read, at the root.
            (Vec::new(), LineKind::Value)
        } else {
            let mut sink = Vec::new();
            let mut writer =
                LayoutWriter { text: &mut sink, line: 1, target: Some(line), path: Vec::new(), found: None };
            writer.value(&self.value);
            writer.found.unwrap_or((Vec::new(), LineKind::Value))
        };
        if error.classify() == serde_json::error::Category::Syntax
            && message.starts_with("trailing characters")
            && kind == LineKind::Value
            && let Some(Segment::Index(_)) = path.last()
        {
            // The only syntax error the layout can give: serde stopped reading an array after
            // the elements a tuple or fixed-size array takes, and serde_json found another.
            path.pop();
            let len = value_at(&self.value, &path).and_then(Value::as_array).map_or(0, Vec::len);
            message = format!("invalid length {len}, expected fewer elements in array");
        }
        // serde reports a value it buffered (a tagged enum's, a flattened struct's) on the line
        // of the enclosing value, or on none: the value at fault below it is the first that the
        // message names and the schema refuses, else the first that the message names; when no
        // value there is the one the message names, the enclosing path stays.
        if error.classify() == serde_json::error::Category::Data
            && ["invalid type: ", "invalid value: ", "unknown variant `"].iter().any(|p| message.starts_with(p))
            && let Some(at) = value_at(&self.value, &path)
            && (at.is_object() || at.is_array())
            && let Some(node) = schema_at(&self.value, schema, schema, &path)
        {
            let mut below = path.clone();
            let refused = |value: &Value, node: &Value| names_value(&message, value) && !fits(value, node);
            let named = |value: &Value, _: &Value| names_value(&message, value);
            if find_fault(at, node, schema, &mut below, &refused) || find_fault(at, node, schema, &mut below, &named) {
                path = below;
            }
        }
        // A missing field of a buffered value: the object below that lacks it.
        if let Some(field) = message.strip_prefix("missing field `").and_then(|m| m.strip_suffix('`'))
            && let Some(at) = value_at(&self.value, &path)
            && let Some(node) = schema_at(&self.value, schema, schema, &path)
        {
            let mut below = path.clone();
            if find_fault(at, node, schema, &mut below, &|value, node| lacks(value, node, field)) {
                path = below;
            }
            if let Some(missing) = missing_fields(&self.value, schema, &path, field) {
                message = missing;
            }
        }
        // serde_json's word for a value an enum of unit variants cannot start with (a number,
        // a boolean, an array): say what was sent and what is taken.
        if message == "expected value"
            && let Some(at) = value_at(&self.value, &path)
            && let Some(node) = schema_at(&self.value, schema, schema, &path)
            && let Some(names) = enum_names(node, schema)
        {
            message = format!("invalid type: {}, expected one of {names}", unexpected(at));
        }
        // A primitive type serde names (`u32`): in JSON Schema's words, with the range the schema
        // declares where it is tighter than the type's.
        if let Some(start) = message.rfind(", expected ").map(|at| at + ", expected ".len())
            && let Some(primitive) = primitive(&message[start..])
        {
            let node = schema_at(&self.value, schema, schema, &path);
            let words = match primitive {
                Primitive::Integer(range) => number_words("an integer", node, Some(range)),
                Primitive::Number => number_words("a number", node, None),
            };
            message.truncate(start);
            message.push_str(&words);
        }
        (path, message)
    }
}

/// Beside serde's first error or the values out of bounds (`leave`), each other value the schema
/// refuses by its `type`, `minimum` or `maximum`, and each closed object that lacks required
/// fields, depth first in key order, pushed onto `found`: serde
/// stops at its first error, and a model would otherwise learn of the others one call at a time.
/// The value serde named is not visited again (its object's other fields are, after a missing
/// field); values whose schema the walk cannot tell (an untagged union's) are left out.
fn other_faults(
    value: &Value,
    node: &Value,
    root: &Value,
    path: &mut Vec<Segment>,
    leave: Faults<'_>,
    found: &mut Vec<ArgumentError>,
) {
    let Some(node) = resolve(root, node) else { return };
    let node = select_branch(value, node, root).0;
    let at_first = leave.first.is_some_and(|(first, _)| path.as_slice() == first);
    if (at_first && !leave.first.is_some_and(|(_, missing)| missing))
        || (!leave.skip.is_empty() && leave.skip.contains(&format_path(path)))
    {
        return;
    }
    if let Some(message) = refusal(value, node, root, leave.ranges) {
        found.push(ArgumentError::Invalid { path: format_path(path), message: shorten(message) });
        return;
    }
    // Only a closed object's fields are all its schema's: an open one may take a field under
    // another name (`#[serde(alias)]`).
    let closed = node.get("additionalProperties") == Some(&Value::Bool(false));
    if let Value::Object(map) = value
        && closed
        && !at_first
    {
        let missing = lacking(map, node);
        if !missing.is_empty() {
            found.push(ArgumentError::Invalid { path: format_path(path), message: missing_message(&missing) });
        }
    }
    // With several key patterns, which one a key falls under is the type's to say.
    if node.get("patternProperties").and_then(Value::as_object).is_some_and(|p| p.len() > 1) {
        return;
    }
    for (segment, child, schema) in children(value, node) {
        path.push(segment);
        other_faults(child, schema, root, path, leave, found);
        path.pop();
    }
}

/// Why the schema `node` refuses `value` by its `type`, `minimum` or `maximum`, in serde's
/// words (``invalid type: integer `3`, expected a string``), with what to send: an enum of names
/// says the names (``expected one of `low`, `high` ``), a struct its fields (``expected an object
/// with the fields `x`, `y` ``), a number its range (the schema's `minimum` and `maximum`, and
/// where `ranges` know it the integer type's: `an integer from 0 to 4294967295` for a `u32`, as
/// serde's own line says it). `None` when the node refuses nothing of it, or says none of these.
fn refusal(value: &Value, node: &Value, root: &Value, ranges: Option<&IntegerRanges>) -> Option<String> {
    // A value outside an `enum` or a `const` is left to serde, which may take it
    // (`#[serde(other)]`, a variant's `#[serde(alias)]`).
    let wrong = if !type_allows(value, node) {
        "invalid type"
    } else if !in_range(value, node) {
        "invalid value"
    } else {
        return None;
    };
    let expected = match enum_names(node, root) {
        Some(names) if wrong == "invalid type" && !value.is_string() => format!("one of {names}"),
        _ => {
            let kinds: Vec<&str> = match node.get("type") {
                Some(Value::String(kind)) => vec![kind.as_str()],
                Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let range = ranges.and_then(|r| r.of(node));
            let words: Vec<String> = kinds
                .iter()
                .map(|kind| match *kind {
                    "integer" => number_words("an integer", Some(node), range),
                    "number" => number_words("a number", Some(node), None),
                    "object" => match node.get("properties").and_then(Value::as_object) {
                        Some(fields) if !fields.is_empty() => {
                            let names: Vec<String> = fields.keys().map(|k| format!("`{k}`")).collect();
                            format!("an object with the fields {}", names.join(", "))
                        }
                        _ => "an object".to_owned(),
                    },
                    "array" => "an array".to_owned(),
                    "null" => "null".to_owned(),
                    other => format!("a {other}"),
                })
                .collect();
            // A range with no type to name: nothing to say the value should be.
            if words.is_empty() {
                return None;
            }
            words.join(" or ")
        }
    };
    Some(format!("{wrong}: {}, expected {expected}", unexpected(value)))
}

/// `noun` (`an integer`, `a number`) with its range: the node's `minimum` and `maximum`, each
/// where it is tighter than the end of the integer type's `range` (or the type has none), else
/// that end: `an integer from 1 to 50`, `an integer of at least 0`, `a number`.
fn number_words(noun: &str, node: Option<&Value>, range: Option<IntegerRange>) -> String {
    let stated = |key: &str| node.and_then(|n| n.get(key)).filter(|n| n.is_number());
    #[allow(clippy::cast_precision_loss)]
    let end = |stated: Option<&Value>, own: Option<i128>, tighter: fn(f64, f64) -> bool| match (stated, own) {
        (Some(bound), Some(own)) if !bound.as_f64().is_some_and(|b| tighter(b, own as f64)) => Some(own.to_string()),
        (Some(bound), _) => Some(bound.to_string()),
        (None, own) => own.map(|own| own.to_string()),
    };
    let min = end(stated("minimum"), range.map(|r| r.0), |b, own| b > own);
    let max = end(stated("maximum"), range.map(|r| r.1), |b, own| b < own);
    match (min, max) {
        (Some(min), Some(max)) => format!("{noun} from {min} to {max}"),
        (Some(min), None) => format!("{noun} of at least {min}"),
        (None, Some(max)) => format!("{noun} of at most {max}"),
        (None, None) => noun.to_owned(),
    }
}

/// A primitive type serde names when it expected one.
enum Primitive {
    /// An integer type, with its inclusive range.
    Integer(IntegerRange),
    /// `f32` or `f64`.
    Number,
}

/// The primitive type serde names at the end of ``invalid type: string "x", expected u32``;
/// `None` for another expectation (`i128` and `u128` included: their ranges are no help).
fn primitive(rust: &str) -> Option<Primitive> {
    fn range<T: Into<i128>>(min: T, max: T) -> Option<Primitive> {
        Some(Primitive::Integer((min.into(), max.into())))
    }
    match rust {
        "u8" => range(u8::MIN, u8::MAX),
        "u16" => range(u16::MIN, u16::MAX),
        "u32" => range(u32::MIN, u32::MAX),
        "u64" => range(u64::MIN, u64::MAX),
        "usize" => range(0, u64::try_from(usize::MAX).unwrap_or(u64::MAX)),
        "i8" => range(i8::MIN, i8::MAX),
        "i16" => range(i16::MIN, i16::MAX),
        "i32" => range(i32::MIN, i32::MAX),
        "i64" => range(i64::MIN, i64::MAX),
        "isize" => range(i64::try_from(isize::MIN).unwrap_or(i64::MIN), i64::try_from(isize::MAX).unwrap_or(i64::MAX)),
        "f32" | "f64" => Some(Primitive::Number),
        _ => None,
    }
}

/// The names an enum of unit variants takes, quoted and joined (`` `low`, `high` ``): the
/// strings of the node's `enum` or `const`, or of every branch of its `anyOf` / `oneOf` (schemars
/// writes a variant with a doc comment as a `const` branch; an `Option` adds a `null` branch).
/// `None` when a branch takes something else (a variant with data), or there are no names.
fn enum_names(node: &Value, root: &Value) -> Option<String> {
    fn collect(node: &Value, root: &Value, depth: usize, names: &mut Vec<String>) -> bool {
        let Some(node) = resolve(root, node).filter(|_| depth < 8) else { return false };
        if let Some(values) = node.get("enum").and_then(Value::as_array) {
            return values.iter().all(|value| match value {
                Value::String(name) => {
                    names.push(format!("`{name}`"));
                    true
                }
                other => other.is_null(),
            });
        }
        if let Some(constant) = node.get("const") {
            if let Some(name) = constant.as_str() {
                names.push(format!("`{name}`"));
            }
            return constant.is_string();
        }
        if node.get("type").and_then(Value::as_str) == Some("null") {
            return true;
        }
        let branches = ["anyOf", "oneOf"].iter().find_map(|key| node.get(*key).and_then(Value::as_array));
        branches.is_some_and(|branches| branches.iter().all(|branch| collect(branch, root, depth + 1, names)))
    }
    let mut names = Vec::new();
    (collect(node, root, 0, &mut names) && !names.is_empty()).then(|| names.join(", "))
}

/// `value` as serde names an unexpected value: ``integer `1` ``, ``boolean `true` ``, `map`, ...
fn unexpected(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) if n.is_f64() => format!("floating point `{n}`"),
        Value::Number(n) => format!("integer `{n}`"),
        Value::String(text) => format!("string {text:?}"),
        Value::Array(_) => "sequence".to_owned(),
        Value::Object(_) => "map".to_owned(),
    }
}

/// Extends `path` to the first value in `value` (depth first, in input order) that `at_fault`
/// says is at fault, given its schema node (references resolved, the variant of a tagged union
/// selected); `false` when none is.
fn find_fault(
    value: &Value,
    node: &Value,
    root: &Value,
    path: &mut Vec<Segment>,
    at_fault: &dyn Fn(&Value, &Value) -> bool,
) -> bool {
    let Some(node) = resolve(root, node) else { return false };
    let node = select_branch(value, node, root).0;
    if at_fault(value, node) {
        return true;
    }
    for (segment, child, schema) in children(value, node) {
        path.push(segment);
        if find_fault(child, schema, root, path, at_fault) {
            return true;
        }
        path.pop();
    }
    false
}

/// The members of an object or the items of an array, each with its path segment and its schema
/// (those the schema says nothing of left out); empty for any other value.
fn children<'v, 's>(value: &'v Value, node: &'s Value) -> Vec<(Segment, &'v Value, &'s Value)> {
    match value {
        Value::Object(map) => map
            .iter()
            .filter_map(|(key, v)| Some((Segment::Key(key.clone()), v, property_schema(node, key)?)))
            .collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| Some((Segment::Index(index), item, item_schema(node, index)?)))
            .collect(),
        _ => Vec::new(),
    }
}

/// The message naming every required field the object at `path` lacks, in the order of the
/// schema's `required`, when it lacks more than `field` (serde stops at the first one):
/// ``missing fields `a`, `b`, `c` ``. `None` when `field` is the only one, or the schema does not
/// say.
fn missing_fields(value: &Value, schema: &Value, path: &[Segment], field: &str) -> Option<String> {
    let object = value_at(value, path)?.as_object()?;
    let node =
        select_branch(value_at(value, path)?, resolve(schema, schema_at(value, schema, schema, path)?)?, schema).0;
    let missing = lacking(object, node);
    (missing.len() > 1 && missing.contains(&field)).then(|| missing_message(&missing))
}

/// The fields the schema `node` requires that `object` lacks, in the order of `required`.
fn lacking<'n>(object: &Map<String, Value>, node: &'n Value) -> Vec<&'n str> {
    let required = node.get("required").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    required.iter().filter_map(Value::as_str).filter(|name| !object.contains_key(*name)).collect()
}

/// ``missing field `a` `` or ``missing fields `a`, `b` ``.
fn missing_message(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
    format!("missing {} {}", if names.len() == 1 { "field" } else { "fields" }, quoted.join(", "))
}

/// Whether `value` is an object that lacks `field` although its schema `node` requires it.
fn lacks(value: &Value, node: &Value, field: &str) -> bool {
    let required = node.get("required").and_then(Value::as_array);
    value.as_object().is_some_and(|map| !map.contains_key(field))
        && required.is_some_and(|r| r.iter().any(|k| k == field))
}

/// The schema node of the value at `path` in `value` (references resolved, the variant of a
/// tagged union selected by the value); `None` where the schema does not say.
fn schema_at<'a>(value: &Value, node: &'a Value, root: &'a Value, path: &[Segment]) -> Option<&'a Value> {
    let (mut value, mut node) = (value, node);
    for segment in path {
        let here = select_branch(value, resolve(root, node)?, root).0;
        (value, node) = match segment {
            Segment::Key(key) => (value.get(key.as_str())?, property_schema(here, key)?),
            Segment::Index(index) => (value.get(*index)?, item_schema(here, *index)?),
        };
    }
    resolve(root, node)
}

/// The schema of property `key` of an object node: listed, or the map's value schema.
fn property_schema<'a>(node: &'a Value, key: &str) -> Option<&'a Value> {
    node.get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()))
        .or_else(|| node.get("patternProperties").and_then(Value::as_object).and_then(|p| p.values().next()))
}

/// The schema of item `index` of an array node: its tuple position, or the list's item schema.
fn item_schema(node: &Value, index: usize) -> Option<&Value> {
    node.get("prefixItems").and_then(|t| t.get(index)).or_else(|| node.get("items").filter(|i| i.is_object()))
}

/// Whether serde's `message` names `value` as the one it did not expect (`invalid type: string
/// "x"`, `invalid value: integer `300``, `unknown variant `x``, `invalid type: map`, ...).
fn names_value(message: &str, value: &Value) -> bool {
    let shown = unexpected(value);
    match value {
        Value::String(text) => message.contains(&shown) || message.contains(&format!("unknown variant `{text}`")),
        // `null`, `map` and `sequence` alone could be words of the message.
        Value::Null | Value::Object(_) | Value::Array(_) => message.contains(&format!("invalid type: {shown}")),
        Value::Bool(_) | Value::Number(_) => message.contains(&shown),
    }
}

/// Whether `value` has a JSON type the node's `type` allows, lies within its `minimum` and
/// `maximum`, and is one of its `enum` / its `const`. A node without these allows anything.
fn fits(value: &Value, node: &Value) -> bool {
    let listed = node.get("enum").and_then(Value::as_array).is_none_or(|values| values.contains(value));
    let constant = node.get("const").is_none_or(|c| c == value);
    type_allows(value, node) && in_range(value, node) && listed && constant
}

/// Whether a number lies within the node's `minimum` and `maximum` (anything else does).
fn in_range(value: &Value, node: &Value) -> bool {
    let Some(n) = value.as_f64() else { return true };
    node.get("minimum").and_then(Value::as_f64).is_none_or(|min| n >= min)
        && node.get("maximum").and_then(Value::as_f64).is_none_or(|max| n <= max)
}

/// Whether `value` has a JSON type the node's `type` allows (any, when it has none).
fn type_allows(value: &Value, node: &Value) -> bool {
    let kind_fits = |kind: &str| match kind {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    };
    match node.get("type") {
        Some(Value::String(kind)) => kind_fits(kind),
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).any(kind_fits),
        _ => true,
    }
}

/// The longest error message kept whole, in bytes: serde quotes the value at fault
/// (`invalid type: string "..."`), which may be a whole file's content.
const MESSAGE_MAX_BYTES: usize = 400;

/// `message` cut in the middle when it is over [`MESSAGE_MAX_BYTES`]: its first 200 and last 120
/// bytes (at character boundaries) around `…[N bytes cut]…`.
fn shorten(message: String) -> String {
    if message.len() <= MESSAGE_MAX_BYTES {
        return message;
    }
    let mut head = 200;
    while !message.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = message.len() - 120;
    while !message.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}…[{} bytes cut]…{}", &message[..head], tail - head, &message[tail..])
}

/// The value at `path` in `value`.
fn value_at<'v>(value: &'v Value, path: &[Segment]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, segment| match segment {
        Segment::Key(key) => v.get(key.as_str()),
        Segment::Index(index) => v.get(*index),
    })
}

/// Writes a [`Layout`]; with a `target` line, records the path and kind of that line instead.
struct LayoutWriter<'t> {
    text: &'t mut Vec<u8>,
    /// The 1-based line being written.
    line: usize,
    target: Option<usize>,
    path: Vec<Segment>,
    found: Option<(Vec<Segment>, LineKind)>,
}

impl LayoutWriter<'_> {
    fn newline(&mut self) {
        self.text.push(b'\n');
        self.line += 1;
    }

    fn mark(&mut self, kind: LineKind) {
        if self.target == Some(self.line) && self.found.is_none() {
            self.found = Some((self.path.clone(), kind));
        }
    }

    fn scalar(&mut self, value: &Value) {
        // Serialising a `Value` into a `Vec` cannot fail; its text never spans lines.
        let _ = serde_json::to_writer(&mut *self.text, value);
    }

    fn value(&mut self, value: &Value) {
        if self.target.is_some_and(|t| t < self.line) {
            return;
        }
        self.mark(LineKind::Value);
        match value {
            Value::Object(map) if !map.is_empty() => {
                self.text.push(b'{');
                for (index, (key, item)) in map.iter().enumerate() {
                    self.newline();
                    self.mark(LineKind::Container);
                    if index > 0 {
                        self.text.push(b',');
                    }
                    let _ = serde_json::to_writer(&mut *self.text, key);
                    self.text.push(b':');
                    self.newline();
                    self.path.push(Segment::Key(key.clone()));
                    self.value(item);
                    self.path.pop();
                }
                self.newline();
                self.mark(LineKind::Container);
                self.text.push(b'}');
            }
            Value::Array(items) if !items.is_empty() => {
                self.text.push(b'[');
                for (index, item) in items.iter().enumerate() {
                    self.newline();
                    self.path.push(Segment::Index(index));
                    self.mark(LineKind::Value);
                    if index > 0 {
                        self.text.push(b',');
                    }
                    self.value(item);
                    self.path.pop();
                }
                self.newline();
                self.mark(LineKind::Container);
                self.text.push(b']');
            }
            _ => self.scalar(value),
        }
    }
}

/// The branch of a tagged union (`oneOf`/`anyOf` of objects with a tag) that `value` selects,
/// with the tag's name and value; `node` itself when it is not a tagged union.
fn select_branch<'a>(value: &Value, node: &'a Value, root: &'a Value) -> (&'a Value, Option<(String, String)>) {
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(branches)) = node.get(key) else { continue };
        let resolved: Vec<&'a Value> = branches.iter().filter_map(|b| resolve(root, b)).collect();
        let objects: Vec<&Map<String, Value>> = resolved.iter().filter_map(|b| b.as_object()).collect();
        if objects.len() != branches.len() {
            continue;
        }
        let Some((tag, values)) = union_tag(&objects) else { continue };
        let Some(sent) = value.get(&tag).and_then(Value::as_str) else { continue };
        if let Some(index) = values.iter().position(|v| v == sent) {
            return (resolved[index], Some((tag, sent.to_owned())));
        }
    }
    // An externally tagged enum (`{"Circle":{..}}`): the branch whose one required property is
    // the object's one key, when no other branch lists that key (an untagged enum whose variants
    // share a field is left to the caller).
    if let Value::Object(map) = value
        && map.len() == 1
        && let Some((key, _)) = map.iter().next()
    {
        for union in ["oneOf", "anyOf"] {
            let Some(Value::Array(branches)) = node.get(union) else { continue };
            let listing = branches
                .iter()
                .filter_map(|b| resolve(root, b))
                .filter(|b| b.get("properties").and_then(|p| p.get(key.as_str())).is_some())
                .count();
            if listing > 1 {
                continue;
            }
            for branch in branches.iter().filter_map(|b| resolve(root, b)) {
                let one_required = branch
                    .get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.len() == 1 && r[0] == key.as_str());
                let one_property = branch.get("properties").and_then(Value::as_object).is_some_and(|p| p.len() == 1);
                if one_required && one_property {
                    return (branch, None);
                }
            }
        }
    }
    (node, None)
}

/// Unknown fields found by [`unknown_by_schema`].
#[derive(Default)]
struct Unknown {
    /// Their paths, in input order.
    paths: Vec<Vec<Segment>>,
    /// The fields accepted where the first one was found.
    accepted: Vec<String>,
}

/// Collects into `unknown` the paths of the fields of `value` that a closed object of `schema`
/// (`additionalProperties: false`) does not list, at every depth. A field that the selected
/// variant of a tagged union does not take is returned at once as an error naming the variant
/// and what it accepts.
fn unknown_by_schema(
    value: &Value,
    node: &Value,
    root: &Value,
    path: &mut Vec<Segment>,
    unknown: &mut Unknown,
) -> Option<ArgumentError> {
    let node = resolve(root, node)?;
    match value {
        Value::Object(map) => {
            let (branch, tag) = select_branch(value, node, root);
            // An untagged union of closed objects: a field no variant lists is unknown.
            if std::ptr::eq(branch, node)
                && let Some(variants) = closed_object_variants(node, root)
            {
                return unknown_in_variants(map, &variants, root, path, unknown);
            }
            let properties = branch.get("properties").and_then(Value::as_object);
            let additional = branch.get("additionalProperties");
            let closed = additional == Some(&Value::Bool(false));
            // A map's values are checked against its value schema; a map whose keys have a form
            // (`patternProperties`, an integer-keyed map) against its pattern's schema: the key's
            // form is checked by the type's own `Deserialize` (a key that is not a number is an
            // error naming it).
            let values = additional
                .filter(|a| a.is_object())
                .or_else(|| branch.get("patternProperties").and_then(Value::as_object).and_then(|p| p.values().next()));
            for (key, v) in map {
                path.push(Segment::Key(key.clone()));
                match properties.and_then(|p| p.get(key)).or(values) {
                    Some(property) => {
                        if let Some(error) = unknown_by_schema(v, property, root, path, unknown) {
                            return Some(error);
                        }
                    }
                    None if closed => {
                        if let Some((tag, variant)) = tag.clone() {
                            let accepted: Vec<String> =
                                properties.map(|p| p.keys().map(|k| format!("`{k}`")).collect()).unwrap_or_default();
                            let message = format!(
                                "unknown field for `{tag}` = `{variant}`; `{variant}` accepts {}",
                                accepted.join(", ")
                            );
                            return Some(ArgumentError::Invalid { path: format_path(path), message });
                        }
                        if unknown.paths.is_empty() {
                            unknown.accepted = properties.map(|p| p.keys().cloned().collect()).unwrap_or_default();
                        }
                        unknown.paths.push(path.clone());
                    }
                    None => {}
                }
                path.pop();
            }
            None
        }
        Value::Array(items) => {
            // A tuple (`prefixItems`) gives each position its schema; a list, `items` for all.
            let tuple = node.get("prefixItems").and_then(Value::as_array);
            let rest = node.get("items").filter(|i| i.is_object());
            for (index, item) in items.iter().enumerate() {
                let Some(item_schema) = tuple.and_then(|t| t.get(index)).or(rest) else { continue };
                path.push(Segment::Index(index));
                let found = unknown_by_schema(item, item_schema, root, path, unknown);
                path.pop();
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        _ => None,
    }
}

/// The variants an object can match in a union (`anyOf`/`oneOf`), when every one is a closed
/// object (`additionalProperties: false`): nested unions are opened, and variants that cannot be
/// an object (`null`, a string, a number, an `enum` of them) are left out. `None` when a variant
/// could be an object the schema does not close (then serde alone decides), or for any other
/// node. Used when no variant was selected by a tag: for an untagged enum, and for an externally
/// tagged one whose key names no variant (`{"Triangle":..}`: an unknown field that lists them).
fn closed_object_variants<'a>(node: &'a Value, root: &'a Value) -> Option<Vec<&'a Map<String, Value>>> {
    fn collect<'a>(
        node: &'a Value,
        root: &'a Value,
        depth: usize,
        out: &mut Vec<&'a Map<String, Value>>,
    ) -> Option<()> {
        let node = resolve(root, node)?;
        if let Some(branches) = ["anyOf", "oneOf"].iter().find_map(|k| node.get(*k).and_then(Value::as_array)) {
            if depth > 8 {
                return None;
            }
            return branches.iter().try_for_each(|b| collect(b, root, depth + 1, out));
        }
        let kinds: Vec<&str> = match node.get("type") {
            Some(Value::String(kind)) => vec![kind.as_str()],
            Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let values_not_objects = node
            .get("enum")
            .and_then(Value::as_array)
            .map(|values| values.iter().all(|v| !v.is_object()))
            .or_else(|| node.get("const").map(|c| !c.is_object()));
        if values_not_objects == Some(true) || (!kinds.is_empty() && !kinds.contains(&"object")) {
            // Cannot be an object.
            return Some(());
        }
        let closed = node.get("additionalProperties") == Some(&Value::Bool(false));
        out.push(node.get("properties").and_then(Value::as_object).filter(|_| closed)?);
        Some(())
    }
    node.get("anyOf").or_else(|| node.get("oneOf"))?;
    let mut variants = Vec::new();
    collect(node, root, 0, &mut variants)?;
    (!variants.is_empty()).then_some(variants)
}

/// [`unknown_by_schema`] for an object sent for a union of closed objects: nothing is unknown when
/// one variant takes the whole object (its keys and, below them, theirs); otherwise a key no
/// variant lists is unknown, and a key some variant lists is checked against the first such.
fn unknown_in_variants(
    map: &Map<String, Value>,
    variants: &[&Map<String, Value>],
    root: &Value,
    path: &mut Vec<Segment>,
    unknown: &mut Unknown,
) -> Option<ArgumentError> {
    let takes_all = |properties: &&Map<String, Value>| {
        map.iter().all(|(key, v)| {
            properties.get(key).is_some_and(|property| {
                let mut below = Unknown::default();
                let mut at = path.clone();
                at.push(Segment::Key(key.clone()));
                unknown_by_schema(v, property, root, &mut at, &mut below).is_none() && below.paths.is_empty()
            })
        })
    };
    if variants.iter().any(takes_all) {
        return None;
    }
    for (key, v) in map {
        path.push(Segment::Key(key.clone()));
        match variants.iter().find_map(|properties| properties.get(key)) {
            Some(property) => {
                if let Some(error) = unknown_by_schema(v, property, root, path, unknown) {
                    return Some(error);
                }
            }
            None => {
                if unknown.paths.is_empty() {
                    let mut accepted: Vec<String> = variants.iter().flat_map(|p| p.keys().cloned()).collect();
                    accepted.sort();
                    accepted.dedup();
                    unknown.accepted = accepted;
                }
                unknown.paths.push(path.clone());
            }
        }
        path.pop();
    }
    None
}

/// Removes `null` values of properties that `schema` does not require (rule 3), at every depth.
#[cfg(feature = "dynamic")]
pub(crate) fn drop_nulls(value: &mut Value, schema: &Value) {
    drop_optional_nulls(value, schema, schema);
}

/// Removes `null` values of properties that `schema` does not require, recursing into nested
/// objects and arrays the schema describes (and into the selected variant of a tagged union).
fn drop_optional_nulls(value: &mut Value, node: &Value, root: &Value) {
    let Some(node) = resolve(root, node) else {
        return;
    };
    let (branch, tag) = select_branch(value, node, root);
    // The properties of a tagged union's other variants: the hoisted schema a model is shown
    // lists them all, and OpenAI's strict mode has it send `null` for each one it leaves out.
    let others: Vec<&str> = match tag {
        Some(_) => ["oneOf", "anyOf"]
            .iter()
            .filter_map(|k| node.get(*k).and_then(Value::as_array))
            .flatten()
            .filter_map(|b| resolve(root, b)?.get("properties")?.as_object())
            .flat_map(|p| p.keys().map(String::as_str))
            .collect(),
        None => Vec::new(),
    };
    let node = branch;
    match value {
        Value::Object(map) => {
            let Some(properties) = node.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required = node.get("required").and_then(Value::as_array);
            let is_required = |key: &str| required.is_some_and(|r| r.iter().any(|k| k == key));
            let listed = |key: &str| properties.contains_key(key) || others.contains(&key);
            map.retain(|key, v| !(v.is_null() && listed(key) && !is_required(key)));
            for (key, v) in map.iter_mut() {
                if let Some(property) = properties.get(key) {
                    drop_optional_nulls(v, property, root);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = node.get("items").filter(|i| i.is_object()) {
                for item in items {
                    drop_optional_nulls(item, item_schema, root);
                }
            }
        }
        _ => {}
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Decoding;
    use crate::schema::{ArgumentBound, ArgumentSchema, BoundNumber, Canonical, argument_schema, arguments_decoding};

    fn flat(arguments: &'static [ArgumentSchema]) -> bool {
        Decoding::new(arguments_decoding(arguments)).flat
    }

    #[test]
    fn integer_types_own_bounds_keep_the_flat_path() {
        static ARGUMENTS: [ArgumentSchema; 7] = [
            ArgumentSchema::new("a", "", false, argument_schema::<u32>),
            ArgumentSchema::new("b", "", false, argument_schema::<Option<u64>>),
            ArgumentSchema::new("c", "", false, argument_schema::<u8>),
            ArgumentSchema::new("d", "", false, argument_schema::<i16>),
            ArgumentSchema::new("e", "", false, argument_schema::<Vec<usize>>),
            ArgumentSchema::new("f", "", false, argument_schema::<i64>),
            ArgumentSchema::new("g", "", false, argument_schema::<String>),
        ];
        // What the model is shown still says each type's range.
        let schema = arguments_decoding(&ARGUMENTS).schema;
        assert_eq!(schema["properties"]["a"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(schema["properties"]["c"], json!({"type": "integer", "minimum": 0, "maximum": 255}));
        assert_eq!(schema["properties"]["d"], json!({"type": "integer", "minimum": -32768, "maximum": 32767}));
        assert!(flat(&ARGUMENTS));
    }

    #[test]
    fn only_a_flat_schema_with_an_enum_sends_a_second_brace_to_the_key_check_pass() {
        static PLAIN: [ArgumentSchema; 2] = [
            ArgumentSchema::new("q", "", false, argument_schema::<String>),
            ArgumentSchema::new("tags", "", false, argument_schema::<Vec<String>>),
        ];
        static ENUM: [ArgumentSchema; 1] = [ArgumentSchema::new("c", "", false, argument_schema::<Colour>)];
        let plain = Decoding::new(arguments_decoding(&PLAIN));
        let with_enum = Decoding::new(arguments_decoding(&ENUM));
        assert!(plain.flat && with_enum.flat);
        assert!(!plain.flat_enums && with_enum.flat_enums);
        // Both decode straight from the text when it holds no object below the root.
        assert_eq!(plain.fast_text(r#"{"q":"{"}"#, false), Some(r#"{"q":"{"}"#));
        assert_eq!(with_enum.fast_text(r#"{"c":"red"}"#, false), Some(r#"{"c":"red"}"#));
        // An object for the enum: the key-check pass sends it to the full path.
        assert_eq!(with_enum.fast_text(r#"{"c":{"red":null}}"#, false), None);
    }

    /// A unit-only enum.
    #[derive(schemars::JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Colour {
        Red,
    }

    #[test]
    fn a_range_argument_tighter_than_its_type_turns_the_flat_path_off() {
        static MINIMUM: [ArgumentSchema; 1] = [ArgumentSchema::new("a", "", false, argument_schema::<u32>)
            .with_bounds(&[ArgumentBound::Minimum(BoundNumber::Int(1))])];
        static MAXIMUM: [ArgumentSchema; 1] = [ArgumentSchema::new("a", "", false, argument_schema::<u8>)
            .with_bounds(&[ArgumentBound::Maximum(BoundNumber::Int(100))])];
        assert!(!flat(&MINIMUM));
        assert!(!flat(&MAXIMUM));
    }

    #[test]
    fn a_range_argument_equal_to_its_type_keeps_the_flat_path() {
        static ZERO: [ArgumentSchema; 1] = [ArgumentSchema::new("a", "", false, argument_schema::<u32>)
            .with_bounds(&[ArgumentBound::Minimum(BoundNumber::Int(0))])];
        assert!(flat(&ZERO));
    }

    #[test]
    fn a_stated_minimum_of_zero_on_a_signed_integer_turns_the_flat_path_off() {
        // The same `minimum: 0` an unsigned integer shows, but stated: `i64` takes `-1`.
        static SIGNED: [ArgumentSchema; 1] = [ArgumentSchema::new("a", "", false, argument_schema::<i64>)
            .with_bounds(&[ArgumentBound::Minimum(BoundNumber::Int(0))])];
        assert_eq!(arguments_decoding(&SIGNED).schema["properties"]["a"], json!({"type": "integer", "minimum": 0}));
        assert!(!flat(&SIGNED));
    }

    #[test]
    fn a_length_or_pattern_argument_turns_the_flat_path_off() {
        static LENGTH: [ArgumentSchema; 1] =
            [ArgumentSchema::new("a", "", false, argument_schema::<String>)
                .with_bounds(&[ArgumentBound::MaxLength(3)])];
        static ITEMS: [ArgumentSchema; 1] = [ArgumentSchema::new("a", "", false, argument_schema::<Vec<u32>>)
            .with_bounds(&[ArgumentBound::MinLength(1)])];
        static PATTERN: [ArgumentSchema; 1] =
            [ArgumentSchema::new("a", "", false, argument_schema::<String>)
                .with_bounds(&[ArgumentBound::Pattern("^a")])];
        assert!(!flat(&LENGTH));
        assert!(!flat(&ITEMS));
        assert!(!flat(&PATTERN));
    }

    #[test]
    fn every_bound_of_a_schema_made_elsewhere_turns_the_flat_path_off() {
        let closed = |property| json!({"type": "object", "properties": {"a": property}, "additionalProperties": false});
        let decoding = |schema| Decoding::new(Canonical::made_elsewhere(schema)).flat;
        assert!(decoding(closed(json!({"type": "integer"}))));
        // Without the format, `minimum: 0` may be stated on any integer.
        assert!(!decoding(closed(json!({"type": "integer", "minimum": 0}))));
        assert!(!decoding(closed(json!({"type": "array", "items": {"type": "string", "maxLength": 2}}))));
    }
}
