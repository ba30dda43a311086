//! Provider shapes: the tool calls in a provider's response, and the tool results and tool
//! definitions in that provider's request.
//!
//! One [`Provider`] per wire format. For each it does three things:
//!
//! - [`Provider::parse_tool_calls`] reads the calls out of a (non-streaming) response body into
//!   [`ToolCall`]s, in the order the model emitted them;
//! - [`Provider::render_tool_results`] turns [`ToolMessage`]s into the message(s) or item(s) to
//!   append to the conversation;
//! - [`Provider::render_tools`] turns [`ToolDefinition`]s into the request's `tools` array
//!   ([`Provider::render_tool`]: one tool's entry), honouring each tool's OpenAI strict-mode wish
//!   (`#[tool(strict)]`) and checking the schema rules of the provider;
//!   [`Provider::render_tools_with`] takes a [`Rendering`] for strict mode wherever possible and
//!   Gemini's JSON Schema form.
//!
//! | provider | calls in the response | results in the next request | `tools[]` entry |
//! |---|---|---|---|
//! | [`OpenAiChat`](Provider::OpenAiChat) | `choices[0].message.tool_calls[]` | one `role: "tool"` message per result | `{"type":"function","function":{..}}` |
//! | [`OpenAiResponses`](Provider::OpenAiResponses) | `output[]` items of `type: "function_call"` | one `function_call_output` item per result | `{"type":"function","name",..}` |
//! | [`Anthropic`](Provider::Anthropic) | `content[]` blocks of `type: "tool_use"` | one `role: "user"` message of `tool_result` blocks | `{"name","description","input_schema"}` |
//! | [`Gemini`](Provider::Gemini) | `candidates[0].content.parts[].functionCall` | one `role: "user"` content of `functionResponse` parts | one `{"functionDeclarations":[..]}` |
//!
//! Registries with deferred tools (listed only through tool search): [`Provider::render_deferred_tools`]
//! for the first request's `tools`, [`Provider::parse_search_calls`] and
//! [`Provider::render_turn_results`] for the searches a model makes (see [`Deferral`]).
//!
//! An MCP `tools/list` entry: [`ToolDefinition::mcp_entry`]. (`ToolDefinition::for_provider`
//! with a `Target` is the former form of both, kept deprecated.)
//!
//! Sources: the providers' API references (OpenAI "Chat Completions" and "Responses", Anthropic
//! "Messages" and "Tool use", Google "Function calling" and the `Schema` reference of the Gemini
//! API), checked against the recorded bodies in `fixtures/provider-responses/` (see its
//! `SOURCES.md`). Each function documents the rules it applies.
//!
//! Parsing is strict about what it needs and ignores everything else: a body that lacks a field
//! the calls are read from, or has it with the wrong JSON type, is a [`ProviderError`] naming the
//! JSON path (`choices[0].message.tool_calls[1].function.arguments`). Arguments are not decoded
//! here; [`Registry::call`](crate::Registry::call) does that, so a bad argument becomes an error
//! result the model can act on.

mod anthropic;
mod gemini;
mod notes;
mod openai_chat;
mod openai_responses;
mod projection;
mod search;
mod trim;

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

pub use gemini::gemini_schema;
#[allow(deprecated)]
pub use projection::Target;
use projection::{Form, project};
pub use projection::{ProjectionError, SchemaError, mcp_annotations, openai_strict_schema, tags_from_mcp_annotations};
pub use search::{AnthropicSearch, Deferral, MAX_ANTHROPIC_DEFERRED, OpenAiSearch, SearchCall};
pub use trim::{HistoryShape, TrimReport, estimate_tokens, trim_context, trimmed_placeholder};

use crate::{ToolCall, ToolDefinition, ToolMessage};

/// A provider wire format for tool calls.
///
/// Its id (`openai-chat`, `openai-responses`, `anthropic`, `gemini`) is what [`Display`](fmt::Display) writes
/// and [`FromStr`] reads, e.g. for a command-line option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`), and the many APIs that copy it.
    OpenAiChat,
    /// OpenAI Responses (`POST /v1/responses`).
    OpenAiResponses,
    /// Anthropic Messages (`POST /v1/messages`).
    Anthropic,
    /// Google Gemini API `generateContent` (`POST /v1beta/models/{model}:generateContent`).
    Gemini,
}

