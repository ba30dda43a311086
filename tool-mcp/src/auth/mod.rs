//! Streamable HTTP as an OAuth 2.1 protected resource (feature `auth`), as the MCP
//! authorization specification (2025-06-18 onwards) asks of a protected server.
//!
//! ```no_run
//! # async fn run(registry: tool_runtime::Registry) -> Result<(), Box<dyn std::error::Error>> {
//! use tool_mcp::auth::ResourceServer;
//!
//! let auth = ResourceServer::builder("https://login.example", "https://tools.example/mcp").discover().await?;
//! let server = tool_mcp::McpServer::builder(registry).auth(auth).allow_host("tools.example").build();
//! server.serve_http("0.0.0.0:8080").await?;
//! # Ok(())
//! # }
//! ```
//!
//! What a client sees:
//! - The protected resource metadata (RFC 9728) at `/.well-known/oauth-protected-resource` and at
//!   its path-suffixed form (`/.well-known/oauth-protected-resource/mcp` for a resource
//!   `https://tools.example/mcp`), unauthenticated, from any origin:
//!   `{"resource": ..., "authorization_servers": [issuer], "scopes_supported": [...],
//!   "bearer_methods_supported": ["header"]}`.
//! - Every request to the endpoint needs `Authorization: Bearer <token>` (RFC 6750; a token in the
//!   query or the body is not read). Without one: `401` with
//!   `WWW-Authenticate: Bearer resource_metadata="<metadata URL>", scope="<every scope of the map>"`.
//!   With one that is not valid: `401` with
//!   `WWW-Authenticate: Bearer error="invalid_token", error_description="<why>", resource_metadata="<metadata URL>"`.
//!   Two `Authorization` headers: `400` with `error="invalid_request"`.
//! - A JWT access token is valid when: its `alg` is in the allow-list ([`DEFAULT_ALGORITHMS`]:
//!   RSA, RSA-PSS, ECDSA P-256/P-384 and Ed25519; never `none`, never an HMAC algorithm, whose
//!   "secret" could be the issuer's public key); it is signed by the key of its `kid` in the
//!   issuer's JWKS, that key being of the algorithm's family (and of its very algorithm when the
//!   JWK names one); `iss` is the issuer; `aud` is (or contains) the canonical resource URI
//!   (RFC 8707: a token for another resource is refused); `exp` is not past and `nbf` not ahead,
//!   give or take the leeway ([`DEFAULT_LEEWAY`], 60 s); its header's `typ` is `at+jwt` (RFC 9068
//!   section 4; [`ResourceServerBuilder::accept_jwt_typ`] also takes `JWT` and none); it has a
//!   `sub` (or, for a client's own token, a `client_id`). A key set in the token's header (`jwk`,
//!   `jku`, `x5u`) is never used. A value read from the token is quoted in a refusal up to 64
//!   characters, and the `WWW-Authenticate` header carries at most [`MAX_CHALLENGE_TEXT`]
//!   characters of a description.
//! - An opaque token (not a JWT) is checked by token introspection (RFC 7662) when
//!   [`ResourceServerBuilder::introspection`] is set, else refused: the introspection answer must
//!   say `"active": true`, name this resource in `aud` and, when it names them, this issuer and an
//!   `exp` not past. Each such request costs one introspection call.
//! - The token's scopes (`scope`, space-separated, or `scp`) decide which tools it reaches
//!   ([`ScopeMap`]): `tools/list` gives only those; a `tools/call` of another gets `403` with
//!   `WWW-Authenticate: Bearer error="insufficient_scope", scope="<the scope it needs>",
//!   resource_metadata="<metadata URL>", error_description="<which tool needs what>"`, so that
//!   the client can ask for that scope (step-up). The same decision ([`ScopeMap::allows_tags`])
//!   is the call's [access](tool_runtime::ToolAccess), which the registry asks for every call it
//!   runs: a tool beyond the token's scopes is not found by `search_tools`, not run by
//!   `call_tool` (the unknown-tool error, listing only the tools the token reaches), nor by a
//!   task or a task's rerun.
//! - The token's issuer and subject make the call's [principal](tool_runtime::ToolContext::principal)
//!   ([`Authenticated::principal`]: `sub` and `client_id` kept apart), set before the [context
//!   hook](crate::McpServerBuilder::context) runs, which can read the whole [`Authenticated`] from
//!   the request's extensions: outputs cached by the output layer, tasks and legacy sessions made
//!   by one principal are not served to another (to it they do not exist).
//!
//! Keys: the issuer's metadata (RFC 8414 `/.well-known/oauth-authorization-server`, else OpenID
//! `/.well-known/openid-configuration`) and its JWKS are fetched once, by
//! [`ResourceServerBuilder::discover`]. The JWKS is fetched again only when a token names a key id
//! the cached set lacks, and then at most once per [refresh
//! interval](ResourceServerBuilder::jwks_refresh_interval) ([`DEFAULT_JWKS_REFRESH_INTERVAL`],
//! 30 s): a burst of tokens with made-up key ids costs one fetch. Nothing is fetched for a token
//! whose key is cached: one signature check, and a token that passed is remembered for
//! [`DEFAULT_TOKEN_CACHE_TTL`] (60 s, never past its `exp`;
//! [`ResourceServerBuilder::token_cache`]), so a client sending the same token again costs a map
//! lookup.

