//! Union roots: a root `oneOf`/`anyOf` of objects hoisted into one plain object
//! ([`hoist_union`]), the only root shape every provider accepts.

use serde_json::{Map, Value};

/// Hoists a union root (`oneOf`/`anyOf` whose branches are all object schemas) into one plain
/// object, the only root shape every provider accepts (Anthropic and Gemini refuse a root
/// `oneOf`). Any other schema is returned unchanged.
///
/// - The tag of an internally tagged enum (a property that every branch fixes to one string with
///   `const` or a one-value `enum`, such as `op` of `#[serde(tag = "op")]`) becomes one required
///   `{"type":"string","enum":[..variants]}`, whose description lists each variant's doc
///   (`- Read: Read a file.`).
/// - Every other property of every branch is hoisted. Its description says which variants take
///   it, with each variant's own doc (`Used when op is Read: the file to read; Write (required): the
///   file to write`), unless every variant takes it with the same schema, when it is kept as it is. A
///   property whose schema differs between variants becomes an `anyOf` of the distinct schemas.
/// - `required` keeps the tag and the properties every variant requires.
/// - The root is closed (`additionalProperties: false`); the per-variant rules are enforced by
///   decoding (see [`decoding_schema`](super::decoding_schema)).
pub fn hoist_union(schema: Value) -> Value {
    let Value::Object(mut root) = schema else { return schema };
    let key = if root.contains_key("oneOf") { "oneOf" } else { "anyOf" };
    let Some(Value::Array(branches)) = root.get(key) else {
        return Value::Object(root);
    };
    let objects: Vec<&Map<String, Value>> = branches.iter().filter_map(Value::as_object).collect();
    if objects.is_empty()
        || objects.len() != branches.len()
        || objects.iter().any(|b| !b.get("properties").is_some_and(Value::is_object))
    {
        return Value::Object(root);
    }
    let tag = union_tag(&objects);
    let mut variant_docs = Vec::new();
    // property name -> (variant label, required there, schema), in first-seen order
    let mut order: Vec<String> = Vec::new();
    let mut uses: std::collections::HashMap<String, Vec<(String, bool, Value)>> = Default::default();
    for (index, branch) in objects.iter().enumerate() {
        let label = match &tag {
            Some((_, values)) => values[index].clone(),
            None => format!("variant {}", index + 1),
        };
        if let Some(doc) = branch.get("description").and_then(Value::as_str) {
            variant_docs.push(format!("- {label}: {doc}"));
        }
        let required: Vec<&str> = branch
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (name, property) in branch["properties"].as_object().into_iter().flatten() {
            if tag.as_ref().is_some_and(|(t, _)| t == name) {
                continue;
            }
            if !uses.contains_key(name) {
                order.push(name.clone());
            }
            uses.entry(name.clone()).or_default().push((
                label.clone(),
                required.contains(&name.as_str()),
                property.clone(),
            ));
        }
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    if let Some((name, values)) = &tag {
        let mut tag_schema = Map::new();
        tag_schema.insert("type".to_owned(), Value::from("string"));
        tag_schema.insert("enum".to_owned(), Value::from(values.clone()));
        let mut description = format!("The action: one of {}.", values.join(", "));
        if !variant_docs.is_empty() {
            description = format!("{description}\n{}", variant_docs.join("\n"));
        }
        tag_schema.insert("description".to_owned(), Value::String(description));
        properties.insert(name.clone(), Value::Object(tag_schema));
        required.push(Value::String(name.clone()));
    }
    for name in order {
        let used = &uses[&name];
        let without_doc = |v: &Value| {
            let mut v = v.clone();
            if let Value::Object(m) = &mut v {
                m.remove("description");
            }
            v
        };
        let everywhere = used.len() == objects.len();
        let same = used.windows(2).all(|w| w[0].2 == w[1].2);
        if everywhere && used.iter().all(|u| u.1) {
            required.push(Value::String(name.clone()));
        }
        if everywhere && same {
            properties.insert(name, used[0].2.clone());
            continue;
        }
        let mut distinct: Vec<Value> = Vec::new();
        for (_, _, schema) in used {
            let bare = without_doc(schema);
            if !distinct.contains(&bare) {
                distinct.push(bare);
            }
        }
        let mut schema = if distinct.len() == 1 {
            distinct.remove(0)
        } else {
            let mut any = Map::new();
            any.insert("anyOf".to_owned(), Value::Array(distinct));
            Value::Object(any)
        };
        let description = used
            .iter()
            .map(|(label, req, s)| {
                let mut text = label.clone();
                if *req {
                    text.push_str(" (required)");
                }
                match s.get("description").and_then(Value::as_str) {
                    Some(doc) => format!("{text}: {doc}"),
                    None => format!("{text}."),
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        let description = match &tag {
            Some((t, _)) => format!("Used when {t} is {}", description),
            None => format!("Used by {description}"),
        };
        if let Value::Object(m) = &mut schema {
            m.insert("description".to_owned(), Value::String(description));
        }
        properties.insert(name, schema);
    }
    let defs = root.remove("$defs");
    let mut out = Map::new();
    out.insert("type".to_owned(), Value::from("object"));
    out.insert("properties".to_owned(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".to_owned(), Value::Array(required));
    }
    out.insert("additionalProperties".to_owned(), Value::Bool(false));
    if let Some(defs) = defs {
        out.insert("$defs".to_owned(), defs);
    }
    Value::Object(out)
}

/// The tag of an internally tagged union: the property every branch fixes to one string, with
/// the branches' values in order.
pub(crate) fn union_tag(branches: &[&Map<String, Value>]) -> Option<(String, Vec<String>)> {
    let first = branches.first()?.get("properties")?.as_object()?;
    'names: for name in first.keys() {
        let mut values = Vec::new();
        for branch in branches {
            let Some(value) = branch.get("properties").and_then(|p| p.get(name)).and_then(fixed_string) else {
                continue 'names;
            };
            values.push(value);
        }
        return Some((name.clone(), values));
    }
    None
}

/// The one string a schema allows (`const`, or a one-value `enum`).
pub(crate) fn fixed_string(schema: &Value) -> Option<String> {
    if let Some(Value::String(c)) = schema.get("const") {
        return Some(c.clone());
    }
    match schema.get("enum").and_then(Value::as_array).map(Vec::as_slice) {
        Some([Value::String(only)]) => Some(only.clone()),
        _ => None,
    }
}

// The bounds and patterns a schema states, which decoding enforces (`decode::bounds`).
