//! Resources, resource templates, prompts and completions served beside the tools, declared on
//! the builder ([`McpServerBuilder::resource`](crate::McpServerBuilder::resource), [`McpServerBuilder::resource_template`](crate::McpServerBuilder::resource_template),
//! [`McpServerBuilder::prompt`](crate::McpServerBuilder::prompt), [`McpServerBuilder::completion`](crate::McpServerBuilder::completion)) with a handler each.
//!
//! ```
//! use tool_mcp::{Completes, McpServer, Prompt, PromptMessage, RequestError, Resource, ResourceTemplate};
//! use tool_runtime::{ContentPart, Registry, ResourceContents};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = McpServer::builder(Registry::builder().build()?)
//!     .resource(Resource::new("notes://index", "index").mime_type("text/markdown"), |_| async {
//!         Ok(ResourceContents::Text("# Notes".to_owned()))
//!     })
//!     .resource_template(ResourceTemplate::new("notes://note/{id}", "note")?, |request| async move {
//!         match request.variables["id"].as_str() {
//!             "1" => Ok(ResourceContents::Text("the first note".to_owned())),
//!             id => Err(RequestError::invalid(format!("there is no note `{id}`; read `notes://index` for the ids"))),
//!         }
//!     })
//!     .prompt(Prompt::new("summarize").description("Summarize a note.").argument("id", "The note's id."), |request| async move {
//!         let id = &request.arguments["id"];
//!         Ok(vec![PromptMessage::user(ContentPart::text(format!("Summarize note {id}.")))])
//!     })
//!     .completion(Completes::prompt_argument("summarize", "id"), |request| async move {
//!         Ok(["1", "2", "10"].into_iter().filter(|id| id.starts_with(&request.value)).map(String::from).collect())
//!     })
//!     .build();
//! # drop(server);
//! # Ok(())
//! # }
//! ```
//!
//! # What a client sees
//! - `initialize` (and `server/discover`): the `resources` capability when a resource or a
//!   template is declared, `prompts` when a prompt is, `completions` when a completion is; none of
//!   them otherwise, and then their methods answer `-32601` (method not found), as before.
//! - `resources/list`, `resources/templates/list`, `prompts/list`: every declaration, in one page,
//!   sorted by URI, URI template and name. Declaring the same URI, template or name again
//!   replaces the first declaration.
//! - `resources/read`: the resource whose URI is the one asked for; else the first template (by
//!   URI template) the URI expands, its variables percent-decoded in
//!   [`ResourceRequest::variables`]. The result is one content with the URI asked for, the
//!   declared `mimeType`, and `text` or `blob` as the handler returns
//!   ([`ResourceContents`]). A URI that is neither: `-32602` (invalid params) with
//!   `data: {"uri": URI}`, as MCP 2026-07-28 (SEP-2164) asks.
//! - `prompts/get`: the arguments are checked against the declaration before the handler runs:
//!   an unknown prompt, an argument it does not declare, a required one missing or a value that
//!   is not a string each get `-32602` naming what to change. The result has the prompt's
//!   description and the handler's messages, each content as a tool's content part maps
//!   ([`call_result`](crate::call_result)).
//! - `completion/complete`: a `ref/prompt` names a declared prompt and one of its arguments, a
//!   `ref/resource` a declared URI template (`uriTemplate`, as listed) and one of its variables;
//!   anything else is `-32602` naming the declared ones. With no completion declared for that
//!   argument the answer is no values. The first 100 values (MCP's cap) are sent, with `total`
//!   and `hasMore`.
//! - A handler's [`RequestError::Invalid`] is `-32602` with its message (for `resources/read`,
//!   with `data: {"uri": URI}`), [`RequestError::Failed`] is `-32603` (internal error); a handler
//!   that panics is `-32603` saying so, and the server goes on.
//! - Caching hints (MCP 2026-07-28): `resources/read` carries the
//!   [resource's](Resource::cache) or [template's](ResourceTemplate::cache) `ttlMs` and
//!   `cacheScope`; list results, and reads without hints, carry rmcp's defaults for clients of
//!   2026-07-28 (`ttlMs: 0`, `cacheScope: "private"`: immediately stale, not shared), and none for
//!   older clients.
//!
//! Everything is stateless: each request is answered from the declarations and the handlers'
//! own state (what the closures capture), so any worker behind a load balancer answers it.
//! Resource updates ([`McpServer::notify_resource_updated`](crate::McpServer::notify_resource_updated)), when
//! [turned on](crate::McpServerBuilder::resource_subscriptions), reach clients of 2026-07-28 on their
//! `subscriptions/listen` streams, and clients of earlier versions that sent
//! `resources/subscribe`: that one needs the server to remember the client between requests, so
//! it is served on standard input and output and in legacy sessions, and refused over stateless
//! HTTP.
//!
//! [`McpServer::notify_resource_updated`](crate::McpServer::notify_resource_updated): crate::McpServer::notify_resource_updated
//!
//! # Why a builder, not a macro
//! Tools have `#[tool]` because a tool's interface is its Rust signature: typed parameters become
//! a JSON Schema, arguments are decoded into them, dependencies are injected, and the macro is
//! what keeps schema and code in step. Resources and prompts have almost no signature: a
//! resource's interface is a URI (data, often computed at startup: a directory, a config), a
//! template's a handful of string variables, a prompt's a list of string arguments with a
//! required flag. A macro would have little to derive, would fix URIs at compile time, and would
//! need the registration machinery (`inventory`, linking) for items that belong to one server.
//! Closures on the builder keep each declaration next to the server's configuration, capture the
//! state they read (an `Arc` of a store) without dependency injection, and take async bodies. What
//! is lost is the one check a macro could make at compile time: that the code reads the variables
//! and arguments the declaration names. Here the template is checked when it is parsed
//! ([`ResourceTemplate::new`] returns [`TemplateError`]), [`ResourceRequest::variables`] holds
//! exactly the template's variables and [`PromptRequest::arguments`] every required argument, and
//! a handler that indexes a name it was not given panics, which the client gets as `-32603`
//! saying so. A `#[prompt]` macro could later expand to [`McpServerBuilder::prompt`](crate::McpServerBuilder::prompt).

