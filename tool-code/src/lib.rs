//! Code mode: the model writes one JavaScript program over a registry's tools instead of making
//! one tool call per step.
//!
//! [`CodeMode`] wraps any [`Registry`] and gives three meta-tools:
//!
//! | tool | arguments | result |
//! |---|---|---|
//! | [`FIND_TOOLS`] (`find_tools`) | `query`, `limit` (default 10, at most 50) | one line per tool a program may call: `name: summary` |
//! | [`TOOL_SIGNATURES`] (`tool_signatures`) | `names` (default: every tool a program may call) | a TypeScript declaration of each, from its input and output schemas, with the parameter docs |
//! | [`RUN_PROGRAM`] (`run_program`) | `code` | what the program printed, then what it returned |
//!
//! A program is the body of an async function; each tool a program may call is an async
//! function of the frozen `tools` object, taking the arguments object and giving the result (a
//! tool's text as a string, or the JSON value of a tool with an output schema); a failed call
//! rejects with an `Error` whose message is the error result's text:
//!
//! ```js
//! const files = (await tools.glob({ pattern: "**/*.rs" })).split("\n");
//! const counts = await Promise.all(files.map(async (f) => [f, (await tools.grep({ pattern: "TODO", path: f })).split("\n").length]));
//! console.log(`${files.length} files`);
//! return counts.filter(([, n]) => n > 3);
//! ```
//!
//! # How a program runs
//! Each run gets a fresh QuickJS runtime and context (`rquickjs`) on a thread of its own, never
//! an async worker. A tool call from the program crosses to the async side of [`CodeMode::run`],
//! which runs it through [`Registry::call`] with the caller's [`ToolContext`]: decoding, the
//! permission policy, approval (a tool tagged for confirmation asks the person, as from a direct
//! call; under approval tokens, see "Approvals" below), time limits, cancellation and the output
//! layer all apply, and the call id is the
//! program call's id followed by `#N` (`call_7#3`: the third tool call of the program run by
//! `call_7`). Only what the program prints and returns goes back to the model.
//!
//! # Approvals
//! A program's call of a tool that needs approval is approved as a direct call is: with a client
//! that can ask its user, the user is asked, and the program goes on with the answer. Under
//! [approval tokens](tool_runtime::approvals) with no one to ask, the registry refuses the call
//! with an approval request for its host alone ([`ToolMessage::approval`]). Code mode does not
//! let that request die in the program:
//!
//! - the run stops at once (the program is not handed the refusal; tool calls still running are
//!   dropped, as at any end of a run) and [`CodeMode::run`] fails with
//!   [`ProgramError::NeedsApproval`], holding the inner call's request: its tool's registered
//!   name, the preview of its arguments (or the tool's own preview), and the token for exactly
//!   that call, valid for the seconds left to its expiry on the context's clock;
//! - the [`RUN_PROGRAM`] call then ends with that request as its own
//!   ([`ToolError::Approval`](tool_runtime::ToolError::Approval)): the model reads the inner
//!   refusal's text (tool, preview, "the application runs this exact call"; never the token), the
//!   host gets the request in the `run_program` result's [`ToolMessage::approval`] (over MCP, the
//!   result's `_meta`) and shows the preview to the person;
//! - once they approve, the host sends the same `run_program` call again carrying the token. The
//!   registry serving `run_program` does not redeem it (the meta-tool needs no approval there) and
//!   hands it to the run ([`ToolContext::approval_token`]); the program runs again from its start,
//!   and the first of its calls refused for want of approval is made once more carrying the token.
//!   The registry redeems the token only for the exact call approved (tool, arguments, principal,
//!   once), so it runs that call; a call it was not issued for keeps its refusal and the token
//!   waits for the next one (what the program would be refused stops the run again, with a fresh
//!   request).
//!
//! So a program is re-run, not resumed: the calls it made before the approved one run again
//! (make programs that need approval do their reading first and the approved change once), and
//! one run carries one token, so a program that needs two different approvals under tokens
//! cannot get both in one run (give its client a way to ask the user, or split the program).
//!
//! # The sandbox
//! The program has the language and nothing else: no file, network, environment, process or
//! module loading (QuickJS without its `std` and `os` modules), no clock (`Date` and `performance`
//! are removed; the time comes from a tool if any), no state across runs. Everything it reaches
//! outside the interpreter is a tool call the registry judges. Its limits are [`Limits`]: each
//! ends the program with an error result naming the limit and, where the engine knows it, the
//! line ([`ProgramError`]); the server goes on.
//!
//! # Who may be called from code
//! A tool opts in with `#[tool(callers = code)]` or `#[tool(callers = both)]`
//! (the field [`ToolDefinition::callers`](field@ToolDefinition::callers), [`tool_runtime::Callers`]); [`CodeMode::callable`] overrides the choice for a registry
//! whose tools do not say (imported MCP tools, for example).
//!
//! # Why JavaScript on QuickJS
//! Models write JavaScript well, QuickJS is small (about 1 MiB of C, compiled once with the
//! `rquickjs` crate, whose 0.14 builds on the workspace's rustc 1.95) and has hard memory, stack
//! and interrupt hooks. pydantic's Monty (Python) is on crates.io, but its releases that build on
//! rustc 1.95 are 0.0.x pre-releases, it runs a subset of Python, and it adds a second language
//! runtime to maintain; see `tool-code/docs/code-mode.md` for the comparison.

