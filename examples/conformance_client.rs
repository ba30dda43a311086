//! The client the MCP conformance suite's client scenarios run: `conformance client --command
//! "conformance_client" --scenario auth/metadata-default` starts a test server and runs this
//! with the server's URL as the last argument.
//!
//! It imports the server's tools with `tool_mcp::import` (the authorization code flow with PKCE
//! when the server asks for a token, the browser step done by [`HeadlessRedirect`], as the suite's
//! authorization servers approve at once), then calls each tool once: `add_numbers` with
//! `{"a": 2, "b": 3}`, any other tool with `{}`. A pre-registered client comes from the suite's
//! `MCP_CONFORMANCE_CONTEXT` (`{"client_id": ..., "client_secret": ...}`); in the scenario
//! `auth/client-credentials-basic` (the OAuth client credentials extension, SEP-1046) that client
//! takes its token with the client credentials grant instead (`McpImport::client_credentials`,
//! the secret sent as HTTP Basic). Exits with 1 and the error on standard error when the import or
//! a call fails.

use std::process::ExitCode;

use tool_mcp::import::{AuthorizationCode, HeadlessRedirect, McpImport};
use tool_runtime::ToolContext;

/// Where the authorization server sends the answer; never served, since [`HeadlessRedirect`]
/// reads the redirect instead of following it.
const REDIRECT_URI: &str = "http://127.0.0.1:3000/callback";

/// The client ID metadata document URL the suite's authorization servers expect when they take
/// one (its scenario `auth/basic-cimd`).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("conformance_client: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let url = std::env::args()
        .next_back()
        .filter(|a| a.starts_with("http"))
        .ok_or("give the server's URL as the last argument")?;
    let mut flow = AuthorizationCode::new(REDIRECT_URI, HeadlessRedirect)
        .client_name("tool-mcp conformance client")
        .client_metadata_url(CLIENT_METADATA_URL);
    let import = match preregistered_client() {
        Some((scenario, client_id, Some(secret))) if scenario == "auth/client-credentials-basic" => {
            McpImport::http("conformance", &url).client_credentials(client_id, secret, Vec::<String>::new())
        }
        Some((_, client_id, secret)) => {
            flow = flow.client(client_id, secret);
            McpImport::http("conformance", &url).authorization_code(flow)
        }
        None => McpImport::http("conformance", &url).authorization_code(flow),
    };
    let imported = import.connect().await.map_err(|e| e.to_string())?;
    println!("tools: {}", imported.remote_tools().join(", "));
    let ctx = ToolContext::new();
    for tool in imported.tools().map_err(|e| e.to_string())? {
        let name = tool.definition().name.clone();
        let arguments = if name == "add_numbers" { r#"{"a": 2, "b": 3}"# } else { "{}" };
        let result = tool.call(arguments, &ctx).await.map_err(|e| format!("`{name}`: {e}"))?;
        println!("{name}: {result:?}");
    }
    imported.close().await;
    Ok(())
}

/// The scenario's name, and the client id and secret of `MCP_CONFORMANCE_CONTEXT`, when it names
/// a client.
fn preregistered_client() -> Option<(String, String, Option<String>)> {
    let context: serde_json::Value = serde_json::from_str(&std::env::var("MCP_CONFORMANCE_CONTEXT").ok()?).ok()?;
    let field = |key: &str| context.get(key).and_then(serde_json::Value::as_str).map(str::to_owned);
    Some((field("name").unwrap_or_default(), field("client_id")?, field("client_secret")))
}
