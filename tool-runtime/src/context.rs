//! The context every tool call runs in.

/// The maps of dependency values, keyed by the keys' `'static` ids (never by a model's text, so
/// foldhash's speed costs nothing in resistance to chosen collisions).
type KeyMap<V> = std::collections::HashMap<&'static str, V, foldhash::fast::RandomState>;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::client::{ClientCapabilities, ClientChannel, InputMethod, InputRequest, LogLevel, TalkBackError};
use crate::clock::{Clock, SystemClock};
use crate::depends::{AnyValue, DependencyKey, Scope};
use crate::error::{DependencyError, DependencyName, ToolError, describe_cycle, provide_fix};
use crate::lifecycle::Closer;
use crate::progress::{Progress, ProgressListener};
use crate::waits::{self, Waits};

/// Memo slots, one per key id; a slot is created once and filled once.
#[derive(Default)]
pub(crate) struct Memo {
    slots: Mutex<KeyMap<Arc<OnceCell<AnyValue>>>>,
}

impl Memo {
    fn slot(&self, id: &'static str) -> Arc<OnceCell<AnyValue>> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.entry(id).or_default().clone()
    }

    /// The value made for `id`, when there is one (a slot still being filled has none).
    fn ready(&self, id: &'static str) -> Option<AnyValue> {
        let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.get(id).and_then(|slot| slot.get().cloned())
    }

    /// Forgets every value (they are dropped once no call holds them any more).
    pub(crate) fn clear(&self) {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

/// What a registry shares with every call it runs: its dependency overrides, its registry-scoped
/// values and the closes of those values, in creation order.
#[derive(Default)]
pub(crate) struct RegistryScope {
    pub(crate) overrides: KeyMap<AnyValue>,
    pub(crate) memo: Memo,
    /// Each key id a `#[depends(..)]` of the registry's tools names, with the key as written
    /// (`DB`): what the dependency errors call a key.
    pub(crate) names: KeyMap<&'static str>,
    closers: Mutex<Vec<Closer>>,
    waits: Arc<Waits>,
    /// The client channel of calls whose context sets none ([`RegistryBuilder::client`](crate::RegistryBuilder::client)).
    pub(crate) client: Option<Arc<dyn ClientChannel>>,
    /// The secret of the idempotency keys a call forwards ([`ToolContext::idempotency_key_for`]):
    /// the registry's idempotency server key, `None` for the process's own.
    pub(crate) forward_secret: Option<Arc<[u8]>>,
}

impl RegistryScope {
    fn push_closer(&self, closer: Option<Closer>) {
        if let Some(closer) = closer {
            self.closers.lock().unwrap_or_else(PoisonError::into_inner).push(closer);
        }
    }

    /// The closes of the values created so far, last created first; each is handed out once.
    pub(crate) fn take_closers(&self) -> Vec<Closer> {
        let mut closers = std::mem::take(&mut *self.closers.lock().unwrap_or_else(PoisonError::into_inner));
        closers.reverse();
        closers
    }
}

/// What a model can take in a tool result besides text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ImageSupport {
    /// Nobody said (the default). Tools treat it as [`Unsupported`](ImageSupport::Unsupported):
    /// an image a model cannot read wastes the turn, a description never does.
    #[default]
    Unknown,
    /// The model reads image parts in tool results.
    Supported,
    /// The model reads text only; tools describe images in words.
    Unsupported,
}

struct Shared {
    session_id: Option<String>,
    principal: Option<String>,
    cancellation: CancellationToken,
    overrides: KeyMap<AnyValue>,
    clock: Arc<dyn Clock>,
    images: ImageSupport,
    progress: Option<Arc<dyn ProgressListener>>,
    client: Option<Arc<dyn ClientChannel>>,
    access: Option<Arc<dyn ToolAccess>>,
    /// The host's span of the call made with this context, until the registry takes it
    /// ([`ToolContextBuilder::call_span`]); `None` (no lock taken at each call) when no host
    /// gave one.
    call_span: Option<Mutex<Option<tracing::Span>>>,
}

/// Which tools a caller may see and run, asked with a tool's name and tags: the caller's grant, as
/// a server's authorization decides it (`tool-mcp` sets one from an access token's scopes).
///
/// The registry asks it before the permission policy on every call it runs, whichever path
/// started the call: a direct call, the inner call of the `call_tool` meta-tool, a task's run, a
/// program's call in code mode. A tool it does not reach is, to that caller, a tool that does not
/// exist: the call gets the unknown-tool error, whose list of available tools and every search
/// leave such tools out. Set with [`ToolContextBuilder::access`]; default: every tool.
///
/// A closure `Fn(&str, &[String]) -> bool` (name, tags) is an access as it is.
pub trait ToolAccess: Send + Sync + 'static {
    /// `true` when the caller may see and run the tool named `name` with `tags`.
    fn reaches(&self, name: &str, tags: &[String]) -> bool;
}

