//! Tools that talk back: log messages to the client, and input requests (elicitation, sampling,
//! the client's roots) answered by the client while the call runs.
//!
//! A tool writes one [`ToolContext::elicit`](crate::ToolContext::elicit),
//! [`sample`](crate::ToolContext::sample), [`list_roots`](crate::ToolContext::list_roots) or
//! [`log`](crate::ToolContext::log); the [`ClientChannel`] of the call carries it. Over MCP,
//! `tool-mcp` installs one per call: at protocol 2026-07-28 and later an input request becomes an
//! input-required result (SEP-2322: the call ends, the client answers and retries it, and the tool
//! runs again from its start with the answers at hand), before that a server-to-client request.
//! Outside MCP a program installs its own channel with
//! [`ToolContextBuilder::client`](crate::ToolContextBuilder::client) or
//! [`RegistryBuilder::client`](crate::RegistryBuilder::client), so a CLI or an agent loop answers
//! the same calls.
//!
//! # Approval
//! A tool tagged [`CONFIRM_TAG`] (`#[tool(tags(confirm))]`), or with a tag the registry names in
//! [`RegistryBuilder::confirm_tag`](crate::RegistryBuilder::confirm_tag), runs only once the user
//! accepts an elicitation that shows the tool and its arguments ([`approve`]); the tool's author
//! writes nothing for it.
//!
//! # A tool runs again after an input request
//! Over stateless transports (MCP 2026-07-28) a call that asks for input ends there and is made
//! again by the client with the answer; the tool runs from its start each round, and each
//! request it made before is answered at once from what the client already said. Keep side
//! effects after the last input request (or make them idempotent), and ask in the same order on
//! every run: a request's [key](Elicit::key) (by default its place among the call's requests,
//! `input-1`, `input-2`, ...) is how an answer finds its request.

use std::future::IntoFuture;
use std::marker::PhantomData;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

pub use crate::client::{
    ClientCapabilities, ClientChannel, Elicitation, InputMethod, InputRequest, LogLevel, Root, Sampled,
    SamplingMessage, SamplingRequest, TalkBackError,
};
use crate::context::ToolContext;

/// An elicitation being made: `.key(..)` names it, `.await` sends it. Made by
/// [`ToolContext::elicit`](crate::ToolContext::elicit).
#[must_use = "an elicitation does nothing until it is awaited"]
pub struct Elicit<'a, T> {
    pub(crate) ctx: &'a crate::ToolContext,
    pub(crate) message: String,
    pub(crate) key: Option<String>,
    pub(crate) kind: PhantomData<fn() -> T>,
}

impl<T> Elicit<'_, T> {
    /// Names the request within the call (default: its place among the call's input requests,
    /// `input-1`, `input-2`, ...): the key of the client's answer, the same on every run.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}

impl<'a, T> IntoFuture for Elicit<'a, T>
where
    T: JsonSchema + DeserializeOwned + Send + 'a,
{
    type Output = Result<Elicitation<T>, TalkBackError>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let Elicit { ctx, message, key, .. } = self;
            let (channel, key) = ctx.channel_for(InputMethod::Elicitation, key)?;
            let schema = match elicitation_schema::<T>() {
                Ok(schema) => schema,
                Err(error) => return Err(error),
            };
            let request = InputRequest {
                method: InputMethod::Elicitation,
                params: json!({"message": message, "requestedSchema": schema}),
            };
            let answer = ctx.ask(&*channel, &key, request).await?;
            read_elicitation::<T>(&key, &answer).inspect_err(|error| channel.refused(error))
        })
    }
}

