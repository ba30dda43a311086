//! What a tool returns ([`ToolResult`]) and what the model gets back ([`ToolMessage`]).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// One piece of multimodal tool output.
///
/// Parts stay structured through every layer: providers that accept images in tool results get
/// the image, the text projection ([`ToolMessage::text`]) shows `[image]` in its place.
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

    /// The part's text projection: the text itself, or `[image]` for an image.
    pub fn as_text(&self) -> &str {
        match self {
            Self::Text { text } => text,
            Self::Image { .. } => "[image]",
        }
    }
}

/// The successful output of a tool, before it becomes a [`ToolMessage`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum ToolResult {
    /// Plain text, shown to the model as is.
    Text(String),
    /// Multimodal parts (text and images), kept in order.
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

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
                        image @ ContentPart::Image { .. } => MessageContent::Parts(vec![image]),
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
        }
    }

    /// An error message (`is_error: true`) with the given text.
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
        }
    }

    /// The text projection of the content: the text, or the parts' texts joined by newlines with
    /// `[image]` standing for each image.
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
/// order; a [`ToolResult::Json`] when the tool declares `output_schema`, so that the value is
/// kept as structured content), and `Result<T, E: Display>` becomes `T`'s result or an error
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
