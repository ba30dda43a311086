//! Deferred tools and tool search, per provider: the first request's `tools`, the search calls in
//! a response, and their answers.
//!
//! Sources: Anthropic "Tool search tool" (`defer_loading`, the `tool_search_tool_regex_20251119`
//! and `tool_search_tool_bm25_20251119` server tools, custom client-side search answered with
//! `tool_reference` blocks inside `tool_result`); OpenAI "Tool search" guide and the Responses
//! reference (`defer_loading` on functions and inside `namespace` tools, the `tool_search` tool
//! with `execution: "client"`, `description` and `parameters`, the `tool_search_call` output
//! item whose `arguments` is an object, and the `tool_search_output` input item with `call_id`,
//! `execution` and `tools`). MCP has no search primitive: the meta-tools of
//! [`crate::search::meta_tool_definitions`] stand in for it, as FastMCP's search transforms do.

use serde_json::{Map, Value, json};

use super::{At, ProjectionError, Provider, ProviderError, Rendering, SchemaError};
use crate::search::meta::SearchArguments;
use crate::search::{SEARCH_TOOL, SearchQuery, meta_tool_definitions};
use crate::{Registry, ToolDefinition, ToolMessage};

/// The most tools one Anthropic request may defer (`"defer_loading": true`), Anthropic's limit
/// for tool search. [`Provider::render_deferred_tools`] refuses a longer list for Anthropic.
pub const MAX_ANTHROPIC_DEFERRED: usize = 10_000;

/// How deferred tools are offered to a model (see [`Provider::render_deferred_tools`]).
/// `Default`: Anthropic and OpenAI search run by the client (this crate answers them), no
/// namespaces.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Deferral {
    /// The search tool of an Anthropic tool list.
    pub anthropic: AnthropicSearch,
    /// Who runs OpenAI Responses' `tool_search`.
    pub openai: OpenAiSearch,
    /// OpenAI Responses namespaces: `(set, description)`; the deferred tools of `set` are sent
    /// inside `{"type":"namespace","name": set,"description": description,"tools":[..]}`
    /// (OpenAI suggests fewer than 10 functions per namespace). Other deferred tools are sent at
    /// the top level.
    pub namespaces: Vec<(String, String)>,
}

/// The search tool an Anthropic tool list gains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AnthropicSearch {
    /// A client tool named [`SEARCH_TOOL`] with the meta search tool's input schema; its
    /// `tool_use` calls are read by [`Provider::parse_search_calls`] and answered with
    /// `tool_reference` blocks ([`Provider::render_turn_results`]). The default.
    #[default]
    Client,
    /// Anthropic's regex search, run by Anthropic:
    /// `{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}`.
    ServerRegex,
    /// Anthropic's BM25 search, run by Anthropic:
    /// `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`.
    ServerBm25,
}

/// Who runs OpenAI Responses' `tool_search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OpenAiSearch {
    /// `{"type":"tool_search","execution":"client","description","parameters"}` with the meta
    /// search tool's description and schema: the model emits `tool_search_call` items, answered
    /// with `tool_search_output` items. The default.
    #[default]
    Client,
    /// `{"type":"tool_search"}`: OpenAI searches the deferred tools itself.
    Server,
}

/// A search call read from a response ([`Provider::parse_search_calls`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchCall {
    /// The call's id: Anthropic's `tool_use` id, OpenAI's `call_id`.
    pub call_id: String,
    /// The query, or why the arguments are not one (an error the answer carries to the model).
    pub query: Result<SearchQuery, String>,
}

