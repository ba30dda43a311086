//! `tools/call`: the call run in its request, or created as a task.

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tool_runtime::{ToolCall, ToolDefinition};

use super::Ended;
use super::progress::Forwarder;
use crate::content::call_result;
use crate::incoming::RawArguments;
use crate::protocol::{APPROVAL_TOKEN_META, IDEMPOTENCY_KEY_META};
#[cfg(feature = "auth")]
use crate::server::caller;
use crate::server::{McpServer, is_structured};
use crate::telemetry::CallAnswer;
use crate::{talk, tasks};

impl McpServer {
    /// `tools/call` (see the [crate docs](crate)): the checks before the tool runs (a tool not
    /// served, a shutdown, the caller's reach, a task the client cannot take), then the call run
    /// in the request, or created as a task. `span` is the request's SERVER span, which the call
    /// run in the request has as its one span ([`crate::telemetry`], "One span a call").
    pub(crate) async fn tool_call(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        span: tracing::Span,
    ) -> Result<CallAnswer, ErrorData> {
        let inner = &self.inner;
        let name: &str = &request.name;
        // The registry of this call, also if another is set while it runs.
        let served = self.served();
        let registry = &served.registry;
        let http = context.extensions.get::<::http::request::Parts>();
        #[cfg(feature = "auth")]
        let who = caller(http);
        #[cfg(not(feature = "auth"))]
        let who: Option<&()> = None;
        let meta = registry.has_deferred()
            && (name == tool_runtime::search::SEARCH_TOOL || name == tool_runtime::search::CALL_TOOL);
        if !meta && registry.get(name).is_none() {
            return Err(self.unknown_tool(name, who));
        }
        if inner.calls.is_closed() {
            return Err(ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                "the server is shutting down and takes no new calls; send the call again to a running server",
                None,
            ));
        }
        // The HTTP layer answers such a call with 403 first; this holds for any other transport
        // that puts a caller in the extensions.
        if let Some(definition) = registry.definition(name)
            && !self.reaches(who, definition)
        {
            return Err(ErrorData::invalid_request(
                format!("the access token's scopes do not reach tool `{name}`; ask for the scope it needs"),
                None,
            ));
        }
        let support = registry.definition(name).and_then(|d| tasks::support(d, &inner.tasks.tags));
        let capabilities = context.client_capabilities();
        // Whether the client declared the tasks extension.
        let declared = capabilities.as_ref().is_some_and(rmcp::model::ClientCapabilities::supports_tasks);
        if support.is_some_and(|s| s.required) && !declared {
            return Err(tasks::required_error(name));
        }
        // A task, unless the tool gathers input in the request first and this is the first round.
        let idempotency_key = idempotency_key(&context.meta)?;
        let approval_token = approval_token(&context.meta)?;
        let first_round = request.request_state.is_none() && request.input_responses.is_none();
        let as_task = declared && support.is_some_and(|s| !(s.after_input && first_round));
        // The arguments as the client sent them (a key sent twice is the decoder's to refuse; rmcp's
        // map of them kept the last), else rmcp's map.
        let raw = context.extensions.get::<RawArguments>().or_else(|| http.and_then(|p| p.extensions.get()));
        let arguments = match raw {
            Some(raw) => raw.text().into_owned(),
            None => request.arguments.map(|args| Value::Object(args).to_string()).unwrap_or_default(),
        };
        let channel = self.request_channel(context, capabilities, request.request_state, request.input_responses);
        let progress_token = context.meta.get_progress_token();
        let (sender, receiver) = match progress_token {
            Some(_) => {
                let (sender, receiver) = mpsc::unbounded_channel();
                (Some(sender), Some(receiver))
            }
            None => (None, None),
        };
        // The call's one span, when it runs in this request and a subscriber wants it; a
        // meta-tool's call keeps its own (`call_tool`'s inner call has its tool's own span).
        let hosted = (!as_task && !meta && !span.is_disabled()).then_some(span);
        let prepared = self.prepare(name, http, channel, sender, None, hosted)?;
        let (ctx, channel, token) = (&prepared.ctx, &prepared.channel, &prepared.token);
        let forwarding = progress_token.zip(receiver).map(|(progress_token, receiver)| {
            let (finished, finished_receiver) = oneshot::channel();
            let forwarder = Forwarder {
                token: progress_token,
                peer: context.peer.clone(),
                cancelled: [token.clone(), context.ct.clone()],
                last: None,
            };
            (finished, tokio::spawn(forwarder.run(receiver, finished_receiver)))
        });
        // What a request state is bound to, made only when a state is opened or sealed.
        let binding = |arguments: &str| talk::binding(name, arguments, ctx.principal());
        channel
            .open(inner.codec.as_ref(), inner.tasks.now_ms(), inner.max_input_response_bytes, || binding(&arguments))?;
        if as_task {
            if let Some((_, forwarding)) = forwarding {
                forwarding.abort();
            }
            let principal = ctx.principal().map(str::to_owned);
            let channel = channel.clone();
            drop(prepared);
            // A stateless HTTP request's connection ends with its response: its client polls.
            let listener = (!self.stateless_http(context)).then(|| context.peer.clone());
            let created =
                self.create_task(name, arguments, principal, &channel, http, listener, approval_token).await?;
            return Ok(CallAnswer::of(CallToolResponse::Task(created)));
        }
        let mut call = ToolCall::new(prepared.call_id.clone(), name, arguments);
        call.idempotency_key = idempotency_key;
        call.approval_token = approval_token;
        tracing::debug!(tool = name, call_id = %call.id, progress = forwarding.is_some(), "tools/call");
        let listed = |d: &ToolDefinition| !served.hidden.contains(&d.name) && self.reaches(who, d);
        // A call dropped before it ends (its client went away while the HTTP endpoint answered it
        // in the request's own future) stops its tool as a cancellation does.
        let dropped = token.clone().drop_guard();
        let work = registry.call_with_search_where(&call, ctx, &listed);
        let ended = prepared.run(self, work, context.ct.cancelled(), None).await;
        dropped.disarm();
        prepared.finish(&ended).await;
        let message = match ended {
            Ended::Done(message) => message,
            ended => {
                // The tool is stopped either way: cancelled by the client, or waiting for input
                // it will get when the client retries the call.
                if let Some((_, forwarding)) = forwarding {
                    forwarding.abort();
                }
                if let Ended::Asked = ended {
                    tracing::debug!(call_id = %call.id, "input required");
                    return channel
                        .input_required(inner.codec.as_ref(), inner.tasks.now_ms(), &binding(&call.arguments))
                        .map(CallAnswer::of);
                }
                tracing::debug!(call_id = %call.id, "cancelled by the client");
                // No response reaches the client: rmcp drops what a handler returns for a request
                // its peer cancelled, as MCP asks ("the receiver SHOULD NOT send a response"). An
                // `Ok`, since rmcp logs every `Err` a handler returns as a warning, and a cancelled
                // call is a normal end.
                let response =
                    CallToolResult::error(vec![ContentBlock::text(format!("tool `{name}` was cancelled"))]).into();
                return Ok(CallAnswer { response, cancelled: true });
            }
        };
        let refusal = channel.refusal();
        drop(prepared);
        if let Some((finished, forwarding)) = forwarding {
            let _ = finished.send(());
            // Every report reaches the client before the result does: a client forgets the
            // progress token of a request once it has its response.
            if let Err(error) = forwarding.await {
                tracing::warn!(%error, "the progress forwarding task failed");
            }
        }
        // A tool that failed after its client could not answer (a capability it did not declare, a
        // malformed answer) gets the protocol error MCP defines for that, not a tool error.
        if message.is_error
            && let Some(refusal) = refusal
        {
            return Err(refusal);
        }
        Ok(CallAnswer::of(call_result(&message, is_structured(&served, name))))
    }
}

