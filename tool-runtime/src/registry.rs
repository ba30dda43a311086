//! The dispatch table: tools by name, their definitions, and the call pipeline.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::time::Instant;
use tracing::Instrument;

use crate::batch::{Batch, TurnStop};
use crate::call::ToolCall;
use crate::context::{RegistryScope, ToolContext};
use crate::decode::RepairPolicy;
use crate::depends::DependencyKey;
use crate::error::{CloseError, RegistryError, ToolError};
use crate::lifecycle::{self, Closer};
use crate::policy::{DefaultPolicy, Permission, PermissionPolicy, PermissionRequest};
use crate::result::{ToolMessage, ToolResult};
use crate::tool::{Tool, ToolDefinition, ToolSpec, registrations};

/// The tools an agent can call, by name, and the dispatcher that runs a model's tool calls.
///
/// Built once (by [`Registry::discover`] or [`Registry::builder`]) and shared; every method takes
/// `&self`. Tools are kept sorted by name; lookup is a hash map.
///
/// # One call
/// [`Registry::call`] looks the tool up, asks the [permission policy](PermissionPolicy), then
/// decodes the arguments, resolves the dependencies and runs the body, racing the caller's
/// cancellation token and the time limit. Whatever happens becomes one [`ToolMessage`]; each call
/// runs inside a `tracing` span named `tool_call` with the fields `tool`, `call_id`, `session_id`,
/// `outcome` (`ok`, `done`, `error`, `denied`, `stopped`, `cancelled`, `timed_out`, `panicked`,
/// `closed`) and `duration_ms` (from the start of the run, on tokio's clock).
///
/// A tool that does not [read its context](Tool::reads_context) runs with the caller's context as
/// it is; a tool that does gets a per-call context derived from it. When no `tracing` subscriber
/// records the call, the policy answers through [`PermissionPolicy::check_now`] and a
/// context-free tool without a time limit finishes on its first poll (most do), the whole call
/// happens in the first poll of the future [`Registry::call`] returns, with nothing allocated
/// beyond the tool's own future and the message. There, a synchronous tool ([`Tool::call_now`], a
/// `#[tool]` on a plain `fn`) is called directly, with no future of its own.
///
/// # Lifecycle
/// [`Registry::close`] (or dropping the registry) closes every tool ([`Tool::close`]) and every
/// registry-scoped dependency value that declares a close, once each.
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    /// `tools[i]`'s name, shared with every call's context.
    names: Vec<Arc<str>>,
    /// Name -> index in `tools`. foldhash: the keys are the registry's own names (a model's
    /// name is only looked up, never inserted), so a hash that resists chosen collisions buys
    /// nothing here and SipHash would be most of the lookup's cost.
    index: HashMap<Arc<str>, usize, foldhash::fast::RandomState>,
    definitions: OnceLock<Vec<ToolDefinition>>,
    scope: Arc<RegistryScope>,
    policy: Arc<dyn PermissionPolicy>,
    default_timeout: Option<Duration>,
    repair: RepairPolicy,
    output: crate::output::SharedLayer,
    closed: AtomicBool,
}

/// What the registry decided before running a call.
enum Admission {
    /// The index of the tool in the registry.
    Run(usize),
    Refuse(ToolError),
    /// Denied with [`Permission::DenyAndStop`]: the reason.
    Stop(String),
}

/// What [`Registry::admit_now`] decided: an [`Admission`], or the index of the tool whose
/// policy's [`check`](PermissionPolicy::check) must be awaited ([`PermissionPolicy::check_now`]
/// gave `None`).
type AdmittedNow = Result<Admission, usize>;

/// The future [`Registry::call`] returns: the call starts on the first poll
/// ([`Registry::start_call`]), and what does not finish there goes on in a boxed future.
struct CallFuture<'a> {
    registry: &'a Registry,
    call: &'a ToolCall,
    ctx: &'a ToolContext,
    state: CallState<'a>,
}

enum CallState<'a> {
    /// Not polled yet.
    Start,
    /// The rest of the call.
    Rest(BoxFuture<'a, ToolMessage>),
    /// The message was handed out.
    Done,
}

impl Future for CallFuture<'_> {
    type Output = ToolMessage;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<ToolMessage> {
        let this = self.get_mut();
        let mut rest = match std::mem::replace(&mut this.state, CallState::Done) {
            // A message made on the first poll goes straight out (it is not stored in the state:
            // a message is 144 bytes, each move a copy).
            CallState::Start => match this.registry.start_call(this.call, this.ctx, cx) {
                Ok(message) => return std::task::Poll::Ready(message),
                Err(rest) => rest,
            },
            CallState::Rest(rest) => rest,
            // As an `async fn`'s future does.
            CallState::Done => panic!("`Registry::call` polled after it finished"),
        };
        match rest.as_mut().poll(cx) {
            std::task::Poll::Ready(message) => std::task::Poll::Ready(message),
            std::task::Poll::Pending => {
                this.state = CallState::Rest(rest);
                std::task::Poll::Pending
            }
        }
    }
}

