//! A registry, or a subset of it, as [rig] tools an agent takes.
//!
//! [`RigTools`] makes one rig tool per registry tool: each is a handler on rig's effect bus (a
//! `rig_core::serve::Serve` of the tool family, registered through rig-agent's
//! `RegisteredTool::from_handler`) that answers a call with [`Registry::call`]. An agent takes
//! them as a tool server, and [`RigTools::hook`] (call ids, and the framework's answer to calls
//! rig refuses before any tool runs):
//!
//! ```no_run
//! # fn run(registry: std::sync::Arc<tool_runtime::Registry>) -> Result<(), Box<dyn std::error::Error>> {
//! use rig_agent::AgentBuilder;
//! use rig_core::providers::openai::OpenAI;
//!
//! let tools = tool_rig::RigTools::new(registry);
//! let agent = AgentBuilder::new(OpenAI::from_env()?.chat("gpt-4.1"))
//!     .tool_server_handle(tools.tool_server()?.run())
//!     .add_hook(tools.hook())
//!     .build();
//! # let _ = agent; Ok(()) }
//! ```
//!
//! What each call keeps:
//!
//! - **Arguments.** The call's argument text as rig hands it to a tool (the effect's `args`) goes
//!   to [`Registry::call`] unchanged and is decoded there, strictly (unknown fields, wrong types,
//!   a missing field are error results the model reads). rig itself reads a model's arguments
//!   into a JSON object before it dispatches the call and writes that object back as `args`; so,
//!   with rig, a key the model sent twice arrives once (its last value), and only arguments that
//!   are not a JSON object arrive as the model wrote them.
//! - **Call id.** rig gives a tool no call id; it gives it to hooks. [`RigTools::hook`] notes
//!   each tool call's id (the provider's, or the one rig issued when
//!   the provider sent none) under the dispatch's effect id, and the tool takes it back: the
//!   [`ToolCall`]'s id, which the tool's [`ToolContext`], its progress, its spans and its output
//!   cache see. Without the hook, the id is `rig-effect-<effect id>`.
//! - **Calls rig refuses itself.** rig checks a call before it dispatches it: a tool it does not
//!   offer, or arguments that are not a JSON object, end the run by default
//!   (`PromptError::UnknownToolCall`). With [`RigTools::hook`], such a call is answered as the
//!   framework answers it, so the model can recover: an unknown tool gets
//!   ``unknown tool `x`; available tools: ...`` (the turn's tools, sorted), and arguments that are
//!   not an object get the framework's decoding of them (``invalid arguments for `x`: ...``; an
//!   empty text is no arguments, `{}`, and the call runs), as rig's skipped result for that call.
//!   The registry decodes a call's arguments before it asks for approval
//!   ([`tool_runtime::approvals`]), so such a call of a tool that needs approval gets its decoding
//!   error and no approval request; one whose empty text decodes (as `{}`) is refused for want of
//!   approval like any other, and its request goes to [`RigTools::on_approval`].
//! - **Errors keep their kind.** An error result becomes a failed rig tool result whose model
//!   output is the framework's text and whose kind is [`rig_kind`] of its
//!   [`ToolErrorKind`](tool_runtime::ToolErrorKind): an unknown tool is `NotFound`, arguments
//!   that do not decode `InvalidArgs`, a policy's refusal `PermissionDenied`, a time limit
//!   `Timeout`, a cancellation `Cancelled`.
//! - **Results.** Text stays text; parts become rig's tool result content (text blocks, images
//!   as base64 image blocks); any other part is its text projection.
//! - **Approvals.** rig's tool result is what the model reads, so it cannot carry a refused
//!   call's approval request ([`ToolMessage::approval`], the preview and the token of a registry
//!   with [approval tokens](tool_runtime::approvals)): [`rig_result`] leaves it out. The host gets
//!   it through [`RigTools::on_approval`], as [`ApprovalAsked`] (the refused call and its
//!   request), shows the preview to the person and, once they approve, runs that exact call with
//!   the token itself (`registry.call(&asked.approved_call(), ctx)`), outside rig's loop: the model
//!   is told not to send the call again, and the token never reaches it. That call's message
//!   may ask again (a gateway and its upstream that both approve, one after the other): its
//!   `approval` is the next request, handled the same way.
//!
//! rig runs the calls of a turn as its agent decides (each through [`Registry::call`]), not as
//! one [`Registry::call_batch`]: a `sequential` tool's ordering and a policy's `DenyAndStop`
//! across a turn are rig's to honour.
//!
//! Versions: rig-core and rig-agent 0.44 (what the `rig` facade 0.44 re-exports), the newest that
//! builds on rustc 1.95; 0.45 and later need rustc 1.97.1. No rig feature is turned on here: your
//! own rig dependency picks the HTTP client (`reqwest`) and TLS.
//!
//! [rig]: https://docs.rs/rig-core

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use rig_agent::agent::hook::{DispatchAction, DispatchEvent};
use rig_agent::run::policy::{InvalidToolCallAction, InvalidToolCallContext, InvalidToolCallReason};
use rig_agent::tool::RegisteredTool;
use rig_agent::tool::server::ToolServer;
use rig_agent::{AgentHook, HookContext};
use rig_core::completion::message::{DocumentSourceKind, Image, ImageMediaType, MimeType, ToolResultContent};
use rig_core::effect::{EffectId, EffectKind, FamilyDescriptor, HandlerDescriptor, Outcome, family};
use rig_core::error::{ErrorKind, ErrorReport};
use rig_core::serve::{Dispatch, Reply, Serve};
use rig_core::tool::{ToolErrorKind as RigKind, ToolExecutionError, ToolOutput, ToolResult};
use tool_runtime::{
    ApprovalRequest, ContentPart, MessageContent, Registry, ToolCall, ToolContext, ToolErrorKind, ToolMessage,
};

