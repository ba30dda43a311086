//! The full path's text layout: a cleaned value written back with every value on a line of its
//! own, so that the line of serde's error names the path at fault.

use serde_json::Value;

use super::faults::{
    Primitive, enum_names, fits, lacks, missing_fields, names_value, number_words, primitive, unexpected,
};
use super::walk::{find_fault, schema_at, value_at};
use crate::schema::Segment;

/// A cleaned arguments value written back as JSON text in which every value starts on a line of
/// its own, so that the line of a serde_json error names the value at fault:
///
/// ```text
/// {
/// "filter":
/// {
/// "name":
/// 5
/// }
/// ,"tags":
/// [
/// "a"
/// ,"b"
/// ]
/// }
/// ```
///
/// A value's first line belongs to it; a key line (`"name":`, `,"tags":`) and a closing line
/// (`}`, `]`) belong to the enclosing object or array. serde_json reports a wrong value after
/// reading it (on its line), a missing field after the object's `}` (the object's line), an
/// unknown key or variant on the key's line, and an array too long for a tuple on the line of
/// its first extra element.
pub(super) struct Layout {
    pub(super) value: Value,
    pub(super) text: String,
}

/// What a line of a [`Layout`] holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// The first line of a value: the path is the value's.
    Value,
    /// A key, or the closing `}` or `]`: the path is the enclosing container's.
    Container,
}

impl Layout {
    pub(super) fn of(value: Value) -> Self {
        let mut text = Vec::new();
        let mut writer = LayoutWriter { text: &mut text, line: 1, target: None, path: Vec::new(), found: None };
        writer.value(&value);
        // serde_json writes valid UTF-8.
        let text = String::from_utf8(text).unwrap_or_default();
        Self { value, text }
    }

    /// The error of decoding [`Layout::text`]: the path serde_json's line points to, and the
    /// message.
    pub(super) fn locate(&self, error: &serde_json::Error, schema: &Value) -> (Vec<Segment>, String) {
        let line = error.line();
        let mut message = error.to_string();
        if line != 0 {
            let suffix = format!(" at line {line} column {}", error.column());
            if message.ends_with(&suffix) {
                message.truncate(message.len() - suffix.len());
            }
        }
        let (mut path, kind) = if line == 0 {
            // No position: an error from a buffered value (a tagged enum, a flattened struct)
            // after the whole text was read, at the root.
            (Vec::new(), LineKind::Value)
        } else {
            let mut sink = Vec::new();
            let mut writer =
                LayoutWriter { text: &mut sink, line: 1, target: Some(line), path: Vec::new(), found: None };
            writer.value(&self.value);
            writer.found.unwrap_or((Vec::new(), LineKind::Value))
        };
        if error.classify() == serde_json::error::Category::Syntax
            && message.starts_with("trailing characters")
            && kind == LineKind::Value
            && let Some(Segment::Index(_)) = path.last()
        {
            // The only syntax error the layout can give: serde stopped reading an array after
            // the elements a tuple or fixed-size array takes, and serde_json found another.
            path.pop();
            let len = value_at(&self.value, &path).and_then(Value::as_array).map_or(0, Vec::len);
            message = format!("invalid length {len}, expected fewer elements in array");
        }
        // serde reports a value it buffered (a tagged enum's, a flattened struct's) on the line
        // of the enclosing value, or on none: the value at fault below it is the first that the
        // message names and the schema refuses, else the first that the message names; when no
        // value there is the one the message names, the enclosing path stays.
        if error.classify() == serde_json::error::Category::Data
            && ["invalid type: ", "invalid value: ", "unknown variant `"].iter().any(|p| message.starts_with(p))
            && let Some(at) = value_at(&self.value, &path)
            && (at.is_object() || at.is_array())
            && let Some(node) = schema_at(&self.value, schema, schema, &path)
        {
            let mut below = path.clone();
            let refused = |value: &Value, node: &Value| names_value(&message, value) && !fits(value, node);
            let named = |value: &Value, _: &Value| names_value(&message, value);
            if find_fault(at, node, schema, &mut below, &refused) || find_fault(at, node, schema, &mut below, &named) {
                path = below;
            }
        }
        // A missing field of a buffered value: the object below that lacks it.
        if let Some(field) = message.strip_prefix("missing field `").and_then(|m| m.strip_suffix('`'))
            && let Some(at) = value_at(&self.value, &path)
            && let Some(node) = schema_at(&self.value, schema, schema, &path)
        {
            let mut below = path.clone();
            if find_fault(at, node, schema, &mut below, &|value, node| lacks(value, node, field)) {
                path = below;
            }
            if let Some(missing) = missing_fields(&self.value, schema, &path, field) {
                message = missing;
            }
        }
        // serde_json's word for a value an enum of unit variants cannot start with (a number,
        // a boolean, an array): say what was sent and what is taken.
        if message == "expected value"
            && let Some(at) = value_at(&self.value, &path)
            && let Some(node) = schema_at(&self.value, schema, schema, &path)
            && let Some(names) = enum_names(node, schema)
        {
            message = format!("invalid type: {}, expected one of {names}", unexpected(at));
        }
        // A primitive type serde names (`u32`): in JSON Schema's words, with the range the schema
        // declares where it is tighter than the type's.
        if let Some(start) = message.rfind(", expected ").map(|at| at + ", expected ".len())
            && let Some(primitive) = primitive(&message[start..])
        {
            let node = schema_at(&self.value, schema, schema, &path);
            let words = match primitive {
                Primitive::Integer(range) => number_words("an integer", node, Some(range)),
                Primitive::Number => number_words("a number", node, None),
            };
            message.truncate(start);
            message.push_str(&words);
        }
        (path, message)
    }
}

