//! Import the tools of other MCP servers into a [`RegistryBuilder`] (feature `client`): each
//! remote tool becomes a run-time tool of the registry, decoded and validated as strictly as a
//! `#[tool]` before the call leaves the process, and under the registry's permission policy,
//! output layer and turn budget like any other tool.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use tool_mcp::import::McpImport;
//!
//! let files = McpImport::stdio("files", "toolbox", ["mcp", "--set", "fs"]).prefix("files_").connect().await?;
//! let search = McpImport::http("search", "http://127.0.0.1:8931/mcp").bearer_token("secret").connect().await?;
//! let builder = tool_runtime::Registry::builder();
//! let builder = files.add_to(builder)?;
//! let registry = search.add_to(builder)?.build()?;
//! # drop(registry);
//! # Ok(())
//! # }
//! ```
//!
//! # How a remote tool is registered
//! - Name: the import's [prefix](McpImport::prefix) (default none) and the remote name; the whole
//!   must follow the registry's name rule, `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`.
//! - `inputSchema`: goes through the passes of a [`DynamicTool`]: its root must be an object
//!   schema and it must compile as a JSON Schema. A tool that breaks either, or the name rule, is
//!   a [`RegistryError::ImportedTools`] naming the server and every such tool (leave one out with
//!   [`McpImport::exclude`]).
//! - Arguments are decoded by the rules of [`tool_runtime::decode`] and validated against that
//!   schema before anything is sent; an object with declared `properties` is closed, so a field
//!   the schema does not declare is refused here, with the accepted fields, and the server never
//!   sees the call (most servers would accept it silently).
//! - Tags from `annotations` ([`tags_from_mcp_annotations`]): `readOnlyHint` gives `read_only`,
//!   `openWorldHint` (true when absent, as in MCP) gives `external`, which the
//!   [`DefaultPolicy`](tool_runtime::DefaultPolicy) refuses unless allowed by name.
//! - The tool's set is the server's name (for [`RegistryBuilder::sets`]).
//! - `outputSchema` is kept as the definition's output schema, and a result's `structuredContent`
//!   object beside its content ([`ToolResult::Structured`]), so both are served again over MCP.
//!   The `structuredContent` of a tool with an output schema is checked against it: missing or
//!   breaking it, the call fails naming the server, the tool and where (see `docs/import.md`).
//!
//! # A call
//! - The registry's context reaches the server: `notifications/progress` the server sends for the
//!   call become [`ToolContext::progress`] reports (fractions of a unit are cut: `done` and `total`
//!   are whole units), and cancelling the call's token sends `notifications/cancelled` for it.
//! - A result with `isError: true` is an error result with the server's text (a refusal that asks
//!   for approval: see "Approvals through a gateway"). Content blocks: text
//!   stays text, images stay images, an embedded text resource becomes its text, and any other
//!   block (audio, a resource link, a binary resource) is passed on as its JSON text, so nothing
//!   is dropped.
//! - A server's answer to a call is never buffered whole: a JSON string of it longer than
//!   [`ImportLimits::inline_result_bytes`] is stored through the call's output store as it
//!   arrives, and the model sees its head, a marker with its ref id, and its tail (a large image's
//!   base64: a text part naming its size and ref id); a message over
//!   [`ImportLimits::max_result_bytes`] fails the call (`docs/import.md`, "Large results"). Over
//!   stdio and over HTTP, with or without OAuth.
//! - A server that dies or stops answering during a call gives an error result naming the server
//!   and the tool; the next call opens a new connection (a stdio server is started again), first
//!   waiting [`restart_wait`] of the failures in a row (lost connections and failed starts):
//!   [`RESTART_BACKOFF_START`] (250 ms) after one, doubled per further one, at most
//!   [`RESTART_BACKOFF_MAX`] (30 000 ms). A call that succeeds resets the count; a cancelled call
//!   stops waiting.
//!
//! # Approvals through a gateway
//! A refusal of an upstream tool-framework server that asks for the user's approval (its result's
//! `_meta["tool-framework/approval"]`, [`APPROVAL_META`](crate::APPROVAL_META)) reaches this
//! registry's host as [`ToolMessage::approval`](tool_runtime::ToolMessage::approval) (and its MCP
//! clients as the same `_meta`), under the tool's name here; the call sent again with the token
//! ([`ToolCall::approval_token`](tool_runtime::ToolCall::approval_token), or
//! [`APPROVAL_TOKEN_META`](crate::APPROVAL_TOKEN_META) from an MCP client) carries it upstream in
//! its own `tools/call` alone. The request is decoded strictly, within
//! [`MAX_APPROVAL_PREVIEW_BYTES`] and [`MAX_APPROVAL_TOKEN_BYTES`], only from a refusal; one that
//! breaks a rule is not passed on, and the model reads why. The token is kept out of the model's
//! text, the output cache, rmcp's traces and the CLIENT span. Every rule: `docs/import.md`,
//! "Approvals through a gateway".
//!
//! # Idempotency keys through a gateway
//! A call that carries an idempotency key
//! ([`ToolCall::idempotency_key`](tool_runtime::ToolCall::idempotency_key), or
//! [`IDEMPOTENCY_KEY_META`](crate::IDEMPOTENCY_KEY_META) from an MCP client) sends upstream, under
//! the same `_meta` key, a key derived from it
//! ([`ToolContext::idempotency_key_for`](tool_runtime::ToolContext::idempotency_key_for) with the
//! import's name): HMAC-SHA256 under the registry's idempotency server key (without idempotency
//! on the registry, a secret drawn once per process) of the caller's principal, the tool's name,
//! the import's name and the key. A retry by the same principal forwards the same key, also after
//! a restart or on another replica with the same server key, so an upstream with idempotency on
//! runs the effect once; two principals' equal keys forward unrelated keys, so each gets its own
//! execution (the client's key as it is would make every client of this registry one caller
//! upstream). A call without a key forwards none. The key joins the request in the import's
//! transport, out of rmcp's traces and the CLIENT span. A call that has no outcome here (no
//! connection, a lost one, no answer within the call timeout, or the upstream's error marked
//! [`UNAVAILABLE_META`](crate::UNAVAILABLE_META), its refusal while the first call with the key
//! still runs there) fails with [`ToolError::Unavailable`], which a registry with idempotency on
//! does not keep for the key: the next retry reaches the upstream again. Every rule:
//! `docs/import.md`, "Idempotency keys through a gateway".
//!
//! # When the server's tools change
//! On `notifications/tools/list_changed` (sent unscoped on sessions of protocol versions before
//! 2026-07-28, or on a `subscriptions/listen` stream, which the import opens on sessions of
//! 2026-07-28 or later) the tools are listed again: calls then validate against the new schemas,
//! a tool the server no longer offers answers that it is gone, and [`ImportedServer::changes`]
//! ticks. A registry's set of tools is fixed when it is built, so a new remote tool is only
//! callable in a registry built after the change ([`ImportedServer::add_to`] again); an
//! [`McpServer`](crate::McpServer) serves such a registry with
//! [`set_registry`](crate::McpServer::set_registry), as `toolbox mcp --config` does.
//!
//! # Starting a session
//! A stdio server starts with the `initialize` handshake. An HTTP server starts with
//! `server/discover` (the stateless lifecycle of MCP 2026-07-28); a server that answers it with a
//! JSON-RPC error, or does not answer within 10 000 ms, gets `initialize` on the same transport,
//! and one that fails it otherwise (an HTTP error without a JSON-RPC answer) gets `initialize` on
//! a new transport. An authorization challenge is answered instead
//! ([`McpImport::authorization_code`]).
//!
//! # Building
//! The feature `client` of `tool-mcp` adds rmcp's client with its child-process and Streamable
//! HTTP (reqwest) transports; a build that only serves leaves it off. It speaks plain `http://`;
//! the feature `client-tls` adds `https://` (rustls, whose crypto provider builds C code).

