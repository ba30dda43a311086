//! `tool_mcp::import` of an OAuth-protected server: with a bearer token from configuration, with
//! an access token obtained by the client credentials grant after the specification's discovery
//! (the 401's protected resource metadata, the issuer's metadata, the token endpoint), and
//! without either.

use crate::common;

use tool_mcp::import::McpImport;
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
    assert_eq!((message.is_error, message.text().into_owned()), (false, "ana".to_owned()));
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
    assert_eq!((message.is_error, message.text().into_owned()), (false, "agent".to_owned()));
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