mod template;
mod updates;

use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CacheScope, CompleteRequestMethod, CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestMethod,
    GetPromptRequestParams, GetPromptResult, JsonObject, ListPromptsRequestMethod, ListPromptsResult,
    ListResourceTemplatesRequestMethod, ListResourceTemplatesResult, ListResourcesRequestMethod, ListResourcesResult,
    ReadResourceRequestMethod, ReadResourceRequestParams, ReadResourceResult, Reference, ServerCapabilities,
};
use serde_json::Value;
use tool_runtime::{ContentPart, ResourceContents};

pub use self::template::TemplateError;
use self::template::UriTemplate;
pub use self::updates::MAX_SUBSCRIPTIONS_PER_CONNECTION;
pub(crate) use self::updates::next_update;

/// The future a handler returns, boxed.
type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a handler may answer instead of a result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    /// The request names something that is not there or asks for something the handler does not
    /// give (a template variable naming no item, a prompt argument out of range): JSON-RPC
    /// `-32602` (invalid params) with this message, which should say what to send instead.
    Invalid(String),
    /// The handler could not answer (a store is down): JSON-RPC `-32603` (internal error) with
    /// this message.
    Failed(String),
}

impl RequestError {
    /// [`RequestError::Invalid`] with `message`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    /// [`RequestError::Failed`] with `message`.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }

    /// The JSON-RPC error, with `data` for an invalid request.
    fn into_error(self, data: Option<Value>) -> ErrorData {
        match self {
            Self::Invalid(message) => ErrorData::invalid_params(message, data),
            Self::Failed(message) => ErrorData::internal_error(message, None),
        }
    }
}