impl ToolContext {
    /// Asks the user to fill in a form of `T`'s fields (MCP form elicitation); `.key(..)` names
    /// the request (see [`talk`](crate::talk) for why keys matter), `.await` sends it.
    ///
    /// `T` is a struct of strings (with formats), numbers, integers, booleans and enums (a
    /// multi-select is a `Vec` of an enum), as [`elicitation_schema`](crate::talk::elicitation_schema)
    /// says; defaults and descriptions go with it. The answer is [`Elicitation::Accept`](crate::talk::Elicitation::Accept)
    /// with the content decoded as strictly as tool arguments, `Decline` or `Cancel`.
    ///
    /// # Errors
    /// [`TalkBackError::MissingCapability`] when the client did not declare `elicitation`,
    /// [`TalkBackError::NotElicitable`] for a `T` of another shape, [`TalkBackError::BadResponse`]
    /// for an answer that is not an elicitation result or does not fit `T`,
    /// [`TalkBackError::NoClient`] without a client channel, [`TalkBackError::Cancelled`].
    pub fn elicit<T>(&self, message: impl Into<String>) -> Elicit<'_, T> {
        Elicit { ctx: self, message: message.into(), key: None, kind: std::marker::PhantomData }
    }

    /// Asks the client's model (MCP `sampling/createMessage`), under the request's default key
    /// (`input-N`); [`sample_keyed`](Self::sample_keyed) names it.
    ///
    /// # Errors
    /// As [`elicit`](Self::elicit), with the capability `sampling`.
    pub async fn sample(&self, request: SamplingRequest) -> Result<Sampled, TalkBackError> {
        self.sample_inner(None, request).await
    }

    /// [`sample`](Self::sample) under the key `key`.
    ///
    /// # Errors
    /// As [`sample`](Self::sample).
    pub async fn sample_keyed(
        &self,
        key: impl Into<String>,
        request: SamplingRequest,
    ) -> Result<Sampled, TalkBackError> {
        self.sample_inner(Some(key.into()), request).await
    }

    async fn sample_inner(&self, key: Option<String>, request: SamplingRequest) -> Result<Sampled, TalkBackError> {
        let (channel, key) = self.channel_for(InputMethod::Sampling, key)?;
        let request = InputRequest { method: InputMethod::Sampling, params: request.params() };
        let answer = self.ask(&*channel, &key, request).await?;
        read_sampled(&key, &answer).inspect_err(|error| channel.refused(error))
    }

    /// Asks the client for its roots (MCP `roots/list`), under the request's default key;
    /// [`list_roots_keyed`](Self::list_roots_keyed) names it.
    ///
    /// # Errors
    /// As [`elicit`](Self::elicit), with the capability `roots`.
    pub async fn list_roots(&self) -> Result<Vec<Root>, TalkBackError> {
        self.list_roots_inner(None).await
    }

    /// [`list_roots`](Self::list_roots) under the key `key`.
    ///
    /// # Errors
    /// As [`list_roots`](Self::list_roots).
    pub async fn list_roots_keyed(&self, key: impl Into<String>) -> Result<Vec<Root>, TalkBackError> {
        self.list_roots_inner(Some(key.into())).await
    }

    async fn list_roots_inner(&self, key: Option<String>) -> Result<Vec<Root>, TalkBackError> {
        let (channel, key) = self.channel_for(InputMethod::ListRoots, key)?;
        let request = InputRequest { method: InputMethod::ListRoots, params: serde_json::json!({}) };
        let answer = self.ask(&*channel, &key, request).await?;
        read_roots(&key, &answer).inspect_err(|error| channel.refused(error))
    }
}

/// The `requestedSchema` of an elicitation of `T`: `{"type":"object","properties":..,"required":..}`
/// with each property one of MCP form elicitation's primitive schemas:
/// - a string (with `minLength`, `maxLength`, `pattern`, and `format` when it is one MCP names:
///   `email`, `uri`, `date`, `date-time`), a number or an integer (with `minimum`, `maximum`), a
///   boolean;
/// - a single-select enum: `{"type":"string","enum":[..]}`, or, for a Rust enum whose variants
///   have a `#[schemars(title = "..")]` or a doc comment, `{"type":"string","oneOf":[{"const",
///   "title"}]}` (SEP-1330's titled enum; the title is the variant's title, else its doc comment);
/// - a multi-select: a `Vec` of such an enum, `{"type":"array","items":{"type":"string","enum"}}`
///   or, titled, `{"type":"array","items":{"anyOf":[{"const","title"}]}}` (SEP-1330);
///
/// with its `title`, `description` and `default` (SEP-1034) kept. An `Option` field is left out of
/// `required`. Built from `T`'s JSON Schema with every subschema inlined.
///
/// # Errors
/// [`TalkBackError::NotElicitable`] naming the first property of another shape (a struct, a map,
/// a list of non-enums, a union, a recursive type), or the root when it is not an object.
pub fn elicitation_schema<T: JsonSchema>() -> Result<Value, TalkBackError> {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let schema = settings.into_generator().into_root_schema_for::<T>().to_value();
    let not = |property: &str, reason: &str| TalkBackError::NotElicitable {
        property: property.to_owned(),
        reason: reason.to_owned(),
    };
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(not("", "it is not a struct of named fields (MCP elicits an object)"));
    }
    let mut properties = Map::new();
    let mut required: Vec<Value> = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let (property, optional) = primitive(property).map_err(|reason| not(name, &reason))?;
        if optional {
            required.retain(|r| r != name);
        }
        properties.insert(name.clone(), property);
    }
    let mut out = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        out["required"] = Value::Array(required);
    }
    Ok(out)
}

