//! `toolbox run RESPONSE.json`: replays the tool calls of a recorded provider response.

use std::path::Path;

use clap::ValueEnum;
use serde_json::Value;
use tool_runtime::provider::{Provider, Rendering};
use tool_runtime::search::{CALL_TOOL, SEARCH_TOOL};
use tool_runtime::{ToolCall, ToolMessage, TurnStop};

use crate::bars::Bars;
use crate::setup::Setup;

/// The providers `--provider` names.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ProviderArg {
    /// OpenAI Chat Completions.
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini generateContent.
    Gemini,
}

impl From<ProviderArg> for Provider {
    fn from(arg: ProviderArg) -> Self {
        match arg {
            ProviderArg::OpenaiChat => Provider::OpenAiChat,
            ProviderArg::OpenaiResponses => Provider::OpenAiResponses,
            ProviderArg::Anthropic => Provider::Anthropic,
            ProviderArg::Gemini => Provider::Gemini,
        }
    }
}

/// Reads the response body at `response` (`-`: standard input), parses its tool calls as
/// `provider` (default: detected from the body's shape), runs them as one turn in the session of
/// `setup` and returns the tool results in the provider's request shape, as pretty-printed JSON.
/// Progress reports are drawn as one bar per call on standard error when it is a terminal
/// ([`Bars`]).
///
/// The turn runs through [`Registry::call_batch`](tool_runtime::Registry::call_batch), as an agent
/// loop runs it: `#[tool(sequential)]` tools run alone, the output layer's turn budget
/// (`TOOL_MAX_TURN_BYTES`, see [`OutputLayer::from_env`](tool_runtime::output::OutputLayer::from_env))
/// is shared across the results, and a turn that asks to stop (a `done` call) is reported on
/// standard error (`toolbox: the turn asks to stop: ...`) after the results are printed. A call of
/// a tool that is off is refused by the registry's policy ([`crate::policy`]).
///
/// Tool search (see `--defer`): an Anthropic `tool_use` of `search_tools` is answered with
/// `tool_reference` blocks in the same user message as the other results, an OpenAI Responses
/// `tool_search_call` (client execution) with a `tool_search_output` item, and the meta-tool
/// calls (`search_tools`, `call_tool`) of the other providers by
/// `Registry::call_with_search_where` (its search finds only tools the policy lets run), one
/// after another, outside the batch (its turn budget covers the other calls).
///
/// # Errors
/// The file cannot be read or is not JSON, the provider cannot be detected, the calls cannot be
/// read from the body (the JSON path is named), or the root is unusable.
pub(crate) fn run(setup: &Setup, response: &Path, provider: Option<Provider>) -> Result<String, String> {
    let text = if response.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("cannot read standard input: {e}"))?
    } else {
        std::fs::read_to_string(response).map_err(|e| format!("cannot read {}: {e}", response.display()))?
    };
    let body: Value = serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", response.display()))?;
    let provider = match provider {
        Some(provider) => provider,
        None => Provider::detect(&body).ok_or_else(|| {
            format!(
                "{} is not an OpenAI Chat Completions, OpenAI Responses, Anthropic Messages or Gemini response; \
                 pass --provider to say which",
                response.display()
            )
        })?,
    };
    let searches = provider.parse_search_calls(&body).map_err(|e| e.to_string())?;
    let mut calls = provider.parse_tool_calls(&body).map_err(|e| e.to_string())?;
    if provider == Provider::Anthropic {
        // Its client search calls are answered as searches, with `tool_reference` blocks.
        calls.retain(|call| call.name != SEARCH_TOOL);
    }
    let is_meta = |call: &ToolCall| call.name == SEARCH_TOOL || call.name == CALL_TOOL;
    let (meta, plain): (Vec<ToolCall>, Vec<ToolCall>) = calls.iter().cloned().partition(is_meta);
    let runtime = crate::setup::runtime()?;
    setup.connect_imports(&runtime)?;
    let registry = setup.calling_registry(&[])?;
    let bars = Bars::for_stderr();
    let ctx = match &bars {
        Some(bars) => bars.listen(setup.context()?),
        None => setup.context()?,
    }
    .build();
    let (batch, meta) = runtime.block_on(async {
        let batch = registry.call_batch(&plain, &ctx).await;
        let mut answers = Vec::with_capacity(meta.len());
        for call in &meta {
            answers.push(registry.call_with_search_where(call, &ctx, &|d| setup.policy().refusal(d).is_none()).await);
        }
        setup.close_imports().await;
        (batch, answers)
    });
    if let Some(bars) = bars {
        bars.clear();
    }
    if let Some(stop) = &batch.stop {
        eprintln!("toolbox: the turn asks to stop: {}", describe_stop(stop));
    }
    // The messages in the order of the calls.
    let (mut plain_messages, mut meta_messages) = (batch.messages.into_iter(), meta.into_iter());
    let messages: Vec<ToolMessage> = calls
        .iter()
        .filter_map(|call| if is_meta(call) { meta_messages.next() } else { plain_messages.next() })
        .collect();
    let results =
        provider.render_turn_results(&registry, Rendering::DEFAULT, &searches, &messages).map_err(|e| e.to_string())?;
    serde_json::to_string_pretty(&results).map_err(|e| e.to_string())
}

/// The stop of a turn, for standard error.
fn describe_stop(stop: &TurnStop) -> String {
    match stop {
        TurnStop::Done { tool_call_id, message } => format!("call `{tool_call_id}` finished the run: {message}"),
        TurnStop::Denied { tool_call_id, tool_name, reason } => {
            format!("call `{tool_call_id}` of `{tool_name}` was denied: {reason}")
        }
        other => format!("{other:?}"),
    }
}