impl Provider {
    /// The request's `tools` array for `definitions` (a registry's
    /// [`definitions`](Registry::definitions), or those a policy lets run) when the tools whose
    /// name `deferred` says are deferred ([`Registry::is_deferred`]), each tool as
    /// [`Provider::render_tool_with`] renders it:
    ///
    /// - Anthropic: every tool, the deferred ones with `"defer_loading": true`, then the search
    ///   tool of `deferral.anthropic`.
    /// - OpenAI Responses: the tools not deferred, then the deferred ones with `"defer_loading":
    ///   true` (inside their namespace when `deferral.namespaces` names their set; namespaces in
    ///   the order given, then the other deferred tools), then the `tool_search` tool of
    ///   `deferral.openai`.
    /// - OpenAI Chat and Gemini (no search of their own): the tools not deferred, then the two
    ///   meta-tools ([`meta_tool_definitions`]), which [`Registry::call_with_search`] answers.
    ///   (MCP: `tool-mcp` serves the same.)
    ///
    /// When no tool is deferred, the array is [`Provider::render_tools_with`]'s.
    ///
    /// # Errors
    /// The [`ProjectionError`] of the first tool that cannot be sent. For Anthropic, more than
    /// [`MAX_ANTHROPIC_DEFERRED`] deferred tools is an error too, naming the first deferred tool
    /// past the limit (its `path` is empty: the whole entry).
    pub fn render_deferred_tools(
        self,
        definitions: &[ToolDefinition],
        deferred: impl Fn(&str) -> bool,
        rendering: Rendering,
        deferral: &Deferral,
    ) -> Result<Vec<Value>, ProjectionError> {
        let is_deferred = |d: &ToolDefinition| deferred(&d.name);
        if !definitions.iter().any(is_deferred) {
            return self.render_tools_with(definitions, rendering);
        }
        let render = |definition: &ToolDefinition, deferred: bool| {
            self.render_tool_with(definition, rendering).map(|mut entry| {
                if deferred && let Value::Object(map) = &mut entry {
                    map.insert("defer_loading".to_owned(), Value::Bool(true));
                }
                entry
            })
        };
        let loaded = || definitions.iter().filter(|d| !is_deferred(d));
        let held = || definitions.iter().filter(|d| is_deferred(d));
        match self {
            Self::Anthropic => {
                if let Some(past) = held().nth(MAX_ANTHROPIC_DEFERRED) {
                    let count = held().count();
                    return Err(ProjectionError {
                        tool: past.name.clone(),
                        target: self.id(),
                        error: SchemaError {
                            path: String::new(),
                            message: format!(
                                "anthropic takes at most {MAX_ANTHROPIC_DEFERRED} deferred tools (`defer_loading`) in one request, and this is deferred tool {} of {count}: defer fewer tools, or render fewer of them",
                                MAX_ANTHROPIC_DEFERRED + 1
                            ),
                        },
                    });
                }
                let mut tools: Vec<Value> =
                    definitions.iter().map(|d| render(d, is_deferred(d))).collect::<Result<_, _>>()?;
                tools.push(match deferral.anthropic {
                    AnthropicSearch::Client => self.render_tool_with(&meta_tool_definitions()[0], rendering)?,
                    AnthropicSearch::ServerRegex => {
                        json!({"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"})
                    }
                    AnthropicSearch::ServerBm25 => {
                        json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
                    }
                });
                Ok(tools)
            }
            Self::OpenAiResponses => {
                let mut tools: Vec<Value> = loaded().map(|d| render(d, false)).collect::<Result<_, _>>()?;
                let in_namespace = |d: &ToolDefinition| {
                    d.set.as_deref().is_some_and(|set| deferral.namespaces.iter().any(|(name, _)| name == set))
                };
                for (set, description) in &deferral.namespaces {
                    let members: Vec<Value> = held()
                        .filter(|d| d.set.as_deref() == Some(set.as_str()))
                        .map(|d| render(d, true))
                        .collect::<Result<_, _>>()?;
                    if !members.is_empty() {
                        tools.push(
                            json!({"type": "namespace", "name": set, "description": description, "tools": members}),
                        );
                    }
                }
                for definition in held().filter(|d| !in_namespace(d)) {
                    tools.push(render(definition, true)?);
                }
                tools.push(match deferral.openai {
                    OpenAiSearch::Client => {
                        let search = &meta_tool_definitions()[0];
                        json!({
                            "type": "tool_search",
                            "execution": "client",
                            "description": search.description,
                            "parameters": search.input_schema,
                        })
                    }
                    OpenAiSearch::Server => json!({"type": "tool_search"}),
                });
                Ok(tools)
            }
            Self::OpenAiChat | Self::Gemini => {
                let listed: Vec<ToolDefinition> = loaded().chain(meta_tool_definitions()).cloned().collect();
                self.render_tools_with(&listed, rendering)
            }
        }
    }

    /// The search calls of a response body that this crate answers, in order:
    ///
    /// - Anthropic: the `content[]` blocks of `type: "tool_use"` named [`SEARCH_TOOL`] (the
    ///   client search tool, [`AnthropicSearch::Client`]); their `input` is the query. Anthropic's
    ///   own searches (`server_tool_use` blocks) are answered by Anthropic and skipped.
    /// - OpenAI Responses: the `output[]` items of `type: "tool_search_call"` with `execution:
    ///   "client"`; `arguments` (an object, or a JSON text of one) is the query. Items run by the
    ///   server are skipped.
    /// - OpenAI Chat and Gemini: none: a call of the search meta-tool is an ordinary tool call
    ///   ([`Provider::parse_tool_calls`]), answered by [`Registry::call_with_search`].
    ///
    /// Arguments that are not a query (`{"query": string, "mode"?, "limit"?}`) still give a
    /// call, whose [`SearchCall::query`] says what is wrong, so the model gets an answer.
    ///
    /// # Errors
    /// A [`ProviderError`] naming the JSON path when a field the calls are read from is missing
    /// or has the wrong type.
    pub fn parse_search_calls(self, response: &Value) -> Result<Vec<SearchCall>, ProviderError> {
        let mut calls = Vec::new();
        match self {
            Self::Anthropic => {
                for block in At::root(response).field("content")?.elements()? {
                    let block = block.object()?;
                    if block.field("type")?.str()? != "tool_use" || block.field("name")?.str()? != SEARCH_TOOL {
                        continue;
                    }
                    let id = block.field("id")?.str()?;
                    let input = block.field("input")?.object()?;
                    calls
                        .push(SearchCall { call_id: id.to_owned(), query: SearchArguments::read(input.value.clone()) });
                }
            }
            Self::OpenAiResponses => {
                for item in At::root(response).field("output")?.elements()? {
                    let item = item.object()?;
                    if item.field("type")?.str()? != "tool_search_call" {
                        continue;
                    }
                    if item.optional("execution").map(|e| e.str()).transpose()? != Some("client") {
                        continue;
                    }
                    let id = item.field("call_id")?.str()?;
                    let arguments = item.field("arguments")?;
                    let query = match arguments.value {
                        Value::String(text) => serde_json::from_str(text)
                            .map_err(|e| format!("the arguments are not JSON: {e}"))
                            .and_then(SearchArguments::read),
                        Value::Object(_) => SearchArguments::read(arguments.value.clone()),
                        _ => return Err(arguments.wrong_type("an object")),
                    };
                    calls.push(SearchCall { call_id: id.to_owned(), query });
                }
            }
            Self::OpenAiChat | Self::Gemini => {}
        }
        Ok(calls)
    }