impl Provider {
    /// Every provider, in the order of [`Provider::id`]'s documentation.
    pub const ALL: [Provider; 4] =
        [Provider::OpenAiChat, Provider::OpenAiResponses, Provider::Anthropic, Provider::Gemini];

    /// The provider whose response body has this shape, checked in this order:
    ///
    /// 1. a `choices` array: [`OpenAiChat`](Provider::OpenAiChat);
    /// 2. `"object": "response"` or an `output` array: [`OpenAiResponses`](Provider::OpenAiResponses);
    /// 3. `"type": "message"` with a `content` array: [`Anthropic`](Provider::Anthropic);
    /// 4. a `candidates` array: [`Gemini`](Provider::Gemini).
    ///
    /// `None` for anything else (an error body, a streaming chunk, a request body).
    pub fn detect(response: &Value) -> Option<Provider> {
        let is_array = |key: &str| response.get(key).is_some_and(Value::is_array);
        if is_array("choices") {
            Some(Self::OpenAiChat)
        } else if response.get("object").and_then(Value::as_str) == Some("response") || is_array("output") {
            Some(Self::OpenAiResponses)
        } else if response.get("type").and_then(Value::as_str) == Some("message") && is_array("content") {
            Some(Self::Anthropic)
        } else if is_array("candidates") {
            Some(Self::Gemini)
        } else {
            None
        }
    }

