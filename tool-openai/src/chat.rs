//! Chat Completions (`POST /v1/chat/completions`): async-openai's `types::chat` values.
//!
//! Source of the shapes: OpenAI's "Chat Completions" API reference (the `tool` message takes
//! text parts only), as [`Provider::OpenAiChat`]
//! documents them.

use async_openai::types::chat::{
    ChatCompletionMessageToolCalls, ChatCompletionRequestAssistantMessage,
    ChatCompletionRequestAssistantMessageContent, ChatCompletionRequestMessage,
    ChatCompletionRequestMessageContentPartImage, ChatCompletionRequestMessageContentPartText,
    ChatCompletionRequestToolMessage, ChatCompletionRequestToolMessageContent,
    ChatCompletionRequestToolMessageContentPart, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, ChatCompletionRequestUserMessageContentPart,
    ChatCompletionResponseMessage, ChatCompletionTool, ChatCompletionTools, FunctionObject, ImageDetail, ImageUrl,
};
use tool_runtime::provider::{ProjectionError, Provider, ProviderError, Rendering};
use tool_runtime::{ContentPart, MessageContent, Registry, ToolCall, ToolContext, ToolDefinition, ToolMessage};

use crate::{Turn, data_url, image_of, parts_of, projected};

/// The request's `tools`: one `ChatCompletionTools::Function` per definition, in order, with
/// [`RENDERING`](crate::RENDERING) (strict mode wherever the schema allows). See
/// [`tools_with`].
///
/// # Errors
/// The [`ProjectionError`] of the first tool that cannot be sent (a tool that asks for strict
/// mode with a schema that does not comply, a schema that is not an object).
pub fn tools(definitions: &[ToolDefinition]) -> Result<Vec<ChatCompletionTools>, ProjectionError> {
    tools_with(definitions, crate::RENDERING)
}

/// [`tools`] with the framework's [`Rendering`] choices, e.g. [`Rendering::DEFAULT`] for strict
/// mode only where a tool asks for it. Each entry is what
/// [`Provider::render_tool_with`] gives for OpenAI Chat: `name` and `description` of the
/// definition, `parameters` the canonical schema (or its strict form), `strict` set.
///
/// # Errors
/// As [`tools`].
pub fn tools_with(
    definitions: &[ToolDefinition],
    rendering: Rendering,
) -> Result<Vec<ChatCompletionTools>, ProjectionError> {
    definitions
        .iter()
        .map(|definition| {
            let (parameters, strict) = projected(Provider::OpenAiChat, definition, rendering)?;
            Ok(ChatCompletionTools::Function(ChatCompletionTool {
                function: FunctionObject {
                    name: definition.name.clone(),
                    description: Some(definition.description.clone()),
                    parameters: Some(parameters),
                    strict: Some(strict),
                },
            }))
        })
        .collect()
}

/// The tool calls of the model's message, in order: each call's `id`, function name and
/// `arguments` text exactly as sent (not parsed here). A message without `tool_calls` has none.
///
/// # Errors
/// [`ProviderError::Unsupported`] for a custom tool call (`type: "custom"`, whose input is free
/// text, not JSON arguments): the framework's tools are function tools, so such a call answers
/// no tool of the registry. The path is `tool_calls[i].type`.
pub fn tool_calls(message: &ChatCompletionResponseMessage) -> Result<Vec<ToolCall>, ProviderError> {
    let Some(calls) = &message.tool_calls else {
        return Ok(Vec::new());
    };
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| match call {
            ChatCompletionMessageToolCalls::Function(call) => {
                Ok(ToolCall::new(&call.id, &call.function.name, &call.function.arguments))
            }
            ChatCompletionMessageToolCalls::Custom(_) => Err(ProviderError::Unsupported {
                path: format!("tool_calls[{i}].type"),
                found: "\"custom\"".to_owned(),
                expected: "\"function\"",
            }),
        })
        .collect()
}

/// The model's message as the `assistant` message to append to the history: its content, its
/// refusal, its tool calls unchanged (ids and argument texts), and its audio's id. The API needs
/// this message before the `tool` messages that answer its calls.
pub fn assistant_message(message: &ChatCompletionResponseMessage) -> ChatCompletionRequestMessage {
    #[allow(deprecated)] // `function_call` is a deprecated field of the struct, left `None`
    let assistant = ChatCompletionRequestAssistantMessage {
        content: message.content.clone().map(ChatCompletionRequestAssistantMessageContent::Text),
        refusal: message.refusal.clone(),
        name: None,
        audio: message.audio.as_ref().map(|audio| {
            async_openai::types::chat::ChatCompletionRequestAssistantMessageAudio { id: audio.id.clone() }
        }),
        tool_calls: message.tool_calls.clone(),
        function_call: None,
    };
    ChatCompletionRequestMessage::Assistant(assistant)
}

