//! The MCP requests: `initialize`, `tools/list`, `tools/call` (see the [crate docs](crate)).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities,
    ServerConfig, SubscriptionFilter, Tool, ToolAnnotations,
};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams, ReadResourceResponse,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tool_runtime::{
    ContentPart, MessageContent, Progress, ResourceContents, ToolCall, ToolDefinition, ToolError, ToolMessage,
};

use crate::frame::RawArguments;
use crate::talk::{self, McpChannel};
use crate::tasks;
use crate::{CallRequest, McpServer};

/// How a call's run ended.
enum Ended {
    Done(ToolMessage),
    /// It made an input request without an answer (MCP 2026-07-28).
    Asked,
    Cancelled,
}

/// The MCP tool entry of a definition.
///
/// - `name`, `description`; `inputSchema` is the canonical schema unchanged (MCP takes plain
///   JSON Schema); a hand-written tool whose schema is not an object gets `{"type":"object"}` and
///   a warning in the log.
/// - `annotations` from the tags, as `tool_runtime::provider::mcp_annotations` gives them
///   (`read_only` → `readOnlyHint`, `destructive` → `destructiveHint`, `false` for a tool that
///   is neither; `idempotent` → `idempotentHint`; `openWorldHint` always, `true` exactly for
///   tools tagged `external` (`tool_runtime::EXTERNAL_TAG`), which the default permission policy relies on).
/// - `outputSchema`: the definition's output schema, for a tool that declares one
///   (`#[tool(output_schema)]`) and whose schema is an object schema (`"type": "object"`, as MCP
///   requires); otherwise left out, with a warning in the log for a non-object one.
pub fn tool_entry(definition: &ToolDefinition) -> Tool {
    let schema: JsonObject = match &definition.input_schema {
        Value::Object(schema) => schema.clone(),
        other => {
            tracing::warn!(tool = %definition.name, schema = %other, "the input schema is not an object; serving {{\"type\":\"object\"}}");
            JsonObject::from_iter([("type".to_owned(), Value::from("object"))])
        }
    };
    // The one mapping of tags to hints, shared with `ToolDefinition::mcp_entry`.
    let annotations: ToolAnnotations =
        serde_json::from_value(Value::Object(tool_runtime::provider::mcp_annotations(definition)))
            .expect("the hints are booleans under the names `ToolAnnotations` reads");
    let tool = Tool::new(definition.name.clone(), definition.description.clone(), Arc::new(schema))
        .with_annotations(annotations);
    match &definition.output_schema {
        Some(Value::Object(output)) if output.get("type").and_then(Value::as_str) == Some("object") => {
            tool.with_raw_output_schema(Arc::new(output.clone()))
        }
        Some(other) => {
            tracing::warn!(tool = %definition.name, schema = %other, "the output schema is not an object schema; serving none");
            tool
        }
        None => tool,
    }
}

/// The MCP content block of one part.
pub(crate) fn content_block(part: &ContentPart) -> ContentBlock {
    match part {
        ContentPart::Text { text } => ContentBlock::text(text.clone()),
        ContentPart::Image { data, media_type, .. } => ContentBlock::image(data.clone(), media_type.clone()),
        ContentPart::Audio { data, media_type } => ContentBlock::audio(data.clone(), media_type.clone()),
        ContentPart::Resource { uri, media_type, contents } => ContentBlock::resource(match contents {
            ResourceContents::Text(text) => rmcp::model::ResourceContents::TextResourceContents {
                uri: uri.clone(),
                mime_type: media_type.clone(),
                text: text.clone(),
                meta: None,
            },
            ResourceContents::Blob(blob) => rmcp::model::ResourceContents::BlobResourceContents {
                uri: uri.clone(),
                mime_type: media_type.clone(),
                blob: blob.clone(),
                meta: None,
            },
        }),
        ContentPart::ResourceLink { uri, name, title, description, media_type } => {
            let mut link = rmcp::model::Resource::new(uri.clone(), name.clone());
            link.title = title.clone();
            link.description = description.clone();
            link.mime_type = media_type.clone();
            ContentBlock::resource_link(link)
        }
    }
}

