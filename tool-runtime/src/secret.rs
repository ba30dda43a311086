//! Secret arguments: [`Secret<T>`], and what keeps their values out of every sink.
//!
//! A tool argument of type `Secret<T>` (a parameter, or a field of an `#[input]` struct, at any
//! depth) is decoded as `T` is, and its JSON Schema is `T`'s with `writeOnly: true` (JSON Schema
//! 2020-12, Validation section 9.4: the value is sent and never read back). The runtime finds the
//! secret values of a call by that keyword, so a tool whose schema arrives at run time (an
//! imported MCP tool, a `DynamicTool`) is treated alike when its schema marks a property
//! `writeOnly`. What the registry does with them is on [`Registry`](crate::Registry) ("Secret
//! arguments"); the function for anything else that records arguments (telemetry with content
//! capture, a task store, an audit log) is [`redact_arguments`].

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::ToolErrorKind;
use crate::result::{ContentPart, MessageContent, ResourceContents, ToolMessage};

/// What stands for a secret value wherever one would have been shown: `[redacted]`.
pub const REDACTED: &str = "[redacted]";

/// The keyword `Secret<T>`'s schema carries until the canonical schema pass turns it into
/// `writeOnly: true` (the pass removes every other `writeOnly`, which serde's
/// `skip_serializing` produces and which says nothing about secrecy).
pub(crate) const SECRET_MARK: &str = "x-tool-secret";

/// The shortest secret text searched for in what a call produces, in bytes: 4. A shorter one
/// (`"t"`, `7`) would replace every such letter or digit of a result, and is no secret a search
/// could keep: it is left where it occurs.
const MIN_SEARCHED: usize = 4;

/// The deepest a schema's `$ref`s are followed while looking for secrets (a recursive type's
/// value deeper than this is not searched further; its secrets are still scrubbed from results).
const MAX_DEPTH: usize = 64;

/// A tool argument that is a secret (a token, a password, an API key): decoded as `T`, shown to
/// the model as `T`'s JSON Schema with `writeOnly: true`, and kept out of every sink.
///
/// - `Debug` and `Display` print `[redacted]` ([`REDACTED`]), so a `{:?}` of the arguments, a
///   `tracing` field or a panic message never carries the value.
/// - There is no `Serialize`: a result or a record that would hold the value does not compile;
///   take the value out with [`Secret::expose`] where it is used, and nowhere else.
/// - The registry keeps the call's secret values out of the approval question, out of error
///   messages (a decoding error that would quote the value, `got string "..."`), and out of the
///   result (any occurrence in the tool's result text or structured content is replaced by
///   `[redacted]` before the output cache and the model see it): see "Secret arguments" on
///   [`Registry`](crate::Registry).
/// - The value's memory is not zeroed on drop (`T` is any type); the secret's lifetime is the
///   call's.
///
/// ```
/// use tool_runtime::prelude::*;
/// use tool_runtime::Secret;
///
/// /// Check a deploy token.
/// #[tool]
/// fn check_token(
///     /// The deploy token.
///     token: Secret<String>,
/// ) -> String {
///     format!("{} characters", token.expose().len())
/// }
///
/// let schema = &check_token::TOOL.definition().input_schema;
/// assert_eq!(schema["properties"]["token"]["writeOnly"], true);
/// assert_eq!(format!("{:?}", Secret::new("hunter2")), "[redacted]");
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps `value` as a secret.
    pub const fn new(value: T) -> Self {
        Secret(value)
    }

    /// The secret value, for the one place that uses it (an `Authorization` header, a login).
    /// Every use is explicit, so a review finds them with a search for `expose`.
    pub const fn expose(&self) -> &T {
        &self.0
    }

    /// The secret value, taken out of its wrapper (see [`Secret::expose`]).
    pub fn into_exposed(self) -> T {
        self.0
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Secret(value)
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Secret<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Secret)
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Secret<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Secret_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = generator.subschema_for::<T>();
        if schema.get("$ref").is_some() {
            // `T` is a named type kept in `$defs`: its own schema, inline, so that the marker
            // sits beside the keywords it marks.
            schema = T::json_schema(generator);
        }
        schema.insert(SECRET_MARK.to_owned(), Value::Bool(true));
        schema
    }
}

