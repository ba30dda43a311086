//! `tool_mcp::import` of an OAuth-protected server: with a bearer token from configuration, with
//! an access token obtained by the client credentials grant after the specification's discovery
//! (the 401's protected resource metadata, the issuer's metadata, the token endpoint), with the
//! authorization code flow up to the user's step, and without any.

use crate::common;

use std::sync::{Arc, Mutex};

use tool_mcp::import::{AuthorizationCode, Authorizer, McpImport};
use tool_runtime::BoxFuture;
use tool_runtime::{Registry, ToolCall, ToolContext};

use common::auth::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_with_a_bearer_token_reaches_the_tools_of_its_scopes_as_its_subject() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let token = rsa_a(&claims(&issuer, &server.resource, "ana", "tools:read"));
    let imported = McpImport::http("guarded", &server.resource).bearer_token(token).connect().await.unwrap();
    assert_eq!(imported.remote_tools(), ["whoami"]);
    let registry = imported.add_to(Registry::builder()).unwrap().build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "whoami", "{}"), &ToolContext::new()).await;
    assert_eq!((message.is_error, message.text().into_owned()), (false, format!("{}#sub=ana", issuer.url)));
    imported.close().await;
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_with_client_credentials_discovers_the_issuer_and_gets_a_token_for_the_server() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let imported = McpImport::http("guarded", &server.resource)
        .client_credentials(CLIENT.0, CLIENT.1, ["tools:read", "tools:write"])
        .connect()
        .await
        .unwrap();
    assert_eq!(imported.remote_tools(), ["whoami", "write_note"]);
    let registry = imported.add_to(Registry::builder()).unwrap().build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "whoami", "{}"), &ToolContext::new()).await;
    assert_eq!((message.is_error, message.text().into_owned()), (false, format!("{}#sub=agent", issuer.url)));
    imported.close().await;
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_without_a_token_is_refused_at_connect() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let Err(error) = McpImport::http("guarded", &server.resource).connect().await else {
        panic!("connected without a token");
    };
    assert_eq!(
        error.to_string(),
        format!(
            "cannot connect to MCP server `guarded`: {} refused the MCP initialization without authorization (HTTP \
             401 or 403); give the import its bearer token (`bearer_token`, or `headers.Authorization` in \
             `mcpServers`) or OAuth client credentials with the scopes it asks for",
            server.resource
        )
    );
    server.running.stop().await;
}

/// A user who declines, remembering the authorization URL shown.
#[derive(Clone, Default)]
struct Declines(Arc<Mutex<Vec<String>>>);

impl Authorizer for Declines {
    fn authorize<'a>(&'a self, authorization_url: &'a str) -> BoxFuture<'a, Result<String, String>> {
        self.0.lock().unwrap().push(authorization_url.to_owned());
        Box::pin(async { Err("the user declined".to_owned()) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authorization_code_flow_shows_the_user_a_pkce_request_for_the_server_and_its_challenged_scopes() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let user = Declines::default();
    let flow = AuthorizationCode::new("http://127.0.0.1:9/callback", user.clone()).client("agent", None);
    let error = McpImport::http("guarded", &server.resource).authorization_code(flow).connect().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "cannot connect to MCP server `guarded`: the authorization for {} did not complete: the user declined",
            server.resource
        )
    );
    let shown = user.0.lock().unwrap().clone();
    assert_eq!(shown.len(), 1);
    let (endpoint, query) = shown[0].split_once('?').unwrap();
    assert_eq!(endpoint, format!("{}/authorize", issuer.url));
    let mut params: Vec<(String, String)> = query
        .split('&')
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap();
            let value = value.replace('+', " ").replace("%3A", ":").replace("%2F", "/");
            (key.to_owned(), value)
        })
        .filter(|(key, _)| key != "state" && key != "code_challenge")
        .collect();
    params.sort();
    let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    assert_eq!(
        params,
        [
            pair("client_id", "agent"),
            pair("code_challenge_method", "S256"),
            pair("redirect_uri", "http://127.0.0.1:9/callback"),
            pair("resource", &server.resource),
            pair("response_type", "code"),
            pair("scope", "tools:exec tools:read tools:write"),
        ]
    );
    server.running.stop().await;
}

/// A user whose browser lands on a redirect that carries an authorization code but no `state`.
struct LandsWithoutState;

const LEAKED_CODE: &str = "code-5ecret-7c1d";

impl Authorizer for LandsWithoutState {
    fn authorize<'a>(&'a self, _authorization_url: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async { Ok(format!("http://127.0.0.1:9/callback?code={LEAKED_CODE}")) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_refused_for_its_answer_is_named_without_its_authorization_code() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let flow = AuthorizationCode::new("http://127.0.0.1:9/callback", LandsWithoutState).client("agent", None);
    let error = McpImport::http("guarded", &server.resource).authorization_code(flow).connect().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot connect to MCP server `guarded`: the redirect to `http://127.0.0.1:9/callback` does not carry an \
         authorization answer (OAuth authorization failed: Authorization callback missing state); return the whole \
         URL the authorization server redirected to, with its `code` and `state`"
    );
    server.running.stop().await;
}

/// A request of `method` with `params` and `token` to `addr`: its JSON-RPC reply.
async fn rpc(addr: std::net::SocketAddr, token: &str, method: &str, params: serde_json::Value) -> serde_json::Value {
    let authorization = format!("Bearer {token}");
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params});
    let response = common::post(addr, "/mcp", "127.0.0.1", &[("Authorization", &authorization)], &body).await;
    assert_eq!(response.status, 200, "{}", response.body);
    serde_json::from_str(&response.body).unwrap_or_else(|_| panic!("{}", response.body))
}

