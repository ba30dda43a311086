//! Opt-in repairs of arguments that real models send slightly wrong.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::parse_arguments;
use crate::schema::{Segment, format_path, resolve};

/// Which repairs to apply to a call's arguments before they are decoded. Off by default
/// ([`RepairPolicy::default`] repairs nothing); turn it on with
/// [`RegistryBuilder::repair`](crate::RegistryBuilder::repair).
///
/// Every repair is guided by the tool's input schema and named in [`Repaired::repairs`] (and
/// given to the [`on_repair`](RepairPolicy::on_repair) observer, for logs). A value the schema
/// types as a string is never touched, even when it looks like JSON; a repair that would be a
/// guess (a string that is not exactly one JSON value of the wanted kind) is not made, and the
/// arguments then fail to decode as they would without a policy. A key sent twice is refused
/// under every policy, as without one: a repair never re-encodes an object that holds one.
#[derive(Clone, Default)]
pub struct RepairPolicy {
    unwrap_string: bool,
    nested_strings: bool,
    numbers_from_strings: bool,
    observer: Option<Arc<Observer>>,
}

/// What [`RepairPolicy::on_repair`] calls: `(tool_name, repairs)`.
type Observer = dyn Fn(&str, &[Repair]) + Send + Sync;

impl RepairPolicy {
    /// No repair (the default).
    pub fn none() -> Self {
        Self::default()
    }

    /// Every repair: [`unwrap_string`](Self::unwrap_string),
    /// [`nested_strings`](Self::nested_strings) and
    /// [`numbers_from_strings`](Self::numbers_from_strings).
    pub fn all() -> Self {
        Self { unwrap_string: true, nested_strings: true, numbers_from_strings: true, observer: None }
    }

    /// The whole arguments text is a JSON string whose content is a JSON object (double encoding,
    /// `"{\"q\":\"x\"}"`): decode the object ([`Repair::UnwrappedString`]).
    #[must_use]
    pub fn unwrap_string(mut self, on: bool) -> Self {
        self.unwrap_string = on;
        self
    }

    /// A value the schema wants as an array or object arrives as a string holding exactly that
    /// (`"tags":"[\"a\"]"`): use the parsed value ([`Repair::ParsedString`]).
    #[must_use]
    pub fn nested_strings(mut self, on: bool) -> Self {
        self.nested_strings = on;
        self
    }

    /// A value the schema wants as an integer or number arrives as a string holding exactly one
    /// JSON number (`"limit":"20"`; for an integer, without fraction or exponent): use the number
    /// ([`Repair::NumberFromString`]). `" 20"`, `"20px"`, `"1e3"` for an integer stay strings.
    #[must_use]
    pub fn numbers_from_strings(mut self, on: bool) -> Self {
        self.numbers_from_strings = on;
        self
    }

