//! An authorization server and a protected MCP server for the OAuth tests (feature `auth`): the
//! issuer's metadata, JWKS and a client credentials token endpoint on a loopback port, and tokens
//! signed here by jsonwebtoken with the keys of `tests/data`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tool_mcp::McpServer;
use tool_mcp::auth::{ResourceServer, ResourceServerBuilder};
use tool_runtime::{Registry, ToolContext, tool};

use super::{Response, post};

pub const RSA_A: &[u8] = include_bytes!("../data/rsa-a.pem");
pub const RSA_A_PUBLIC: &[u8] = include_bytes!("../data/rsa-a.pub.pem");
pub const RSA_B: &[u8] = include_bytes!("../data/rsa-b.pem");
pub const EC_A: &[u8] = include_bytes!("../data/ec-a.p8.pem");
pub const JWKS: &str = include_str!("../data/jwks.json");
pub const RSA_B_JWK: &str = include_str!("../data/rsa-b.jwk.json");

/// Who the call is for.
#[tool(tags(read_only))]
pub fn whoami(ctx: &ToolContext) -> String {
    ctx.principal().unwrap_or("nobody").to_owned()
}

/// Write a note (needs `tools:write`).
#[tool]
pub fn write_note(
    /// The note.
    text: String,
) -> String {
    format!("noted: {text}")
}

/// Run a command (needs `tools:exec`).
#[tool(tags(exec))]
pub fn run_command() -> String {
    "ran".to_owned()
}

