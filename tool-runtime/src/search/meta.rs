//! The definitions of the two meta-tools that reach deferred tools where the consumer has no tool
//! search of its own (MCP, OpenAI Chat Completions, Gemini): a search that returns definitions,
//! and a call by name. The registry answers them ([`Registry::call_with_search`](crate::Registry::call_with_search)).

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{DEFAULT_LIMIT, MAX_LIMIT, SearchMode, SearchQuery};
use crate::ToolDefinition;

/// The name of the search meta-tool: arguments `{"query": string, "mode"?: "bm25" | "regex",
/// "limit"?: 1..=50}`; its result is `{"tools": [..]}`, the MCP `tools/list` entries
/// ([`ToolDefinition::mcp_entry`]) of the tools found, best first.
pub const SEARCH_TOOL: &str = "search_tools";

/// The name of the call-by-name meta-tool: arguments `{"name": string, "arguments"?: object}`;
/// it runs the named tool with `arguments` (default `{}`) exactly as a direct call of that tool
/// would run (the same decoding, policy, output layer), and gives that tool's result.
pub const CALL_TOOL: &str = "call_tool";

/// The definitions of the two meta-tools, [`SEARCH_TOOL`] then [`CALL_TOOL`] (built once).
pub fn meta_tool_definitions() -> &'static [ToolDefinition; 2] {
    static DEFINITIONS: OnceLock<[ToolDefinition; 2]> = OnceLock::new();
    DEFINITIONS.get_or_init(|| {
        let definition = |name: &str, description: &str, input_schema: Value| ToolDefinition {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema,
            set: None,
            tags: vec!["read_only".to_owned()],
            strict: None,
            output_schema: None,
            callers: crate::Callers::Direct,
        };
        [
            definition(
                SEARCH_TOOL,
                "Search the tools that are not listed yet, by what they do. Returns the definitions of the best matches; call one with `call_tool`.",
                json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Words saying what the tool should do (bm25), or a regular expression over tool names, descriptions and parameters (regex)."},
                        "mode": {"type": "string", "enum": ["bm25", "regex"], "description": "How `query` is matched; default bm25."},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": format!("The most tools to return; default {DEFAULT_LIMIT}.")}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
            ),
            ToolDefinition {
                tags: Vec::new(),
                ..definition(
                    CALL_TOOL,
                    "Call a tool found with `search_tools` by its name, with its arguments object.",
                    json!({
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "The tool's name, as `search_tools` returned it."},
                            "arguments": {"type": "object", "description": "The tool's arguments, as its input schema describes them; default {}."}
                        },
                        "required": ["name"],
                        "additionalProperties": false
                    }),
                )
            },
        ]
    })
}

/// The arguments of [`SEARCH_TOOL`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArguments {
    pub(crate) query: String,
    #[serde(default)]
    pub(crate) mode: Option<SearchMode>,
    #[serde(default)]
    pub(crate) limit: Option<usize>,
}

impl SearchArguments {
    /// Reads the arguments object of a search call (OpenAI's `tool_search_call` arguments, an
    /// Anthropic `tool_use` input, or [`SEARCH_TOOL`]'s JSON text).
    ///
    /// # Errors
    /// What is wrong, in the words of the error a model reads: a missing `query`, an unknown
    /// field, a wrong type.
    pub(crate) fn read(value: Value) -> Result<SearchQuery, String> {
        let arguments: SearchArguments = serde_json::from_value(value).map_err(|e| e.to_string())?;
        Ok(SearchQuery {
            text: arguments.query,
            mode: arguments.mode.unwrap_or_default(),
            limit: arguments.limit.unwrap_or(DEFAULT_LIMIT),
            deferred_only: false,
        })
    }
}