mod config;
mod connection;
mod oauth;
mod spill;
mod spill_http;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tool_runtime::provider::tags_from_mcp_annotations;
use tool_runtime::{
    BoxFuture, DynamicTool, DynamicToolError, RegistryBuilder, RegistryError, Tool, ToolContext, ToolDefinition,
    ToolError, ToolResult, is_valid_tool_name,
};

pub use self::config::{ConfigError, McpServersConfig, ServerEntry};
use self::connection::Shared;
#[cfg(feature = "client-auth")]
pub use self::oauth::HeadlessRedirect;
pub use self::oauth::{AuthorizationCode, Authorizer};
pub use crate::limits::{
    MAX_APPROVAL_PREVIEW_BYTES, MAX_APPROVAL_SERVER_NAME_BYTES, MAX_APPROVAL_SERVERS, MAX_APPROVAL_TOKEN_BYTES,
};

/// The wait before a stdio server is started again after its first failure: 250 ms; it doubles
/// with each further failure in a row.
pub const RESTART_BACKOFF_START: Duration = Duration::from_millis(250);

/// The longest wait before a new start: 30 000 ms.
pub const RESTART_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// The wait before a new connection after `failures` failed starts or lost connections in a row:
/// none after none, then [`RESTART_BACKOFF_START`] doubled per further failure, at most
/// [`RESTART_BACKOFF_MAX`].
pub fn restart_wait(failures: u32) -> Duration {
    match failures {
        0 => Duration::ZERO,
        n => RESTART_BACKOFF_START.saturating_mul(1 << (n - 1).min(16)).min(RESTART_BACKOFF_MAX),
    }
}

/// How long a server may take to answer the MCP initialization (a stdio server: from its start):
/// 30 000 ms; past it the connection fails ([`ImportError::Connect`], or an error result for a
/// call that reconnects).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The least [`ImportLimits::inline_result_bytes`]: 4096 bytes. Shorter strings include the
/// protocol's own (method names, `"jsonrpc"`, content types), which must stay in the message.
pub const MIN_INLINE_RESULT_BYTES: usize = 4096;

