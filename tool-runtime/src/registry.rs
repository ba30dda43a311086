//! The dispatch table: tools by name, their definitions, and the call pipeline.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Poll;
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
use crate::error::ToolOrigin;
use crate::error::{CloseError, MissingDependency, NameClash, RegistryError, ToolError, UnsupportedPattern};
use crate::lifecycle::{self, Closer};
use crate::policy::{DefaultPolicy, Permission, PermissionPolicy, PermissionRequest};
use crate::result::{ToolMessage, ToolResult};
use crate::search::{CALL_TOOL, SEARCH_TOOL, SearchError, SearchHit, SearchQuery, ToolIndex};
use crate::tool::{Tool, ToolDefinition, ToolSpec, is_valid_tool_name, registrations};

/// The tools an agent can call, by name, and the dispatcher that runs a model's tool calls.
///
/// Built once (by [`Registry::discover`] or [`Registry::builder`]) and shared; every method takes
/// `&self`. Tools are kept sorted by name; lookup is a hash map.
///
/// # How a call runs
/// Every call, of [`Registry::call`] or one of a [`Registry::call_batch`], takes one general
/// path, inside a `tracing` span named `tool_call` with the fields `tool`, `call_id`,
/// `session_id`, `outcome` (`ok`, `done`, `error`, `denied`, `stopped`, `cancelled`, `timed_out`,
/// `panicked`, `closed`) and `duration_ms` (from the start of the run, on tokio's clock):
///
/// 1. admission: the tool is looked up, a closed registry refuses, and the [permission
///    policy](PermissionPolicy) answers through [`PermissionPolicy::check_now`] or, when that
///    gives `None`, its awaited `check`, raced against the caller's cancellation token;
/// 2. the run: a tool that [reads its context](Tool::reads_context) gets a per-call context
///    derived from the caller's (any other runs with the caller's as it is), the arguments are
///    repaired when the registry [repairs](RegistryBuilder::repair) them, and the tool's future
///    runs raced against the cancellation token and the time limit (the tool's `timeout_ms`, else
///    the [default](RegistryBuilder::default_timeout)), with panics caught;
/// 3. the message: whatever happened becomes one [`ToolMessage`], which the [output
///    layer](RegistryBuilder::output), when there is one, stores and caps. A store that
///    [blocks](crate::output::OutputStore::blocks) (a `FileStore`) is
///    written from tokio's blocking pool, never on the thread that polls the call.
///
/// The fast path does the same work in the first poll of the call, without a future of its own,
/// when nothing around the call can wait: no `tracing` subscriber records the span, the policy
/// answers through `check_now`, the tool does not read its context, there is no time limit, no
/// argument repair and no cancelled token, and the output layer, if any, has its store made
/// already (or overridden) and that store does not block. The tool then starts right there: a
/// synchronous tool ([`Tool::call_now`], a `#[tool]` on a plain `fn` without dependencies) runs to
/// its end, any other has its future polled once. A tool that finishes there (most do) gives its
/// message from that same poll, with nothing allocated beyond the tool's own future and the
/// message; one that does not goes on in one boxed future that waits for it, raced against the
/// cancellation token as in step 2.
///
/// # Sync tools
/// No call runs on an async worker thread unless its tool says it is cheap. A plain `fn` tool runs
/// on tokio's blocking pool (`spawn_blocking`, with its own clone of the context), so that however
/// long it computes or waits, the worker that polls the call goes on with the other calls,
/// `ping`, cancellation and progress; a time limit (`#[tool(timeout_ms = N)]` or the
/// [default](RegistryBuilder::default_timeout)) or a cancellation ends the call, and the function
/// finishes on its thread. The hop to the pool and back costs microseconds per call
/// (BENCHMARKS.md, dispatch), several times the whole fast path: a function of a few microseconds
/// of computing and no I/O may say `#[tool(inline)]`, and then runs on the thread that polls the
/// call, as the function would if called there ([`Tool::call_now`] on the fast path). An inline
/// tool that runs long holds its worker thread, and every task of that worker waits until it
/// returns. So that this is seen, a build of this crate with debug assertions (the dev profile)
/// logs a `tracing` warning naming the tool and the milliseconds when one stretch of a tool's work
/// on the polling thread (an `inline` `fn`, or one poll of a tool's future) held it for more than
/// 10 ms; the warning is seen only where the application installs a `tracing` subscriber.
///
/// Once started, an `inline` `fn` runs to its end: `#[tool(inline, timeout_ms = N)]` is a compile
/// error, and the [default time limit](RegistryBuilder::default_timeout) does not end it (the limit
/// races the call's future, whose first poll runs the function to its end; with dependencies, it
/// bounds their resolution). The caller's cancellation is checked before it starts.
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
    /// `deferred[i]`: `tools[i]` is listed only through tool search.
    deferred: Vec<bool>,
    /// `approval[i]`: the tag of `tools[i]` for which its calls need the user's approval
    /// ([`RegistryBuilder::confirm_tag`]), or `None`.
    approval: Vec<Option<Arc<str>>>,
    /// The search index over `tools`, built on the first search.
    search_index: OnceLock<ToolIndex>,
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

