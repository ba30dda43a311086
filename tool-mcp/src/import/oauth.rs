//! The OAuth authorization code flow of an HTTP import (with PKCE), as the MCP authorization
//! specification describes it: what the user configures ([`AuthorizationCode`]), how the browser
//! step happens ([`Authorizer`]), and (feature `client-auth`) the state of one server's
//! authorization, built on rmcp's `auth`.

use std::sync::Arc;

use tool_runtime::BoxFuture;

/// The user's step of the authorization code flow: the import calls it with the authorization
/// server's authorization URL and waits for the redirect that comes back.
///
/// `authorize(url)` gets the full authorization request URL (the authorization endpoint with
/// `response_type=code`, `client_id`, `redirect_uri`, `state`, the PKCE `code_challenge` with
/// `code_challenge_method=S256`, `resource` (RFC 8707) and `scope` when scopes were chosen). An
/// application shows it to the user (opens a browser) and returns the URL the authorization
/// server redirected the user agent to: the redirect URI of the [`AuthorizationCode`] with the
/// query parameters `code`, `state` and, from servers that send it, `iss` (RFC 9207), e.g.
/// `http://127.0.0.1:8976/callback?code=abc&state=xyz&iss=https%3A%2F%2Fauth.example`. An `Err`
/// (the user declined, the wait ran out) fails the connection or the call with its text.
///
/// The import checks the rest: the `state`, the `iss` against the issuer of the authorization
/// server's metadata (exactly, as text), then exchanges the code with the PKCE verifier.
/// [`HeadlessRedirect`] is an implementation for servers that approve without a user.
pub trait Authorizer: Send + Sync {
    /// Sends the user to `authorization_url` and returns the redirect URL with the answer.
    fn authorize<'a>(&'a self, authorization_url: &'a str) -> BoxFuture<'a, Result<String, String>>;
}

/// An [`Authorizer`] for authorization servers that approve at once (development and test
/// servers, the MCP conformance suite's): it sends `GET authorization_url` itself, without
/// following redirects, and returns the `Location` of the `3xx` answer (resolved against the
/// authorization URL). No user is involved, so it is no choice for a real server that asks one.
///
/// # Errors
/// The request fails, the answer is not a redirect, or its `Location` is not a URL: the text says
/// which, naming the authorization endpoint without its query (`http://auth/authorize?…`: the
/// query carries the `state` and the PKCE challenge of the flow) and a redirect without its query
/// (which carries the code and the `state`).
#[cfg(feature = "client-auth")]
#[derive(Debug, Clone, Copy, Default)]
pub struct HeadlessRedirect;

#[cfg(feature = "client-auth")]
impl Authorizer for HeadlessRedirect {
    fn authorize<'a>(&'a self, authorization_url: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| format!("cannot build an HTTP client for the authorization request: {e}"))?;
            let response = client.get(authorization_url).send().await.map_err(|e| {
                let (url, e) = (super::shown_url(authorization_url), e.without_url());
                format!("the authorization request to {url} failed: {e}")
            })?;
            let status = response.status();
            let location = response.headers().get(http::header::LOCATION).and_then(|v| v.to_str().ok());
            match (status.is_redirection(), location) {
                (true, Some(location)) => response.url().join(location).map(String::from).map_err(|e| {
                    format!(
                        "the authorization server redirected to `{}`, which is not a URL: {e}",
                        without_query(location)
                    )
                }),
                _ => Err(format!(
                    "the authorization server answered {status} without a redirect; it wants a user, so give the \
                     import an `Authorizer` that opens a browser"
                )),
            }
        })
    }
}

/// How an HTTP import obtains its access token by the authorization code flow with PKCE (see
/// [`McpImport::authorization_code`](super::McpImport::authorization_code)). Its `Debug` form
/// hides the client secret.
///
/// Defaults: no client id (the client is registered dynamically, RFC 7591, as a public client
/// named `tool-mcp`, unless the authorization server takes a client ID metadata document URL
/// given with [`AuthorizationCode::client_metadata_url`]); scopes chosen as the specification
/// says (those of the server's `WWW-Authenticate` challenge, else its protected resource
/// metadata's `scopes_supported`, else none, plus `offline_access` when the authorization server
/// lists it).
#[derive(Clone)]
pub struct AuthorizationCode {
    pub(super) redirect_uri: String,
    pub(super) authorizer: Arc<dyn Authorizer>,
    pub(super) client_id: Option<String>,
    pub(super) client_secret: Option<String>,
    pub(super) client_name: String,
    pub(super) client_metadata_url: Option<String>,
    pub(super) scopes: Vec<String>,
}

impl AuthorizationCode {
    /// The flow with `redirect_uri` (where the authorization server sends the user agent back,
    /// e.g. `http://127.0.0.1:8976/callback` served by the application) and `authorizer` for the
    /// user's step.
    pub fn new(redirect_uri: impl Into<String>, authorizer: impl Authorizer + 'static) -> Self {
        Self {
            redirect_uri: redirect_uri.into(),
            authorizer: Arc::new(authorizer),
            client_id: None,
            client_secret: None,
            client_name: "tool-mcp".to_owned(),
            client_metadata_url: None,
            scopes: Vec::new(),
        }
    }

