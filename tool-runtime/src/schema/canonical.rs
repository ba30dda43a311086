//! The canonical pass: every rule of the canonical form listed in the [module docs](super),
//! applied by one walk over a schema ([`canonical`]), and what the walk learns of the bounds that
//! the schema no longer states ([`Canonical`]).

use serde_json::{Map, Value};

use super::bounds::{states_any, states_beyond};
use super::paths::pointer_escape;

/// Formats of the JSON Schema vocabulary (2020-12, section 7.3); any other `format` is removed.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose value is a map from names to subschemas.
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
/// Keywords whose value is one subschema.
const SCHEMA_VALUES: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
];
/// Keywords whose value is an array of subschemas.
const SCHEMA_ARRAYS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];

/// A canonical decoding schema, with what the schema pass knew of its bounds that the schema no
/// longer says.
#[derive(Debug)]
pub(crate) struct Canonical {
    pub(crate) schema: Value,
    /// Whether `schema` states a bound (`#[arg(range(..))]`, `length`, `pattern`, a schemars
    /// attribute, a hand-written schema) beyond what the Rust type of the value refuses by itself.
    /// The pass removes an integer type's `format` (`uint32`, `int8`, ...): the `minimum: 0` of an
    /// unsigned integer and schemars' full range of an `i8`, `i16`, `u8` or `u16` are implied by
    /// that format ([`integer_range`]) and do not count. The format is read as the type's own
    /// statement: a hand-written `JsonSchema` that says `uint32` must refuse what `u32` refuses.
    pub(crate) states_bounds: bool,
    /// The inclusive range of each integer node whose `format` the pass removed (`uint32`: 0 to
    /// 4294967295), by the node's JSON Pointer in `schema`: what decoding the Rust type refuses,
    /// which the schema no longer says in full (a `u32` keeps only `minimum: 0`). Decoding names
    /// it in an error that the schema alone words (an `also:` line), as serde names it on its own.
    pub(crate) integer_ranges: Vec<(String, IntegerRange)>,
}

/// The inclusive range of an integer type: `(min, max)`.
pub(crate) type IntegerRange = (i128, i128);

impl Canonical {
    /// A schema the pass did not make (already canonical, or written by hand): its integer types
    /// are not known, so every bound it states counts.
    pub(crate) fn made_elsewhere(schema: Value) -> Self {
        let states_bounds = states_any(&schema);
        Self { schema, states_bounds, integer_ranges: Vec::new() }
    }
}

/// [`canonicalize_union`], with what the pass knew of the schema's bounds.
pub(crate) fn canonical(mut schema: Value) -> Canonical {
    if let Value::Bool(_) = schema {
        schema = Value::Object(Map::new());
    }
    if let Value::Object(root) = &mut schema {
        root.remove("$schema");
        root.remove("title");
        root.remove("description");
        root.entry("type").or_insert_with(|| Value::String("object".to_owned()));
        let union = root.contains_key("oneOf") || root.contains_key("anyOf");
        if !union || root.contains_key("properties") {
            root.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        }
        if union && root.get("properties").and_then(Value::as_object).is_some_and(Map::is_empty) {
            // schemars adds an empty `properties` beside a root `oneOf`; the branches hold them.
            root.remove("properties");
            root.remove("additionalProperties");
        }
    }
    let mut pass = Pass::default();
    visit(&mut schema, &mut pass);
    if let Value::Object(root) = &mut schema
        && (root.contains_key("oneOf") || root.contains_key("anyOf"))
        && !root.contains_key("properties")
    {
        root.remove("additionalProperties");
    }
    if let Value::Object(root) = &mut schema {
        // A tool with no arguments: exactly `{"type":"object","properties":{},"additionalProperties":false}`.
        if root.get("required").and_then(Value::as_array).is_some_and(Vec::is_empty) {
            root.remove("required");
        }
    }
    Canonical { schema, states_bounds: pass.states_bounds, integer_ranges: pass.integer_ranges }
}