/// The messages of a batch as its calls finish, at their calls' indexes, with the context each
/// call ran in when an output layer will finish them there.
struct Turn {
    messages: Vec<Option<ToolMessage>>,
    /// Empty without an output layer.
    contexts: Vec<Option<ToolContext>>,
}

impl Turn {
    fn new(calls: usize, keep_contexts: bool) -> Self {
        let mut messages = Vec::with_capacity(calls);
        messages.resize_with(calls, || None);
        let mut contexts = Vec::new();
        if keep_contexts {
            contexts.resize_with(calls, || None);
        }
        Self { messages, contexts }
    }

    fn put(&mut self, i: usize, message: ToolMessage, call_ctx: Option<ToolContext>) {
        self.messages[i] = Some(message);
        if let Some(slot) = self.contexts.get_mut(i) {
            *slot = call_ctx;
        }
    }
}

/// A tool's future under `catch_unwind`, as [`Registry::start_inline`] polled it.
type Running<'a> = futures::future::CatchUnwind<AssertUnwindSafe<BoxFuture<'a, Result<ToolResult, ToolError>>>>;

/// What [`Registry::start_inline`] did with a call.
enum Started<'a> {
    /// The tool finished on its first poll.
    Finished(Result<ToolResult, ToolError>),
    /// The tool's future, polled once, not finished.
    Running(Running<'a>),
    /// Not started: the call needs the full path.
    NotInline,
}

/// The tool's future for `arguments`, under `catch_unwind`. A tool whose `call` panics before it
/// returns its future (a tool written by hand may do work there) gets a future that panics on its
/// first poll instead, so the panic becomes [`ToolError::Panicked`] like any other.
fn tool_future<'a>(tool: &'a dyn Tool, arguments: &'a str, ctx: &'a ToolContext) -> Running<'a> {
    let future = std::panic::catch_unwind(AssertUnwindSafe(|| tool.call(arguments, ctx)))
        .unwrap_or_else(|payload| Box::pin(async move { std::panic::resume_unwind(payload) }));
    AssertUnwindSafe(future).catch_unwind()
}

/// A permission policy's panic as a refusal: a broken policy must not let calls through.
fn policy_panicked(payload: Box<dyn std::any::Any + Send>) -> Permission {
    Permission::Deny(format!("the permission policy panicked: {}", lifecycle::panic_message(payload.as_ref())))
}

/// The outcome of a tool's future run under `catch_unwind`: a panic becomes
/// [`ToolError::Panicked`].
fn caught(
    call: &ToolCall,
    outcome: std::thread::Result<Result<ToolResult, ToolError>>,
) -> Result<ToolResult, ToolError> {
    outcome.unwrap_or_else(|payload| {
        Err(ToolError::Panicked { tool: call.name.clone(), message: lifecycle::panic_message(payload.as_ref()) })
    })
}

impl Registry {
    /// A registry of every `#[tool]` linked into the binary.
    ///
    /// `inventory` only sees crates that are linked: a crate of tools that nothing else references
    /// must be referenced (for example `use my_tools as _;`) or registered through
    /// [`Registry::builder`].
    ///
    /// # Errors
    /// [`RegistryError::DuplicateName`] when two tools share a name.
    pub fn discover() -> Result<Self, RegistryError> {
        Self::builder().discover().build()
    }

    /// A builder for explicit registration, set filters, dependency overrides, the permission
    /// policy and the default time limit.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// The definitions of every tool, sorted by name. Built on the first call, then the same
    /// slice is returned.
    pub fn definitions(&self) -> &[ToolDefinition] {
        self.definitions.get_or_init(|| self.tools.iter().map(|t| t.definition().clone()).collect())
    }