    /// Uses the client `client_id` registered with the authorization server beforehand, with its
    /// `secret` for a confidential client (sent as HTTP Basic, or in the body when the server
    /// takes only `client_secret_post`); no dynamic registration then.
    #[must_use]
    pub fn client(mut self, client_id: impl Into<String>, secret: Option<String>) -> Self {
        self.client_id = Some(client_id.into());
        self.client_secret = secret;
        self
    }

    /// The `client_name` of a dynamic registration (default `tool-mcp`).
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The `https://` URL of this client's metadata document (a client ID metadata document),
    /// used as the client id by authorization servers that say they take one
    /// (`client_id_metadata_document_supported`); others register the client dynamically.
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Asks for `scopes` instead of choosing them from the server's challenge and metadata.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }
}

impl PartialEq for AuthorizationCode {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.authorizer, &other.authorizer)
            && (&self.redirect_uri, &self.client_id, &self.client_secret, &self.client_name)
                == (&other.redirect_uri, &other.client_id, &other.client_secret, &other.client_name)
            && (&self.client_metadata_url, &self.scopes) == (&other.client_metadata_url, &other.scopes)
    }
}

impl Eq for AuthorizationCode {}

impl std::fmt::Debug for AuthorizationCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationCode")
            .field("redirect_uri", &self.redirect_uri)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<hidden>"))
            .field("client_name", &self.client_name)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// How many times one operation (opening the connection, listing, one call) answers an
/// authorization challenge before it fails: 3 (a first authorization and two step-ups, or a new
/// authorization after the server stopped taking the token).
#[cfg(feature = "client-auth")]
pub(super) const MAX_CHALLENGES: u32 = 3;

#[cfg(feature = "client-auth")]
pub(super) use self::session::Session;

#[cfg(feature = "client-auth")]
mod session {
    use std::sync::atomic::{AtomicU64, Ordering};

    use rmcp::transport::auth::{
        AuthClient, AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationRequest, OAuthState,
        ScopeUpgradeConfig, WWWAuthenticateParams,
    };

    use super::{AuthorizationCode, MAX_CHALLENGES};

    /// One server's authorization: the HTTP client every request of its transports goes through,
    /// whose authorization manager holds the token, replaced on each new authorization.
    ///
    /// What rmcp's `auth` does: the discovery (protected resource metadata from the challenge's
    /// `resource_metadata` or the well-known URLs, RFC 9728; the authorization server's metadata,
    /// RFC 8414 or OpenID, its `issuer` checked), the client (pre-registered, metadata document or
    /// dynamic registration), PKCE S256, `resource` (RFC 8707), the scope choice, the `state` and
    /// `iss` checks and the token exchange. What is ours: when to authorize (a 401's challenge),
    /// when to step up (a 403 `insufficient_scope` naming a scope the token lacks), the bound on
    /// both per operation, and the user's step ([`super::Authorizer`]).
    pub(crate) struct Session {
        url: String,
        flow: AuthorizationCode,
        client: AuthClient<reqwest::Client>,
        /// Counts the authorizations and step-ups done, so that requests refused together
        /// (calls in parallel when the token expired) take the user through one, not one each.
        authorizations: AtomicU64,
    }

    impl Session {
        /// A session for the server at `url`, not yet authorized (requests go out without a token
        /// until the first challenge).
        pub(crate) async fn new(url: &str, flow: AuthorizationCode) -> Result<Self, String> {
            let manager = manager(url).await?;
            let client = AuthClient::new(reqwest::Client::default(), manager);
            Ok(Self { url: url.to_owned(), flow, client, authorizations: AtomicU64::new(0) })
        }

        /// The authorizations and step-ups done so far; read before a request, it tells
        /// [`Session::answer`] whether the token changed since.
        pub(crate) fn authorizations(&self) -> u64 {
            self.authorizations.load(Ordering::SeqCst)
        }

        /// The HTTP client for a transport (clones share the token).
        pub(crate) fn client(&self) -> AuthClient<reqwest::Client> {
            self.client.clone()
        }