/// What an import takes from one server at most, and how long it waits for it: the server is
/// treated as hostile. Over a cap, the listing fails with [`ImportError::List`] naming the server
/// and the cap (at [`McpImport::connect`]: that import fails and the others are still served; on
/// a relisting after a change: the old listing is kept). A request that gets no answer within
/// `request_timeout` fails the same way, the start of a connection included
/// ([`CONNECT_TIMEOUT`]), and a tool call without an answer within `call_timeout` ends with an
/// error result naming the server and the limit (the call is cancelled on the server).
///
/// Set the fields you change over the defaults: `ImportLimits { max_tools: 50,
/// ..ImportLimits::default() }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportLimits {
    /// The most tools one listing may hold: default 1,000.
    pub max_tools: usize,
    /// The most `tools/list` pages one listing may take: default 100.
    pub max_pages: usize,
    /// The most bytes (as JSON) of the tools one listing holds: default 8 MiB.
    pub max_listing_bytes: usize,
    /// How long one `tools/list` page may take to be answered: default 30 s.
    pub request_timeout: Duration,
    /// How long one tool call may take to be answered: default 600 s.
    pub call_timeout: Duration,
    /// The longest JSON string, in decoded bytes, a message of the server is passed on with:
    /// default 1 MiB (1,048,576). A longer string in the result of the answer to a tool call
    /// (inside the message's top-level `"result"`, after its top-level `"id"`) is stored as it
    /// arrives, through the call's output store
    /// ([`OUTPUT_STORE`](tool_runtime::output::OUTPUT_STORE), in the call's scope), and the model
    /// sees its preview and ref id; a longer string in any other message is cut to this length,
    /// with a line saying so. See `docs/import.md` ("Large results"). Under
    /// [`MIN_INLINE_RESULT_BYTES`], [`McpImport::connect`] fails with [`ImportError::Misused`].
    pub inline_result_bytes: usize,
    /// The most bytes one answer to a tool call may take as sent: default 256 MiB (268,435,456).
    /// Past it the rest of the message is dropped, and the call it answers fails with an error
    /// naming the server and this setting; what it had stored so far stays in the output store
    /// until the store's time to live lets it go. Any other message (a listing, a notification,
    /// an answer whose `"id"` comes after its content) is capped at the lower of this and 16 MiB,
    /// the line cap of rmcp's stdio transport; a listing past it fails at once, naming the cap.
    /// Under `inline_result_bytes`, [`McpImport::connect`] fails with [`ImportError::Misused`].
    pub max_result_bytes: usize,
}

impl Default for ImportLimits {
    fn default() -> Self {
        Self {
            max_tools: 1_000,
            max_pages: 100,
            max_listing_bytes: 8 << 20,
            request_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(600),
            inline_result_bytes: 1 << 20,
            max_result_bytes: 256 << 20,
        }
    }
}

/// How to reach a server. Its `Debug` form hides the bearer token and the values of `env`.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A command started as a child process, speaking MCP on its standard input and output (its
    /// standard error is this process's).
    Stdio {
        /// The program, found on `PATH` when it has no `/`.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the environment it inherits.
        env: BTreeMap<String, String>,
        /// Its working directory (default: this process's).
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP at a URL (`http://host:port/mcp`).
    Http {
        /// The endpoint.
        url: String,
        /// Sent as `Authorization: Bearer <token>` with every request.
        bearer_token: Option<String>,
        /// Obtain the access token with the OAuth client credentials grant instead (feature
        /// `client-auth`; see [`McpImport::client_credentials`]).
        client_credentials: Option<ClientCredentials>,
        /// Obtain the access token with the OAuth authorization code flow when the server asks
        /// for one (feature `client-auth`; see [`McpImport::authorization_code`]).
        authorization_code: Option<AuthorizationCode>,
    },
}

/// An OAuth client's own credentials, for the client credentials grant (see
/// [`McpImport::client_credentials`]). Its `Debug` form hides the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The client id the authorization server knows.
    pub client_id: String,
    /// The client's secret, sent in the token request's body (`client_secret_post`).
    pub client_secret: String,
    /// The scopes asked for (none: the authorization server's default).
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("client_secret", &"<hidden>")
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio { command, args, env, cwd } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Self::Http { url, bearer_token, client_credentials, authorization_code } => f
                .debug_struct("Http")
                .field("url", &shown_url(url))
                .field("bearer_token", &bearer_token.as_ref().map(|_| "<hidden>"))
                .field("client_credentials", client_credentials)
                .field("authorization_code", authorization_code)
                .finish(),
        }
    }
}

/// `url` as the import's errors, log lines and `Debug` show it: without its userinfo
/// (`user:password@`) and with its query and fragment written `?…`, since either may hold a
/// credential (`?api_key=...`): `http://user:pw@127.0.0.1:9/mcp?token=x` is
/// `http://127.0.0.1:9/mcp?…`. Text without `scheme://` is read the same way from its start.
fn shown_url(url: &str) -> String {
    let (scheme, authority, path) = url_parts(url);
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let (path, hidden) = path.find(['?', '#']).map_or((path, ""), |at| (&path[..at], "?…"));
    let separator = if url.contains("://") { "://" } else { "" };
    format!("{scheme}{separator}{host}{path}{hidden}")
}

/// `url` as its scheme (empty when there is no `scheme://`), its authority (up to the first `/`,
/// `?` or `#` after the scheme) and the rest (path, query and fragment).
fn url_parts(url: &str) -> (&str, &str, &str) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, path) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    (scheme, authority, path)
}

/// `text` (an error or a log line about the server at `url`) with `url` written as [`shown_url`]
/// writes it, and its userinfo and its query and fragment taken out wherever else they occur,
/// as given and as the HTTP client parsed them: its error quotes the URL normalised (the host
/// lowercased; a space, a quote, an `@` of the password or a non-ASCII character
/// percent-encoded: `?token=a b` is quoted `?token=a%20b`).
fn scrub_url(text: &str, url: &str) -> String {
    let mut text = text.replace(url, &shown_url(url));
    let (_, authority, _) = url_parts(url);
    // Longest first: the whole tail before its parts.
    let mut userinfo = Vec::new();
    let mut tails = Vec::new();
    if let Some((given, _)) = authority.rsplit_once('@') {
        userinfo.push(format!("{given}@"));
    }
    if let Some(at) = url.find(['?', '#']) {
        tails.push(url[at..].to_owned());
    }
    if let Ok(parsed) = reqwest::Url::parse(url) {
        match (parsed.username(), parsed.password()) {
            ("", None) => {}
            (user, None) => userinfo.push(format!("{user}@")),
            (user, Some(password)) => userinfo.push(format!("{user}:{password}@")),
        }
        let query = parsed.query().map(|query| format!("?{query}"));
        let fragment = parsed.fragment().map(|fragment| format!("#{fragment}"));
        if let (Some(query), Some(fragment)) = (&query, &fragment) {
            tails.push(format!("{query}{fragment}"));
        }
        tails.extend(query.into_iter().chain(fragment));
    }
    for given in userinfo.into_iter().filter(|given| given.len() > 1) {
        text = text.replace(&given, "");
    }
    for tail in tails.into_iter().filter(|tail| tail.len() > 1) {
        text = text.replace(&tail, "?…");
    }
    text
}

