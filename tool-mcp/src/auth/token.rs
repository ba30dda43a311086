//! Checking one access token: a JWT against the cached JWKS, or an opaque token by introspection.

use std::time::Duration;

use base64::Engine as _;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use serde_json::Value;

use super::keys::KeyCache;
use super::{Authenticated, Refusal, echoed};

/// The introspection endpoint and this server's client credentials there.
pub(crate) struct Introspector {
    pub(crate) endpoint: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
}

/// The claims read from a token beside those jsonwebtoken checks.
#[derive(Deserialize)]
struct Claims {
    exp: Option<u64>,
    sub: Option<String>,
    client_id: Option<String>,
    scope: Option<String>,
    scp: Option<Scp>,
}

/// `scp`: an array of scopes, or one space-separated string.
#[derive(Deserialize)]
#[serde(untagged)]
enum Scp {
    List(Vec<String>),
    Text(String),
}

impl Claims {
    /// Who the token names (see [`Authenticated::principal`] for the principal's form), with
    /// `issuer` the issuer it was checked against.
    fn authenticated(self, issuer: &str) -> Result<Authenticated, Refusal> {
        let named = match (self.sub.as_deref().filter(|s| !s.is_empty()), self.client_id.as_deref()) {
            (Some(sub), _) => Some((sub.to_owned(), "sub")),
            (None, Some(client)) if !client.is_empty() => Some((client.to_owned(), "client_id")),
            _ => None,
        };
        let Some((subject, claim)) = named else {
            return Err(Refusal::invalid_token("the access token has no `sub` (nor `client_id`) to name its subject"));
        };
        let principal = format!("{issuer}#{claim}={subject}");
        let scopes = match (self.scope, self.scp) {
            (Some(scope), _) | (None, Some(Scp::Text(scope))) => scope.split_whitespace().map(str::to_owned).collect(),
            (None, Some(Scp::List(scopes))) => scopes,
            (None, None) => Vec::new(),
        };
        Ok(Authenticated { subject, principal, scopes, client_id: self.client_id })
    }
}

/// Tokens that passed, for a while: the same token sent again costs a map lookup, not a
/// signature check. An entry lives until the token's `exp` (with the leeway) or `ttl` after it
/// was checked, whichever comes first; at `capacity` entries the expired ones go, then the whole
/// map if none had.
pub(crate) struct TokenCache {
    ttl: Duration,
    capacity: usize,
    entries: std::sync::Mutex<std::collections::HashMap<Box<str>, Cached>>,
}

struct Cached {
    who: Authenticated,
    /// When the entry stops being used.
    until: std::time::Instant,
}

impl TokenCache {
    pub(crate) fn new(ttl: Duration, capacity: usize) -> Option<Self> {
        (!ttl.is_zero() && capacity > 0).then(|| Self { ttl, capacity, entries: Default::default() })
    }

    fn get(&self, token: &str) -> Option<Authenticated> {
        let mut entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match entries.get(token) {
            Some(cached) if cached.until > std::time::Instant::now() => Some(cached.who.clone()),
            Some(_) => {
                entries.remove(token);
                None
            }
            None => None,
        }
    }

    /// Keeps `who` for `token`, whose `exp` is `exp` (Unix seconds, with the leeway added).
    fn put(&self, token: &str, who: &Authenticated, exp: Option<u64>) {
        let now = std::time::Instant::now();
        let left =
            exp.map_or(self.ttl, |exp| Duration::from_secs(exp.saturating_sub(jsonwebtoken::get_current_timestamp())));
        let until = now + left.min(self.ttl);
        let mut entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if entries.len() >= self.capacity {
            entries.retain(|_, cached| cached.until > now);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(token.into(), Cached { who: who.clone(), until });
    }
}

/// Checks tokens for one issuer and resource.
pub(crate) struct Checker {
    issuer: String,
    resource: String,
    leeway: Duration,
    algorithms: Vec<Algorithm>,
    /// One validation per accepted algorithm, built once.
    validations: Vec<(Algorithm, Validation)>,
    keys: KeyCache,
    introspector: Option<Introspector>,
    client: reqwest::Client,
    cache: Option<TokenCache>,
    /// Also take `typ: JWT` or no `typ` ([`super::ResourceServerBuilder::accept_jwt_typ`]).
    accept_jwt_typ: bool,
}

impl Checker {
    pub(crate) fn new(
        issuer: &str,
        resource: &str,
        leeway: Duration,
        algorithms: Vec<Algorithm>,
        keys: KeyCache,
        introspector: Option<Introspector>,
        client: reqwest::Client,
    ) -> Self {
        let validations = algorithms
            .iter()
            .map(|&algorithm| {
                let mut validation = Validation::new(algorithm);
                validation.leeway = leeway.as_secs();
                validation.validate_exp = true;
                validation.validate_nbf = true;
                validation.validate_aud = true;
                validation.set_issuer(&[issuer]);
                validation.set_audience(&[resource]);
                validation.set_required_spec_claims(&["exp", "iss", "aud"]);
                (algorithm, validation)
            })
            .collect();
        Self {
            issuer: issuer.to_owned(),
            resource: resource.to_owned(),
            leeway,
            algorithms,
            validations,
            keys,
            introspector,
            client,
            cache: None,
            accept_jwt_typ: false,
        }
    }

