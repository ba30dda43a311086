//! `toolbox list`: the tool definitions in one shape.

use clap::ValueEnum;
use serde_json::Value;
use tool_runtime::ToolDefinition;
use tool_runtime::provider::{Provider, Target};

use crate::setup::Setup;

/// The shapes `list --format` prints.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    /// The canonical `ToolDefinition`s.
    Canonical,
    /// OpenAI Chat Completions `tools`.
    OpenaiChat,
    /// OpenAI Responses `tools`.
    OpenaiResponses,
    /// OpenAI Chat Completions `tools` with strict mode wherever possible: a tool whose schema
    /// complies is sent `strict: true` with the strict form of its schema; one that does not, or
    /// that refuses strict mode (`#[tool(strict = false)]`), is sent `strict: false` with its
    /// canonical schema; a tool that asks for strict mode (`#[tool(strict)]`) but does not comply
    /// is an error.
    OpenaiStrict,
    /// Anthropic Messages `tools`.
    Anthropic,
    /// Gemini `tools` (one `functionDeclarations` entry).
    Gemini,
    /// The `tools` of an MCP `tools/list` result, as `toolbox mcp` serves them.
    Mcp,
}

/// The definitions of the tools that may run (see [`crate::policy`]), of the given sets, as
/// pretty-printed JSON.
///
/// # Errors
/// The registry's error (two tools with one name); for `openai-strict`, a tool that asks for strict
/// mode but whose schema does not comply (the tool and the schema path are named).
pub(crate) fn list(setup: &Setup, format: Format, sets: &[String]) -> Result<String, String> {
    let registry = setup.registry(sets, false)?;
    let definitions: Vec<ToolDefinition> = setup.policy().visible(&registry).into_iter().cloned().collect();
    let value = match format {
        Format::Canonical => serde_json::to_value(&definitions).map_err(|e| e.to_string())?,
        Format::OpenaiChat => Value::Array(Provider::OpenAiChat.render_tools(&definitions)),
        Format::OpenaiResponses => Value::Array(Provider::OpenAiResponses.render_tools(&definitions)),
        Format::OpenaiStrict => Value::Array(
            definitions
                .iter()
                .map(|definition| definition.for_provider(Target::OpenAiStrict))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{e}; remove `strict` from its `#[tool]` options or make the schema comply"))?,
        ),
        Format::Anthropic => Value::Array(Provider::Anthropic.render_tools(&definitions)),
        Format::Gemini => Value::Array(Provider::Gemini.render_tools(&definitions)),
        Format::Mcp => serde_json::to_value(definitions.iter().map(tool_mcp::tool_entry).collect::<Vec<_>>())
            .map_err(|e| e.to_string())?,
    };
    serde_json::to_string_pretty(&value).map_err(|e| e.to_string())
}
