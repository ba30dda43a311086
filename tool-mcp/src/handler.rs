//! The protocol surface: rmcp's [`ServerHandler`] for [`McpServer`], one short method per MCP
//! method, each delegating to the server ([`crate::server`]: listing, capabilities, listen
//! streams), to running one call ([`crate::call`]: `tools/call`, `prompts/get`, the `tasks/*`
//! methods) or to the catalog ([`crate::catalog`]). Nothing is decided here.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, GetPromptRequestParams,
    GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::server::{McpServer, http_parts};
use crate::talk;
use crate::telemetry::{Target, observed, observed_call};

impl McpServer {
    /// The target of a `tools/call` of `name` for its span ([`crate::telemetry`]): the tool when
    /// the server serves it (tool search's meta-tools included), else none.
    fn call_target<'a>(&self, name: &'a str) -> Target<'a> {
        let registry = &self.served().registry;
        let meta = registry.has_deferred()
            && (name == tool_runtime::search::SEARCH_TOOL || name == tool_runtime::search::CALL_TOOL);
        if meta || registry.get(name).is_some() { Target::Tool(name) } else { Target::UnknownTool }
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        self.info()
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
        observed("tasks/get", Target::None, &context, self.get_task_state(request, &context)).await
    }

    /// `tasks/update`: answers to the task's input requests ([`crate::tasks`]).
    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        observed("tasks/update", Target::None, &context, self.update_task_answers(request, &context)).await
    }

    /// `tasks/cancel` ([`crate::tasks`]).
    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        observed("tasks/cancel", Target::None, &context, self.cancel_task_run(request, &context)).await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.served().tools.iter().find(|tool| tool.name == name).cloned()
    }

    // Resources, prompts and completions: see the module `catalog`.
    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        observed("resources/list", Target::None, &context, async { self.inner.catalog.list_resources() }).await
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let list = async { self.inner.catalog.list_resource_templates() };
        observed("resources/templates/list", Target::None, &context, list).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let read = async { self.inner.catalog.read_resource(request, http_parts(&context)).await.map(Into::into) };
        observed("resources/read", Target::None, &context, read).await
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        observed("prompts/list", Target::None, &context, async { self.list_prompts_for(&context) }).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let name = request.name.clone();
        observed("prompts/get", Target::Prompt(&name), &context, self.prompt(request, &context)).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        observed("completion/complete", Target::None, &context, self.complete_for(request, &context)).await
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

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        observed("tools/list", Target::None, &context, async { Ok(self.list_tools_for(&context)) }).await
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        self.accepted_subscriptions(requested)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        self.listen_stream(subscription).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.clone();
        let target = self.call_target(&name);
        let served = self.served();
        let description = match target {
            Target::Tool(name) => served.registry.definition(name).map(|d| d.description.as_str()),
            _ => None,
        };
        observed_call(target, description, &context, |span| self.tool_call(request, &context, span)).await
    }

    /// rmcp's own answer (the peer's info kept, the version negotiated), in a SERVER span.
    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        observed("initialize", Target::None, &context, async { self.negotiate_initialize(&request) }).await
    }

    /// rmcp's own answer (the versions and the server's info), in a SERVER span.
    async fn discover(&self, context: RequestContext<RoleServer>) -> Result<rmcp::model::DiscoverResult, ErrorData> {
        let answer = async {
            Ok(rmcp::model::DiscoverResult::from_server_info(
                self.supported_protocol_versions().into_owned(),
                self.get_info(),
            ))
        };
        observed("server/discover", Target::None, &context, answer).await
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        observed("ping", Target::None, &context, async { Ok(()) }).await
    }

    /// A method MCP does not name: `-32601` with the method as the message, as rmcp answers it,
    /// in a SERVER span named `_OTHER` (the client's text never names a span).
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        let refusal = async { Err(ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, request.method, None)) };
        observed("_OTHER", Target::None, &context, refusal).await
    }
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
}
