//! The client channel: what a call's client side implements ([`ClientChannel`]) and the values it
//! carries (log levels, capabilities, input requests, sampling requests and answers, roots, the
//! errors). What a tool calls is in [`talk`](crate::talk).

use std::fmt;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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
