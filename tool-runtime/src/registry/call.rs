//! How one call runs ("How a call runs" on [`Registry`]): the start shared by
//! [`Registry::call`] and [`Registry::call_batch`], the fast path, the general path, the time
//! limit and cancellation, and the message the model reads.

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::time::Instant;
use tracing::Instrument;

use super::Registry;
use super::admission::{Admission, AdmittedNow};
use crate::call::ToolCall;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::idempotency::Begin;
use crate::lifecycle;
use crate::result::{ToolMessage, ToolResult};
use crate::telemetry::{self, Content};
use crate::tool::Tool;

/// The future of one call ("How a call runs" on [`Registry`]), for [`Registry::call`] and for each
/// call of [`Registry::call_batch`]: its first poll is [`Registry::start`] (the fast path, or the
/// general path's first poll); what does not finish there goes on in a boxed future.
pub(super) struct CallFuture<'a> {
    registry: &'a Registry,
    call: &'a ToolCall,
    ctx: &'a ToolContext,
    state: CallState<'a>,
}

enum CallState<'a> {
    /// Not polled yet; for a call of a batch, its span and the admission decided already (boxed:
    /// a lone call's future stays small), else the call is admitted on the first poll.
    Start(Option<Box<(CallSpan, AdmittedNow)>>),
    /// The rest of the call.
    Rest(BoxFuture<'a, ToolMessage>),
    /// The message was handed out.
    Done,
}

impl<'a> CallFuture<'a> {
    /// The call of a batch, in `span`, admitted already.
    pub(super) fn admitted(
        registry: &'a Registry,
        call: &'a ToolCall,
        ctx: &'a ToolContext,
        span: CallSpan,
        admission: Admission,
    ) -> Self {
        CallFuture { registry, call, ctx, state: CallState::Start(Some(Box::new((span, Ok(admission))))) }
    }
}

impl Future for CallFuture<'_> {
    type Output = ToolMessage;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<ToolMessage> {
        let this = self.get_mut();
        let mut rest = match std::mem::replace(&mut this.state, CallState::Done) {
            // A message made on the first poll goes straight out (it is not stored in the state:
            // a message is 144 bytes, each move a copy).
            CallState::Start(admitted) => {
                let (span, admission) = match admitted {
                    Some(admitted) => *admitted,
                    None => {
                        let span = match this.ctx.take_call_span() {
                            Some(hosted) => CallSpan { span: hosted, hosted: true },
                            None => call_span(this.registry, this.call, this.ctx),
                        };
                        let admission = if span.entered_here() {
                            span.in_scope(|| this.registry.admit_now(this.call, this.ctx))
                        } else {
                            this.registry.admit_now(this.call, this.ctx)
                        };
                        (span, admission)
                    }
                };
                match this.registry.start(this.call, this.ctx, span, admission, cx) {
                    Ok(message) => return Poll::Ready(message),
                    Err(rest) => {
                        this.state = CallState::Rest(rest);
                        return Poll::Pending;
                    }
                }
            }
            CallState::Rest(rest) => rest,
            // As an `async fn`'s future does.
            CallState::Done => panic!("`Registry::call` polled after it finished"),
        };
        match rest.as_mut().poll(cx) {
            Poll::Ready(message) => Poll::Ready(message),
            Poll::Pending => {
                this.state = CallState::Rest(rest);
                Poll::Pending
            }
        }
    }
}

/// What the fast path ([`Registry::fast`]) did with an admitted call.
enum Fast<'a> {
    /// The call's message, made in this poll.
    Done(ToolMessage),
    /// The tool did not finish in its first poll: the rest of the call, which waits for it.
    Waiting(BoxFuture<'a, ToolMessage>),
    /// The fast path does not apply; nothing of the call ran.
    No,
}

/// A tool's future under `catch_unwind`, its polls watched ([`on_worker`]).
type Running<'a> = futures::future::CatchUnwind<AssertUnwindSafe<Watched<'a>>>;

/// The tool's future for `arguments`, under `catch_unwind`. A tool whose `call` panics before it
/// returns its future (a tool written by hand may do work there) gets a future that panics on its
/// first poll instead, so the panic becomes [`ToolError::Panicked`] like any other.
fn tool_future<'a>(tool: &'a dyn Tool, arguments: &'a str, ctx: &'a ToolContext, name: &'a str) -> Running<'a> {
    let future = std::panic::catch_unwind(AssertUnwindSafe(|| tool.call(arguments, ctx)))
        .unwrap_or_else(|payload| Box::pin(async move { std::panic::resume_unwind(payload) }));
    AssertUnwindSafe(Watched { tool: name, future }).catch_unwind()
}