impl<F> ToolAccess for F
where
    F: Fn(&str, &[String]) -> bool + Send + Sync + 'static,
{
    fn reaches(&self, name: &str, tags: &[String]) -> bool {
        self(name, tags)
    }
}

impl Default for Shared {
    fn default() -> Self {
        Self {
            session_id: None,
            principal: None,
            cancellation: CancellationToken::new(),
            overrides: KeyMap::default(),
            clock: Arc::new(SystemClock),
            images: ImageSupport::Unknown,
            progress: None,
            client: None,
            access: None,
            call_span: None,
        }
    }
}

struct CallScope {
    call_id: String,
    /// Shared with the registry's index: no copy per call.
    tool_name: Arc<str>,
    memo: Memo,
    /// The call's own token, a child of the caller's: cancelled with it, and by the registry when
    /// the call times out. Made on first use (a token's tree takes a lock to link a child, and most
    /// tools never ask); see [`ToolContext::cancellation`].
    cancellation: std::sync::OnceLock<CancellationToken>,
    /// The caller's call, when a tool's own context made this call: its token is the parent.
    parent: Option<Arc<CallScope>>,
    /// The input requests made so far (the default key of the next is `input-{asks + 1}`).
    asks: std::sync::atomic::AtomicU32,
    /// The call's approval token, for the tool to pass on ([`ToolContext::approval_token`]).
    approval_token: Option<String>,
    /// The call's idempotency key, for the keys it forwards ([`ToolContext::idempotency_key_for`]).
    idempotency_key: Option<String>,
}

impl CallScope {
    /// The call's token, made on first use as a child of the parent call's token or of `caller`.
    fn token(&self, caller: &CancellationToken) -> &CancellationToken {
        self.cancellation.get_or_init(|| match &self.parent {
            Some(parent) => parent.token(caller).child_token(),
            None => caller.child_token(),
        })
    }

    /// `true` once the call's token is cancelled, without making it: the parent's (or `caller`'s)
    /// cancellation reaches the child.
    fn is_cancelled(&self, caller: &CancellationToken) -> bool {
        match self.cancellation.get() {
            Some(token) => token.is_cancelled(),
            None => match &self.parent {
                Some(parent) => parent.is_cancelled(caller),
                None => caller.is_cancelled(),
            },
        }
    }
}

/// One resolution path: a top-level `resolve` and the nested ones its `create`s make. Shared by the
/// contexts along the path.
struct ResolutionPath {
    /// The path's id in the registry's [`Waits`].
    id: u64,
    /// The cycle found on this path, so that the outermost `resolve` reports the chain once instead
    /// of once per key it passed through.
    cycle: Mutex<Option<Vec<&'static str>>>,
}

impl ResolutionPath {
    fn new() -> Arc<Self> {
        Arc::new(Self { id: waits::new_path(), cycle: Mutex::new(None) })
    }