    /// The provider's id: `"openai-chat"`, `"openai-responses"`, `"anthropic"` or `"gemini"`.
    pub const fn id(self) -> &'static str {
        match self {
            Self::OpenAiChat => "openai-chat",
            Self::OpenAiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
        }
    }

    /// The tool calls of a response body, in the order the model emitted them. A response without
    /// tool calls (a plain answer) gives an empty list.
    ///
    /// - OpenAI Chat: `choices[0].message.tool_calls[]`, each `{id, type: "function", function:
    ///   {name, arguments}}`; `arguments` (a JSON string) is kept unchanged. `tool_calls` missing or
    ///   `null` means no calls; a `type` other than `"function"` is an error.
    /// - OpenAI Responses: the `output[]` items with `type: "function_call"`; the item's `call_id`
    ///   (not its `fc_...` `id`) is the call id, `arguments` is kept unchanged. Other items
    ///   (`reasoning`, `message`, ...) are skipped.
    /// - Anthropic: the `content[]` blocks with `type: "tool_use"`; `input` (an object) becomes
    ///   its compact JSON text. Other blocks (`text`, `thinking`, ...) are skipped.
    /// - Gemini: the `candidates[0].content.parts[]` with a `functionCall: {name, args?, id?}`;
    ///   `args` missing means `{}`. A call without `id` (the Gemini API gives none today) gets one
    ///   unique across turns: `gemini_<responseId>_<n>`, or `gemini_<stem>_<n>` when the response
    ///   has no `responseId`, `<stem>` being 22 random characters of `[A-Za-z0-9_-]` made once per
    ///   response ([`mint_ref_id`](crate::ref_id::mint_ref_id)), with `n` the 0-based index among the
    ///   response's function calls.
    ///   [`Provider::render_tool_results`] leaves such ids out again. A candidate without
    ///   `content` or `parts` (Gemini omits them, e.g. after a safety stop) has no calls.
    ///
    /// # Errors
    /// A [`ProviderError`] naming the JSON path when a field the calls are read from is missing or
    /// has the wrong type.
    pub fn parse_tool_calls(self, response: &Value) -> Result<Vec<ToolCall>, ProviderError> {
        match self {
            Self::OpenAiChat => openai_chat::parse_tool_calls(response),
            Self::OpenAiResponses => openai_responses::parse_tool_calls(response),
            Self::Anthropic => anthropic::parse_tool_calls(response),
            Self::Gemini => gemini::parse_tool_calls(response),
        }
    }

    /// The message(s) or item(s) to append to the conversation, in order, to give the model the
    /// results of its calls.
    ///
    /// - OpenAI Chat: one `{"role":"tool","tool_call_id","content"}` message per result. Chat tool
    ///   messages carry text only: parts become `[{"type":"text","text"}]` with every other kind
    ///   (image, audio, resource, resource link) as its text projection
    ///   ([`ContentPart::as_text`](crate::ContentPart::as_text)); an error is its text (the API
    ///   has no error flag).
    /// - OpenAI Responses: one `{"type":"function_call_output","call_id","output"}` item per result;
    ///   parts become `input_text`, `input_image` (`"image_url":"data:<media_type>;base64,<data>"`)
    ///   and, for an embedded binary resource that is not an image, `input_file` (`file_data` a
    ///   data URL, `filename` from the URI) items; audio and resource links become `input_text`
    ///   with their text projection.
    /// - Anthropic: one `{"role":"user","content":[{"type":"tool_result","tool_use_id","content"},
    ///   ...]}` message for all results (Anthropic wants every result of a turn in the one user
    ///   message that follows it); `"is_error": true` only on errors; parts become `text`, `image`
    ///   (`{"type":"base64","media_type","data"}` source) and `document` blocks (an embedded text
    ///   resource with a `{"type":"text","media_type":"text/plain","data"}` source, a PDF with a
    ///   base64 source, `title` the URI); audio, other binary resources and resource links become
    ///   `text` blocks with their text projection. No messages, no message.
    /// - Gemini: one `{"role":"user","parts":[{"functionResponse":{"name","id","response"}}, ...]}`
    ///   content for all results, `response` being `{"output": <text>}` or `{"error": <text>}` (the
    ///   keys the `FunctionResponse` reference asks for) with the text projection of every part;
    ///   images and embedded binary resources of a type Gemini takes inline (PNG, JPEG, WebP, PDF,
    ///   plain text) also go as `{"inlineData":{"mimeType","data"}}` in the function response's
    ///   `parts` (multimodal function responses, Gemini 3 models); audio does not. `id` is
    ///   left out when it is one [`Provider::parse_tool_calls`] generated (it starts with
    ///   `gemini_`), since the model gave none. No messages, no content.
    pub fn render_tool_results(self, messages: &[ToolMessage]) -> Vec<Value> {
        match self {
            Self::OpenAiChat => openai_chat::render_tool_results(messages),
            Self::OpenAiResponses => openai_responses::render_tool_results(messages),
            Self::Anthropic => anthropic::render_tool_results(messages),
            Self::Gemini => gemini::render_tool_results(messages),
        }
    }

    /// The request's `tools` array for these definitions, in their order, each tool as
    /// [`Provider::render_tool`] renders it (with [`Rendering::DEFAULT`]). For Gemini: one
    /// `{"functionDeclarations":[..]}` entry holding every tool's declaration (none when there
    /// are no definitions).
    ///
    /// # Errors
    /// The [`ProjectionError`] of the first tool that cannot be sent (see
    /// [`Provider::render_tool`]).
    pub fn render_tools(self, definitions: &[ToolDefinition]) -> Result<Vec<Value>, ProjectionError> {
        self.render_tools_with(definitions, Rendering::DEFAULT)
    }

    /// [`Provider::render_tools`] with the choices of `rendering`.
    ///
    /// # Errors
    /// As [`Provider::render_tools`].
    pub fn render_tools_with(
        self,
        definitions: &[ToolDefinition],
        rendering: Rendering,
    ) -> Result<Vec<Value>, ProjectionError> {
        let entries: Vec<Value> =
            definitions.iter().map(|d| self.render_tool_with(d, rendering)).collect::<Result<_, _>>()?;
        Ok(match self {
            Self::Gemini if entries.is_empty() => Vec::new(),
            Self::Gemini => vec![serde_json::json!({"functionDeclarations": entries})],
            _ => entries,
        })
    }

    /// One tool's entry in the request's `tools` array (for Gemini, one `functionDeclarations[]`
    /// entry), with [`Rendering::DEFAULT`]:
    ///
    /// - OpenAI Chat: `{"type":"function","function":{"name","description","parameters","strict"}}`;
    ///   OpenAI Responses: `{"type":"function","name","description","parameters","strict"}`. A
    ///   tool that asks for strict mode (`#[tool(strict)]`) is sent `strict: true` with
    ///   [`openai_strict_schema`] of its schema; any other is sent `strict: false` with the
    ///   canonical schema (see [`Strict`] for strict mode wherever possible).
    /// - Anthropic: `{"name","description","input_schema"}`.
    /// - A tool that may be called from code (the field [`ToolDefinition::callers`](field@ToolDefinition::callers) `code` or `both`,
    ///   `#[tool(callers = ...)]`) also carries `allowed_callers`: Anthropic's
    ///   `["direct", "code_execution_20250825"]` (or the program alone for `code`), OpenAI
    ///   Responses' `["direct", "programmatic"]` (or `["programmatic"]`). OpenAI Chat and Gemini
    ///   have no programmatic calling and get the entry as above.
    /// - Gemini: `{"name","description","parameters"}`, `parameters` being [`gemini_schema`] of the
    ///   canonical schema (the OpenAPI 3.0 subset) and left out for a tool without properties
    ///   (Gemini refuses an object schema with empty `properties`); see [`GeminiParameters`] for
    ///   `parametersJsonSchema`.
    ///
    /// # Errors
    /// A [`ProjectionError`] naming the tool and the schema path when the schema cannot be
    /// expressed for the provider: OpenAI strict mode asked for by a tool whose schema does not
    /// comply (see [`openai_strict_schema`]); for Anthropic, a union root or a property name
    /// outside `^[a-zA-Z0-9_.-]{1,64}$`; for Gemini's subset, a required property left without any
    /// schema. A schema that is not an object (`type` other than `object`) fails for every
    /// provider.
    pub fn render_tool(self, definition: &ToolDefinition) -> Result<Value, ProjectionError> {
        self.render_tool_with(definition, Rendering::DEFAULT)
    }

    /// [`Provider::render_tool`] with the choices of `rendering`.
    ///
    /// # Errors
    /// As [`Provider::render_tool`].
    pub fn render_tool_with(self, definition: &ToolDefinition, rendering: Rendering) -> Result<Value, ProjectionError> {
        project(definition, Form::of(self, rendering))
    }
}

