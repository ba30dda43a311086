//! Streamable HTTP as an OAuth 2.1 protected resource, against a small authorization server on a
//! loopback port (metadata and JWKS), with tokens signed here by jsonwebtoken: the metadata
//! documents, the challenge of every refused token, scopes deciding tools, and the JWKS cache.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tool_mcp::McpServer;
use tool_mcp::auth::ResourceServer;
use tool_runtime::tool;

use common::auth::*;
use common::{Response, post};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protected_resource_metadata_is_served_at_both_well_known_paths() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let expected = json!({
        "resource": server.resource,
        "authorization_servers": [issuer.url],
        "scopes_supported": ["tools:exec", "tools:read", "tools:write"],
        "bearer_methods_supported": ["header"],
    });
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let response = common::get(server.addr, path, "127.0.0.1").await;
        assert_eq!((response.status, response.header("content-type")), (200, Some("application/json")), "{path}");
        assert_eq!(serde_json::from_str::<Value>(&response.body).unwrap(), expected, "{path}");
    }
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_token_gets_401_naming_the_metadata_and_the_scopes() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let response = server.call(None, "whoami", json!({})).await;
    assert_eq!(response.status, 401);
    assert_eq!(
        response.header("www-authenticate").unwrap(),
        format!("Bearer scope=\"tools:exec tools:read tools:write\", resource_metadata=\"{}\"", server.metadata_url())
    );
    let body: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(
        body["error"]["message"],
        format!(
            "this server needs an OAuth access token: send `Authorization: Bearer <token>` (the protected resource \
             metadata at {} names the authorization server)",
            server.metadata_url()
        )
    );
    let basic = post(server.addr, "/mcp", "127.0.0.1", &[("Authorization", "Basic YTpi")], &json!({})).await;
    assert_eq!(basic.status, 401);
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_token_calls_as_its_subject_and_lists_only_what_its_scopes_reach() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let reader = rsa_a(&claims(&issuer, &server.resource, "ana", "tools:read"));
    assert_eq!(text(&server.call(Some(&reader), "whoami", json!({})).await), format!("{}#sub=ana", issuer.url));
    assert_eq!(server.list(&reader).await, ["whoami"]);
    let writer = rsa_a(&claims(&issuer, &server.resource, "bo", "tools:read tools:write"));
    assert_eq!(server.list(&writer).await, ["whoami", "write_note"]);
    assert_eq!(text(&server.call(Some(&writer), "write_note", json!({"text": "hi"})).await), "noted: hi");
    let everything = rsa_a(&claims(&issuer, &server.resource, "cy", "tools:read tools:write tools:exec"));
    assert_eq!(server.list(&everything).await, ["run_command", "whoami", "write_note"]);
    assert_eq!(issuer.fetches(), 1, "the JWKS is fetched once, when the server is built");
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_es256_token_of_the_issuers_ec_key_is_accepted() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let token = sign(
        &claims(&issuer, &server.resource, "ana", "tools:read"),
        Algorithm::ES256,
        "ec-a",
        &EncodingKey::from_ec_pem(EC_A).unwrap(),
    );
    assert_eq!(text(&server.call(Some(&token), "whoami", json!({})).await), format!("{}#sub=ana", issuer.url));
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_expired_within_the_leeway_is_accepted() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let mut late = claims(&issuer, &server.resource, "ana", "tools:read");
    late["exp"] = json!(now() - 30);
    assert_eq!(text(&server.call(Some(&rsa_a(&late)), "whoami", json!({})).await), format!("{}#sub=ana", issuer.url));
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_token_gets_401_with_invalid_token_and_why() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let good = claims(&issuer, &server.resource, "ana", "tools:read");
    let with = |key: &str, value: Value| {
        let mut claims = good.clone();
        claims[key] = value;
        claims
    };
    let unsigned =
        format!("{}.{}.", b64(br#"{"alg":"none","typ":"JWT","kid":"rsa-a"}"#), b64(good.to_string().as_bytes()));
    let tampered = {
        let token = rsa_a(&good);
        let parts: Vec<&str> = token.split('.').collect();
        let payload = with("sub", json!("admin")).to_string();
        format!("{}.{}.{}", parts[0], b64(payload.as_bytes()), parts[2])
    };
    let resource = server.resource.clone();
    let cases: Vec<(&str, String, String)> = vec![
        ("expired", rsa_a(&with("exp", json!(now() - 3600))), "the access token expired".to_owned()),
        (
            "not yet valid",
            rsa_a(&with("nbf", json!(now() + 3600))),
            "the access token is not valid yet (`nbf` is ahead)".to_owned(),
        ),
        (
            "wrong audience",
            rsa_a(&with("aud", json!("http://127.0.0.1:1/mcp"))),
            format!("the access token is not for this resource: its `aud` is not `{resource}`"),
        ),
        (
            "wrong issuer",
            rsa_a(&with("iss", json!("http://127.0.0.1:1"))),
            format!("the access token is not from the issuer `{}`", issuer.url),
        ),
        (
            "unknown kid",
            sign(&good, Algorithm::RS256, "rsa-b", &EncodingKey::from_rsa_pem(RSA_B).unwrap()),
            "the issuer has no key `rsa-b`".to_owned(),
        ),
        ("alg none", unsigned, "the access token is not signed (`alg` is `none`)".to_owned()),
        (
            "HS256 signed with the public key",
            sign(&good, Algorithm::HS256, "rsa-a", &EncodingKey::from_secret(RSA_A_PUBLIC).unwrap()),
            "the access token's algorithm `HS256` is not accepted (accepted: RS256, RS384, RS512, PS256, PS384, \
             PS512, ES256, ES384, EdDSA)"
                .to_owned(),
        ),
        (
            "RS256 under the id of the EC key",
            sign(&good, Algorithm::RS256, "ec-a", &EncodingKey::from_rsa_pem(RSA_A).unwrap()),
            "the issuer's key `ec-a` is not a key for `RS256`".to_owned(),
        ),
        ("tampered payload", tampered, "the access token's signature is not valid".to_owned()),
        ("no audience", rsa_a(&with("aud", Value::Null)), "the access token has no `aud`".to_owned()),
        (
            "no subject",
            rsa_a(&with("sub", Value::Null)),
            "the access token has no `sub` (nor `client_id`) to name its subject".to_owned(),
        ),
        ("not a JWT", "opaque-token".to_owned(), "the access token is not a JWT (three base64url parts)".to_owned()),
        (
            "typed JWT (an ID token, say)",
            typed(&good, Some("JWT")),
            "the access token's header has `typ` `JWT`, not `at+jwt` (RFC 9068): send an access token, not another \
             JWT of the issuer"
                .to_owned(),
        ),
        (
            "untyped",
            typed(&good, None),
            "the access token's header has no `typ`, not `at+jwt` (RFC 9068): send an access token, not another JWT \
             of the issuer"
                .to_owned(),
        ),
        (
            "a key id of 60,000 characters",
            sign(&good, Algorithm::RS256, &"k".repeat(60_000), &EncodingKey::from_rsa_pem(RSA_A).unwrap()),
            format!("the issuer has no key `{}...`", "k".repeat(64)),
        ),
    ];
    for (case, token, why) in cases {
        let response = server.call(Some(&token), "whoami", json!({})).await;
        assert_eq!(response.status, 401, "{case}: {}", response.body);
        assert_eq!(response.header("www-authenticate").unwrap(), server.invalid(&why), "{case}");
    }
    server.running.stop().await;
}

/// `claims` signed with the issuer's RSA key under a header whose `typ` is `typ`.
fn typed(claims: &Value, typ: Option<&str>) -> String {
    let mut header = jsonwebtoken::Header::new(Algorithm::RS256);
    header.typ = typ.map(str::to_owned);
    header.kid = Some("rsa-a".to_owned());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_rsa_pem(RSA_A).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_that_types_its_tokens_jwt_is_served_with_the_switch_and_only_then() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b.accept_jwt_typ(true)).await;
    let good = claims(&issuer, &server.resource, "ana", "tools:read");
    for typ in [Some("JWT"), None, Some("at+jwt"), Some("application/at+jwt")] {
        assert_eq!(
            text(&server.call(Some(&typed(&good, typ)), "whoami", json!({})).await),
            format!("{}#sub=ana", issuer.url)
        );
    }
    let other = server.call(Some(&typed(&good, Some("dpop+jwt"))), "whoami", json!({})).await;
    assert_eq!(other.status, 401);
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_with_huge_scopes_gets_a_bounded_challenge() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let scopes = format!("tools:read {}", "x".repeat(60_000));
    let reader = rsa_a(&claims(&issuer, &server.resource, "ana", &scopes));
    let response = server.call(Some(&reader), "write_note", json!({"text": "hi"})).await;
    assert_eq!(response.status, 403);
    assert_eq!(
        response.header("www-authenticate").unwrap(),
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"tools:write\", resource_metadata=\"{}\", \
             error_description=\"tool `write_note` needs the scope `tools:write`; the token has tools:read {}...\"",
            server.metadata_url(),
            "x".repeat(53)
        )
    );
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_beyond_the_tokens_scopes_gets_403_insufficient_scope_with_the_scope_it_needs() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let reader = rsa_a(&claims(&issuer, &server.resource, "ana", "tools:read"));
    let response = server.call(Some(&reader), "write_note", json!({"text": "hi"})).await;
    assert_eq!(response.status, 403);
    assert_eq!(
        response.header("www-authenticate").unwrap(),
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"tools:write\", resource_metadata=\"{}\", \
             error_description=\"tool `write_note` needs the scope `tools:write`; the token has tools:read\"",
            server.metadata_url()
        )
    );
    let body: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(body["id"], 7);
    let response = server.call(Some(&reader), "run_command", json!({})).await;
    assert_eq!(response.status, 403);
    assert!(response.header("www-authenticate").unwrap().contains("scope=\"tools:exec\""));
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_kid_fetches_the_jwks_again_and_a_rotated_key_is_accepted() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b.jwks_refresh_interval(Duration::ZERO)).await;
    let token = sign(
        &claims(&issuer, &server.resource, "ana", "tools:read"),
        Algorithm::RS256,
        "rsa-b",
        &EncodingKey::from_rsa_pem(RSA_B).unwrap(),
    );
    assert_eq!(server.call(Some(&token), "whoami", json!({})).await.status, 401);
    assert_eq!(issuer.fetches(), 2);
    let rotated: Value = serde_json::from_str(RSA_B_JWK).unwrap();
    issuer.jwks.lock().unwrap()["keys"].as_array_mut().unwrap().push(rotated);
    assert_eq!(text(&server.call(Some(&token), "whoami", json!({})).await), format!("{}#sub=ana", issuer.url));
    assert_eq!(issuer.fetches(), 3);
    assert_eq!(text(&server.call(Some(&token), "whoami", json!({})).await), format!("{}#sub=ana", issuer.url));
    assert_eq!(issuer.fetches(), 3, "a cached key costs no fetch");
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_kids_within_the_refresh_interval_cost_no_fetch() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b.jwks_refresh_interval(Duration::from_secs(3600))).await;
    for kid in ["k1", "k2", "k3"] {
        let token = sign(
            &claims(&issuer, &server.resource, "ana", "tools:read"),
            Algorithm::RS256,
            kid,
            &EncodingKey::from_rsa_pem(RSA_A).unwrap(),
        );
        let response = server.call(Some(&token), "whoami", json!({})).await;
        assert_eq!(
            response.header("www-authenticate").unwrap(),
            server.invalid(&format!("the issuer has no key `{kid}`"))
        );
    }
    assert_eq!(issuer.fetches(), 1);
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_with_only_openid_metadata_is_discovered() {
    let issuer = Issuer::start(false).await;
    let server = Protected::start(&issuer, |b| b).await;
    let token = rsa_a(&claims(&issuer, &server.resource, "ana", "tools:read"));
    assert_eq!(text(&server.call(Some(&token), "whoami", json!({})).await), format!("{}#sub=ana", issuer.url));
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_whose_metadata_names_another_issuer_is_refused() {
    let issuer = Issuer::start(true).await;
    let other = issuer.url.replace("127.0.0.1", "localhost");
    let error = ResourceServer::builder(&other, "http://127.0.0.1:1/mcp").discover().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "the metadata at {other}/.well-known/oauth-authorization-server is for the issuer `{}`, not `{other}`; \
             give the issuer exactly as it names itself",
            issuer.url
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_authorization_headers_get_400_invalid_request() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let token = rsa_a(&claims(&issuer, &server.resource, "ana", "tools:read"));
    let bearer = format!("Bearer {token}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let response =
        post(server.addr, "/mcp", "127.0.0.1", &[("Authorization", &bearer), ("Authorization", &bearer)], &body).await;
    assert_eq!(response.status, 400);
    assert_eq!(
        response.header("www-authenticate").unwrap(),
        format!(
            "Bearer error=\"invalid_request\", resource_metadata=\"{}\", error_description=\"the request has two \
             `Authorization` headers; send one\"",
            server.metadata_url()
        )
    );
    server.running.stop().await;
}

/// Print forty numbered lines.
#[tool(set = "lines")]
fn forty_lines() -> String {
    (1..=40).map(|n| format!("line {n}\n")).collect()
}

/// The todo and cache tools on memory stores behind an output layer that keeps 5 lines, every
/// call in the one session `shared` (as a server whose hook names no session per caller).
async fn shared_session_server(issuer: &Issuer) -> Protected {
    use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputLayer, OutputLimits, OutputStore};
    use tool_std::session::{MemorySessionStore, SESSION_STORE, SessionStore};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let auth = ResourceServer::builder(&issuer.url, &resource).discover().await.unwrap();
    let outputs: Arc<dyn OutputStore> = Arc::new(MemoryStore::new());
    let sessions: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let registry = tool_std::registry_builder()
        .sets(["todo", "cache", "lines"])
        .tool(forty_lines::TOOL)
        .override_dependency(&OUTPUT_STORE, outputs)
        .override_dependency(&SESSION_STORE, sessions)
        .output(OutputLayer::new().limits(OutputLimits { max_lines: 5, max_bytes: 10_000 }))
        .build()
        .unwrap();
    let server = McpServer::builder(registry).auth(auth).context(|_, ctx| Ok(ctx.session_id("shared"))).build();
    Protected { addr, resource: resource.clone(), running: common::Running::start_on(server, listener).await }
}

/// The whole message of a call that answered 200.
fn message(response: &Response) -> Value {
    assert_eq!(response.status, 200, "{}", response.body);
    serde_json::from_str(&response.body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_subjects_never_see_each_others_plan_or_cached_outputs() {
    let issuer = Issuer::start(true).await;
    let server = shared_session_server(&issuer).await;
    let ana = rsa_a(&claims(&issuer, &server.resource, "ana", "tools:read tools:write"));
    let bo = rsa_a(&claims(&issuer, &server.resource, "bo", "tools:read tools:write"));

    let plan = json!({"todos": [{"content": "ship the release", "status": "in_progress"}]});
    assert!(!message(&server.call(Some(&ana), "todo_new", plan).await)["result"]["isError"].as_bool().unwrap());
    let read = message(&server.call(Some(&bo), "todo_read", json!({})).await);
    assert_eq!(read["result"]["isError"], true);
    assert_eq!(
        read["result"]["content"][0]["text"],
        "session `shared` cannot be used by this caller: it belongs to another principal; use a session id of your own"
    );
    let ana_plan = text(&server.call(Some(&ana), "todo_read", json!({})).await);
    assert!(ana_plan.contains("ship the release"), "{ana_plan}");

    let cut = message(&server.call(Some(&ana), "forty_lines", json!({})).await);
    let ref_id = cut["result"]["_meta"]["ref_id"].as_str().unwrap_or_else(|| panic!("{cut}")).to_owned();
    let full = text(&server.call(Some(&ana), "tool_output_cache", json!({"ref_id": ref_id, "limit": 40})).await);
    assert!(full.contains("line 40"), "{full}");
    let other = message(&server.call(Some(&bo), "tool_output_cache", json!({"ref_id": ref_id})).await);
    assert_eq!(other["result"]["isError"], true);
    assert_eq!(
        other["result"]["content"][0]["text"],
        format!(
            "no tool output is cached under ref_id `{ref_id}` in this session; use the ref_id of a tool result of \
             this session"
        )
    );
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opaque_token_is_checked_by_introspection_when_it_is_set() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b.introspection("mcp-server", "secret-of-mcp-server")).await;
    let active = format!("opaque-ana-for-{}", server.addr.port());
    assert_eq!(text(&server.call(Some(&active), "whoami", json!({})).await), format!("{}#sub=ana", issuer.url));
    let elsewhere = "opaque-ana-for-1";
    let response = server.call(Some(elsewhere), "whoami", json!({})).await;
    assert_eq!(
        response.header("www-authenticate").unwrap(),
        server.invalid(&format!("the access token is not for this resource: its `aud` is not `{}`", server.resource))
    );
    let response = server.call(Some("revoked"), "whoami", json!({})).await;
    assert_eq!(response.header("www-authenticate").unwrap(), server.invalid("the access token is not active"));
    server.running.stop().await;
}

/// The reply of a response, JSON or an event stream's last message.
fn reply(response: &Response) -> Value {
    match response.header("content-type") {
        Some("text/event-stream") => response
            .body
            .lines()
            .rev()
            .find_map(|line| serde_json::from_str(line.strip_prefix("data:")?.trim()).ok())
            .unwrap_or_else(|| panic!("{}", response.body)),
        _ => serde_json::from_str(&response.body).unwrap_or_else(|_| panic!("{}", response.body)),
    }
}

/// Calls a meta-tool (`search_tools`, `call_tool`) with `token` and gives its result.
async fn meta_call(server: &Protected, token: &str, tool: &str, arguments: Value) -> Value {
    let response = server.call(Some(token), tool, arguments).await;
    assert_eq!(response.status, 200, "{}", response.body);
    reply(&response)["result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_reading_tools_runs_and_finds_no_other_tool_through_the_meta_tools() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start_deferred(&issuer, false).await;
    let reader = rsa_a(&claims(&issuer, &server.resource, "ana", "tools:read"));
    assert_eq!(server.list(&reader).await, ["whoami", "search_tools", "call_tool"]);
    for (tool, arguments) in [("write_note", json!({"text": "pwned"})), ("run_command", json!({}))] {
        let result = meta_call(&server, &reader, "call_tool", json!({"name": tool, "arguments": arguments})).await;
        assert_eq!(
            (&result["isError"], &result["content"][0]["text"]),
            (&json!(true), &json!(format!("unknown tool `{tool}`; available tools: whoami")))
        );
    }
    let found = meta_call(&server, &reader, "search_tools", json!({"query": "note command write run"})).await;
    assert_eq!(found["content"][0]["text"], json!({"tools": []}).to_string());
    // The same paths with the scopes that reach the tools.
    let writer = rsa_a(&claims(&issuer, &server.resource, "bo", "tools:read tools:write"));
    let result =
        meta_call(&server, &writer, "call_tool", json!({"name": "write_note", "arguments": {"text": "hi"}})).await;
    assert_eq!((&result["isError"], &result["content"][0]["text"]), (&json!(false), &json!("noted: hi")));
    let found = meta_call(&server, &writer, "search_tools", json!({"query": "note command write run"})).await;
    let found: Value = serde_json::from_str(found["content"][0]["text"].as_str().unwrap()).unwrap();
    let names: Vec<&str> = found["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["write_note"]);
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_tool_lists_only_the_tools_the_token_reaches() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let reader = rsa_a(&claims(&issuer, &server.resource, "ana", "tools:read"));
    let response = server.call(Some(&reader), "no_such_tool", json!({})).await;
    assert_eq!(reply(&response)["error"]["message"], "unknown tool `no_such_tool`; available tools: whoami");
    server.running.stop().await;
}

/// A legacy (2025-06-18) request with `token`, in `session` when given.
async fn legacy(server: &Protected, token: &str, session: Option<&str>, body: &Value) -> Response {
    let authorization = format!("Bearer {token}");
    let mut headers = vec![("Authorization", authorization.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    post(server.addr, "/mcp", "127.0.0.1", &headers, body).await
}

/// A DELETE of `session` with `token`: its status.
async fn delete_session(server: &Protected, token: &str, session: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nMcp-Session-Id: {session}\r\n\
         MCP-Protocol-Version: 2025-06-18\r\nConnection: close\r\n\r\n"
    );
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    raw.split(' ').nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_serves_only_the_principal_that_opened_it() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start_deferred(&issuer, true).await;
    let ana = rsa_a(&claims(&issuer, &server.resource, "ana", "tools:read tools:write"));
    let mallory = rsa_a(&claims(&issuer, &server.resource, "mallory", "tools:read tools:write"));
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let opened = legacy(&server, &ana, None, &initialize).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(legacy(&server, &ana, Some(&session), &initialized).await.status, 202);
    let whoami = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}});

    // Another subject's valid token with the victim's session id: the session does not exist.
    let stolen = legacy(&server, &mallory, Some(&session), &whoami).await;
    assert_eq!((stolen.status, stolen.body.as_str()), (404, "Not Found: Session not found"));
    assert_eq!(delete_session(&server, &mallory, &session).await, 404);

    // The session is still the victim's, and serves the victim.
    let own = legacy(&server, &ana, Some(&session), &whoami).await;
    assert_eq!(reply(&own)["result"]["content"][0]["text"], format!("{}#sub=ana", issuer.url));
    assert_eq!(delete_session(&server, &ana, &session).await, 202);
    assert_eq!(legacy(&server, &ana, Some(&session), &whoami).await.status, 404);
    server.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_id_and_a_subject_of_the_same_name_are_two_principals() {
    let issuer = Issuer::start(true).await;
    let server = Protected::start(&issuer, |b| b).await;
    let user = rsa_a(&claims(&issuer, &server.resource, "ana", "tools:read"));
    let mut client = claims(&issuer, &server.resource, "ana", "tools:read");
    client.as_object_mut().unwrap().remove("sub");
    client["client_id"] = json!("ana");
    assert_eq!(text(&server.call(Some(&user), "whoami", json!({})).await), format!("{}#sub=ana", issuer.url));
    assert_eq!(
        text(&server.call(Some(&rsa_a(&client)), "whoami", json!({})).await),
        format!("{}#client_id=ana", issuer.url)
    );
    server.running.stop().await;
}
