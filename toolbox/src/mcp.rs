//! `toolbox mcp`: the registry as an MCP server on standard input and output, built on `rmcp`.
//!
//! - `tools/list`: every tool that may run (see [`crate::policy`]), as [`tool_entry`] gives it.
//!   One page: the list is small and fixed for the life of the server.
//! - `tools/call`: the arguments object becomes the call's JSON text and goes through the
//!   registry, so decoding follows the framework's rules (unknown fields refused, paths named).
//!   Every failure the model can fix (bad arguments, a tool error, a tool that is off) is a result
//!   with `isError: true` whose text says what to change. A tool name the server does not have is
//!   a protocol error (`-32602`, invalid params), as the MCP specification lists it, whose message
//!   names the available tools. Content is mapped by [`call_result`]. The call id the tool sees
//!   is `mcp_`, 8 hex digits that differ between server processes, `_` and the JSON-RPC request
//!   id (`mcp_1f3a9c0e_7`); the output cache ref id of its result is one the output layer mints.
//! - Cancellation: a `notifications/cancelled` for a running call cancels the call's
//!   `ToolContext::cancellation` token and stops awaiting the tool; no response is sent for it.
//! - Every call of one server shares one session id (`--session`, else the root's default), so
//!   `todo_new` then `todo_read` see the same plan for as long as the server runs.
//! - `initialize`: the server's name is `toolbox`, its version the crate's; the instructions
//!   name the workspace root the file tools are confined to.
//!
//! - Progress: when the request's `_meta` carries a `progressToken`, every
//!   `ToolContext::progress` report of the call is sent as `notifications/progress` with that
//!   token (`progress` = done, `total` when known, `message` when not empty), all before the
//!   call's response; without a token, nothing is sent.
//! - Output schemas: a tool declaring one (`#[tool(output_schema)]`) is listed with
//!   `outputSchema`, and its successful results carry the JSON value as `structuredContent`
//!   beside the same value as text (see [`tool_entry`], [`call_result`]).
//!
//! Logs go to standard error only (standard output is the protocol stream).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tool_runtime::{ContentPart, MessageContent, Progress, Registry, ToolCall, ToolDefinition, ToolError, ToolMessage};

use crate::policy::{EXTERNAL_TAG, Policy};
use crate::setup::Setup;

/// Serves the standard tools of `sets` (all when empty) over MCP on stdio until the client closes
/// the stream.
///
/// # Errors
/// The root is unusable, the async runtime cannot start, the client's first messages are not an
/// MCP initialization, or the server stops on a transport error.
pub(crate) fn serve(setup: &Setup, sets: &[String]) -> Result<(), String> {
    let registry = setup.calling_registry(sets)?;
    let instructions = format!(
        "The file tools work inside the workspace {}; give paths relative to it.",
        setup.sandbox()?.root().display()
    );
    let server = ToolServer::new(registry, setup.policy().clone(), setup.session()?).with_instructions(instructions);
    crate::runtime()?.block_on(async move {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("the MCP client did not initialize the session: {e}"))?;
        let reason = service.waiting().await.map_err(|e| format!("the MCP server stopped: {e}"))?;
        tracing::debug!(?reason, "the MCP session ended");
        Ok(())
    })
}

