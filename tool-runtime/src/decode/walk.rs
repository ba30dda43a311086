//! Walks of a value beside its schema: the value at fault, the schema at a path, the branch of a
//! tagged union, and the fields no closed object lists (rule 4).

use serde_json::{Map, Value};

use crate::error::ArgumentError;
use crate::schema::{Segment, format_path, resolve, union_tag};

/// Extends `path` to the first value in `value` (depth first, in input order) that `at_fault`
/// says is at fault, given its schema node (references resolved, the variant of a tagged union
/// selected); `false` when none is.
pub(super) fn find_fault(
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
pub(super) fn children<'v, 's>(value: &'v Value, node: &'s Value) -> Vec<(Segment, &'v Value, &'s Value)> {
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

/// The schema node of the value at `path` in `value` (references resolved, the variant of a
/// tagged union selected by the value); `None` where the schema does not say.
pub(super) fn schema_at<'a>(value: &Value, node: &'a Value, root: &'a Value, path: &[Segment]) -> Option<&'a Value> {
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
pub(super) fn property_schema<'a>(node: &'a Value, key: &str) -> Option<&'a Value> {
    node.get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()))
        .or_else(|| node.get("patternProperties").and_then(Value::as_object).and_then(|p| p.values().next()))
}

/// The schema of item `index` of an array node: its tuple position, or the list's item schema.
pub(super) fn item_schema(node: &Value, index: usize) -> Option<&Value> {
    node.get("prefixItems").and_then(|t| t.get(index)).or_else(|| node.get("items").filter(|i| i.is_object()))
}

/// The branch of a tagged union (`oneOf`/`anyOf` of objects with a tag) that `value` selects,
/// with the tag's name and value; `node` itself when it is not a tagged union.
pub(super) fn select_branch<'a>(
    value: &Value,
    node: &'a Value,
    root: &'a Value,
) -> (&'a Value, Option<(String, String)>) {
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
pub(super) struct Unknown {
    /// Their paths, in input order.
    pub(super) paths: Vec<Vec<Segment>>,
    /// The fields accepted where the first one was found.
    pub(super) accepted: Vec<String>,
}

/// Collects into `unknown` the paths of the fields of `value` that a closed object of `schema`
/// (`additionalProperties: false`) does not list, at every depth. A field that the selected
/// variant of a tagged union does not take is returned at once as an error naming the variant
/// and what it accepts.
pub(super) fn unknown_by_schema(
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

/// The value at `path` in `value`.
pub(super) fn value_at<'v>(value: &'v Value, path: &[Segment]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, segment| match segment {
        Segment::Key(key) => v.get(key.as_str()),
        Segment::Index(index) => v.get(*index),
    })
}