/// `arguments` (a tool call's JSON text) with every value its `schema` marks `writeOnly` (the
/// values of [`Secret`] arguments, at any depth) replaced by the string `"[redacted]"`
/// ([`REDACTED`]): what anything that records a call's arguments (telemetry with content capture,
/// a task record, an audit log, an approval question) records instead of the text the model sent.
///
/// `schema` is the tool's input schema ([`ToolDefinition::input_schema`](crate::ToolDefinition)).
/// The walk follows `properties`, `additionalProperties`, `patternProperties`, `items`,
/// `prefixItems`, local `$ref`s (`#/$defs/..`, `#/definitions/..`; at most 64 deep) and every
/// branch of `anyOf`/`oneOf`/`allOf` (a property that is secret in any branch is redacted).
/// Arguments the schema marks nothing in come back unchanged (the same text); arguments that are
/// not a JSON object (nor a JSON string holding one), for a schema that marks something, come back
/// as `"[redacted]"` whole: the secret may be anywhere in them. The result is compact JSON (its keys sorted) when anything was redacted.
///
/// ```
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {
///     "user": {"type": "string"},
///     "password": {"type": "string", "writeOnly": true},
/// }});
/// assert_eq!(
///     tool_runtime::redact_arguments(r#"{"user":"ann","password":"hunter2"}"#, &schema),
///     r#"{"password":"[redacted]","user":"ann"}"#,
/// );
/// ```
pub fn redact_arguments(arguments: &str, schema: &Value) -> String {
    match redacted(arguments, schema) {
        Some((value, _)) => value,
        None => arguments.to_owned(),
    }
}

/// `arguments` redacted as [`redact_arguments`] does, with the secret values' texts
/// ([`CallSecrets`]); `None` when the schema marks no value of these arguments.
pub(crate) fn redacted(arguments: &str, schema: &Value) -> Option<(String, CallSecrets)> {
    if !has_secrets(schema) {
        return None;
    }
    let mut found = Vec::new();
    let replaced = replace_secrets(arguments, schema, &mut |value| {
        found.push(value);
        Value::from(REDACTED)
    });
    match replaced {
        Some(text) if !found.is_empty() => Some((text, CallSecrets::of_values(&found))),
        Some(_) => None,
        // Not a JSON object: the whole text is what must not be shown.
        None => Some((Value::from(REDACTED).to_string(), CallSecrets::of_text(arguments))),
    }
}

/// `arguments` (a tool call's JSON text) with each value its `schema` marks `writeOnly` replaced
/// by what `replace` makes of it, found by the walk [`redact_arguments`] describes (each value
/// once, also when several branches of a union mark it), as compact JSON; the text unchanged
/// when nothing is marked. `None` when `arguments` is not a JSON object (nor a JSON string
/// holding one): then the values cannot be told apart. For a store that must keep a call's
/// arguments to run it again (a task record), `replace` seals each value (encrypts it) and the
/// same walk opens them.
pub fn replace_secrets(arguments: &str, schema: &Value, replace: &mut dyn FnMut(Value) -> Value) -> Option<String> {
    if !has_secrets(schema) {
        return Some(arguments.to_owned());
    }
    let mut value = match serde_json::from_str::<Value>(arguments) {
        // A JSON string holding the object (what argument repair takes): the object.
        Ok(Value::String(inner)) => serde_json::from_str::<Value>(&inner).ok()?,
        Ok(value) => value,
        Err(_) => return None,
    };
    if !value.is_object() {
        return None;
    }
    let mut pointers = Vec::new();
    find(&value, schema, schema, 0, &mut String::new(), &mut pointers);
    if pointers.is_empty() {
        return Some(arguments.to_owned());
    }
    pointers.sort();
    pointers.dedup();
    // A value inside one already replaced goes with it.
    let mut outer: Vec<String> = Vec::new();
    for pointer in pointers {
        if !outer.iter().any(|o| pointer.starts_with(&format!("{o}/"))) {
            outer.push(pointer);
        }
    }
    for pointer in &outer {
        if let Some(slot) = value.pointer_mut(pointer) {
            let taken = std::mem::take(slot);
            *slot = replace(taken);
        }
    }
    Some(value.to_string())
}
/// Marks every node of a schema made at run time that says `writeOnly: true` (an imported MCP
/// tool's, a [`DynamicTool`](crate::DynamicTool)'s) as a secret, so that the canonical schema
/// pass keeps the keyword (it removes the `writeOnly` that serde's `skip_serializing` gives).
#[cfg_attr(not(feature = "dynamic"), allow(dead_code))]
pub(crate) fn mark_write_only(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("writeOnly") == Some(&Value::Bool(true)) {
                map.insert(SECRET_MARK.to_owned(), Value::Bool(true));
            }
            for (key, value) in map.iter_mut() {
                if !matches!(key.as_str(), "enum" | "const" | "default" | "examples") {
                    mark_write_only(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mark_write_only),
        _ => {}
    }
}

/// Whether `schema` marks any node `writeOnly: true`, at any depth.
pub(crate) fn has_secrets(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            map.get("writeOnly") == Some(&Value::Bool(true)) || map.iter().any(|(k, v)| k != "enum" && has_secrets(v))
        }
        Value::Array(items) => items.iter().any(has_secrets),
        _ => false,
    }
}