mod discovery;
mod keys;
mod scopes;
mod token;

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::Algorithm;
use serde_json::{Value, json};

pub use scopes::{EXEC_SCOPE, READ_SCOPE, ScopeMap, WRITE_SCOPE};

/// Where the protected resource metadata is served (RFC 9728 section 3): this path at the root,
/// and the same followed by the resource's path.
pub const PROTECTED_RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// How far `exp` may be past, and `nbf` ahead, when a token is checked: 60 s, for clocks that
/// differ a little between the issuer and this server.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);

/// The least time between two fetches of the JWKS for key ids the cache lacks: 30 s.
pub const DEFAULT_JWKS_REFRESH_INTERVAL: Duration = Duration::from_secs(30);

/// How long a token that passed is remembered, so that sending it again costs no signature check:
/// 60 s at most (never past its `exp`). A key removed from the JWKS stops its tokens within that.
pub const DEFAULT_TOKEN_CACHE_TTL: Duration = Duration::from_secs(60);

/// How many tokens that passed are remembered at most: 4 096 (at that count the expired ones go,
/// then all).
pub const DEFAULT_TOKEN_CACHE_ENTRIES: usize = 4096;

/// How long one fetch of the issuer's metadata, its JWKS or an introspection may take: 10 s.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The token algorithms accepted by default: RS256, RS384, RS512, PS256, PS384, PS512, ES256,
/// ES384 and EdDSA. HMAC algorithms (HS256, ...) are never accepted: the issuer's keys are public.
pub const DEFAULT_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Who is calling, as a valid access token says; in the extensions of every request that passed
/// (`parts.extensions.get::<Authenticated>()` in the [context
/// hook](crate::McpServerBuilder::context)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Authenticated {
    /// The token's `sub` (for a client's own token without one, its `client_id`).
    pub subject: String,
    /// The call's [principal](tool_runtime::ToolContext::principal): the issuer, `#`, the claim
    /// that named the subject and `=`, then the subject: `https://auth.example#sub=alice` for a
    /// token with `sub`, `https://auth.example#client_id=alice` for a client's own token without
    /// one. A user and a client of the same name, or two issuers' subjects, are never one
    /// principal, so none reads what another stored (plans, outputs, tasks, sessions).
    pub principal: String,
    /// The token's scopes, in its order.
    pub scopes: Vec<String>,
    /// The token's `client_id` (RFC 9068), when it has one.
    pub client_id: Option<String>,
}