/// The `tools/call` result of a message.
///
/// - Text becomes one text block; parts become blocks of their kind in order: text, image
///   (an image part's `detail` has no MCP equivalent and is left out), audio, embedded resource
///   (`resource`, text or blob contents) and resource link (`resource_link`).
/// - `isError` is the message's `is_error`.
/// - `_meta` carries `ref_id` (the ref id of the full output in the output cache) and
///   `trimmed: true` when the output layer shortened the text; left out when neither applies.
/// - `structured`: the tool declares an output schema; then a successful message's JSON object
///   value is also given as `structuredContent`, beside the text (the same value as JSON text),
///   for clients that read only `content`.
pub fn call_result(message: &ToolMessage, structured: bool) -> CallToolResult {
    let content = match &message.content {
        MessageContent::Text(text) => vec![ContentBlock::text(text.clone())],
        MessageContent::Parts(parts) => parts.iter().map(content_block).collect(),
    };
    let mut result = if message.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    let mut meta = JsonObject::new();
    if let Some(ref_id) = &message.ref_id {
        meta.insert("ref_id".to_owned(), Value::from(ref_id.clone()));
    }
    if message.trimmed {
        meta.insert("trimmed".to_owned(), Value::Bool(true));
    }
    if !meta.is_empty() {
        result.meta = Some(meta.into());
    }
    if structured && !message.is_error {
        result.structured_content = message.structured_content.clone().filter(Value::is_object);
    }
    result
}

impl McpServer {
    /// `true` when `context`'s request came over Streamable HTTP outside a session: without legacy
    /// sessions a `Mcp-Session-Id` names no session, whatever the client sent.
    fn stateless_http(&self, context: &RequestContext<RoleServer>) -> bool {
        context
            .extensions
            .get::<::http::request::Parts>()
            .is_some_and(|parts| !self.inner.legacy_sessions || !parts.headers.contains_key("mcp-session-id"))
    }

    /// The client channel of `context`'s request, with its `requestState` and `inputResponses`.
    /// `declared` is the client's capabilities as the request gives them
    /// (`context.client_capabilities()`, decoded once by the caller).
    fn request_channel(
        &self,
        context: &RequestContext<RoleServer>,
        declared: Option<rmcp::model::ClientCapabilities>,
        state: Option<String>,
        answers: Option<rmcp::model::InputResponses>,
    ) -> Arc<McpChannel> {
        Arc::new(McpChannel::new(context, declared, self.session.get(), state, answers, self.stateless_http(context)))
    }

    /// The error of a `tools/call` naming a tool not served; it lists the tools served that the
    /// caller reaches.
    #[cfg(feature = "auth")]
    fn unknown_tool(&self, name: &str, who: Option<&crate::auth::Authenticated>) -> ErrorData {
        let served = self.served();
        let available = served
            .tools
            .iter()
            .filter(|tool| served.registry.definition(&tool.name).is_none_or(|d| self.reaches(who, d)))
            .map(|t| t.name.to_string())
            .collect();
        ErrorData::invalid_params(ToolError::UnknownTool { name: name.to_owned(), available }.to_string(), None)
    }

    /// The error of a `tools/call` naming a tool not served; it lists the tools served.
    #[cfg(not(feature = "auth"))]
    fn unknown_tool(&self, name: &str, _: Option<&()>) -> ErrorData {
        let available = self.served().tools.iter().map(|t| t.name.to_string()).collect();
        ErrorData::invalid_params(ToolError::UnknownTool { name: name.to_owned(), available }.to_string(), None)
    }
}

/// The caller a valid access token named, when the server checks tokens.
#[cfg(feature = "auth")]
pub(crate) fn caller(parts: Option<&::http::request::Parts>) -> Option<&crate::auth::Authenticated> {
    parts.and_then(|p| p.extensions.get())
}

impl McpServer {
    /// `true` when the caller's token reaches `definition` (always without a resource server or a
    /// caller: standard input and output).
    #[cfg(feature = "auth")]
    pub(crate) fn reaches(&self, who: Option<&crate::auth::Authenticated>, definition: &ToolDefinition) -> bool {
        match (&self.inner.auth, who) {
            (Some(auth), Some(who)) => auth.scopes().allows(definition, &who.scopes),
            _ => true,
        }
    }