mod declare;
mod engine;
mod error;
mod limits;
mod marks;
mod meta;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tool_runtime::{Registry, ToolCall, ToolContext, ToolDefinition, ToolMessage};

pub use error::ProgramError;
pub use limits::Limits;
pub use meta::{FIND_TOOLS, RUN_PROGRAM, TOOL_SIGNATURES};

use engine::{Answer, Reply, Request};

/// Bytes of stack the program's thread has beyond [`Limits::stack_bytes`]: room for QuickJS's
/// own frames past its check, for ours, and for the parser of the marking pre-pass (reserved
/// address space: only the pages a run touches take memory).
const THREAD_STACK_MARGIN: usize = 2 * 1024 * 1024 + marks::PARSE_STACK_BYTES;

/// Code mode over one registry: which tools a program may call, the limits, and the runs.
/// Cheap to clone (the registry is shared).
#[derive(Clone)]
pub struct CodeMode {
    registry: Arc<Registry>,
    limits: Limits,
    /// The tools a program may call, sorted by name.
    callable: Arc<[String]>,
    /// Permits for the programs running at once ([`Limits::max_programs`]).
    programs: Arc<tokio::sync::Semaphore>,
}

/// What a program gave back: what it printed and what it returned.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProgramOutput {
    /// What `console.log` (and `info`, `warn`, `error`, `debug`) printed, one line per call,
    /// arguments joined by spaces (strings as they are, other values as JSON).
    pub printed: String,
    /// The returned value: a string as it is, anything else as compact JSON; `None` for
    /// `undefined` (no `return`).
    pub returned: Option<String>,
    /// The tool calls the program made.
    pub tool_calls: u64,
}

impl ProgramOutput {
    /// The text the model reads: the printed text, then the returned value; with both, the value
    /// follows a line `returned:`. A program that printed and returned nothing gives
    /// `(no output)`.
    pub fn text(&self) -> String {
        match (self.printed.is_empty(), &self.returned) {
            (true, None) => "(no output)".to_owned(),
            (true, Some(value)) => value.clone(),
            (false, None) => self.printed.clone(),
            (false, Some(value)) => format!("{}\nreturned:\n{value}", self.printed),
        }
    }
}

impl CodeMode {
    /// Code mode over `registry`, with the default [`Limits`]; a program may call the tools
    /// whose definition allows code (the field [`ToolDefinition::callers`](field@ToolDefinition::callers)).
    pub fn new(registry: Arc<Registry>) -> Self {
        let callable: Vec<String> =
            registry.definitions().iter().filter(|d| d.callers.code()).map(|d| d.name.clone()).collect();
        let programs = Arc::new(tokio::sync::Semaphore::new(Limits::DEFAULT.max_programs));
        Self { registry, limits: Limits::DEFAULT, callable: callable.into(), programs }
    }

