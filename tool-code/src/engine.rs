//! One program on QuickJS, on a thread of its own: the interpreter's side of the bridge.
//!
//! The thread owns a fresh runtime and context, evaluates the program as the body of an async
//! function, and runs QuickJS's job queue. A tool call from the program becomes a [`Request`]
//! sent to the async side ([`crate::run`]), which dispatches it through the registry and answers
//! with a [`Reply`]; the thread waits for replies (up to the deadline) only when no job is ready.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Instant;

use rquickjs::function::Opt;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Persistent, Promise, Runtime, Value};

use crate::error::ProgramError;
use crate::limits::Limits;
use crate::marks::{self, CATCH_MARK, LOOP_MARK, THROW_MARK};

/// The name the program's source has in stack traces and errors.
pub(crate) const FILE_NAME: &str = "program.js";

/// The name of the module [`parses_within`] compiles.
const PROBE_NAME: &str = "program-probe.js";

/// What comes before the program's first line: the program is the body of an async function.
const WRAPPER_START: &str = "(async () => {";

/// A tool call the program made: its number in the run (from 1), the tool, the arguments' JSON.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) seq: u64,
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// The answer to [`Request`] `seq`.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) seq: u64,
    pub(crate) outcome: Answer,
}

/// What a tool call gives the program.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A JSON value (a tool's structured result), as text.
    Json(String),
    /// A text result.
    Text(String),
    /// An error result's text: the call's promise rejects with an `Error` of it.
    Error(String),
}

/// A program that ran to its end.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Finished {
    /// What `console.log` and friends printed, one line per call.
    pub(crate) printed: String,
    /// The returned value: a string as it is, anything else as JSON; `None` for `undefined`.
    pub(crate) returned: Option<String>,
    /// Tool calls made.
    pub(crate) calls: u64,
}

/// The interpreter's state that the program's functions share.
struct State {
    limits: Limits,
    requests: tokio::sync::mpsc::UnboundedSender<Request>,
    next_seq: u64,
    in_flight: usize,
    /// Calls past [`Limits::max_in_flight`], sent as earlier ones end.
    queued: VecDeque<Request>,
    /// The resolve and reject functions of each call not answered yet.
    pending: HashMap<u64, (Persistent<Function<'static>>, Persistent<Function<'static>>)>,
    printed: String,
    /// A limit the program reached inside a function of ours: it ends the run.
    limit: Option<ProgramError>,
    /// Set with `limit`: the interrupt handler then stops a program that caught the throw.
    limit_hit: Arc<AtomicBool>,
}

impl State {
    /// Records that the program reached `error`'s limit, and the JavaScript error thrown there
    /// (the interrupt handler ends the program if it catches it).
    fn reached(&mut self, ctx: &Ctx<'_>, error: ProgramError) -> rquickjs::Error {
        let message = error.to_string();
        self.limit = Some(error);
        self.limit_hit.store(true, Ordering::Relaxed);
        rquickjs::Exception::throw_internal(ctx, &message)
    }
}

impl State {
    fn send(&mut self, request: Request) {
        if self.in_flight < self.limits.max_in_flight {
            self.in_flight += 1;
            // The receiver is gone only when the run is being torn down; the loop sees that.
            let _ = self.requests.send(request);
        } else {
            self.queued.push_back(request);
        }
    }
}

