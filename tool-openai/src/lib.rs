//! A registry's tools, tool calls and tool results as [async-openai]'s typed values, for both
//! OpenAI APIs: [`chat`] (Chat Completions, `POST /v1/chat/completions`) and [`responses`]
//! (Responses, `POST /v1/responses`).
//!
//! Each module has the four conversions of an agent loop:
//!
//! | step | [`chat`] | [`responses`] |
//! |---|---|---|
//! | the request's `tools` | [`chat::tools`]: `Vec<ChatCompletionTools>` | [`responses::tools`]: `Vec<Tool>` |
//! | the response's tool calls | [`chat::tool_calls`]: `Vec<tool_runtime::ToolCall>` | [`responses::tool_calls`] |
//! | the model's turn, for the history | [`chat::assistant_message`] | [`responses::history`] |
//! | the tool results, for the next request | [`chat::tool_messages`] | [`responses::tool_outputs`] |
//!
//! and one function that does the last three for a turn ([`chat::answer`],
//! [`responses::answer`]). A Chat Completions loop:
//!
//! ```no_run
//! # async fn run(registry: tool_runtime::Registry, client: async_openai::Client<async_openai::config::OpenAIConfig>) -> Result<(), Box<dyn std::error::Error>> {
//! use async_openai::types::chat::{ChatCompletionRequestUserMessage, CreateChatCompletionRequestArgs};
//! use tool_runtime::ToolContext;
//!
//! let tools = tool_openai::chat::tools(registry.definitions())?;
//! let mut messages = vec![ChatCompletionRequestUserMessage::from("What is the capital of France?").into()];
//! for _turn in 0..8 {
//!     let request = CreateChatCompletionRequestArgs::default()
//!         .model("gpt-4.1")
//!         .messages(messages.clone())
//!         .tools(tools.clone())
//!         .build()?;
//!     let response = client.chat().create(request).await?;
//!     let message = &response.choices[0].message;
//!     let turn = tool_openai::chat::answer(&registry, message, &ToolContext::new()).await?;
//!     if turn.results.is_empty() {
//!         println!("{}", message.content.as_deref().unwrap_or_default());
//!         break;
//!     }
//!     messages.extend(turn.messages);
//! }
//! # Ok(()) }
//! ```
//!
//! The rules are the framework's own ([`tool_runtime::provider`]): the tool entries come from its
//! OpenAI projections, so strict mode is decided there; a call's arguments are kept as the raw
//! text the model sent (decoding happens in [`Registry::call`](tool_runtime::Registry::call), so
//! a key sent twice is still refused) and its id is the provider's.
//!
//! This crate depends only on async-openai's types (features `chat-completion-types` and
//! `response-types`, no HTTP client, no TLS); your own async-openai dependency picks the client
//! (`chat-completion`, `responses`) and the TLS feature. async-openai 0.43.
//!
//! [async-openai]: https://docs.rs/async-openai

pub mod chat;
pub mod responses;

use tool_runtime::provider::{ProjectionError, Provider, Rendering, Strict};
use tool_runtime::{ContentPart, MessageContent, ResourceContents, ToolDefinition, ToolMessage};

/// The rendering both APIs' [`tools`](chat::tools) use: strict mode wherever the schema allows
/// ([`Strict::WherePossible`]).
pub const RENDERING: Rendering = Rendering::DEFAULT.strict(Strict::WherePossible);

/// One tool as the framework projects it for `provider` (an OpenAI one) with `rendering`: its
/// parameters schema and its strict flag.
fn projected(
    provider: Provider,
    definition: &ToolDefinition,
    rendering: Rendering,
) -> Result<(serde_json::Value, bool), ProjectionError> {
    let mut entry = provider.render_tool_with(definition, rendering)?;
    // Chat nests the function under `function`; Responses has it at the top.
    let function = match entry.get_mut("function") {
        Some(function) => function.take(),
        None => entry,
    };
    let strict = function.get("strict").and_then(serde_json::Value::as_bool).unwrap_or(false);
    let parameters = function.get("parameters").cloned().unwrap_or_else(|| serde_json::json!({"type": "object"}));
    Ok((parameters, strict))
}

/// A part's image, as `(media type, base64 data, detail)`, when it is one: an image part, or an
/// embedded binary resource of an `image/*` type.
fn image_of(part: &ContentPart) -> Option<(&str, &str, Option<tool_runtime::ImageDetail>)> {
    match part {
        ContentPart::Image { data, media_type, detail } => Some((media_type, data, *detail)),
        ContentPart::Resource { media_type: Some(media_type), contents: ResourceContents::Blob(data), .. }
            if media_type.starts_with("image/") =>
        {
            Some((media_type, data, None))
        }
        _ => None,
    }
}

/// `data:<media_type>;base64,<data>`.
fn data_url(media_type: &str, data: &str) -> String {
    format!("data:{media_type};base64,{data}")
}

/// The parts of a message (a text message is one text part).
fn parts_of(message: &ToolMessage) -> Vec<ContentPart> {
    match &message.content {
        MessageContent::Text(text) => vec![ContentPart::text(text.clone())],
        MessageContent::Parts(parts) => parts.clone(),
    }
}

/// What one answered turn gives ([`chat::answer`], [`responses::answer`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Turn<M> {
    /// What to append to the history, in order: the model's turn, then the tool results.
    pub messages: Vec<M>,
    /// The tool results, one per call in call order (empty when the model made no call: it has
    /// answered).
    pub results: Vec<ToolMessage>,
    /// Why the loop should stop after this turn, when a tool ended the run or the permission
    /// policy stopped the turn ([`tool_runtime::TurnStop`]).
    pub stop: Option<tool_runtime::TurnStop>,
}

impl<M> Turn<M> {
    /// Runs `calls` as one turn ([`Registry::call_batch`](tool_runtime::Registry::call_batch)),
    /// after the model's own `history` entries, with `render` making the results' entries. No
    /// calls: `history` alone and no results.
    async fn run(
        registry: &tool_runtime::Registry,
        calls: &[tool_runtime::ToolCall],
        ctx: &tool_runtime::ToolContext,
        mut messages: Vec<M>,
        render: fn(&[ToolMessage]) -> Vec<M>,
    ) -> Self {
        if calls.is_empty() {
            return Self { messages, results: Vec::new(), stop: None };
        }
        let batch = registry.call_batch(calls, ctx).await;
        let stop = batch.stop.clone();
        let results = batch.into_messages();
        messages.extend(render(&results));
        Self { messages, results, stop }
    }
}