/// The string formats MCP form elicitation names.
const FORMATS: [&str; 4] = ["email", "uri", "date", "date-time"];

const ONLY: &str = "MCP elicits only strings, numbers, integers, booleans and enums; make it fields of those";

/// One property as an MCP primitive schema, and whether it may be left out (an `Option`).
fn primitive(property: &Value) -> Result<(Value, bool), String> {
    let Some(object) = property.as_object() else {
        return Err("has no schema object".to_owned());
    };
    // `Option<X>`: `anyOf: [X, {"type": "null"}]`, or a type list with "null".
    if let Some(Value::Array(branches)) = object.get("anyOf") {
        let not_null: Vec<&Value> = branches.iter().filter(|b| b.get("type") != Some(&json!("null"))).collect();
        if let ([only], true) = (not_null.as_slice(), not_null.len() + 1 == branches.len()) {
            let mut merged = (*only).clone();
            // The field's own title, description and default win over its type's.
            for keyword in ["title", "description", "default"] {
                if let (Some(value), Some(target)) = (object.get(keyword), merged.as_object_mut()) {
                    target.insert(keyword.to_owned(), value.clone());
                }
            }
            return primitive(&merged).map(|(schema, _)| (schema, true));
        }
        return Err(format!("is a union: {ONLY}"));
    }
    for (keyword, what) in [
        ("$ref", "refers to another type (a recursive one)"),
        ("allOf", "is a union"),
        ("properties", "is an object"),
        ("additionalProperties", "is a map"),
        ("prefixItems", "is a tuple"),
    ] {
        if object.contains_key(keyword) {
            return Err(format!("{what}: {ONLY}"));
        }
    }
    let mut out = Map::new();
    let keep = |out: &mut Map<String, Value>, keywords: &[&str]| {
        for keyword in keywords {
            if let Some(value) = object.get(*keyword) {
                out.insert((*keyword).to_owned(), value.clone());
            }
        }
    };
    if let Some(choices) = titled_choices(object)? {
        out.insert("type".to_owned(), json!("string"));
        out.insert("oneOf".to_owned(), Value::Array(choices));
        keep(&mut out, &["title", "description", "default"]);
        return Ok((Value::Object(out), false));
    }
    let (kind, optional) = match object.get("type") {
        Some(Value::String(kind)) => (kind.clone(), false),
        Some(Value::Array(kinds)) => {
            let named: Vec<&str> = kinds.iter().filter_map(Value::as_str).filter(|k| *k != "null").collect();
            match named.as_slice() {
                [kind] => ((*kind).to_owned(), kinds.len() > 1),
                _ => return Err(format!("has a union type: {ONLY}")),
            }
        }
        _ if object.contains_key("enum") => ("string".to_owned(), false),
        _ => return Err("has no `type`".to_owned()),
    };
    match kind.as_str() {
        "string" => {
            out.insert("type".to_owned(), json!("string"));
            keep(&mut out, &["title", "description", "default", "minLength", "maxLength", "pattern"]);
            if let Some(format) = object.get("format").and_then(Value::as_str).filter(|f| FORMATS.contains(f)) {
                out.insert("format".to_owned(), json!(format));
            }
            if let Some(Value::Array(choices)) = object.get("enum") {
                out.insert("enum".to_owned(), Value::Array(choices.iter().filter(|c| !c.is_null()).cloned().collect()));
            }
        }
        "number" | "integer" => {
            out.insert("type".to_owned(), json!(kind));
            keep(&mut out, &["title", "description", "default", "minimum", "maximum"]);
        }
        "boolean" => {
            out.insert("type".to_owned(), json!("boolean"));
            keep(&mut out, &["title", "description", "default"]);
        }
        "array" => {
            let items = object.get("items").and_then(Value::as_object).ok_or("is an array without `items`")?;
            let items = match (titled_choices(items)?, items.get("enum")) {
                (Some(choices), _) => json!({"anyOf": choices}),
                (None, Some(choices)) => json!({"type": "string", "enum": choices}),
                (None, None) => {
                    return Err(
                        "is a list of non-enum items: MCP elicits lists only as a multi-select of an enum".to_owned()
                    );
                }
            };
            out.insert("type".to_owned(), json!("array"));
            out.insert("items".to_owned(), items);
            keep(&mut out, &["title", "description", "default", "minItems", "maxItems"]);
        }
        other => return Err(format!("is of type `{other}`: {ONLY}")),
    }
    Ok((Value::Object(out), optional))
}