/// What to import from one server; [`McpImport::connect`] connects and lists its tools.
#[derive(Debug, Clone)]
pub struct McpImport {
    name: String,
    transport: Transport,
    prefix: String,
    exclude: BTreeSet<String>,
    /// A setting that does not fit the transport (see [`ImportError::Misused`]).
    misused: Option<&'static str>,
    limits: ImportLimits,
}

impl McpImport {
    /// A server started as `command args...` (a child process on standard input and output).
    /// `name` names the server in errors and is the set of its tools; it is also the first of
    /// `ApprovalRequest::servers` in the approval requests passed on through the import, so it
    /// must be 1 to 128 bytes without control, bidirectional or zero-width characters
    /// ([`McpImport::connect`] refuses another with [`ImportError::Misused`]).
    pub fn stdio<I, S>(name: impl Into<String>, command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let transport = Transport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            cwd: None,
        };
        Self::new(name, transport)
    }

    /// A server at a Streamable HTTP endpoint (`http://127.0.0.1:8931/mcp`).
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            Transport::Http { url: url.into(), bearer_token: None, client_credentials: None, authorization_code: None },
        )
    }

    /// A server reached by `transport`.
    pub fn new(name: impl Into<String>, transport: Transport) -> Self {
        Self {
            name: name.into(),
            transport,
            prefix: String::new(),
            exclude: BTreeSet::new(),
            misused: None,
            limits: ImportLimits::default(),
        }
    }

    /// What the import takes from the server at most, and how long it waits (default
    /// [`ImportLimits::default`]).
    #[must_use]
    pub fn limits(mut self, limits: ImportLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Puts `prefix` before every remote tool's name (default: none), e.g. `files_` makes `read`
    /// `files_read`. The prefix must itself start a valid name: a letter or `_`, then letters,
    /// digits, `_` or `-` ([`ImportError::InvalidPrefix`] otherwise).
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Leaves the remote tool `name` (as the server names it) out of the import.
    #[must_use]
    pub fn exclude(mut self, name: impl Into<String>) -> Self {
        self.exclude.insert(name.into());
        self
    }

    /// Adds an environment variable for a stdio server. On an HTTP import,
    /// [`connect`](McpImport::connect) fails with [`ImportError::Misused`].
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        match &mut self.transport {
            Transport::Stdio { env, .. } => {
                env.insert(key.into(), value.into());
            }
            Transport::Http { .. } => self.misused = Some("`env` is for stdio servers, not for a `url`"),
        }
        self
    }

    /// Sets the bearer token sent to an HTTP server as `Authorization: Bearer <token>`. On a
    /// stdio import, [`connect`](McpImport::connect) fails with [`ImportError::Misused`].
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        match &mut self.transport {
            Transport::Http { bearer_token, .. } => *bearer_token = Some(token.into()),
            Transport::Stdio { .. } => {
                self.misused = Some("a bearer token is for HTTP servers; give a stdio server its secrets with `env`");
            }
        }
        self
    }

    /// Obtains the access token for an HTTP server with the OAuth client credentials grant, as the
    /// MCP authorization specification describes (rmcp's `auth`): the server's protected resource
    /// metadata names the authorization server, whose metadata gives the token endpoint; the token
    /// is asked for this server as the resource (RFC 8707) with `scopes`, and sent as
    /// `Authorization: Bearer <token>` with every request. Needs the feature `client-auth`:
    /// without it [`connect`](McpImport::connect) fails saying so; on a stdio import it fails
    /// with [`ImportError::Misused`].
    #[must_use]
    pub fn client_credentials(
        mut self,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        match &mut self.transport {
            Transport::Http { client_credentials, .. } => {
                *client_credentials = Some(ClientCredentials {
                    client_id: client_id.into(),
                    client_secret: client_secret.into(),
                    scopes: scopes.into_iter().map(Into::into).collect(),
                });
            }
            Transport::Stdio { .. } => {
                self.misused =
                    Some("OAuth client credentials are for HTTP servers; give a stdio server its secrets with `env`");
            }
        }
        self
    }

    /// Obtains the access token for an HTTP server with the OAuth authorization code flow and
    /// PKCE, as the MCP authorization specification describes, when the server asks for one:
    ///
    /// - A `401` answer's `WWW-Authenticate` challenge starts the discovery: the protected
    ///   resource metadata (RFC 9728) at its `resource_metadata` URL, else at the well-known URLs
    ///   of the server's URL, whose `resource` must be this server; then the metadata of its
    ///   authorization server (RFC 8414, or OpenID), whose `issuer` must be the one its URL was
    ///   built from.
    /// - The client: the one `flow` names ([`AuthorizationCode::client`]), else a client ID
    ///   metadata document URL the server takes, else one registered dynamically (RFC 7591).
    /// - The [`Authorizer`] of `flow` takes the user to the authorization URL (PKCE S256,
    ///   `resource` = this server's resource, RFC 8707; the scopes of the challenge, else of the
    ///   metadata's `scopes_supported`, else none) and returns the redirect, whose `state` and
    ///   `iss` (RFC 9207) are checked before the code is exchanged for the token.
    /// - A `403` with `error="insufficient_scope"` naming a scope the token lacks steps up: a new
    ///   authorization for the scopes so far and the new ones, then the request again. A `401`
    ///   after the token was taken (it expired, was revoked, or the server moved to another
    ///   authorization server) authorizes anew from the discovery. One operation (the
    ///   connection, a listing, a call) answers at most 3 challenges, then fails saying so.
    ///
    /// The token lives as long as the import (in memory); a new connection reuses it. Needs the
    /// feature `client-auth`: without it [`connect`](McpImport::connect) fails saying so; on a
    /// stdio import it fails with [`ImportError::Misused`].
    #[must_use]
    pub fn authorization_code(mut self, flow: AuthorizationCode) -> Self {
        match &mut self.transport {
            Transport::Http { authorization_code, .. } => *authorization_code = Some(flow),
            Transport::Stdio { .. } => {
                self.misused =
                    Some("OAuth authorization is for HTTP servers; give a stdio server its secrets with `env`");
            }
        }
        self
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Connects (starts a stdio server), initializes the MCP session and lists the tools.
    ///
    /// # Errors
    /// [`ImportError::InvalidPrefix`]; [`ImportError::Misused`] (also for a name that is not 1 to
    /// 128 bytes without control, bidirectional or zero-width characters, shown escaped);
    /// [`ImportError::Connect`] when the command cannot be
    /// started, the URL cannot be reached or the server does not complete the initialization;
    /// [`ImportError::List`] when `tools/list` fails.
    pub async fn connect(self) -> Result<ImportedServer, ImportError> {
        if let Some(message) = self.misused {
            return Err(ImportError::Misused { server: self.name, message: message.to_owned() });
        }
        if !crate::content::is_server_name(&self.name) {
            let message = format!(
                "its name must be 1 to {} bytes without control, bidirectional or \
                 zero-width characters (it names the server in the approval requests passed on through it, which a \
                 gateway importing this one refuses otherwise); rename it",
                crate::limits::MAX_APPROVAL_SERVER_NAME_BYTES
            );
            return Err(ImportError::Misused { server: self.name.escape_debug().to_string(), message });
        }
        if !self.prefix.is_empty() && !is_valid_tool_name(&self.prefix) {
            return Err(ImportError::InvalidPrefix { server: self.name, prefix: self.prefix });
        }
        if self.limits.inline_result_bytes < MIN_INLINE_RESULT_BYTES {
            let message = format!(
                "ImportLimits::inline_result_bytes is {}, under its least value {MIN_INLINE_RESULT_BYTES}: shorter \
                 strings would take the protocol's own (`\"jsonrpc\"`, `\"type\"`, ...) out of the messages; raise it",
                self.limits.inline_result_bytes
            );
            return Err(ImportError::Misused { server: self.name, message });
        }
        if self.limits.max_result_bytes < self.limits.inline_result_bytes {
            let message = format!(
                "ImportLimits::max_result_bytes ({}) is under ImportLimits::inline_result_bytes ({}); raise it",
                self.limits.max_result_bytes, self.limits.inline_result_bytes
            );
            return Err(ImportError::Misused { server: self.name, message });
        }
        let shared = Shared::connect(self.name, self.transport, self.prefix, self.exclude, self.limits).await?;
        Ok(ImportedServer { shared })
    }
}