/// The choices of [`Provider::render_tools_with`] beyond the provider: each applies to the
/// providers it names and is ignored by the others. [`Rendering::DEFAULT`] (also `Default`) is
/// what [`Provider::render_tools`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Rendering {
    /// OpenAI strict mode (OpenAI Chat and Responses).
    pub strict: Strict,
    /// The form of Gemini's parameters (Gemini).
    pub gemini: GeminiParameters,
}

impl Rendering {
    /// Strict mode as each tool declares it, Gemini's OpenAPI subset.
    pub const DEFAULT: Rendering = Rendering { strict: Strict::AsDeclared, gemini: GeminiParameters::OpenApiSubset };

    /// These choices with `strict`.
    #[must_use]
    pub const fn strict(mut self, strict: Strict) -> Self {
        self.strict = strict;
        self
    }

    /// These choices with `gemini`.
    #[must_use]
    pub const fn gemini(mut self, gemini: GeminiParameters) -> Self {
        self.gemini = gemini;
        self
    }
}

/// When an OpenAI tool entry is sent in strict mode (`strict: true`, with
/// [`openai_strict_schema`] of the tool's schema; OpenAI Structured Outputs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Strict {
    /// As the tool declares ([`ToolDefinition::strict`]): `#[tool(strict)]` is strict (and a
    /// [`ProjectionError`] when its schema does not comply); any other tool is `strict: false`
    /// with its canonical schema. The default.
    #[default]
    AsDeclared,
    /// Wherever possible: a tool that asks for strict mode gets it or the rendering fails; a tool
    /// that refuses it (`#[tool(strict = false)]`) is sent non-strict; any other tool is strict
    /// when its schema complies ([`ToolDefinition::is_openai_strict`]) and non-strict otherwise.
    WherePossible,
}

/// The form of a Gemini declaration's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum GeminiParameters {
    /// `parameters`: [`gemini_schema`] of the canonical schema, the OpenAPI 3.0 subset (the Live
    /// API and older models take only this). The default.
    #[default]
    OpenApiSubset,
    /// `parametersJsonSchema`: the canonical schema as it is (`anyOf`, `$ref` and recursion,
    /// `additionalProperties`, every bound), what gemini-cli sends for every tool; left out for a
    /// tool without properties. `parametersJsonSchema` and `parameters` are mutually exclusive.
    JsonSchema,
}