/// How many call ids [`RigTools::hook`] keeps waiting for their tool at most; the
/// oldest goes first beyond that (a call a later hook denied never takes its id).
pub const MAX_PENDING_CALL_IDS: usize = 4096;

/// A registry (or the tools of it named with [`RigTools::only`]) as rig tools. Cheap to clone:
/// the clones share the registry and the call ids.
#[derive(Clone)]
pub struct RigTools {
    registry: Arc<Registry>,
    names: Vec<String>,
    context: ToolContext,
    hook: ToolHook,
    on_approval: Option<OnApproval>,
}

/// The host's function of [`RigTools::on_approval`].
type OnApproval = Arc<dyn Fn(ApprovalAsked) + Send + Sync>;

/// A call that rig ran (or that [`RigTools::hook`] answered, its arguments an empty text) and the
/// registry refused for want of the user's approval (approval tokens,
/// [`tool_runtime::approvals`]): what [`RigTools::on_approval`] hands the host. Its
/// `Debug` form redacts the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAsked {
    /// The call as it was run: its id (the provider's, with [`RigTools::hook`]), the tool's name
    /// and the argument text.
    pub call: ToolCall,
    /// What to show the person (`preview`) and the token that approves exactly this call, once,
    /// until `expires_at` (seconds since the Unix epoch).
    pub request: ApprovalRequest,
}

impl ApprovalAsked {
    /// The same call carrying the approval token, for the host to run with
    /// [`Registry::call`] once the person approves (with the context of the refused call, whose
    /// principal the token is bound to).
    pub fn approved_call(&self) -> ToolCall {
        self.call.clone().with_approval_token(self.request.token.clone())
    }
}

/// The tools named that the registry does not have ([`RigTools::only`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the registry has no tool {}; it has: {}", quoted(.unknown), quoted(.available))]
pub struct UnknownTools {
    /// The names asked for that are not registered, in the order given.
    pub unknown: Vec<String>,
    /// Every registered name, sorted.
    pub available: Vec<String>,
}

