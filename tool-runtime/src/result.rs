//! What a tool returns ([`ToolResult`]) and what the model gets back ([`ToolMessage`]).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// One piece of multimodal tool output.
///
/// Parts stay structured through every layer: providers that accept a kind of part in tool results
/// get it, the others get its text projection ([`ContentPart::as_text`]);
/// [`Provider::render_tool_results`](crate::provider::Provider::render_tool_results) says which
/// provider takes which kind.
///
/// The kinds follow the MCP content blocks (`text`, `image`, `audio`, `resource`,
/// `resource_link`); serialised with `type` as the tag in snake_case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Plain UTF-8 text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded (standard alphabet, padded).
    Image {
        /// The image bytes in base64.
        data: String,
        /// The MIME type, e.g. `image/png`.
        media_type: String,
        /// How closely the model should look, when the tool was asked for it; providers that take
        /// a detail hint (OpenAI Responses `input_image.detail`) get it, the others ignore it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<ImageDetail>,
    },
    /// Audio, base64-encoded (standard alphabet, padded).
    Audio {
        /// The audio bytes in base64.
        data: String,
        /// The MIME type, e.g. `audio/wav`.
        media_type: String,
    },
    /// The contents of a resource, embedded in the result (MCP `resource` block).
    Resource {
        /// The resource's URI, e.g. `file:///notes.md`.
        uri: String,
        /// The MIME type, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
        /// The contents: text or base64 bytes.
        contents: ResourceContents,
    },
    /// A reference to a resource the client may read itself (MCP `resource_link` block).
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// The resource's programmatic name.
        name: String,
        /// A human-readable title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// What the resource is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// The MIME type, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
}

/// The contents of an embedded resource ([`ContentPart::Resource`]); serialised as
/// `{"text": ..}` or `{"blob": ..}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceContents {
    /// UTF-8 text.
    Text(String),
    /// Bytes in base64 (standard alphabet, padded).
    Blob(String),
}

/// How closely the model should look at an image: a provider hint (OpenAI's `detail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImageDetail {
    /// Let the provider choose (the default).
    #[default]
    #[schemars(description = "")]
    Auto,
    /// A low-resolution look (cheaper).
    #[schemars(description = "cheaper")]
    Low,
    /// Full resolution.
    #[schemars(description = "full resolution")]
    High,
}

impl ImageDetail {
    /// `auto`, `low` or `high`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Low => "low",
            Self::High => "high",
        }
    }
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image part without a detail hint.
    pub fn image(data: impl Into<String>, media_type: impl Into<String>) -> Self {
        Self::Image { data: data.into(), media_type: media_type.into(), detail: None }
    }

    /// An audio part: base64 `data` of type `media_type` (e.g. `audio/wav`).
    pub fn audio(data: impl Into<String>, media_type: impl Into<String>) -> Self {
        Self::Audio { data: data.into(), media_type: media_type.into() }
    }

    /// An embedded text resource.
    pub fn resource_text(uri: impl Into<String>, media_type: Option<String>, text: impl Into<String>) -> Self {
        Self::Resource { uri: uri.into(), media_type, contents: ResourceContents::Text(text.into()) }
    }

    /// An embedded binary resource: `blob` is base64.
    pub fn resource_blob(uri: impl Into<String>, media_type: Option<String>, blob: impl Into<String>) -> Self {
        Self::Resource { uri: uri.into(), media_type, contents: ResourceContents::Blob(blob.into()) }
    }

    /// A link to a resource, with no title, description or MIME type.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ResourceLink { uri: uri.into(), name: name.into(), title: None, description: None, media_type: None }
    }

    /// The text the output layer caps, counts against the turn budget and stores as the
    /// message's text: a text part's, or an embedded text resource's. `None` for images, audio,
    /// binary resources and resource links, which stay in place as they are.
    pub(crate) fn capped_text_mut(&mut self) -> Option<&mut String> {
        match self {
            Self::Text { text } | Self::Resource { contents: ResourceContents::Text(text), .. } => Some(text),
            _ => None,
        }
    }

    /// The text of [`capped_text_mut`](Self::capped_text_mut), read only.
    pub(crate) fn capped_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } | Self::Resource { contents: ResourceContents::Text(text), .. } => Some(text),
            _ => None,
        }
    }

    /// The part's text projection, what a model that cannot take the part sees in its place:
    ///
    /// - text: the text itself;
    /// - image: `[image]`; audio: `[audio]`;
    /// - embedded text resource: its text; embedded binary resource: `[resource <uri>]`;
    /// - resource link: `[resource link <uri>]`.
    pub fn as_text(&self) -> Cow<'_, str> {
        match self {
            Self::Text { text } | Self::Resource { contents: ResourceContents::Text(text), .. } => Cow::Borrowed(text),
            Self::Image { .. } => Cow::Borrowed("[image]"),
            Self::Audio { .. } => Cow::Borrowed("[audio]"),
            Self::Resource { uri, contents: ResourceContents::Blob(_), .. } => Cow::Owned(format!("[resource {uri}]")),
            Self::ResourceLink { uri, .. } => Cow::Owned(format!("[resource link {uri}]")),
        }
    }
}

