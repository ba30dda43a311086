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

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ArgumentError;
use crate::schema::{Canonical, IntegerRange, format_path};

mod bounds;
mod faults;
mod keys;
mod layout;
mod nulls;
mod repair;
mod walk;

use faults::{Faults, other_faults, schema_refusals, shorten};
pub(crate) use keys::KeyTree;
pub(crate) use keys::parse_arguments;
use keys::{definite, fast_path_applies, has_nested_keywords};
use layout::Layout;
#[cfg(feature = "dynamic")]
pub(crate) use nulls::drop_nulls;
use nulls::drop_optional_nulls;
pub use repair::{Repair, RepairPolicy, Repaired};
use walk::{Unknown, unknown_by_schema};

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

/// What a JSON value is, as an error names it: `null`, `a boolean`, `a number`, `a string`, `an
/// array` or `an object`. An error about a value of the wrong type names the kind, not the
/// value (which may be a secret put in the wrong place).
pub fn kind_of(value: &Value) -> &'static str {
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