    /// The tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name())
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.index.get(name).map(|&i| &*self.tools[i])
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// `true` when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Runs one tool call and returns its message. Never fails: every failure becomes a message
    /// with `is_error: true` whose text says what happened, and the registry keeps serving:
    ///
    /// | failure | message | body ran |
    /// |---|---|---|
    /// | unknown tool | ``unknown tool `x`; available tools: ...`` | no |
    /// | registry closed | ``tool `x` did not run: the registry is closed; ...`` | no |
    /// | policy refused | `Permission denied: <reason>` | no |
    /// | cancelled before the start | ``tool `x` was cancelled`` | no |
    /// | arguments do not decode | ``invalid arguments for `x`: ...`` | no |
    /// | a dependency's `create` failed | ``tool `x` could not run: dependency `k` failed: ...`` | no |
    /// | dependency cycle | ``tool `x` could not run: dependency cycle: a -> b -> a; ...`` | no |
    /// | the tool returned `Err(e)` | `e`'s text | yes |
    /// | cancelled while running | ``tool `x` was cancelled`` | stopped |
    /// | time limit reached | ``tool `x` timed out after N ms`` | stopped |
    /// | the tool panicked | ``tool `x` panicked: <payload>`` | yes |
    ///
    /// A policy's [`Permission::DenyAndStop`] reads like a denial here; use
    /// [`call_batch`](Registry::call_batch) (also with one call) to learn that the turn stopped.
    pub fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        ctx: &'a ToolContext,
    ) -> impl Future<Output = ToolMessage> + Send + 'a {
        CallFuture { registry: self, call, ctx, state: CallState::Start }
    }

    /// The first poll of a call. The common call (no `tracing` subscriber records it, the policy
    /// answers at once through [`PermissionPolicy::check_now`], and the tool can start inline, see
    /// [`Registry::start_inline`]) runs here without a future of its own, and a tool that finishes
    /// on its first poll (most do) gives the message at once (`Ok`). Anything else continues in
    /// the boxed future returned as `Err`: [`Registry::call_in_full`], the wait for a tool that did
    /// not finish on its first poll, or the output layer's finish when the output store is not made
    /// yet.
    fn start_call<'a>(
        &'a self,
        call: &'a ToolCall,
        ctx: &'a ToolContext,
        cx: &mut std::task::Context<'_>,
    ) -> Result<ToolMessage, BoxFuture<'a, ToolMessage>> {
        let span = call_span(call, ctx);
        if !span.is_disabled() {
            return Err(Box::pin(self.call_in_full(call, ctx, span, None)));
        }
        let admission = self.admit_now(call, ctx);
        let Ok(Admission::Run(index)) = admission else {
            return Err(Box::pin(self.call_in_full(call, ctx, span, Some(admission))));
        };
        let outcome = match self.start_inline(index, call, ctx, &span, cx) {
            Started::Finished(outcome) => outcome,
            Started::Running(run) => {
                return Err(Box::pin(async move {
                    let outcome = Self::wait_running(run, call, ctx).await;
                    let message = self.finish(call, outcome, &tracing::Span::none(), None);
                    self.with_output(message, call, ctx, None).await
                }));
            }
            Started::NotInline => {
                return Err(Box::pin(self.call_in_full(call, ctx, span, Some(admission))));
            }
        };
        let message = self.finish(call, outcome, &span, None);
        self.finish_output_now(message, ctx).map_err(|message| {
            let call_ctx = self.context_for(call, ctx);
            Box::pin(self.with_output(message, call, ctx, Some(call_ctx))) as BoxFuture<'a, ToolMessage>
        })
    }

    /// Starts the admitted call of `self.tools[index]` inline when nothing else has to happen
    /// around it: no `tracing` subscriber records `span`, the tool does not [read its
    /// context](Tool::reads_context) (it runs with `ctx`), there is no time limit and no argument
    /// repair, and the caller's token is not cancelled. A synchronous tool ([`Tool::call_now`])
    /// then runs to its end here; any other has its future polled once in `cx`. A panic in either
    /// becomes [`ToolError::Panicked`]. [`Started::NotInline`] otherwise: [`Registry::run_admitted`]
    /// runs the call in full.
    fn start_inline<'a>(
        &'a self,
        index: usize,
        call: &'a ToolCall,
        ctx: &'a ToolContext,
        span: &tracing::Span,
        cx: &mut std::task::Context<'_>,
    ) -> Started<'a> {
        let tool = &*self.tools[index];
        if !span.is_disabled()
            || tool.reads_context()
            || tool.timeout().or(self.default_timeout).is_some()
            || !self.repair.is_none()
            || ctx.is_cancelled()
        {
            return Started::NotInline;
        }
        // A synchronous tool runs to its end here, with no future at all.
        match std::panic::catch_unwind(AssertUnwindSafe(|| tool.call_now(&call.arguments, ctx))) {
            Ok(Some(outcome)) => return Started::Finished(outcome),
            Ok(None) => {}
            Err(payload) => return Started::Finished(caught(call, Err(payload))),
        }
        let mut run = tool_future(tool, &call.arguments, ctx);
        match std::pin::Pin::new(&mut run).poll(cx) {
            std::task::Poll::Ready(outcome) => Started::Finished(caught(call, outcome)),
            std::task::Poll::Pending => Started::Running(run),
        }
    }

    /// Waits for a call [`Registry::start_inline`] started whose tool did not finish on its first
    /// poll, racing the caller's cancellation token.
    async fn wait_running(run: Running<'_>, call: &ToolCall, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        match Self::wait(run.map(Ok), call, ctx).await {
            Ok(outcome) => caught(call, outcome),
            Err(cancelled) => Err(cancelled),
        }
    }

    /// [`Registry::call`] for every kind of call, in `span`. `admission` is what
    /// [`Registry::admit_now`] decided already, if it was asked.
    async fn call_in_full(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
        span: tracing::Span,
        admission: Option<AdmittedNow>,
    ) -> ToolMessage {
        // The duration is only measured for someone to see it (two clock reads a call).
        let started = (!span.is_disabled()).then(Instant::now);
        let run = async {
            let admission = match admission {
                Some(Ok(admission)) => admission,
                Some(Err(index)) => self.ask(index, call, ctx).await,
                None => self.admit(call, ctx).await,
            };
            let (outcome, call_ctx) = match admission {
                Admission::Run(index) => self.run_admitted(index, call, ctx).await,
                Admission::Refuse(error) => (Err(error), None),
                Admission::Stop(reason) => (Err(ToolError::PermissionDenied { tool: call.name.clone(), reason }), None),
            };
            let message = self.finish(call, outcome, &span, started);
            self.with_output(message, call, ctx, call_ctx).await
        };
        if span.is_disabled() { run.await } else { run.instrument(span.clone()).await }
    }

    /// Runs the admitted call of `self.tools[index]` in a context of its own, and returns that
    /// context with the outcome (the output layer finishes the message in it). A tool that does
    /// not [read its context](Tool::reads_context) runs with `ctx` and gets none.
    async fn run_admitted(
        &self,
        index: usize,
        call: &ToolCall,
        ctx: &ToolContext,
    ) -> (Result<ToolResult, ToolError>, Option<ToolContext>) {
        let tool = &*self.tools[index];
        if !tool.reads_context() {
            return (self.execute(tool, call, ctx, false).await, None);
        }
        let call_ctx = ctx.for_call(&call.id, self.names[index].clone(), &self.scope);
        (self.execute(tool, call, &call_ctx, true).await, Some(call_ctx))
    }

    /// The [output layer](RegistryBuilder::output)'s finish of one message, when the registry has
    /// one: stored in the output cache, `output_ref` set, held to the per-message cap. `call_ctx`
    /// is the context the call ran in; without one, the store made already is used, or a per-call
    /// context is made to resolve it.
    async fn with_output(
        &self,
        message: ToolMessage,
        call: &ToolCall,
        ctx: &ToolContext,
        call_ctx: Option<ToolContext>,
    ) -> ToolMessage {
        let Some(layer) = &self.output else { return message };
        let (message, call_ctx) = match call_ctx {
            Some(call_ctx) => (message, call_ctx),
            None => match self.finish_output_now(message, ctx) {
                Ok(message) => return message,
                Err(message) => (message, self.context_for(call, ctx)),
            },
        };
        layer.finish(message, &call_ctx).await
    }

    /// [`Registry::with_output`] when it needs no per-call context: `Ok` with the finished message
    /// (no output layer, or a store made already or overridden), `Err` with the message as it was
    /// when the store has to be resolved in a per-call context.
    // Both sides carry the one message, moved, never boxed (a box would be an allocation a call).
    #[allow(clippy::result_large_err)]
    fn finish_output_now(&self, message: ToolMessage, ctx: &ToolContext) -> Result<ToolMessage, ToolMessage> {
        let Some(layer) = &self.output else { return Ok(message) };
        match self.ready_store(ctx) {
            Some(store) => Ok(layer.finish_message(message, &*store, crate::output::OutputScope::of(ctx))),
            None => Err(message),
        }
    }

    /// The output store as a call of this registry would resolve it, when that needs no `create`
    /// (made already, or overridden); `None` when it has to be resolved in a per-call context.
    fn ready_store(&self, ctx: &ToolContext) -> Option<Arc<dyn crate::output::OutputStore>> {
        ctx.ready_in(&self.scope, &crate::output::OUTPUT_STORE)
    }

    /// The per-call context of `call`: its tool's shared name when the tool exists, else a copy of
    /// the name the model sent.
    fn context_for(&self, call: &ToolCall, ctx: &ToolContext) -> ToolContext {
        let name = match self.index.get(call.name.as_str()) {
            Some(&index) => self.names[index].clone(),
            None => Arc::from(call.name.as_str()),
        };
        ctx.for_call(&call.id, name, &self.scope)
    }

    /// With an output layer: every message of a turn as in [`Registry::with_output`] (each
    /// comes with the context its call ran in, when it ran), then the turn budget shared across
    /// them.
    async fn apply_output_to_turn(&self, turn: Turn, calls: &[ToolCall], ctx: &ToolContext) -> Vec<ToolMessage> {
        let mut messages: Vec<ToolMessage> = turn.messages.into_iter().flatten().collect();
        let Some(layer) = &self.output else { return messages };
        let mut contexts = turn.contexts.into_iter();
        // Looked up once for the turn: the calls that ran without a context of their own share it.
        let store = self.ready_store(ctx);
        // Finished in place (a second vector of messages would be a large allocation per turn).
        for (slot, call) in messages.iter_mut().zip(calls) {
            let message = std::mem::replace(slot, ToolMessage::error(String::new(), String::new(), String::new()));
            *slot = match (&store, contexts.next().flatten()) {
                (Some(store), None) => layer.finish_message(message, &**store, crate::output::OutputScope::of(ctx)),
                (_, call_ctx) => self.with_output(message, call, ctx, call_ctx).await,
            };
        }
        layer.apply_turn(&mut messages);
        messages
    }

    /// Runs the tool calls of one model turn and returns their messages in call order (each keeps
    /// its `tool_call_id`), with whether the agent loop should stop ([`Batch::stop`]).
    ///
    /// 1. The [permission policy](PermissionPolicy) is asked about every call of a known tool, one
    ///    after the other in call order, before any call runs. A
    ///    [`Permission::DenyAndStop`] stops the turn: that call reads `Permission denied:
    ///    <reason>`, no other call runs (each reads ``tool `y` did not run: the turn was stopped
    ///    ...``), and the batch reports [`TurnStop::Denied`].
    /// 2. The calls run in call order as groups: consecutive calls of non-`sequential` tools run
    ///    concurrently; a call of a `sequential` tool runs alone, after the calls before it have
    ///    finished and before the calls after it start.
    /// 3. A call that returns [`ToolResult::Done`] does not cut the other calls of its turn short
    ///    (the model asked for them together); the batch reports [`TurnStop::Done`] with the first
    ///    such call in call order.
    ///
    /// Each call fails or succeeds on its own as in [`Registry::call`]: a panic or a timeout in one
    /// does not touch the others. Cancelling `ctx`'s token ends the running calls and every call
    /// not yet started with ``tool `x` was cancelled``.
    pub async fn call_batch(&self, calls: &[ToolCall], ctx: &ToolContext) -> Batch {
        let spans: Vec<tracing::Span> = calls.iter().map(|call| call_span(call, ctx)).collect();
        let mut admissions = Vec::with_capacity(calls.len());
        let mut denied: Option<(usize, String)> = None;
        for (i, call) in calls.iter().enumerate() {
            if denied.is_some() {
                break;
            }
            let admission = if spans[i].is_disabled() {
                self.admit(call, ctx).await
            } else {
                self.admit(call, ctx).instrument(spans[i].clone()).await
            };
            if let Admission::Stop(reason) = &admission {
                denied = Some((i, reason.clone()));
            }
            admissions.push(admission);
        }

        if let Some((stopper, reason)) = denied {
            let denied_tool = calls[stopper].name.clone();
            let mut admissions = admissions.into_iter();
            let mut turn = Turn::new(calls.len(), false);
            for (i, (call, span)) in calls.iter().zip(&spans).enumerate() {
                let error = match admissions.next() {
                    _ if i == stopper => {
                        ToolError::PermissionDenied { tool: call.name.clone(), reason: reason.clone() }
                    }
                    Some(Admission::Refuse(error)) => error,
                    _ => ToolError::TurnStopped {
                        tool: call.name.clone(),
                        denied_tool: denied_tool.clone(),
                        reason: reason.clone(),
                    },
                };
                turn.put(i, self.finish(call, Err(error), span, None), None);
            }
            let stop = TurnStop::Denied { tool_call_id: calls[stopper].id.clone(), tool_name: denied_tool, reason };
            return Batch::new(self.apply_output_to_turn(turn, calls, ctx).await, Some(stop));
        }

        let mut turn = Turn::new(calls.len(), self.output.is_some());
        let mut group: Vec<(usize, usize)> = Vec::new();
        for (i, admission) in admissions.into_iter().enumerate() {
            let error = match admission {
                Admission::Run(tool) if self.tools[tool].sequential() => {
                    self.run_group(std::mem::take(&mut group), calls, &spans, ctx, &mut turn).await;
                    self.run_group(vec![(i, tool)], calls, &spans, ctx, &mut turn).await;
                    continue;
                }
                Admission::Run(tool) => {
                    group.push((i, tool));
                    continue;
                }
                Admission::Refuse(error) => error,
                // Not reached: a stop ends the turn above. Still one message per call.
                Admission::Stop(reason) => ToolError::PermissionDenied { tool: calls[i].name.clone(), reason },
            };
            turn.put(i, self.finish(&calls[i], Err(error), &spans[i], None), None);
        }
        self.run_group(group, calls, &spans, ctx, &mut turn).await;

        let stop = turn
            .messages
            .iter()
            .flatten()
            .find(|m| m.done)
            .map(|m| TurnStop::Done { tool_call_id: m.tool_call_id.clone(), message: m.text().into_owned() });
        Batch::new(self.apply_output_to_turn(turn, calls, ctx).await, stop)
    }

    /// Runs one group of calls concurrently and stores each message, with the context its call
    /// ran in, at its call's index. `group` holds (call index, tool index) pairs.
    ///
    /// Every call is polled for the first time in call order, inline (the calls that finish there,
    /// most of them, need no future of their own); the others then run together.
    async fn run_group(
        &self,
        group: Vec<(usize, usize)>,
        calls: &[ToolCall],
        spans: &[tracing::Span],
        ctx: &ToolContext,
        turn: &mut Turn,
    ) {
        type Rest<'a> = BoxFuture<'a, (usize, (ToolMessage, Option<ToolContext>))>;
        let mut rest: Vec<Rest<'_>> = Vec::new();
        std::future::poll_fn(|cx| {
            for &(i, tool) in &group {
                let (call, span) = (&calls[i], &spans[i]);
                let mut run: Rest<'_> = match self.start_inline(tool, call, ctx, span, cx) {
                    Started::Finished(outcome) => {
                        turn.put(i, self.finish(call, outcome, span, None), None);
                        continue;
                    }
                    Started::Running(run) => {
                        rest.push(Box::pin(async move {
                            let outcome = Self::wait_running(run, call, ctx).await;
                            (i, (self.finish(call, outcome, span, None), None))
                        }));
                        continue;
                    }
                    Started::NotInline => Box::pin(
                        async move {
                            let started = (!span.is_disabled()).then(Instant::now);
                            let (outcome, call_ctx) = self.run_admitted(tool, call, ctx).await;
                            (i, (self.finish(call, outcome, span, started), call_ctx))
                        }
                        .instrument(span.clone()),
                    ),
                };
                // Its first poll here, in call order like the others.
                match run.as_mut().poll(cx) {
                    std::task::Poll::Ready((i, (message, call_ctx))) => turn.put(i, message, call_ctx),
                    std::task::Poll::Pending => rest.push(run),
                }
            }
            std::task::Poll::Ready(())
        })
        .await;
        if !rest.is_empty() {
            for (i, (message, call_ctx)) in futures::future::join_all(rest).await {
                turn.put(i, message, call_ctx);
            }
        }
    }

    /// Looks the tool up and asks the permission policy. Nothing of the call has run yet.
    async fn admit(&self, call: &ToolCall, ctx: &ToolContext) -> Admission {
        match self.admit_now(call, ctx) {
            Ok(admission) => admission,
            Err(index) => self.ask(index, call, ctx).await,
        }
    }

    /// What [`Registry::admit`] decides without waiting: the lookup, the closed registry, and the
    /// policy's [`check_now`](PermissionPolicy::check_now); the tool's index when the policy has
    /// to be awaited.
    fn admit_now(&self, call: &ToolCall, ctx: &ToolContext) -> AdmittedNow {
        let Some(&index) = self.index.get(call.name.as_str()) else {
            let available = self.names().map(str::to_owned).collect();
            return Ok(Admission::Refuse(ToolError::UnknownTool { name: call.name.clone(), available }));
        };
        if self.closed.load(Ordering::Acquire) {
            return Ok(Admission::Refuse(ToolError::RegistryClosed { tool: call.name.clone() }));
        }
        let request = PermissionRequest { call, definition: self.tools[index].definition(), context: ctx };
        // A policy that answers at once is asked also when the call is cancelled already (it costs
        // nothing; the call is refused before it starts, a lock saved per call). A policy that may
        // wait is not asked for a cancelled call.
        // A policy that panics refuses: a broken policy must not let calls through.
        match std::panic::catch_unwind(AssertUnwindSafe(|| self.policy.check_now(request))) {
            Ok(Some(decision)) => Ok(self.admission(index, call, decision)),
            Ok(None) => Err(index),
            Err(payload) => Ok(self.admission(index, call, policy_panicked(payload))),
        }
    }

    /// Asks the policy's [`check`](PermissionPolicy::check) about the call of `self.tools[index]`;
    /// refused as cancelled when the caller's token is cancelled before it answers.
    async fn ask(&self, index: usize, call: &ToolCall, ctx: &ToolContext) -> Admission {
        let cancelled = || Admission::Refuse(ToolError::Cancelled { tool: call.name.clone() });
        if ctx.is_cancelled() {
            return cancelled();
        }
        let request = PermissionRequest { call, definition: self.tools[index].definition(), context: ctx };
        // Boxed: the waiting is the rare path, and keeps every call's future small.
        match Box::pin(self.ask_policy(request)).await {
            Some(answer) => self.admission(index, call, answer.unwrap_or_else(policy_panicked)),
            None => cancelled(),
        }
    }

    /// Asks the policy's [`check`](PermissionPolicy::check); `None` when the caller's token is
    /// cancelled before the answer (a policy may wait for a person; a cancelled turn does not).
    async fn ask_policy(&self, request: PermissionRequest<'_>) -> Option<std::thread::Result<Permission>> {
        let mut check = std::pin::pin!(AssertUnwindSafe(self.policy.check(request)).catch_unwind());
        // A policy that answers at once never registers with the cancellation token.
        if let std::task::Poll::Ready(answer) = futures::poll!(check.as_mut()) {
            return Some(answer);
        }
        tokio::select! {
            biased;
            () = request.context.cancellation().cancelled() => None,
            answer = check => Some(answer),
        }
    }

    /// What the policy's decision means for the call of `self.tools[index]`.
    fn admission(&self, index: usize, call: &ToolCall, decision: Permission) -> Admission {
        match decision {
            Permission::Allow => Admission::Run(index),
            Permission::Deny(reason) => {
                Admission::Refuse(ToolError::PermissionDenied { tool: call.name.clone(), reason })
            }
            Permission::DenyAndStop(reason) => Admission::Stop(reason),
        }
    }

    /// Runs an admitted call: decoding, dependencies and body, racing the cancellation token and
    /// the time limit, with panics caught.
    /// `ctx` is the call's own context ([`ToolContext::for_call`]) when `own`, else the caller's
    /// (for a tool that does not read it).
    async fn execute(
        &self,
        tool: &dyn Tool,
        call: &ToolCall,
        ctx: &ToolContext,
        own: bool,
    ) -> Result<ToolResult, ToolError> {
        if ctx.is_cancelled() {
            return Err(ToolError::Cancelled { tool: call.name.clone() });
        }
        let repaired = if self.repair.is_none() {
            None
        } else {
            self.repair.apply(&call.name, &call.arguments, &tool.definition().input_schema)
        };
        let arguments = repaired.as_deref().unwrap_or(&call.arguments);
        let mut run = tool_future(tool, arguments, ctx);
        let outcome = match tool.timeout().or(self.default_timeout) {
            // A tool that finishes on its first poll (most do) never registers with the
            // cancellation token (waiting on it takes a lock) and never moves into a bigger
            // future. The token was not cancelled just above.
            None => match futures::poll!(&mut run) {
                std::task::Poll::Ready(outcome) => Ok(outcome),
                std::task::Poll::Pending => Box::pin(Self::wait(run.map(Ok), call, ctx)).await,
            },
            Some(limit) => {
                let limited = async move {
                    tokio::time::timeout(limit, run).await.map_err(|_| ToolError::TimedOut {
                        tool: call.name.clone(),
                        ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                    })
                };
                Box::pin(Self::wait(limited, call, ctx)).await
            }
        };
        let outcome = match outcome {
            Ok(outcome) => caught(call, outcome),
            // Timed out, or cancelled while running.
            Err(stopped) => Err(stopped),
        };
        if own && let Err(ToolError::TimedOut { .. }) = outcome {
            // Work the tool started on its own (a child process, a blocking thread) sees the end.
            // (The caller's context is not the call's: a tool that does not read it started
            // nothing that watches it.)
            ctx.cancel_call();
        }
        outcome
    }

    /// Waits for a running call, racing the call's cancellation token: `run`'s output, or
    /// [`ToolError::Cancelled`]. (`run` may itself be a timed wait giving
    /// [`ToolError::TimedOut`].)
    async fn wait<T>(
        run: impl Future<Output = Result<T, ToolError>>,
        call: &ToolCall,
        ctx: &ToolContext,
    ) -> Result<T, ToolError> {
        tokio::select! {
            biased;
            () = ctx.cancellation().cancelled() => Err(ToolError::Cancelled { tool: call.name.clone() }),
            outcome = run => outcome,
        }
    }

    /// Turns a call's outcome into the message the model reads. Every call this registry answers,
    /// whatever happened to it, ends here: the one place to extend the result path (output
    /// limits, caching). Records the outcome and the duration on the call's span.
    fn finish(
        &self,
        call: &ToolCall,
        outcome: Result<ToolResult, ToolError>,
        span: &tracing::Span,
        started: Option<Instant>,
    ) -> ToolMessage {
        let label = outcome_label(&outcome);
        let message = match outcome {
            Ok(result) => ToolMessage::success(&call.id, &call.name, result),
            Err(error) => ToolMessage::error(&call.id, &call.name, error.to_string()),
        };
        if span.is_disabled() {
            return message;
        }
        let duration_ms = started.map_or(0, |s| u64::try_from(s.elapsed().as_millis()).unwrap_or(u64::MAX));
        span.record("outcome", label);
        span.record("duration_ms", duration_ms);
        tracing::debug!(parent: span, outcome = label, duration_ms, "tool call finished");
        message
    }

    /// Closes every tool ([`Tool::close`], in name order), then every registry-scoped dependency
    /// value that declares a close ([`DependencyKey::on_close`]), last created first. Each resource
    /// is closed once, whichever of `close` and `Drop` comes first; a failure (or a panic) in one
    /// does not stop the others.
    ///
    /// After `close`, calls are refused (``tool `x` did not run: the registry is closed; ...``) and
    /// the registry-scoped values are forgotten. Close after the calls in flight have finished: a
    /// running call is not interrupted.
    ///
    /// Dropping an unclosed registry closes it too; failures then go to `tracing` as error events
    /// (target `tool_runtime::lifecycle`), and closes that must wait are finished on the current
    /// tokio runtime (or the dropping thread when there is none). Call `close` to get them as a
    /// value.
    ///
    /// # Errors
    /// [`CloseError`] listing every resource that failed to close and why.
    pub async fn close(&self) -> Result<(), CloseError> {
        let failures = lifecycle::close_all(self.take_closers()).await;
        if failures.is_empty() { Ok(()) } else { Err(CloseError { failures }) }
    }

    /// Marks the registry closed and hands out the resources not closed yet.
    fn take_closers(&self) -> Vec<Closer> {
        let mut closers = Vec::new();
        if !self.closed.swap(true, Ordering::AcqRel) {
            for tool in &self.tools {
                let tool = tool.clone();
                closers.push(Closer::new(format!("tool `{}`", tool.name()), move || {
                    Box::pin(async move { tool.close().await })
                }));
            }
        }
        closers.extend(self.scope.take_closers());
        self.scope.memo.clear();
        closers
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let closers = self.take_closers();
        if !closers.is_empty() {
            lifecycle::close_on_drop(closers);
        }
    }
}

