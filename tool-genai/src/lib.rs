//! A registry's tools, tool calls and tool results as [genai]'s typed values: one typed path to
//! OpenAI, Anthropic, Gemini and the other providers genai speaks to.
//!
//! | step | function |
//! |---|---|
//! | the request's tools (`ChatRequest::with_tools`) | [`tools`]: `Vec<genai::chat::Tool>` |
//! | the response's tool calls | [`tool_calls`]: `Vec<tool_runtime::ToolCall>` |
//! | the model's turn, for the history | [`assistant_message`] |
//! | the tool results, for the next request | [`tool_messages`] |
//! | the last three for one turn | [`answer`] |
//!
//! ```no_run
//! # async fn run(registry: tool_runtime::Registry) -> Result<(), Box<dyn std::error::Error>> {
//! use genai::chat::{ChatMessage, ChatRequest};
//! use tool_runtime::ToolContext;
//!
//! let client = genai::Client::builder().build()?; // the key from ANTHROPIC_API_KEY, GEMINI_API_KEY, ...
//! let mut request = ChatRequest::new(vec![ChatMessage::user("What is the capital of France?")])
//!     .with_tools(tool_genai::tools(registry.definitions()));
//! for _turn in 0..8 {
//!     let response = client.exec_chat("claude-sonnet-4-5", request.clone(), None).await?;
//!     let turn = tool_genai::answer(&registry, &response, &ToolContext::new()).await;
//!     if turn.results.is_empty() {
//!         println!("{}", response.first_text().unwrap_or_default());
//!         break;
//!     }
//!     request = request.append_messages(turn.messages);
//! }
//! # Ok(()) }
//! ```
//!
//! What genai decides, and so this crate cannot:
//!
//! - **Argument text.** genai hands over a call's arguments parsed (`fn_arguments`, a JSON
//!   value); [`tool_calls`] writes that value back as compact JSON text. For Anthropic and Gemini,
//!   whose wire already carries an object, that is what the framework's own parser does
//!   ([`Provider::parse_tool_calls`](tool_runtime::provider::Provider::parse_tool_calls)). For
//!   OpenAI-style providers the raw string is lost: a key the model sent twice reaches the tool
//!   with its last value instead of being refused, and arguments that are not JSON fail genai's
//!   whole response (`exec_chat` returns an error) instead of giving the model an error result.
//!   Use `tool-openai` for OpenAI when that matters.
//! - **Error flag.** genai's tool response is text only, with no error flag: an error result
//!   reaches Anthropic without `is_error` and Gemini as `{"name": tool, "content": text}`; its text says
//!   what failed.
//! - **Schema.** [`tools`] sends each tool's canonical JSON Schema; genai places it per provider
//!   (Anthropic's `input_schema`, Gemini's `parametersJsonSchema`, OpenAI's `parameters`) and
//!   adapts it for strict mode.
//!
//! This crate turns no genai feature on: your own genai dependency picks the TLS feature (its
//! default, `rustls-tls`). genai 0.7.
//!
//! [genai]: https://docs.rs/genai

use genai::chat::{
    Binary, ChatMessage, ChatResponse, ContentPart as GenaiPart, MessageContent as GenaiContent, Tool, ToolResponse,
};
use tool_runtime::{
    ContentPart, MessageContent, Registry, ResourceContents, ToolCall, ToolContext, ToolDefinition, ToolMessage,
    TurnStop,
};

/// The request's tools, in order: each tool's `name`, `description` and canonical JSON Schema
/// (`schema`, [`ToolDefinition::input_schema`]), and `strict` only for a tool that declares it
/// (`#[tool(strict)]` gives `Some(true)`, `#[tool(strict = false)]` `Some(false)`, otherwise
/// `None`: the provider's default).
pub fn tools(definitions: &[ToolDefinition]) -> Vec<Tool> {
    definitions
        .iter()
        .map(|definition| {
            let mut tool = Tool::new(definition.name.as_str())
                .with_description(definition.description.as_str())
                .with_schema(definition.input_schema.clone());
            tool.strict = definition.strict;
            tool
        })
        .collect()
}

/// The tool calls of a response, in order: each call's `call_id` (the provider's id; for Gemini,
/// which gives none, the one genai made), `fn_name`, and `fn_arguments` as compact JSON text (a
/// string value, which genai keeps for arguments it accumulated from a stream, is taken as the
/// text itself). See the crate docs on what genai's parsing loses.
pub fn tool_calls(response: &ChatResponse) -> Vec<ToolCall> {
    response
        .tool_calls()
        .into_iter()
        .map(|call| {
            let arguments = match &call.fn_arguments {
                serde_json::Value::String(text) => text.clone(),
                value => value.to_string(),
            };
            ToolCall::new(&call.call_id, &call.fn_name, arguments)
        })
        .collect()
}