/// Why a server could not be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The prefix cannot start a tool name.
    #[error(
        "the tool name prefix `{prefix}` of MCP server `{server}` cannot start a tool name; use a letter or `_`, then letters, digits, `_` or `-` (at most 64 in all)"
    )]
    InvalidPrefix {
        /// The server's name.
        server: String,
        /// The prefix as given.
        prefix: String,
    },
    /// A builder setting that does not fit the transport (`env` on an HTTP import, a bearer token
    /// on a stdio one), or an [`ImportLimits`] value out of its range.
    #[error("the import of MCP server `{server}` is misconfigured: {message}")]
    Misused {
        /// The server's name.
        server: String,
        /// What does not fit.
        message: String,
    },
    /// The server could not be started or reached, or did not initialize.
    #[error("cannot connect to MCP server `{server}`: {message}")]
    Connect {
        /// The server's name.
        server: String,
        /// What failed, with what to check.
        message: String,
    },
    /// `tools/list` failed.
    #[error("MCP server `{server}` did not list its tools: {message}")]
    List {
        /// The server's name.
        server: String,
        /// The error.
        message: String,
    },
}

/// A connected server whose tools can be added to registries; cheap to clone (clones share the
/// connection). The connection closes when the last clone, and every tool made from it, is
/// dropped, or at [`ImportedServer::close`].
#[derive(Clone)]
pub struct ImportedServer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ImportedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportedServer").field("name", &self.shared.name).finish_non_exhaustive()
    }
}

impl ImportedServer {
    /// The server's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The names of the tools the server lists now, as it names them (excluded ones too), in its
    /// order.
    pub fn remote_tools(&self) -> Vec<String> {
        self.shared.listing().iter().map(|tool| tool.name.clone()).collect()
    }

    /// A run-time tool for each remote tool the server lists now (see the
    /// [module docs](self)), in the server's order, excluded ones left out.
    ///
    /// # Errors
    /// [`RegistryError::ImportedTools`] naming the server and every tool whose schema or name
    /// cannot be taken.
    pub fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, RegistryError> {
        let listing = self.shared.listing();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut refused = Vec::new();
        for remote in listing.iter().filter(|tool| !self.shared.exclude.contains(&tool.name)) {
            match self.shared.compiled(&remote.name) {
                Some(Ok(compiled)) => tools.push(Arc::new(ImportedTool {
                    definition: compiled.definition().clone(),
                    remote_name: remote.name.clone(),
                    shared: self.shared.clone(),
                })),
                Some(Err(why)) => refused.push((remote.name.clone(), why)),
                None => {}
            }
        }
        if refused.is_empty() {
            Ok(tools)
        } else {
            Err(RegistryError::ImportedTools { server: self.shared.name.clone(), tools: refused })
        }
    }