impl fmt::Display for Provider {
    /// Writes the provider's [`id`](Provider::id).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for Provider {
    type Err = ProviderError;

    /// Reads a provider [`id`](Provider::id) (exact, lowercase).
    ///
    /// # Errors
    /// [`ProviderError::UnknownProvider`], whose message lists the accepted ids.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|p| p.id() == s).ok_or_else(|| ProviderError::UnknownProvider { name: s.to_owned() })
    }
}

/// Why a provider response could not be read, or a provider id not recognised.
///
/// JSON paths are written from the body's root: `choices[0].message.tool_calls[1].id`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// A provider id that is not one of [`Provider::id`]'s.
    #[error("unknown provider `{name}`; expected one of `openai-chat`, `openai-responses`, `anthropic`, `gemini`")]
    UnknownProvider {
        /// The id as given.
        name: String,
    },
    /// A field the tool calls are read from is absent (an empty array counts as missing its `[0]`).
    #[error("`{path}` is missing")]
    Missing {
        /// Where, e.g. `choices[0].message`.
        path: String,
    },
    /// A field has the wrong JSON type (`null` included).
    #[error("`{path}` is not {expected}")]
    WrongType {
        /// Where, e.g. `choices[0].message.tool_calls[1].function.arguments`.
        path: String,
        /// `a string`, `an array` or `an object`.
        expected: &'static str,
    },
    /// A field has a value this crate does not handle, e.g. an OpenAI Chat tool call of type
    /// `"custom"`.
    #[error("`{path}` is {found}; expected {expected}")]
    Unsupported {
        /// Where, e.g. `choices[0].message.tool_calls[0].type`.
        path: String,
        /// The value found, as JSON (`"custom"`).
        found: String,
        /// The value accepted, as JSON (`"function"`).
        expected: &'static str,
    },
}

/// A JSON value and its path from the response body's root, for error messages.
#[derive(Debug, Clone)]
struct At<'a> {
    value: &'a Value,
    path: String,
}

impl<'a> At<'a> {
    fn root(value: &'a Value) -> Self {
        Self { value, path: String::new() }
    }

    fn child(&self, value: &'a Value, key: &str) -> Self {
        let path = if self.path.is_empty() { key.to_owned() } else { format!("{}.{key}", self.path) };
        Self { value, path }
    }

    /// The field `key`, which must be present (it may be `null`; the type check that follows
    /// reports that).
    fn field(&self, key: &str) -> Result<Self, ProviderError> {
        match self.value.get(key) {
            Some(value) => Ok(self.child(value, key)),
            None => Err(ProviderError::Missing { path: self.child(self.value, key).path }),
        }
    }

    /// The field `key`, `None` when it is absent or `null`.
    fn optional(&self, key: &str) -> Option<Self> {
        self.value.get(key).filter(|v| !v.is_null()).map(|value| self.child(value, key))
    }

    /// The elements of an array.
    fn elements(&self) -> Result<Vec<Self>, ProviderError> {
        let items = self.value.as_array().ok_or_else(|| self.wrong_type("an array"))?;
        Ok(items.iter().enumerate().map(|(i, value)| Self { value, path: format!("{}[{i}]", self.path) }).collect())
    }

    /// The first element of an array.
    fn first(&self) -> Result<Self, ProviderError> {
        self.elements()?.into_iter().next().ok_or_else(|| ProviderError::Missing { path: format!("{}[0]", self.path) })
    }

    /// Checks that the value is an object.
    fn object(self) -> Result<Self, ProviderError> {
        if self.value.is_object() { Ok(self) } else { Err(self.wrong_type("an object")) }
    }

    fn str(&self) -> Result<&'a str, ProviderError> {
        self.value.as_str().ok_or_else(|| self.wrong_type("a string"))
    }

    fn wrong_type(&self, expected: &'static str) -> ProviderError {
        ProviderError::WrongType { path: self.path.clone(), expected }
    }
}
