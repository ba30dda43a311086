//! `toolbox list`: the tool definitions in one shape.

use clap::ValueEnum;
use serde_json::Value;
use tool_runtime::ToolDefinition;
use tool_runtime::provider::{Deferral, GeminiParameters, Provider, Rendering, Strict};
use tool_runtime::search::meta_tool_definitions;

use crate::setup::Setup;

/// The shapes `list --format` prints.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    /// The canonical `ToolDefinition`s.
    Canonical,
    /// OpenAI Chat Completions `tools`: `strict: true` for a tool that asks for strict mode
    /// (`#[tool(strict)]`), `strict: false` for the others.
    OpenaiChat,
    /// OpenAI Responses `tools`, strict mode as for `openai-chat`.
    OpenaiResponses,
    /// OpenAI Chat Completions `tools` with strict mode wherever possible: a tool whose schema
    /// complies is sent `strict: true` with the strict form of its schema; one that does not, or
    /// that refuses strict mode (`#[tool(strict = false)]`), is sent `strict: false` with its
    /// canonical schema; a tool that asks for strict mode (`#[tool(strict)]`) but does not comply
    /// is an error.
    OpenaiStrict,
    /// Anthropic Messages `tools`.
    Anthropic,
    /// Gemini `tools` (one `functionDeclarations` entry), each tool's `parameters` in the OpenAPI
    /// 3.0 subset the Gemini API takes.
    Gemini,
    /// Gemini `tools` as `gemini` but with `parametersJsonSchema`: the canonical JSON Schema as
    /// it is (`anyOf`, `$ref`, `additionalProperties`, every bound), what gemini-cli sends; left
    /// out for a tool without parameters.
    GeminiJsonSchema,
    /// The `tools` of an MCP `tools/list` result, as `toolbox mcp` serves them.
    Mcp,
}

/// The definitions of the tools that may run (see [`crate::policy`]), of the given sets, as
/// pretty-printed JSON. With `--defer`, each provider format is the first request's `tools`
/// (`tool_runtime::provider::Provider::render_deferred_tools`, client-run search), `mcp` lists
/// the tools not deferred and the two meta-tools, and `canonical` still lists every tool.
///
/// # Errors
/// The registry's error (two tools with one name); a tool the provider cannot take (the tool and
/// the schema path are named), for OpenAI a tool that asks for strict mode (`#[tool(strict)]`) but
/// whose schema does not comply. Every OpenAI format honours `#[tool(strict)]`.
pub(crate) fn list(setup: &Setup, format: Format, sets: &[String]) -> Result<String, String> {
    let runtime = crate::setup::runtime()?;
    setup.connect_imports(&runtime)?;
    let registry = setup.registry(sets, false);
    runtime.block_on(setup.close_imports());
    let registry = registry?;
    let definitions: Vec<ToolDefinition> = setup.policy().visible(&registry).into_iter().cloned().collect();
    let deferred = |name: &str| registry.is_deferred(name);
    // A rendering error: for OpenAI, a tool that asks for strict mode its schema cannot take.
    let rendered = |provider: Provider, rendering: Rendering| {
        let tools = provider.render_deferred_tools(&definitions, deferred, rendering, &Deferral::default());
        tools.map(Value::Array).map_err(|e| match provider {
            Provider::OpenAiChat | Provider::OpenAiResponses => {
                format!("{e}; remove `strict` from its `#[tool]` options or make the schema comply")
            }
            _ => e.to_string(),
        })
    };
    let value = match format {
        Format::Canonical => serde_json::to_value(&definitions).map_err(|e| e.to_string())?,
        Format::OpenaiChat => rendered(Provider::OpenAiChat, Rendering::DEFAULT)?,
        Format::OpenaiResponses => rendered(Provider::OpenAiResponses, Rendering::DEFAULT)?,
        Format::OpenaiStrict => rendered(Provider::OpenAiChat, Rendering::DEFAULT.strict(Strict::WherePossible))?,
        Format::Anthropic => rendered(Provider::Anthropic, Rendering::DEFAULT)?,
        Format::Gemini => rendered(Provider::Gemini, Rendering::DEFAULT)?,
        Format::GeminiJsonSchema => {
            rendered(Provider::Gemini, Rendering::DEFAULT.gemini(GeminiParameters::JsonSchema))?
        }
        Format::Mcp => {
            let meta: &[ToolDefinition] = if registry.has_deferred() { meta_tool_definitions() } else { &[] };
            let listed = definitions.iter().filter(|d| !deferred(&d.name)).chain(meta);
            serde_json::to_value(listed.map(tool_mcp::tool_entry).collect::<Vec<_>>()).map_err(|e| e.to_string())?
        }
    };
    serde_json::to_string_pretty(&value).map_err(|e| e.to_string())
}