/// The `tool_call` span of one call; `outcome` and `duration_ms` are recorded when it finishes.
fn call_span(call: &ToolCall, ctx: &ToolContext) -> tracing::Span {
    tracing::info_span!(
        "tool_call",
        tool = call.name.as_str(),
        call_id = call.id.as_str(),
        session_id = ctx.session_id(),
        outcome = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    )
}

fn outcome_label(outcome: &Result<ToolResult, ToolError>) -> &'static str {
    match outcome {
        Ok(ToolResult::Done(_)) => "done",
        Ok(_) => "ok",
        Err(ToolError::PermissionDenied { .. }) => "denied",
        Err(ToolError::TurnStopped { .. }) => "stopped",
        Err(ToolError::Cancelled { .. }) => "cancelled",
        Err(ToolError::TimedOut { .. }) => "timed_out",
        Err(ToolError::Panicked { .. }) => "panicked",
        Err(ToolError::RegistryClosed { .. }) => "closed",
        Err(_) => "error",
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").field("tools", &self.names().collect::<Vec<_>>()).finish_non_exhaustive()
    }
}

/// Builds a [`Registry`].
#[derive(Default)]
pub struct RegistryBuilder {
    tools: Vec<Arc<dyn Tool>>,
    sets: Option<Vec<String>>,
    scope: RegistryScope,
    policy: Option<Arc<dyn PermissionPolicy>>,
    default_timeout: Option<Duration>,
    repair: RepairPolicy,
    output: crate::output::SharedLayer,
}