impl Authenticated {
    /// `true` when the token has `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Why a resource server could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The issuer or the resource is not an absolute `http` or `https` URL.
    #[error("{what} `{url}` is not an absolute `http://` or `https://` URL without query or fragment{hint}")]
    Url {
        /// `the issuer` or `the resource`.
        what: &'static str,
        /// The URL as given.
        url: String,
        /// What to change, when known.
        hint: String,
    },
    /// No HTTP client could be made.
    #[error("cannot make an HTTP client for the issuer: {0}")]
    Client(String),
    /// No metadata document of the issuer answered.
    #[error(
        "cannot discover the authorization server `{issuer}`: no metadata document answered ({}); check the issuer URL",
        tried.join("; ")
    )]
    Discovery {
        /// The issuer.
        issuer: String,
        /// Each URL tried, with why it did not do.
        tried: Vec<String>,
    },
    /// The metadata names another issuer (RFC 8414 section 3.3).
    #[error(
        "the metadata at {url} is for the issuer `{got}`, not `{expected}`; give the issuer exactly as it names itself"
    )]
    IssuerMismatch {
        /// The document.
        url: String,
        /// The issuer given.
        expected: String,
        /// The document's `issuer`.
        got: String,
    },
    /// The metadata has no `jwks_uri`.
    #[error("the metadata at {url} has no `jwks_uri`; give the key set's URL with `jwks_uri`")]
    NoJwksUri {
        /// The document.
        url: String,
    },
    /// The JWKS could not be fetched or has no usable key.
    #[error("cannot use the issuer's key set at {url}: {why}")]
    Jwks {
        /// The JWKS URL.
        url: String,
        /// Why.
        why: String,
    },
    /// Introspection was asked for and the metadata has no `introspection_endpoint`.
    #[error("token introspection is set but the issuer's metadata has no `introspection_endpoint`; give it")]
    NoIntrospectionEndpoint,
}

/// The most characters of a refusal's description or scope the `WWW-Authenticate` header
/// carries: 256 (the rest is cut and `...` marks the cut).
pub const MAX_CHALLENGE_TEXT: usize = 256;

pub(crate) use crate::errors::echoed;

/// A request refused by the resource server: the status, and the `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: http::StatusCode,
    /// `invalid_token`, `invalid_request`, `insufficient_scope`, or none when no token was sent.
    pub(crate) error: Option<&'static str>,
    pub(crate) description: String,
    /// The scope of the challenge, when it gives one.
    pub(crate) scope: Option<String>,
}

impl Refusal {
    fn invalid_token(description: impl Into<String>) -> Self {
        Self {
            status: http::StatusCode::UNAUTHORIZED,
            error: Some("invalid_token"),
            description: description.into(),
            scope: None,
        }
    }
}

/// Introspection settings.
#[derive(Debug, Clone)]
struct Introspection {
    client_id: String,
    client_secret: String,
    endpoint: Option<String>,
}

/// Builds a [`ResourceServer`]; see [`ResourceServer::builder`].
#[derive(Debug, Clone)]
pub struct ResourceServerBuilder {
    issuer: String,
    resource: String,
    scopes: ScopeMap,
    leeway: Duration,
    refresh: Duration,
    timeout: Duration,
    algorithms: Vec<Algorithm>,
    jwks_uri: Option<String>,
    introspection: Option<Introspection>,
    resource_name: Option<String>,
    cache: (Duration, usize),
    accept_jwt_typ: bool,
}

/// The resource server: checks the access token of every Streamable HTTP request and decides
/// what it reaches (see the [module docs](self)). Give it to
/// [`McpServerBuilder::auth`](crate::McpServerBuilder::auth). Cheap to clone.
#[derive(Clone)]
pub struct ResourceServer {
    shared: Arc<Shared>,
}

struct Shared {
    issuer: String,
    resource: String,
    metadata_url: String,
    metadata_paths: [String; 2],
    metadata: Value,
    scopes: ScopeMap,
    checker: token::Checker,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("issuer", &self.shared.issuer)
            .field("resource", &self.shared.resource)
            .finish_non_exhaustive()
    }
}

/// `url` made canonical (RFC 8707 / the MCP specification): scheme and host lowercase, no
/// trailing `/` unless the path is only `/`, which is dropped; `None` when it is not an absolute
/// `http`/`https` URL without query or fragment.
pub(crate) fn canonical_url(url: &str) -> Option<String> {
    if url.contains(['#', '?']) {
        return None;
    }
    let uri: http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = uri.authority()?;
    if authority.as_str().contains('@') {
        return None;
    }
    let path = uri.path().trim_end_matches('/');
    Some(format!("{scheme}://{}{path}", authority.as_str().to_ascii_lowercase()))
}