    /// Calls `observer(tool_name, repairs)` after every call that needed at least one repair.
    #[must_use]
    pub fn on_repair(mut self, observer: impl Fn(&str, &[Repair]) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// `true` when no repair is enabled.
    pub fn is_none(&self) -> bool {
        !(self.unwrap_string || self.nested_strings || self.numbers_from_strings)
    }

    /// Applies the enabled repairs to `raw` (a call's arguments text) for a tool with this input
    /// `schema`. Text that is not JSON, or needs no repair, is returned unchanged with no repairs.
    pub fn repair(&self, raw: &str, schema: &Value) -> Repaired {
        let unchanged = || Repaired { arguments: raw.to_owned(), repairs: Vec::new() };
        if self.is_none() {
            return unchanged();
        }
        // A key sent twice is the decoder's to refuse (a `Value` would keep the last of the two):
        // text holding one is never re-encoded.
        let Ok(mut value) = parse_arguments(raw) else {
            return unchanged();
        };
        let mut repairs = Vec::new();
        if self.unwrap_string
            && let Value::String(inner) = &value
            && serde_json::from_str::<Value>(inner).is_ok_and(|v| v.is_object())
        {
            match parse_arguments(inner) {
                Ok(object) => value = object,
                // The object as sent, for the decoder to refuse its key sent twice.
                Err(_) => return Repaired { arguments: inner.clone(), repairs: vec![Repair::UnwrappedString] },
            }
            repairs.push(Repair::UnwrappedString);
        }
        if value.is_object() {
            let mut path = Vec::new();
            self.walk(&mut value, schema, schema, &mut path, &mut repairs);
        }
        if repairs.is_empty() {
            return unchanged();
        }
        Repaired { arguments: value.to_string(), repairs }
    }

    /// [`repair`](Self::repair), then the observer; what the registry runs before a tool.
    pub(crate) fn apply(&self, tool: &str, raw: &str, schema: &Value) -> Option<String> {
        if self.is_none() {
            return None;
        }
        let repaired = self.repair(raw, schema);
        if repaired.repairs.is_empty() {
            return None;
        }
        if let Some(observer) = &self.observer {
            observer(tool, &repaired.repairs);
        }
        Some(repaired.arguments)
    }

    fn walk(&self, value: &mut Value, node: &Value, root: &Value, path: &mut Vec<Segment>, repairs: &mut Vec<Repair>) {
        let Some(node) = resolve(root, node) else { return };
        let types = types_of(node);
        if let Value::String(text) = value {
            if types.is_empty() || types.contains(&"string") {
                return;
            }
            if self.nested_strings && (types.contains(&"array") || types.contains(&"object")) {
                // A string holding a key twice is left a string (and refused as one).
                if let Ok(parsed) = parse_arguments(text)
                    && ((parsed.is_array() && types.contains(&"array"))
                        || (parsed.is_object() && types.contains(&"object")))
                {
                    *value = parsed;
                    repairs.push(Repair::ParsedString { path: format_path(path) });
                }
            } else if self.numbers_from_strings
                && (types.contains(&"integer") || types.contains(&"number"))
                && let Some(number) = exact_number(text, !types.contains(&"number"))
            {
                *value = number;
                repairs.push(Repair::NumberFromString { path: format_path(path) });
                return;
            }
        }
        match value {
            Value::Object(map) => {
                let Some(properties) = node.get("properties").and_then(Value::as_object) else { return };
                for (key, v) in map.iter_mut() {
                    if let Some(property) = properties.get(key) {
                        path.push(Segment::Key(key.clone()));
                        self.walk(v, property, root, path, repairs);
                        path.pop();
                    }
                }
            }
            Value::Array(items) => {
                let Some(item_schema) = node.get("items").filter(|i| i.is_object()) else { return };
                for (index, item) in items.iter_mut().enumerate() {
                    path.push(Segment::Index(index));
                    self.walk(item, item_schema, root, path, repairs);
                    path.pop();
                }
            }
            _ => {}
        }
    }
}

impl fmt::Debug for RepairPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RepairPolicy")
            .field("unwrap_string", &self.unwrap_string)
            .field("nested_strings", &self.nested_strings)
            .field("numbers_from_strings", &self.numbers_from_strings)
            .field("on_repair", &self.observer.is_some())
            .finish()
    }
}

/// The JSON types a schema node allows (`type` as a string or an array); empty when it does not
/// say (a union, an unconstrained schema), in which case nothing is repaired.
fn types_of(node: &Value) -> Vec<&str> {
    match node.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// `text` as a JSON number when it is exactly one (no surrounding space), and an integer when
/// `integer` is asked for.
fn exact_number(text: &str, integer: bool) -> Option<Value> {
    if text.trim() != text || text.is_empty() {
        return None;
    }
    let number = serde_json::from_str::<serde_json::Number>(text).ok()?;
    if integer && !(number.is_i64() || number.is_u64()) {
        return None;
    }
    Some(Value::Number(number))
}

/// One repair [`RepairPolicy`] made. Paths are written `filter.tags`, `items[2].count` (empty for
/// the whole arguments).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Repair {
    /// The arguments were a JSON string holding the object.
    UnwrappedString,
    /// An array or object sent as a string was parsed.
    ParsedString {
        /// Where.
        path: String,
    },
    /// A number sent as a string was read as a number.
    NumberFromString {
        /// Where.
        path: String,
    },
}

impl fmt::Display for Repair {
    /// `unwrapped a JSON string holding the arguments object`, `parsed \`tags\` from a string`,
    /// `read \`limit\` as a number`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnwrappedString => f.write_str("unwrapped a JSON string holding the arguments object"),
            Self::ParsedString { path } => write!(f, "parsed `{path}` from a string"),
            Self::NumberFromString { path } => write!(f, "read `{path}` as a number"),
        }
    }
}

/// The outcome of [`RepairPolicy::repair`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    /// The arguments text to decode (the input unchanged when nothing was repaired).
    pub arguments: String,
    /// The repairs made, in the order they were made.
    pub repairs: Vec<Repair>,
}