    /// The checker, taking `typ: JWT` and untyped tokens too when `on`.
    pub(crate) fn accepting_jwt_typ(mut self, on: bool) -> Self {
        self.accept_jwt_typ = on;
        self
    }

    /// The checker, remembering the tokens that passed in `cache` (none: checking every time).
    pub(crate) fn remembering(mut self, cache: Option<TokenCache>) -> Self {
        self.cache = cache;
        self
    }

    pub(crate) async fn check(&self, token: &str) -> Result<Authenticated, Refusal> {
        if let Some(who) = self.cache.as_ref().and_then(|cache| cache.get(token)) {
            return Ok(who);
        }
        let mut parts = token.split('.');
        let (Some(header), Some(_), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return match &self.introspector {
                Some(introspector) => self.introspect(introspector, token).await,
                None => Err(Refusal::invalid_token("the access token is not a JWT (three base64url parts)")),
            };
        };
        let (algorithm, kid) = self.header(header)?;
        let key = match self.keys.current().find(kid.as_deref(), algorithm) {
            Some(key) => key,
            None => {
                let set = match &kid {
                    Some(kid) => self.keys.refreshed_for(kid).await,
                    None => self.keys.current(),
                };
                match set.find(kid.as_deref(), algorithm) {
                    Some(key) => key,
                    None => {
                        return Err(Refusal::invalid_token(match (&kid, set.has_id(kid.as_deref().unwrap_or(""))) {
                            (Some(kid), true) => {
                                format!("the issuer's key `{}` is not a key for `{algorithm:?}`", echoed(kid))
                            }
                            (Some(kid), false) => format!("the issuer has no key `{}`", echoed(kid)),
                            (None, _) => {
                                "the access token names no key (`kid`) and the issuer has more than one".to_owned()
                            }
                        }));
                    }
                }
            }
        };
        let validation = &self.validations.iter().find(|(a, _)| *a == algorithm).expect("an accepted algorithm").1;
        match jsonwebtoken::decode::<Claims>(token, &key.decoding, validation) {
            Ok(data) => {
                let exp = data.claims.exp.map(|exp| exp.saturating_add(self.leeway.as_secs()));
                let who = data.claims.authenticated(&self.issuer)?;
                if let Some(cache) = &self.cache {
                    cache.put(token, &who, exp);
                }
                Ok(who)
            }
            Err(error) => Err(Refusal::invalid_token(self.describe(error.kind()))),
        }
    }