/// Writes a [`Layout`]; with a `target` line, records the path and kind of that line instead.
struct LayoutWriter<'t> {
    text: &'t mut Vec<u8>,
    /// The 1-based line being written.
    line: usize,
    target: Option<usize>,
    path: Vec<Segment>,
    found: Option<(Vec<Segment>, LineKind)>,
}

impl LayoutWriter<'_> {
    fn newline(&mut self) {
        self.text.push(b'\n');
        self.line += 1;
    }

    fn mark(&mut self, kind: LineKind) {
        if self.target == Some(self.line) && self.found.is_none() {
            self.found = Some((self.path.clone(), kind));
        }
    }

    fn scalar(&mut self, value: &Value) {
        // Serialising a `Value` into a `Vec` cannot fail; its text never spans lines.
        let _ = serde_json::to_writer(&mut *self.text, value);
    }

    fn value(&mut self, value: &Value) {
        if self.target.is_some_and(|t| t < self.line) {
            return;
        }
        self.mark(LineKind::Value);
        match value {
            Value::Object(map) if !map.is_empty() => {
                self.text.push(b'{');
                for (index, (key, item)) in map.iter().enumerate() {
                    self.newline();
                    self.mark(LineKind::Container);
                    if index > 0 {
                        self.text.push(b',');
                    }
                    let _ = serde_json::to_writer(&mut *self.text, key);
                    self.text.push(b':');
                    self.newline();
                    self.path.push(Segment::Key(key.clone()));
                    self.value(item);
                    self.path.pop();
                }
                self.newline();
                self.mark(LineKind::Container);
                self.text.push(b'}');
            }
            Value::Array(items) if !items.is_empty() => {
                self.text.push(b'[');
                for (index, item) in items.iter().enumerate() {
                    self.newline();
                    self.path.push(Segment::Index(index));
                    self.mark(LineKind::Value);
                    if index > 0 {
                        self.text.push(b',');
                    }
                    self.value(item);
                    self.path.pop();
                }
                self.newline();
                self.mark(LineKind::Container);
                self.text.push(b']');
            }
            _ => self.scalar(value),
        }
    }
}