/// The choices of a `oneOf` of string constants (a Rust enum of unit variants with titles or doc
/// comments) as `[{"const", "title"}]`; `None` for a schema of another shape.
fn titled_choices(object: &Map<String, Value>) -> Result<Option<Vec<Value>>, String> {
    let Some(Value::Array(branches)) = object.get("oneOf") else { return Ok(None) };
    branches
        .iter()
        .map(|branch| {
            let constant = branch
                .get("const")
                .or_else(|| branch.get("enum").and_then(Value::as_array).filter(|e| e.len() == 1).map(|e| &e[0]))
                .filter(|c| c.is_string())
                .ok_or_else(|| format!("is an enum whose variants carry data: {ONLY}"))?;
            let title = branch.get("title").or_else(|| branch.get("description")).unwrap_or(constant);
            Ok(json!({"const": constant, "title": title}))
        })
        .collect::<Result<Vec<Value>, String>>()
        .map(Some)
}

/// Reads an `ElicitResult` (`{"action": "accept"|"decline"|"cancel", "content": {..}}`).
fn read_elicitation<T: JsonSchema + DeserializeOwned>(
    key: &str,
    answer: &Value,
) -> Result<Elicitation<T>, TalkBackError> {
    let bad = |reason: String| TalkBackError::BadResponse { key: key.to_owned(), reason };
    let action = answer
        .get("action")
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("is not an elicitation result (an object with `action`): {}", clip(answer))))?;
    match action {
        "accept" => {}
        "decline" => return Ok(Elicitation::Decline),
        "cancel" => return Ok(Elicitation::Cancel),
        other => {
            return Err(bad(format!(
                "has action `{other}`; an elicitation result's action is `accept`, `decline` or `cancel`"
            )));
        }
    }
    let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
    if !content.is_object() {
        return Err(bad(format!("accepts with content {}, which is not an object", clip(&content))));
    }
    let schema = crate::schema::decoding_schema::<T>();
    crate::decode::decode_arguments::<T>(&content.to_string(), || &schema)
        .map(Elicitation::Accept)
        .map_err(|error| bad(format!("does not fit the requested schema: {error}")))
}

/// Reads a `CreateMessageResult`.
pub(crate) fn read_sampled(key: &str, answer: &Value) -> Result<Sampled, TalkBackError> {
    let bad = |reason: String| TalkBackError::BadResponse { key: key.to_owned(), reason };
    let content = answer
        .get("content")
        .filter(|c| c.is_object() || c.is_array())
        .ok_or_else(|| bad(format!("is not a sampling result (an object with `content`): {}", clip(answer))))?;
    // Newer clients may answer with an array of blocks: the first is the answer's.
    let content = match content {
        Value::Array(blocks) => blocks.first().cloned().ok_or_else(|| bad("has an empty `content`".to_owned()))?,
        block => block.clone(),
    };
    Ok(Sampled {
        model: answer.get("model").and_then(Value::as_str).unwrap_or_default().to_owned(),
        stop_reason: answer.get("stopReason").and_then(Value::as_str).map(str::to_owned),
        content,
    })
}

/// Reads a `ListRootsResult`.
pub(crate) fn read_roots(key: &str, answer: &Value) -> Result<Vec<Root>, TalkBackError> {
    let bad = |reason: String| TalkBackError::BadResponse { key: key.to_owned(), reason };
    let roots = answer
        .get("roots")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(format!("is not a roots result (an object with a `roots` array): {}", clip(answer))))?;
    roots
        .iter()
        .enumerate()
        .map(|(i, root)| {
            let uri = root
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(format!("has a root without a string `uri` at roots[{i}]")))?;
            Ok(Root { uri: uri.to_owned(), name: root.get("name").and_then(Value::as_str).map(str::to_owned) })
        })
        .collect()
}