/// A question the client could not answer: [`RequestError::Invalid`] with its message (the
/// server answers a missing capability with -32021 and a malformed answer with -32602 anyway).
impl From<tool_runtime::TalkBackError> for RequestError {
    fn from(error: tool_runtime::TalkBackError) -> Self {
        Self::Invalid(error.to_string())
    }
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid(message) | Self::Failed(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for RequestError {}

/// The `ttlMs` and `cacheScope` of a read.
#[derive(Debug, Clone, Copy)]
struct CacheHints {
    ttl_ms: u64,
    scope: CacheScope,
}

impl CacheHints {
    fn new(ttl: Duration, scope: CacheScope) -> Self {
        Self { ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX), scope }
    }
}

/// A resource with a fixed URI, as `resources/list` gives it: `uri`, `name`, and `title`,
/// `description` and `mimeType` when set. Served by [`McpServerBuilder::resource`](crate::McpServerBuilder::resource).
#[derive(Debug, Clone)]
pub struct Resource {
    pub(crate) entry: rmcp::model::Resource,
    cache: Option<CacheHints>,
}

impl Resource {
    /// A resource at `uri` (any URI: `file:///srv/a.txt`, `notes://index`) called `name` (a
    /// short identifier; `title` is for people). No title, description, media type or cache hints.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self { entry: rmcp::model::Resource::new(uri, name), cache: None }
    }
}

/// A family of resources whose URIs expand an RFC 6570 level-1 template (`notes://note/{id}`),
/// as `resources/templates/list` gives it: `uriTemplate`, `name`, and `title`, `description` and
/// `mimeType` when set. Served by [`McpServerBuilder::resource_template`](crate::McpServerBuilder::resource_template).
#[derive(Debug, Clone)]
pub struct ResourceTemplate {
    pub(crate) entry: rmcp::model::ResourceTemplate,
    template: UriTemplate,
    cache: Option<CacheHints>,
}

impl ResourceTemplate {
    /// A template called `name`. `uri_template` is literal text and `{name}` variables (ASCII
    /// letters, digits, `_`), with literal text between any two variables. A variable matches
    /// one or more characters other than `/`, `?` and `#`, percent-decoded.
    ///
    /// # Errors
    /// [`TemplateError`] for an unbalanced brace, an expression beyond level 1 (`{+path}`,
    /// `{a,b}`), two adjacent variables, a variable named twice, or no variable at all.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Result<Self, TemplateError> {
        let uri_template = uri_template.into();
        let template = UriTemplate::parse(&uri_template)?;
        Ok(Self { entry: rmcp::model::ResourceTemplate::new(uri_template, name), template, cache: None })
    }
}

/// The settings a resource and a template share: `$what` is what a read of it is.
macro_rules! resource_settings {
    ($type:ty, $what:literal) => {
        impl $type {
            /// The title a client shows people (default: none; clients then show the name).
            #[must_use]
            pub fn title(mut self, title: impl Into<String>) -> Self {
                self.entry.title = Some(title.into());
                self
            }

            /// What it holds, for people and models (default: none).
            #[must_use]
            pub fn description(mut self, description: impl Into<String>) -> Self {
                self.entry.description = Some(description.into());
                self
            }

            #[doc = concat!("The media type (`text/plain`, `image/png`), listed and given as the `mimeType` of ", $what, " (default: none).")]
            #[must_use]
            pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
                self.entry.mime_type = Some(mime_type.into());
                self
            }

            #[doc = concat!("The caching hints (MCP 2026-07-28) of ", $what, ": how long a client may keep it (`ttlMs`, in")]
            /// whole milliseconds) and whether a shared cache may (`Public`) or only this caller's
            /// (`Private`). Default: none set, so a 2026-07-28 client gets `ttlMs: 0`,
            /// `cacheScope: "private"`.
            #[must_use]
            pub fn cache(mut self, ttl: Duration, scope: CacheScope) -> Self {
                self.cache = Some(CacheHints::new(ttl, scope));
                self
            }
        }
    };
}