        /// Answers the server's `WWW-Authenticate` challenge `challenge`, the `answered`-th of the
        /// operation (0 for the first), to a request sent when [`Session::authorizations`] was
        /// `seen`: nothing when the token changed since (send the request again with the new
        /// one), a step-up when it is `insufficient_scope` and the token was granted something
        /// already, else a new authorization from the discovery on.
        ///
        /// # Errors
        /// The text of what failed (past [`MAX_CHALLENGES`], a step-up to scopes the token has,
        /// the discovery, the registration, the user's step, the checks, the token exchange).
        pub(crate) async fn answer(&self, challenge: &str, answered: u32, seen: u64) -> Result<(), String> {
            let url = &self.url;
            if answered >= MAX_CHALLENGES {
                return Err(format!(
                    "{url} still refuses the token after {MAX_CHALLENGES} authorizations ({challenge}); check the \
                     scopes the authorization server grants this client"
                ));
            }
            let base = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
            let params = WWWAuthenticateParams::parse(challenge, &base);
            let mut manager = self.client.auth_manager.lock().await;
            if self.authorizations() != seen {
                return Ok(());
            }
            let granted = manager.get_current_scopes().await;
            if params.is_insufficient_scope() && !granted.is_empty() {
                let wanted = params.scope.unwrap_or_default();
                if wanted.trim().is_empty() {
                    return Err(format!(
                        "{url} refused the token for its scopes (403 `insufficient_scope`) without naming the scope it \
                         wants; give the flow the scopes to ask for with `AuthorizationCode::scopes`"
                    ));
                }
                if wanted.split_whitespace().all(|scope| granted.iter().any(|g| g == scope)) {
                    return Err(format!(
                        "{url} wants the scopes `{wanted}` for this request, and the token has them already ({}); \
                         the server's scope rules and its challenge disagree",
                        granted.join(" ")
                    ));
                }
                manager.reset_scope_upgrade_attempts().await;
                let authorization_url = manager.request_scope_upgrade(&wanted).await.map_err(|e| self.why(&e))?;
                let callback = self.user_step(&authorization_url).await?;
                manager
                    .exchange_code_for_token_with_issuer(
                        &callback.code,
                        &callback.csrf_token,
                        callback.issuer.as_deref(),
                    )
                    .await
                    .map_err(|e| self.why(&e))?;
            } else {
                *manager = self.authorize(challenge).await?;
            }
            self.authorizations.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }

        /// A new authorization from the discovery on, with a fresh manager: nothing of an earlier
        /// authorization server (client id, token) is used again.
        async fn authorize(&self, challenge: &str) -> Result<AuthorizationManager, String> {
            let flow = &self.flow;
            let mut state = OAuthState::Unauthorized(manager(&self.url).await?);
            let mut request = AuthorizationRequest::new(&flow.redirect_uri)
                .with_challenge(challenge)
                .with_initial_scope_selection()
                .with_client_name(&flow.client_name)
                .with_scopes(flow.scopes.clone());
            if let Some(client_id) = &flow.client_id {
                request = request.with_preregistered_client(client_id);
            }
            if let Some(secret) = &flow.client_secret {
                request = request.with_client_secret(secret);
            }
            if let Some(document) = &flow.client_metadata_url {
                request = request.with_client_metadata_url(document);
            }
            state.start_authorization(request).await.map_err(|e| self.why(&e))?;
            let authorization_url = state.get_authorization_url().await.map_err(|e| self.why(&e))?;
            let callback = self.user_step(&authorization_url).await?;
            state
                .handle_callback_with_issuer(&callback.code, &callback.csrf_token, callback.issuer.as_deref())
                .await
                .map_err(|e| self.why(&e))?;
            state.into_authorization_manager().ok_or_else(|| {
                format!("cannot authorize with {}: the token exchange did not authorize the client", self.url)
            })
        }

        /// The user's step: the redirect the authorizer returns, parsed.
        async fn user_step(&self, authorization_url: &str) -> Result<AuthorizationCallback, String> {
            let redirect = self
                .flow
                .authorizer
                .authorize(authorization_url)
                .await
                .map_err(|e| format!("the authorization for {} did not complete: {e}", self.url))?;
            AuthorizationCallback::from_redirect_url(&redirect).map_err(|e| {
                format!(
                    "the redirect to `{}` does not carry an authorization answer ({e}); return the whole URL the authorization server redirected to, with its `code` and `state`",
                    super::without_query(&redirect)
                )
            })
        }

        fn why(&self, error: &AuthError) -> String {
            format!("cannot authorize with {}: {error}", self.url)
        }
    }

    /// A manager for `url` whose step-ups are bounded by [`MAX_CHALLENGES`] alone.
    async fn manager(url: &str) -> Result<AuthorizationManager, String> {
        let mut manager = AuthorizationManager::new(url)
            .await
            .map_err(|e| format!("cannot prepare the authorization for {url}: {e}"))?;
        let mut upgrades = ScopeUpgradeConfig::default();
        upgrades.max_upgrade_attempts = MAX_CHALLENGES;
        manager.set_scope_upgrade_config(upgrades);
        Ok(manager)
    }
}

/// `url` up to its query or fragment: how an error names a redirect. Its query carries the
/// authorization code and `state` (RFC 6749 4.1.2), which an error text must not: the text may be
/// logged or shown to a model.
#[cfg(feature = "client-auth")]
fn without_query(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or(url)
}

#[cfg(all(test, feature = "client-auth"))]
mod tests {
    use super::{Authorizer, HeadlessRedirect};

    #[tokio::test]
    async fn a_failed_headless_authorization_names_the_endpoint_without_the_state_or_the_challenge() {
        // Nothing listens on port 9 of the loopback: the request fails at once.
        let url = "http://127.0.0.1:9/authorize?response_type=code&state=hunter2-state&code_challenge=hunter2-pkce";
        let error = HeadlessRedirect.authorize(url).await.unwrap_err();
        assert_eq!(error, "the authorization request to http://127.0.0.1:9/authorize?… failed: error sending request");
    }
}
