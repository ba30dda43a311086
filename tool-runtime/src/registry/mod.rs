//! The dispatch table: tools by name, their definitions, and the call pipeline.

mod admission;
mod batch;
mod builder;
mod call;
mod meta;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::context::RegistryScope;
use crate::decode::RepairPolicy;
use crate::error::{CloseError, RegistryError};
use crate::lifecycle::{self, Closer};
use crate::policy::PermissionPolicy;
use crate::search::{SearchError, SearchHit, SearchQuery, ToolIndex};
use crate::tool::{Tool, ToolDefinition};

pub use batch::{Batch, TurnStop};
pub use builder::RegistryBuilder;

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
///    repaired when the registry [repairs](RegistryBuilder::repair) them, a tool that needs
///    approval has them decoded ([`Tool::check_arguments`]) and then its approval asked or
///    refused ([`crate::approvals`]), and the tool's future
///    runs raced against the cancellation token and the time limit (the tool's `timeout_ms`, else
///    the [default](RegistryBuilder::default_timeout)), with panics caught;
/// 3. the message: whatever happened becomes one [`crate::ToolMessage`], which the [output
///    layer](RegistryBuilder::output), when there is one, stores and caps. A store that
///    [blocks](crate::output::OutputStore::blocks) (a `FileStore`) is
///    written from tokio's blocking pool, never on the thread that polls the call.
///
/// The fast path does the same work in the first poll of the call, without a future of its own,
/// when nothing around the call can wait (whether a `tracing` subscriber records the span or not:
/// the tool starts inside it either way): the policy answers through `check_now`, the tool does not read its context, there is no time limit, no
/// argument repair and no cancelled token, and the output layer, if any, has its store made
/// already (or overridden) and that store does not block. The tool then starts right there: a
/// synchronous tool ([`Tool::call_now`], a `#[tool]` on a plain `fn` without dependencies) runs to
/// its end, any other has its future polled once. A tool that finishes there (most do) gives its
/// message from that same poll, with nothing allocated beyond the tool's own future and the
/// message; one that does not goes on in one boxed future that waits for it, raced against the
/// cancellation token as in step 2.
///
/// # Resource locks and concurrency limits
/// A tool declares what its calls touch (`#[tool(resource = "id")]`, `resource(path = "file_path")`,
/// `resource(plan)`, `resource` for the whole tool) and how many may run at once
/// (`#[tool(concurrency = N)]`, `concurrency(limit = N, per = "user")`); each declaration is a
/// [`Resource`](crate::Resource), read back by [`Tool::resources`]. One mechanism serves both: a key
/// with N places, a lock being one place.
///
/// After a call is admitted (and approved, when its tool needs approval) and before its arguments
/// are decoded and its body runs, the registry parses its arguments, turns each declared resource
/// into keys (through the [resolver](RegistryBuilder::resource_resolver), so that two spellings of
/// one file are one resource; an argument left out or `null` names nothing) and takes a place on
/// each key, in key order, from the [lock store](RegistryBuilder::locks). The places are held until
/// the body ends (its result, error, panic, time limit or cancellation) and given back before the
/// message is finished. So:
/// - calls on one resource run one after the other, in arrival order (the order in which their
///   calls first reached the lock; for the calls of one [`call_batch`](Registry::call_batch), the
///   order of the turn), whether they come in one turn, in concurrent requests, or over MCP;
/// - calls on different resources run in parallel, as undeclared calls do;
/// - a call cancelled while it waits gives up its turn and never runs (``tool `x` was
///   cancelled``); the wait is not part of the call's time limit, which bounds the run;
/// - arguments that are not a JSON object name no argument's resource (the tool refuses them
///   itself, before its body).
///
/// Every call of a tool that declares a resource takes the general path (below). The in-process
/// store ([`LocalLocks`](crate::locks::LocalLocks), the default) serves one process; a shared
/// store serves the workers of a cluster.
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
/// # Secret arguments
/// A tool whose input schema marks values `writeOnly` (its [`Secret<T>`](crate::Secret)
/// arguments, at any depth, or a run-time tool's schema that says so) has those values kept out
/// of what the registry shows or hands on, found in each call's arguments by
/// [`redact_arguments`](crate::redact_arguments)' walk:
/// - the approval question ([`talk::approve`](crate::talk::approve)) shows the redacted
///   arguments (`token: "[redacted]"`);
/// - the message (a result or an error, also a decoding error that quotes the value, `got string
///   "..."`, and the tool's own `Err` text) has every occurrence of a secret value (as sent,
///   JSON-escaped or Rust-escaped; a number as written; booleans and `null` are not searched
///   for) in its text, text parts, resources, structured content and the preview of its
///   [approval request](crate::ToolMessage::approval) (one a tool passes on from another server)
///   replaced by `[redacted]`,
///   before the output layer stores it and before the model or an MCP client reads it. A decoding
///   error cut to its first and last bytes (see [`crate::decode`], rule 5) could hold part of a
///   value at the cut: such an error names no value at all;
/// - the `tool_call` span and its events carry no arguments.
///
/// Arguments that are not a JSON object, for such a tool, are all secret. A tool that writes its
/// secret elsewhere itself (a file, a log of its own) is the tool's business: the registry sees
/// only what the call returns. A secret value of fewer than 4 bytes (`"abc"`, `7`) is not searched
/// for in results (it would replace every such letter or digit); the approval question still
/// redacts it, as every sink that works on the arguments.
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
    /// `secret[i]`: `tools[i]`'s input schema marks a value `writeOnly` (a
    /// [`Secret`](crate::Secret) argument); `any_secret`: some tool's does.
    secret: Vec<bool>,
    any_secret: bool,
    /// Idempotent retries ([`RegistryBuilder::idempotency`]), when on.
    idempotency: Option<crate::idempotency::Idempotency>,
    /// Approvals bound to the exact call ([`RegistryBuilder::approval_tokens`]), when on.
    approval_tokens: Option<crate::approvals::ApprovalTokens>,
    /// The search index over `tools`, built on the first search.
    search_index: OnceLock<ToolIndex>,
    scope: Arc<RegistryScope>,
    policy: Arc<dyn PermissionPolicy>,
    default_timeout: Option<Duration>,
    repair: RepairPolicy,
    output: crate::output::SharedLayer,
    /// Where the places of resource locks and concurrency limits are kept.
    locks: Arc<dyn crate::locks::LockStore>,
    /// What turns a declared resource's value into keys, when not the default.
    resolver: Option<Arc<dyn crate::locks::ResourceResolver>>,
    closed: AtomicBool,
    /// Content capture and the metric instruments ([`crate::telemetry`]).
    telemetry: crate::telemetry::Telemetry,
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
    /// [provided](crate::DependencyKey::provided) key (give it with
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
        self.definitions.get_or_init(|| {
            self.tools
                .iter()
                .map(|t| {
                    let mut definition = t.definition().clone();
                    // The deprecated tag form of `callers` (see `Callers`), shown in the field.
                    definition.callers = definition.legacy_callers();
                    definition
                })
                .collect()
        })
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

    /// Closes every tool ([`Tool::close`], in name order), then every registry-scoped dependency
    /// value that declares a close ([`crate::DependencyKey::on_close`]), last created first. Each resource
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

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").field("tools", &self.names().collect::<Vec<_>>()).finish_non_exhaustive()
    }
}