/// A small authorization server: its metadata documents and its JWKS, counting JWKS fetches.
pub struct Issuer {
    pub url: String,
    pub jwks: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

impl Issuer {
    /// Serves RFC 8414 metadata when `oauth_metadata`, and OpenID metadata always.
    pub async fn start(oauth_metadata: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let jwks = Arc::new(Mutex::new(serde_json::from_str::<Value>(JWKS).unwrap()));
        let fetches = Arc::new(AtomicUsize::new(0));
        let metadata = json!({
            "issuer": url,
            "jwks_uri": format!("{url}/jwks"),
            "authorization_endpoint": format!("{url}/authorize"),
            "token_endpoint": format!("{url}/token"),
            "introspection_endpoint": format!("{url}/introspect"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
        });
        let document = |body: String| {
            axum::routing::get(move || {
                let body = body.clone();
                async move { ([("content-type", "application/json")], body) }
            })
        };
        let mut router = axum::Router::new().route("/.well-known/openid-configuration", document(metadata.to_string()));
        if oauth_metadata {
            router = router.route("/.well-known/oauth-authorization-server", document(metadata.to_string()));
        }
        let (keys, count) = (jwks.clone(), fetches.clone());
        router = router.route(
            "/jwks",
            axum::routing::get(move || {
                let (keys, count) = (keys.clone(), count.clone());
                async move {
                    count.fetch_add(1, Ordering::SeqCst);
                    let body = keys.lock().unwrap().to_string();
                    ([("content-type", "application/json")], body)
                }
            }),
        );
        let issuer = url.clone();
        router = router.route(
            "/token",
            axum::routing::post(move |body: String| {
                let issuer = issuer.clone();
                async move { token_response(&issuer, &body) }
            }),
        );
        let issuer = url.clone();
        router = router.route(
            "/introspect",
            axum::routing::post(move |body: String| {
                let issuer = issuer.clone();
                async move { introspection_response(&issuer, &body) }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Self { url, jwks, fetches }
    }

    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

/// The client credentials of the issuer's one client: `agent` with `secret-of-agent`.
pub const CLIENT: (&str, &str) = ("agent", "secret-of-agent");

/// `application/x-www-form-urlencoded` text decoded.
fn form_decode(text: &str) -> String {
    let bytes = text.replace('+', " ").into_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// The token endpoint: the client credentials grant for [`CLIENT`] (secret in the body), a token
/// for the `resource` asked for (RFC 8707) with the scopes asked for, the client as its subject.
fn token_response(issuer: &str, body: &str) -> (http::StatusCode, [(&'static str, &'static str); 1], String) {
    let form: std::collections::HashMap<String, String> = body
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (form_decode(k), form_decode(v)))
        .collect();
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or_default();
    let json = [("content-type", "application/json")];
    if field("grant_type") != "client_credentials" || (field("client_id"), field("client_secret")) != CLIENT {
        return (http::StatusCode::BAD_REQUEST, json, json!({"error": "invalid_client"}).to_string());
    }
    let claims = json!({
        "iss": issuer, "aud": field("resource"), "sub": CLIENT.0, "client_id": CLIENT.0,
        "scope": field("scope"), "iat": now(), "exp": now() + 300,
    });
    let token = rsa_a(&claims);
    let answer = json!({"access_token": token, "token_type": "Bearer", "expires_in": 300, "scope": field("scope")});
    (http::StatusCode::OK, json, answer.to_string())
}

/// The introspection endpoint (RFC 7662): `opaque-<sub>-for-<port>` is an active token of `<sub>`
/// with `tools:read` for the resource `http://127.0.0.1:<port>/mcp`; any other token is not active.
fn introspection_response(issuer: &str, body: &str) -> ([(&'static str, &'static str); 1], String) {
    let token = body.split('&').find_map(|pair| pair.strip_prefix("token=")).map(form_decode).unwrap_or_default();
    let json = [("content-type", "application/json")];
    let answer = match token.strip_prefix("opaque-").and_then(|rest| rest.split_once("-for-")) {
        Some((sub, port)) => json!({
            "active": true, "sub": sub, "scope": "tools:read", "iss": issuer,
            "aud": format!("http://127.0.0.1:{port}/mcp"), "exp": now() + 300,
        }),
        None => json!({"active": false}),
    };
    (json, answer.to_string())
}

/// An MCP server protected by a resource server of `issuer`, on a free loopback port.
pub struct Protected {
    pub addr: SocketAddr,
    pub resource: String,
    pub running: super::Running,
}

impl Protected {
    pub async fn start(
        issuer: &Issuer,
        configure: impl FnOnce(ResourceServerBuilder) -> ResourceServerBuilder,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let resource = format!("http://{addr}/mcp");
        let auth = configure(ResourceServer::builder(&issuer.url, &resource)).discover().await.unwrap();
        let registry =
            Registry::builder().tool(whoami::TOOL).tool(write_note::TOOL).tool(run_command::TOOL).build().unwrap();
        let server = McpServer::builder(registry).auth(auth).build();
        let running = super::Running::start_on(server, listener).await;
        Self { addr, resource, running }
    }

    /// A server of the same three tools, `write_note` and `run_command` deferred (reached through
    /// `search_tools` and `call_tool`), with legacy sessions on when `legacy`.
    pub async fn start_deferred(issuer: &Issuer, legacy: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let resource = format!("http://{addr}/mcp");
        let auth = ResourceServer::builder(&issuer.url, &resource).discover().await.unwrap();
        let registry = Registry::builder()
            .tool(whoami::TOOL)
            .tool(write_note::TOOL)
            .tool(run_command::TOOL)
            .defer_tools(["write_note", "run_command"])
            .build()
            .unwrap();
        let server = McpServer::builder(registry).auth(auth).legacy_session_mode(legacy).build();
        let running = super::Running::start_on(server, listener).await;
        Self { addr, resource, running }
    }

    pub fn metadata_url(&self) -> String {
        format!("http://{}/.well-known/oauth-protected-resource/mcp", self.addr)
    }

    pub async fn call(&self, token: Option<&str>, tool: &str, arguments: Value) -> Response {
        let authorization = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = authorization.iter().map(|a| ("Authorization", a.as_str())).collect();
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
        post(self.addr, "/mcp", "127.0.0.1", &headers, &body).await
    }

    pub async fn list(&self, token: &str) -> Vec<String> {
        let authorization = format!("Bearer {token}");
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let response = post(self.addr, "/mcp", "127.0.0.1", &[("Authorization", &authorization)], &body).await;
        assert_eq!(response.status, 200, "{}", response.body);
        let message: Value = serde_json::from_str(&response.body).unwrap();
        message["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    }

    /// The challenge of an invalid token saying `why`.
    pub fn invalid(&self, why: &str) -> String {
        format!(
            "Bearer error=\"invalid_token\", resource_metadata=\"{}\", error_description=\"{why}\"",
            self.metadata_url()
        )
    }
}

pub fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

/// Claims of a good token of `issuer` for `resource`, for `sub` with `scope`.
pub fn claims(issuer: &Issuer, resource: &str, sub: &str, scope: &str) -> Value {
    json!({"iss": issuer.url, "aud": resource, "sub": sub, "scope": scope, "iat": now(), "exp": now() + 300})
}

pub fn sign(claims: &Value, algorithm: Algorithm, kid: &str, key: &EncodingKey) -> String {
    let mut header = Header::new(algorithm);
    header.typ = Some("at+jwt".to_owned());
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

pub fn rsa_a(claims: &Value) -> String {
    sign(claims, Algorithm::RS256, "rsa-a", &EncodingKey::from_rsa_pem(RSA_A).unwrap())
}

/// The text of a successful call's result.
pub fn text(response: &Response) -> String {
    assert_eq!(response.status, 200, "{}", response.body);
    let message: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(message["result"]["isError"], false, "{message}");
    message["result"]["content"][0]["text"].as_str().unwrap().to_owned()
}

pub fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