    /// `builder` with [`ImportedServer::tools`] added.
    ///
    /// # Errors
    /// As [`ImportedServer::tools`].
    #[track_caller]
    pub fn add_to(&self, builder: RegistryBuilder) -> Result<RegistryBuilder, RegistryError> {
        Ok(self.tools()?.into_iter().fold(builder, RegistryBuilder::tool_dyn))
    }

    /// Lists the tools again now (as a `notifications/tools/list_changed` would).
    ///
    /// # Errors
    /// [`ImportError::Connect`] when a lost connection cannot be opened again,
    /// [`ImportError::List`] when `tools/list` fails.
    pub async fn refresh(&self) -> Result<(), ImportError> {
        self.shared.list_now(true).await
    }

    /// A counter of listings, starting at 0 for the one [`McpImport::connect`] made; it moves on
    /// each new listing, so an application can rebuild its registry when the tools change.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.generation.subscribe()
    }

    /// The process id of a stdio server's current child process (`None` for HTTP, or while no
    /// child runs).
    pub fn child_pid(&self) -> Option<u32> {
        self.shared.child_pid()
    }

    /// The most bytes of the server's strings the import held in memory at once on the open
    /// connection (0 while none is open): at most
    /// 2 × [`ImportLimits::inline_result_bytes`] + 2 for strings without escapes, 7 × + 24 at
    /// worst, whatever the length of what the server sent.
    pub fn peak_held_bytes(&self) -> usize {
        self.shared.spill_peak_held_bytes()
    }

    /// Closes the connection now (a stdio child is asked to exit by closing its input, then
    /// killed); a later call opens a new one.
    pub async fn close(&self) {
        self.shared.disconnect().await;
    }
}

/// One remote tool in a registry.
struct ImportedTool {
    /// As first listed (a registry's definitions are fixed).
    definition: ToolDefinition,
    remote_name: String,
    shared: Arc<Shared>,
}

impl Tool for ImportedTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        // The schema of the latest listing: it may have changed since the registry was built.
        let current = self.shared.compiled(&self.remote_name);
        Box::pin(async move {
            match current {
                Some(Ok(tool)) => tool.call(arguments, ctx).await,
                Some(Err(why)) => Err(ToolError::Failed(format!(
                    "MCP server `{}` now lists `{}` with a definition this registry cannot take ({why}); call another tool",
                    self.shared.name, self.remote_name
                ))),
                None => Err(ToolError::Failed(format!(
                    "MCP server `{}` no longer offers `{}` (its tool list changed); call another tool",
                    self.shared.name, self.remote_name
                ))),
            }
        })
    }
}

/// What a remote tool's listing compiles to: the run-time tool, or why it is refused.
type Compiled = HashMap<String, Result<Arc<DynamicTool>, String>>;

/// Compiles each listed tool (see [`ImportedServer::tools`] for the rules).
fn compile(shared: &std::sync::Weak<Shared>, name: &str, prefix: &str, listing: &[RemoteTool]) -> Compiled {
    listing
        .iter()
        .map(|remote| {
            let compiled = compile_one(shared, name, prefix, remote).map(Arc::new);
            (remote.name.clone(), compiled)
        })
        .collect()
}

fn compile_one(
    shared: &std::sync::Weak<Shared>,
    server: &str,
    prefix: &str,
    remote: &RemoteTool,
) -> Result<DynamicTool, String> {
    let local = format!("{prefix}{}", remote.name);
    if !is_valid_tool_name(&local) {
        return Err(format!(
            "the name `{local}` breaks the rule `^[A-Za-z_][A-Za-z0-9_-]{{0,63}}$` (a letter or `_`, then at most 63 letters, digits, `_` or `-`)"
        ));
    }
    let shared = shared.clone();
    let remote_name = remote.name.clone();
    let output = match &remote.output_schema {
        Some(schema) => Some(Arc::new(
            jsonschema::validator_for(schema)
                .map_err(|error| format!("its `outputSchema` is not a valid JSON Schema: {error}"))?,
        )),
        None => None,
    };
    let server_name = server.to_owned();
    let handler = move |arguments: Value, ctx: ToolContext| {
        let shared = shared.upgrade();
        let remote_name = remote_name.clone();
        let (output, server_name) = (output.clone(), server_name.clone());
        async move {
            let result = match shared {
                Some(shared) => shared.call(&remote_name, arguments, &ctx).await?,
                None => {
                    return Err(ToolError::Unavailable(
                        "the MCP import was closed; build the registry again".to_owned(),
                    ));
                }
            };
            match output {
                Some(validator) => check_structured(result, validator, &server_name, &remote_name).await,
                None => Ok(result),
            }
        }
    };
    let tool =
        DynamicTool::new(local, remote.description.clone(), remote.input_schema.clone(), handler).map_err(|error| {
            match error {
                DynamicToolError::NotAnObject { .. } => {
                    "its `inputSchema` is not an object schema (`\"type\": \"object\"` at the root)".to_owned()
                }
                DynamicToolError::InvalidSchema { message, .. } => {
                    format!("its `inputSchema` is not a valid JSON Schema: {message}")
                }
                other => other.to_string(),
            }
        })?;
    let tool = tool.with_set(server).with_tags(tags_from_mcp_annotations(&remote.annotations));
    Ok(match &remote.output_schema {
        Some(schema) => tool.with_output_schema(schema.clone()),
        None => tool,
    })
}