/// A tool's future, each poll run through [`on_worker`].
struct Watched<'a> {
    tool: &'a str,
    future: BoxFuture<'a, Result<ToolResult, ToolError>>,
}

impl Future for Watched<'_> {
    type Output = Result<ToolResult, ToolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        on_worker(this.tool, || this.future.as_mut().poll(cx))
    }
}

/// How long one stretch of a tool's work may hold the polling thread before a debug build warns
/// ("Sync tools" on [`Registry`]).
#[cfg(debug_assertions)]
const HELD_WARNING: std::time::Duration = std::time::Duration::from_millis(10);

/// Runs `work`, one stretch of the tool `tool`'s work on the thread that polls its call. With
/// debug assertions, a stretch over [`HELD_WARNING`] (measured on the system clock) logs a warning
/// naming the tool and the milliseconds; without, it is `work()`.
#[inline]
fn on_worker<T>(tool: &str, work: impl FnOnce() -> T) -> T {
    #[cfg(debug_assertions)]
    {
        let start = std::time::Instant::now();
        let out = work();
        let held = start.elapsed();
        if held > HELD_WARNING {
            let held_ms = u64::try_from(held.as_millis()).unwrap_or(u64::MAX);
            tracing::warn!(
                tool,
                held_ms,
                "tool `{tool}` held the thread polling its call for {held_ms} ms, and every task of that thread waited; move work that waits on I/O or computes long to the blocking pool: remove `inline` from a plain `fn`, or have an `async fn` await it (`tokio::task::spawn_blocking`)"
            );
        }
        out
    }
    #[cfg(not(debug_assertions))]
    {
        let _ = tool;
        work()
    }
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

/// The span a call runs in: its own `tool_call` span ([`call_span`]), or the span its host made
/// for it and handed over in the context
/// ([`ToolContextBuilder::call_span`](crate::ToolContextBuilder::call_span)). The registry runs a
/// call inside its own span; a hosted span is the host's to enter (the call runs inside it
/// already) and to mark failed (`error.type` and the status are the host's view of the call).
#[derive(Clone)]
pub(super) struct CallSpan {
    span: tracing::Span,
    hosted: bool,
}

impl CallSpan {
    /// Whether the registry enters the span itself: its own span, when a subscriber wants it.
    fn entered_here(&self) -> bool {
        !self.hosted && !self.span.is_disabled()
    }
}

impl std::ops::Deref for CallSpan {
    type Target = tracing::Span;

    fn deref(&self) -> &tracing::Span {
        &self.span
    }
}

/// The `tool_call` span of one call, `execute_tool {name}` for OpenTelemetry (the fields are in
/// [`crate::telemetry`]); `outcome`, `duration_ms`, `error.type` and the captured content are
/// recorded when it finishes ([`Registry::finish`]). The values are only computed when a
/// subscriber wants the span, and those known at the start (the tool's registered name and its
/// description) are given when it is made, not recorded after: each record is one more pass
/// through every layer.
pub(super) fn call_span(registry: &Registry, call: &ToolCall, ctx: &ToolContext) -> CallSpan {
    let known = registry.index.get_key_value(call.name.as_str());
    let span = tracing::info_span!(
        "tool_call",
        otel.name = %SpanName(known.map(|(name, _)| &**name)),
        otel.kind = "internal",
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = telemetry::bounded(&call.name),
        gen_ai.tool.call.id = telemetry::bounded(&call.id),
        gen_ai.tool.type = "function",
        gen_ai.tool.description = known.map(|(_, index)| registry.tools[*index].definition().description.as_str()),
        error.type = tracing::field::Empty,
        gen_ai.tool.call.arguments = tracing::field::Empty,
        gen_ai.tool.call.result = tracing::field::Empty,
        session_id = ctx.session_id(),
        outcome = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    );
    CallSpan { span, hosted: false }
}

/// Records how a call ended on its span, in one pass through the subscriber's layers (each
/// `record` is a pass of its own): `outcome` and `duration_ms`; on its own span `error.type` and
/// the status `error` when it failed, on a hosted span the call's id instead (the failure is the
/// host's to record, [`CallSpan`]). A hosted span that does not declare these fields gets those it
/// declares, one by one.
fn record_finish(span: &CallSpan, call: &ToolCall, outcome: &str, duration_ms: u64, error: Option<&str>) {
    use tracing::field::Value;
    let Some(fields) = span.metadata().map(tracing::Metadata::fields) else { return };
    let id = telemetry::bounded(&call.id);
    let named = |name| fields.field(name);
    if span.hosted {
        if let (Some(id_field), Some(outcome_field), Some(duration_field)) =
            (named("gen_ai.tool.call.id"), named("outcome"), named("duration_ms"))
        {
            span.record_all(&fields.value_set(&[
                (&id_field, Some(&id as &dyn Value)),
                (&outcome_field, Some(&outcome as &dyn Value)),
                (&duration_field, Some(&duration_ms as &dyn Value)),
            ]));
        } else {
            span.record("gen_ai.tool.call.id", id).record("outcome", outcome).record("duration_ms", duration_ms);
        }
        return;
    }
    let (Some(outcome_field), Some(duration_field), Some(error_field), Some(status_field)) =
        (named("outcome"), named("duration_ms"), named("error.type"), named("otel.status_code"))
    else {
        return;
    };
    span.record_all(&fields.value_set(&[
        (&outcome_field, Some(&outcome as &dyn Value)),
        (&duration_field, Some(&duration_ms as &dyn Value)),
        (&error_field, error.as_ref().map(|error| error as &dyn Value)),
        (&status_field, error.map(|_| &"error" as &dyn Value)),
    ]));
}

/// A call's duration as its span's `duration_ms`: whole milliseconds, 0 when it was not measured.
fn whole_ms(elapsed: Option<std::time::Duration>) -> u64 {
    elapsed.map_or(0, |e| u64::try_from(e.as_millis()).unwrap_or(u64::MAX))
}

/// A call that has not reached [`Registry::finish`]: dropped so (its caller dropped the call's
/// future, e.g. an MCP client cancelled the request, or its tool asked the client for input and the
/// request ended with `input_required`), it records `outcome` `cancelled` and `duration_ms` on the
/// call's span, so that a span never ends without saying how its call ended. `error.type` and the
/// status are left alone: nothing failed, the caller stopped waiting. Nothing is recorded once
/// [`Unfinished::disarm`] has run (the call went on to be finished or replayed), nor for a span no
/// subscriber wants.
struct Unfinished<'a> {
    call: &'a ToolCall,
    span: &'a CallSpan,
    started: Option<Instant>,
    armed: bool,
}