/// The successful output of a tool, before it becomes a [`ToolMessage`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum ToolResult {
    /// Plain text, shown to the model as is.
    Text(String),
    /// Multimodal parts (text, images, audio, embedded resources, resource links), kept in order.
    Parts(Vec<ContentPart>),
    /// A JSON value; the model sees its compact serialisation (keys sorted, the order of
    /// `serde_json::Value`'s maps), and an object is kept as the message's
    /// [`structured_content`](ToolMessage::structured_content).
    Json(serde_json::Value),
    /// The run is over: the final message, shown as text; the [`ToolMessage`] has `done: true`
    /// and [`Registry::call_batch`](crate::Registry::call_batch) reports it in
    /// [`Batch::stop`](crate::Batch::stop) so that the agent loop stops.
    Done(String),
    /// Content for the model together with a JSON value for programs, as an MCP tool with an
    /// output schema answers (`content` and `structuredContent`, e.g. a tool imported from another
    /// MCP server): the model sees `content` (one text part as plain text; with no part at all,
    /// the compact JSON text of `value`), and an object `value` is kept as the message's
    /// [`structured_content`](ToolMessage::structured_content).
    Structured {
        /// What the model sees.
        content: Vec<ContentPart>,
        /// The structured value.
        value: serde_json::Value,
    },
    /// A result already in the output cache (streamed there by
    /// [`store_stream`](crate::output::store_stream)): the model sees `text`, and the message's
    /// [`ref_id`](ToolMessage::ref_id) is its `ref_id`; the output layer does not store it again.
    Stored(StoredResult),
}

/// A result the output layer stored as it was produced ([`ToolResult::Stored`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredResult {
    /// The ref id of the whole output in the output cache.
    pub ref_id: String,
    /// What the model sees: the whole text, or its head and tail around a marker naming `ref_id`.
    pub text: String,
    /// `true` when `text` is not the whole output.
    pub cut: bool,
}

impl ToolResult {
    /// A text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// The signal that ends the run, with the final message for the user.
    pub fn done(message: impl Into<String>) -> Self {
        Self::Done(message.into())
    }
}

/// The content of a [`ToolMessage`]: plain text, or parts when the result had images.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// Text (also the compact JSON of a [`ToolResult::Json`]).
    Text(String),
    /// Multimodal parts, in order.
    Parts(Vec<ContentPart>),
}