/// The client's idempotency key of a `tools/call`, from `_meta` ([`IDEMPOTENCY_KEY_META`]).
///
/// # Errors
/// -32602 for a value that is not a string.
fn idempotency_key(meta: &rmcp::model::RequestMetaObject) -> Result<Option<String>, ErrorData> {
    match meta.get(IDEMPOTENCY_KEY_META) {
        None => Ok(None),
        Some(Value::String(key)) => Ok(Some(key.clone())),
        Some(other) => Err(ErrorData::invalid_params(
            format!(
                "`_meta[\"{IDEMPOTENCY_KEY_META}\"]` must be a string of 1 to 256 bytes (a UUID), not {}; send the \
                 same key with each retry of one call",
                json_kind(other)
            ),
            None,
        )),
    }
}

/// The approval token of a `tools/call`, from `_meta` ([`APPROVAL_TOKEN_META`]).
///
/// # Errors
/// -32602 for a value that is not a string, or one longer than any approval token
/// ([`MAX_APPROVAL_TOKEN_BYTES`](tool_runtime::approvals::MAX_APPROVAL_TOKEN_BYTES)): it would be forwarded
/// to an imported tool's server and kept (sealed) by a task record.
fn approval_token(meta: &rmcp::model::RequestMetaObject) -> Result<Option<String>, ErrorData> {
    use tool_runtime::approvals::MAX_APPROVAL_TOKEN_BYTES;
    match meta.get(APPROVAL_TOKEN_META) {
        None => Ok(None),
        Some(Value::String(token)) if token.len() > MAX_APPROVAL_TOKEN_BYTES => Err(ErrorData::invalid_params(
            format!(
                "`_meta[\"{APPROVAL_TOKEN_META}\"]` is {} bytes, longer than any approval token \
                 ({MAX_APPROVAL_TOKEN_BYTES}); send the token a refused call of this tool gave, as it was given",
                token.len()
            ),
            None,
        )),
        Some(Value::String(token)) => Ok(Some(token.clone())),
        Some(other) => Err(ErrorData::invalid_params(
            format!(
                "`_meta[\"{APPROVAL_TOKEN_META}\"]` must be the approval token string a refused call of this tool \
                 gave, not {}; send it as it was given",
                json_kind(other)
            ),
            None,
        )),
    }
}

/// What a JSON value that is not a string is, for an error (`null`, `a number`, ...).
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Object(_) => "an object",
    }
}