/// The tool results as the messages of the next request, in order:
///
/// 1. one `tool` message per result, `tool_call_id` the call's id, `content` its text (a text
///    result) or its parts as text parts, each part's text projection
///    ([`ContentPart::as_text`]: an image reads `[image]`), as
///    [`Provider::render_tool_results`] renders them; an error is its text (the API has no error
///    flag);
/// 2. then, when any result holds images (image parts, or embedded `image/*` resources), one
///    `user` message that shows them, since a Chat Completions `tool` message cannot carry an
///    image: for each such result in order, a text part ``Images from tool call `<id>`
///    (`<tool>`):`` followed by its images as `image_url` parts with base64 data URLs
///    (`data:<media type>;base64,<data>`) and the part's detail.
///
/// Audio and other binary resources stay text projections (`[audio]`, `[resource <uri>]`).
pub fn tool_messages(messages: &[ToolMessage]) -> Vec<ChatCompletionRequestMessage> {
    let mut out: Vec<ChatCompletionRequestMessage> = messages.iter().map(tool_message).collect();
    let mut shown = Vec::new();
    for message in messages {
        let parts = parts_of(message);
        let images: Vec<_> = parts.iter().filter_map(image_of).collect();
        if images.is_empty() {
            continue;
        }
        shown.push(ChatCompletionRequestUserMessageContentPart::Text(text_part(format!(
            "Images from tool call `{}` (`{}`):",
            message.tool_call_id, message.tool_name
        ))));
        for (media_type, data, detail) in images {
            shown.push(ChatCompletionRequestUserMessageContentPart::ImageUrl(
                ChatCompletionRequestMessageContentPartImage {
                    image_url: ImageUrl { url: data_url(media_type, data), detail: detail.map(image_detail) },
                    prompt_cache_breakpoint: None,
                },
            ));
        }
    }
    if !shown.is_empty() {
        out.push(ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
            content: ChatCompletionRequestUserMessageContent::Array(shown),
            name: None,
        }));
    }
    out
}

fn tool_message(message: &ToolMessage) -> ChatCompletionRequestMessage {
    let content = match &message.content {
        MessageContent::Text(text) => ChatCompletionRequestToolMessageContent::Text(text.clone()),
        MessageContent::Parts(parts) => ChatCompletionRequestToolMessageContent::Array(
            parts
                .iter()
                .map(|part| {
                    ChatCompletionRequestToolMessageContentPart::Text(text_part(
                        ContentPart::as_text(part).into_owned(),
                    ))
                })
                .collect(),
        ),
    };
    ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
        content,
        tool_call_id: message.tool_call_id.clone(),
    })
}

fn text_part(text: String) -> ChatCompletionRequestMessageContentPartText {
    ChatCompletionRequestMessageContentPartText { text, prompt_cache_breakpoint: None }
}

fn image_detail(detail: tool_runtime::ImageDetail) -> ImageDetail {
    match detail {
        tool_runtime::ImageDetail::Auto => ImageDetail::Auto,
        tool_runtime::ImageDetail::Low => ImageDetail::Low,
        tool_runtime::ImageDetail::High => ImageDetail::High,
    }
}

/// One turn of the loop: the model's `message` answered. Reads its tool calls
/// ([`tool_calls`]), runs them as one turn ([`Registry::call_batch`]: concurrently where the
/// tools allow, each failure an error result), and gives the messages to append to the history:
/// [`assistant_message`] then [`tool_messages`]. A message without tool calls gives
/// [`Turn::results`] empty and only the assistant message: the model has answered.
///
/// # Errors
/// As [`tool_calls`]; then no call runs.
pub async fn answer(
    registry: &Registry,
    message: &ChatCompletionResponseMessage,
    ctx: &ToolContext,
) -> Result<Turn<ChatCompletionRequestMessage>, ProviderError> {
    let calls = tool_calls(message)?;
    Ok(Turn::run(registry, &calls, ctx, vec![assistant_message(message)], tool_messages).await)
}
