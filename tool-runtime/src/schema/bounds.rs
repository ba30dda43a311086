//! What a schema states beyond its Rust type (bounds, patterns): what decides whether decoding
//! may take the flat path, and the patterns it checks.

use serde_json::Value;

use super::paths::pointer_escape;

/// The keywords read here.
pub(crate) const BOUND_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
];

/// Whether `node` (one schema node) states a bound that a value of its Rust type could break.
/// `range` is the inclusive range of the node's integer type (see
/// [`integer_range`](crate::schema::integer_range)), `None` when its type is not known to be an
/// integer type: a `minimum` at or below the range's start and a `maximum` at or above its end say
/// only what decoding the type refuses anyway (serde refuses `-1` for a `u32`, `256` for a `u8`);
/// every other bound keyword counts.
pub(crate) fn states_beyond(node: &serde_json::Map<String, Value>, range: Option<(f64, f64)>) -> bool {
    BOUND_KEYWORDS.iter().any(|&keyword| match (node.get(keyword), range) {
        (None, _) => false,
        (Some(bound), Some((min, _))) if keyword == "minimum" => bound.as_f64().is_none_or(|b| b > min),
        (Some(bound), Some((_, max))) if keyword == "maximum" => bound.as_f64().is_none_or(|b| b < max),
        (Some(_), _) => true,
    })
}

/// Whether `node` (a schema whose integer types are not known, such as one written by hand)
/// states a bound at any depth: every bound keyword counts.
pub(crate) fn states_any(node: &Value) -> bool {
    match node {
        Value::Object(map) => {
            states_beyond(map, None)
                || map.iter().any(|(k, v)| match k.as_str() {
                    // Maps of names to schemas: a property named `minimum` is not a bound.
                    "properties" | "patternProperties" | "$defs" | "definitions" => {
                        v.as_object().is_some_and(|m| m.values().any(states_any))
                    }
                    "enum" | "const" | "examples" => false,
                    _ => states_any(v),
                })
        }
        Value::Array(items) => items.iter().any(states_any),
        _ => false,
    }
}

/// Every `pattern` keyword of the schema `node` at any depth, with its JSON Pointer below `path`
/// (the pointer of `node` itself), in schema order. Names of properties and definitions, and the
/// values of `enum`, `const`, `default` and `examples`, are not keywords.
pub(crate) fn patterns<'a>(node: &'a Value, path: &str, out: &mut Vec<(String, &'a str)>) {
    let pointer = |key: &str| format!("{path}/{}", pointer_escape(key));
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                match key.as_str() {
                    "pattern" => {
                        if let Some(pattern) = value.as_str() {
                            out.push((pointer(key), pattern));
                        }
                    }
                    "properties" | "patternProperties" | "$defs" | "definitions" => {
                        for (name, schema) in value.as_object().into_iter().flatten() {
                            patterns(schema, &format!("{}/{}", pointer(key), pointer_escape(name)), out);
                        }
                    }
                    "enum" | "const" | "default" | "examples" => {}
                    _ => patterns(value, &pointer(key), out),
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                patterns(item, &format!("{path}/{index}"), out);
            }
        }
        _ => {}
    }
}
