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