    /// The accepted algorithm and the key id of a JWT's header, read without trusting anything
    /// else in it.
    fn header(&self, header: &str) -> Result<(Algorithm, Option<String>), Refusal> {
        #[derive(Deserialize)]
        struct Head {
            alg: Option<String>,
            kid: Option<String>,
            typ: Option<String>,
        }
        let head = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header.trim_end_matches('='))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Head>(&bytes).ok())
            .ok_or_else(|| Refusal::invalid_token("the access token's header is not base64url JSON"))?;
        let Some(name) = head.alg else {
            return Err(Refusal::invalid_token("the access token's header has no `alg`"));
        };
        if name.eq_ignore_ascii_case("none") {
            return Err(Refusal::invalid_token("the access token is not signed (`alg` is `none`)"));
        }
        // RFC 9068 section 4: an access token is typed `at+jwt` (the media type's `application/`
        // may be left out; compared without case, RFC 7515 section 4.1.9).
        let typ = head.typ.as_deref();
        let typed =
            typ.is_some_and(|t| t.eq_ignore_ascii_case("at+jwt") || t.eq_ignore_ascii_case("application/at+jwt"));
        let generic = typ.is_none_or(|t| t.eq_ignore_ascii_case("jwt"));
        if !(typed || self.accept_jwt_typ && generic) {
            let given = typ.map_or_else(|| "no `typ`".to_owned(), |t| format!("`typ` `{}`", echoed(t)));
            return Err(Refusal::invalid_token(format!(
                "the access token's header has {given}, not `at+jwt` (RFC 9068): send an access token, not another \
                 JWT of the issuer"
            )));
        }
        match name.parse::<Algorithm>() {
            Ok(algorithm) if self.algorithms.contains(&algorithm) => Ok((algorithm, head.kid)),
            _ => {
                let accepted: Vec<String> = self.algorithms.iter().map(|a| format!("{a:?}")).collect();
                Err(Refusal::invalid_token(format!(
                    "the access token's algorithm `{}` is not accepted (accepted: {})",
                    echoed(&name),
                    accepted.join(", ")
                )))
            }
        }
    }

    fn describe(&self, error: &ErrorKind) -> String {
        match error {
            ErrorKind::ExpiredSignature => "the access token expired".to_owned(),
            ErrorKind::ImmatureSignature => "the access token is not valid yet (`nbf` is ahead)".to_owned(),
            ErrorKind::InvalidIssuer => format!("the access token is not from the issuer `{}`", self.issuer),
            ErrorKind::InvalidAudience => {
                format!("the access token is not for this resource: its `aud` is not `{}`", self.resource)
            }
            ErrorKind::InvalidSignature => "the access token's signature is not valid".to_owned(),
            ErrorKind::MissingRequiredClaim(claim) => format!("the access token has no `{claim}`"),
            ErrorKind::InvalidClaimFormat(claim) => format!("the access token's `{claim}` is malformed"),
            other => format!("the access token cannot be read ({other:?})"),
        }
    }

    /// RFC 7662: the introspection answer for an opaque token.
    async fn introspect(&self, introspector: &Introspector, token: &str) -> Result<Authenticated, Refusal> {
        let body = format!("token={}&token_type_hint=access_token", form_encode(token));
        let credentials = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            form_encode(&introspector.client_id),
            form_encode(&introspector.client_secret)
        ));
        let answer = self
            .client
            .post(&introspector.endpoint)
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::AUTHORIZATION, format!("Basic {credentials}"))
            .body(body)
            .send()
            .await;
        let unavailable = |why: String| {
            tracing::warn!(endpoint = %introspector.endpoint, why, "token introspection failed");
            Refusal {
                status: http::StatusCode::SERVICE_UNAVAILABLE,
                error: Some("temporarily_unavailable"),
                description: "the access token could not be checked now; send the request again later".to_owned(),
                scope: None,
            }
        };
        let response = answer.map_err(|e| unavailable(e.to_string()))?;
        if !response.status().is_success() {
            return Err(unavailable(format!("HTTP {}", response.status())));
        }
        let bytes = response.bytes().await.map_err(|e| unavailable(e.to_string()))?;
        let Ok(Value::Object(answer)) = serde_json::from_slice::<Value>(&bytes) else {
            return Err(unavailable("the answer is not a JSON object".to_owned()));
        };
        if answer.get("active") != Some(&Value::Bool(true)) {
            return Err(Refusal::invalid_token("the access token is not active"));
        }
        let audience = match answer.get("aud") {
            Some(Value::String(aud)) => aud == &self.resource,
            Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(&self.resource)),
            _ => false,
        };
        if !audience {
            return Err(Refusal::invalid_token(format!(
                "the access token is not for this resource: its `aud` is not `{}`",
                self.resource
            )));
        }
        if let Some(iss) = answer.get("iss")
            && iss.as_str() != Some(self.issuer.as_str())
        {
            return Err(Refusal::invalid_token(format!("the access token is not from the issuer `{}`", self.issuer)));
        }
        if let Some(exp) = answer.get("exp").and_then(Value::as_u64)
            && exp + self.leeway.as_secs() < jsonwebtoken::get_current_timestamp()
        {
            return Err(Refusal::invalid_token("the access token expired"));
        }
        let claims: Claims = serde_json::from_value(Value::Object(answer))
            .map_err(|e| Refusal::invalid_token(format!("the introspection answer cannot be read ({e})")))?;
        claims.authenticated(&self.issuer)
    }
}

/// `application/x-www-form-urlencoded` text of `value`.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}
