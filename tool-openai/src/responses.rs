//! Responses (`POST /v1/responses`): async-openai's `types::responses` values.
//!
//! Source of the shapes: OpenAI's "Responses" API reference (`function_call` output items, the
//! `function_call_output` input item with its `input_text`, `input_image` and `input_file`
//! items), as [`Provider::OpenAiResponses`]
//! documents them.

use async_openai::types::responses::{
    FunctionCallOutput, FunctionCallOutputItemParam, FunctionTool, InputItem, Item, MessageItem, OutputItem,
    ProgramItemParam, ProgramOutputItemParam, ProgramOutputItemStatus, ProgramOutputStatus, Response, Tool,
    ToolCallCaller,
};
use tool_runtime::provider::{ProjectionError, Provider, ProviderError, Rendering};
use tool_runtime::{Registry, ToolCall, ToolContext, ToolDefinition, ToolMessage};

use crate::{Turn, projected};

/// The request's `tools`: one `Tool::Function` per definition, in order, with
/// [`RENDERING`](crate::RENDERING) (strict mode wherever the schema allows). See [`tools_with`].
///
/// # Errors
/// The [`ProjectionError`] of the first tool that cannot be sent.
pub fn tools(definitions: &[ToolDefinition]) -> Result<Vec<Tool>, ProjectionError> {
    tools_with(definitions, crate::RENDERING)
}

/// [`tools`] with the framework's [`Rendering`] choices. Each entry is what
/// [`Provider::render_tool_with`] gives for OpenAI Responses: `name`, `description`,
/// `parameters`, `strict` (always set: the API's default is `true`).
///
/// # Errors
/// As [`tools`].
pub fn tools_with(definitions: &[ToolDefinition], rendering: Rendering) -> Result<Vec<Tool>, ProjectionError> {
    definitions
        .iter()
        .map(|definition| {
            let (parameters, strict) = projected(Provider::OpenAiResponses, definition, rendering)?;
            Ok(Tool::Function(FunctionTool {
                name: definition.name.clone(),
                description: Some(definition.description.clone()),
                parameters: Some(parameters),
                strict: Some(strict),
                ..FunctionTool::default()
            }))
        })
        .collect()
}

/// The tool calls of a response, in output order: each `function_call` item's `call_id` (not its
/// `fc_...` item id), `name` and `arguments` text exactly as sent, and, for a call a program made
/// (programmatic tool calling: `caller` `{"type": "program", "caller_id": "prog_1"}`), the
/// program's `call_id` as [`ToolCall::caller`]; a `direct` caller, or none, leaves it `None`.
/// Other items (reasoning, messages, the program items, the hosted tools' calls) are not calls
/// for the client and are skipped here ([`history`] replays them).
///
/// # Errors
/// [`ProviderError::Unsupported`] for a `custom_tool_call` item (free-text input, not JSON
/// arguments; the framework's tools are function tools), path `output[i].type`.
pub fn tool_calls(response: &Response) -> Result<Vec<ToolCall>, ProviderError> {
    let mut calls = Vec::new();
    for (i, item) in response.output.iter().enumerate() {
        match item {
            OutputItem::FunctionCall(call) => {
                let parsed = ToolCall::new(&call.call_id, &call.name, &call.arguments);
                calls.push(match &call.caller {
                    Some(ToolCallCaller::Program(program)) => parsed.with_caller(&program.caller_id),
                    Some(ToolCallCaller::Direct) | None => parsed,
                });
            }
            OutputItem::CustomToolCall(_) => {
                return Err(ProviderError::Unsupported {
                    path: format!("output[{i}].type"),
                    found: "\"custom_tool_call\"".to_owned(),
                    expected: "\"function_call\"",
                });
            }
            _ => {}
        }
    }
    Ok(calls)
}