/// Pushes onto `found` the JSON Pointer (below `path`) of every value of `value` that `node` (a
/// node of `root`) marks `writeOnly`.
fn find(value: &Value, node: &Value, root: &Value, depth: usize, path: &mut String, found: &mut Vec<String>) {
    let Value::Object(node) = node else { return };
    if depth > MAX_DEPTH {
        return;
    }
    if node.get("writeOnly") == Some(&Value::Bool(true)) {
        found.push(path.clone());
        return;
    }
    if let Some(target) = node.get("$ref").and_then(Value::as_str).and_then(|r| resolve(root, r)) {
        find(value, target, root, depth + 1, path, found);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in node.get(key).and_then(Value::as_array).into_iter().flatten() {
            find(value, branch, root, depth + 1, path, found);
        }
    }
    let mut below = |item: &Value, schema: &Value, step: &str, found: &mut Vec<String>| {
        let len = path.len();
        path.push('/');
        path.push_str(&step.replace('~', "~0").replace('/', "~1"));
        find(item, schema, root, depth + 1, path, found);
        path.truncate(len);
    };
    match value {
        Value::Object(object) => {
            let properties = node.get("properties").and_then(Value::as_object);
            let patterns = node.get("patternProperties").and_then(Value::as_object);
            for (key, item) in object {
                if let Some(property) = properties.and_then(|p| p.get(key)) {
                    below(item, property, key, found);
                    continue;
                }
                let mut matched = false;
                for (pattern, schema) in patterns.into_iter().flatten() {
                    if regex_lite::Regex::new(pattern).is_ok_and(|p| p.is_match(key)) {
                        matched = true;
                        below(item, schema, key, found);
                    }
                }
                if !matched && let Some(additional) = node.get("additionalProperties") {
                    below(item, additional, key, found);
                }
            }
        }
        Value::Array(items) => {
            let prefix = node.get("prefixItems").and_then(Value::as_array);
            for (index, item) in items.iter().enumerate() {
                let schema = match prefix.and_then(|p| p.get(index)) {
                    Some(position) => Some(position),
                    None => node.get("items"),
                };
                if let Some(schema) = schema {
                    below(item, schema, &index.to_string(), found);
                }
            }
        }
        _ => {}
    }
}

/// The node a local `$ref` (`#/$defs/Name`, `#/definitions/Name`, any JSON Pointer into the root)
/// names in `root`.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    root.pointer(reference.strip_prefix('#')?)
}

/// The texts of one call's secret values, as they may appear in what the call produces: each
/// string as sent, JSON-escaped and Rust-escaped (serde's `got string "..."` quotes with `{:?}`);
/// each number as written; arrays and objects by their leaves and by their compact JSON. Booleans
/// and `null` are not searched for (their text is in every JSON result), nor texts shorter than
/// [`MIN_SEARCHED`] bytes. Longest first, so that a secret holding another is replaced whole.
#[derive(Debug, Default, Clone)]
pub(crate) struct CallSecrets {
    texts: Vec<String>,
}

impl CallSecrets {
    fn of_values(values: &[Value]) -> Self {
        let mut texts = Vec::new();
        for value in values {
            collect_texts(value, &mut texts);
        }
        Self::sorted(texts)
    }

    fn of_text(text: &str) -> Self {
        let mut texts = Vec::new();
        push_string(text, &mut texts);
        Self::sorted(texts)
    }

    fn sorted(mut texts: Vec<String>) -> Self {
        texts.retain(|t| t.len() >= MIN_SEARCHED && t != REDACTED);
        texts.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        texts.dedup();
        CallSecrets { texts }
    }