/// The inclusive range of the integer type a schemars `format` names (`uint8`: 0 to 255; `uint`
/// and `int` are `usize` and `isize`), as decoding that type enforces it; an end is infinite
/// where the type's is beyond what an `f64` bound compares exactly (64 and 128 bits). `None` for
/// any other format.
pub(crate) fn integer_range(format: &str) -> Option<(f64, f64)> {
    Some(match format {
        "uint8" => (0.0, f64::from(u8::MAX)),
        "uint16" => (0.0, f64::from(u16::MAX)),
        "uint32" => (0.0, f64::from(u32::MAX)),
        "uint64" | "uint128" | "uint" => (0.0, f64::INFINITY),
        "int8" => (f64::from(i8::MIN), f64::from(i8::MAX)),
        "int16" => (f64::from(i16::MIN), f64::from(i16::MAX)),
        "int32" => (f64::from(i32::MIN), f64::from(i32::MAX)),
        "int64" | "int128" | "int" => (f64::NEG_INFINITY, f64::INFINITY),
        _ => return None,
    })
}

/// `true` for the pointer of a root property, `/properties/<name>`.
fn is_root_property(pointer: &str) -> bool {
    pointer.strip_prefix("/properties/").is_some_and(|name| !name.contains('/'))
}

/// Applies the canonical rules to one node and, through the subschemas, to all below it; sets
/// `states_bounds` when a node states a bound beyond its type (see [`Canonical::states_bounds`]).
fn visit(schema: &mut Value, pass: &mut Pass) {
    let Value::Object(node) = schema else { return };

    let mut range = None;
    if let Some(format) = node.get("format").and_then(Value::as_str)
        && !STANDARD_FORMATS.contains(&format)
    {
        let unsigned = format.starts_with("uint");
        range = integer_range(format);
        if let Some(exact) = integer_bounds(format) {
            pass.integer_ranges.push((pass.pointer.clone(), exact));
        }
        node.remove("format");
        if unsigned && !node.contains_key("minimum") {
            node.insert("minimum".to_owned(), Value::from(0));
        }
    }
    pass.states_bounds = pass.states_bounds || states_beyond(node, range);
    // A default is shown where the model reads it, on an argument (a root property); below that
    // it only says what serde fills in, which no provider needs.
    if !is_root_property(&pass.pointer) {
        node.remove("default");
    }
    node.remove("writeOnly");
    node.remove("readOnly");
    if node.remove(crate::secret::SECRET_MARK) == Some(Value::Bool(true)) {
        node.insert("writeOnly".to_owned(), Value::Bool(true));
    }
    if let Some(Value::Array(tuple)) = node.get("items")
        && !node.contains_key("prefixItems")
    {
        let tuple = tuple.clone();
        node.remove("items");
        node.insert("prefixItems".to_owned(), Value::Array(tuple));
    }
    if let Some(Value::String(title)) = node.remove("title") {
        let description = match node.remove("description") {
            Some(Value::String(d)) if !d.is_empty() => format!("{title}\n\n{d}"),
            _ => title,
        };
        node.insert("description".to_owned(), Value::String(description));
    }
    fold_unit_enum(node);
    if let Some(Value::String(description)) = node.get_mut("description") {
        *description = crate::rustdoc::reflow(description);
    }
    // An item schema's description is its type's doc comment (a use site cannot describe the
    // items of a `Vec<T>`): the list's own description, when it has one, is what the model reads.
    if node.get("description").and_then(Value::as_str).is_some_and(|d| !d.is_empty())
        && let Some(Value::Object(items)) = node.get_mut("items")
    {
        items.remove("description");
    }

    if node.contains_key("properties") && !node.contains_key("additionalProperties") {
        node.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    let required: Vec<String> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if !required.contains(name) {
                strip_null(property);
            }
        }
    }

    for key in SCHEMA_MAPS {
        if let Some(Value::Object(map)) = node.get_mut(*key) {
            for (name, v) in map.iter_mut() {
                pass.below(&[key, name], |pass| visit(v, pass));
            }
        }
    }
    for key in SCHEMA_VALUES.iter().chain(SCHEMA_ARRAYS) {
        match node.get_mut(*key) {
            Some(Value::Array(items)) => {
                for (index, v) in items.iter_mut().enumerate() {
                    pass.below(&[key, &index.to_string()], |pass| visit(v, pass));
                }
            }
            Some(other) if SCHEMA_VALUES.contains(key) => pass.below(&[key], |pass| visit(other, pass)),
            _ => {}
        }
    }
}

