//! The key-check pass of the fast path (every key against the schema compiled once, a key sent
//! twice) and the parse of the full path that refuses a key sent twice.

use serde::Deserializer;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::bounds::Bounds;
use crate::error::ArgumentError;
use crate::schema::{Segment, format_path, resolve};

/// Whether the schema `node`'s `type` allows the JSON type `kind` (any, when it has no `type`).
pub(super) fn allows_kind(node: &Value, kind: &str) -> bool {
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
pub(super) fn definite(node: &Value) -> bool {
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
pub(super) fn has_nested_keywords(node: &Value, root: bool) -> bool {
    const NESTED: &[&str] =
        &["properties", "additionalProperties", "patternProperties", "$ref", "$defs", "oneOf", "anyOf", "allOf"];
    match node {
        Value::Object(map) if root => map.keys().any(|k| NESTED[2..].contains(&k.as_str())),
        Value::Object(map) => map.iter().any(|(k, v)| NESTED.contains(&k.as_str()) || has_nested_keywords(v, false)),
        Value::Array(items) => items.iter().any(|v| has_nested_keywords(v, false)),
        _ => false,
    }
}

/// Whether `from_str` on `text` would decode what the full path decodes, when it succeeds (see
/// the module docs). Without `keys`, the schema is flat and `T` is the struct `#[tool]`
/// generates, which refuses unknown keys itself and reads `null` as the default of an argument
/// that has one, so `from_str` alone decides.
pub(super) fn fast_path_applies(text: &str, keys: Option<&KeyTree>) -> bool {
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
