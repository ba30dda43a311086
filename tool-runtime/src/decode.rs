//! Strict decoding of a tool call's arguments.
//!
//! The rules, in order:
//! 1. `""` or whitespace is `{}` (models send it for tools without arguments).
//! 2. The text must be one JSON object: anything else, or text after it, is an error that gives
//!    serde_json's 1-based line and column.
//! 3. `null` for a property the schema does not require is dropped before decoding, at every
//!    depth, so that it decodes as absent (serde alone rejects `null` for a `#[serde(default)]`
//!    `u64`). `null` for a required property stays an error that names it.
//! 4. Fields the tool does not accept, at any depth, are an error naming their paths
//!    (`filter.nmae`) and the fields accepted there; nothing is silently dropped. A union (an
//!    internally tagged enum such as `#[serde(tag = "op")]`) is strict per variant: a field of
//!    another variant (`content` sent with `"op":"Read"`) is an error naming it and listing what
//!    that variant accepts.
//! 5. A value of the wrong type names its path and what was expected.
//!
//! Unknown fields are found twice: by walking the schema (which sees the fields serde buffers
//! and never reports, those of `#[serde(flatten)]` structs and tagged enums) and by
//! `serde_ignored` while decoding. A field the schema does not list is refused even when serde
//! would take it (a `#[serde(alias)]`): the schema is what the model was shown.
//!
//! Most calls take a fast path that never builds a `serde_json::Value`: one pass over the text
//! checks every key against the schema (without allocating), then the arguments are decoded
//! straight from the text. Anything the fast path does not handle alike (a `null`, a union
//! (`oneOf`/`anyOf`/`allOf`), a tuple, an object whose schema is not closed (an open struct, a
//! `serde_json::Value`), an unknown field, any decoding error) sends the call down the full path above, which alone produces the errors; so both paths
//! accept and refuse exactly the same arguments.
//!
//! What real models also send (a JSON string holding the object, arrays as strings, numbers as
//! strings) is only accepted under an opt-in [`RepairPolicy`].

use serde::Deserializer;
use serde::de::{DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::ArgumentError;
use crate::schema::{Segment, accepted_fields, format_path, resolve, union_tag};

mod repair;

pub use repair::{Repair, RepairPolicy, Repaired};

/// Decodes `raw` arguments into `T` by the module's rules. `schema` gives the schema to decode
/// against: the tool's canonical schema, or for a union root its
/// [`decoding_schema`](crate::schema::decoding_schema).
///
/// # Errors
/// An [`ArgumentError`] that says what to change.
pub fn decode_arguments<'s, T: DeserializeOwned>(
    raw: &str,
    schema: impl FnOnce() -> &'s Value,
) -> Result<T, ArgumentError> {
    let text = if raw.trim().is_empty() { "{}" } else { raw };
    let schema = schema();
    match decode_fast(text, schema) {
        Some(decoded) => Ok(decoded),
        None => decode_slow(text, schema),
    }
}

/// The fast path: `Some` only when the full path would decode the same value. `None` sends the
/// call to the full path (see the module docs).
fn decode_fast<T: DeserializeOwned>(text: &str, schema: &Value) -> Option<T> {
    // Rule 2: serde would take an array for a struct.
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let mut checker = serde_json::Deserializer::from_str(text);
    KeyCheck { node: schema, root: schema }.deserialize(&mut checker).ok()?;
    checker.end().ok()?;
    // Every object the schema describes field by field is closed and every key was found in it,
    // so serde ignores nothing (what `serde_ignored` reports on the full path).
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let decoded = T::deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(decoded)
}

/// A value where the schema says nothing: scalars and arrays of scalars pass, an object goes to
/// the full path.
static ANY: Value = Value::Null;

/// Walks one JSON value beside its schema node and fails on what the fast path leaves to the full
/// path: a key that a closed object does not list, a `null`, a union node.
#[derive(Clone, Copy)]
struct KeyCheck<'s> {
    node: &'s Value,
    root: &'s Value,
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

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Err(E::custom("null is left to the full path"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let node = resolve(self.root, self.node).ok_or_else(|| serde::de::Error::custom("unresolved"))?;
        if node.get("prefixItems").is_some() {
            return Err(serde::de::Error::custom("a tuple is left to the full path"));
        }
        let items = node.get("items").filter(|i| i.is_object()).unwrap_or(&ANY);
        while seq.next_element_seed(KeyCheck { node: items, root: self.root })?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let node = resolve(self.root, self.node).ok_or_else(|| serde::de::Error::custom("unresolved"))?;
        if ["oneOf", "anyOf", "allOf"].iter().any(|k| node.get(k).is_some()) {
            return Err(serde::de::Error::custom("a union is left to the full path"));
        }
        let properties = node.get("properties").and_then(Value::as_object);
        let additional = node.get("additionalProperties");
        let closed = additional == Some(&Value::Bool(false));
        // A map's values (`additionalProperties: {schema}`) are checked against that schema.
        let values = additional.filter(|a| a.is_object());
        if (properties.is_some() && !closed) || (properties.is_none() && values.is_none()) {
            // An open struct, or an object the schema does not describe: serde may ignore keys
            // there that only `serde_ignored` would report.
            return Err(serde::de::Error::custom("an object without a closed schema is left to the full path"));
        }
        while let Some(property) = map.next_key_seed(KeyLookup { properties, closed })? {
            let node = property.or(values).unwrap_or(&ANY);
            map.next_value_seed(KeyCheck { node, root: self.root })?;
        }
        Ok(())
    }
}

