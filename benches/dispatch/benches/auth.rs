//! A `tools/call` with a validated JWT beside the same call without authorization, one run: two
//! `tool-mcp` servers over the same registry (`add`, two integers in, their sum out), one with a
//! resource server (`McpServer::builder(..).auth(..)`), both called in process through
//! `McpServer::http_service()` (a tower service: no socket, so the ratio is the cost of the check
//! against the whole of a stateless Streamable HTTP request, not diluted by the network).
//!
//! The issuer's JWKS (the RSA key `rsa-a` and the P-256 key `ec-a` of tool-mcp's test data) is
//! served once, at start, by a one-page HTTP server on a loopback port; every measured request
//! carries the same token, so the key is cached.
//! Rows: no authorization; an RS256 token (RSA 2048) remembered after its first check (the
//! default token cache); RS256 and ES256 (P-256) tokens checked on every request (the cache off:
//! one signature check per request). Criterion measures
//! each row for `--seconds` (default 3); then `--pairs` (default 20) alternating slices of
//! `--calls` (default 2,000) calls of each give the median ratio of the pairs, JWT / none,
//! printed with its spread.
//!
//! Run: `cargo bench -p tool-benches --features auth --bench auth -- --pairs 20` (release profile).

use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::Criterion;
use http_body_util::{BodyExt, Full};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tool_mcp::McpServer;
use tool_mcp::auth::ResourceServer;
use tool_runtime::{Registry, tool};

const RSA_A: &[u8] = include_bytes!("../../../tool-mcp/tests/data/rsa-a.pem");
const EC_A: &[u8] = include_bytes!("../../../tool-mcp/tests/data/ec-a.p8.pem");
const JWKS: &str = include_str!("../../../tool-mcp/tests/data/jwks.json");
const RESOURCE: &str = "http://127.0.0.1/mcp";

/// Add two numbers.
#[tool]
fn add(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> String {
    (a + b).to_string()
}

/// Serves `body` as JSON to every request on a free loopback port; returns its URL.
async fn serve_jwks(body: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head).await;
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        }
    });
    url
}

fn token(algorithm: Algorithm, kid: &str, key: &EncodingKey, issuer: &str) -> String {
    let now = jsonwebtoken::get_current_timestamp();
    let claims =
        json!({"iss": issuer, "aud": RESOURCE, "sub": "bench", "scope": "tools:write", "iat": now, "exp": now + 3600});
    let mut header = Header::new(algorithm);
    header.typ = Some("at+jwt".to_owned());
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

fn body(id: u64) -> Bytes {
    Bytes::from(
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string(),
    )
}

/// One `tools/call` through `service`; panics unless it answers `5`.
async fn call(service: &tool_mcp::HttpService, token: Option<&str>) {
    let mut request = http::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "add");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request.body(Full::new(body(1))).unwrap();
    let mut service = service.clone();
    let response = tower_service::Service::call(&mut service, request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert!(
        status.is_success() && bytes.windows(3).any(|w| w == b"\"5\""),
        "{status}: {}",
        String::from_utf8_lossy(&bytes)
    );
}

fn option(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let (plain, protected, uncached, issuer) = runtime.block_on(async {
        let jwks = serve_jwks(JWKS).await;
        let issuer = jwks.trim_end_matches("/jwks").to_owned();
        let registry = || Registry::builder().tool(add::TOOL).build().unwrap();
        let auth = ResourceServer::builder(&issuer, RESOURCE).jwks_uri(&jwks).discover().await.unwrap();
        let every = ResourceServer::builder(&issuer, RESOURCE)
            .jwks_uri(&jwks)
            .token_cache(Duration::ZERO, 0)
            .discover()
            .await
            .unwrap();
        let plain = McpServer::builder(registry()).build().http_service();
        let protected = McpServer::builder(registry()).auth(auth).build().http_service();
        let uncached = McpServer::builder(registry()).auth(every).build().http_service();
        (plain, protected, uncached, issuer)
    });
    let rs256 = token(Algorithm::RS256, "rsa-a", &EncodingKey::from_rsa_pem(RSA_A).unwrap(), &issuer);
    let es256 = token(Algorithm::ES256, "ec-a", &EncodingKey::from_ec_pem(EC_A).unwrap(), &issuer);

    // Criterion reads no arguments here: it would refuse this bench's own options.
    let seconds = option("--seconds", 3) as u64;
    let mut criterion =
        Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(seconds));
    let mut group = criterion.benchmark_group("tools_call_http_service");
    group.bench_function("no auth", |b| b.iter(|| runtime.block_on(call(&plain, None))));
    group.bench_function("JWT RS256, remembered", |b| b.iter(|| runtime.block_on(call(&protected, Some(&rs256)))));
    group.bench_function("JWT RS256, checked every time", |b| {
        b.iter(|| runtime.block_on(call(&uncached, Some(&rs256))))
    });
    group.bench_function("JWT ES256, checked every time", |b| {
        b.iter(|| runtime.block_on(call(&uncached, Some(&es256))))
    });
    group.finish();

    let (pairs, calls) = (option("--pairs", 20), option("--calls", 2000));
    for (name, service, token) in [
        ("RS256, remembered", &protected, &rs256),
        ("RS256, checked every time", &uncached, &rs256),
        ("ES256, checked every time", &uncached, &es256),
    ] {
        let mut ratios: Vec<f64> = runtime.block_on(async {
            let mut ratios = Vec::with_capacity(pairs);
            for pair in 0..pairs {
                let slice = |service: &tool_mcp::HttpService, token: Option<&str>| {
                    let service = service.clone();
                    let token = token.map(str::to_owned);
                    async move {
                        let start = Instant::now();
                        for _ in 0..calls {
                            call(&service, token.as_deref()).await;
                        }
                        start.elapsed()
                    }
                };
                let (jwt, none) = if pair % 2 == 0 {
                    let jwt = slice(service, Some(token)).await;
                    (jwt, slice(&plain, None).await)
                } else {
                    let none = slice(&plain, None).await;
                    (slice(service, Some(token)).await, none)
                };
                ratios.push(jwt.as_secs_f64() / none.as_secs_f64());
            }
            ratios
        });
        ratios.sort_by(f64::total_cmp);
        println!(
            "JWT {name} / no auth, {pairs} pairs of {calls} calls: median {:.3} (lowest {:.3}, highest {:.3})",
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1]
        );
    }
}