/// What [`visit`] learns of a schema as it walks it.
#[derive(Default)]
struct Pass {
    /// See [`Canonical::states_bounds`].
    states_bounds: bool,
    /// See [`Canonical::integer_ranges`].
    integer_ranges: Vec<(String, IntegerRange)>,
    /// The JSON Pointer of the node being visited.
    pointer: String,
}

impl Pass {
    /// Runs `then` with the pointer extended by `tokens` (escaped), then restores it.
    fn below(&mut self, tokens: &[&str], then: impl FnOnce(&mut Self)) {
        let len = self.pointer.len();
        for token in tokens {
            self.pointer.push('/');
            self.pointer.push_str(&pointer_escape(token));
        }
        then(self);
        self.pointer.truncate(len);
    }
}

/// The exact inclusive range of the integer type a schemars `format` names, up to 64 bits
/// (`usize` and `isize` as 64 bits, the targets this runs on); `None` for 128 bits (serde names
/// those `i128`/`u128`, which decoding leaves in its words) and any other format.
pub(crate) fn integer_bounds(format: &str) -> Option<IntegerRange> {
    Some(match format {
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        "uint64" | "uint" => (0, u64::MAX.into()),
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    })
}

/// An optional property: the schema of `T`, not `T | null` (a `null` sent for it still decodes,
/// as absent).
fn strip_null(schema: &mut Value) {
    let Value::Object(node) = schema else { return };
    if let Some(Value::Array(types)) = node.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            node.insert("type".to_owned(), only);
        }
    }
    if let Some(Value::Array(values)) = node.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = node.get_mut(key) else {
            continue;
        };
        branches.retain(|b| !is_null_schema(b));
        if branches.len() == 1 {
            let Some(Value::Object(only)) = node.remove(key).and_then(|b| match b {
                Value::Array(mut b) => Some(b.remove(0)),
                _ => None,
            }) else {
                continue;
            };
            // The use site (the property's own description) wins over the type's.
            for (k, v) in only {
                node.entry(k).or_insert(v);
            }
        }
    }
}

/// `true` for a schema that only allows `null` (`"type": "null"`, `"const": null`, or `"enum": [null]`).
pub(crate) fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const").is_some_and(Value::is_null)
        || schema.get("enum").and_then(Value::as_array).is_some_and(|e| e.len() == 1 && e[0].is_null())
}

/// `oneOf` of string constants (a unit-only enum whose variants carry docs) becomes one string
/// enum; the variant docs are listed in the description as `- value: doc`.
fn fold_unit_enum(node: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = node.get("oneOf").or_else(|| node.get("anyOf")) else {
        return;
    };
    let mut values = Vec::new();
    let mut docs = Vec::new();
    for branch in branches {
        let Value::Object(b) = branch else { return };
        let value = match (b.get("const"), b.get("enum").and_then(Value::as_array)) {
            (Some(Value::String(c)), _) => c.clone(),
            (None, Some(e)) if e.len() == 1 && e[0].is_string() => e[0].as_str().unwrap_or_default().to_owned(),
            _ => return,
        };
        if b.keys().any(|k| !matches!(k.as_str(), "const" | "enum" | "type" | "description" | "title")) {
            return;
        }
        let doc = b.get("description").or_else(|| b.get("title")).and_then(Value::as_str).map(str::to_owned);
        if let Some(doc) = doc {
            docs.push(format!("- {value}: {doc}"));
        }
        values.push(Value::String(value));
    }
    node.remove("oneOf");
    node.remove("anyOf");
    node.insert("type".to_owned(), Value::String("string".to_owned()));
    node.insert("enum".to_owned(), Value::Array(values));
    if !docs.is_empty() {
        let listed = docs.join("\n");
        let description = match node.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{d}\n{listed}"),
            _ => listed,
        };
        node.insert("description".to_owned(), Value::String(description));
    }
}