/// Looks a key up among an object's properties without allocating: the property's schema, `None`
/// for a key an open object does not list, an error for a key a closed object does not list.
struct KeyLookup<'s> {
    properties: Option<&'s Map<String, Value>>,
    closed: bool,
}

impl<'de, 's> DeserializeSeed<'de> for KeyLookup<'s> {
    type Value = Option<&'s Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'s> Visitor<'_> for KeyLookup<'s> {
    type Value = Option<&'s Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a property name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        match self.properties.and_then(|p| p.get(key)) {
            Some(property) => Ok(Some(property)),
            None if self.closed => Err(E::custom("an unknown field is left to the full path")),
            None => Ok(None),
        }
    }
}

fn decode_slow<T: DeserializeOwned>(text: &str, schema: &Value) -> Result<T, ArgumentError> {
    let mut value: Value = serde_json::from_str(text).map_err(|e| ArgumentError::Syntax { message: e.to_string() })?;
    if !value.is_object() {
        return Err(ArgumentError::NotAnObject { found: kind_of(&value) });
    }
    drop_optional_nulls(&mut value, schema, schema);
    let mut unknown: Vec<Vec<Segment>> = Vec::new();
    if let Some(error) = unknown_by_schema(&value, schema, schema, &mut Vec::new(), &mut unknown) {
        return Err(error);
    }

    let mut on_ignored = |path: serde_ignored::Path<'_>| {
        let path = ignored_path(&path);
        if !unknown.contains(&path) {
            unknown.push(path);
        }
    };
    let deserializer = serde_ignored::Deserializer::new(value, &mut on_ignored);
    let decoded: Result<T, _> = serde_path_to_error::deserialize(deserializer);
    // Unknown fields come first: a typo (`nmae`) also makes the real field missing, and the typo
    // is what the model must fix.
    if let Some(first) = unknown.first() {
        let accepted = accepted_fields(schema, &first[..first.len().saturating_sub(1)]);
        return Err(ArgumentError::UnknownFields {
            fields: unknown.iter().map(|p| format_path(p)).collect(),
            accepted,
        });
    }
    decoded.map_err(|error| {
        let path = error
            .path()
            .iter()
            .filter_map(|s| match s {
                serde_path_to_error::Segment::Map { key } => Some(Segment::Key(key.clone())),
                serde_path_to_error::Segment::Seq { index } => Some(Segment::Index(*index)),
                _ => None,
            })
            .collect::<Vec<_>>();
        ArgumentError::Invalid { path: format_path(&path), message: error.into_inner().to_string() }
    })
}

fn ignored_path(path: &serde_ignored::Path<'_>) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut current = path;
    loop {
        match current {
            serde_ignored::Path::Root => break,
            serde_ignored::Path::Seq { parent, index } => {
                segments.push(Segment::Index(*index));
                current = parent;
            }
            serde_ignored::Path::Map { parent, key } => {
                segments.push(Segment::Key(key.clone()));
                current = parent;
            }
            serde_ignored::Path::Some { parent }
            | serde_ignored::Path::NewtypeStruct { parent }
            | serde_ignored::Path::NewtypeVariant { parent } => current = parent,
        }
    }
    segments.reverse();
    segments
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
    (node, None)
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
    unknown: &mut Vec<Vec<Segment>>,
) -> Option<ArgumentError> {
    let node = resolve(root, node)?;
    match value {
        Value::Object(map) => {
            let (branch, tag) = select_branch(value, node, root);
            let properties = branch.get("properties").and_then(Value::as_object);
            let closed = branch.get("additionalProperties") == Some(&Value::Bool(false));
            for (key, v) in map {
                path.push(Segment::Key(key.clone()));
                match properties.and_then(|p| p.get(key)) {
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
                        unknown.push(path.clone());
                    }
                    None => {}
                }
                path.pop();
            }
            None
        }
        Value::Array(items) => {
            let item_schema = node.get("items").filter(|i| i.is_object())?;
            for (index, item) in items.iter().enumerate() {
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

/// Removes `null` values of properties that `schema` does not require (rule 3), at every depth.
pub(crate) fn drop_nulls(value: &mut Value, schema: &Value) {
    drop_optional_nulls(value, schema, schema);
}

/// Removes `null` values of properties that `schema` does not require, recursing into nested
/// objects and arrays the schema describes (and into the selected variant of a tagged union).
fn drop_optional_nulls(value: &mut Value, node: &Value, root: &Value) {
    let Some(node) = resolve(root, node) else {
        return;
    };
    let node = select_branch(value, node, root).0;
    match value {
        Value::Object(map) => {
            let Some(properties) = node.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required = node.get("required").and_then(Value::as_array);
            let is_required = |key: &str| required.is_some_and(|r| r.iter().any(|k| k == key));
            map.retain(|key, v| !(v.is_null() && properties.contains_key(key) && !is_required(key)));
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