/// The prelude run before the program: `console`, the `tools` object, no clock, and the
/// functions the marks call ([`marks`]). It evaluates to the function that gives the line of
/// the program's last `throw` statement if it threw `value` and no `catch` block ran since
/// (else 0).
fn prelude(names: &[String]) -> String {
    let names = serde_json::to_string(names).unwrap_or_else(|_| "[]".to_owned());
    format!(
        r#"(() => {{
  // [line, value] of the program's last throw statement (line 0: the last rejection of a
  // promise it made), until a catch block runs.
  let last = null;
  const mark = (line, value) => {{ last = [line, value]; return value; }};
  // Not writable, not configurable, not enumerable: the program cannot replace them.
  const hidden = (name, value) => Object.defineProperty(globalThis, name, {{ value }});
  hidden("{LOOP_MARK}", () => {{}});
  hidden("{THROW_MARK}", mark);
  hidden("{CATCH_MARK}", () => {{ last = null; }});
  // Promises the program makes (`new Promise`, `Promise.reject`, which constructs through it)
  // mark what they are rejected with.
  globalThis.Promise = new Proxy(Promise, {{
    construct(target, args, newTarget) {{
      const [executor] = args;
      if (typeof executor !== "function") return Reflect.construct(target, args, newTarget);
      const marked = (resolve, reject) => executor(resolve, (reason) => reject(mark(0, reason)));
      return Reflect.construct(target, [marked], newTarget);
    }},
  }});
  const call = globalThis.__tool_call, print = globalThis.__print;
  delete globalThis.__tool_call; delete globalThis.__print;
  delete globalThis.Date; delete globalThis.performance;
  const show = (v) => typeof v === "string" ? v
    : v instanceof Error ? String(v)
    : v === undefined ? "undefined"
    : (JSON.stringify(v) ?? String(v));
  const log = (...args) => print(args.map(show).join(" "));
  globalThis.console = Object.freeze({{ log, info: log, warn: log, error: log, debug: log }});
  const tools = {{}};
  for (const name of {names}) {{
    tools[name] = (args) => {{
      // The call site, so that a failed call the program does not catch names its line.
      const site = new Error();
      return call(name, args).catch((e) => {{
        const error = new Error(e.message);
        error.stack = site.stack;
        throw error;
      }});
    }};
  }}
  globalThis.tools = Object.freeze(tools);
  return (value) => last !== null && Object.is(last[1], value) ? last[0] : -1;
}})()"#
    )
}