    fn found(&self, chain: &[&'static str]) {
        *self.cycle.lock().unwrap_or_else(PoisonError::into_inner) = Some(chain.to_vec());
    }

    fn cycle(&self) -> Option<Vec<&'static str>> {
        self.cycle.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The context of a tool call: the session, cancellation, the clock, the model's image capability,
/// progress reporting, dependency overrides and the per-call dependency memo. A tool receives it by
/// declaring a `&ToolContext` parameter.
///
/// The caller builds one context (per session or per turn) and passes it to
/// [`Registry::call`](crate::Registry::call); the registry derives a fresh per-call context from it
/// for each call of a tool that reads its context, so call-scoped dependencies are never shared
/// between two calls (a tool that takes neither a context nor a dependency, see
/// [`Tool::reads_context`](crate::Tool::reads_context), runs with the caller's context as it is).
/// Cloning is cheap (reference counted).
#[derive(Clone, Default)]
pub struct ToolContext {
    shared: Arc<Shared>,
    registry: Option<Arc<RegistryScope>>,
    call: Option<Arc<CallScope>>,
    /// Keys being created on this resolution path, outermost first (cycle detection).
    chain: Vec<&'static str>,
    path: Option<Arc<ResolutionPath>>,
}

impl ToolContext {
    /// An empty context: no session id, a fresh cancellation token, no overrides, the system
    /// clock, [`ImageSupport::Unknown`], nobody listening to progress.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder for a context with a session id, a cancellation token, a clock, the model's image
    /// capability, a progress listener or dependency overrides.
    pub fn builder() -> ToolContextBuilder {
        ToolContextBuilder::default()
    }

    /// The session id, when the caller set one (the key of session state such as the todo list).
    pub fn session_id(&self) -> Option<&str> {
        self.shared.session_id.as_deref()
    }

    /// Who the caller is, when the server knows (an authenticated user or client id); `None` when
    /// nobody said. Kept by clones and by the per-call contexts the registry derives. Stored
    /// outputs and sessions are only served back to the principal that made them.
    pub fn principal(&self) -> Option<&str> {
        self.shared.principal.as_deref()
    }

    /// `true` when the caller's [access](ToolAccess) reaches the tool `name` with `tags` (always
    /// when the context has none).
    pub fn reaches(&self, name: &str, tags: &[String]) -> bool {
        self.shared.access.as_ref().is_none_or(|access| access.reaches(name, tags))
    }

    /// The cancellation token to watch. Inside a call it is the call's own token: cancelled when
    /// the caller's token is, and when the call times out (so work a tool spawned can stop too).
    /// Outside a call it is the caller's token.
    ///
    /// A tool need not watch it to be stopped: the registry stops awaiting a cancelled call at
    /// once. Watching it matters for work that runs on its own (a child process, a blocking
    /// thread).
    pub fn cancellation(&self) -> &CancellationToken {
        match &self.call {
            Some(call) => call.token(&self.shared.cancellation),
            None => &self.shared.cancellation,
        }
    }

    /// `true` once [`cancellation`](ToolContext::cancellation) is cancelled.
    pub fn is_cancelled(&self) -> bool {
        match &self.call {
            Some(call) => call.is_cancelled(&self.shared.cancellation),
            None => self.shared.cancellation.is_cancelled(),
        }
    }

    /// Cancels the call's own token (making it cancelled if no tool asked for it yet, so that a
    /// tool asking later, from a blocking thread, sees it cancelled).
    pub(crate) fn cancel_call(&self) {
        if let Some(call) = &self.call {
            call.token(&self.shared.cancellation).cancel();
        }
    }

    /// The current wall-clock time from the context's [`Clock`] (the system clock unless the
    /// caller installed another, e.g. a [`FixedClock`](crate::FixedClock) in tests).
    pub fn now(&self) -> SystemTime {
        self.shared.clock.now()
    }

    /// What the model can take besides text (default [`ImageSupport::Unknown`]).
    pub fn image_support(&self) -> ImageSupport {
        self.shared.images
    }

    /// `true` only when the model is known to read images ([`ImageSupport::Supported`]); a tool
    /// that produces images returns a text description instead when this is `false`.
    pub fn accepts_images(&self) -> bool {
        self.shared.images == ImageSupport::Supported
    }

    /// Reports progress of long work: `done` of `total` units (files, bytes: say which in
    /// `message`; `total` is `None` when unknown). The report goes to the listener the caller set
    /// with [`ToolContextBuilder::on_progress`], tagged with the call's id and tool name.
    ///
    /// Costs one branch when nobody listens: nothing is allocated or copied. When building the
    /// message itself is costly, ask [`wants_progress`](ToolContext::wants_progress) first.
    pub fn progress(&self, done: u64, total: Option<u64>, message: &str) {
        let Some(listener) = &self.shared.progress else {
            return;
        };
        listener.on_progress(Progress {
            tool_call_id: self.call_id().unwrap_or_default().to_owned(),
            tool_name: self.tool_name().unwrap_or_default().to_owned(),
            done,
            total,
            message: message.to_owned(),
        });
    }

    /// `true` when someone listens to [`progress`](ToolContext::progress) reports.
    pub fn wants_progress(&self) -> bool {
        self.shared.progress.is_some()
    }

    /// The span the host made for the call made with this context, handed over once
    /// ([`ToolContextBuilder::call_span`]): `Some` to the first call that asks, `None` after.
    pub(crate) fn take_call_span(&self) -> Option<tracing::Span> {
        self.shared.call_span.as_ref()?.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// The id of the tool call being served (`None` outside a call).
    pub fn call_id(&self) -> Option<&str> {
        self.call.as_ref().map(|c| c.call_id.as_str())
    }

    /// The name of the tool being served (`None` outside a call).
    pub fn tool_name(&self) -> Option<&str> {
        self.call.as_ref().map(|c| &*c.tool_name)
    }

    /// The approval token of the call being served, for a tool that passes the call on to a server
    /// that approves it (an imported MCP tool sends it upstream as the request's
    /// `_meta["tool-framework/approval-token"]`; see [`crate::approvals`]). `Some` only inside the
    /// call that carried it ([`ToolCall::approval_token`](crate::ToolCall::approval_token)), never
    /// in the calls a tool makes in turn, and only when this registry did not redeem the token
    /// itself: a tool this registry approves with its own
    /// [approval tokens](crate::RegistryBuilder::approval_tokens) gets `None`, or the other
    /// server's token that a passed-on token of this registry carried ("Through a gateway" in
    /// [`crate::approvals`]). Never log it.
    pub fn approval_token(&self) -> Option<&str> {
        self.call.as_ref()?.approval_token.as_deref()
    }

    /// This per-call context with `token` as its call's [approval token](Self::approval_token)
    /// (a context made by [`for_call`](Self::for_call), whose scope no one else holds yet).
    pub(crate) fn with_approval_token(mut self, token: Option<String>) -> Self {
        if let (Some(token), Some(call)) = (token, self.call.as_mut())
            && let Some(call) = Arc::get_mut(call)
        {
            call.approval_token = Some(token);
        }
        self
    }

    /// The idempotency key this call sends to another service that runs its effect (`audience`
    /// names that service), when the call carries an idempotency key; `None` outside a call and
    /// for a call without one. An imported MCP tool sends it upstream as the request's
    /// `_meta["tool-framework/idempotency-key"]` (`tool-mcp`'s import, "Idempotency keys through a
    /// gateway"); a tool that calls a payment API can send it as that API's idempotency key.
    ///
    /// The client's own key is never passed on as it is: at the other service every caller of
    /// this registry is one principal (this registry's), so two callers' equal keys would share
    /// one result there. The forwarded key is HMAC-SHA256, as 64 lowercase hex characters (within
    /// the 256 bytes [`MAX_KEY_BYTES`](crate::idempotency::MAX_KEY_BYTES) allows), over the
    /// caller's [principal](Self::principal) (none being the empty one), the tool's registered
    /// name, `audience` and the call's key (each length-prefixed): the same retry gives the same
    /// key, another principal, tool, audience or key an unrelated one, and neither the key nor
    /// the principal can be read from it. The call's key is the one the registry's idempotency
    /// reads: the tool's [declared argument](crate::Tool::idempotency_key_argument) when the
    /// arguments carry it, else [`ToolCall::idempotency_key`](crate::ToolCall::idempotency_key);
    /// an empty key is none.
    ///
    /// The HMAC key is the registry's idempotency server key
    /// ([`Idempotency::server_key`](crate::idempotency::Idempotency::server_key), given to
    /// [`RegistryBuilder::idempotency`](crate::RegistryBuilder::idempotency)), so that a retry
    /// after a restart, or on another worker with the same server key, forwards the same key.
    /// Without idempotency on the registry, it is 32 random bytes drawn once per process: retries
    /// within the process forward the same key, and a retry after a restart or on another
    /// process forwards another (the other service runs it again). Never log the key: like the
    /// client's, it identifies one effect.
    pub fn idempotency_key_for(&self, audience: &str) -> Option<String> {
        let call = self.call.as_ref()?;
        let key = call.idempotency_key.as_deref().filter(|key| !key.is_empty())?;
        let secret = self.registry.as_ref().and_then(|registry| registry.forward_secret.clone());
        let secret = secret.unwrap_or_else(crate::mac::process_secret);
        let who = self.principal().unwrap_or("");
        Some(crate::mac::hmac_hex(&secret, &["forwarded-idempotency-key", who, &call.tool_name, audience, key]))
    }

    /// This per-call context with `key` as its call's idempotency key, for
    /// [`idempotency_key_for`](Self::idempotency_key_for) (a context made by
    /// [`for_call`](Self::for_call), whose scope no one else holds yet).
    pub(crate) fn with_idempotency_key(mut self, key: Option<String>) -> Self {
        if let (Some(key), Some(call)) = (key, self.call.as_mut())
            && let Some(call) = Arc::get_mut(call)
        {
            call.idempotency_key = Some(key);
        }
        self
    }

    /// The client channel of the call: the context's, else the registry's.
    pub(crate) fn client(&self) -> Option<&Arc<dyn ClientChannel>> {
        self.shared.client.as_ref().or_else(|| self.registry.as_ref()?.client.as_ref())
    }

    /// `true` when the call has no client channel at all.
    pub(crate) fn channel_missing(&self) -> bool {
        self.client().is_none()
    }

    /// What the call's client said it can answer (all `false` without a client channel).
    pub fn client_capabilities(&self) -> ClientCapabilities {
        self.client().map(|c| c.capabilities()).unwrap_or_default()
    }

    /// Sends a log message to the client (MCP `notifications/message`, `logger` the tool's name)
    /// when the client asked for messages at `level` or above; otherwise, and without a client
    /// channel, does nothing. Over MCP 2026-07-28 the level is the request's
    /// `_meta["io.modelcontextprotocol/logLevel"]` (no level: no messages); before, the level
    /// `logging/setLevel` set on the connection.
    pub fn log(&self, level: LogLevel, message: impl fmt::Display) {
        if let Some(channel) = self.client()
            && channel.log_level().is_some_and(|wanted| level >= wanted)
        {
            channel.log(level, self.tool_name(), serde_json::Value::String(message.to_string()));
        }
    }

    /// `true` when a [`log`](Self::log) message at `level` would reach the client.
    pub fn wants_log(&self, level: LogLevel) -> bool {
        self.client().and_then(|c| c.log_level()).is_some_and(|wanted| level >= wanted)
    }

    /// The channel for a request of `method` and the request's key (given, else the next
    /// default), or the error the tool gets (told to the channel first).
    pub(crate) fn channel_for(
        &self,
        method: InputMethod,
        key: Option<String>,
    ) -> Result<(Arc<dyn ClientChannel>, String), TalkBackError> {
        let Some(channel) = self.client() else {
            return Err(TalkBackError::NoClient { method: method.method() });
        };
        let n = match &self.call {
            Some(call) => call.asks.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
            None => 1,
        };
        if !method.declared(channel.capabilities()) {
            let error = TalkBackError::MissingCapability { capability: method.capability() };
            channel.refused(&error);
            return Err(error);
        }
        Ok((channel.clone(), key.unwrap_or_else(|| format!("input-{n}"))))
    }

    /// Sends `request`, ending with [`TalkBackError::Cancelled`] when the call is cancelled first.
    pub(crate) async fn ask(
        &self,
        channel: &dyn ClientChannel,
        key: &str,
        request: InputRequest,
    ) -> Result<serde_json::Value, TalkBackError> {
        let token = self.cancellation().clone();
        tokio::select! {
            answer = channel.request(key, request) => answer,
            () = token.cancelled() => Err(TalkBackError::Cancelled),
        }
    }

    /// The per-call context the registry hands to a tool.
    pub(crate) fn for_call(&self, call_id: &str, tool_name: Arc<str>, registry: &Arc<RegistryScope>) -> Self {
        Self {
            shared: self.shared.clone(),
            registry: Some(registry.clone()),
            call: Some(Arc::new(CallScope {
                call_id: call_id.to_owned(),
                tool_name,
                memo: Memo::default(),
                cancellation: std::sync::OnceLock::new(),
                parent: self.call.clone(),
                asks: std::sync::atomic::AtomicU32::new(0),
                approval_token: None,
                idempotency_key: None,
            })),
            chain: Vec::new(),
            path: None,
        }
    }

    /// Resolves a dependency: the context's override, else the registry's value (given with
    /// `provide` or `override_dependency`), else the value memoised for the key's [`Scope`], else
    /// the key's `create` (whose value is then memoised).
    ///
    /// Memoised values are created once even when several resolutions ask at the same time (the
    /// others wait for the first). Outside a call there is no memo: each resolution creates.
    ///
    /// Errors name each key by the static a `#[depends(..)]` of the registry's tools wrote for it
    /// and by its id ([`DependencyName`]): ``dependency `DB` (key id "db")``; a key no
    /// `#[depends]` names, by its id alone.
    ///
    /// # Errors
    /// - [`ToolError::Dependency`] naming the key and the cause when `create` fails (a key whose
    ///   `create` failed because another key failed names both: ``dependency `A` (key id "a")
    ///   failed: dependency `B` (key id "b") failed: ...``), or when two keys share an id with
    ///   different value types.
    /// - [`ToolError::DependencyNotProvided`] for a [provided](DependencyKey::provided) key
    ///   without a value, saying how to give it one.
    /// - [`ToolError::DependencyCycle`] when a key asks for itself through other keys; the message
    ///   gives the chain once (`` `A` -> `B` -> `A` ``).
    pub async fn resolve<T>(&self, key: &DependencyKey<T>) -> Result<T, ToolError>
    where
        T: Clone + Send + Sync + 'static,
    {
        if let Some(value) = self.overridden(self.registry.as_deref(), key.id()) {
            return self.downcast(value, key);
        }
        if self.chain.contains(&key.id()) {
            let mut chain = self.chain.clone();
            chain.push(key.id());
            return Err(self.found_cycle(&chain));
        }
        let (memo, registry) = match key.scope() {
            Scope::Call => (self.call.as_ref().map(|c| &c.memo), None),
            Scope::Registry => (self.registry.as_ref().map(|r| &r.memo), self.registry.as_ref()),
            // Nothing to create or memoise, and no value was given above.
            Scope::Provided => {
                return Err(ToolError::DependencyNotProvided {
                    tool: self.tool_name().unwrap_or_default().to_owned(),
                    key: self.key_name(key.id()),
                });
            }
        };
        // A value made already is handed out as it is (one lock), without a nested context or a
        // resolution path.
        if let Some(value) = memo.and_then(|memo| memo.ready(key.id())) {
            return self.downcast(&value, key);
        }
        let mut nested = self.clone();
        nested.chain.push(key.id());
        let path = nested.path.get_or_insert_with(ResolutionPath::new).clone();
        let Some(memo) = memo else {
            // Outside a call (no memo table): create a fresh value each time.
            return key.create(&nested).await.map_err(|e| self.create_error(&path, key.id(), e));
        };
        let slot = memo.slot(key.id());
        // A registry-scoped value may be in creation by another call: waiting for it must not
        // close a cycle across calls.
        let waiting = match registry {
            Some(registry) if !slot.initialized() => {
                Some(registry.waits.wait(path.id, key.id(), &self.chain).map_err(|chain| self.found_cycle(&chain))?)
            }
            _ => None,
        };
        let value = slot
            .get_or_try_init(|| async {
                drop(waiting);
                let _creating = registry.map(|r| r.waits.create(path.id, key.id()));
                let value: AnyValue = Arc::new(key.create(&nested).await?);
                if let Some(registry) = registry {
                    registry.push_closer(key.closer(value.clone(), || self.key_name(key.id())));
                }
                Ok::<AnyValue, DependencyError>(value)
            })
            .await
            .map_err(|e| self.create_error(&path, key.id(), e))?;
        self.downcast(value, key)
    }

    /// The override of the key `id`: this context's, else `registry`'s.
    fn overridden<'a>(&'a self, registry: Option<&'a RegistryScope>, id: &'static str) -> Option<&'a AnyValue> {
        self.shared.overrides.get(id).or_else(|| registry.and_then(|r| r.overrides.get(id)))
    }

    /// The value a call of the registry with this `registry` scope would get for the
    /// registry-scoped `key` without creating anything: this context's override, the registry's
    /// override, or the value the registry made already. `None` when it would have to be created
    /// (or `key` is call-scoped and not overridden): resolve it in a per-call context then.
    pub(crate) fn ready_in<T>(&self, registry: &RegistryScope, key: &DependencyKey<T>) -> Option<T>
    where
        T: Clone + Send + Sync + 'static,
    {
        if let Some(value) = self.overridden(Some(registry), key.id()) {
            return value.downcast_ref::<T>().cloned();
        }
        if key.scope() != Scope::Registry {
            return None;
        }
        registry.memo.ready(key.id())?.downcast_ref::<T>().cloned()
    }

    /// Overrides and memo slots are only filled through the typed API with the key's own `T`; a
    /// mismatch means two keys share one id, which is reported instead of guessed around.
    fn downcast<T: Clone + 'static>(&self, value: &AnyValue, key: &DependencyKey<T>) -> Result<T, ToolError> {
        value.downcast_ref::<T>().cloned().ok_or_else(|| {
            self.dependency_error(
                key.id(),
                format!(
                    "two dependency keys share the id {:?} with different value types; give each key an id of its own",
                    key.id()
                ),
            )
        })
    }

