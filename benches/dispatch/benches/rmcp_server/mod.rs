//! The `search` and `configure` tools written with rmcp's `#[tool]` and `#[tool_router]`, and a
//! dispatcher that calls them through a stored `ToolRouter` the way rmcp's server answers
//! `tools/call`: the arguments object parsed from the text, a `ToolCallContext` per call, the
//! response serialised to text.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResponse, JsonObject, RequestId};
use rmcp::service::{RequestContext, RoleServer, RunningService};
use rmcp::{tool, tool_router};
use tool_benches::{ConfigureArgs, SearchArgs, configure_body, search_body};

#[derive(Clone)]
pub(crate) struct Server;

#[tool_router(server_handler)]
impl Server {
    #[tool(description = "Search the index.")]
    async fn search(&self, Parameters(args): Parameters<SearchArgs>) -> String {
        serde_json::to_string(&search_body(&args.query, args.limit, &args.tags)).unwrap_or_default()
    }

    #[tool(description = "Configure a search run.")]
    async fn configure(&self, Parameters(args): Parameters<ConfigureArgs>) -> String {
        serde_json::to_string(&configure_body(&args.owner, &args.filters, &args.env, &args.tags)).unwrap_or_default()
    }
}

/// A stored router and a running (idle) server whose peer each call's context carries.
pub(crate) struct RmcpDispatch {
    server: Server,
    router: ToolRouter<Server>,
    running: RunningService<RoleServer, Server>,
    _client_end: tokio::io::DuplexStream,
}

impl RmcpDispatch {
    /// Must be called inside a tokio runtime (the idle server runs on it).
    pub(crate) fn new() -> Self {
        let (server_end, client_end) = tokio::io::duplex(64 * 1024);
        let running = rmcp::service::serve_directly(Server, server_end, None);
        Self { server: Server, router: Server::tool_router(), running, _client_end: client_end }
    }

    /// One `tools/call`: arguments text in, the serialised result out.
    pub(crate) async fn call(&self, name: &'static str, arguments: &str) -> String {
        let arguments: JsonObject = serde_json::from_str(arguments).expect("an object");
        let params = CallToolRequestParams::new(name).with_arguments(arguments);
        let context = RequestContext::new(RequestId::Number(1), self.running.peer().clone());
        let response = self.router.call(ToolCallContext::new(&self.server, params, context)).await.expect("a result");
        match response {
            CallToolResponse::Complete(result) => serde_json::to_string(&result).expect("serialisable"),
            other => panic!("a complete result, not {other:?}"),
        }
    }
}