/// The MCP tool entry of a definition.
///
/// - `name`, `description`; `inputSchema` is the canonical schema unchanged (MCP takes plain
///   JSON Schema); a hand-written tool whose schema is not an object gets `{"type":"object"}` and
///   a warning in the log.
/// - `annotations` from the tags: `read_only` → `readOnlyHint: true`, `destructive` →
///   `destructiveHint: true`, `idempotent` → `idempotentHint: true`, each left out when the tag
///   is absent (MCP's defaults apply); `openWorldHint` is always given, `true` exactly for tools
///   tagged `external` (in this framework that tag is what marks a tool reaching outside the
///   machine, and the permission policy relies on it).
/// - `outputSchema`: the definition's output schema, for a tool that declares one
///   (`#[tool(output_schema)]`) and whose schema is an object schema (`"type": "object"`, as MCP
///   requires); otherwise left out, with a warning in the log for a non-object one.
pub(crate) fn tool_entry(definition: &ToolDefinition) -> Tool {
    let has = |tag: &str| definition.tags.iter().any(|t| t == tag);
    let schema: JsonObject = match &definition.input_schema {
        Value::Object(schema) => schema.clone(),
        other => {
            tracing::warn!(tool = %definition.name, schema = %other, "the input schema is not an object; serving {{\"type\":\"object\"}}");
            JsonObject::from_iter([("type".to_owned(), Value::from("object"))])
        }
    };
    let mut annotations = ToolAnnotations::new().open_world(has(EXTERNAL_TAG));
    if has("read_only") {
        annotations = annotations.read_only(true);
    }
    if has("destructive") {
        annotations = annotations.destructive(true);
    }
    if has("idempotent") {
        annotations = annotations.idempotent(true);
    }
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

/// The `tools/call` result of a tool message: text content becomes one `text` block; parts become
/// `text` and `image` blocks in order (`image` with the base64 `data` and `mimeType`); `isError`
/// is the message's flag. The output cache's `output_ref` and `trimmed`, when set, go in `_meta`
/// under the same names (the model reads the ref in the text's footer; `_meta` is for the client).
/// `structuredContent` is the message's JSON value when `structured` (the tool has an
/// `outputSchema`, see [`tool_entry`]), the call succeeded and the value is an object; the text
/// block keeps the same value as JSON text, for clients that read only `content`.
pub(crate) fn call_result(message: &ToolMessage, structured: bool) -> CallToolResult {
    let content = match &message.content {
        MessageContent::Text(text) => vec![ContentBlock::text(text.clone())],
        MessageContent::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                ContentPart::Text { text } => ContentBlock::text(text.clone()),
                ContentPart::Image { data, media_type, .. } => ContentBlock::image(data.clone(), media_type.clone()),
            })
            .collect(),
    };
    let mut result = if message.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    let mut meta = JsonObject::new();
    if let Some(output_ref) = &message.output_ref {
        meta.insert("output_ref".to_owned(), Value::from(output_ref.clone()));
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

/// The MCP server: a registry, the permission policy and the session of every call.
#[derive(Clone)]
struct ToolServer {
    registry: Arc<Registry>,
    tools: Arc<[Tool]>,
    policy: Policy,
    session: String,
    instructions: Option<String>,
}

impl ToolServer {
    fn new(registry: Registry, policy: Policy, session: String) -> Self {
        let tools = policy.visible(&registry).into_iter().map(tool_entry).collect();
        Self { registry: Arc::new(registry), tools, policy, session, instructions: None }
    }

    fn with_instructions(mut self, instructions: String) -> Self {
        self.instructions = Some(instructions);
        self
    }

    fn unknown_tool(&self, name: &str) -> ErrorData {
        let available = self.tools.iter().map(|t| t.name.to_string()).collect();
        ErrorData::invalid_params(ToolError::UnknownTool { name: name.to_owned(), available }.to_string(), None)
    }
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("toolbox", env!("CARGO_PKG_VERSION")));
        match &self.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name: &str = &request.name;
        if self.registry.get(name).is_none() {
            return Err(self.unknown_tool(name));
        }
        let arguments = request.arguments.map(|args| Value::Object(args).to_string()).unwrap_or_default();
        let call = ToolCall::new(format!("mcp_{}_{}", process_tag(), context.id), name, arguments);
        let mut builder = tool_runtime::ToolContext::builder()
            .session_id(self.session.clone())
            .image_support(tool_runtime::ImageSupport::Supported)
            .cancellation(context.ct.clone());
        let mut forwarding = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
            // The listener lives in the context (and its clones); see `forward_progress` for the end.
            builder = builder.on_progress(move |progress: Progress| {
                let _ = sender.send(progress);
            });
            let (finished, finished_receiver) = tokio::sync::oneshot::channel();
            let task = tokio::spawn(forward_progress(receiver, finished_receiver, token, context.peer.clone()));
            forwarding = Some((finished, task));
        }
        let ctx = builder.build();
        tracing::debug!(tool = name, call_id = %call.id, progress = forwarding.is_some(), "tools/call");
        let outcome = tokio::select! {
            message = self.policy.call(&self.registry, &call, &ctx) => {
                let structured = self.tools.iter().any(|tool| tool.name == name && tool.output_schema.is_some());
                Ok(call_result(&message, structured).into())
            }
            () = context.ct.cancelled() => {
                tracing::debug!(call_id = %call.id, "cancelled by the client");
                Err(ErrorData::internal_error("the client cancelled the call", None))
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
        outcome
    }
}

/// Sends every progress report of one call as a `notifications/progress` message with the
/// client's `token`: `progress` is `done`, `total` the total when known, `message` the message
/// when not empty. Ends when every sender is dropped or, once `finished` fires (the call is over),
/// after sending the reports already made; a notification that cannot be sent (the client is
/// gone) is logged and the rest are dropped.
async fn forward_progress(
    mut receiver: tokio::sync::mpsc::UnboundedReceiver<Progress>,
    mut finished: tokio::sync::oneshot::Receiver<()>,
    token: ProgressToken,
    peer: Peer<RoleServer>,
) {
    let mut connected = true;
    let mut send = async |report: Progress| {
        if connected && let Err(error) = peer.notify_progress(progress_notification(token.clone(), &report)).await {
            tracing::debug!(%error, "cannot send a progress notification; dropping the rest");
            connected = false;
        }
    };
    loop {
        tokio::select! {
            biased;
            report = receiver.recv() => match report {
                Some(report) => send(report).await,
                None => return,
            },
            _ = &mut finished => break,
        }
    }
    // The call is over: send what it reported, even if a clone of its context is still alive.
    receiver.close();
    while let Some(report) = receiver.recv().await {
        send(report).await;
    }
}

/// The `notifications/progress` parameters of a report (see [`forward_progress`]).
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

/// 8 hex digits of a hash of the start time and the process id, fixed for this process.
fn process_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        use sha2::{Digest, Sha256};
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let digest = Sha256::digest(format!("{nanos}:{}", std::process::id()).as_bytes());
        digest.iter().take(4).map(|b| format!("{b:02x}")).collect()
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
    use tool_runtime::tool;

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
        let server = ToolServer::new(registry, Policy::default(), "s1".to_owned());
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
                "annotations": {"openWorldHint": false}
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
    fn the_output_ref_and_trimmed_flag_go_in_meta() {
        let mut message =
            ToolMessage::success("c1", "grep", tool_runtime::ToolResult::text("a\n[tool output trimmed; ref=c1]"));
        message.output_ref = Some("c1".to_owned());
        message.trimmed = true;
        assert_eq!(
            serde_json::to_value(call_result(&message, false)).unwrap(),
            json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": "a\n[tool output trimmed; ref=c1]"}],
                "isError": false,
                "_meta": {"output_ref": "c1", "trimmed": true}
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