/// The result of one tool call, ready to go back to the model.
///
/// Every call produces exactly one message, success or failure: failures the model can act on
/// (unknown tool, arguments that do not decode, a tool returning `Err`, a panic) are messages with
/// `is_error: true` whose text says what to change.
///
/// Two messages are equal when every field but [`error_kind`](ToolMessage::error_kind) and
/// [`approval`](ToolMessage::approval) is: the kind classifies the failure the text already
/// states, so a message built by hand with [`ToolMessage::error`] equals the registry's message of
/// the same text whatever its kind; an approval's token is fresh on every refusal.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolMessage {
    /// The id of the [`ToolCall`](crate::ToolCall) this message answers.
    pub tool_call_id: String,
    /// The name of the tool that was called (as the model spelled it, also when unknown).
    pub tool_name: String,
    /// What the model sees.
    pub content: MessageContent,
    /// `true` when the call failed; the text then says why and what to change.
    pub is_error: bool,
    /// The id under which the full output is kept in the output cache, when one is attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_id: Option<String>,
    /// `true` when the content was cut by the output layer (the full text is under `ref_id`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trimmed: bool,
    /// `true` when the tool ended the run ([`ToolResult::Done`]); the content is the final message.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub done: bool,
    /// The result value itself when the tool returned a JSON object as a [`ToolResult::Json`]
    /// (what a `#[tool(output_schema)]` function's result becomes); `content` then holds its
    /// compact text. `None` for other JSON values (numbers, arrays, ...: their text says it all,
    /// and MCP's `structuredContent` is an object), text, parts and errors, and for the
    /// `Serialize` results of `#[tool]` functions without an output schema, which are serialised
    /// straight to text (nothing reads the value: MCP sends `structuredContent` only for a tool
    /// with an output schema). The output layer cuts
    /// `content` only, never this value. MCP sends it as `structuredContent` for a tool with an
    /// output schema ([`ToolDefinition::output_schema`](crate::ToolDefinition::output_schema)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<serde_json::Value>,
    /// The kind of failure of an error result (`Some` exactly when `is_error`): what
    /// [`Registry::call`](crate::Registry::call) met ([`ToolError::kind`](crate::ToolError::kind)),
    /// [`ToolErrorKind::Failed`](crate::ToolErrorKind::Failed) for a message made with
    /// [`ToolMessage::error`]. For code beside
    /// the model (an agent framework's error kinds, a retry policy); the model reads the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<crate::ToolErrorKind>,
    /// For the host, never the model: when a call of a tool that needs approval was refused for
    /// want of an approval token ([`ApprovalProblem::Missing`](crate::ApprovalProblem::Missing)),
    /// the preview and the token that approves exactly that call ([`crate::approvals`]). `None`
    /// for every other message. A provider projection, the output cache and the spans read
    /// `content` only, so the token reaches none of them; it is not serialised either (a message
    /// written to a store or a log does not carry it) and `Debug` redacts it.
    #[serde(skip)]
    pub approval: Option<Box<crate::ApprovalRequest>>,
}

impl PartialEq for ToolMessage {
    fn eq(&self, other: &Self) -> bool {
        // Every field but `error_kind` and `approval` (a fresh token each time), spelled out so that
        // a new field is not forgotten here.
        let Self {
            tool_call_id,
            tool_name,
            content,
            is_error,
            ref_id,
            trimmed,
            done,
            structured_content,
            error_kind: _,
            approval: _,
        } = self;
        *tool_call_id == other.tool_call_id
            && *tool_name == other.tool_name
            && *content == other.content
            && *is_error == other.is_error
            && *ref_id == other.ref_id
            && *trimmed == other.trimmed
            && *done == other.done
            && *structured_content == other.structured_content
    }
}

impl Eq for ToolMessage {}