    /// The error of a failed `create`: the cycle found below it, reported once and unwrapped, or
    /// the key's own failure.
    fn create_error(&self, path: &ResolutionPath, key: &'static str, error: DependencyError) -> ToolError {
        match path.cycle() {
            Some(chain) if error.0 == cycle_text(&self.key_names(&chain)) => self.cycle_error(&chain),
            _ => self.dependency_error(key, error.0),
        }
    }

    /// The key `id` as errors name it: by the static a `#[depends(..)]` of the registry's tools
    /// wrote, and by its id.
    fn key_name(&self, id: &'static str) -> DependencyName {
        let name = self.registry.as_ref().and_then(|r| r.names.get(id).copied());
        DependencyName::new(id, name)
    }

    fn key_names(&self, ids: &[&'static str]) -> Vec<DependencyName> {
        ids.iter().map(|id| self.key_name(id)).collect()
    }

    /// Records a cycle found on this path and returns its error.
    fn found_cycle(&self, chain: &[&'static str]) -> ToolError {
        if let Some(path) = &self.path {
            path.found(chain);
        }
        self.cycle_error(chain)
    }

    fn cycle_error(&self, chain: &[&'static str]) -> ToolError {
        ToolError::DependencyCycle {
            tool: self.tool_name().unwrap_or_default().to_owned(),
            chain: self.key_names(chain),
        }
    }

    fn dependency_error(&self, key: &'static str, cause: String) -> ToolError {
        ToolError::Dependency { tool: self.tool_name().unwrap_or_default().to_owned(), key: self.key_name(key), cause }
    }
}

fn cycle_text(chain: &[DependencyName]) -> String {
    format!("dependency cycle: {}", describe_cycle(chain))
}

impl From<ToolError> for DependencyError {
    /// Nesting: a `create` that resolves another key keeps that key's failure in its own cause; a
    /// cycle keeps only the chain (the outermost `resolve` reports it once).
    fn from(error: ToolError) -> Self {
        match error {
            ToolError::Dependency { key, cause, .. } => DependencyError(format!("dependency {key} failed: {cause}")),
            ToolError::DependencyCycle { chain, .. } => DependencyError(cycle_text(&chain)),
            ToolError::DependencyNotProvided { key, .. } => {
                DependencyError(format!("dependency {key} was not provided: {}", provide_fix(&key)))
            }
            other => DependencyError(other.to_string()),
        }
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("session_id", &self.session_id())
            .field("principal", &self.principal())
            .field("call_id", &self.call_id())
            .field("tool_name", &self.tool_name())
            .field("image_support", &self.image_support())
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// Builds a [`ToolContext`].
#[derive(Default)]
pub struct ToolContextBuilder {
    shared: Shared,
}

impl ToolContextBuilder {
    /// Sets the session id (the key of session state such as the todo list). It is a field of
    /// each call's `execute_tool` span (`session_id`, [`telemetry`](crate::telemetry)), which a log
    /// writes and an OpenTelemetry exporter sends: make it a key, not a secret (not a session's
    /// credential such as an `Mcp-Session-Id`, not a principal that must not leave the process;
    /// `toolbox` uses its `--session` name followed by a hash of the caller's subject).
    #[must_use]
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.shared.session_id = Some(id.into());
        self
    }

    /// Sets the principal: who the caller is, as the server authenticated it (see
    /// [`ToolContext::principal`]; default: none).
    #[must_use]
    pub fn principal(mut self, principal: impl Into<String>) -> Self {
        self.shared.principal = Some(principal.into());
        self
    }

    /// Sets which tools the caller may see and run (see [`ToolAccess`]; default: every tool).
    #[must_use]
    pub fn access(mut self, access: impl ToolAccess) -> Self {
        self.shared.access = Some(Arc::new(access));
        self
    }

    /// Uses the given cancellation token (default: a fresh one). Cancelling it ends every call
    /// made with this context with the error result ``tool `x` was cancelled``.
    #[must_use]
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.shared.cancellation = token;
        self
    }

    /// Uses the given clock for [`ToolContext::now`] (default: [`SystemClock`]).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.shared.clock = clock;
        self
    }

    /// Says what the model can take besides text (default: [`ImageSupport::Unknown`]).
    #[must_use]
    pub fn image_support(mut self, images: ImageSupport) -> Self {
        self.shared.images = images;
        self
    }

    /// Receives every [`ToolContext::progress`] report of the calls made with this context
    /// (default: nobody listens).
    #[must_use]
    pub fn on_progress(mut self, listener: impl ProgressListener) -> Self {
        self.shared.progress = Some(Arc::new(listener));
        self
    }

    /// Sets the [client channel](ClientChannel) that answers the calls' log messages and input
    /// requests ([`ToolContext::elicit`], [`sample`](ToolContext::sample),
    /// [`list_roots`](ToolContext::list_roots), [`log`](ToolContext::log)); wins over the
    /// registry's ([`RegistryBuilder::client`](crate::RegistryBuilder::client)). Default: none.
    #[must_use]
    pub fn client(mut self, channel: impl ClientChannel) -> Self {
        self.shared.client = Some(Arc::new(channel));
        self
    }

    /// Like [`client`](Self::client), with a channel already shared.
    #[must_use]
    pub fn client_arc(mut self, channel: Arc<dyn ClientChannel>) -> Self {
        self.shared.client = Some(channel);
        self
    }

    /// Overrides a dependency for every call made with this context; wins over the registry's
    /// override and over `create`.
    #[must_use]
    pub fn override_dependency<T>(mut self, key: &DependencyKey<T>, value: T) -> Self
    where
        T: Clone + Send + Sync + 'static,
    {
        self.shared.overrides.insert(key.id(), Arc::new(value));
        self
    }

    /// Hands the registry the span a host made for the one call it makes with this context, so
    /// that the call has one span rather than two: the first [`Registry::call`](crate::Registry::call)
    /// made with the context records its `execute_tool` attributes on `span` instead of opening
    /// its own `execute_tool {name}` span ([`crate::telemetry`], "A host's span"). Calls made
    /// after it, or from inside it (a program's calls in code mode), and the calls of
    /// [`Registry::call_batch`](crate::Registry::call_batch) open their own spans, children of the
    /// span current where they run; a context used only by `call_batch` keeps `span` until it is
    /// dropped.
    ///
    /// The meta-tools of tool search are answered by
    /// [`Registry::call_with_search`](crate::Registry::call_with_search) without a call of their
    /// own: a `call_tool` call made with this context hands `span` to its inner call, which records
    /// on it (`tool-mcp` therefore hands no span to a meta-tool's call, so that the inner call has
    /// its own `execute_tool {inner}` span, named by the tool that ran). A call that ends without
    /// reaching the end of the registry's path (its future dropped) records `outcome` `cancelled`
    /// on `span` ([`crate::telemetry`], "The span").
    ///
    /// This is how the MCP conventions want a served `tools/call` traced: one SERVER span
    /// `tools/call {name}` that is also the tool's execution span. `tool-mcp` sets it; a host of
    /// its own must declare the fields the registry records (listed in [`crate::telemetry`]),
    /// run the call inside the span, and record `error.type` and the status itself. Default:
    /// none.
    #[must_use]
    pub fn call_span(mut self, span: tracing::Span) -> Self {
        self.shared.call_span = Some(Mutex::new(Some(span)));
        self
    }

    /// The context.
    pub fn build(self) -> ToolContext {
        ToolContext { shared: Arc::new(self.shared), registry: None, call: None, chain: Vec::new(), path: None }
    }
}
