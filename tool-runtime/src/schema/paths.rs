//! Paths into a schema: what decoding errors name (a field's path, the fields accepted there) and
//! the `$ref` resolution they follow.

use serde_json::Value;

/// The names of the properties accepted at `path` (segments: object keys, or `None` for an array
/// element), following `$ref`s into `$defs`. Empty when the path leaves the schema.
#[cfg(feature = "dynamic")]
pub(crate) fn accepted_fields(root: &Value, path: &[Segment]) -> Vec<String> {
    let mut node = resolve(root, root);
    for segment in path {
        let Some(current) = node else {
            return Vec::new();
        };
        node = match segment {
            Segment::Key(key) => current.get("properties").and_then(|p| p.get(key.as_str())),
            Segment::Index(_) => current.get("items"),
        }
        .and_then(|n| resolve(root, n));
    }
    node.and_then(|n| n.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// An object key.
    Key(String),
    /// An array index (0-based).
    Index(usize),
}

/// `key` as one reference token of a JSON Pointer (RFC 6901, section 3): `~` as `~0`, `/` as
/// `~1`.
pub(crate) fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Formats a path as `filter.name`, `items[2].id`; a key holding `.`, `[`, `]`, `"`, a backtick or a
/// control character (or empty)
/// is written as a quoted JSON string in brackets: `files["a.rs"].id`.
pub(crate) fn format_path(path: &[Segment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            // A key that could read as more than one segment (`a.b`, `a[0]`, empty) is quoted.
            Segment::Key(key)
                if key.is_empty() || key.contains(['.', '[', ']', '"', '`']) || key.contains(char::is_control) =>
            {
                out.push('[');
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(']');
            }
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// Follows a local `$ref` (`#/$defs/Name`), at most a few hops.
pub(crate) fn resolve<'a>(root: &'a Value, mut node: &'a Value) -> Option<&'a Value> {
    for _ in 0..8 {
        match node.get("$ref").and_then(Value::as_str) {
            Some(reference) => node = root.pointer(reference.strip_prefix('#')?)?,
            None => return Some(node),
        }
    }
    None
}