    /// `true` always: no resource server without the feature `auth`.
    #[cfg(not(feature = "auth"))]
    pub(crate) fn reaches(&self, _: Option<&()>, _: &ToolDefinition) -> bool {
        true
    }
}

/// Over HTTP, the head of the POST that carried a request.
fn http_parts(context: &RequestContext<RoleServer>) -> Option<::http::request::Parts> {
    context.extensions.get::<::http::request::Parts>().cloned()
}

/// `true` when `name` is listed in `served` with an output schema (a set lookup, not a scan of
/// the listing).
pub(crate) fn is_structured(served: &crate::Served, name: &str) -> bool {
    served.structured.contains(name)
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let inner = &self.inner;
        #[allow(deprecated)] // logging: SEP-2577 deprecates it; 2026-07-28 still has it
        let mut capabilities =
            ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_logging().build();
        inner.catalog.declare(&mut capabilities);
        // The tasks extension, when a tool served takes part in tasks.
        let served = self.served();
        if served.takes_tasks {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(rmcp::model::TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
        }
        let config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(inner.name.clone(), inner.version.clone()));
        match &inner.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    // Deprecated by SEP-2577, still served to clients of earlier protocols.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Some(level) = talk::from_rmcp(&request.level) {
            self.session.set(level);
        }
        Ok(())
    }

    /// `tasks/get`: the task's state, its result or error inlined ([`crate::tasks`]).
    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.get_task_state(request, &context).await
    }

    /// `tasks/update`: answers to the task's input requests ([`crate::tasks`]).
    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.update_task_answers(request, &context).await
    }

    /// `tasks/cancel` ([`crate::tasks`]).
    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.cancel_task_run(request, &context).await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.served().tools.iter().find(|tool| tool.name == name).cloned()
    }

    // Resources, prompts and completions: see the module `catalog`.
    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.inner.catalog.list_resources()
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.inner.catalog.list_resource_templates()
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.inner.catalog.read_resource(request, http_parts(&context)).await.map(Into::into)
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.inner.catalog.list_prompts()
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let inner = &self.inner;
        let mut request = request;
        let http = context.extensions.get::<::http::request::Parts>();
        let channel = self.request_channel(
            &context,
            context.client_capabilities(),
            request.request_state.take(),
            request.input_responses.take(),
        );
        let token = inner.stop.child_token();
        // The context hook runs for a prompt as for a tool call (its principal, its refusal),
        // with the prompt's name as `tool`.
        let call_id = next_call_id();
        let builder = self
            .call_context(&CallRequest { tool: &request.name, call_id: &call_id, http })
            .map_err(|message| ErrorData::invalid_request(message, None))?;
        let ctx = builder.cancellation(token.clone()).client_arc(channel.clone()).build();
        let arguments = request.arguments.as_ref().map(|a| Value::Object(a.clone()).to_string()).unwrap_or_default();
        let binding = talk::binding(&format!("prompts/get {}", request.name), &arguments, ctx.principal());
        channel.open(inner.codec.as_ref(), inner.max_input_response_bytes, || binding.clone())?;
        let answered = tokio::select! {
            answer = inner.catalog.get_prompt(request, http_parts(&context), ctx) => Some(answer),
            () = channel.asked() => None,
            () = context.ct.cancelled() => {
                token.cancel();
                // Dropped by rmcp unanswered, as for a cancelled tool call (an `Err` would be
                // logged as a warning).
                return Ok(GetPromptResponse::Complete(rmcp::model::GetPromptResult::new(Vec::new())));
            }
        };
        channel.flush().await;
        match answered {
            Some(Ok(result)) => Ok(result.into()),
            // A handler that failed after its client could not answer gets MCP's error for that.
            Some(Err(error)) => Err(channel.refusal().unwrap_or(error)),
            None => {
                token.cancel();
                channel.input_required(inner.codec.as_ref(), &binding).map(GetPromptResponse::InputRequired)
            }
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.inner.catalog.complete(request, http_parts(&context)).await
    }

    /// `resources/subscribe` (before 2026-07-28; stdio and legacy sessions): see
    /// [`McpServerBuilder::resource_subscriptions`](crate::McpServerBuilder::resource_subscriptions).
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.catalog.subscribe(request.uri, &context.peer, self.stateless_http(&context))
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.catalog.unsubscribe(&request.uri, &context.peer);
        Ok(())
    }

    /// `subscriptions/listen` (2026-07-28): tool list changes, when asked for, and the resources
    /// asked for that the catalog lets streams follow.
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed.filter(|wanted| *wanted);
        accepted.resource_subscriptions =
            self.inner.catalog.accepted_subscriptions(requested.resource_subscriptions.as_deref());
        Some(accepted)
    }

    /// Sends `notifications/tools/list_changed` on the stream at each
    /// [`McpServer::set_registry`], and `notifications/resources/updated` for each followed URI
    /// [`McpServer::notify_resource_updated`] names, until the client closes it.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.inner.changed.subscribe();
        let wants = subscription.accepted().tools_list_changed == Some(true);
        let mut updates = self.inner.catalog.updates();
        let followed = subscription.accepted().resource_subscriptions.clone().unwrap_or_default();
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                Some(uri) = crate::catalog::next_update(&mut updates, &followed) => {
                    if let Err(error) = subscription.sink().notify_resource_updated(uri).await {
                        tracing::debug!(%error, "cannot say that a resource changed on a listen stream");
                        return Ok(());
                    }
                }
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    if wants && let Err(error) = subscription.sink().notify_tool_list_changed().await {
                        tracing::debug!(%error, "cannot say that the tools changed on a listen stream");
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let served = self.served();
        #[cfg(feature = "auth")]
        if let Some(who) = caller(context.extensions.get::<::http::request::Parts>()) {
            // Only the tools the token's scopes reach (the meta-tools are not the registry's).
            let tools = served
                .tools
                .iter()
                .filter(|tool| served.registry.definition(&tool.name).is_none_or(|d| self.reaches(Some(who), d)))
                .cloned()
                .collect();
            return Ok(ListToolsResult::with_all_items(tools));
        }
        let _ = context;
        Ok(ListToolsResult::with_all_items(served.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
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
        let call_id = next_call_id();
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
        let first_round = request.request_state.is_none() && request.input_responses.is_none();
        let as_task = declared && support.is_some_and(|s| !(s.after_input && first_round));
        let builder = self
            .call_context(&CallRequest { tool: name, call_id: &call_id, http })
            .map_err(|message| ErrorData::invalid_request(message, None))?;
        // Cancelled by the client (the request's token), or at the end of a shutdown's grace.
        let token = inner.stop.child_token();
        // The arguments as the client sent them (a key sent twice is the decoder's to refuse; rmcp's
        // map of them kept the last), else rmcp's map.
        let raw = context.extensions.get::<RawArguments>().or_else(|| http.and_then(|p| p.extensions.get()));
        let arguments = match raw {
            Some(raw) => raw.text().into_owned(),
            None => request.arguments.map(|args| Value::Object(args).to_string()).unwrap_or_default(),
        };
        let channel = self.request_channel(&context, capabilities, request.request_state, request.input_responses);
        let mut builder = builder.cancellation(token.clone()).client_arc(channel.clone());
        let mut forwarding = None;
        if let Some(progress_token) = context.meta.get_progress_token() {
            let (sender, receiver) = mpsc::unbounded_channel();
            // The listener lives in the context (and its clones); see `Forwarder::run` for the end.
            builder = builder.on_progress(move |progress: Progress| {
                let _ = sender.send(progress);
            });
            let (finished, finished_receiver) = oneshot::channel();
            let forwarder = Forwarder {
                token: progress_token,
                peer: context.peer.clone(),
                cancelled: [token.clone(), context.ct.clone()],
                last: None,
            };
            forwarding = Some((finished, tokio::spawn(forwarder.run(receiver, finished_receiver))));
        }
        let ctx = builder.build();
        // What a request state is bound to, made only when a state is opened or sealed.
        let binding = |arguments: &str| talk::binding(name, arguments, ctx.principal());
        channel.open(inner.codec.as_ref(), inner.max_input_response_bytes, || binding(&arguments))?;
        if as_task {
            if let Some((_, forwarding)) = forwarding {
                forwarding.abort();
            }
            let principal = ctx.principal().map(str::to_owned);
            let capabilities = tool_runtime::talk::ClientChannel::capabilities(channel.as_ref());
            drop(ctx);
            let created =
                self.create_task(name, arguments, principal, capabilities, channel.known_answers(), http).await?;
            return Ok(CallToolResponse::Task(created));
        }
        let call = ToolCall::new(call_id, name, arguments);
        tracing::debug!(tool = name, call_id = %call.id, progress = forwarding.is_some(), "tools/call");
        let listed = |d: &ToolDefinition| !served.hidden.contains(&d.name) && self.reaches(who, d);
        // A call dropped before it ends (its client went away while the HTTP endpoint answered it
        // in the request's own future) stops its tool as a cancellation does.
        let dropped = token.clone().drop_guard();
        let running = inner.calls.track_future(async {
            // The call first: a tool that answers on its first poll ends the call before the
            // other two register their wakers.
            tokio::select! {
                biased;
                message = registry.call_with_search_where(&call, &ctx, &listed) => Ended::Done(message),
                () = channel.asked() => Ended::Asked,
                () = context.ct.cancelled() => Ended::Cancelled,
            }
        });
        let ended = running.await;
        dropped.disarm();
        channel.flush().await;
        let message = match ended {
            Ended::Done(message) => message,
            ended => {
                // The tool is stopped either way: cancelled by the client, or waiting for input
                // it will get when the client retries the call.
                token.cancel();
                if let Some((_, forwarding)) = forwarding {
                    forwarding.abort();
                }
                if let Ended::Asked = ended {
                    tracing::debug!(call_id = %call.id, "input required");
                    return channel.input_required(inner.codec.as_ref(), &binding(&call.arguments)).map(Into::into);
                }
                tracing::debug!(call_id = %call.id, "cancelled by the client");
                // No response reaches the client: rmcp drops what a handler returns for a request
                // its peer cancelled, as MCP asks ("the receiver SHOULD NOT send a response"). An
                // `Ok`, since rmcp logs every `Err` a handler returns as a warning, and a cancelled
                // call is a normal end.
                return Ok(
                    CallToolResult::error(vec![ContentBlock::text(format!("tool `{name}` was cancelled"))]).into()
                );
            }
        };
        drop(ctx);
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
            && let Some(refusal) = channel.refusal()
        {
            return Err(refusal);
        }
        Ok(call_result(&message, is_structured(&served, name)).into())
    }
}

/// Sends the progress reports of one call as `notifications/progress` with the client's token.
struct Forwarder {
    token: ProgressToken,
    peer: Peer<RoleServer>,
    /// Nothing more is sent once either is cancelled (the call's token, the request's).
    cancelled: [CancellationToken; 2],
    /// The `done` of the last report sent.
    last: Option<u64>,
}

impl Forwarder {
    /// Sends every report as it comes, until every sender is dropped or, once `finished` fires
    /// (the call is over), after sending the reports already made. A report that does not
    /// increase `done` is dropped; a notification that cannot be sent (the client is gone) is
    /// logged and the rest are dropped.
    async fn run(mut self, mut receiver: mpsc::UnboundedReceiver<Progress>, mut finished: oneshot::Receiver<()>) {
        loop {
            tokio::select! {
                biased;
                report = receiver.recv() => match report {
                    Some(report) => if !self.send(&report).await {
                        return;
                    },
                    None => return,
                },
                _ = &mut finished => break,
            }
        }
        // The call is over: send what it reported, even if a clone of its context is still alive.
        receiver.close();
        while let Some(report) = receiver.recv().await {
            if !self.send(&report).await {
                return;
            }
        }
    }

    /// Sends one report unless it does not increase; `false` when nothing more may be sent.
    async fn send(&mut self, report: &Progress) -> bool {
        if self.cancelled.iter().any(CancellationToken::is_cancelled) {
            return false;
        }
        if self.last.is_some_and(|last| report.done <= last) {
            tracing::trace!(done = report.done, last = self.last, "dropping a progress report that does not increase");
            return true;
        }
        self.last = Some(report.done);
        if let Err(error) = self.peer.notify_progress(progress_notification(self.token.clone(), report)).await {
            tracing::debug!(%error, "cannot send a progress notification; dropping the rest");
            return false;
        }
        true
    }
}

/// The `notifications/progress` parameters of a report (see [`Forwarder`]).
fn progress_notification(token: ProgressToken, report: &Progress) -> ProgressNotificationParam {
    // Counts stay exact as f64 up to 2^53 units.
    #[allow(clippy::cast_precision_loss)]
    let mut param = ProgressNotificationParam::new(token, report.done as f64);
    if let Some(total) = report.total {
        #[allow(clippy::cast_precision_loss)]
        let total = total as f64;
        param = param.with_total(total);
    }
    if !report.message.is_empty() {
        param = param.with_message(report.message.clone());
    }
    param
}

/// A new call id: `mcp_`, the process's tag, `_` and the next number of the process's sequence.
pub(crate) fn next_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("mcp_{}_{}", process_tag(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// 8 hex digits drawn once per process (from the standard library's randomly keyed hasher, over
/// the start time and the process id).
fn process_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        use std::hash::BuildHasher;
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let hash = std::hash::RandomState::new().hash_one((nanos, std::process::id()));
        format!("{:08x}", hash & 0xffff_ffff)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use rmcp::model::{ClientRequest, Request};
    use rmcp::service::PeerRequestOptions;
    use serde_json::json;
    use tokio::sync::Notify;
    use tokio_util::sync::CancellationToken;
    use tool_runtime::{Registry, tool};

    use rmcp::ServiceExt;

    use super::*;

    /// The cancellation token of the running `wait_for_cancel` call, and the signal that it started.
    static WAITING: OnceLock<CancellationToken> = OnceLock::new();
    static STARTED: Notify = Notify::const_new();

    /// Wait until the call is cancelled.
    #[tool]
    async fn wait_for_cancel(ctx: &tool_runtime::ToolContext) -> String {
        WAITING.set(ctx.cancellation().clone()).expect("called once");
        STARTED.notify_one();
        ctx.cancellation().cancelled().await;
        "cancelled".to_owned()
    }

    /// Say hello.
    #[tool]
    fn hello() -> String {
        "hello".to_owned()
    }

    // Paused clock: were the token never cancelled, the idle runtime would jump to the timeout and
    // fail the test at once instead of hanging.
    #[tokio::test(start_paused = true)]
    async fn a_cancelled_notification_cancels_the_calls_token_and_the_server_keeps_serving() {
        let registry = Registry::builder().tool(wait_for_cancel::TOOL).tool(hello::TOOL).build().unwrap();
        let server = McpServer::builder(registry).build();
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let serving = tokio::spawn(async move { server.serve(server_io).await.unwrap().waiting().await });
        let client = ().serve(client_io).await.unwrap();

        let request = ClientRequest::CallToolRequest(Request::new(CallToolRequestParams::new("wait_for_cancel")));
        let handle = client.peer().send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
        STARTED.notified().await;
        handle.cancel(Some("the user pressed stop".to_owned())).await.unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(3600), WAITING.get().unwrap().cancelled())
            .await
            .expect("the call's cancellation token was not cancelled");

        let result = client.call_tool(CallToolRequestParams::new("hello")).await.unwrap();
        assert_eq!(serde_json::to_value(&result.content).unwrap(), json!([{"type": "text", "text": "hello"}]));
        client.cancel().await.unwrap();
        serving.await.unwrap().unwrap();
    }

    /// Say goodbye.
    #[tool]
    fn goodbye() -> String {
        "goodbye".to_owned()
    }

    #[tokio::test]
    async fn a_registry_set_while_serving_is_listed_and_called_and_the_capability_says_so() {
        let server = McpServer::builder(Registry::builder().tool(hello::TOOL).build().unwrap()).build();
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let serving = tokio::spawn({
            let server = server.clone();
            async move { server.serve(server_io).await.unwrap().waiting().await }
        });
        let client = ().serve(client_io).await.unwrap();
        let info = client.peer().peer_info().unwrap();
        assert_eq!(info.capabilities.tools.as_ref().and_then(|tools| tools.list_changed), Some(true));
        let names = |tools: Vec<Tool>| tools.into_iter().map(|t| t.name.to_string()).collect::<Vec<_>>();
        assert_eq!(names(client.list_all_tools().await.unwrap()), ["hello"]);

        server.set_registry(Registry::builder().tool(hello::TOOL).tool(goodbye::TOOL).build().unwrap());
        assert_eq!(names(client.list_all_tools().await.unwrap()), ["goodbye", "hello"]);
        let result = client.call_tool(CallToolRequestParams::new("goodbye")).await.unwrap();
        assert_eq!(serde_json::to_value(&result.content).unwrap(), json!([{"type": "text", "text": "goodbye"}]));
        assert_eq!(server.tools().len(), 2);
        client.cancel().await.unwrap();
        serving.await.unwrap().unwrap();
    }

    fn definition(tags: &[&str]) -> ToolDefinition {
        ToolDefinition {
            name: "edit".to_owned(),
            description: "Edit a file.".to_owned(),
            input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
            set: Some("fs".to_owned()),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            strict: None,
            output_schema: None,
        }
    }

    #[test]
    fn a_tool_entry_keeps_the_canonical_schema_and_says_it_is_closed_world() {
        assert_eq!(
            serde_json::to_value(tool_entry(&definition(&[]))).unwrap(),
            json!({
                "name": "edit",
                "description": "Edit a file.",
                "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
                "annotations": {"destructiveHint": false, "openWorldHint": false}
            })
        );
    }

    #[test]
    fn tags_become_annotations() {
        let entry = tool_entry(&definition(&["read_only", "destructive", "idempotent", "external", "other"]));
        assert_eq!(
            serde_json::to_value(entry.annotations).unwrap(),
            json!({"readOnlyHint": true, "destructiveHint": true, "idempotentHint": true, "openWorldHint": true})
        );
    }

    #[test]
    fn an_object_output_schema_is_served_as_output_schema_and_another_is_left_out() {
        let mut with = definition(&[]);
        with.output_schema = Some(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
        assert_eq!(
            serde_json::to_value(tool_entry(&with).output_schema).unwrap(),
            json!({"type": "object", "properties": {"n": {"type": "integer"}}})
        );
        with.output_schema = Some(json!({"type": "array"}));
        assert_eq!(tool_entry(&with).output_schema, None);
    }

    #[test]
    fn a_json_result_of_a_tool_with_an_output_schema_is_structured_content_beside_its_text() {
        let message = ToolMessage::success("c1", "write", tool_runtime::ToolResult::Json(json!({"created": true})));
        assert_eq!(
            serde_json::to_value(call_result(&message, true)).unwrap(),
            json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": "{\"created\":true}"}],
                "structuredContent": {"created": true},
                "isError": false
            })
        );
        assert_eq!(serde_json::to_value(call_result(&message, false)).unwrap().get("structuredContent"), None);
    }

    #[test]
    fn parts_become_text_and_image_blocks_in_order() {
        let message = ToolMessage::success(
            "c1",
            "view_image",
            tool_runtime::ToolResult::Parts(vec![
                ContentPart::text("a.png (1x1)"),
                ContentPart::Image {
                    data: "iVBORw0KGgo=".to_owned(),
                    media_type: "image/png".to_owned(),
                    detail: None,
                },
            ]),
        );
        assert_eq!(
            serde_json::to_value(call_result(&message, false)).unwrap(),
            json!({
                "resultType": "complete",
                "content": [
                    {"type": "text", "text": "a.png (1x1)"},
                    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
                ],
                "isError": false
            })
        );
    }

    #[test]
    fn the_ref_id_and_trimmed_flag_go_in_meta() {
        let mut message =
            ToolMessage::success("c1", "grep", tool_runtime::ToolResult::text("a\n[tool output trimmed; ref_id=c1]"));
        message.ref_id = Some("c1".to_owned());
        message.trimmed = true;
        assert_eq!(
            serde_json::to_value(call_result(&message, false)).unwrap(),
            json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": "a\n[tool output trimmed; ref_id=c1]"}],
                "isError": false,
                "_meta": {"ref_id": "c1", "trimmed": true}
            })
        );
    }

    #[test]
    fn an_error_message_is_an_is_error_result() {
        let message = ToolMessage::error("c1", "read", "File not found: a.txt");
        assert_eq!(
            serde_json::to_value(call_result(&message, false)).unwrap(),
            json!({"resultType": "complete", "content": [{"type": "text", "text": "File not found: a.txt"}], "isError": true})
        );
    }
}