/// Runs `source` to its end on the calling thread (which must not be an async worker), calling
/// the tools `names` through `requests`/`replies`, within `limits`; `stop` set ends it
/// ([`ProgramError::Cancelled`]).
pub(crate) fn run(
    source: &str,
    names: &[String],
    limits: Limits,
    stop: &Arc<AtomicBool>,
    requests: tokio::sync::mpsc::UnboundedSender<Request>,
    replies: &Receiver<Reply>,
) -> Result<Finished, ProgramError> {
    let start = Instant::now();
    let lines = source.split('\n').count();
    let deadline = start + limits.wall_time;
    let runtime = Runtime::new().map_err(|e| ProgramError::Engine(e.to_string()))?;
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(limits.stack_bytes);
    let interrupt = stop.clone();
    let limit_hit = Arc::new(AtomicBool::new(false));
    let interrupt_limit = limit_hit.clone();
    runtime.set_interrupt_handler(Some(Box::new(move || {
        interrupt.load(Ordering::Relaxed) || interrupt_limit.load(Ordering::Relaxed) || Instant::now() >= deadline
    })));
    let context = Context::full(&runtime).map_err(|e| ProgramError::Engine(e.to_string()))?;
    let state = Rc::new(RefCell::new(State {
        limits,
        requests,
        next_seq: 1,
        in_flight: 0,
        queued: VecDeque::new(),
        pending: HashMap::new(),
        printed: String::new(),
        limit: None,
        limit_hit,
    }));
    // Dropped before the context and the runtime, whatever ends the run.
    let _release = ReleasePending(state.clone());

    // What ends the run in the engine's own terms, mapped to the limit that caused it.
    let stopped = |error: ProgramError| -> ProgramError {
        if let Some(limit) = state.borrow_mut().limit.take() {
            limit
        } else if matches!(error, ProgramError::Memory { .. }) {
            error
        } else if stop.load(Ordering::Relaxed) {
            ProgramError::Cancelled
        } else if Instant::now() >= deadline {
            ProgramError::WallTime { limit: limits.wall_time, at: error.line() }
        } else {
            error
        }
    };

    // The wrapper's first line holds the program's first line, so lines keep their numbers.
    let wrapped = format!("{WRAPPER_START}{source}\n}})()");
    let wrapped = if parses_within(&runtime, &wrapped, limits.stack_bytes) {
        marks::mark(&wrapped).unwrap_or(wrapped)
    } else {
        wrapped
    };
    let mut reader = Reader { lines, memory_limit: limits.memory_bytes, thrown_line: None };
    let main = context.with(|ctx| -> Result<Persistent<Promise<'static>>, ProgramError> {
        install(&ctx, &state).map_err(|e| ProgramError::Engine(e.to_string()))?;
        let thrown_line: Function<'_> = ctx.eval(prelude(names)).map_err(|_| exception(&ctx, &ctx.catch(), &reader))?;
        reader.thrown_line = Some(Persistent::save(&ctx, thrown_line));
        let promise: Promise<'_> =
            ctx.eval_with_options(wrapped, eval_options()).map_err(|_| exception(&ctx, &ctx.catch(), &reader))?;
        Ok(Persistent::save(&ctx, promise))
    });
    let main = main.map_err(stopped)?;

    loop {
        // Every job that is ready: the program runs here.
        loop {
            match runtime.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => break,
                Err(job) => return Err(stopped(job.0.with(|ctx| exception(&ctx, &ctx.catch(), &reader)))),
            }
            if let Some(limit) = state.borrow_mut().limit.take() {
                return Err(limit);
            }
        }
        if let Some(limit) = state.borrow_mut().limit.take() {
            return Err(limit);
        }
        if stop.load(Ordering::Relaxed) {
            return Err(ProgramError::Cancelled);
        }
        if Instant::now() >= deadline {
            return Err(ProgramError::WallTime { limit: limits.wall_time, at: None });
        }
        let settled = context.with(|ctx| -> Result<Option<Finished>, ProgramError> {
            let promise = main.clone().restore(&ctx).map_err(|e| ProgramError::Engine(e.to_string()))?;
            match promise.state() {
                PromiseState::Pending => Ok(None),
                PromiseState::Rejected => {
                    let reason = match promise.result::<Value<'_>>() {
                        Some(Err(_)) => ctx.catch(),
                        Some(Ok(value)) => value,
                        None => Value::new_undefined(ctx.clone()),
                    };
                    Err(exception(&ctx, &reason, &reader))
                }
                PromiseState::Resolved => {
                    let value: Value<'_> = promise
                        .result::<Value<'_>>()
                        .and_then(Result::ok)
                        .unwrap_or_else(|| Value::new_undefined(ctx.clone()));
                    let returned = if let Some(text) = value.as_string() {
                        Some(text.to_string().map_err(|e| ProgramError::Engine(e.to_string()))?)
                    } else {
                        match ctx.json_stringify(value) {
                            Ok(text) => text
                                .map(|t| t.to_string())
                                .transpose()
                                .map_err(|e| ProgramError::Engine(e.to_string()))?,
                            Err(_) => {
                                return Err(ProgramError::NotJson {
                                    message: exception(&ctx, &ctx.catch(), &reader).to_string(),
                                });
                            }
                        }
                    };
                    let state = state.borrow();
                    Ok(Some(Finished { printed: state.printed.clone(), returned, calls: state.next_seq - 1 }))
                }
            }
        });
        if let Some(finished) = settled.map_err(&stopped)? {
            // A program that caught the interrupt and returned still ran past its time.
            if Instant::now() >= deadline {
                return Err(ProgramError::WallTime { limit: limits.wall_time, at: None });
            }
            return Ok(finished);
        }
        if state.borrow().in_flight == 0 {
            return Err(ProgramError::NeverSettled);
        }
        let reply = match replies.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(reply) => reply,
            Err(RecvTimeoutError::Timeout) => return Err(ProgramError::WallTime { limit: limits.wall_time, at: None }),
            Err(RecvTimeoutError::Disconnected) => return Err(ProgramError::Cancelled),
        };
        context.with(|ctx| answer(&ctx, &state, reply)).map_err(|e| ProgramError::Engine(e.to_string()))?;
    }
}

/// Drops the resolve and reject functions of the calls not answered when the run ends (it was
/// stopped with calls running): QuickJS frees its runtime only once nothing holds its objects.
struct ReleasePending(Rc<RefCell<State>>);

impl Drop for ReleasePending {
    fn drop(&mut self) {
        if let Ok(mut state) = self.0.try_borrow_mut() {
            state.pending.clear();
        }
    }
}

/// Settles the promise of the call `reply` answers, and sends the next queued call.
fn answer(ctx: &Ctx<'_>, state: &Rc<RefCell<State>>, reply: Reply) -> rquickjs::Result<()> {
    let functions = {
        let mut state = state.borrow_mut();
        state.in_flight -= 1;
        if let Some(next) = state.queued.pop_front() {
            state.send(next);
        }
        state.pending.remove(&reply.seq)
    };
    let Some((resolve, reject)) = functions else { return Ok(()) };
    match reply.outcome {
        Answer::Json(text) => {
            let value = ctx.json_parse(text)?;
            resolve.restore(ctx)?.call::<_, ()>((value,))
        }
        Answer::Text(text) => resolve.restore(ctx)?.call::<_, ()>((text,)),
        Answer::Error(text) => {
            let error = rquickjs::Exception::from_message(ctx.clone(), &text)?;
            reject.restore(ctx)?.call::<_, ()>((error,))
        }
    }
}

