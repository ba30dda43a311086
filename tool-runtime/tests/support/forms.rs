//! Every entry form a definition is rendered in, by id, for the tests that check all of them
//! (`#[path = "support/forms.rs"] mod forms;`): the four providers' request entries
//! ([`Provider::render_tool`]), OpenAI Chat with strict mode wherever possible, Gemini with
//! `parametersJsonSchema`, and the MCP `tools/list` entry.

use serde_json::Value;
use tool_runtime::ToolDefinition;
use tool_runtime::provider::{GeminiParameters, ProjectionError, Provider, Rendering, Strict};

/// The form ids, in the order the size table of `docs/providers.md` lists them.
pub(crate) const FORMS: [&str; 7] =
    ["openai-chat", "openai-responses", "openai-strict", "anthropic", "gemini", "gemini-json-schema", "mcp"];

/// A definition's entry in one of [`FORMS`].
pub(crate) trait Entry {
    /// The entry in the form `form` (one of [`FORMS`]; any other id panics).
    fn entry(&self, form: &str) -> Result<Value, ProjectionError>;
}

impl Entry for ToolDefinition {
    fn entry(&self, form: &str) -> Result<Value, ProjectionError> {
        match form {
            "openai-chat" => Provider::OpenAiChat.render_tool(self),
            "openai-responses" => Provider::OpenAiResponses.render_tool(self),
            "openai-strict" => {
                Provider::OpenAiChat.render_tool_with(self, Rendering::DEFAULT.strict(Strict::WherePossible))
            }
            "anthropic" => Provider::Anthropic.render_tool(self),
            "gemini" => Provider::Gemini.render_tool(self),
            "gemini-json-schema" => {
                Provider::Gemini.render_tool_with(self, Rendering::DEFAULT.gemini(GeminiParameters::JsonSchema))
            }
            "mcp" => self.mcp_entry(),
            other => panic!("no entry form `{other}`; expected one of {FORMS:?}"),
        }
    }
}
