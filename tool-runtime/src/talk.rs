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

use std::fmt;
use std::future::IntoFuture;
use std::marker::PhantomData;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The severity of a log message, least severe first: the eight levels of MCP logging (from
/// RFC 5424's syslog severities). Serialized lowercase, as MCP names them (`"warning"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Routine progress.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A part of the system failed.
    Critical,
    /// Action is needed now.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// The level's MCP name (`"debug"` .. `"emergency"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the client of a call said it can answer (MCP client capabilities). Default: nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientCapabilities {
    /// `elicitation`: it asks its user and answers `elicitation/create` (form mode).
    pub elicitation: bool,
    /// `sampling`: it asks its model and answers `sampling/createMessage`.
    pub sampling: bool,
    /// `roots`: it answers `roots/list` with the roots it exposes.
    pub roots: bool,
}

/// The kinds of input request, by their MCP method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputMethod {
    /// `elicitation/create`: ask the user (capability `elicitation`).
    Elicitation,
    /// `sampling/createMessage`: ask the client's model (capability `sampling`).
    Sampling,
    /// `roots/list`: ask for the client's roots (capability `roots`).
    ListRoots,
}

impl InputMethod {
    /// The MCP method name (`"elicitation/create"`, `"sampling/createMessage"`, `"roots/list"`).
    pub fn method(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation/create",
            Self::Sampling => "sampling/createMessage",
            Self::ListRoots => "roots/list",
        }
    }

    /// The client capability the method needs (`"elicitation"`, `"sampling"`, `"roots"`).
    pub fn capability(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation",
            Self::Sampling => "sampling",
            Self::ListRoots => "roots",
        }
    }

    pub(crate) fn declared(self, capabilities: ClientCapabilities) -> bool {
        match self {
            Self::Elicitation => capabilities.elicitation,
            Self::Sampling => capabilities.sampling,
            Self::ListRoots => capabilities.roots,
        }
    }
}

/// One input request as it goes to the client: the method and its MCP `params` object.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest {
    /// Which request.
    pub method: InputMethod,
    /// The request's `params` as MCP gives them (for elicitation `{"message", "requestedSchema"}`,
    /// for sampling `{"messages", "maxTokens", ..}`, for roots `{}`).
    pub params: Value,
}

/// The line from a call back to its client: what it can answer, the log level it asked for, and
/// the delivery of log messages and input requests. `tool-mcp` installs one per MCP request; a
/// program installs its own with [`ToolContextBuilder::client`](crate::ToolContextBuilder::client)
/// or [`RegistryBuilder::client`](crate::RegistryBuilder::client).
pub trait ClientChannel: Send + Sync + 'static {
    /// What the client said it can answer.
    fn capabilities(&self) -> ClientCapabilities;

    /// The least severe level the client wants log messages of; `None` (the default) sends none.
    fn log_level(&self) -> Option<LogLevel> {
        None
    }

    /// Delivers one log message at `level` (at or above [`log_level`](Self::log_level): the
    /// context filters): `logger` names its source (the tool), `data` is the message (a string or
    /// any JSON). Default: dropped.
    fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        let _ = (level, logger, data);
    }

    /// Sends one input request and resolves to the client's result as JSON (for elicitation
    /// `{"action", "content"}`, for sampling the `CreateMessageResult`, for roots `{"roots"}`).
    /// `key` names the request within its call, the same on every run of the call. Only called
    /// for a method the [capabilities](Self::capabilities) declare. The channel may never
    /// resolve: over MCP 2026-07-28 the call ends with an input-required result instead.
    fn request(&self, key: &str, request: InputRequest) -> BoxFuture<'_, Result<Value, TalkBackError>>;

    /// Told of every error the context hands a tool for a request of this channel (a missing
    /// capability, a malformed answer), before the tool sees it: a transport that must answer
    /// such a call with a protocol error (MCP's -32021 for a missing capability) remembers it.
    /// Default: nothing.
    fn refused(&self, error: &TalkBackError) {
        let _ = error;
    }
}

/// Why an input request got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TalkBackError {
    /// The call has no client to ask: it was made without a [`ClientChannel`] (a
    /// [`Registry::call`](crate::Registry::call) whose context and registry set none).
    NoClient {
        /// The MCP method of the request.
        method: &'static str,
    },
    /// The client did not declare the capability the request needs (over MCP the call is then
    /// answered with error -32021, MissingRequiredClientCapability, when the tool fails with it).
    MissingCapability {
        /// `"elicitation"`, `"sampling"` or `"roots"`.
        capability: &'static str,
    },
    /// The client's answer is not a result of the request's kind, or its content does not fit
    /// the requested schema.
    BadResponse {
        /// The request's key.
        key: String,
        /// What is wrong, and what was expected.
        reason: String,
    },
    /// The type asked for with [`elicit`](crate::ToolContext::elicit) is not a flat object of
    /// strings, numbers, integers, booleans and enums (what MCP form elicitation allows).
    NotElicitable {
        /// The offending property (empty when the root is not an object).
        property: String,
        /// Why.
        reason: String,
    },
    /// The call was cancelled while it waited for the answer.
    Cancelled,
    /// The channel could not deliver the request or read its answer.
    Transport {
        /// What failed.
        message: String,
    },
}