/// Installs the two functions the prelude hides behind `tools` and `console`.
fn install<'js>(ctx: &Ctx<'js>, state: &Rc<RefCell<State>>) -> rquickjs::Result<()> {
    let calls = state.clone();
    let call = Function::new(ctx.clone(), move |ctx: Ctx<'js>, name: String, arguments: Opt<Value<'js>>| {
        call_tool(&ctx, &calls, name, arguments.0)
    })?;
    let prints = state.clone();
    let print = Function::new(ctx.clone(), move |ctx: Ctx<'js>, line: String| -> rquickjs::Result<()> {
        let mut state = prints.borrow_mut();
        let max = state.limits.max_result_bytes;
        if state.printed.len() + line.len() + 1 > max {
            return Err(state.reached(&ctx, ProgramError::Printed { limit: max }));
        }
        if !state.printed.is_empty() {
            state.printed.push('\n');
        }
        state.printed.push_str(&line);
        Ok(())
    })?;
    ctx.globals().set("__tool_call", call)?;
    ctx.globals().set("__print", print)?;
    Ok(())
}

/// `tools.NAME(args)`: a promise of the call's answer.
fn call_tool<'js>(
    ctx: &Ctx<'js>,
    state: &Rc<RefCell<State>>,
    name: String,
    arguments: Option<Value<'js>>,
) -> rquickjs::Result<Promise<'js>> {
    let arguments = match arguments {
        None => "{}".to_owned(),
        Some(value) if value.is_undefined() => "{}".to_owned(),
        Some(value) => match ctx.json_stringify(value)? {
            Some(text) => text.to_string()?,
            None => "{}".to_owned(),
        },
    };
    let mut state = state.borrow_mut();
    let max = state.limits.max_tool_calls;
    if state.next_seq > max as u64 {
        return Err(state.reached(ctx, ProgramError::ToolCalls { limit: max }));
    }
    let seq = state.next_seq;
    state.next_seq += 1;
    let (promise, resolve, reject) = ctx.promise()?;
    state.pending.insert(seq, (Persistent::save(ctx, resolve), Persistent::save(ctx, reject)));
    state.send(Request { seq, name, arguments });
    Ok(promise)
}

/// The options every evaluation of the program uses: strict mode, [`FILE_NAME`].
fn eval_options() -> rquickjs::context::EvalOptions {
    let mut options = rquickjs::context::EvalOptions::default();
    options.strict = true;
    options.filename = Some(FILE_NAME.to_owned());
    options
}

/// Whether QuickJS parses `wrapped` within [`marks::PROBE_STACK_BYTES`] of stack: the probe
/// that bounds the nesting [`marks::mark`] parses. It compiles `wrapped` as a module without
/// evaluating it (nothing of the program runs, even text that closes the wrapper early), in a
/// context of its own that is then dropped (the program's context never holds the module, so an
/// `import` cannot run it), and gives the runtime back its stack limit `stack_bytes`.
fn parses_within(runtime: &Runtime, wrapped: &str, stack_bytes: usize) -> bool {
    // The base objects and the parser (`eval`), nothing else.
    let Ok(probe) = Context::custom::<rquickjs::context::intrinsic::Eval>(runtime) else { return false };
    runtime.set_max_stack_size(marks::PROBE_STACK_BYTES);
    let parsed = probe.with(|ctx| {
        let parsed = rquickjs::Module::declare(ctx.clone(), PROBE_NAME, wrapped).is_ok();
        if !parsed {
            // The probe's error is not the program's: the real evaluation reports it.
            let _ = ctx.catch();
        }
        parsed
    });
    runtime.set_max_stack_size(stack_bytes);
    parsed
}

/// What reading a thrown value needs.
struct Reader {
    /// The program's line count: a stack frame past it is the wrapper's.
    lines: usize,
    /// [`Limits::memory_bytes`], for [`ProgramError::Memory`].
    memory_limit: usize,
    /// The prelude's function that gives the line of the program's own `throw` of a value.
    thrown_line: Option<Persistent<Function<'static>>>,
}