resource_settings!(Resource, "each read");
resource_settings!(ResourceTemplate, "each read of a resource of the template");

/// What a resource handler is asked for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResourceRequest {
    /// The URI as the client sent it.
    pub uri: String,
    /// For a template, the value of each of its variables (all of them, percent-decoded); empty
    /// for a resource with a fixed URI.
    pub variables: BTreeMap<String, String>,
    /// Over HTTP, the request line, headers and extensions of the POST that carried the request
    /// (with the feature `auth`, the caller a valid token names is `auth::Authenticated` in the
    /// extensions); `None` on standard input and output.
    pub http: Option<::http::request::Parts>,
}

/// A prompt, as `prompts/list` gives it: `name`, `title` and `description` when set, and its
/// `arguments` (each with `name`, `description` and `required`) when it has some. Served by
/// [`McpServerBuilder::prompt`](crate::McpServerBuilder::prompt).
///
/// Who may list, get and complete it is decided as for a tool, by its [tags](Prompt::tags): with
/// a resource server (feature `auth`), the token's scopes through the same
/// `ScopeMap::allows_tags` that decides tools, and the call's
/// [access](tool_runtime::ToolAccess), asked with the prompt's name and tags.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub(crate) entry: rmcp::model::Prompt,
    /// The tags that decide who reaches it (default: none).
    pub(crate) tags: Vec<String>,
}

impl Prompt {
    /// A prompt called `name`, with no title, description, arguments or tags.
    pub fn new(name: impl Into<String>) -> Self {
        Self { entry: rmcp::model::Prompt::new(name, None::<String>, None), tags: Vec::new() }
    }

    /// The tags that decide who reaches the prompt, as a tool's tags do (default: none, so with
    /// the default scope map a prompt needs the fallback scope `tools:write`; tag it `read_only`
    /// for `tools:read`). A caller the tags do not reach finds no such prompt: `prompts/list` leaves
    /// it out, and `prompts/get` and `completion/complete` of its arguments are `-32602` as for an
    /// unknown prompt. The tags are not sent to clients.
    #[must_use]
    pub fn tags(mut self, tags: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// The title a client shows people (default: none; clients then show the name).
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.entry.title = Some(title.into());
        self
    }

    /// What the prompt is for (default: none); also the `description` of each `prompts/get`
    /// result.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.entry.description = Some(description.into());
        self
    }

    /// Adds a required argument: `prompts/get` without it is refused (`-32602`) before the
    /// handler runs.
    #[must_use]
    pub fn argument(self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.with_argument(name.into(), description.into(), true)
    }

    /// Adds an optional argument: the handler finds it in [`PromptRequest::arguments`] only when
    /// the client sent it.
    #[must_use]
    pub fn optional_argument(self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.with_argument(name.into(), description.into(), false)
    }

    fn with_argument(mut self, name: String, description: String, required: bool) -> Self {
        let argument = rmcp::model::PromptArgument::new(name).with_description(description).with_required(required);
        self.entry.arguments.get_or_insert_with(Vec::new).push(argument);
        self
    }

    /// The declared arguments.
    fn arguments(&self) -> &[rmcp::model::PromptArgument] {
        self.entry.arguments.as_deref().unwrap_or_default()
    }
}

