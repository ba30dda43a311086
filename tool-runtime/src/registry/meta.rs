//! The registry's answers to the two meta-tools ([`SEARCH_TOOL`], [`CALL_TOOL`]; their definitions
//! are in `search::meta`).

use serde::Deserialize;
use serde_json::{Value, json};

use super::Registry;
use crate::search::meta::SearchArguments;
use crate::search::{CALL_TOOL, SEARCH_TOOL};
use crate::{ToolCall, ToolContext, ToolDefinition, ToolMessage, ToolResult};

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
    ///
    /// The caller's [access](crate::ToolAccess) holds on both meta-tools as on a direct call: a
    /// search finds only the tools `ctx` reaches, and [`CALL_TOOL`] naming a tool beyond it gets
    /// the unknown-tool error, as the inner call is admitted like any other.
    pub async fn call_with_search_where(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
        listed: &(dyn Fn(&ToolDefinition) -> bool + Sync),
    ) -> ToolMessage {
        match call.name.as_str() {
            SEARCH_TOOL => self.answer_search(call, ctx, listed),
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
                // The client's idempotency key is the inner call's: the key is per tool run.
                let inner_call = ToolCall {
                    idempotency_key: call.idempotency_key.clone(),
                    approval_token: call.approval_token.clone(),
                    ..ToolCall::new(call.id.clone(), inner.name, arguments)
                };
                let mut message = self.call(&inner_call, ctx).await;
                message.tool_name.clone_from(&call.name);
                message
            }
            _ => self.call(call, ctx).await,
        }
    }

    /// The answer to a [`SEARCH_TOOL`] call.
    fn answer_search(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
        listed: &(dyn Fn(&ToolDefinition) -> bool + Sync),
    ) -> ToolMessage {
        let query = match arguments_value(&call.arguments).and_then(SearchArguments::read) {
            Ok(query) => query.deferred_only(self.has_deferred()),
            Err(error) => return invalid(call, &error),
        };
        match self.search_where(&query, |d| listed(d) && ctx.reaches(&d.name, &d.tags)) {
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
        .with_error_kind(crate::ToolErrorKind::InvalidArguments)
}
