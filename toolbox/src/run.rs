//! `toolbox run RESPONSE.json`: replays the tool calls of a recorded provider response.

use std::path::Path;

use clap::ValueEnum;
use serde_json::Value;
use tool_runtime::provider::Provider;

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
/// `provider` (default: detected from the body's shape), runs them as one turn (concurrently, in
/// the session of `setup`) and returns the tool results in the provider's request shape, as
/// pretty-printed JSON. Progress reports are drawn as one bar per call on standard error when it
/// is a terminal ([`Bars`]).
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
    let calls = provider.parse_tool_calls(&body).map_err(|e| e.to_string())?;
    let registry = setup.calling_registry(&[])?;
    let bars = Bars::for_stderr();
    let ctx = match &bars {
        Some(bars) => bars.listen(setup.context()?),
        None => setup.context()?,
    }
    .build();
    let messages = crate::runtime()?.block_on(crate::policy::call_batch(&registry, &calls, &ctx));
    if let Some(bars) = bars {
        bars.clear();
    }
    serde_json::to_string_pretty(&provider.render_tool_results(&messages)).map_err(|e| e.to_string())
}