impl ResourceServer {
    /// A builder for the resource `resource` (the MCP endpoint's URL as clients reach it, e.g.
    /// `https://tools.example/mcp`: tokens must name it in `aud`) whose tokens `issuer` issues
    /// (the authorization server's issuer identifier, e.g. `https://login.example`).
    pub fn builder(issuer: impl Into<String>, resource: impl Into<String>) -> ResourceServerBuilder {
        ResourceServerBuilder {
            issuer: issuer.into(),
            resource: resource.into(),
            scopes: ScopeMap::default(),
            leeway: DEFAULT_LEEWAY,
            refresh: DEFAULT_JWKS_REFRESH_INTERVAL,
            timeout: DEFAULT_FETCH_TIMEOUT,
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
            jwks_uri: None,
            introspection: None,
            resource_name: None,
            cache: (DEFAULT_TOKEN_CACHE_TTL, DEFAULT_TOKEN_CACHE_ENTRIES),
            accept_jwt_typ: false,
        }
    }

    /// The canonical resource URI: what tokens must name in `aud`.
    pub fn resource(&self) -> &str {
        &self.shared.resource
    }

    /// The issuer.
    pub fn issuer(&self) -> &str {
        &self.shared.issuer
    }

    /// The scope map.
    pub fn scopes(&self) -> &ScopeMap {
        &self.shared.scopes
    }

    /// The protected resource metadata document (RFC 9728).
    pub fn metadata(&self) -> &Value {
        &self.shared.metadata
    }

    /// The URL of the metadata document that challenges name: the path-suffixed form
    /// (`https://tools.example/.well-known/oauth-protected-resource/mcp`).
    pub fn metadata_url(&self) -> &str {
        &self.shared.metadata_url
    }

    /// The two paths the metadata is served at: [`PROTECTED_RESOURCE_METADATA_PATH`] and the same
    /// followed by the resource's path. [`McpServer::serve_http_on`](crate::McpServer::serve_http_on)
    /// routes them; when you mount [`McpServer::http_service`](crate::McpServer::http_service)
    /// yourself, route these paths to it too.
    pub fn metadata_paths(&self) -> [&str; 2] {
        [&self.shared.metadata_paths[0], &self.shared.metadata_paths[1]]
    }

    /// Checks the `Authorization` header of a request.
    pub(crate) async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Authenticated, Refusal> {
        let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(if headers.contains_key(http::header::AUTHORIZATION) {
                Refusal {
                    status: http::StatusCode::BAD_REQUEST,
                    error: Some("invalid_request"),
                    description: "the request has two `Authorization` headers; send one".to_owned(),
                    scope: None,
                }
            } else {
                self.missing()
            });
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|token| !token.is_empty());
        let Some(token) = token else {
            return Err(self.missing());
        };
        self.shared.checker.check(token).await
    }

    /// The challenge for a request without a bearer token.
    fn missing(&self) -> Refusal {
        Refusal {
            status: http::StatusCode::UNAUTHORIZED,
            error: None,
            description: String::new(),
            scope: Some(self.shared.scopes.scopes().join(" ")),
        }
    }

    /// The refusal of a call to `tool`, which needs `scope`, by a token without it.
    pub(crate) fn insufficient_scope(&self, tool: &str, scope: &str, who: &Authenticated) -> Refusal {
        let has = if who.scopes.is_empty() { "no scope".to_owned() } else { echoed(&who.scopes.join(" ")) };
        Refusal {
            status: http::StatusCode::FORBIDDEN,
            error: Some("insufficient_scope"),
            description: format!("tool `{tool}` needs the scope `{scope}`; the token has {has}"),
            scope: Some(scope.to_owned()),
        }
    }

    /// The `WWW-Authenticate` value of a refusal (RFC 6750 section 3, RFC 9728 section 5.1): a
    /// quoted value holds visible ASCII only (others, quotes and backslashes become `?`), and the
    /// description and scope at most [`MAX_CHALLENGE_TEXT`] characters each, so nothing a token
    /// carries makes the header long.
    pub(crate) fn challenge(&self, refusal: &Refusal) -> String {
        let quoted = |text: &str| {
            let mut out: String = text
                .chars()
                .take(MAX_CHALLENGE_TEXT)
                .map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '?' })
                .collect();
            if text.chars().nth(MAX_CHALLENGE_TEXT).is_some() {
                out.push_str("...");
            }
            out
        };
        let mut params = Vec::new();
        if let Some(error) = refusal.error {
            params.push(format!("error=\"{error}\""));
        }
        if let Some(scope) = &refusal.scope {
            params.push(format!("scope=\"{}\"", quoted(scope)));
        }
        params.push(format!("resource_metadata=\"{}\"", self.shared.metadata_url));
        if refusal.error.is_some() {
            params.push(format!("error_description=\"{}\"", quoted(&refusal.description)));
        }
        format!("Bearer {}", params.join(", "))
    }
}