    /// What to append to the conversation for one turn: the answers to its search calls
    /// (searched with [`Registry::search`], over the deferred tools when the registry defers any)
    /// and the results of its other calls:
    ///
    /// - Anthropic: one `role: "user"` message of `tool_result` blocks, the searches' first (in
    ///   their order), then the results' (as [`Provider::render_tool_results`] makes them). A
    ///   search's `content` is one `{"type":"tool_reference","tool_name"}` block per tool found,
    ///   best first; a search that finds nothing says so in a text block; a bad query is
    ///   `is_error: true` with the reason.
    /// - OpenAI Responses: one `{"type":"tool_search_output","call_id","execution":"client",
    ///   "status":"completed","tools":[..]}` item per search, `tools` being the found tools'
    ///   function entries (as [`Provider::render_tool_with`] renders them), best first (empty
    ///   when nothing is found or the query is bad: the item has no field for a reason); then
    ///   the results' items.
    /// - OpenAI Chat and Gemini: the results' messages ([`Provider::render_tool_results`]); they
    ///   have no search calls of their own.
    ///
    /// # Errors
    /// The [`ProjectionError`] of a found tool that cannot be sent (OpenAI Responses).
    pub fn render_turn_results(
        self,
        registry: &Registry,
        rendering: Rendering,
        searches: &[SearchCall],
        messages: &[ToolMessage],
    ) -> Result<Vec<Value>, ProjectionError> {
        let found = |search: &SearchCall| -> Result<Vec<&ToolDefinition>, String> {
            let query = search.query.clone()?.deferred_only(registry.has_deferred());
            let hits = registry.search(&query).map_err(|e| e.to_string())?;
            Ok(hits.iter().filter_map(|hit| registry.definition(&hit.name)).collect())
        };
        match self {
            Self::Anthropic => {
                let mut blocks: Vec<Value> = searches
                    .iter()
                    .map(|search| {
                        let mut block = Map::new();
                        block.insert("type".to_owned(), json!("tool_result"));
                        block.insert("tool_use_id".to_owned(), json!(search.call_id));
                        match found(search) {
                            Ok(tools) if tools.is_empty() => {
                                block.insert(
                                    "content".to_owned(),
                                    json!([{"type": "text", "text": "no tool matches; search again with other words"}]),
                                );
                            }
                            Ok(tools) => {
                                let references: Vec<Value> = tools
                                    .iter()
                                    .map(|d| json!({"type": "tool_reference", "tool_name": d.name}))
                                    .collect();
                                block.insert("content".to_owned(), Value::Array(references));
                            }
                            Err(error) => {
                                block.insert("content".to_owned(), json!([{"type": "text", "text": error}]));
                                block.insert("is_error".to_owned(), Value::Bool(true));
                            }
                        }
                        Value::Object(block)
                    })
                    .collect();
                for message in super::anthropic::render_tool_results(messages) {
                    if let Some(Value::Array(results)) = message.get("content") {
                        blocks.extend(results.iter().cloned());
                    }
                }
                Ok(if blocks.is_empty() { Vec::new() } else { vec![json!({"role": "user", "content": blocks})] })
            }
            Self::OpenAiResponses => {
                let mut items = Vec::with_capacity(searches.len() + messages.len());
                for search in searches {
                    let tools: Vec<Value> = found(search)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|d| self.render_tool_with(d, rendering))
                        .collect::<Result<_, _>>()?;
                    items.push(json!({
                        "type": "tool_search_output",
                        "call_id": search.call_id,
                        "execution": "client",
                        "status": "completed",
                        "tools": tools,
                    }));
                }
                items.extend(self.render_tool_results(messages));
                Ok(items)
            }
            Self::OpenAiChat | Self::Gemini => Ok(self.render_tool_results(messages)),
        }
    }
}