fn quoted(names: &[String]) -> String {
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

impl RigTools {
    /// Every tool of `registry` (its [`Registry::definitions`], deferred tools included), each
    /// call run with a clone of a default [`ToolContext`] (see [`RigTools::with_context`]).
    pub fn new(registry: Arc<Registry>) -> Self {
        let names = registry.definitions().iter().map(|d| d.name.clone()).collect();
        let hook = ToolHook {
            pending: Arc::default(),
            registry: Arc::clone(&registry),
            context: ToolContext::new(),
            on_approval: None,
        };
        Self { registry, names, context: ToolContext::new(), hook, on_approval: None }
    }

    /// Hands each call the registry refuses for want of the user's approval to `host`, as it is
    /// refused and before rig's tool result (which leaves the approval out, [`rig_result`]) goes
    /// to the model: a call a tool runs, and a call rig finds malformed that [`RigTools::hook`]
    /// answers whose arguments still decode (an empty text, `{}`; the registry decodes arguments
    /// before it asks for approval, so malformed ones get their decoding error instead); give
    /// the agent the hook of these tools after this is set. `host` runs on the call's task: hand
    /// the request on (a channel to the user interface) rather than wait for the person there. Default: none, and such a refusal
    /// reaches only the model, whose text holds the preview but never the token.
    #[must_use]
    pub fn on_approval(mut self, host: impl Fn(ApprovalAsked) + Send + Sync + 'static) -> Self {
        self.on_approval = Some(Arc::new(host));
        self
    }

    /// Only the tools named, in the registry's order (a name given twice counts once).
    ///
    /// # Errors
    /// [`UnknownTools`] when a name is not registered, listing every such name and the registered
    /// ones.
    pub fn only<'a>(mut self, names: impl IntoIterator<Item = &'a str>) -> Result<Self, UnknownTools> {
        let wanted: Vec<&str> = names.into_iter().collect();
        let unknown: Vec<String> =
            wanted.iter().filter(|n| self.registry.definition(n).is_none()).map(|n| (*n).to_owned()).collect();
        if !unknown.is_empty() {
            return Err(UnknownTools { unknown, available: self.registry.names().map(str::to_owned).collect() });
        }
        let wanted: BTreeSet<&str> = wanted.into_iter().collect();
        self.names.retain(|n| wanted.contains(n.as_str()));
        Ok(self)
    }

    /// Each call runs with a clone of `context` (its session, principal, cancellation token,
    /// client channel); its call id is the call's.
    #[must_use]
    pub fn with_context(mut self, context: ToolContext) -> Self {
        self.hook.context = context.clone();
        self.context = context;
        self
    }

    /// The tools as rig-agent registrations, one per tool in order, for `ToolServer::registered_tool`
    /// or `ToolSet::add_registered_tool`. Each is registered under rig's default key
    /// `tool:<name>`, with the tool's name, description and canonical JSON Schema
    /// ([`ToolDefinition::input_schema`](tool_runtime::ToolDefinition::input_schema)); rig
    /// adapts the schema to each provider.
    ///
    /// # Errors
    /// rig's `ErrorReport` (boxed: it is large) when it refuses a registration (an empty tool name, which a registry
    /// never has).
    pub fn registered_tools(&self) -> Result<Vec<RegisteredTool>, Box<ErrorReport>> {
        self.names
            .iter()
            .map(|name| {
                RegisteredTool::from_handler(RigTool {
                    registry: Arc::clone(&self.registry),
                    name: name.clone(),
                    context: self.context.clone(),
                    pending: Arc::clone(&self.hook.pending),
                    on_approval: self.on_approval.clone(),
                })
                .map_err(Box::new)
            })
            .collect()
    }

    /// A rig-agent tool server holding [`RigTools::registered_tools`]: `.run()` it and give the
    /// handle to `AgentBuilder::tool_server_handle`, or add your own rig tools to it first.
    ///
    /// # Errors
    /// As [`RigTools::registered_tools`].
    pub fn tool_server(&self) -> Result<ToolServer, Box<ErrorReport>> {
        Ok(self.registered_tools()?.into_iter().fold(ToolServer::new(), ToolServer::registered_tool))
    }

    /// The agent hook for these tools (`AgentBuilder::add_hook`, or `AgentRunner::add_hook` for
    /// one run): it hands each tool its call id and answers the calls rig refuses before any
    /// tool runs; see the crate docs.
    pub fn hook(&self) -> ToolHook {
        ToolHook { on_approval: self.on_approval.clone(), ..self.hook.clone() }
    }
}