/// What a prompt handler is asked for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PromptRequest {
    /// The prompt's name.
    pub name: String,
    /// The arguments the client sent: every required one, and the optional ones it chose to send
    /// (none that the prompt does not declare).
    pub arguments: BTreeMap<String, String>,
    /// Over HTTP, the request line, headers and extensions of the POST that carried the request
    /// (with the feature `auth`, the caller a valid token names is `auth::Authenticated` in the
    /// extensions); `None` on standard input and output.
    pub http: Option<::http::request::Parts>,
    /// The request's context: [`ToolContext::elicit`](tool_runtime::ToolContext::elicit),
    /// [`sample`](tool_runtime::ToolContext::sample) and
    /// [`list_roots`](tool_runtime::ToolContext::list_roots) ask the client as they do in a tool
    /// (at 2026-07-28 an input-required result, and the handler runs again with the answers), and
    /// its principal is the one the [context hook](crate::McpServerBuilder::context) gives (with `auth`, the
    /// token's subject).
    pub ctx: tool_runtime::ToolContext,
}

/// Who says a [`PromptMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user (`"role": "user"`).
    User,
    /// The assistant (`"role": "assistant"`).
    Assistant,
}

/// One message of a prompt: a role and one content part, mapped as a tool's parts are (text,
/// image, audio, embedded resource, resource link).
#[derive(Debug, Clone, PartialEq)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: ContentPart,
}

impl PromptMessage {
    /// A message of the user.
    pub fn user(content: ContentPart) -> Self {
        Self { role: Role::User, content }
    }

    /// A message of the assistant.
    pub fn assistant(content: ContentPart) -> Self {
        Self { role: Role::Assistant, content }
    }

    fn entry(&self) -> rmcp::model::PromptMessage {
        let role = match self.role {
            Role::User => rmcp::model::Role::User,
            Role::Assistant => rmcp::model::Role::Assistant,
        };
        rmcp::model::PromptMessage::new(role, crate::content::content_block(&self.content))
    }
}

/// The argument a completion is for ([`McpServerBuilder::completion`](crate::McpServerBuilder::completion)).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Completes {
    /// An argument of a prompt (`ref/prompt`).
    PromptArgument {
        /// The prompt's name.
        prompt: String,
        /// The argument's name.
        argument: String,
    },
    /// A variable of a resource template (`ref/resource`, whose `uri` is the template).
    TemplateVariable {
        /// The URI template, as declared.
        template: String,
        /// The variable's name.
        variable: String,
    },
}

impl Completes {
    /// The argument `argument` of the prompt `prompt`.
    pub fn prompt_argument(prompt: impl Into<String>, argument: impl Into<String>) -> Self {
        Self::PromptArgument { prompt: prompt.into(), argument: argument.into() }
    }

    /// The variable `variable` of the URI template `template` (as given to
    /// [`ResourceTemplate::new`]).
    pub fn template_variable(template: impl Into<String>, variable: impl Into<String>) -> Self {
        Self::TemplateVariable { template: template.into(), variable: variable.into() }
    }
}

/// What a completion handler is asked for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// What the user typed so far (may be empty).
    pub value: String,
    /// The values the client already has for the other arguments or variables (may be empty).
    pub context: BTreeMap<String, String>,
    /// Over HTTP, the request line, headers and extensions of the POST that carried the request
    /// (with the feature `auth`, the caller a valid token names is `auth::Authenticated` in the
    /// extensions); `None` on standard input and output.
    pub http: Option<::http::request::Parts>,
}

/// The most values one `completion/complete` result carries (MCP: 100).
pub const MAX_COMPLETION_VALUES: usize = CompletionInfo::MAX_VALUES;

/// A handler, boxed: a request in, a future of its answer out.
type Handler<R, T> = Arc<dyn Fn(R) -> BoxFuture<Result<T, RequestError>> + Send + Sync>;
type ResourceHandler = Handler<ResourceRequest, ResourceContents>;
type PromptHandler = Handler<PromptRequest, Vec<PromptMessage>>;
type CompletionHandler = Handler<CompletionRequest, Vec<String>>;

/// Whether the caller reaches a prompt of this name and these tags (see [`Prompt::tags`]).
pub(crate) type Reaches<'a> = &'a (dyn Fn(&str, &[String]) -> bool + Send + Sync);