/// At most 200 bytes of a JSON value, for an error message.
fn clip(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 200 {
        return text;
    }
    let mut end = 200;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// The tag that makes every call of a tool ask the user's approval before it runs
/// (`#[tool(tags(confirm))]`); [`RegistryBuilder::confirm_tag`](crate::RegistryBuilder::confirm_tag)
/// adds others (`destructive`, `exec`).
pub const CONFIRM_TAG: &str = "confirm";

/// The key of the approval's elicitation within its call.
pub const APPROVAL_KEY: &str = "approval";

/// How many characters of one argument the approval question shows: 300 (the cut is stated).
pub const SHOWN_FIELD_CHARS: usize = 300;

/// How many arguments the approval question shows: 20 (the others are counted).
pub const SHOWN_FIELDS: usize = 20;

/// The arguments that say what a call acts on, shown first in an approval question when present
/// (the command a shell runs, the path a file tool writes, the address a fetch reaches).
const FIRST_FIELDS: &[&str] = &["command", "cmd", "path", "file_path", "filePath", "paths", "url", "uri"];

/// `true` for a character that changes how text is shown without being seen: the bidirectional
/// controls and isolates (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), zero-width and
/// invisible characters (U+200B-U+200D, U+2060-U+2064, U+FEFF, U+00AD, U+034F, U+180E), and
/// every other control character.
fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}')
        || matches!(c, '\u{FEFF}' | '\u{00AD}' | '\u{034F}' | '\u{180E}')
}