impl RegistryBuilder {
    /// Adds every `#[tool]` linked into the binary (see [`Registry::discover`]).
    #[must_use]
    pub fn discover(mut self) -> Self {
        let mut specs: Vec<&'static ToolSpec> = registrations().collect();
        // inventory's order is unspecified: sort so that "the first one keeps the name" is stable.
        specs.sort_by(|a, b| (a.name(), a.origin()).cmp(&(b.name(), b.origin())));
        self.tools.extend(specs.into_iter().map(|s| Arc::new(s) as Arc<dyn Tool>));
        self
    }

    /// Adds one `#[tool]` function's tool: `.tool(read::TOOL)`.
    #[must_use]
    pub fn tool(mut self, spec: &'static ToolSpec) -> Self {
        self.tools.push(Arc::new(spec));
        self
    }

    /// Adds a tool implemented by hand.
    #[must_use]
    pub fn tool_dyn(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Keeps only tools whose set is one of `sets` (tools without a set are dropped too).
    #[must_use]
    pub fn sets<I, S>(mut self, sets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.sets = Some(sets.into_iter().map(Into::into).collect());
        self
    }

    /// Overrides a dependency for every call this registry serves (a call's own context override
    /// still wins).
    #[must_use]
    pub fn override_dependency<T>(mut self, key: &DependencyKey<T>, value: T) -> Self
    where
        T: Clone + Send + Sync + 'static,
    {
        self.scope.overrides.insert(key.id(), Arc::new(value));
        self
    }

    /// Sets the permission policy asked before each call (default: [`DefaultPolicy`], which
    /// refuses tools tagged `external` unless allowed by name).
    #[must_use]
    pub fn policy(mut self, policy: impl PermissionPolicy) -> Self {
        self.policy = Some(Arc::new(policy));
        self
    }

    /// Sets the time limit of tools that declare none with `#[tool(timeout_ms = N)]` (default:
    /// none). A call over its limit ends with ``tool `x` timed out after N ms``.
    #[must_use]
    pub fn default_timeout(mut self, limit: Duration) -> Self {
        self.default_timeout = Some(limit);
        self
    }

    /// Repairs arguments that models send slightly wrong before they are decoded (see
    /// [`RepairPolicy`]; off by default).
    #[must_use]
    pub fn repair(mut self, policy: RepairPolicy) -> Self {
        self.repair = policy;
        self
    }

    /// Applies `layer` to every message and batch (see [`crate::output`]); without it messages are
    /// returned as the tools made them. The store is the dependency
    /// [`OUTPUT_STORE`](crate::output::OUTPUT_STORE) (override it to choose one).
    #[must_use]
    pub fn output(mut self, layer: crate::output::OutputLayer) -> Self {
        self.output = Some(Arc::new(layer));
        self
    }

    /// The registry, sorted by tool name.
    ///
    /// # Errors
    /// [`RegistryError::DuplicateName`] naming both definitions when two tools share a name (the
    /// one added first keeps it).
    pub fn build(self) -> Result<Registry, RegistryError> {
        let mut tools: Vec<Arc<dyn Tool>> = match &self.sets {
            Some(sets) => {
                self.tools.into_iter().filter(|t| t.set().is_some_and(|s| sets.iter().any(|x| x == s))).collect()
            }
            None => self.tools,
        };
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, tool) in tools.iter().enumerate() {
            let name = tool.name();
            if let Some(&first) = seen.get(name) {
                return Err(RegistryError::DuplicateName {
                    name: name.to_owned(),
                    first: tools[first].origin().to_owned(),
                    second: tool.origin().to_owned(),
                });
            }
            seen.insert(name.to_owned(), i);
        }
        tools.sort_by(|a, b| a.name().cmp(b.name()));
        let names: Vec<Arc<str>> = tools.iter().map(|t| Arc::from(t.name())).collect();
        let index = names.iter().enumerate().map(|(i, name)| (name.clone(), i)).collect();
        Ok(Registry {
            tools,
            names,
            index,
            definitions: OnceLock::new(),
            scope: Arc::new(self.scope),
            policy: self.policy.unwrap_or_else(|| Arc::new(DefaultPolicy::new())),
            default_timeout: self.default_timeout,
            repair: self.repair,
            output: self.output,
            closed: AtomicBool::new(false),
        })
    }
}