    /// `text` with every occurrence of a secret text replaced by [`REDACTED`]; borrowed when none
    /// occurs.
    /// In one pass from the start, the longest secret text at each position, so that a
    /// replacement is never searched again.
    pub(crate) fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if !self.texts.iter().any(|secret| text.contains(secret.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            match self.texts.iter().find(|secret| rest.starts_with(secret.as_str())) {
                Some(secret) => {
                    out.push_str(REDACTED);
                    rest = &rest[secret.len()..];
                }
                None => {
                    out.push(c);
                    rest = &rest[c.len_utf8()..];
                }
            }
        }
        Cow::Owned(out)
    }

    /// Scrubs `text` in place; `true` when anything was replaced.
    pub(crate) fn scrub_in_place(&self, text: &mut String) -> bool {
        match self.scrub(text) {
            Cow::Borrowed(_) => false,
            Cow::Owned(scrubbed) => {
                *text = scrubbed;
                true
            }
        }
    }

    /// Scrubs a tool's message: its text, its text parts, the text and URI of its resources, its
    /// structured content and the preview of its approval request (a tool that passes on another
    /// server's, as an imported tool does) (see "Secret arguments" on [`Registry`](crate::Registry)). An
    /// argument error that [was cut](crate::decode) may hold part of a secret value at the cut,
    /// which no search for the whole value finds: its text is replaced by one that names no value.
    pub(crate) fn scrub_message(&self, message: &mut ToolMessage) {
        if self.texts.is_empty() {
            return;
        }
        match &mut message.content {
            MessageContent::Text(text) => {
                self.scrub_in_place(text);
            }
            MessageContent::Parts(parts) => {
                for part in parts {
                    match part {
                        ContentPart::Text { text } => {
                            self.scrub_in_place(text);
                        }
                        ContentPart::Resource { uri, contents, .. } => {
                            self.scrub_in_place(uri);
                            if let ResourceContents::Text(text) = contents {
                                self.scrub_in_place(text);
                            }
                        }
                        ContentPart::ResourceLink { uri, name, title, description, .. } => {
                            for text in
                                [Some(uri), Some(name), title.as_mut(), description.as_mut()].into_iter().flatten()
                            {
                                self.scrub_in_place(text);
                            }
                        }
                        ContentPart::Image { .. } | ContentPart::Audio { .. } => {}
                    }
                }
            }
        }
        if let Some(value) = &mut message.structured_content {
            self.scrub_value(value);
        }
        if let Some(approval) = &mut message.approval {
            self.scrub_in_place(&mut approval.preview);
        }
        if message.error_kind == Some(ToolErrorKind::InvalidArguments)
            && let MessageContent::Text(text) = &mut message.content
            && text.contains(" bytes cut]")
        {
            *text = format!(
                "invalid arguments for `{}`: the error quoted a secret argument, and was withheld; check each \
                 argument's type and bounds against the tool's schema",
                message.tool_name
            );
        }
    }

    /// Scrubs every string of `value` (keys too) in place.
    pub(crate) fn scrub_value(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                self.scrub_in_place(text);
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.scrub_value(item)),
            Value::Object(map) => {
                let keys: Vec<String> =
                    map.keys().filter(|k| !matches!(self.scrub(k), Cow::Borrowed(_))).cloned().collect();
                for key in keys {
                    if let Some(item) = map.remove(&key) {
                        map.insert(self.scrub(&key).into_owned(), item);
                    }
                }
                map.values_mut().for_each(|item| self.scrub_value(item));
            }
            Value::Number(number) => {
                if self.texts.iter().any(|t| *t == number.to_string()) {
                    *value = Value::from(REDACTED);
                }
            }
            Value::Bool(_) | Value::Null => {}
        }
    }
}

fn collect_texts(value: &Value, texts: &mut Vec<String>) {
    match value {
        Value::String(text) => push_string(text, texts),
        Value::Number(number) => texts.push(number.to_string()),
        Value::Array(items) => {
            texts.push(value.to_string());
            items.iter().for_each(|item| collect_texts(item, texts));
        }
        Value::Object(map) => {
            texts.push(value.to_string());
            map.values().for_each(|item| collect_texts(item, texts));
        }
        Value::Bool(_) | Value::Null => {}
    }
}