/// `handler` boxed.
pub(crate) fn boxed<R, T, F, Fut>(handler: F) -> Handler<R, T>
where
    F: Fn(R) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, RequestError>> + Send + 'static,
{
    Arc::new(move |request| Box::pin(handler(request)))
}

/// Everything served beside the tools.
#[derive(Default)]
pub(crate) struct Catalog {
    pub(crate) resources: BTreeMap<String, (Resource, ResourceHandler)>,
    pub(crate) templates: BTreeMap<String, (ResourceTemplate, ResourceHandler)>,
    pub(crate) prompts: BTreeMap<String, (Prompt, PromptHandler)>,
    pub(crate) completions: BTreeMap<Completes, CompletionHandler>,
    /// Whether listen streams may follow resources ([`McpServerBuilder::resource_subscriptions`](crate::McpServerBuilder::resource_subscriptions)).
    pub(crate) subscriptions: bool,
    pub(crate) updates: updates::Updates,
}

/// Runs a handler's future on its own task, so that a panic is an error, not a lost request.
async fn run<T: Send + 'static>(what: &str, future: BoxFuture<Result<T, RequestError>>) -> Result<T, RequestError> {
    match tokio::spawn(future).await {
        Ok(result) => result,
        Err(error) => {
            tracing::error!(%error, what, "a handler panicked");
            Err(RequestError::failed(format!("the handler of {what} panicked; see the server's log")))
        }
    }
}

