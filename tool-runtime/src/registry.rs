//! The dispatch table: tools by name, their definitions, and the call pipeline.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::FutureExt;
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
/// # Lifecycle
/// [`Registry::close`] (or dropping the registry) closes every tool ([`Tool::close`]) and every
/// registry-scoped dependency value that declares a close, once each.
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    /// `tools[i]`'s name, shared with every call's context.
    names: Vec<Arc<str>>,
    index: HashMap<Arc<str>, usize>,
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
    pub async fn call(&self, call: &ToolCall, ctx: &ToolContext) -> ToolMessage {
        let span = call_span(call, ctx);
        // The duration is only measured for someone to see it (two clock reads a call).
        let started = (!span.is_disabled()).then(Instant::now);
        let run = async {
            let (outcome, call_ctx) = match self.admit(call, ctx).await {
                Admission::Run(index) => {
                    let (outcome, call_ctx) = self.run_admitted(index, call, ctx).await;
                    (outcome, Some(call_ctx))
                }
                Admission::Refuse(error) => (Err(error), None),
                Admission::Stop(reason) => (Err(ToolError::PermissionDenied { tool: call.name.clone(), reason }), None),
            };
            let message = self.finish(call, outcome, &span, started);
            match &self.output {
                None => message,
                // Boxed: keeps the future of a call without an output layer small.
                Some(layer) => Box::pin(self.finish_output(layer, message, call, ctx, call_ctx)).await,
            }
        };
        if span.is_disabled() { run.await } else { run.instrument(span.clone()).await }
    }

    /// Runs the admitted call of `self.tools[index]` in a context of its own, and returns that
    /// context with the outcome (the output layer finishes the message in it).
    async fn run_admitted(
        &self,
        index: usize,
        call: &ToolCall,
        ctx: &ToolContext,
    ) -> (Result<ToolResult, ToolError>, ToolContext) {
        let call_ctx = ctx.for_call(&call.id, self.names[index].clone(), &self.scope);
        (self.execute(&*self.tools[index], call, &call_ctx).await, call_ctx)
    }

    /// The [output layer](RegistryBuilder::output)'s finish of one message: stored in the output
    /// cache, `output_ref` set, held to the per-message cap. `call_ctx` is the context the call
    /// ran in; a call that did not run gets one.
    async fn finish_output(
        &self,
        layer: &crate::output::OutputLayer,
        message: ToolMessage,
        call: &ToolCall,
        ctx: &ToolContext,
        call_ctx: Option<ToolContext>,
    ) -> ToolMessage {
        let call_ctx = call_ctx.unwrap_or_else(|| self.context_for(call, ctx));
        layer.finish(message, &call_ctx).await
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

    /// With an output layer: every message of a turn as in [`Registry::finish_output`] (each
    /// comes with the context its call ran in, when it ran), then the turn budget shared across
    /// them.
    async fn apply_output_to_turn(
        &self,
        messages: Vec<(ToolMessage, Option<ToolContext>)>,
        calls: &[ToolCall],
        ctx: &ToolContext,
    ) -> Vec<ToolMessage> {
        let Some(layer) = &self.output else { return messages.into_iter().map(|(message, _)| message).collect() };
        let mut finished = Vec::with_capacity(messages.len());
        for ((message, call_ctx), call) in messages.into_iter().zip(calls) {
            finished.push(self.finish_output(layer, message, call, ctx, call_ctx).await);
        }
        layer.apply_turn(&mut finished);
        finished
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
            let admission = self.admit(call, ctx).instrument(spans[i].clone()).await;
            if let Admission::Stop(reason) = &admission {
                denied = Some((i, reason.clone()));
            }
            admissions.push(admission);
        }

        if let Some((stopper, reason)) = denied {
            let denied_tool = calls[stopper].name.clone();
            let mut admissions = admissions.into_iter();
            let messages = calls
                .iter()
                .zip(&spans)
                .enumerate()
                .map(|(i, (call, span))| {
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
                    (self.finish(call, Err(error), span, None), None)
                })
                .collect();
            let stop = TurnStop::Denied { tool_call_id: calls[stopper].id.clone(), tool_name: denied_tool, reason };
            return Batch::new(self.apply_output_to_turn(messages, calls, ctx).await, Some(stop));
        }

        let mut messages: Vec<Option<(ToolMessage, Option<ToolContext>)>> = vec![None; calls.len()];
        let mut group: Vec<(usize, usize)> = Vec::new();
        for (i, admission) in admissions.into_iter().enumerate() {
            let error = match admission {
                Admission::Run(tool) if self.tools[tool].sequential() => {
                    self.run_group(std::mem::take(&mut group), calls, &spans, ctx, &mut messages).await;
                    self.run_group(vec![(i, tool)], calls, &spans, ctx, &mut messages).await;
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
            messages[i] = Some((self.finish(&calls[i], Err(error), &spans[i], None), None));
        }
        self.run_group(group, calls, &spans, ctx, &mut messages).await;

        let messages: Vec<(ToolMessage, Option<ToolContext>)> = messages.into_iter().flatten().collect();
        let stop = messages
            .iter()
            .map(|(m, _)| m)
            .find(|m| m.done)
            .map(|m| TurnStop::Done { tool_call_id: m.tool_call_id.clone(), message: m.text().into_owned() });
        Batch::new(self.apply_output_to_turn(messages, calls, ctx).await, stop)
    }

    /// Runs one group of calls concurrently and stores each message, with the context its call
    /// ran in, at its call's index. `group` holds (call index, tool index) pairs.
    async fn run_group(
        &self,
        group: Vec<(usize, usize)>,
        calls: &[ToolCall],
        spans: &[tracing::Span],
        ctx: &ToolContext,
        messages: &mut [Option<(ToolMessage, Option<ToolContext>)>],
    ) {
        let runs = group.into_iter().map(|(i, tool)| {
            let (call, span) = (&calls[i], &spans[i]);
            async move {
                let started = (!span.is_disabled()).then(Instant::now);
                let (outcome, call_ctx) = self.run_admitted(tool, call, ctx).await;
                (i, (self.finish(call, outcome, span, started), Some(call_ctx)))
            }
            .instrument(span.clone())
        });
        for (i, message) in futures::future::join_all(runs).await {
            messages[i] = Some(message);
        }
    }

    /// Looks the tool up and asks the permission policy. Nothing of the call has run yet.
    async fn admit(&self, call: &ToolCall, ctx: &ToolContext) -> Admission {
        let Some(&index) = self.index.get(call.name.as_str()) else {
            let available = self.names().map(str::to_owned).collect();
            return Admission::Refuse(ToolError::UnknownTool { name: call.name.clone(), available });
        };
        if self.closed.load(Ordering::Acquire) {
            return Admission::Refuse(ToolError::RegistryClosed { tool: call.name.clone() });
        }
        let request = PermissionRequest { call, definition: self.tools[index].definition(), context: ctx };
        let panicked = |payload: Box<dyn std::any::Any + Send>| {
            Permission::Deny(format!("the permission policy panicked: {}", lifecycle::panic_message(payload.as_ref())))
        };
        // A policy that answers at once is asked also when the call is cancelled already (it costs
        // nothing; `execute` refuses the cancelled call, a lock saved per call). A policy that may
        // wait is not asked for a cancelled call.
        // A policy that panics refuses: a broken policy must not let calls through.
        match std::panic::catch_unwind(AssertUnwindSafe(|| self.policy.check_now(request))) {
            Ok(Some(decision)) => return self.admission(index, call, decision),
            Ok(None) => {}
            Err(payload) => return self.admission(index, call, panicked(payload)),
        }
        let cancelled = || Admission::Refuse(ToolError::Cancelled { tool: call.name.clone() });
        if ctx.is_cancelled() {
            return cancelled();
        }
        // Boxed: the waiting is the rare path, and keeps every call's future small.
        match Box::pin(self.ask_policy(request)).await {
            Some(answer) => self.admission(index, call, answer.unwrap_or_else(panicked)),
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
    /// `ctx` is the call's own context ([`ToolContext::for_call`]).
    async fn execute(&self, tool: &dyn Tool, call: &ToolCall, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        if ctx.is_cancelled() {
            return Err(ToolError::Cancelled { tool: call.name.clone() });
        }
        let repaired = self.repair.apply(&call.name, &call.arguments, &tool.definition().input_schema);
        let arguments = repaired.as_deref().unwrap_or(&call.arguments);
        let mut run = AssertUnwindSafe(tool.call(arguments, ctx)).catch_unwind();
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
                    tokio::time::timeout(limit, run)
                        .await
                        .map_err(|_| ToolError::TimedOut { tool: call.name.clone(), ms: limit.as_millis() })
                };
                Box::pin(Self::wait(limited, call, ctx)).await
            }
        };
        let outcome = match outcome {
            Ok(Ok(result)) => result,
            Ok(Err(payload)) => Err(ToolError::Panicked {
                tool: call.name.clone(),
                message: lifecycle::panic_message(payload.as_ref()),
            }),
            // Timed out, or cancelled while running.
            Err(stopped) => Err(stopped),
        };
        if let Err(ToolError::TimedOut { .. }) = outcome {
            // Work the tool started on its own (a child process, a blocking thread) sees the end.
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