/// `text` (a JSON value's compact text) as a person must see it: a run of three or more spaces
/// as `⟦N spaces⟧`, a run of three or more escaped newlines or tabs as `⟦N newlines⟧` /
/// `⟦N tabs⟧`, and each character of [`is_hidden`] as `⟦U+XXXX⟧`.
fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let run = |unit: &str| rest.as_bytes().chunks(unit.len()).take_while(|chunk| *chunk == unit.as_bytes()).count();
        let (unit, name) = match c {
            ' ' => (" ", "spaces"),
            '\\' if rest.starts_with("\\n") => ("\\n", "newlines"),
            '\\' if rest.starts_with("\\t") => ("\\t", "tabs"),
            '\\' if rest.starts_with("\\r") => ("\\r", "carriage returns"),
            _ => ("", ""),
        };
        if !unit.is_empty() {
            let count = run(unit);
            if count >= 3 {
                out.push_str(&format!("⟦{count} {name}⟧"));
            } else {
                out.push_str(&unit.repeat(count));
            }
            rest = &rest[unit.len() * count..];
            continue;
        }
        if c == '\\' {
            // Any other escape: kept whole, so `\\n` (a backslash and an `n`) is not read as a newline.
            let escape = if rest[1..].starts_with('u') { 6 } else { 2 };
            let end = escape.min(rest.len());
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        if is_hidden(c) {
            out.push_str(&format!("⟦U+{:04X}⟧", u32::from(c)));
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `text` (plain text of many lines, such as a tool's preview) as a person must see it: newlines
/// and tabs kept, every other hidden character (control, bidirectional and zero-width
/// characters) written as `⟦U+XXXX⟧`, so that what is shown is what runs.
pub fn visible_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_hidden(c) && c != '\n' && c != '\t' {
            out.push_str(&format!("⟦U+{:04X}⟧", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` cut to [`SHOWN_FIELD_CHARS`] characters, the cut stated.
fn cut(text: &str) -> String {
    let total = text.chars().count();
    if total <= SHOWN_FIELD_CHARS {
        return text.to_owned();
    }
    let kept: String = text.chars().take(SHOWN_FIELD_CHARS).collect();
    format!("{kept}... (cut: {} more characters)", total - SHOWN_FIELD_CHARS)
}

/// What an approval question shows of a call's arguments: one line per argument, `name: value`
/// (the value's JSON made visible: whitespace runs, control, bidirectional and zero-width
/// characters written out; cut to [`SHOWN_FIELD_CHARS`] characters with the cut stated), the
/// arguments that name what runs or what is touched (`command`, `cmd`, `path`,
/// `file_path`, `filePath`, `paths`, `url`, `uri`) first (so a file tool's question names the path
/// first), then the others in the order the model wrote them, at most [`SHOWN_FIELDS`] (the rest
/// counted). Arguments that are not a JSON object are shown as their text, made visible and cut
/// the same way.
pub fn shown_arguments(arguments: &str) -> String {
    let object = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(object)) => object,
        Ok(other) => return cut(&visible(&other.to_string())),
        Err(_) => return cut(&visible(&Value::String(arguments.to_owned()).to_string())),
    };
    // The order the model wrote them (a map without `preserve_order` is sorted by key).
    let mut names: Vec<&String> = object.keys().collect();
    let written = |name: &str| arguments.find(&format!("\"{name}\"")).unwrap_or(usize::MAX);
    names.sort_by_key(|name| (FIRST_FIELDS.iter().position(|f| f == name).unwrap_or(usize::MAX), written(name)));
    let mut lines: Vec<String> = names
        .iter()
        .take(SHOWN_FIELDS)
        .map(|name| {
            format!(
                "{}: {}",
                visible(&Value::String((*name).clone()).to_string()),
                cut(&visible(&object[*name].to_string()))
            )
        })
        .collect();
    if names.len() > SHOWN_FIELDS {
        lines.push(format!("... ({} more arguments not shown)", names.len() - SHOWN_FIELDS));
    }
    if lines.is_empty() {
        return "(no arguments)".to_owned();
    }
    lines.join("\n")
}

/// The (empty) form of an approval: the user accepts or declines it.
#[derive(Deserialize, JsonSchema)]
struct Approval {}

/// Asks the user, through the call's client channel, whether the call of a tool tagged `tag` may
/// run: an elicitation under the key [`APPROVAL_KEY`] (`approval`) whose message names the tool
/// and shows its arguments as [`shown_arguments`] does (what it acts on first, the start of every
/// argument, hidden characters and whitespace runs made visible, every cut stated), with an empty
/// form. Accept runs the call.
///
/// # Errors
/// [`ToolError::PermissionDenied`](crate::ToolError::PermissionDenied), which the model reads as
/// ``Permission denied: ...``, with the reason:
/// - decline or cancel: `the user declined to run it; do not call it again unless the user asks
///   for it` (`cancelled` for cancel);
/// - a client without elicitation: that the tool needs approval (tag `T`), the client cannot
///   ask its user, and how to allow it (a client with elicitation, or serving the tool without
///   approval for `T`);
/// - no client channel at all: the same, pointing at `ToolContextBuilder::client`;
/// - a malformed answer or a failed channel: its error.
pub async fn approve(call: &crate::ToolCall, tag: &str, ctx: &crate::ToolContext) -> Result<(), crate::ToolError> {
    approve_previewed(call, tag, ctx, APPROVAL_KEY, None).await
}

/// `true` when `ctx`'s client can ask its user: a client channel that declared elicitation.
pub(crate) fn can_ask(ctx: &crate::ToolContext) -> bool {
    !ctx.channel_missing() && ctx.client_capabilities().elicitation
}

/// [`approve`] with the elicitation under `key` (approval tokens name the exact call there), and
/// the tool's preview ([`Tool::preview`](crate::Tool::preview), made visible) in place of its
/// arguments when it gave one: `Allow the tool `x` to run? What it would do:` and the preview.
pub(crate) async fn approve_previewed(
    call: &crate::ToolCall,
    tag: &str,
    ctx: &crate::ToolContext,
    key: &str,
    preview: Option<&str>,
) -> Result<(), crate::ToolError> {
    let denied = |reason: String| crate::ToolError::PermissionDenied { tool: call.name.clone(), reason };
    let how = if tag == CONFIRM_TAG {
        "serve it without the tag `confirm`".to_owned()
    } else {
        format!("serve it without approval for the tag `{tag}`")
    };
    if ctx.channel_missing() {
        return Err(denied(format!(
            "it needs the user's approval (tag `{tag}`) and no client can be asked: install a client channel \
             (ToolContextBuilder::client or RegistryBuilder::client), or {how}"
        )));
    }
    if !ctx.client_capabilities().elicitation {
        return Err(denied(format!(
            "it needs the user's approval (tag `{tag}`) and this client cannot ask its user (it did not declare the \
             elicitation capability); use a client that supports elicitation, or {how}"
        )));
    }
    let message = match preview {
        Some(preview) => format!("Allow the tool `{}` to run? What it would do:\n{preview}", call.name),
        None => {
            format!("Allow the tool `{}` to run with these arguments?\n{}", call.name, shown_arguments(&call.arguments))
        }
    };
    match ctx.elicit::<Approval>(message).key(key).await {
        Ok(Elicitation::Accept(_)) => Ok(()),
        Ok(Elicitation::Decline) => {
            Err(denied("the user declined to run it; do not call it again unless the user asks for it".to_owned()))
        }
        Ok(Elicitation::Cancel) => Err(denied(
            "the user cancelled the approval of this call; do not call it again unless the user asks for it".to_owned(),
        )),
        Err(error) => Err(denied(error.to_string())),
    }
}
