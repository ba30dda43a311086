//! What the schema refuses beyond serde's first error (rules 5 and 7): values out of bounds or of
//! a form the schema refuses, missing fields, and the wording of each message.

use serde_json::{Map, Value};

use super::IntegerRanges;
use super::bounds::Bounds;
use super::keys::allows_kind;
use super::walk::{children, item_schema, property_schema, schema_at, select_branch, value_at};
use crate::error::ArgumentError;
use crate::schema::{IntegerRange, Segment, format_path, resolve};

/// What [`other_faults`] leaves out: the value of serde's first error (with `true` when it is a
/// missing field, whose object's other fields are still visited), and the paths of values out
/// of bounds, already told.
#[derive(Clone, Copy)]
pub(super) struct Faults<'a> {
    pub(super) first: Option<(&'a [Segment], bool)>,
    pub(super) skip: &'a [String],
    /// The integer types' ranges, named in the messages.
    pub(super) ranges: Option<&'a IntegerRanges>,
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
pub(super) fn schema_refusals(
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

/// Beside serde's first error or the values out of bounds (`leave`), each other value the schema
/// refuses by its `type`, `minimum` or `maximum`, and each closed object that lacks required
/// fields, depth first in key order, pushed onto `found`: serde
/// stops at its first error, and a model would otherwise learn of the others one call at a time.
/// The value serde named is not visited again (its object's other fields are, after a missing
/// field); values whose schema the walk cannot tell (an untagged union's) are left out.
pub(super) fn other_faults(
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
pub(super) fn number_words(noun: &str, node: Option<&Value>, range: Option<IntegerRange>) -> String {
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
pub(super) enum Primitive {
    /// An integer type, with its inclusive range.
    Integer(IntegerRange),
    /// `f32` or `f64`.
    Number,
}

/// The primitive type serde names at the end of ``invalid type: string "x", expected u32``;
/// `None` for another expectation (`i128` and `u128` included: their ranges are no help).
pub(super) fn primitive(rust: &str) -> Option<Primitive> {
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
pub(super) fn enum_names(node: &Value, root: &Value) -> Option<String> {
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
pub(super) fn unexpected(value: &Value) -> String {
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

/// The message naming every required field the object at `path` lacks, in the order of the
/// schema's `required`, when it lacks more than `field` (serde stops at the first one):
/// ``missing fields `a`, `b`, `c` ``. `None` when `field` is the only one, or the schema does not
/// say.
pub(super) fn missing_fields(value: &Value, schema: &Value, path: &[Segment], field: &str) -> Option<String> {
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
pub(super) fn lacks(value: &Value, node: &Value, field: &str) -> bool {
    let required = node.get("required").and_then(Value::as_array);
    value.as_object().is_some_and(|map| !map.contains_key(field))
        && required.is_some_and(|r| r.iter().any(|k| k == field))
}

/// Whether serde's `message` names `value` as the one it did not expect (`invalid type: string
/// "x"`, `invalid value: integer `300``, `unknown variant `x``, `invalid type: map`, ...).
pub(super) fn names_value(message: &str, value: &Value) -> bool {
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
pub(super) fn fits(value: &Value, node: &Value) -> bool {
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
pub(super) fn shorten(message: String) -> String {
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