/// `names` as `` `a`, `b` ``, or `none` when empty.
fn listing<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{n}`")).collect();
    if names.is_empty() { "none".to_owned() } else { names.join(", ") }
}

impl Catalog {
    /// Adds the capabilities of what is declared to `capabilities`.
    pub(crate) fn declare(&self, capabilities: &mut ServerCapabilities) {
        if self.has_resources() {
            let mut resources = rmcp::model::ResourcesCapability::default();
            resources.subscribe = self.subscriptions.then_some(true);
            capabilities.resources = Some(resources);
        }
        if !self.prompts.is_empty() {
            capabilities.prompts = Some(rmcp::model::PromptsCapability::default());
        }
        if !self.completions.is_empty() {
            capabilities.completions = Some(JsonObject::new());
        }
    }

    /// Logs a warning for each completion of a prompt argument or template variable that is not
    /// declared (its requests are refused with `-32602`).
    pub(crate) fn warn_undeclared(&self) {
        for completes in self.completions.keys() {
            let declared = match completes {
                Completes::PromptArgument { prompt, argument } => {
                    self.prompts.get(prompt).is_some_and(|(p, _)| p.arguments().iter().any(|a| &a.name == argument))
                }
                Completes::TemplateVariable { template, variable } => {
                    self.templates.get(template).is_some_and(|(t, _)| t.template.variables().any(|v| v == variable))
                }
            };
            if !declared {
                tracing::warn!(?completes, "a completion of an argument no prompt or template declares is never used");
            }
        }
    }

    fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty()
    }

    /// `resources/list`.
    pub(crate) fn list_resources(&self) -> Result<ListResourcesResult, ErrorData> {
        if !self.has_resources() {
            return Err(ErrorData::method_not_found::<ListResourcesRequestMethod>());
        }
        Ok(ListResourcesResult::with_all_items(self.resources.values().map(|(r, _)| r.entry.clone()).collect()))
    }

    /// `resources/templates/list`.
    pub(crate) fn list_resource_templates(&self) -> Result<ListResourceTemplatesResult, ErrorData> {
        if !self.has_resources() {
            return Err(ErrorData::method_not_found::<ListResourceTemplatesRequestMethod>());
        }
        Ok(ListResourceTemplatesResult::with_all_items(self.templates.values().map(|(t, _)| t.entry.clone()).collect()))
    }

    /// `resources/read`.
    pub(crate) async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        http: Option<::http::request::Parts>,
    ) -> Result<ReadResourceResult, ErrorData> {
        if !self.has_resources() {
            return Err(ErrorData::method_not_found::<ReadResourceRequestMethod>());
        }
        let uri = request.uri;
        let found = match self.resources.get(&uri) {
            Some((resource, handler)) => Some((&resource.entry.mime_type, resource.cache, handler, BTreeMap::new())),
            None => self.templates.values().find_map(|(template, handler)| {
                let variables = template.template.matches(&uri)?;
                Some((&template.entry.mime_type, template.cache, handler, variables))
            }),
        };
        let data = || Some(serde_json::json!({ "uri": uri }));
        let Some((mime_type, cache, handler, variables)) = found else {
            return Err(ErrorData::invalid_params(
                format!(
                    "resource `{uri}` not found: no resource has this URI and it expands no template; read a URI \
                     that `resources/list` gives or that expands a template of `resources/templates/list`"
                ),
                data(),
            ));
        };
        let what = format!("resource `{uri}`");
        let contents = run(&what, handler(ResourceRequest { uri: uri.clone(), variables, http })).await;
        let contents = contents.map_err(|e| e.into_error(data()))?;
        let contents = match contents {
            ResourceContents::Text(text) => rmcp::model::ResourceContents::TextResourceContents {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                text,
                meta: None,
            },
            ResourceContents::Blob(blob) => rmcp::model::ResourceContents::BlobResourceContents {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                blob,
                meta: None,
            },
        };
        let result = ReadResourceResult::new(vec![contents]);
        Ok(match cache {
            Some(hints) => result.with_ttl_ms(hints.ttl_ms).with_cache_scope(hints.scope),
            None => result,
        })
    }

    /// `prompts/list`: the prompts whose tags `reaches` (see [`Prompt::tags`]).
    pub(crate) fn list_prompts(&self, reaches: Reaches<'_>) -> Result<ListPromptsResult, ErrorData> {
        if self.prompts.is_empty() {
            return Err(ErrorData::method_not_found::<ListPromptsRequestMethod>());
        }
        let reached = self.prompts.values().filter(|(p, _)| reaches(&p.entry.name, &p.tags));
        Ok(ListPromptsResult::with_all_items(reached.map(|(p, _)| p.entry.clone()).collect()))
    }

    /// The prompt `name` when the caller `reaches` it; else `-32602` naming the prompts it reaches
    /// (a prompt beyond its reach is not revealed).
    fn prompt(&self, name: &str, reaches: Reaches<'_>) -> Result<&(Prompt, PromptHandler), ErrorData> {
        self.prompts.get(name).filter(|(p, _)| reaches(name, &p.tags)).ok_or_else(|| {
            let reached = self.prompts.iter().filter(|(n, (p, _))| reaches(n, &p.tags));
            let names = listing(reached.map(|(n, _)| n.as_str()));
            ErrorData::invalid_params(format!("there is no prompt `{name}`; the prompts are {names}"), None)
        })
    }

    /// `prompts/get`: the arguments checked against the declaration, then the handler.
    pub(crate) async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        http: Option<::http::request::Parts>,
        ctx: tool_runtime::ToolContext,
    ) -> Result<GetPromptResult, ErrorData> {
        if self.prompts.is_empty() {
            return Err(ErrorData::method_not_found::<GetPromptRequestMethod>());
        }
        let name = request.name;
        let (prompt, handler) = self.prompt(&name, &|name, tags| ctx.reaches(name, tags))?;
        let declared = prompt.arguments();
        let declared_names = || listing(declared.iter().map(|a| a.name.as_str()));
        let mut arguments = BTreeMap::new();
        for (key, value) in request.arguments.unwrap_or_default() {
            if !declared.iter().any(|a| a.name == key) {
                return Err(ErrorData::invalid_params(
                    format!("prompt `{name}` has no argument `{key}`; its arguments are {}", declared_names()),
                    None,
                ));
            }
            let Value::String(value) = value else {
                return Err(ErrorData::invalid_params(
                    format!(
                        "argument `{key}` of prompt `{name}` is {value}, not a string; send every argument as a string"
                    ),
                    None,
                ));
            };
            arguments.insert(key, value);
        }
        let missing: Vec<&str> = declared
            .iter()
            .filter(|a| a.required == Some(true) && !arguments.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(ErrorData::invalid_params(
                match missing.as_slice() {
                    [one] => format!("prompt `{name}` needs the argument `{one}`; send it in `arguments`"),
                    _ => format!(
                        "prompt `{name}` needs the arguments {}; send them in `arguments`",
                        listing(missing.into_iter())
                    ),
                },
                None,
            ));
        }
        let what = format!("prompt `{name}`");
        let messages = run(&what, handler(PromptRequest { name: name.clone(), arguments, http, ctx })).await;
        let messages = messages.map_err(|e| e.into_error(None))?;
        let result = GetPromptResult::new(messages.iter().map(PromptMessage::entry).collect());
        Ok(match &prompt.entry.description {
            Some(description) => result.with_description(description.clone()),
            None => result,
        })
    }

    /// `completion/complete`: a prompt argument's completion only for a caller that `reaches` the
    /// prompt ([`Prompt::tags`]); a template variable's for any caller (resources are not scoped).
    pub(crate) async fn complete(
        &self,
        request: CompleteRequestParams,
        http: Option<::http::request::Parts>,
        reaches: Reaches<'_>,
    ) -> Result<CompleteResult, ErrorData> {
        if self.completions.is_empty() {
            return Err(ErrorData::method_not_found::<CompleteRequestMethod>());
        }
        let argument = request.argument.name;
        let key = match request.r#ref {
            Reference::Prompt(reference) => {
                let (prompt, _) = self.prompt(&reference.name, reaches)?;
                if !prompt.arguments().iter().any(|a| a.name == argument) {
                    let names = listing(prompt.arguments().iter().map(|a| a.name.as_str()));
                    return Err(ErrorData::invalid_params(
                        format!("prompt `{}` has no argument `{argument}`; its arguments are {names}", reference.name),
                        None,
                    ));
                }
                Completes::prompt_argument(reference.name, argument)
            }
            Reference::Resource(reference) => {
                let Some((template, _)) = self.templates.get(&reference.uri) else {
                    let names = listing(self.templates.keys().map(String::as_str));
                    return Err(ErrorData::invalid_params(
                        format!(
                            "there is no resource template `{}`; send the `uriTemplate` of one that \
                             `resources/templates/list` gives: {names}",
                            reference.uri
                        ),
                        None,
                    ));
                };
                if !template.template.variables().any(|v| v == argument) {
                    let names = listing(template.template.variables());
                    return Err(ErrorData::invalid_params(
                        format!(
                            "resource template `{}` has no variable `{argument}`; its variables are {names}",
                            reference.uri
                        ),
                        None,
                    ));
                }
                Completes::template_variable(reference.uri, argument)
            }
            _ => return Err(ErrorData::invalid_params("send a `ref` of type `ref/prompt` or `ref/resource`", None)),
        };
        let Some(handler) = self.completions.get(&key) else {
            return Ok(CompleteResult::new(CompletionInfo::default()));
        };
        let context: HashMap<String, String> = request.context.and_then(|c| c.arguments).unwrap_or_default();
        let completion =
            CompletionRequest { value: request.argument.value, context: context.into_iter().collect(), http };
        let mut values = run("a completion", handler(completion)).await.map_err(|e| e.into_error(None))?;
        let total = values.len();
        values.truncate(MAX_COMPLETION_VALUES);
        let info = CompletionInfo::with_pagination(values, u32::try_from(total).ok(), total > MAX_COMPLETION_VALUES)
            .expect("the values are truncated to the cap");
        Ok(CompleteResult::new(info))
    }
}