impl Reader {
    /// Whether the program's last throw statement or promise rejection was of `value` (and no
    /// `catch` block ran since), and the `throw`'s line.
    ///
    /// `None`: the program did not throw or reject with `value` (as far as the marks know);
    /// `Some(None)`: it rejected a promise with it; `Some(Some(line))`: it threw it at `line`.
    fn thrown_line<'js>(&self, ctx: &Ctx<'js>, value: &Value<'js>) -> Option<Option<u32>> {
        let function = self.thrown_line.clone()?.restore(ctx).ok()?;
        match function.call::<_, i64>((value.clone(),)) {
            Ok(line) if line < 0 => None,
            Ok(line) => Some(u32::try_from(line).ok().filter(|&line| line > 0)),
            Err(_) => {
                let _ = ctx.catch();
                None
            }
        }
    }
}

/// A thrown value as a [`ProgramError`]: [`ProgramError::Memory`] for QuickJS's own `out of
/// memory` (an `InternalError`, or `null` when it cannot even make that error: a `null` that no
/// `throw` statement or promise of the program threw or rejected with), else [`ProgramError::Thrown`] with its text (`Name:
/// message`, a string as it is, anything else as JSON) and its line: from the error's stack,
/// else the line of the program's `throw` statement that threw it.
fn exception<'js>(ctx: &Ctx<'js>, value: &Value<'js>, reader: &Reader) -> ProgramError {
    let lines = reader.lines;
    let own = reader.thrown_line(ctx, value);
    if value.is_null() && own.is_none() {
        return ProgramError::Memory { limit: reader.memory_limit, at: None };
    }
    let thrown = own.flatten();
    if let Some(object) = value.as_object() {
        let name: Option<String> = object.get("name").ok();
        let message: Option<String> = object.get("message").ok();
        let stack: Option<String> = object.get("stack").ok();
        if name.is_some() || message.is_some() {
            let text = match (name, message) {
                (Some(name), Some(message)) if !message.is_empty() => format!("{name}: {message}"),
                (Some(name), _) => name,
                (None, Some(message)) => message,
                (None, None) => String::new(),
            };
            let line = stack.as_deref().and_then(|stack| line_in_stack(stack, lines)).or(thrown);
            if text == "InternalError: out of memory" {
                return ProgramError::Memory { limit: reader.memory_limit, at: line };
            }
            return ProgramError::Thrown { text, line };
        }
    }
    let text = match value.as_string() {
        Some(text) => text.to_string().unwrap_or_default(),
        None => ctx
            .json_stringify(value.clone())
            .ok()
            .flatten()
            .and_then(|t| t.to_string().ok())
            .unwrap_or_else(|| "undefined".to_owned()),
    };
    ProgramError::Thrown { text, line: thrown }
}

/// The first line of the program (of `lines` lines) a stack names (`at f (program.js:3:12)`),
/// skipping frames in the wrapper: before the program's first column, or after its last line.
fn line_in_stack(stack: &str, lines: usize) -> Option<u32> {
    stack.match_indices(FILE_NAME).find_map(|(at, _)| {
        let mut numbers = stack[at + FILE_NAME.len()..]
            .strip_prefix(':')?
            .split(|c: char| !c.is_ascii_digit())
            .take(2)
            .map(|n| n.parse::<usize>().ok());
        let line = numbers.next()??;
        let column = numbers.next().flatten();
        let in_wrapper = line > lines || (line == 1 && column.is_some_and(|c| c <= WRAPPER_START.len()));
        (!in_wrapper).then(|| u32::try_from(line).ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::line_in_stack;

    #[test]
    fn line_in_stack_reads_the_first_program_frame() {
        assert_eq!(line_in_stack("    at f (program.js:3:12)\n    at <anonymous> (program.js:9:1)\n", 5), Some(3));
        assert_eq!(line_in_stack("    at program.js:14\n", 20), Some(14));
        assert_eq!(line_in_stack("    at program.js:6:1\n", 5), None);
        assert_eq!(line_in_stack("    at <eval>\n", 5), None);
        assert_eq!(line_in_stack("    at <anonymous> (program.js:1:1)\n    at <eval> (program.js:3:1)\n", 5), Some(3));
        assert_eq!(line_in_stack("    at <anonymous> (program.js:1:15)\n", 5), Some(1));
    }
}