/// `result` of the tool `tool` of `server`, whose declared `outputSchema` `validator` checks: its
/// `structuredContent` must be there and conform (MCP: a server with an output schema MUST give
/// structured results that conform to it, and clients SHOULD validate them), else the call fails
/// naming the first place where it breaks the schema, and nothing of it is passed on. Checked on
/// the blocking pool (a large value takes a while).
async fn check_structured(
    result: ToolResult,
    validator: Arc<jsonschema::Validator>,
    server: &str,
    tool: &str,
) -> Result<ToolResult, ToolError> {
    let ToolResult::Structured { content, value } = result else {
        return Err(ToolError::Failed(format!(
            "MCP server `{server}` answered the call of `{tool}` without `structuredContent`, which its declared \
             `outputSchema` requires; the result is not passed on"
        )));
    };
    let checked = tool_runtime::off_worker(move || {
        let broken = validator.iter_errors(&value).next().map(|error| {
            let at = error.instance_path().to_string();
            let at = if at.is_empty() { "the top".to_owned() } else { format!("`{at}`") };
            format!("at {at}: {error}")
        });
        (value, broken)
    })
    .await;
    let Some((value, broken)) = checked else {
        return Err(ToolError::Failed("the runtime is shutting down".to_owned()));
    };
    match broken {
        None => Ok(ToolResult::Structured { content, value }),
        Some(broken) => Err(ToolError::Failed(format!(
            "MCP server `{server}` answered the call of `{tool}` with `structuredContent` that breaks its declared \
             `outputSchema` ({broken}); the result is not passed on"
        ))),
    }
}

/// A tool as the server lists it.
#[derive(Debug, Clone)]
struct RemoteTool {
    name: String,
    description: String,
    input_schema: Value,
    output_schema: Option<Value>,
    annotations: serde_json::Map<String, Value>,
}