/// The agent hook of [`RigTools::hook`]. On a tool call's dispatch it notes the call's id under
/// the dispatch's effect id (at most [`MAX_PENDING_CALL_IDS`] wait) and lets the dispatch proceed
/// unchanged; on a call rig finds invalid it answers an unknown tool and arguments that are not a
/// JSON object as the framework does (rig's `InvalidToolCallAction::Skip` with that text), and
/// leaves any other case (a tool the tool choice does not allow) to rig. A call it answers that
/// the registry refuses for want of approval (its arguments decode: an empty text) goes to
/// [`RigTools::on_approval`] as a tool's does.
#[derive(Clone)]
pub struct ToolHook {
    pending: Arc<Mutex<Pending>>,
    registry: Arc<Registry>,
    context: ToolContext,
    on_approval: Option<OnApproval>,
}

#[derive(Default)]
struct Pending {
    ids: HashMap<EffectId, String>,
    order: VecDeque<EffectId>,
}

/// Notes `call_id` under `effect`, the oldest noted id going first beyond
/// [`MAX_PENDING_CALL_IDS`].
fn note(pending: &Mutex<Pending>, effect: EffectId, call_id: String) {
    let mut pending = pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if pending.ids.insert(effect, call_id).is_none() {
        pending.order.push_back(effect);
    }
    while pending.order.len() > MAX_PENDING_CALL_IDS {
        if let Some(oldest) = pending.order.pop_front() {
            pending.ids.remove(&oldest);
        }
    }
}

/// The call id noted under `effect`, removed.
fn take(pending: &Mutex<Pending>, effect: EffectId) -> Option<String> {
    let mut pending = pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let id = pending.ids.remove(&effect)?;
    pending.order.retain(|e| *e != effect);
    Some(id)
}

impl AgentHook for ToolHook {
    fn name(&self) -> Option<String> {
        Some("tool_rig::ToolHook".to_owned())
    }

    async fn on_dispatch(&self, _ctx: &HookContext, event: DispatchEvent<'_>) -> DispatchAction {
        if let (EffectKind::ToolCall { .. }, Some(call_id)) = (event.kind, event.call_id) {
            note(&self.pending, event.id, call_id.to_string());
        }
        DispatchAction::Proceed
    }

    async fn on_invalid_tool_call(
        &self,
        _ctx: &HookContext,
        event: &InvalidToolCallContext,
    ) -> Option<InvalidToolCallAction> {
        match &event.reason {
            InvalidToolCallReason::UnknownTool => {
                let mut available = event.available_tools.clone();
                available.sort();
                let error = tool_runtime::ToolError::UnknownTool { name: event.tool_name.clone(), available };
                Some(InvalidToolCallAction::skip(error.to_string()))
            }
            InvalidToolCallReason::MalformedArguments { .. } => {
                let id = event.tool_call_id.as_ref().map_or_else(String::new, ToString::to_string);
                let call = ToolCall::new(id, &event.tool_name, event.args.clone().unwrap_or_default());
                let message = self.registry.call(&call, &self.context).await;
                let message = handed_approval(self.on_approval.as_ref(), call, message);
                Some(InvalidToolCallAction::skip(message.text().into_owned()))
            }
            _ => None,
        }
    }
}

/// One registry tool as a rig tool-family handler.
struct RigTool {
    registry: Arc<Registry>,
    name: String,
    context: ToolContext,
    pending: Arc<Mutex<Pending>>,
    on_approval: Option<OnApproval>,
}

impl Serve for RigTool {
    type Family = family::Tool;

    fn descriptor(&self) -> HandlerDescriptor {
        let definition = self.registry.definition(&self.name);
        HandlerDescriptor {
            key: rig_core::effect::tool_key(&self.name),
            family: FamilyDescriptor::Tool {
                name: self.name.clone(),
                description: definition.map(|d| d.description.clone()).unwrap_or_default(),
                parameters: definition.map(|d| d.input_schema.clone()).unwrap_or_default(),
                embedding: None,
            },
            layers: Vec::new(),
        }
    }