impl<'a> Unfinished<'a> {
    fn new(call: &'a ToolCall, span: &'a CallSpan, started: Option<Instant>) -> Self {
        Unfinished { call, span, started, armed: !span.is_disabled() }
    }

    /// The call reached its end: the drop records nothing.
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        record_finish(self.span, self.call, "cancelled", whole_ms(self.started.map(|s| s.elapsed())), None);
    }
}

/// The OpenTelemetry name of a call's span: `execute_tool {name}` for a tool of the registry (its
/// registered name), `execute_tool` for a name the registry does not have.
struct SpanName<'a>(Option<&'a str>);

impl std::fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(name) => write!(f, "execute_tool {name}"),
            None => f.write_str("execute_tool"),
        }
    }
}

fn outcome_label(outcome: &Result<ToolResult, ToolError>) -> &'static str {
    match outcome {
        Ok(ToolResult::Done(_)) => "done",
        Ok(_) => "ok",
        Err(ToolError::PermissionDenied { .. } | ToolError::Approval { .. }) => "denied",
        Err(ToolError::TurnStopped { .. }) => "stopped",
        Err(ToolError::Cancelled { .. }) => "cancelled",
        Err(ToolError::TimedOut { .. }) => "timed_out",
        Err(ToolError::Panicked { .. }) => "panicked",
        Err(ToolError::RegistryClosed { .. }) => "closed",
        Err(_) => "error",
    }
}