/// `text`, its JSON escape and its Rust escape (each without the quotes).
fn push_string(text: &str, texts: &mut Vec<String>) {
    texts.push(text.to_owned());
    let json = Value::from(text).to_string();
    texts.push(json[1..json.len() - 1].to_owned());
    let debug = format!("{text:?}");
    texts.push(debug[1..debug.len() - 1].to_owned());
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "user": {"type": "string"},
            "token": {"type": "string", "writeOnly": true},
            "nested": {"$ref": "#/$defs/Inner"},
            "list": {"type": "array", "items": {"type": "string", "writeOnly": true}},
        }, "$defs": {"Inner": {"type": "object", "properties": {"key": {"type": "integer", "writeOnly": true}}}}})
    }

    #[test]
    fn a_schema_without_write_only_leaves_the_text_as_sent() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(redact_arguments(r#"{ "a" : "x" }"#, &schema), r#"{ "a" : "x" }"#);
    }

    #[test]
    fn write_only_values_at_any_depth_are_redacted() {
        let redacted =
            redact_arguments(r#"{"user":"ann","token":"t0k","nested":{"key":42},"list":["l1","l2"]}"#, &schema());
        assert_eq!(
            redacted,
            r#"{"list":["[redacted]","[redacted]"],"nested":{"key":"[redacted]"},"token":"[redacted]","user":"ann"}"#
        );
    }

    #[test]
    fn text_that_is_not_json_is_redacted_whole_when_the_schema_has_secrets() {
        assert_eq!(redact_arguments(r#"{"token":"t0k""#, &schema()), r#""[redacted]""#);
    }

    #[test]
    fn the_texts_of_a_call_cover_escaped_forms_longest_first() {
        let (_, secrets) = redacted(r#"{"token":"ab\"cd","nested":{"key":4242}}"#, &schema()).unwrap();
        // Longest first; of one length, in byte order.
        assert_eq!(secrets.texts, vec![r#"ab\"cd"#.to_owned(), "ab\"cd".to_owned(), "4242".to_owned()]);
        assert_eq!(secrets.scrub(r#"got string "ab\"cd" and 4242"#), "got string \"[redacted]\" and [redacted]");
    }

    #[test]
    fn scrubbing_a_value_replaces_strings_keys_and_equal_numbers() {
        let (_, secrets) = redacted(r#"{"token":"s3cr3t","nested":{"key":7777}}"#, &schema()).unwrap();
        let mut value = json!({"echo": "token=s3cr3t", "s3cr3t": 1, "n": 7777, "m": 7778});
        secrets.scrub_value(&mut value);
        assert_eq!(value, json!({"echo": "token=[redacted]", "[redacted]": 1, "n": "[redacted]", "m": 7778}));
    }

    #[test]
    fn a_secret_of_fewer_than_four_bytes_is_not_searched_for_in_results() {
        let (redacted_text, secrets) = redacted(r#"{"token":"t","nested":{"key":7}}"#, &schema()).unwrap();
        assert_eq!(redacted_text, r#"{"nested":{"key":"[redacted]"},"token":"[redacted]"}"#);
        assert_eq!(secrets.scrub("a text with t and 7"), "a text with t and 7");
    }

    #[test]
    fn a_replacement_is_never_searched_again() {
        let (_, secrets) = redacted(r#"{"token":"dact"}"#, &schema()).unwrap();
        assert_eq!(secrets.scrub("dact redacted"), "[redacted] re[redacted]ed");
    }

    #[test]
    fn a_value_secret_in_two_branches_of_a_union_is_replaced_once() {
        let schema = json!({"type": "object", "anyOf": [
            {"properties": {"k": {"type": "string", "writeOnly": true}}},
            {"properties": {"k": {"type": "string", "writeOnly": true}}},
        ]});
        let mut seen = Vec::new();
        let replaced = replace_secrets(r#"{"k":"v"}"#, &schema, &mut |value| {
            seen.push(value);
            json!("sealed")
        });
        assert_eq!(replaced.as_deref(), Some(r#"{"k":"sealed"}"#));
        assert_eq!(seen, vec![json!("v")]);
    }

    #[test]
    fn arguments_that_are_no_object_cannot_have_their_secrets_replaced() {
        assert_eq!(replace_secrets("[1]", &schema(), &mut |v| v), None);
        assert_eq!(replace_secrets("{", &schema(), &mut |v| v), None);
    }
}
