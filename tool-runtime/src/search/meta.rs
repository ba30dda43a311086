//! The two meta-tools that reach deferred tools where the consumer has no tool search of its own
//! (MCP, OpenAI Chat Completions, Gemini): a search that returns definitions, and a call by name.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{DEFAULT_LIMIT, MAX_LIMIT, SearchMode, SearchQuery};
use crate::{Registry, ToolCall, ToolContext, ToolDefinition, ToolMessage, ToolResult};

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

/// The arguments of [`CALL_TOOL`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallArguments {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

/// The JSON value of a raw arguments text (`""` and whitespace are `{}`).
fn arguments_value(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(raw).map_err(|e| e.to_string())
}

impl Registry {
    /// Runs `call` like [`Registry::call`], answering the two meta-tools too:
    ///
    /// - [`SEARCH_TOOL`]: [`Registry::search`] (over the deferred tools when the registry defers
    ///   any, else over every tool); the result is the JSON `{"tools": [..]}` of the MCP entries
    ///   of the tools found, best first. A bad query is an error result saying what to change
    ///   (``invalid arguments for `search_tools`: ...``). It runs at once, without the permission
    ///   policy or the output layer: it reads only definitions.
    /// - [`CALL_TOOL`]: the named tool called with `arguments` (an object; a JSON string is read
    ///   as the arguments' text; default `{}`) as [`Registry::call`] calls it, under `call`'s id;
    ///   the message names [`CALL_TOOL`] as its tool. The meta-tools cannot be called through it.
    /// - any other name: [`Registry::call`].
    ///
    /// Each error a model can fix is a message with `is_error: true`; this never fails.
    pub async fn call_with_search(&self, call: &ToolCall, ctx: &ToolContext) -> ToolMessage {
        self.call_with_search_where(call, ctx, &|_| true).await
    }

    /// [`Registry::call_with_search`] whose searches find only the tools `listed` keeps: a
    /// server's listing filter, so that a tool it hides is not found either (a call by name
    /// still reaches the permission policy, which says why a tool does not run).
    pub async fn call_with_search_where(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
        listed: &(dyn Fn(&ToolDefinition) -> bool + Sync),
    ) -> ToolMessage {
        match call.name.as_str() {
            SEARCH_TOOL => self.answer_search(call, listed),
            CALL_TOOL => {
                let inner = match arguments_value(&call.arguments)
                    .and_then(|v| serde_json::from_value::<CallArguments>(v).map_err(|e| e.to_string()))
                {
                    Ok(inner) => inner,
                    Err(error) => return invalid(call, &error),
                };
                if inner.name == SEARCH_TOOL || inner.name == CALL_TOOL {
                    return invalid(
                        call,
                        &format!("`{}` is a meta-tool; call it directly, not through `{CALL_TOOL}`", inner.name),
                    );
                }
                let arguments = match inner.arguments {
                    None | Some(Value::Null) => "{}".to_owned(),
                    Some(Value::String(text)) => text,
                    Some(object @ Value::Object(_)) => object.to_string(),
                    Some(other) => {
                        return invalid(
                            call,
                            &format!("`arguments` must be an object of the tool's arguments, not `{other}`"),
                        );
                    }
                };
                let inner_call = ToolCall::new(call.id.clone(), inner.name, arguments);
                let mut message = self.call(&inner_call, ctx).await;
                message.tool_name.clone_from(&call.name);
                message
            }
            _ => self.call(call, ctx).await,
        }
    }

    /// The answer to a [`SEARCH_TOOL`] call.
    fn answer_search(&self, call: &ToolCall, listed: &(dyn Fn(&ToolDefinition) -> bool + Sync)) -> ToolMessage {
        let query = match arguments_value(&call.arguments).and_then(SearchArguments::read) {
            Ok(query) => query.deferred_only(self.has_deferred()),
            Err(error) => return invalid(call, &error),
        };
        match self.search_where(&query, listed) {
            Ok(hits) => {
                let tools: Vec<Value> = hits
                    .iter()
                    .filter_map(|hit| self.definition(&hit.name))
                    .filter_map(|definition| definition.mcp_entry().ok())
                    .collect();
                ToolMessage::success(&call.id, &call.name, ToolResult::Json(json!({ "tools": tools })))
            }
            Err(error) => invalid(call, &error.to_string()),
        }
    }
}

/// An error message for bad meta-tool arguments.
fn invalid(call: &ToolCall, error: &str) -> ToolMessage {
    ToolMessage::error(&call.id, &call.name, format!("invalid arguments for `{}`: {error}", call.name))
}