/// A response's output items as the input items to replay in the next request (when the
/// conversation is not kept by the server through `previous_response_id`), in order: messages,
/// `function_call` items (the calls the tool outputs answer, a program's call with its `caller`)
/// and reasoning items (which reasoning models need back beside their calls) unchanged; the
/// items of programmatic tool calling as their replay input items: `program` (`id`, `call_id`,
/// `code` and the opaque `fingerprint`, which the API requires back unchanged) and
/// `program_output` (`id`, `call_id`, `result`, `status`); any other item as the input item of
/// the same JSON shape.
///
/// # Errors
/// [`ProviderError::Unsupported`] for an output item that has no input form, path
/// `output[i].type`.
pub fn history(response: &Response) -> Result<Vec<InputItem>, ProviderError> {
    response
        .output
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let item = match item {
                OutputItem::Message(message) => Item::Message(MessageItem::Output(message.clone())),
                OutputItem::FunctionCall(call) => Item::FunctionCall(call.clone()),
                OutputItem::Reasoning(reasoning) => Item::Reasoning(reasoning.clone()),
                OutputItem::Program(program) => {
                    return Ok(InputItem::Program(ProgramItemParam {
                        id: program.id.clone(),
                        call_id: program.call_id.clone(),
                        code: program.code.clone(),
                        fingerprint: program.fingerprint.clone(),
                    }));
                }
                OutputItem::ProgramOutput(output) => {
                    return Ok(InputItem::ProgramOutput(ProgramOutputItemParam {
                        id: output.id.clone(),
                        call_id: output.call_id.clone(),
                        result: output.result.clone(),
                        status: match output.status {
                            ProgramOutputStatus::Completed => ProgramOutputItemStatus::Completed,
                            ProgramOutputStatus::Incomplete => ProgramOutputItemStatus::Incomplete,
                        },
                    }));
                }
                other => {
                    let value = serde_json::to_value(other).unwrap_or_default();
                    return serde_json::from_value::<InputItem>(value.clone()).map_err(|_| {
                        ProviderError::Unsupported {
                            path: format!("output[{i}].type"),
                            found: value.get("type").map_or_else(|| "null".to_owned(), ToString::to_string),
                            expected: "an item the Responses API takes back as input",
                        }
                    });
                }
            };
            Ok(InputItem::Item(item))
        })
        .collect()
}

/// The tool results as `function_call_output` input items, one per result in order, `call_id`
/// the call's id and `output` as [`Provider::render_tool_results`] renders it for the Responses
/// API: a text result is its text; parts are `input_text`, `input_image` (a base64 data URL and
/// the part's detail) and `input_file` items (an embedded non-image binary resource), audio and
/// resource links their text projection. An error is its text (the API has no error flag).
pub fn tool_outputs(messages: &[ToolMessage]) -> Vec<InputItem> {
    Provider::OpenAiResponses
        .render_tool_results(messages)
        .into_iter()
        .zip(messages)
        .map(|(rendered, message)| {
            // The framework renders the item's documented shape, which async-openai's type
            // reads; the text projection is the fallback should a later part kind not be read.
            let item = serde_json::from_value::<FunctionCallOutputItemParam>(rendered).unwrap_or_else(|_| {
                FunctionCallOutputItemParam {
                    call_id: Some(message.tool_call_id.clone()),
                    output: FunctionCallOutput::Text(message.text().into_owned()),
                    id: None,
                    status: None,
                    name: None,
                    namespace: None,
                    caller: None,
                }
            });
            InputItem::Item(Item::FunctionCallOutput(item))
        })
        .collect()
}

/// One turn of the loop: the `response` answered. Reads its tool calls ([`tool_calls`]), runs
/// them as one turn ([`Registry::call_batch`]) and gives the input items to append:
/// [`history`] of the response, then [`tool_outputs`]. A response without tool calls gives
/// [`Turn::results`] empty: the model has answered.
///
/// # Errors
/// As [`tool_calls`] and [`history`]; then no call runs.
pub async fn answer(
    registry: &Registry,
    response: &Response,
    ctx: &ToolContext,
) -> Result<Turn<InputItem>, ProviderError> {
    let calls = tool_calls(response)?;
    Ok(Turn::run(registry, &calls, ctx, history(response)?, tool_outputs).await)
}