/// The model's turn as the assistant message to append to the history: its whole content (text,
/// tool calls, Gemini's thought signatures) and reasoning, as genai's
/// `ChatResponse::into_assistant_message_for_tool_use` keeps them; a response without tool
/// calls gives an assistant message of its content.
pub fn assistant_message(response: &ChatResponse) -> ChatMessage {
    response
        .clone()
        .into_assistant_message_for_tool_use()
        .unwrap_or_else(|| ChatMessage::assistant(response.content.clone()))
}

/// The tool results as the messages of the next request:
///
/// 1. one `tool` message holding a tool response per result, in order: `call_id` the call's id,
///    `fn_name` the tool's name (Gemini's function response needs it), `content` the result's
///    text projection ([`ToolMessage::text`]: parts joined by newlines, an image `[image]`);
/// 2. then, when any result holds images (image parts, or embedded `image/*` resources), one
///    `user` message that shows them, since genai's tool response is text only: for each such
///    result, a text part ``Images from tool call `<id>` (`<tool>`):`` and its images as base64
///    binary parts.
///
/// No results, no messages.
pub fn tool_messages(messages: &[ToolMessage]) -> Vec<ChatMessage> {
    if messages.is_empty() {
        return Vec::new();
    }
    let responses: Vec<ToolResponse> = messages
        .iter()
        .map(|m| ToolResponse::new(&m.tool_call_id, m.text().into_owned()).with_fn_name(&m.tool_name))
        .collect();
    let mut out = vec![ChatMessage::from(responses)];
    let mut shown: Vec<GenaiPart> = Vec::new();
    for message in messages {
        let MessageContent::Parts(parts) = &message.content else { continue };
        let images: Vec<(&str, &str)> = parts.iter().filter_map(image_of).collect();
        if images.is_empty() {
            continue;
        }
        shown.push(GenaiPart::from_text(format!(
            "Images from tool call `{}` (`{}`):",
            message.tool_call_id, message.tool_name
        )));
        shown.extend(
            images.into_iter().map(|(media_type, data)| GenaiPart::from(Binary::from_base64(media_type, data, None))),
        );
    }
    if !shown.is_empty() {
        out.push(ChatMessage::user(GenaiContent::from(shown)));
    }
    out
}

/// A part's image as `(media type, base64 data)`: an image part or an embedded `image/*` blob.
fn image_of(part: &ContentPart) -> Option<(&str, &str)> {
    match part {
        ContentPart::Image { data, media_type, .. } => Some((media_type, data)),
        ContentPart::Resource { media_type: Some(media_type), contents: ResourceContents::Blob(data), .. }
            if media_type.starts_with("image/") =>
        {
            Some((media_type, data))
        }
        _ => None,
    }
}

/// What one answered turn gives ([`answer`]).
#[derive(Debug, Clone)]
pub struct Turn {
    /// What to append to the request (`ChatRequest::append_messages`), in order: the model's turn,
    /// then the tool results.
    pub messages: Vec<ChatMessage>,
    /// The tool results, one per call in call order (empty when the model made no call: it has
    /// answered).
    pub results: Vec<ToolMessage>,
    /// Why the loop should stop after this turn, when a tool ended the run or the permission
    /// policy stopped the turn.
    pub stop: Option<TurnStop>,
}

/// One turn of the loop: the `response` answered. Reads its tool calls ([`tool_calls`]), runs
/// them as one turn ([`Registry::call_batch`]: concurrently where the tools allow, each failure
/// an error result), and gives [`assistant_message`] then [`tool_messages`]. A response without
/// tool calls gives [`Turn::results`] empty and only the assistant message.
pub async fn answer(registry: &Registry, response: &ChatResponse, ctx: &ToolContext) -> Turn {
    let calls = tool_calls(response);
    let mut messages = vec![assistant_message(response)];
    if calls.is_empty() {
        return Turn { messages, results: Vec::new(), stop: None };
    }
    let batch = registry.call_batch(&calls, ctx).await;
    let stop = batch.stop.clone();
    let results = batch.into_messages();
    messages.extend(tool_messages(&results));
    Turn { messages, results, stop }
}