impl ResourceServerBuilder {
    /// Which scope each tool needs (default [`ScopeMap::default`]).
    #[must_use]
    pub fn scopes(mut self, scopes: ScopeMap) -> Self {
        self.scopes = scopes;
        self
    }

    /// How far `exp` may be past and `nbf` ahead (default [`DEFAULT_LEEWAY`], 60 s; whole seconds).
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The least time between two fetches of the JWKS for key ids the cache lacks (default
    /// [`DEFAULT_JWKS_REFRESH_INTERVAL`], 30 s).
    #[must_use]
    pub fn jwks_refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh = interval;
        self
    }

    /// How long one fetch of the metadata, the JWKS or an introspection may take (default
    /// [`DEFAULT_FETCH_TIMEOUT`], 10 s).
    #[must_use]
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The accepted token algorithms (default [`DEFAULT_ALGORITHMS`]); HMAC algorithms given here
    /// are dropped.
    #[must_use]
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// The JWKS URL, instead of the metadata's `jwks_uri` (then no metadata is fetched unless
    /// introspection needs its endpoint).
    #[must_use]
    pub fn jwks_uri(mut self, url: impl Into<String>) -> Self {
        self.jwks_uri = Some(url.into());
        self
    }

    /// Checks opaque tokens by introspection (RFC 7662) at the metadata's
    /// `introspection_endpoint`, as the client `client_id` with `client_secret` (HTTP Basic).
    #[must_use]
    pub fn introspection(mut self, client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        self.introspection =
            Some(Introspection { client_id: client_id.into(), client_secret: client_secret.into(), endpoint: None });
        self
    }

    /// The introspection endpoint, instead of the metadata's (with
    /// [`ResourceServerBuilder::introspection`]).
    #[must_use]
    pub fn introspection_endpoint(mut self, url: impl Into<String>) -> Self {
        if let Some(introspection) = &mut self.introspection {
            introspection.endpoint = Some(url.into());
        }
        self
    }

    /// Also accept JWT access tokens whose header says `typ: JWT` or gives no `typ` (default
    /// `false`: only `at+jwt` or `application/at+jwt`, as RFC 9068 section 4 requires, so an ID
    /// token or another JWT of the issuer is never taken for an access token). Turn it on only for
    /// an issuer that does not type its access tokens, and only when its other JWTs cannot name
    /// this resource in `aud`.
    #[must_use]
    pub fn accept_jwt_typ(mut self, on: bool) -> Self {
        self.accept_jwt_typ = on;
        self
    }

    /// How long, and how many, tokens that passed are remembered (default
    /// [`DEFAULT_TOKEN_CACHE_TTL`], 60 s, and [`DEFAULT_TOKEN_CACHE_ENTRIES`], 4 096); a token
    /// sent again within that is not checked again (its `exp` still ends it). `Duration::ZERO` or
    /// 0 entries: every request's token is checked. Introspected tokens are not remembered.
    #[must_use]
    pub fn token_cache(mut self, ttl: Duration, entries: usize) -> Self {
        self.cache = (ttl, entries);
        self
    }