impl RemoteTool {
    /// From a `tools/list` entry (read as JSON, so that every field the server sent is seen).
    fn from_listed(tool: &rmcp::model::Tool) -> Self {
        let value = serde_json::to_value(tool).unwrap_or(Value::Null);
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        Self {
            name: tool.name.to_string(),
            description: text("description").or_else(|| text("title")).unwrap_or_default(),
            input_schema: value.get("inputSchema").cloned().unwrap_or(Value::Null),
            output_schema: value.get("outputSchema").cloned(),
            annotations: value.get("annotations").and_then(Value::as_object).cloned().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_url_is_shown_without_its_userinfo_and_with_its_query_and_fragment_hidden() {
        assert_eq!(super::shown_url("http://user:pw@127.0.0.1:9/mcp?token=x#f"), "http://127.0.0.1:9/mcp?…");
        assert_eq!(super::shown_url("https://a@b@host/mcp"), "https://host/mcp");
        assert_eq!(super::shown_url("http://host?k=v"), "http://host?…");
        assert_eq!(super::shown_url("http://127.0.0.1:9/mcp"), "http://127.0.0.1:9/mcp");
        assert_eq!(super::shown_url("user:pw@host/p?q"), "host/p?…");
    }

    #[test]
    fn an_errors_text_loses_the_userinfo_and_the_query_of_the_url_wherever_it_quotes_them() {
        let url = "http://user:pw@LOCALHOST:9/mcp?token=x";
        let text = "http://user:pw@LOCALHOST:9/mcp?token=x failed (error sending request for url (http://localhost:9/mcp?token=x))";
        assert_eq!(
            super::scrub_url(text, url),
            "http://LOCALHOST:9/mcp?… failed (error sending request for url (http://localhost:9/mcp?…))"
        );
    }

    #[test]
    fn an_errors_text_loses_the_query_and_userinfo_as_the_http_client_normalised_them() {
        // The HTTP client's error quotes the URL it parsed: a space, a quote or a non-ASCII
        // character of the query (and an `@` in the password) percent-encoded.
        let url = "http://us@r:p@ss w\u{e9}@127.0.0.1:9/mcp?token=se cr\"et\u{e9}#frag ment";
        let parsed = reqwest::Url::parse(url).unwrap().to_string();
        assert_eq!(parsed, "http://us%40r:p%40ss%20w%C3%A9@127.0.0.1:9/mcp?token=se%20cr%22et%C3%A9#frag%20ment");
        let text = format!("error sending request for url ({parsed})");
        assert_eq!(super::scrub_url(&text, url), "error sending request for url (http://127.0.0.1:9/mcp?…)");
        let without_fragment = "error sending request for url (http://127.0.0.1:9/mcp?token=se%20cr%22et%C3%A9)";
        assert_eq!(super::scrub_url(without_fragment, url), "error sending request for url (http://127.0.0.1:9/mcp?…)");
    }

    use super::*;

    fn remote(schema: Value, annotations: Value) -> RemoteTool {
        RemoteTool {
            name: "find".to_owned(),
            description: "Find things.".to_owned(),
            input_schema: schema,
            output_schema: None,
            annotations: annotations.as_object().cloned().unwrap_or_default(),
        }
    }

    fn compiled(schema: Value) -> Result<DynamicTool, String> {
        compile_one(&std::sync::Weak::new(), "srv", "s_", &remote(schema, json!({})))
    }

    #[test]
    fn the_wait_before_a_new_start_doubles_from_250_ms_up_to_30_s() {
        let waits: Vec<u128> =
            [0, 1, 2, 3, 7, 8, 40, u32::MAX].into_iter().map(|n| restart_wait(n).as_millis()).collect();
        assert_eq!(waits, [0, 250, 500, 1000, 16_000, 30_000, 30_000, 30_000]);
    }

    #[test]
    fn the_debug_form_hides_secrets() {
        let http = McpImport::http("web", "http://127.0.0.1:9/mcp").bearer_token("s3cret");
        assert_eq!(
            format!("{:?}", http.transport),
            r#"Http { url: "http://127.0.0.1:9/mcp", bearer_token: Some("<hidden>"), client_credentials: None, authorization_code: None }"#
        );
        let oauth = McpImport::http("web", "http://127.0.0.1:9/mcp").client_credentials("agent", "s3cret", ["a"]);
        assert_eq!(
            format!("{:?}", oauth.transport),
            r#"Http { url: "http://127.0.0.1:9/mcp", bearer_token: None, client_credentials: Some(ClientCredentials { client_id: "agent", client_secret: "<hidden>", scopes: ["a"] }), authorization_code: None }"#
        );
        let stdio = McpImport::stdio("files", "toolbox", ["mcp"]).env("API_KEY", "s3cret");
        assert_eq!(
            format!("{:?}", stdio.transport),
            r#"Stdio { command: "toolbox", args: ["mcp"], env: ["API_KEY"], cwd: None }"#
        );
    }

    /// An authorizer that never gets an answer.
    struct Declines;

    impl Authorizer for Declines {
        fn authorize<'a>(&'a self, _url: &'a str) -> BoxFuture<'a, Result<String, String>> {
            Box::pin(async { Err("declined".to_owned()) })
        }
    }

    #[test]
    fn the_debug_form_of_the_authorization_code_flow_hides_the_secret() {
        let flow = AuthorizationCode::new("http://127.0.0.1:9/callback", Declines)
            .client("agent", Some("s3cret".to_owned()))
            .scopes(["a"]);
        assert_eq!(
            format!("{flow:?}"),
            r#"AuthorizationCode { redirect_uri: "http://127.0.0.1:9/callback", client_id: Some("agent"), client_secret: Some("<hidden>"), client_name: "tool-mcp", client_metadata_url: None, scopes: ["a"], .. }"#
        );
    }

    #[tokio::test]
    async fn the_authorization_code_flow_on_a_stdio_import_is_refused_at_connect() {
        let flow = AuthorizationCode::new("http://127.0.0.1:9/callback", Declines);
        let error = McpImport::stdio("files", "toolbox", ["mcp"]).authorization_code(flow).connect().await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "the import of MCP server `files` is misconfigured: OAuth authorization is for HTTP servers; give a stdio server its secrets with `env`"
        );
    }

    #[tokio::test]
    async fn a_setting_for_the_other_transport_is_refused_at_connect() {
        assert_eq!(
            McpImport::http("web", "http://127.0.0.1:9/mcp").env("KEY", "v").connect().await.unwrap_err().to_string(),
            "the import of MCP server `web` is misconfigured: `env` is for stdio servers, not for a `url`"
        );
        assert_eq!(
            McpImport::stdio("files", "toolbox", ["mcp"]).bearer_token("t").connect().await.unwrap_err().to_string(),
            "the import of MCP server `files` is misconfigured: a bearer token is for HTTP servers; give a stdio server its secrets with `env`"
        );
    }

    #[tokio::test]
    async fn a_url_that_is_not_http_is_refused() {
        let error = McpImport::http("web", "ftp://127.0.0.1/mcp").connect().await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot connect to MCP server `web`: the URL `ftp://127.0.0.1/mcp` is not an `http://` or `https://` URL"
        );
    }

    #[cfg(not(feature = "client-tls"))]
    #[tokio::test]
    async fn an_https_url_without_the_tls_feature_says_which_feature_to_build_with() {
        let error = McpImport::http("web", "https://127.0.0.1/mcp").connect().await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot connect to MCP server `web`: `https://127.0.0.1/mcp` needs TLS, which this build leaves out; build tool-mcp with the feature `client-tls`"
        );
    }

    #[test]
    fn a_schema_whose_root_is_not_an_object_is_refused() {
        assert_eq!(
            compiled(json!({"type": "array", "items": {"type": "string"}})).unwrap_err(),
            "its `inputSchema` is not an object schema (`\"type\": \"object\"` at the root)"
        );
    }

    #[test]
    fn a_schema_that_does_not_compile_is_refused_with_the_validators_message() {
        let error = compiled(json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}))
            .unwrap_err();
        assert!(error.starts_with("its `inputSchema` is not a valid JSON Schema: "), "{error}");
        assert!(error.contains("zero"), "{error}");
    }

    #[test]
    fn a_tool_is_named_with_the_prefix_set_by_the_server_and_tagged_from_its_annotations() {
        let tool = compile_one(
            &std::sync::Weak::new(),
            "srv",
            "s_",
            &remote(json!({"type": "object", "properties": {}}), json!({"readOnlyHint": true, "openWorldHint": false})),
        )
        .unwrap();
        let definition = tool.definition();
        assert_eq!(definition.name, "s_find");
        assert_eq!(definition.set.as_deref(), Some("srv"));
        assert_eq!(definition.tags, ["read_only"]);
    }

    #[tokio::test]
    async fn a_call_after_the_import_is_dropped_says_so() {
        let tool = compiled(json!({"type": "object", "properties": {}})).unwrap();
        let error = tool.call("{}", &ToolContext::new()).await.unwrap_err();
        assert_eq!(error.to_string(), "the MCP import was closed; build the registry again");
    }
}
