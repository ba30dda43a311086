//! Rule 3: `null` for a property the schema does not require is dropped, at every depth.

use serde_json::Value;

use super::walk::select_branch;
use crate::schema::resolve;

/// Removes `null` values of properties that `schema` does not require (rule 3), at every depth.
#[cfg(feature = "dynamic")]
pub(crate) fn drop_nulls(value: &mut Value, schema: &Value) {
    drop_optional_nulls(value, schema, schema);
}

/// Removes `null` values of properties that `schema` does not require, recursing into nested
/// objects and arrays the schema describes (and into the selected variant of a tagged union).
pub(super) fn drop_optional_nulls(value: &mut Value, node: &Value, root: &Value) {
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