    async fn serve(&self, kind: EffectKind, dispatch: Dispatch) -> Reply {
        let EffectKind::ToolCall { name, args } = kind else {
            return Reply::Outcome(Err(ErrorReport::new(
                ErrorKind::HandlerUnavailable,
                format!("the tool `{}` serves tool calls, not a `{}` effect", self.name, kind.name()),
            )));
        };
        let effect = dispatch.id();
        let id = take(&self.pending, effect).unwrap_or_else(|| format!("rig-effect-{effect}"));
        // The name is the one the call was routed by (rig dispatches by name); a hook's patch may
        // not change it.
        let call = ToolCall::new(id, name, args);
        let message = self.registry.call(&call, &self.context).await;
        let message = handed_approval(self.on_approval.as_ref(), call, message);
        Reply::Outcome(Ok(Outcome::ToolResult { result: rig_result(message) }))
    }
}

/// `message` of `call` with its approval request ([`ToolMessage::approval`]) handed to `host`,
/// when there are both; the one place every refusal for approval reaches the host from.
fn handed_approval(host: Option<&OnApproval>, call: ToolCall, mut message: ToolMessage) -> ToolMessage {
    if let (Some(host), Some(request)) = (host, message.approval.take()) {
        host(ApprovalAsked { call, request: *request });
    }
    message
}

/// A tool message as rig's tool result: a success's text or parts as the output, an error as a
/// failed result of [`rig_kind`] with the message's text as what the model reads. A refused
/// call's approval request ([`ToolMessage::approval`]) is for the host, not the model, and is
/// left out: [`RigTools::on_approval`] hands it to the host.
pub fn rig_result(message: ToolMessage) -> ToolResult {
    if message.is_error {
        let kind = message.error_kind.map_or(RigKind::Other, rig_kind);
        return ToolResult::failed(ToolExecutionError::new(kind, message.text().into_owned()));
    }
    let output = match message.content {
        MessageContent::Text(text) => ToolOutput::text(text),
        MessageContent::Parts(parts) => {
            let blocks: Vec<ToolResultContent> = parts.iter().map(rig_block).collect();
            // An empty part list reads as empty text (rig refuses empty content).
            ToolOutput::content(blocks).unwrap_or_else(|_| ToolOutput::text(""))
        }
    };
    ToolResult::success(output)
}

/// One part as a rig tool result block: an image of a type rig knows (PNG, JPEG, GIF, WebP, HEIC,
/// HEIF, SVG) as a base64 image, anything else as text with its text projection
/// ([`ContentPart::as_text`]).
fn rig_block(part: &ContentPart) -> ToolResultContent {
    if let ContentPart::Image { data, media_type, .. } = part
        && let Some(media_type) = ImageMediaType::from_mime_type(media_type)
    {
        return ToolResultContent::Image(Image {
            data: DocumentSourceKind::base64(data.as_str()),
            media_type: Some(media_type),
            detail: None,
            native: None,
        });
    }
    ToolResultContent::Text(part.as_text().into_owned().into())
}

/// The rig error kind of a framework error kind:
///
/// | framework | rig |
/// |---|---|
/// | `UnknownTool` | `NotFound` |
/// | `InvalidArguments` | `InvalidArgs` |
/// | `PermissionDenied` | `PermissionDenied` |
/// | `TimedOut` | `Timeout` |
/// | `Cancelled`, `TurnStopped` (the call did not run: its turn was stopped) | `Cancelled` |
/// | `Dependency`, `RegistryClosed`, `Failed`, `Panicked`, any later kind | `Other` |
pub fn rig_kind(kind: ToolErrorKind) -> RigKind {
    match kind {
        ToolErrorKind::UnknownTool => RigKind::NotFound,
        ToolErrorKind::InvalidArguments => RigKind::InvalidArgs,
        ToolErrorKind::PermissionDenied => RigKind::PermissionDenied,
        ToolErrorKind::TimedOut => RigKind::Timeout,
        ToolErrorKind::Cancelled | ToolErrorKind::TurnStopped => RigKind::Cancelled,
        _ => RigKind::Other,
    }
}