impl Registry {
    /// Runs one tool call and returns its message (see "How a call runs" on [`Registry`]). Never
    /// fails: every failure becomes a message with `is_error: true` whose text says what
    /// happened, and the registry keeps serving:
    ///
    /// | failure | message | body ran |
    /// |---|---|---|
    /// | unknown tool | ``unknown tool `x`; available tools: ...`` | no |
    /// | registry closed | ``tool `x` did not run: the registry is closed; ...`` | no |
    /// | policy refused | `Permission denied: <reason>` | no |
    /// | cancelled before the start | ``tool `x` was cancelled`` | no |
    /// | arguments do not decode | ``invalid arguments for `x`: ...`` | no |
    /// | a dependency's `create` failed | ``tool `x` could not run: dependency `DB` (key id "db") failed: ...`` | no |
    /// | a provided dependency has no value | ``tool `x` could not run: dependency `DB` (key id "db") was not provided: call ...`` | no |
    /// | dependency cycle | ``tool `x` could not run: dependency cycle: `A` -> `B` -> `A` (key ids "a" -> "b" -> "a"); ...`` | no |
    /// | the tool returned `Err(e)` | `e`'s text | yes |
    /// | cancelled while running | ``tool `x` was cancelled`` | stopped |
    /// | time limit reached | ``tool `x` timed out after N ms`` | stopped |
    /// | the tool panicked | ``tool `x` panicked: <payload>`` | yes |
    ///
    /// A policy's [`crate::Permission::DenyAndStop`] reads like a denial here; use
    /// [`call_batch`](Registry::call_batch) (also with one call) to learn that the turn stopped.
    pub fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        ctx: &'a ToolContext,
    ) -> impl Future<Output = ToolMessage> + Send + 'a {
        CallFuture { registry: self, call, ctx, state: CallState::Start(None) }
    }

    /// The start of a call, in its first poll `cx`, shared by [`Registry::call`] and
    /// [`Registry::call_batch`]: the fast path ([`Registry::fast`]) when the call is admitted and
    /// the path applies, else the general path ([`Registry::run`], in `span`). `Ok` with the
    /// message when the call finished in this poll; `Err` with the rest of the call, polled once in
    /// `cx`.
    fn start<'a>(
        &'a self,
        call: &'a ToolCall,
        ctx: &'a ToolContext,
        span: CallSpan,
        admission: AdmittedNow,
        cx: &mut std::task::Context<'_>,
    ) -> Result<ToolMessage, BoxFuture<'a, ToolMessage>> {
        let fast = match admission {
            Ok(Admission::Run(index)) => self.fast(index, call, ctx, &span, cx),
            _ => Fast::No,
        };
        let mut rest = match fast {
            Fast::Done(message) => return Ok(message),
            Fast::Waiting(rest) => rest,
            Fast::No => Box::pin(self.run(call, ctx, span, admission)),
        };
        // Polled once here, so that what the rest waits for (the cancellation token, a timer)
        // holds `cx`'s waker.
        match rest.as_mut().poll(cx) {
            Poll::Ready(message) => Ok(message),
            Poll::Pending => Err(rest),
        }
    }

    /// The fast path ("How a call runs" on [`Registry`]) of the admitted call of
    /// `self.tools[index]`, in the poll `cx`, when it applies ([`Fast::No`] otherwise).
    fn fast<'a>(
        &'a self,
        index: usize,
        call: &'a ToolCall,
        ctx: &'a ToolContext,
        span: &CallSpan,
        cx: &mut std::task::Context<'_>,
    ) -> Fast<'a> {
        let tool = &*self.tools[index];
        if self.approval[index].is_some()
            || !tool.resources().is_empty()
            || tool.reads_context()
            || tool.timeout().or(self.default_timeout).is_some()
            || !self.repair.is_none()
            || ctx.is_cancelled()
            || (self.idempotency.is_some()
                && (call.idempotency_key.is_some() || tool.idempotency_key_argument().is_some()))
        {
            return Fast::No;
        }
        // The output layer's store, when the message can be finished here too.
        let store = match &self.output {
            None => None,
            Some(_) => match self.ready_store(ctx) {
                Some(store) if !store.blocks() => Some(store),
                _ => return Fast::No,
            },
        };
        // Measured for someone to see it, as on the general path.
        let started = (!span.is_disabled() || self.telemetry.measures()).then(Instant::now);
        // The tool starts in its span, as it does on the general path.
        let _entered = span.entered_here().then(|| span.enter());
        let outcome = match on_worker(&call.name, || {
            std::panic::catch_unwind(AssertUnwindSafe(|| tool.call_now(&call.arguments, ctx)))
        }) {
            Ok(Some(outcome)) => outcome,
            Err(payload) => caught(call, Err(payload)),
            Ok(None) => {
                let mut running = tool_future(tool, &call.arguments, ctx, &call.name);
                match Pin::new(&mut running).poll(cx) {
                    Poll::Ready(outcome) => caught(call, outcome),
                    Poll::Pending => {
                        let finished_in = span.clone();
                        let rest = async move {
                            let mut unfinished = Unfinished::new(call, &finished_in, started);
                            let outcome = match Self::wait(running.map(Ok), call, ctx).await {
                                Ok(outcome) => caught(call, outcome),
                                Err(cancelled) => Err(cancelled),
                            };
                            unfinished.disarm();
                            let message = self.finish(call, outcome, &finished_in, started);
                            self.output(message, call, ctx, None).await
                        };
                        return Fast::Waiting(if span.entered_here() {
                            Box::pin(rest.instrument(span.span.clone()))
                        } else {
                            Box::pin(rest)
                        });
                    }
                }
            }
        };
        let message = self.finish(call, outcome, span, started);
        Fast::Done(match (&self.output, store) {
            (Some(layer), Some(store)) => layer.finish_message(message, &*store, crate::output::OutputScope::of(ctx)),
            _ => message,
        })
    }

    /// The general path ("How a call runs" on [`Registry`]), in `span`: the admission
    /// ([`Registry::admit_now`]'s, the policy awaited when it has to be), the run, the message and
    /// the output layer.
    async fn run(&self, call: &ToolCall, ctx: &ToolContext, span: CallSpan, admission: AdmittedNow) -> ToolMessage {
        // The duration is only measured for someone to see it (two clock reads a call).
        let started = (!span.is_disabled() || self.telemetry.measures()).then(Instant::now);
        let steps = async {
            let mut unfinished = Unfinished::new(call, &span, started);
            let admission = match admission {
                Ok(admission) => admission,
                Err(index) => self.ask(index, call, ctx).await,
            };
            let key = match (&admission, &self.idempotency) {
                (Admission::Run(index), Some(_)) => crate::idempotency::key_of(&*self.tools[*index], call),
                _ => None,
            };
            let held = match (&admission, &self.idempotency, key) {
                (Admission::Run(index), Some(idempotency), Some(key)) => {
                    let limit = self.tools[*index].timeout().or(self.default_timeout);
                    match idempotency.begin(&self.names[*index], &key, call, ctx.principal(), limit).await {
                        Begin::Run(held) => Some(held),
                        Begin::Replay(message) => {
                            unfinished.disarm();
                            span.record("outcome", "replayed");
                            return message;
                        }
                        Begin::Refuse(message) => {
                            unfinished.disarm();
                            span.record("outcome", "error");
                            return message;
                        }
                    }
                }
                _ => None,
            };
            let (outcome, call_ctx) = match admission {
                Admission::Run(index) => self.execute(index, call, ctx).await,
                Admission::Refuse(error) => (Err(error), None),
                Admission::Stop(reason) => (Err(ToolError::PermissionDenied { tool: call.name.clone(), reason }), None),
            };
            unfinished.disarm();
            let message = self.finish(call, outcome, &span, started);
            let message = self.output(message, call, ctx, call_ctx).await;
            if let Some(held) = held {
                held.settle(&message).await;
            }
            message
        };
        if span.entered_here() { steps.instrument(span.span.clone()).await } else { steps.await }
    }

    /// Runs the admitted call of `self.tools[index]`: the arguments repaired when the registry
    /// repairs them; for a tool that needs approval, the arguments decoded
    /// ([`Tool::check_arguments`]), a decoding error returned before any approval is asked,
    /// refused or redeemed, then the approval; then the tool's future (decoding, dependencies and body) raced against the
    /// cancellation token and the time limit, with panics caught. A tool that [reads its
    /// context](Tool::reads_context) runs in a context of its own ([`ToolContext::for_call`]),
    /// returned with the outcome (the output layer resolves its store there); any other runs with
    /// `ctx` and gets none.
    async fn execute(
        &self,
        index: usize,
        call: &ToolCall,
        ctx: &ToolContext,
    ) -> (Result<ToolResult, ToolError>, Option<ToolContext>) {
        let tool = &*self.tools[index];
        if ctx.is_cancelled() {
            return (Err(ToolError::Cancelled { tool: call.name.clone() }), None);
        }
        let repaired = if self.repair.is_none() {
            None
        } else {
            self.repair.apply(&call.name, &call.arguments, &tool.definition().input_schema)
        };
        let arguments = repaired.as_deref().unwrap_or(&call.arguments);
        let mut passed_on = None;
        if let Some(tag) = &self.approval[index] {
            // Decoded before approval is asked, refused or redeemed: no one approves, and no token
            // is minted or spent on, a call whose arguments the tool refuses.
            if let Some(Err(error)) = tool.check_arguments(arguments) {
                return (Err(error), None);
            }
            match Box::pin(self.approved(index, tag, call, repaired.as_deref(), ctx)).await {
                Ok(inner) => passed_on = inner,
                Err(error) => return (Err(error), None),
            }
        }
        // Approved here under approval tokens: the registry redeems the call's token itself.
        let redeemed = self.approval[index].is_some() && self.approval_tokens.is_some();
        let call_ctx = tool.reads_context().then(|| {
            // A token this registry did not redeem is the tool's to pass on (an imported tool's
            // server approves the call); of one it redeemed, the other server's token it carried.
            let forwarded = if redeemed { passed_on } else { call.approval_token.clone() };
            let key = crate::idempotency::key_of(tool, call).map(std::borrow::Cow::into_owned);
            ctx.for_call(&call.id, self.names[index].clone(), &self.scope)
                .with_approval_token(forwarded)
                .with_idempotency_key(key)
        });
        let run_ctx = call_ctx.as_ref().unwrap_or(ctx);
        let held = match tool.resources() {
            [] => Vec::new(),
            resources => match Box::pin(self.hold(resources, call, arguments, run_ctx)).await {
                Ok(held) => held,
                Err(error) => return (Err(error), call_ctx),
            },
        };
        let outcome = match (self.limited(tool, call, arguments, run_ctx).await, &self.approval_tokens) {
            // A call approved here whose tool passes on another server's approval request: the
            // host gets a token of this registry for the call, carrying the other's.
            (
                Err(ToolError::Approval { problem: crate::ApprovalProblem::Missing { request, .. }, .. }),
                Some(tokens),
            ) if redeemed => Err(tokens.pass_on(&self.names[index], &call.arguments, ctx.principal(), &request)),
            (outcome, _) => outcome,
        };
        drop(held);
        if let (Some(call_ctx), Err(ToolError::TimedOut { .. })) = (&call_ctx, &outcome) {
            // Work the tool started on its own (a child process, a blocking thread) sees the end.
            // (The caller's context is not the call's: a tool that does not read it started
            // nothing that watches it.)
            call_ctx.cancel_call();
        }
        (outcome, call_ctx)
    }

    /// Takes the places of the call's declared `resources` ("Resource locks and concurrency
    /// limits" on [`Registry`]), key by key in key order, each raced against the cancellation
    /// token: the guards, held until the body ends. Arguments that do not parse (the tool refuses
    /// them itself, before its body) name no argument's resource.
    ///
    /// # Errors
    /// [`ToolError::Cancelled`] when the caller cancels while the call waits (its places given
    /// up); [`ToolError::Failed`] when the arguments name more than
    /// [`MAX_CALL_KEYS`](crate::locks::MAX_CALL_KEYS) resources, or the lock store cannot be
    /// reached.
    async fn hold(
        &self,
        resources: &[crate::resource::Resource],
        call: &ToolCall,
        arguments: &str,
        ctx: &ToolContext,
    ) -> Result<Vec<crate::locks::LockGuard>, ToolError> {
        let parsed = crate::decode::parse_arguments(arguments).ok();
        let keys = crate::locks::call_keys(&call.name, resources, parsed.as_ref(), self.resolver.as_deref(), ctx).await;
        if keys.len() > crate::locks::MAX_CALL_KEYS {
            return Err(ToolError::Failed(format!(
                "tool `{}` did not run: its arguments name {} resources, more than the {} one call may hold; split \
                 the change into smaller calls",
                call.name,
                keys.len(),
                crate::locks::MAX_CALL_KEYS
            )));
        }
        let mut held = Vec::with_capacity(keys.len());
        for (key, permits) in &keys {
            let acquiring = async {
                self.locks.acquire(key, *permits).await.map_err(|error| {
                    ToolError::Failed(format!(
                        "tool `{}` did not run: its resource lock could not be taken: {error}",
                        call.name
                    ))
                })
            };
            held.push(Self::wait(acquiring, call, ctx).await?);
        }
        Ok(held)
    }

    /// The tool's future for `arguments` in `ctx`, raced against the cancellation token and the
    /// time limit, with panics caught.
    async fn limited(
        &self,
        tool: &dyn Tool,
        call: &ToolCall,
        arguments: &str,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let mut running = tool_future(tool, arguments, ctx, &call.name);
        let outcome = match tool.timeout().or(self.default_timeout) {
            // A tool that finishes on its first poll (most do) never registers with the
            // cancellation token (waiting on it takes a lock) and never moves into a bigger
            // future. `execute` saw the token not cancelled just before.
            None => match futures::poll!(&mut running) {
                Poll::Ready(outcome) => Ok(outcome),
                Poll::Pending => Box::pin(Self::wait(running.map(Ok), call, ctx)).await,
            },
            Some(limit) => {
                let limited = async move {
                    tokio::time::timeout(limit, running).await.map_err(|_| ToolError::TimedOut {
                        tool: call.name.clone(),
                        ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                    })
                };
                Box::pin(Self::wait(limited, call, ctx)).await
            }
        };
        match outcome {
            Ok(outcome) => caught(call, outcome),
            // Timed out, or cancelled while running.
            Err(stopped) => Err(stopped),
        }
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

    /// The [output layer](RegistryBuilder::output)'s finish of one message, when the registry has
    /// one ([`OutputLayer::finish_message`](crate::output::OutputLayer::finish_message)): stored
    /// under its call's ref id, `ref_id` set, held to the per-message cap. The store is the one
    /// made already (or overridden), else it is resolved in `call_ctx`, the context the call ran
    /// in, or one made for the call; a store that cannot be made leaves the message whole. A store
    /// that blocks is written from tokio's blocking pool.
    pub(super) async fn output(
        &self,
        message: ToolMessage,
        call: &ToolCall,
        ctx: &ToolContext,
        call_ctx: Option<ToolContext>,
    ) -> ToolMessage {
        let Some(layer) = &self.output else { return message };
        if layer.is_exempt(&message.tool_name) {
            return message;
        }
        let store = match self.ready_store(ctx) {
            Some(store) => store,
            None => {
                let call_ctx = call_ctx.unwrap_or_else(|| self.context_for(call, ctx));
                match call_ctx.resolve(&crate::output::OUTPUT_STORE).await {
                    Ok(store) => store,
                    Err(_) => return message,
                }
            }
        };
        layer.finish_in(message, store, ctx).await
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

    /// Turns a call's outcome into the message the model reads. Every call this registry answers,
    /// whatever happened to it, ends here: the one place to extend the result path (output
    /// limits, caching). Records the outcome and the duration on the call's span.
    pub(super) fn finish(
        &self,
        call: &ToolCall,
        outcome: Result<ToolResult, ToolError>,
        span: &CallSpan,
        started: Option<Instant>,
    ) -> ToolMessage {
        let label = outcome_label(&outcome);
        let error = outcome.as_ref().err().map(|error| telemetry::error_type(error.kind()));
        let mut message = match outcome {
            Ok(result) => ToolMessage::success(&call.id, &call.name, result),
            Err(error) => {
                let text = error.to_string();
                let message = ToolMessage::error(&call.id, &call.name, text).with_error_kind(error.kind());
                match error {
                    // The token goes to the host only: a field beside the text the model reads.
                    ToolError::Approval { problem: crate::ApprovalProblem::Missing { request, .. }, .. } => {
                        ToolMessage { approval: Some(request), ..message }
                    }
                    _ => message,
                }
            }
        };
        if self.any_secret {
            self.scrub_secrets(call, &mut message);
        }
        let elapsed = started.map(|s| s.elapsed());
        if self.telemetry.measures() {
            let known = self.index.get_key_value(call.name.as_str()).map(|(name, _)| name.clone());
            self.telemetry.record(elapsed.map_or(0.0, |e| e.as_secs_f64()), known, error);
        }
        if span.is_disabled() {
            return message;
        }
        let duration_ms = whole_ms(elapsed);
        record_finish(span, call, label, duration_ms, error);
        if self.telemetry.capture_content {
            self.capture(call, &message, span);
        }
        tracing::debug!(parent: &span.span, outcome = label, duration_ms, "tool call finished");
        message
    }

    /// The approval of the call of `tools[index]`, a tool that needs approval for `tag`: the
    /// user's answer through the client channel, or under [approval tokens](crate::approvals) the
    /// call's token redeemed, the user asked under a key naming the exact call, or the preview and
    /// a token as the error. A call that carries a token is not previewed; any other is, by the
    /// tool's preview hook when it has one ([`Tool::preview`]), whose error refuses the call.
    /// `Ok(Some(token))`: approved by a passed-on token ([`ApprovalTokens::pass_on`]), whose other
    /// server's `token` the tool sends on. The question and the preview show the arguments the
    /// tool will get: `repaired`, when the registry repaired the call's; the token is bound to the
    /// call's own (what the host sends again, repaired alike).
    ///
    /// [`ApprovalTokens::pass_on`]: crate::ApprovalTokens
    async fn approved(
        &self,
        index: usize,
        tag: &str,
        call: &ToolCall,
        repaired: Option<&str>,
        ctx: &ToolContext,
    ) -> Result<Option<String>, ToolError> {
        let repaired_call = repaired.map(|arguments| ToolCall { arguments: arguments.to_owned(), ..call.clone() });
        let shown = self.shown_call(index, repaired_call.as_ref().unwrap_or(call));
        let tool = &*self.names[index];
        if let (Some(tokens), Some(token)) = (&self.approval_tokens, &call.approval_token) {
            return tokens.redeem_passing_on(tool, &call.arguments, ctx.principal(), token).await;
        }
        let call_ctx = ctx.for_call(&call.id, self.names[index].clone(), &self.scope);
        let preview = match self.tools[index].preview(&shown.arguments, &call_ctx) {
            Some(preview) => Some(crate::talk::visible_text(&preview.await?)),
            None => None,
        };
        let Some(tokens) = &self.approval_tokens else {
            return crate::talk::approve_previewed(&shown, tag, ctx, crate::talk::APPROVAL_KEY, preview.as_deref())
                .await
                .map(|()| None);
        };
        if crate::talk::can_ask(ctx) {
            let key = tokens.question_key(tool, call, ctx.principal());
            return crate::talk::approve_previewed(&shown, tag, ctx, &key, preview.as_deref()).await.map(|()| None);
        }
        let preview = preview
            .unwrap_or_else(|| format!("call `{tool}` with\n{}", crate::talk::shown_arguments(&shown.arguments)));
        Err(tokens.missing(tool, &call.arguments, ctx.principal(), preview))
    }

    /// `call` as the approval question of `tools[index]` shows it: with its secret values
    /// redacted ("Secret arguments" on [`Registry`]).
    fn shown_call<'c>(&self, index: usize, call: &'c ToolCall) -> std::borrow::Cow<'c, ToolCall> {
        if !self.secret[index] {
            return std::borrow::Cow::Borrowed(call);
        }
        let arguments = crate::secret::redact_arguments(&call.arguments, &self.tools[index].definition().input_schema);
        std::borrow::Cow::Owned(ToolCall { arguments, ..call.clone() })
    }

    /// Replaces the secret values of `call` in its `message` ("Secret arguments" on [`Registry`]).
    fn scrub_secrets(&self, call: &ToolCall, message: &mut ToolMessage) {
        let Some(&index) = self.index.get(call.name.as_str()) else { return };
        if !self.secret[index] {
            return;
        }
        if let Some((_, secrets)) =
            crate::secret::redacted(&call.arguments, &self.tools[index].definition().input_schema)
        {
            secrets.scrub_message(message);
        }
    }

    /// Records the call's arguments and result on its span (content capture is on), each through
    /// [`telemetry::captured`].
    fn capture(&self, call: &ToolCall, message: &ToolMessage, span: &tracing::Span) {
        let tool = self.index.get(call.name.as_str()).map(|&index| &*self.tools[index]);
        span.record("gen_ai.tool.call.arguments", telemetry::captured(Content::Arguments { tool, call }));
        span.record("gen_ai.tool.call.result", telemetry::captured(Content::Result { tool, message }));
    }
}