impl fmt::Display for TalkBackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoClient { method } => write!(
                f,
                "no client can answer `{method}` here: install a client channel (ToolContextBuilder::client or \
                 RegistryBuilder::client), or serve the tool over MCP"
            ),
            Self::MissingCapability { capability } => write!(
                f,
                "the client did not declare the `{capability}` capability; use a client that supports \
                 {capability} and declares it"
            ),
            Self::BadResponse { key, reason } => write!(f, "the client's answer to input request `{key}` {reason}"),
            Self::NotElicitable { property, reason } if property.is_empty() => {
                write!(f, "cannot elicit this type: {reason}")
            }
            Self::NotElicitable { property, reason } => {
                write!(f, "cannot elicit this type: property `{property}` {reason}")
            }
            Self::Cancelled => f.write_str("the call was cancelled while it waited for the client's answer"),
            Self::Transport { message } => write!(f, "the input request failed: {message}"),
        }
    }
}

impl std::error::Error for TalkBackError {}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicitation<T> {
    /// The user submitted the form: its content, decoded as strictly as tool arguments.
    Accept(T),
    /// The user said no.
    Decline,
    /// The user dismissed the request without choosing.
    Cancel,
}

/// A message of a sampling request (text only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplingMessage {
    /// `"user"` or `"assistant"`.
    pub role: &'static str,
    /// The message's text.
    pub text: String,
}

/// A `sampling/createMessage` request: messages for the client's model, and a bound on its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingRequest {
    /// The conversation, oldest first.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens the answer may have (`maxTokens`, required by MCP).
    pub max_tokens: u32,
    /// A system prompt the client may use (`systemPrompt`; default none).
    pub system_prompt: Option<String>,
    /// Sampling temperature (default: the client's choice).
    pub temperature: Option<f64>,
}

impl SamplingRequest {
    /// A request of one user message, answered in at most `max_tokens` tokens.
    pub fn new(text: impl Into<String>, max_tokens: u32) -> Self {
        Self {
            messages: vec![SamplingMessage { role: "user", text: text.into() }],
            max_tokens,
            system_prompt: None,
            temperature: None,
        }
    }

    /// Adds a system prompt.
    #[must_use]
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    pub(crate) fn params(&self) -> Value {
        let messages: Vec<Value> = self
            .messages
            .iter()
            .map(|m| json!({"role": m.role, "content": {"type": "text", "text": m.text}}))
            .collect();
        let mut params = json!({"messages": messages, "maxTokens": self.max_tokens});
        if let Some(prompt) = &self.system_prompt {
            params["systemPrompt"] = json!(prompt);
        }
        if let Some(temperature) = self.temperature {
            params["temperature"] = json!(temperature);
        }
        params
    }
}

/// The client model's answer to a [`SamplingRequest`].
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// The model that answered, as the client names it.
    pub model: String,
    /// Why it stopped (`"endTurn"`, `"maxTokens"`, ...), when the client said.
    pub stop_reason: Option<String>,
    /// The answer's content block as MCP gives it (`{"type":"text","text":..}`, an image, ...).
    pub content: Value,
}

impl Sampled {
    /// The answer's text, when its content is a text block.
    pub fn text(&self) -> Option<&str> {
        (self.content.get("type")? == "text").then(|| self.content.get("text")?.as_str())?
    }
}

/// A root the client exposes (`roots/list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The root's URI (`file:///...`).
    pub uri: String,
    /// Its display name, when the client gave one.
    pub name: Option<String>,
}

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

/// How many bytes of the arguments the approval question shows: 2,000 (the rest is counted).
const SHOWN_ARGUMENT_BYTES: usize = 2_000;

/// The (empty) form of an approval: the user accepts or declines it.
#[derive(Deserialize, JsonSchema)]
struct Approval {}

/// Asks the user, through the call's client channel, whether the call of a tool tagged `tag` may
/// run: an elicitation under the key [`APPROVAL_KEY`] (`approval`) whose message names the tool
/// and shows its arguments (pretty JSON, at most 2,000 bytes), with an empty form. Accept runs the
/// call.
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
    let shown = match serde_json::from_str::<Value>(&call.arguments) {
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_else(|_| call.arguments.clone()),
        Err(_) => call.arguments.clone(),
    };
    let shown = if shown.len() > SHOWN_ARGUMENT_BYTES {
        let mut end = SHOWN_ARGUMENT_BYTES;
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}\n... ({} more bytes)", &shown[..end], shown.len() - end)
    } else {
        shown
    };
    let message = format!("Allow the tool `{}` to run with these arguments?\n{shown}", call.name);
    match ctx.elicit::<Approval>(message).key(APPROVAL_KEY).await {
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