/// The names `prompts/list` gives `token`.
async fn prompt_names(addr: std::net::SocketAddr, token: &str) -> Vec<String> {
    let prompts = rpc(addr, token, "prompts/list", serde_json::json!({})).await;
    prompts["result"]["prompts"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_owned()).collect()
}

/// The reply of `completion/complete` of `argument` of `prompt` for `token`.
async fn complete(addr: std::net::SocketAddr, token: &str, prompt: &str, argument: &str) -> serde_json::Value {
    let params = serde_json::json!({"ref": {"type": "ref/prompt", "name": prompt},
        "argument": {"name": argument, "value": ""}});
    rpc(addr, token, "completion/complete", params).await
}

/// The reply of `call_tool` running `name` with `arguments` for `token`.
async fn call_through_meta(
    addr: std::net::SocketAddr,
    token: &str,
    name: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let params = serde_json::json!({"name": "call_tool", "arguments": {"name": name, "arguments": arguments}});
    rpc(addr, token, "tools/call", params).await
}

/// A gateway protected by `issuer`: the three tools of an unprotected upstream imported
/// (`write_note` and `run_command` deferred), a prompt `greet` tagged `read_only` and a prompt
/// `deploy` without tags (the fallback scope `tools:write`), each with a completed argument.
async fn gateway(issuer: &Issuer) -> (Protected, common::Running, tool_mcp::import::ImportedServer) {
    use tool_mcp::McpServer;
    use tool_mcp::catalog::{Completes, Prompt, PromptMessage};
    use tool_runtime::ContentPart;
    let upstream_registry =
        Registry::builder().tool(whoami::TOOL).tool(write_note::TOOL).tool(run_command::TOOL).build().unwrap();
    let upstream = common::Running::start(McpServer::builder(upstream_registry).build()).await;
    let imported = McpImport::http("up", format!("http://{}/mcp", upstream.addr)).connect().await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let auth = tool_mcp::auth::ResourceServer::builder(&issuer.url, &resource).discover().await.unwrap();
    let registry =
        imported.add_to(Registry::builder()).unwrap().defer_tools(["write_note", "run_command"]).build().unwrap();
    let said = |text: &'static str| async move { Ok(vec![PromptMessage::user(ContentPart::text(text))]) };
    let server = McpServer::builder(registry)
        .auth(auth)
        .prompt(Prompt::new("greet").argument("name", "Who.").tags(["read_only"]), move |_| said("hello"))
        .prompt(Prompt::new("deploy").argument("target", "Where."), move |_| said("deploying"))
        .completion(Completes::prompt_argument("greet", "name"), |_| async { Ok(vec!["ana".to_owned()]) })
        .completion(Completes::prompt_argument("deploy", "target"), |_| async { Ok(vec!["prod".to_owned()]) })
        .build();
    let running = common::Running::start_on(server, listener).await;
    (Protected { addr, resource, running }, upstream, imported)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reading_token_reaches_no_other_imported_tool_prompt_or_completion_on_any_path() {
    use serde_json::json;
    let issuer = Issuer::start(true).await;
    let (server, upstream, imported) = gateway(&issuer).await;
    let reader = rsa_a(&claims(&issuer, &server.resource, "ana", "tools:read"));
    let addr = server.addr;

    assert_eq!(server.list(&reader).await, ["whoami", "search_tools", "call_tool"]);
    assert_eq!(server.call(Some(&reader), "write_note", json!({"text": "pwned"})).await.status, 403);
    let through_meta = call_through_meta(addr, &reader, "write_note", json!({"text": "pwned"})).await;
    assert_eq!(through_meta["result"]["content"][0]["text"], "unknown tool `write_note`; available tools: whoami");
    let found =
        rpc(addr, &reader, "tools/call", json!({"name": "search_tools", "arguments": {"query": "note run"}})).await;
    assert_eq!(found["result"]["content"][0]["text"], json!({"tools": []}).to_string());

    assert_eq!(prompt_names(addr, &reader).await, ["greet"]);
    let refused = "there is no prompt `deploy`; the prompts are `greet`";
    let got = rpc(addr, &reader, "prompts/get", json!({"name": "deploy", "arguments": {"target": "prod"}})).await;
    assert_eq!((&got["error"]["code"], &got["error"]["message"]), (&json!(-32602), &json!(refused)));
    let completed = complete(addr, &reader, "deploy", "target").await;
    assert_eq!((&completed["error"]["code"], &completed["error"]["message"]), (&json!(-32602), &json!(refused)));
    let own = complete(addr, &reader, "greet", "name").await;
    assert_eq!(own["result"]["completion"]["values"], json!(["ana"]));
    server.running.stop().await;
    imported.close().await;
    upstream.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writing_token_reaches_the_imported_writing_tool_and_the_untagged_prompt() {
    use serde_json::json;
    let issuer = Issuer::start(true).await;
    let (server, upstream, imported) = gateway(&issuer).await;
    let writer = rsa_a(&claims(&issuer, &server.resource, "bo", "tools:read tools:write"));
    let addr = server.addr;
    let through_meta = call_through_meta(addr, &writer, "write_note", json!({"text": "hi"})).await;
    assert_eq!(through_meta["result"]["content"][0]["text"], "noted: hi");
    assert_eq!(prompt_names(addr, &writer).await, ["deploy", "greet"]);
    let got = rpc(addr, &writer, "prompts/get", json!({"name": "deploy", "arguments": {"target": "prod"}})).await;
    assert_eq!(got["result"]["messages"][0]["content"]["text"], "deploying");
    let completed = complete(addr, &writer, "deploy", "target").await;
    assert_eq!(completed["result"]["completion"]["values"], json!(["prod"]));
    server.running.stop().await;
    imported.close().await;
    upstream.stop().await;
}