/// The future of one call ("How a call runs" on [`Registry`]): the fast path is tried on its
/// first poll ([`Registry::first_poll`]); what does not finish there goes on in a boxed future.
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

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<ToolMessage> {
        let this = self.get_mut();
        let mut rest = match std::mem::replace(&mut this.state, CallState::Done) {
            // A message made on the first poll goes straight out (it is not stored in the state:
            // a message is 144 bytes, each move a copy).
            CallState::Start => match this.registry.first_poll(this.call, this.ctx, cx) {
                Ok(message) => return Poll::Ready(message),
                Err(rest) => rest,
            },
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
const HELD_WARNING: Duration = Duration::from_millis(10);

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
    /// must be referenced (for example `use my_tools as _;` in the binary) or registered through
    /// [`Registry::builder`]. The `#[tool]` methods of a `#[tools]` impl block are never
    /// discovered: they need an instance, which only
    /// [`RegistryBuilder::tools_of`] gives (`Registry::builder().discover().tools_of(server)`).
    ///
    /// # Errors
    /// As [`RegistryBuilder::build`]: [`RegistryError::NothingDiscovered`] when no `#[tool]` is
    /// linked into the binary, [`RegistryError::DuplicateNames`] when tools share a name,
    /// [`RegistryError::MissingDependencies`] when a tool asks for a
    /// [provided](DependencyKey::provided) key (give it with
    /// `Registry::builder().discover().provide(&KEY, value)`).
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

    /// The definition of the tool with this name.
    pub fn definition(&self, name: &str) -> Option<&ToolDefinition> {
        self.index.get(name).map(|&i| &self.definitions()[i])
    }

    /// `true` when the tool `name` is deferred: listed only through tool search, by its own wish
    /// ([`Tool::deferred`], `#[tool(defer)]`) or the builder's
    /// ([`defer_sets`](RegistryBuilder::defer_sets), [`defer_tools`](RegistryBuilder::defer_tools)).
    /// Deferral changes what is listed, never what runs: a deferred tool is called by name like
    /// any other. `false` for a name the registry does not have.
    pub fn is_deferred(&self, name: &str) -> bool {
        self.index.get(name).is_some_and(|&i| self.deferred[i])
    }

    /// `true` when at least one tool is deferred.
    pub fn has_deferred(&self) -> bool {
        self.deferred.contains(&true)
    }

    /// The definitions of the tools that are not deferred, sorted by name: what a first request
    /// lists in full (see [`crate::provider::Deferral`]).
    pub fn loaded_definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.definitions().iter().zip(&self.deferred).filter(|(_, deferred)| !**deferred).map(|(d, _)| d)
    }

    /// The definitions of the deferred tools, sorted by name.
    pub fn deferred_definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.definitions().iter().zip(&self.deferred).filter(|(_, deferred)| **deferred).map(|(d, _)| d)
    }

    /// The tools that match `query` (BM25 over names, descriptions, parameter names and
    /// descriptions, or a regex over the same; see [`crate::search`] for the tokenizer, the
    /// weights and BM25's parameters), best first, ties broken by name, at most `query.limit`.
    /// With [`SearchQuery::deferred_only`], only deferred tools are results. The index is built
    /// on the first search, then kept.
    ///
    /// # Errors
    /// [`SearchError`]: a limit of 0 or over 50; a query without words or over 1,000
    /// characters; a regex pattern that is empty, over 200 characters or invalid.
    pub fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>, SearchError> {
        self.search_where(query, |_| true)
    }

    /// [`Registry::search`] among the tools whose definition `keep` keeps.
    pub(crate) fn search_where(
        &self,
        query: &SearchQuery,
        keep: impl Fn(&ToolDefinition) -> bool,
    ) -> Result<Vec<SearchHit>, SearchError> {
        let definitions = self.definitions();
        self.search_index().search(query, |i| (!query.deferred_only || self.deferred[i]) && keep(&definitions[i]))
    }

    /// The search index of every tool ([`Registry::search`]'s), built on the first call (about
    /// 5 ms for 1,000 tools in a release build, BENCHMARKS.md), then the same one. A server calls
    /// it before serving, so that no request pays for the build on an async worker.
    pub fn search_index(&self) -> &ToolIndex {
        self.search_index.get_or_init(|| ToolIndex::new(self.definitions()))
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// `true` when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

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

    /// The first poll of a call: the fast path ([`Registry::fast`]) when it applies (`Ok` with the
    /// message, or `Err` with the wait for a tool that did not finish in its first poll), else
    /// `Err` with the general path, [`Registry::run`].
    fn first_poll<'a>(
        &'a self,
        call: &'a ToolCall,
        ctx: &'a ToolContext,
        cx: &mut std::task::Context<'_>,
    ) -> Result<ToolMessage, BoxFuture<'a, ToolMessage>> {
        let span = call_span(call, ctx);
        let admission = span.in_scope(|| self.admit_now(call, ctx));
        if let Ok(Admission::Run(index)) = admission {
            match self.fast(index, call, ctx, &span, cx) {
                Fast::Done(message) => return Ok(message),
                Fast::Waiting(rest) => return Err(rest),
                Fast::No => {}
            }
        }
        Err(Box::pin(self.run(call, ctx, span, admission)))
    }

    /// The fast path ("How a call runs" on [`Registry`]) of the admitted call of
    /// `self.tools[index]`, in the poll `cx`, when it applies ([`Fast::No`] otherwise).
    fn fast<'a>(
        &'a self,
        index: usize,
        call: &'a ToolCall,
        ctx: &'a ToolContext,
        span: &tracing::Span,
        cx: &mut std::task::Context<'_>,
    ) -> Fast<'a> {
        let tool = &*self.tools[index];
        if !span.is_disabled()
            || self.approval[index].is_some()
            || tool.reads_context()
            || tool.timeout().or(self.default_timeout).is_some()
            || !self.repair.is_none()
            || ctx.is_cancelled()
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
                        return Fast::Waiting(Box::pin(async move {
                            let outcome = match Self::wait(running.map(Ok), call, ctx).await {
                                Ok(outcome) => caught(call, outcome),
                                Err(cancelled) => Err(cancelled),
                            };
                            // The span is disabled: nothing to record.
                            let message = self.finish(call, outcome, &tracing::Span::none(), None);
                            self.output(message, call, ctx, None).await
                        }));
                    }
                }
            }
        };
        let message = self.finish(call, outcome, span, None);
        Fast::Done(match (&self.output, store) {
            (Some(layer), Some(store)) => layer.finish_message(message, &*store, crate::output::OutputScope::of(ctx)),
            _ => message,
        })
    }

    /// The general path ("How a call runs" on [`Registry`]), in `span`: the admission
    /// ([`Registry::admit_now`]'s, the policy awaited when it has to be), the run, the message and
    /// the output layer.
    async fn run(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
        span: tracing::Span,
        admission: AdmittedNow,
    ) -> ToolMessage {
        // The duration is only measured for someone to see it (two clock reads a call).
        let started = (!span.is_disabled()).then(Instant::now);
        let steps = async {
            let admission = match admission {
                Ok(admission) => admission,
                Err(index) => self.ask(index, call, ctx).await,
            };
            let (outcome, call_ctx) = match admission {
                Admission::Run(index) => self.execute(index, call, ctx).await,
                Admission::Refuse(error) => (Err(error), None),
                Admission::Stop(reason) => (Err(ToolError::PermissionDenied { tool: call.name.clone(), reason }), None),
            };
            let message = self.finish(call, outcome, &span, started);
            self.output(message, call, ctx, call_ctx).await
        };
        if span.is_disabled() { steps.await } else { steps.instrument(span.clone()).await }
    }

    /// Runs the admitted call of `self.tools[index]`: the arguments repaired when the registry
    /// repairs them, then the tool's future (decoding, dependencies and body) raced against the
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
        if let Some(tag) = &self.approval[index]
            && let Err(error) = Box::pin(crate::talk::approve(call, tag, ctx)).await
        {
            return (Err(error), None);
        }
        let call_ctx = tool.reads_context().then(|| ctx.for_call(&call.id, self.names[index].clone(), &self.scope));
        let run_ctx = call_ctx.as_ref().unwrap_or(ctx);
        let repaired = if self.repair.is_none() {
            None
        } else {
            self.repair.apply(&call.name, &call.arguments, &tool.definition().input_schema)
        };
        let arguments = repaired.as_deref().unwrap_or(&call.arguments);
        let outcome = self.limited(tool, call, arguments, run_ctx).await;
        if let (Some(call_ctx), Err(ToolError::TimedOut { .. })) = (&call_ctx, &outcome) {
            // Work the tool started on its own (a child process, a blocking thread) sees the end.
            // (The caller's context is not the call's: a tool that does not read it started
            // nothing that watches it.)
            call_ctx.cancel_call();
        }
        (outcome, call_ctx)
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
    async fn output(
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
    ///    finished and before the calls after it start. Each call of a group starts (its first
    ///    poll) in call order, each as [`Registry::call`] runs it, fast path included. The
    ///    calls of a group are polled by the task that awaits the batch: plain `fn` tools run in
    ///    parallel on tokio's blocking pool, `async fn` tools interleave at their `.await`s, and
    ///    `inline` ones run one after the other on the polling thread.
    /// 3. A call that returns [`ToolResult::Done`] does not cut the other calls of its turn short
    ///    (the model asked for them together); the batch reports [`TurnStop::Done`] with the first
    ///    such call in call order.
    /// 4. With an output layer, each message is finished as [`Registry::call`] finishes it, then
    ///    the turn budget is shared across them.
    ///
    /// Each call fails or succeeds on its own as in [`Registry::call`]: a panic or a timeout in one
    /// does not touch the others. Cancelling `ctx`'s token ends the running calls and every call
    /// not yet started with ``tool `x` was cancelled``.
    pub async fn call_batch(&self, calls: &[ToolCall], ctx: &ToolContext) -> Batch {
        let spans: Vec<tracing::Span> = calls.iter().map(|call| call_span(call, ctx)).collect();
        let mut admissions = Vec::with_capacity(calls.len());
        let mut denied: Option<(usize, String)> = None;
        for (call, span) in calls.iter().zip(&spans) {
            let admission = if span.is_disabled() {
                self.admit(call, ctx).await
            } else {
                self.admit(call, ctx).instrument(span.clone()).await
            };
            if let Admission::Stop(reason) = &admission {
                denied = Some((admissions.len(), reason.clone()));
            }
            admissions.push(admission);
            if denied.is_some() {
                break;
            }
        }

        if let Some((stopper, reason)) = denied {
            let denied_tool = calls[stopper].name.clone();
            let mut admissions = admissions.into_iter();
            let mut messages = Vec::with_capacity(calls.len());
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
                let message = self.finish(call, Err(error), span, None);
                messages.push(self.output(message, call, ctx, None).await);
            }
            let stop = TurnStop::Denied { tool_call_id: calls[stopper].id.clone(), tool_name: denied_tool, reason };
            return Batch::new(self.turn_budget(messages), Some(stop));
        }

        // Each call starts (its first poll) in call order, once the calls before it that it must
        // wait for have finished; the calls that finish there (most) need no future of their own.
        let mut messages: Vec<Option<ToolMessage>> = Vec::with_capacity(calls.len());
        messages.resize_with(calls.len(), || None);
        let mut running: Vec<(usize, BoxFuture<'_, ToolMessage>)> = Vec::new();
        for (i, ((call, span), admission)) in calls.iter().zip(spans).zip(admissions).enumerate() {
            let alone = matches!(admission, Admission::Run(tool) if self.tools[tool].sequential());
            if alone {
                Self::finish_running(std::mem::take(&mut running), &mut messages).await;
            }
            let fast = match admission {
                Admission::Run(index) => {
                    std::future::poll_fn(|cx| Poll::Ready(self.fast(index, call, ctx, &span, cx))).await
                }
                _ => Fast::No,
            };
            let mut rest = match fast {
                Fast::Done(message) => {
                    messages[i] = Some(message);
                    continue;
                }
                Fast::Waiting(rest) => rest,
                Fast::No => {
                    let mut rest = Box::pin(self.run(call, ctx, span, Ok(admission)));
                    match futures::poll!(rest.as_mut()) {
                        Poll::Ready(message) => {
                            messages[i] = Some(message);
                            continue;
                        }
                        Poll::Pending => rest,
                    }
                }
            };
            if alone {
                messages[i] = Some(rest.as_mut().await);
            } else {
                running.push((i, rest));
            }
        }
        Self::finish_running(running, &mut messages).await;
        let messages: Vec<ToolMessage> = messages.into_iter().flatten().collect();

        let stop = messages
            .iter()
            .find(|m| m.done)
            .map(|m| TurnStop::Done { tool_call_id: m.tool_call_id.clone(), message: m.text().into_owned() });
        Batch::new(self.turn_budget(messages), stop)
    }

    /// Waits for the calls of a batch that did not finish on their first poll, together, and puts
    /// each message at its call's index.
    async fn finish_running(running: Vec<(usize, BoxFuture<'_, ToolMessage>)>, messages: &mut [Option<ToolMessage>]) {
        if running.is_empty() {
            return;
        }
        let (indexes, futures): (Vec<usize>, Vec<_>) = running.into_iter().unzip();
        for (i, message) in indexes.into_iter().zip(futures::future::join_all(futures).await) {
            messages[i] = Some(message);
        }
    }

    /// The messages of a turn with the output layer's turn budget shared across them, when the
    /// registry has a layer.
    fn turn_budget(&self, mut messages: Vec<ToolMessage>) -> Vec<ToolMessage> {
        if let Some(layer) = &self.output {
            layer.apply_turn(&mut messages);
        }
        messages
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
    tools: Vec<Added>,
    /// `true` when [`RegistryBuilder::discover`] ran and found no `#[tool]`.
    discovered_nothing: bool,
    /// [`tools_of`](RegistryBuilder::tools_of) was called: a binary of `#[tools]` methods alone
    /// may discover nothing.
    methods_given: bool,
    sets: Option<Vec<String>>,
    defer_sets: Vec<String>,
    defer_tools: Vec<String>,
    scope: RegistryScope,
    policy: Option<Arc<dyn PermissionPolicy>>,
    default_timeout: Option<Duration>,
    repair: RepairPolicy,
    output: crate::output::SharedLayer,
    /// The tags whose tools need the user's approval, beside [`CONFIRM_TAG`](crate::talk::CONFIRM_TAG).
    confirm_tags: Vec<String>,
}

/// A tool added to a [`RegistryBuilder`].
struct Added {
    tool: Arc<dyn Tool>,
    /// The `#[tool]` static behind `tool`, to know the same one added twice.
    spec: Option<&'static ToolSpec>,
    /// Where the tool was added, named for a tool that does not know its [origin](Tool::origin).
    added_at: &'static std::panic::Location<'static>,
}

impl Added {
    /// What is the same for the same tool added twice: the address of its `#[tool]` static, or
    /// of what its `Arc` points to.
    fn identity(&self) -> *const () {
        match self.spec {
            Some(spec) => std::ptr::from_ref(spec).cast(),
            None => Arc::as_ptr(&self.tool).cast(),
        }
    }

    /// The tool's origin, or the place it was added when the tool does not say.
    fn origin(&self) -> ToolOrigin {
        let origin = self.tool.origin();
        if origin == ToolOrigin::default() { ToolOrigin::of_caller(self.added_at) } else { origin }
    }
}

impl RegistryBuilder {
    /// Adds every `#[tool]` function linked into the binary (see [`Registry::discover`]; not the
    /// methods of a `#[tools]` block, which [`tools_of`](RegistryBuilder::tools_of) adds with
    /// their instance). A tool added already (by [`tool`](RegistryBuilder::tool), or by an earlier
    /// `discover`) is kept once.
    ///
    /// When it finds no `#[tool]` at all and no [`tools_of`](RegistryBuilder::tools_of) is
    /// given, [`build`](RegistryBuilder::build) fails with
    /// [`RegistryError::NothingDiscovered`].
    #[must_use]
    #[track_caller]
    pub fn discover(mut self) -> Self {
        let mut specs: Vec<&'static ToolSpec> = registrations().collect();
        // inventory's order is unspecified: sort so that the registration order is stable.
        specs.sort_by(|a, b| (a.name(), a.origin()).cmp(&(b.name(), b.origin())));
        self.discovered_nothing |= specs.is_empty();
        let added_at = std::panic::Location::caller();
        self.tools.extend(specs.into_iter().map(|spec| Added { tool: Arc::new(spec), spec: Some(spec), added_at }));
        self
    }

    /// Adds one `#[tool]` function's tool: `.tool(read::TOOL)`. Adding the same one twice (also
    /// through [`discover`](RegistryBuilder::discover)) keeps it once.
    #[must_use]
    #[track_caller]
    pub fn tool(mut self, spec: &'static ToolSpec) -> Self {
        self.tools.push(Added { tool: Arc::new(spec), spec: Some(spec), added_at: std::panic::Location::caller() });
        self
    }

    /// Adds the tools of a `#[tools]` impl block, the `#[tool]` methods of `S`, served on
    /// `instance`: every call of one of them gets `&instance` (the registry keeps the `Arc` until
    /// it is dropped; the instance belongs to the program and is never closed by the registry).
    /// One instance per type: a second `tools_of` of the same type replaces the instance, and its
    /// tools are kept once. Discovery never finds these tools (it has no instance).
    #[must_use]
    #[track_caller]
    pub fn tools_of<S: crate::ToolMethods>(mut self, instance: Arc<S>) -> Self {
        let added_at = std::panic::Location::caller();
        self.tools.extend(S::tools().iter().map(|&spec| Added { tool: Arc::new(spec), spec: Some(spec), added_at }));
        self.methods_given = true;
        self.provide(S::instance_key(), instance)
    }

    /// Adds a tool implemented by hand, or a `DynamicTool` (cargo feature `dynamic`). Its name must
    /// follow the rule of `#[tool]` names, `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`
    /// ([`RegistryError::InvalidNames`] otherwise). Adding the same `Arc` twice keeps it once. A
    /// tool whose [`origin`](Tool::origin) says nothing is named in errors by the file and line
    /// of this call.
    #[must_use]
    #[track_caller]
    pub fn tool_dyn(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(Added { tool, spec: None, added_at: std::panic::Location::caller() });
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

    /// Defers every tool of these sets: they are listed only through tool search and called by
    /// name like any other (see [`Registry::is_deferred`]). Adds to earlier calls.
    #[must_use]
    pub fn defer_sets<I, S>(mut self, sets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.defer_sets.extend(sets.into_iter().map(Into::into));
        self
    }

    /// Defers the tools of these names (see [`RegistryBuilder::defer_sets`]). Adds to earlier
    /// calls.
    #[must_use]
    pub fn defer_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.defer_tools.extend(names.into_iter().map(Into::into));
        self
    }

    /// Hands in the value of a [provided](DependencyKey::provided) key (one made in `main`, such
    /// as an open database): every call this registry serves gets a clone of it (a call's own
    /// context override still wins). The value belongs to the program: the registry never closes
    /// it. Works for any key (then it is [`override_dependency`](RegistryBuilder::override_dependency)).
    #[must_use]
    pub fn provide<T>(self, key: &DependencyKey<T>, value: T) -> Self
    where
        T: Clone + Send + Sync + 'static,
    {
        self.override_dependency(key, value)
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

    /// Sets the [client channel](crate::ClientChannel) of every call whose context sets none
    /// ([`ToolContextBuilder::client`](crate::ToolContextBuilder::client) wins): where a program
    /// answers its tools' log messages and input requests (elicitation, sampling, roots).
    /// Default: none (an input request fails with [`TalkBackError::NoClient`](crate::TalkBackError::NoClient)).
    #[must_use]
    pub fn client(mut self, channel: impl crate::ClientChannel) -> Self {
        self.scope.client = Some(Arc::new(channel));
        self
    }

    /// Makes every call of a tool tagged `tag` ask the user's approval before it runs, as a tool
    /// tagged [`CONFIRM_TAG`](crate::talk::CONFIRM_TAG) (`confirm`) always does (e.g.
    /// `confirm_tag("destructive")`, `confirm_tag("exec")`). The question goes through the call's
    /// [client channel](crate::ClientChannel) as an elicitation (over MCP, to the client's user)
    /// after the permission policy allowed the call and before its arguments are decoded; see
    /// [`talk::approve`](crate::talk::approve) for what the model reads when the user says no or
    /// cannot be asked. Default: only `confirm`.
    #[must_use]
    pub fn confirm_tag(mut self, tag: impl Into<String>) -> Self {
        self.confirm_tags.push(tag.into());
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
    ///
    /// The limit races the call's future: it ends an `async fn` at its next `.await` and a
    /// plain `fn` tool's wait for its thread on the blocking pool. It does not end an `inline` `fn`:
    /// that one runs to its end in the future's first poll, on the thread that polls the call, and its
    /// call answers as without a limit (with `#[depends]`, the limit bounds the resolution of its
    /// dependencies). Such a registry calls every tool through its future, without the fast path
    /// (see "How a call runs" on [`Registry`]).
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
    /// Every problem of the first kind found, in this order:
    /// - [`RegistryError::NothingDiscovered`] when [`discover`](RegistryBuilder::discover) found
    ///   no `#[tool]` in the binary and no [`tools_of`](RegistryBuilder::tools_of) was given;
    /// - [`RegistryError::InvalidNames`] listing every tool whose name breaks
    ///   `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`;
    /// - [`RegistryError::DuplicateNames`] listing every name that two or more different tools
    ///   share, each with where every one of them is defined;
    /// - [`RegistryError::UnknownDeferred`] listing every name given to
    ///   [`defer_tools`](RegistryBuilder::defer_tools) that no tool has, and every set given to
    ///   [`defer_sets`](RegistryBuilder::defer_sets) that no tool is in;
    /// - [`RegistryError::ReservedNames`] when tools are deferred and a tool is named like a
    ///   meta-tool (`search_tools`, `call_tool`);
    /// - [`RegistryError::UnsupportedPatterns`] listing every `pattern` of a `#[tool]`'s schema
    ///   that decoding cannot enforce as JSON Schema reads it (from an `#[input]` type);
    /// - [`RegistryError::MissingDependencies`] listing every [provided](DependencyKey::provided)
    ///   key a `#[tool]` asks for and no [`provide`](RegistryBuilder::provide) gave a value, with
    ///   the tools that ask for it (only the tools kept by [`sets`](RegistryBuilder::sets) count).
    pub fn build(self) -> Result<Registry, RegistryError> {
        if self.discovered_nothing && !self.methods_given {
            return Err(RegistryError::NothingDiscovered { methods_blocks: crate::methods::methods_blocks() });
        }
        let mut seen = std::collections::HashSet::with_capacity(self.tools.len());
        let mut added: Vec<Added> = Vec::with_capacity(self.tools.len());
        for entry in self.tools {
            let selected = match &self.sets {
                Some(sets) => entry.tool.set().is_some_and(|s| sets.iter().any(|x| x == s)),
                None => true,
            };
            if selected && seen.insert(entry.identity()) {
                added.push(entry);
            }
        }
        let invalid: Vec<(String, ToolOrigin)> = added
            .iter()
            .filter(|a| !is_valid_tool_name(a.tool.name()))
            .map(|a| (a.tool.name().to_owned(), a.origin()))
            .collect();
        if !invalid.is_empty() {
            return Err(RegistryError::InvalidNames { tools: invalid });
        }
        // A stable sort keeps the registration order among tools of one name.
        added.sort_by(|a, b| a.tool.name().cmp(b.tool.name()));
        let clashes: Vec<NameClash> = added
            .chunk_by(|a, b| a.tool.name() == b.tool.name())
            .filter(|group| group.len() > 1)
            .map(|group| NameClash {
                name: group[0].tool.name().to_owned(),
                origins: group.iter().map(Added::origin).collect(),
            })
            .collect();
        if !clashes.is_empty() {
            return Err(RegistryError::DuplicateNames { clashes });
        }
        let unsupported: Vec<UnsupportedPattern> = added
            .iter()
            .filter_map(|a| a.spec)
            .flat_map(|spec| {
                let mut found = Vec::new();
                crate::schema::patterns(&spec.definition().input_schema, "", &mut found);
                found.into_iter().filter_map(|(path, pattern)| {
                    crate::pattern_syntax::pattern_problem(pattern).map(|problem| UnsupportedPattern {
                        tool: spec.name().to_owned(),
                        path,
                        pattern: pattern.to_owned(),
                        problem,
                    })
                })
            })
            .collect();
        if !unsupported.is_empty() {
            return Err(RegistryError::UnsupportedPatterns { patterns: unsupported });
        }
        let mut missing: std::collections::BTreeMap<&'static str, Vec<String>> = std::collections::BTreeMap::new();
        for entry in &added {
            for key in entry.spec.into_iter().flat_map(ToolSpec::provided_keys) {
                if !self.scope.overrides.contains_key(key) {
                    let tools = missing.entry(key).or_default();
                    if !tools.iter().any(|t| t == entry.tool.name()) {
                        tools.push(entry.tool.name().to_owned());
                    }
                }
            }
        }
        if !missing.is_empty() {
            let missing =
                missing.into_iter().map(|(key, tools)| MissingDependency { key: key.to_owned(), tools }).collect();
            return Err(RegistryError::MissingDependencies { missing });
        }
        let tools: Vec<Arc<dyn Tool>> = added.into_iter().map(|a| a.tool).collect();
        let deferred = deferral(&tools, &self.defer_sets, &self.defer_tools)?;
        let names: Vec<Arc<str>> = tools.iter().map(|t| Arc::from(t.name())).collect();
        let approval = tools
            .iter()
            .map(|tool| {
                let tags = &tool.definition().tags;
                std::iter::once(crate::talk::CONFIRM_TAG)
                    .chain(self.confirm_tags.iter().map(String::as_str))
                    .find(|wanted| tags.iter().any(|tag| tag == wanted))
                    .map(Arc::from)
            })
            .collect();
        let index = names.iter().enumerate().map(|(i, name)| (name.clone(), i)).collect();
        let output = self.output.map(|layer| match layer.for_tools(names.iter().map(|n| &**n)) {
            Some(adjusted) => Arc::new(adjusted),
            None => layer,
        });
        Ok(Registry {
            tools,
            names,
            index,
            definitions: OnceLock::new(),
            deferred,
            approval,
            search_index: OnceLock::new(),
            scope: Arc::new(self.scope),
            policy: self.policy.unwrap_or_else(|| Arc::new(DefaultPolicy::new())),
            default_timeout: self.default_timeout,
            repair: self.repair,
            output,
            closed: AtomicBool::new(false),
        })
    }
}

/// Which tools are deferred: by their own wish, their set or their name.
///
/// # Errors
/// [`RegistryError::UnknownDeferred`], [`RegistryError::ReservedNames`] (see
/// [`RegistryBuilder::build`]).
fn deferral(tools: &[Arc<dyn Tool>], sets: &[String], names: &[String]) -> Result<Vec<bool>, RegistryError> {
    let unknown_names: Vec<String> = names.iter().filter(|n| !tools.iter().any(|t| t.name() == *n)).cloned().collect();
    let unknown_sets: Vec<String> =
        sets.iter().filter(|s| !tools.iter().any(|t| t.set() == Some(s.as_str()))).cloned().collect();
    if !unknown_names.is_empty() || !unknown_sets.is_empty() {
        return Err(RegistryError::UnknownDeferred {
            names: unknown_names,
            sets: unknown_sets,
            available_sets: {
                let mut all: Vec<String> = tools.iter().filter_map(|t| t.set().map(str::to_owned)).collect();
                all.sort();
                all.dedup();
                all
            },
        });
    }
    let deferred: Vec<bool> = tools
        .iter()
        .map(|t| {
            t.deferred() || t.set().is_some_and(|s| sets.iter().any(|x| x == s)) || names.iter().any(|n| n == t.name())
        })
        .collect();
    if deferred.contains(&true) {
        let reserved: Vec<String> = tools
            .iter()
            .filter(|t| t.name() == SEARCH_TOOL || t.name() == CALL_TOOL)
            .map(|t| t.name().to_owned())
            .collect();
        if !reserved.is_empty() {
            return Err(RegistryError::ReservedNames { names: reserved });
        }
    }
    Ok(deferred)
}