    /// A name for people in the metadata (`resource_name`; default none).
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// Fetches the issuer's metadata and its JWKS, and returns the resource server.
    ///
    /// # Errors
    /// The issuer or the resource is not an absolute `http(s)` URL; no metadata document answered,
    /// or it names another issuer or no `jwks_uri`; the JWKS cannot be fetched or has no
    /// asymmetric signature key; introspection is set and no endpoint is known.
    pub async fn discover(self) -> Result<ResourceServer, AuthError> {
        // With both of jsonwebtoken's backends built, it has no default until one is installed;
        // an `Err` means one is installed already (by the application, or an earlier call).
        #[cfg(feature = "auth-aws-lc")]
        let _ = jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER.install_default();
        let issuer = self.issuer.trim().to_owned();
        if canonical_url(&issuer).is_none() {
            return Err(AuthError::Url { what: "the issuer", url: issuer, hint: String::new() });
        }
        let Some(resource) = canonical_url(&self.resource) else {
            return Err(AuthError::Url {
                what: "the resource",
                url: self.resource,
                hint: "; give the endpoint's URL as clients reach it, e.g. `https://tools.example/mcp`".to_owned(),
            });
        };
        let client = discovery::client(self.timeout)?;
        let needs_metadata =
            self.jwks_uri.is_none() || self.introspection.as_ref().is_some_and(|i| i.endpoint.is_none());
        let metadata = if needs_metadata { Some(discovery::discover(&client, &issuer).await?) } else { None };
        let jwks_uri = match (self.jwks_uri, &metadata) {
            (Some(uri), _) => uri,
            (None, Some(metadata)) => metadata.jwks_uri.clone(),
            (None, None) => unreachable!("the metadata is fetched when no JWKS URL is given"),
        };
        let introspection = match self.introspection {
            None => None,
            Some(introspection) => {
                let endpoint = introspection
                    .endpoint
                    .clone()
                    .or_else(|| metadata.as_ref().and_then(|m| m.introspection_endpoint.clone()))
                    .ok_or(AuthError::NoIntrospectionEndpoint)?;
                Some(token::Introspector {
                    endpoint,
                    client_id: introspection.client_id,
                    client_secret: introspection.client_secret,
                })
            }
        };
        let keys = keys::KeyCache::load(client.clone(), jwks_uri, self.refresh).await?;
        let (origin, path) = discovery::split_origin(&resource);
        let metadata_paths =
            [PROTECTED_RESOURCE_METADATA_PATH.to_owned(), format!("{PROTECTED_RESOURCE_METADATA_PATH}{path}")];
        let metadata_url = format!("{origin}{}", metadata_paths[1]);
        let mut document = json!({
            "resource": resource,
            "authorization_servers": [issuer],
            "scopes_supported": self.scopes.scopes(),
            "bearer_methods_supported": ["header"],
        });
        if let Some(name) = self.resource_name {
            document["resource_name"] = Value::from(name);
        }
        let algorithms = self.algorithms.into_iter().filter(|a| a.family() != jsonwebtoken::AlgorithmFamily::Hmac);
        let checker =
            token::Checker::new(&issuer, &resource, self.leeway, algorithms.collect(), keys, introspection, client)
                .remembering(token::TokenCache::new(self.cache.0, self.cache.1))
                .accepting_jwt_typ(self.accept_jwt_typ);
        Ok(ResourceServer {
            shared: Arc::new(Shared {
                issuer,
                resource,
                metadata_url,
                metadata_paths,
                metadata: document,
                scopes: self.scopes,
                checker,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_url_is_made_canonical() {
        assert_eq!(canonical_url("HTTPS://Tools.Example:8443/mcp/").as_deref(), Some("https://tools.example:8443/mcp"));
        assert_eq!(canonical_url("http://127.0.0.1:8080/").as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(canonical_url("http://127.0.0.1:8080/mcp#x"), None);
        assert_eq!(canonical_url("ftp://host/mcp"), None);
        assert_eq!(canonical_url("/mcp"), None);
    }
}