impl ToolMessage {
    /// A successful message from a tool result; JSON results become their compact text (a JSON
    /// object is also kept as [`structured_content`](ToolMessage::structured_content)).
    pub fn success(tool_call_id: impl Into<String>, tool_name: impl Into<String>, result: ToolResult) -> Self {
        let done = matches!(result, ToolResult::Done(_));
        let mut structured_content = None;
        let (mut ref_id, mut trimmed) = (None, false);
        let content = match result {
            ToolResult::Text(text) | ToolResult::Done(text) => MessageContent::Text(text),
            ToolResult::Stored(stored) => {
                (ref_id, trimmed) = (Some(stored.ref_id), stored.cut);
                MessageContent::Text(stored.text)
            }
            ToolResult::Parts(parts) => MessageContent::Parts(parts),
            ToolResult::Json(value) => {
                let text = MessageContent::Text(value.to_string());
                structured_content = value.is_object().then_some(value);
                text
            }
            ToolResult::Structured { mut content, value } => {
                let shown = match content.len() {
                    0 => MessageContent::Text(value.to_string()),
                    1 if matches!(content[0], ContentPart::Text { .. }) => match content.remove(0) {
                        ContentPart::Text { text } => MessageContent::Text(text),
                        other => MessageContent::Parts(vec![other]),
                    },
                    _ => MessageContent::Parts(content),
                };
                structured_content = value.is_object().then_some(value);
                shown
            }
        };
        Self {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            content,
            is_error: false,
            ref_id,
            trimmed,
            done,
            structured_content,
            error_kind: None,
            approval: None,
        }
    }

    /// An error message (`is_error: true`) with the given text, of kind
    /// [`ToolErrorKind::Failed`](crate::ToolErrorKind::Failed) (see [`ToolMessage::with_error_kind`]).
    pub fn error(tool_call_id: impl Into<String>, tool_name: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            content: MessageContent::Text(text.into()),
            is_error: true,
            ref_id: None,
            trimmed: false,
            done: false,
            structured_content: None,
            error_kind: Some(crate::ToolErrorKind::Failed),
            approval: None,
        }
    }

    /// This message with [`error_kind`](ToolMessage::error_kind) `kind` when it is an error
    /// result; a success is returned unchanged (it has no kind).
    #[must_use]
    pub fn with_error_kind(mut self, kind: crate::ToolErrorKind) -> Self {
        if self.is_error {
            self.error_kind = Some(kind);
        }
        self
    }

    /// The text projection of the content: the text, or the parts' text projections
    /// ([`ContentPart::as_text`]) joined by newlines.
    pub fn text(&self) -> Cow<'_, str> {
        match &self.content {
            MessageContent::Text(text) => Cow::Borrowed(text),
            MessageContent::Parts(parts) => {
                Cow::Owned(parts.iter().map(ContentPart::as_text).collect::<Vec<_>>().join("\n"))
            }
        }
    }
}

/// Conversion of a tool function's return value into a [`ToolResult`].
///
/// Implemented for `String`, `&str`, `()` (empty text), [`ToolResult`], [`ContentPart`] and
/// `Vec<ContentPart>`. `#[tool]` handles the other documented return types itself: any
/// `Serialize` type becomes its compact JSON text (a [`ToolResult::Text`], fields in the type's
/// order; a [`ToolResult::Structured`] when the tool declares `output_schema`, with that text and
/// the value kept as structured content), and `Result<T, E: Display>` becomes `T`'s result or an error
/// message with `E`'s text.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a `#[tool]` function as text",
    note = "return `String`, `&'static str`, `()`, `ToolResult`, `Vec<ContentPart>`, a `Serialize` type, or `Result` of one of these"
)]
pub trait IntoToolResult {
    /// Converts the value.
    fn into_tool_result(self) -> ToolResult;
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::Text(self)
    }
}

impl IntoToolResult for &str {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::Text(self.to_owned())
    }
}

impl IntoToolResult for Cow<'_, str> {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::Text(self.into_owned())
    }
}

impl IntoToolResult for () {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::Text(String::new())
    }
}

impl IntoToolResult for ToolResult {
    fn into_tool_result(self) -> ToolResult {
        self
    }
}

impl IntoToolResult for ContentPart {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::Parts(vec![self])
    }
}

impl IntoToolResult for Vec<ContentPart> {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::Parts(self)
    }
}