    /// Sets the limits of every run.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self.programs = Arc::new(tokio::sync::Semaphore::new(limits.max_programs));
        self
    }

    /// Lets programs call the tools `keep` keeps, instead of those whose definition allows code:
    /// for a registry whose tools do not declare [`Callers`](tool_runtime::Callers) (`|_| true` offers every tool).
    #[must_use]
    pub fn callable(mut self, keep: impl Fn(&ToolDefinition) -> bool) -> Self {
        self.callable = self.registry.definitions().iter().filter(|d| keep(d)).map(|d| d.name.clone()).collect();
        self
    }

    /// The limits of every run.
    pub fn current_limits(&self) -> Limits {
        self.limits
    }

    /// The tools a program may call, sorted by name.
    pub fn callable_names(&self) -> &[String] {
        &self.callable
    }

    /// The registry the programs call.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Runs one program (see "How a program runs" in the crate docs) with the caller's context
    /// `ctx`, whose cancellation stops it and whose call id names its tool calls.
    ///
    /// # Errors
    /// [`ProgramError`]: the program threw, reached a limit, awaited what never settles, or was
    /// cancelled.
    pub async fn run(&self, code: &str, ctx: &ToolContext) -> Result<ProgramOutput, ProgramError> {
        let limits = self.limits;
        if code.len() > limits.max_code_bytes {
            return Err(ProgramError::Code { size: code.len(), limit: limits.max_code_bytes });
        }
        // A run past `max_programs` waits here, without a thread, until one ends.
        let _permit = tokio::select! {
            permit = self.programs.acquire() => permit.map_err(|_| ProgramError::Engine("the program limit is closed".to_owned()))?,
            () = ctx.cancellation().cancelled() => return Err(ProgramError::Cancelled),
        };
        let (requests, mut asked) = tokio::sync::mpsc::unbounded_channel::<Request>();
        let (answers, replies) = std::sync::mpsc::channel::<Reply>();
        let (finished, mut done) = tokio::sync::oneshot::channel();
        let stop = Arc::new(AtomicBool::new(false));
        // Dropping this future (a cancelled or timed-out call) stops the interpreter.
        let _stop_on_drop = StopOnDrop(stop.clone());
        let source = code.to_owned();
        let names = self.callable.to_vec();
        let thread_stop = stop.clone();
        std::thread::Builder::new()
            .name("tool-code program".to_owned())
            .stack_size(limits.stack_bytes.saturating_add(THREAD_STACK_MARGIN))
            .spawn(move || {
                let run = || engine::run(&source, &names, limits, &thread_stop, requests, &replies);
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|panic| {
                    let message = panic
                        .downcast_ref::<&str>()
                        .map(|m| (*m).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    Err(ProgramError::Engine(format!("the interpreter panicked: {message}")))
                });
                let _ = finished.send(outcome);
            })
            .map_err(|e| ProgramError::Engine(format!("no thread for the program: {e}")))?;

        let program = ctx.call_id().unwrap_or("program").to_owned();
        // The host's approval token for one inner call ("Approvals" in the crate docs).
        let host_token = std::sync::Mutex::new(ctx.approval_token().map(str::to_owned));
        let mut running = FuturesUnordered::new();
        let finished = loop {
            // Biased, the caller's cancellation first: a cancelled run ends `Cancelled` even when a
            // tool call it cancelled answers in the same wake-up (else the program could throw
            // that call's "cancelled" error first, by the draw of an unbiased `select!`).
            tokio::select! {
                biased;
                () = ctx.cancellation().cancelled() => {
                    stop.store(true, Ordering::Relaxed);
                    break Err(ProgramError::Cancelled);
                }
                outcome = &mut done => break outcome.unwrap_or(Err(ProgramError::Engine("the program's thread ended without an answer".to_owned()))),
                Some(request) = asked.recv() => {
                    let call = ToolCall::new(format!("{program}#{}", request.seq), request.name, request.arguments);
                    let (registry, host_token) = (&self.registry, &host_token);
                    running.push(async move { (request.seq, approving_call(registry, &call, ctx, host_token).await) });
                }
                Some((seq, mut message)) = running.next(), if !running.is_empty() => {
                    if let Some(request) = message.approval.take() {
                        // The run stops at a call that needs the user's approval: its host gets
                        // the request.
                        stop.store(true, Ordering::Relaxed);
                        break Err(ProgramError::NeedsApproval {
                            tool: message.tool_name,
                            problem: missing_approval(*request, ctx),
                        });
                    }
                    // The thread is gone only when the run ended; `done` then answers.
                    let _ = answers.send(Reply { seq, outcome: answer_of(&message) });
                }
            }
        }?;
        let output =
            ProgramOutput { printed: finished.printed, returned: finished.returned, tool_calls: finished.calls };
        let size = output.printed.len() + output.returned.as_ref().map_or(0, String::len);
        if size > limits.max_result_bytes {
            return Err(ProgramError::Result { size, limit: limits.max_result_bytes });
        }
        Ok(output)
    }
}

/// Runs one tool call of a program: once as it is; when that is refused for want of approval
/// and the host's token for the run is still unspent (`host_token`), once more carrying it. A
/// token the registry refuses for that call (another call's, expired, used: a denial without a
/// request) is kept for the program's other calls and the first refusal, with its request, is
/// the answer; a token the registry took is spent.
async fn approving_call(
    registry: &Registry,
    call: &ToolCall,
    ctx: &ToolContext,
    host_token: &std::sync::Mutex<Option<String>>,
) -> ToolMessage {
    let message = registry.call(call, ctx).await;
    if message.approval.is_none() {
        return message;
    }
    let Some(token) = host_token.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() else {
        return message;
    };
    let with_token = call.clone().with_approval_token(token.clone());
    let retried = registry.call(&with_token, ctx).await;
    if retried.error_kind == Some(tool_runtime::ToolErrorKind::PermissionDenied) && retried.approval.is_none() {
        *host_token.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(token);
        return message;
    }
    retried
}

/// The refusal for want of approval of an inner call refused with `request`, as the outer call's
/// own ([`ApprovalProblem::Missing`](tool_runtime::ApprovalProblem::Missing)): valid for the
/// seconds left to its expiry on `ctx`'s clock (0 when past).
pub(crate) fn missing_approval(
    request: tool_runtime::ApprovalRequest,
    ctx: &ToolContext,
) -> tool_runtime::ApprovalProblem {
    let now = ctx.now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_secs());
    let valid_secs = request.expires_at.saturating_sub(now);
    tool_runtime::ApprovalProblem::Missing { request: Box::new(request), valid_secs }
}

/// What a tool call's message gives the program.
fn answer_of(message: &ToolMessage) -> Answer {
    if message.is_error {
        Answer::Error(message.text().into_owned())
    } else if let Some(value) = &message.structured_content {
        Answer::Json(value.to_string())
    } else {
        Answer::Text(message.text().into_owned())
    }
}

/// Sets the flag when dropped: the interpreter's interrupt handler sees it.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for CodeMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeMode")
            .field("limits", &self.limits)
            .field("callable", &self.callable)
            .finish_non_exhaustive()
    }
}
