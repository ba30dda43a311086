//! Code mode in process: programs over a real registry, every limit attacked.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;
use tool_code::{CodeMode, Limits, ProgramError, RUN_PROGRAM};
use tool_runtime::prelude::*;
use tool_runtime::{BoxFuture, CancellationToken, PermissionRequest};

/// Echo the text.
#[tool]
async fn echo(
    /// The text.
    text: String,
) -> String {
    text
}

/// The sum of two numbers.
#[derive(Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

/// Add two numbers.
#[tool(output_schema)]
async fn add(a: i64, b: i64) -> Sum {
    Sum { sum: a + b }
}

/// Always fails.
#[tool]
async fn broken() -> Result<String, String> {
    Err("the disk is on fire".to_owned())
}

/// The id of this call.
#[tool]
async fn whoami(ctx: &ToolContext) -> String {
    ctx.call_id().unwrap_or("none").to_owned()
}

static RUNNING: AtomicUsize = AtomicUsize::new(0);
static MOST: AtomicUsize = AtomicUsize::new(0);

/// Waits a little, counting how many calls of it run at once.
#[tool]
async fn crowd() -> String {
    let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    MOST.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(20)).await;
    RUNNING.fetch_sub(1, Ordering::SeqCst);
    "ok".to_owned()
}

fn registry() -> Arc<Registry> {
    let policy = |request: PermissionRequest<'_>| {
        if request.call.name == "whoami" && request.call.arguments.contains("deny") {
            Permission::Deny("whoami is off limits".to_owned())
        } else {
            Permission::Allow
        }
    };
    Arc::new(
        Registry::builder()
            .tool(echo::TOOL)
            .tool(add::TOOL)
            .tool(broken::TOOL)
            .tool(whoami::TOOL)
            .tool(crowd::TOOL)
            .policy(policy)
            .build()
            .unwrap(),
    )
}

fn code_mode(limits: Limits) -> CodeMode {
    CodeMode::new(registry()).callable(|_| true).limits(limits)
}

async fn run(code: &str) -> Result<tool_code::ProgramOutput, ProgramError> {
    code_mode(Limits::DEFAULT).run(code, &ToolContext::new()).await
}

async fn run_with(limits: Limits, code: &str) -> Result<tool_code::ProgramOutput, ProgramError> {
    code_mode(limits).run(code, &ToolContext::new()).await
}

#[tokio::test]
async fn a_program_calls_tools_and_returns_only_its_value() {
    let output = run("const a = await tools.echo({text: 'x'.repeat(1000)});\n\
         const s = await tools.add({a: 2, b: 3});\n\
         return {length: a.length, sum: s.sum};")
    .await
    .unwrap();
    assert_eq!(output.text(), r#"{"length":1000,"sum":5}"#);
    assert_eq!(output.tool_calls, 2);
}

#[tokio::test]
async fn printed_lines_come_before_the_returned_value() {
    let output = run("console.log('one', 2, {three: 3});\nconsole.error('four');\nreturn 'done';").await.unwrap();
    assert_eq!(output.text(), "one 2 {\"three\":3}\nfour\nreturned:\ndone");
}

#[tokio::test]
async fn a_program_without_output_says_so() {
    assert_eq!(run("const x = 1;").await.unwrap().text(), "(no output)");
}

#[tokio::test]
async fn a_failed_tool_call_rejects_with_the_error_text_and_can_be_caught() {
    let output = run("try { await tools.broken(); } catch (e) { return 'caught: ' + e.message; }").await.unwrap();
    assert_eq!(output.text(), "caught: the disk is on fire");
}

#[tokio::test]
async fn an_uncaught_tool_error_ends_the_program_naming_the_line() {
    let error = run("const a = 1;\nawait tools.broken();\nreturn a;").await.unwrap_err();
    assert_eq!(error.to_string(), "the program failed at line 2: Error: the disk is on fire");
}

#[tokio::test]
async fn a_thrown_error_names_its_line() {
    let error = run("const a = 1;\n\nthrow new TypeError('bad input ' + a);").await.unwrap_err();
    assert_eq!(error.to_string(), "the program failed at line 3: TypeError: bad input 1");
}

#[tokio::test]
async fn a_syntax_error_names_its_line() {
    let error = run("const a = 1;\nconst = 2;").await.unwrap_err();
    assert_eq!(error.line(), Some(2));
    assert!(error.to_string().starts_with("the program failed at line 2: SyntaxError"), "{error}");
}

#[tokio::test]
async fn arguments_are_decoded_strictly_by_the_registry() {
    let error = run("await tools.add({a: 1, b: 2, c: 3});").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the program failed at line 1: Error: invalid arguments for `add`: unknown field `c`; expected one of `a`, `b`"
    );
}

#[tokio::test]
async fn the_permission_policy_judges_each_call_from_a_program() {
    let error = run("await tools.whoami({deny: true});").await.unwrap_err();
    assert!(error.to_string().contains("Permission denied: whoami is off limits"), "{error}");
}

#[tokio::test]
async fn an_infinite_loop_ends_at_the_wall_time_naming_the_line() {
    let limits = Limits::DEFAULT.wall_time(Duration::from_millis(200));
    let error = run_with(limits, "let i = 0;\nwhile (true) { i = Math.max(i, i + 1); }").await.unwrap_err();
    assert_eq!(error, ProgramError::WallTime { limit: Duration::from_millis(200), at: Some(2) }, "{error}");
}

/// The line the wall time of 200 ms names when it stops `code`.
async fn stopped_at(code: &str) -> Option<u32> {
    let limits = Limits::DEFAULT.wall_time(Duration::from_millis(200));
    match run_with(limits, code).await {
        Err(ProgramError::WallTime { limit, at }) if limit == Duration::from_millis(200) => at,
        other => panic!("not stopped at the wall time: {other:?}"),
    }
}

#[tokio::test]
async fn a_while_loop_of_bare_arithmetic_ends_at_the_wall_time_naming_its_line() {
    assert_eq!(stopped_at("let i = 0;\nwhile (true) { i++; }").await, Some(2));
}

#[tokio::test]
async fn a_for_loop_of_bare_arithmetic_ends_at_the_wall_time_naming_its_line() {
    assert_eq!(stopped_at("let i = 0;\n\nfor (;;) {\n  i++;\n}").await, Some(3));
    assert_eq!(stopped_at("let n = 0;\nfor (let i = 0; i >= 0; i++) { n += i % 7; }").await, Some(2));
}

#[tokio::test]
async fn a_do_while_loop_of_bare_arithmetic_ends_at_the_wall_time_naming_its_line() {
    assert_eq!(stopped_at("let x = 0;\ndo {\n  x++;\n} while (true)").await, Some(2));
}

#[tokio::test]
async fn a_labelled_loop_ends_at_the_wall_time_naming_its_line() {
    assert_eq!(stopped_at("let x = 0;\nouter: while (true) { x++; continue outer; }").await, Some(2));
}

#[tokio::test]
async fn a_loop_inside_a_function_ends_at_the_wall_time_naming_the_loops_line() {
    assert_eq!(stopped_at("function spin() {\n  let i = 0;\n  while (true) i++;\n}\nspin();").await, Some(3));
}

#[tokio::test]
async fn long_recursion_ends_at_the_wall_time_naming_the_recursive_line() {
    let code = "function fib(n) {\n  return n < 2 ? n : fib(n - 1) + fib(n - 2);\n}\nreturn fib(60);";
    assert_eq!(stopped_at(code).await, Some(2));
}

#[tokio::test]
async fn a_thrown_null_is_the_programs_value_with_its_line_not_the_memory_limit() {
    let error = run("const a = 1;\nthrow null;").await.unwrap_err();
    assert_eq!(error, ProgramError::Thrown { text: "null".to_owned(), line: Some(2) });
    assert_eq!(error.to_string(), "the program failed at line 2: null");
}

#[tokio::test]
async fn a_thrown_undefined_is_the_programs_value_with_its_line() {
    let error = run("\n\nthrow undefined").await.unwrap_err();
    assert_eq!(error.to_string(), "the program failed at line 3: undefined");
}

#[tokio::test]
async fn a_thrown_number_is_the_programs_value_with_its_line() {
    let error = run("if (1 > 0) {\n  throw 42;\n}").await.unwrap_err();
    assert_eq!(error.to_string(), "the program failed at line 2: 42");
}

#[tokio::test]
async fn a_thrown_string_is_the_programs_value_with_its_line() {
    let error = run("throw 'text'").await.unwrap_err();
    assert_eq!(error.to_string(), "the program failed at line 1: text");
}

#[tokio::test]
async fn a_thrown_plain_object_is_the_programs_value_as_json_with_its_line() {
    assert_eq!(run("throw {}").await.unwrap_err().to_string(), "the program failed at line 1: {}");
    let error = run("const why = 'no';\nthrow {code: 7, why};").await.unwrap_err();
    assert_eq!(error.to_string(), r#"the program failed at line 2: {"code":7,"why":"no"}"#);
}

#[tokio::test]
async fn a_value_thrown_from_a_function_names_the_throws_line() {
    let error = run("function fail() {\n  throw null;\n}\nfail();").await.unwrap_err();
    assert_eq!(error.to_string(), "the program failed at line 2: null");
}

#[tokio::test]
async fn a_rethrown_value_names_the_line_of_the_rethrow() {
    let error = run("try { throw 5; } catch (e) {\n  throw e;\n}").await.unwrap_err();
    assert_eq!(error.to_string(), "the program failed at line 2: 5");
}

#[tokio::test]
async fn a_caught_throw_is_forgotten_and_the_next_names_its_own_line() {
    let error = run("try { throw 5; } catch {}\nthrow 5;").await.unwrap_err();
    assert_eq!(error.to_string(), "the program failed at line 2: 5");
}

#[tokio::test]
async fn a_promise_rejected_with_null_is_the_programs_value_not_the_memory_limit() {
    let error = run("await Promise.reject(null);").await.unwrap_err();
    assert_eq!(error, ProgramError::Thrown { text: "null".to_owned(), line: None });
    assert_eq!(error.to_string(), "the program failed: null");
    let error = run("await new Promise((resolve, reject) => reject(null));").await.unwrap_err();
    assert_eq!(error.to_string(), "the program failed: null");
}

#[tokio::test]
async fn a_returned_rejected_promise_is_the_programs_value() {
    assert_eq!(run("return Promise.reject(7);").await.unwrap_err().to_string(), "the program failed: 7");
}

#[tokio::test]
async fn promises_keep_their_class_and_statics() {
    let code = "class Later extends Promise {}\n\
                const later = Later.resolve(2);\n\
                return [new Promise(() => {}) instanceof Promise, Promise.resolve(1) instanceof Promise,\n\
                        later instanceof Later, await later, (await Promise.all([1, Promise.resolve(2)])).length];";
    assert_eq!(run(code).await.unwrap().text(), "[true,true,true,2,2]");
}

#[tokio::test]
async fn a_promise_without_an_executor_is_still_a_type_error() {
    let error = run("new Promise(5);").await.unwrap_err();
    assert!(error.to_string().starts_with("the program failed at line 1: TypeError"), "{error}");
}

#[tokio::test]
async fn an_error_with_the_out_of_memory_message_is_the_programs_not_the_memory_limit() {
    let error = run("throw new Error('out of memory');").await.unwrap_err();
    assert_eq!(error.to_string(), "the program failed at line 1: Error: out of memory");
}

#[tokio::test]
async fn the_mark_functions_cannot_be_replaced_by_the_program() {
    let error = run("globalThis.__code_mode_throw = (l, v) => v;\nthrow null;").await.unwrap_err();
    assert!(error.to_string().starts_with("the program failed at line 1: TypeError"), "{error}");
}

#[tokio::test]
async fn a_loop_that_catches_the_interrupt_still_ends_at_the_wall_time() {
    let limits = Limits::DEFAULT.wall_time(Duration::from_millis(200));
    let code = "for (;;) { try { for (;;) {} } catch (e) {} }\n";
    let error = run_with(limits, code).await.unwrap_err();
    assert!(matches!(error, ProgramError::WallTime { .. }), "{error}");
}

#[tokio::test]
async fn a_memory_bomb_ends_at_the_memory_limit() {
    for megabytes in [4, 8, 16] {
        let limits = Limits::DEFAULT.memory_bytes(megabytes * 1024 * 1024);
        let bomb = "const a = [];\nwhile (true) { a.push('x'.repeat(65536) + a.length); }";
        let error = run_with(limits, bomb).await.unwrap_err();
        assert!(matches!(error, ProgramError::Memory { limit, .. } if limit == megabytes * 1024 * 1024), "{error}");
    }
}

#[tokio::test]
async fn a_memory_bomb_that_catches_out_of_memory_cannot_grow_past_the_limit() {
    let limits = Limits::DEFAULT.memory_bytes(8 * 1024 * 1024);
    let code = "const a = [];\nlet caught = 0;\nfor (let i = 0; i < 2000; i++) { try { a.push('x'.repeat(65536) + i); } catch (e) { caught++; } }\nreturn caught > 0;";
    let output = run_with(limits, code).await;
    assert_eq!(output.map(|o| o.text()), Ok("true".to_owned()));
}

#[tokio::test]
async fn deep_recursion_ends_with_stack_overflow_naming_the_line() {
    let error = run("function f(n) {\n  return f(n + 1) + 1;\n}\nreturn f(0);").await.unwrap_err();
    assert_eq!(error.line(), Some(2), "{error}");
    assert!(error.to_string().contains("RangeError: Maximum call stack size exceeded"), "{error}");
}

#[tokio::test]
async fn the_tool_call_past_the_limit_ends_the_program() {
    let limits = Limits::DEFAULT.max_tool_calls(3);
    let code =
        "for (let i = 0; i < 10; i++) { try { await tools.echo({text: 'x'}); } catch (e) {} }\nreturn 'kept going';";
    let error = run_with(limits, code).await.unwrap_err();
    assert_eq!(error, ProgramError::ToolCalls { limit: 3 });
}

#[tokio::test]
async fn calls_in_flight_stay_under_the_limit() {
    let limits = Limits::DEFAULT.max_in_flight(2);
    let output =
        run_with(limits, "const r = await Promise.all([1,2,3,4,5,6].map(() => tools.crowd()));\nreturn r.length;")
            .await
            .unwrap();
    assert_eq!(output.text(), "6");
    assert_eq!(MOST.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_result_over_the_limit_is_refused() {
    let limits = Limits::DEFAULT.max_result_bytes(100);
    let error = run_with(limits, "return 'x'.repeat(101);").await.unwrap_err();
    assert_eq!(error, ProgramError::Result { size: 101, limit: 100 });
}

#[tokio::test]
async fn printing_past_the_limit_ends_the_program() {
    let limits = Limits::DEFAULT.max_result_bytes(100);
    let error = run_with(limits, "for (;;) { try { console.log('y'.repeat(30)); } catch (e) {} }").await.unwrap_err();
    assert_eq!(error, ProgramError::Printed { limit: 100 });
}

#[tokio::test]
async fn a_program_over_the_code_limit_is_refused_unrun() {
    let limits = Limits::DEFAULT.max_code_bytes(10);
    let error = run_with(limits, "return 'eleven chars';").await.unwrap_err();
    assert_eq!(error, ProgramError::Code { size: 22, limit: 10 });
}

#[tokio::test]
async fn awaiting_a_promise_nothing_settles_ends_the_program() {
    let error = run("await new Promise(() => {});").await.unwrap_err();
    assert_eq!(error, ProgramError::NeverSettled);
}

#[tokio::test]
async fn no_ambient_io_or_clock_is_reachable() {
    let output =
        run("return [typeof Date, typeof performance, typeof require, typeof process, typeof std, typeof os, \
         typeof fetch, typeof setTimeout, typeof __tool_call, typeof __print];")
        .await
        .unwrap();
    assert_eq!(
        output.text(),
        r#"["undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined"]"#
    );
}

#[tokio::test]
async fn import_is_refused() {
    let error = run("const fs = await import('fs');\nreturn fs;").await.unwrap_err();
    assert_eq!(error.to_string(), "the program failed: ReferenceError: could not load module 'fs'");
}

#[tokio::test]
async fn every_run_starts_from_a_fresh_context() {
    let code = code_mode(Limits::DEFAULT);
    let ctx = ToolContext::new();
    code.run("globalThis.secret = 42; tools.extra = 1;", &ctx).await.unwrap_err();
    let output = code.run("return typeof secret;", &ctx).await.unwrap();
    assert_eq!(output.text(), "undefined");
}

#[tokio::test]
async fn the_tools_object_is_frozen() {
    let error = run("tools.echo = () => 'forged';").await.unwrap_err();
    assert!(error.to_string().starts_with("the program failed at line 1: TypeError"), "{error}");
}

#[tokio::test]
async fn the_server_goes_on_after_a_program_fails() {
    let code = code_mode(Limits::DEFAULT.wall_time(Duration::from_millis(100)));
    let ctx = ToolContext::new();
    assert!(code.run("while (true) {}", &ctx).await.is_err());
    assert_eq!(code.run("return (await tools.echo({text: 'alive'}));", &ctx).await.unwrap().text(), "alive");
}

#[tokio::test]
async fn a_cancelled_caller_stops_the_program() {
    let token = CancellationToken::new();
    let ctx = ToolContext::builder().cancellation(token.clone()).build();
    let code = code_mode(Limits::DEFAULT);
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
    });
    let error = code.run("while (true) {}", &ctx).await.unwrap_err();
    canceller.await.unwrap();
    assert_eq!(error, ProgramError::Cancelled);
}

#[tokio::test]
async fn served_through_a_registry_each_call_id_names_the_program_call() {
    let outer = code_mode(Limits::DEFAULT).registry_builder().build().unwrap();
    let call = ToolCall::new(
        "call_7",
        RUN_PROGRAM,
        r#"{"code": "return [await tools.whoami(), await tools.whoami()].join(' ');"}"#,
    );
    let message = outer.call(&call, &ToolContext::new()).await;
    assert!(!message.is_error, "{}", message.text());
    assert_eq!(message.text(), "call_7#1 call_7#2");
}

#[tokio::test]
async fn the_run_tool_decodes_its_arguments_strictly() {
    let outer = code_mode(Limits::DEFAULT).registry_builder().build().unwrap();
    let message = outer.call(&ToolCall::new("c", RUN_PROGRAM, r#"{"source": "return 1"}"#), &ToolContext::new()).await;
    assert!(message.is_error);
    assert!(message.text().contains("unknown field `source`"), "{}", message.text());
}

#[tokio::test]
async fn a_failed_program_is_an_error_result_of_the_run_tool() {
    let outer = code_mode(Limits::DEFAULT).registry_builder().build().unwrap();
    let message = outer.call(&ToolCall::new("c", RUN_PROGRAM, r#"{"code": "\n\nnull.x"}"#), &ToolContext::new()).await;
    assert!(message.is_error);
    assert!(message.text().starts_with("the program failed at line 3: TypeError"), "{}", message.text());
}

/// Wipe everything (asks the user first: tagged `confirm`).
#[tool(callers = both, tags(confirm))]
async fn wipe() -> String {
    "wiped".to_owned()
}

/// Only for programs.
#[tool(callers = code)]
async fn program_only() -> String {
    "from code".to_owned()
}

/// A channel that answers each question from a script and records the questions.
#[derive(Clone, Default)]
struct Scripted {
    answers: Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    asked: Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

impl tool_runtime::ClientChannel for Scripted {
    fn capabilities(&self) -> tool_runtime::ClientCapabilities {
        tool_runtime::ClientCapabilities { elicitation: true, sampling: false, roots: false }
    }

    fn request(
        &self,
        _key: &str,
        request: tool_runtime::talk::InputRequest,
    ) -> BoxFuture<'_, Result<serde_json::Value, tool_runtime::TalkBackError>> {
        self.asked.lock().unwrap().push(request.params);
        let answer = self.answers.lock().unwrap().remove(0);
        Box::pin(async move { Ok(answer) })
    }
}

fn opted_in() -> CodeMode {
    let registry = Registry::builder().tool(echo::TOOL).tool(wipe::TOOL).tool(program_only::TOOL).build().unwrap();
    CodeMode::new(Arc::new(registry))
}

#[tokio::test]
async fn programs_may_call_only_the_tools_that_opted_in() {
    let code = opted_in();
    assert_eq!(code.callable_names(), ["program_only", "wipe"]);
    let output = code.run("return [typeof tools.echo, await tools.program_only()];", &ToolContext::new()).await;
    assert_eq!(output.unwrap().text(), r#"["undefined","from code"]"#);
}

#[tokio::test]
async fn the_served_registry_lists_the_meta_tools_and_forwards_the_direct_only_tools() {
    let served = opted_in().registry_builder().build().unwrap();
    assert_eq!(served.names().collect::<Vec<_>>(), ["echo", "find_tools", "run_program", "tool_signatures"]);
    let message = served.call(&ToolCall::new("c1", "echo", r#"{"text": "hi"}"#), &ToolContext::new()).await;
    assert_eq!((message.is_error, message.text().as_ref()), (false, "hi"));
    let refused = served.call(&ToolCall::new("c2", "echo", r#"{"txt": "hi"}"#), &ToolContext::new()).await;
    assert_eq!(refused.text(), "invalid arguments for `echo`: unknown field `txt`; expected one of `text`");
}

#[tokio::test]
async fn a_tool_that_needs_approval_asks_the_user_from_a_program_too() {
    let channel = Scripted::default();
    channel
        .answers
        .lock()
        .unwrap()
        .extend([serde_json::json!({"action": "accept"}), serde_json::json!({"action": "decline"})]);
    let ctx = ToolContext::builder().client(channel.clone()).build();
    let code = "const first = await tools.wipe();\nlet second;\ntry { await tools.wipe(); } catch (e) { second = e.message; }\nreturn [first, second];";
    let output = opted_in().run(code, &ctx).await.unwrap();
    assert_eq!(
        output.text(),
        r#"["wiped","Permission denied: the user declined to run it; do not call it again unless the user asks for it"]"#
    );
    let asked = channel.asked.lock().unwrap();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0]["message"], "Allow the tool `wipe` to run with these arguments?\n(no arguments)");
}

#[tokio::test]
async fn without_anyone_to_ask_a_program_cannot_run_a_tool_that_needs_approval() {
    let error = opted_in().run("\nawait tools.wipe();", &ToolContext::new()).await.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("the program failed at line 2: Error: Permission denied: it needs the user's approval"),
        "{error}"
    );
}

#[tokio::test]
async fn find_tools_and_tool_signatures_show_only_what_a_program_may_call() {
    let code = opted_in();
    assert_eq!(
        code.find("wipe everything", 10).unwrap(),
        "wipe: Wipe everything (asks the user first: tagged `confirm`)."
    );
    assert_eq!(
        code.signatures(None).unwrap(),
        "declare const tools: {\n  /** Only for programs. */\n  program_only(args: {}): Promise<string>;\n  \
         /** Wipe everything (asks the user first: tagged `confirm`). */\n  wipe(args: {}): Promise<string>;\n};"
    );
    assert_eq!(
        code.signatures(Some(&["echo".to_owned()])).unwrap_err(),
        "no tool a program may call is named `echo`; the tools are: program_only, wipe"
    );
}

static PROGRAMS_RUNNING: AtomicUsize = AtomicUsize::new(0);
static PROGRAMS_MOST: AtomicUsize = AtomicUsize::new(0);

/// Waits a little, counting how many calls of it run at once (one per program in the test).
#[tool]
async fn turnstile() -> String {
    let now = PROGRAMS_RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    PROGRAMS_MOST.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(20)).await;
    PROGRAMS_RUNNING.fetch_sub(1, Ordering::SeqCst);
    "through".to_owned()
}

#[tokio::test]
async fn programs_past_the_limit_wait_their_turn() {
    let registry = Registry::builder().tool(turnstile::TOOL).build().unwrap();
    let code = CodeMode::new(Arc::new(registry)).callable(|_| true).limits(Limits::DEFAULT.max_programs(1));
    let ctx = ToolContext::new();
    let runs: Vec<_> = (0..4).map(|_| code.run("return await tools.turnstile();", &ctx)).collect();
    let outputs = futures::future::join_all(runs).await;
    assert_eq!(outputs.into_iter().map(|o| o.unwrap().text()).collect::<Vec<_>>(), ["through"; 4]);
    assert_eq!(PROGRAMS_MOST.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_run_waiting_for_its_turn_ends_when_its_caller_cancels() {
    let code = code_mode(Limits::DEFAULT.max_programs(1).wall_time(Duration::from_secs(5)));
    let busy_ctx = ToolContext::new();
    let token = CancellationToken::new();
    let waiting_ctx = ToolContext::builder().cancellation(token.clone()).build();
    token.cancel();
    let busy = code.run("while (true) {}", &busy_ctx);
    let waiting = code.run("return 1;", &waiting_ctx);
    let (busy, waiting) =
        tokio::join!(async { tokio::time::timeout(Duration::from_millis(200), busy).await.ok() }, waiting);
    assert!(busy.is_none(), "the busy program runs on");
    assert_eq!(waiting, Err(ProgramError::Cancelled));
}

#[tokio::test]
async fn text_that_closes_the_wrapper_early_runs_once_and_after_the_prelude() {
    let code = "}); globalThis.runs = (globalThis.runs ?? 0) + 1; globalThis.clock = typeof Date; (async () => {\nreturn [globalThis.runs, globalThis.clock];";
    assert_eq!(run(code).await.unwrap().text(), r#"[1,"undefined"]"#);
}

#[tokio::test]
async fn nesting_too_deep_for_the_interpreter_is_its_stack_overflow_and_the_server_goes_on() {
    let code = format!("return {}1{};", "(".repeat(100_000), ")".repeat(100_000));
    let error = run(&code).await.unwrap_err();
    assert_eq!(
        error,
        ProgramError::Thrown { text: "RangeError: Maximum call stack size exceeded".to_owned(), line: None }
    );
    assert_eq!(run("return 1 + 1;").await.unwrap().text(), "2");
}

#[tokio::test]
async fn nesting_just_within_the_marking_probe_is_parsed_and_marked() {
    // Near the deepest nesting of functions the probe's 256 KiB accepts (about 650 in a debug
    // build): the parser runs on it, and the loop after it is marked (unmarked, it has no line).
    let code = format!("{}{}\nwhile (true) {{}}", "function f() {".repeat(500), "}".repeat(500));
    assert_eq!(stopped_at(&code).await, Some(2));
}

#[tokio::test]
async fn nesting_past_the_marking_probe_runs_unmarked() {
    // 2,000 nested functions parse within the interpreter's 1 MiB, not within the probe's 256 KiB.
    let code = format!("{}{}\nreturn 'ran';", "function f() {".repeat(500), "}".repeat(500));
    assert_eq!(run(&code).await.unwrap().text(), "ran");
}

#[tokio::test]
async fn the_marking_probe_is_not_a_module_the_program_can_import() {
    let error = run("return await import('program-probe.js');").await.unwrap_err();
    assert!(matches!(&error, ProgramError::Thrown { text, .. } if text.contains("program-probe.js")), "{error}");
}

// Approvals under approval tokens ("Approvals" in the crate docs).

/// The paths `remove` removed.
static REMOVED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Remove a path (asks the user first: tagged `confirm`).
#[tool(callers = code, tags(confirm))]
async fn remove(
    /// The path.
    path: String,
) -> String {
    REMOVED.lock().unwrap().push(path.clone());
    format!("removed {path}")
}

/// The tests share `REMOVED`: each uses paths of its own.
fn removals_of(path: &str) -> usize {
    REMOVED.lock().unwrap().iter().filter(|p| *p == path).count()
}

const START: u64 = 1_800_000_000;

fn fixed_clock() -> Arc<tool_runtime::FixedClock> {
    Arc::new(tool_runtime::FixedClock::new(std::time::UNIX_EPOCH + Duration::from_secs(START)))
}

/// Code mode over `remove`, with approval tokens on the clock `clock`.
fn approving(clock: Arc<tool_runtime::FixedClock>) -> CodeMode {
    CodeMode::new(Arc::new(
        Registry::builder().tool(remove::TOOL).approval_tokens(tokens_on(clock, 9)).build().unwrap(),
    ))
}

fn on(clock: Arc<tool_runtime::FixedClock>) -> ToolContext {
    ToolContext::builder().principal("ann").clock(clock).build()
}

fn run_program(id: &str, code: &str) -> ToolCall {
    ToolCall::new(id, RUN_PROGRAM, serde_json::json!({ "code": code }).to_string())
}

const REMOVE_ASKED: &str = "tool `remove` did not run: it needs the user's approval. What it would do:\ncall `remove` \
                            with\n\"path\": \"tmp/asked\"\nThe approval is the user's to give, through the application, \
                            within 300 s; it is not in this result. Do not send the call again on your own: once the \
                            user approves, the application runs this exact call";

#[tokio::test]
async fn under_approval_tokens_a_call_that_needs_approval_stops_the_run_with_the_inner_request() {
    let clock = fixed_clock();
    let code = "await tools.remove({path: \"tmp/asked\"});\nreturn \"went on\";";
    let error = approving(clock.clone()).run(code, &on(clock)).await.unwrap_err();
    assert_eq!(error.to_string(), REMOVE_ASKED);
    let ProgramError::NeedsApproval { tool, problem: tool_runtime::ApprovalProblem::Missing { request, valid_secs } } =
        error
    else {
        panic!("not an approval: {error:?}");
    };
    assert_eq!((tool.as_str(), request.tool.as_str(), valid_secs), ("remove", "remove", 300));
    assert_eq!(request.preview, "call `remove` with\n\"path\": \"tmp/asked\"");
    assert_eq!(request.expires_at, START + 300);
    assert!(request.token.starts_with("ap1."), "a token for the host");
    assert_eq!(removals_of("tmp/asked"), 0);
}

#[tokio::test]
async fn a_program_that_catches_the_refusal_still_gives_the_host_the_request() {
    let clock = fixed_clock();
    let code = "try { await tools.remove({path: \"tmp/caught\"}); } catch (e) { return \"swallowed\"; }";
    let error = approving(clock.clone()).run(code, &on(clock)).await.unwrap_err();
    assert!(matches!(error, ProgramError::NeedsApproval { ref tool, .. } if tool == "remove"), "{error:?}");
}

#[tokio::test]
async fn the_run_program_result_carries_the_inner_approval_request_for_its_host_and_not_the_token_for_the_model() {
    let clock = fixed_clock();
    let served = approving(clock.clone()).registry_builder().build().unwrap();
    let message =
        served.call(&run_program("p1", "return await tools.remove({path: \"tmp/asked\"});"), &on(clock)).await;
    assert!(message.is_error);
    assert_eq!(message.tool_name, RUN_PROGRAM);
    assert_eq!(message.text(), REMOVE_ASKED);
    let request = message.approval.as_ref().expect("the inner request reaches the host");
    assert_eq!(
        (request.tool.as_str(), request.preview.as_str()),
        ("remove", "call `remove` with\n\"path\": \"tmp/asked\"")
    );
    assert!(!message.text().contains(&request.token));
}

#[tokio::test]
async fn the_same_program_sent_again_with_the_token_runs_the_approved_call_once() {
    let clock = fixed_clock();
    let served = approving(clock.clone()).registry_builder().build().unwrap();
    let ctx = on(clock);
    let program = run_program("p2", "return await tools.remove({path: \"tmp/approved\"});");
    let token = served.call(&program, &ctx).await.approval.expect("an approval request").token;
    let again = program.clone().with_approval_token(&token);
    let message = served.call(&again, &ctx).await;
    assert_eq!((message.is_error, message.text().as_ref()), (false, "removed tmp/approved"));
    assert_eq!(removals_of("tmp/approved"), 1);
    // The token ran its call: a third run is refused again, with a fresh request.
    let third = served.call(&again, &ctx).await;
    let fresh = third.approval.expect("a fresh approval request");
    assert_ne!(fresh.token, token);
    assert_eq!(removals_of("tmp/approved"), 1);
}

#[tokio::test]
async fn a_token_for_another_call_is_not_spent_on_the_programs_calls_and_their_request_comes_back() {
    let clock = fixed_clock();
    let served = approving(clock.clone()).registry_builder().build().unwrap();
    let ctx = on(clock);
    let asked = run_program("p3", "return await tools.remove({path: \"tmp/first\"});");
    let token = served.call(&asked, &ctx).await.approval.expect("an approval request").token;
    let changed = run_program("p3", "return await tools.remove({path: \"tmp/other\"});").with_approval_token(&token);
    let message = served.call(&changed, &ctx).await;
    let request = message.approval.expect("the other call's own request");
    assert_eq!(request.preview, "call `remove` with\n\"path\": \"tmp/other\"");
    assert_eq!(removals_of("tmp/other"), 0);
    // The token was not spent: it still runs the call it was issued for.
    let message = served.call(&asked.with_approval_token(&token), &ctx).await;
    assert_eq!(message.text(), "removed tmp/first");
}

static STALLING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Waits until its call is cancelled.
#[tool(callers = both)]
async fn stall(ctx: &ToolContext) -> String {
    STALLING.store(true, Ordering::SeqCst);
    ctx.cancellation().cancelled().await;
    "cancelled".to_owned()
}

#[tokio::test]
async fn a_caller_cancelled_while_a_tool_call_of_the_program_runs_stops_the_program() {
    let token = CancellationToken::new();
    let ctx = ToolContext::builder().cancellation(token.clone()).build();
    let code = CodeMode::new(Arc::new(Registry::builder().tool(stall::TOOL).build().unwrap()));
    let canceller = tokio::spawn(async move {
        // Bounded: 500 polls of 10 ms.
        for _ in 0..500 {
            if STALLING.load(Ordering::SeqCst) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        token.cancel();
    });
    let error = code.run("await tools.stall();", &ctx).await.unwrap_err();
    canceller.await.unwrap();
    assert_eq!(error, ProgramError::Cancelled);
    assert!(STALLING.load(Ordering::SeqCst), "the tool call was in flight");
    // The interpreter's thread ended cleanly: the process goes on to run another program.
    assert_eq!(code.run("return 1 + 1;", &ToolContext::new()).await.unwrap().text(), "2");
}

/// Remove a path for good, by a direct call only (asks the user first: tagged `confirm`).
#[tool(tags(confirm))]
async fn purge(
    /// The path.
    path: String,
) -> String {
    REMOVED.lock().unwrap().push(format!("purged {path}"));
    format!("purged {path}")
}

fn tokens_on(clock: Arc<tool_runtime::FixedClock>, key: u8) -> tool_runtime::ApprovalTokens {
    tool_runtime::ApprovalTokens::new(tool_runtime::idempotency::MemoryIdempotencyStore::new())
        .server_key([key; 32])
        .unwrap()
        .clock(clock)
}

#[tokio::test]
async fn a_forwarded_direct_call_approved_by_both_registries_reaches_the_host_twice_and_then_runs_once() {
    let clock = fixed_clock();
    let registry = Registry::builder().tool(purge::TOOL).approval_tokens(tokens_on(clock.clone(), 9)).build().unwrap();
    let served = CodeMode::new(Arc::new(registry))
        .registry_builder()
        .approval_tokens(tokens_on(clock.clone(), 8))
        .build()
        .unwrap();
    let ctx = on(clock);
    let call = ToolCall::new("f1", "purge", r#"{"path": "tmp/forwarded"}"#);
    let preview = "call `purge` with\n\"path\": \"tmp/forwarded\"";
    // The served registry's own approval first.
    let outer = served.call(&call, &ctx).await.approval.expect("the served registry's request");
    assert_eq!((outer.tool.as_str(), outer.preview.as_str()), ("purge", preview));
    // Approved there, the call reaches the wrapped registry, whose request reaches the host too.
    let message = served.call(&call.clone().with_approval_token(&outer.token), &ctx).await;
    let inner = message.approval.clone().unwrap_or_else(|| panic!("no request: {}", message.text()));
    assert_eq!((inner.tool.as_str(), inner.preview.as_str()), ("purge", preview));
    assert!(inner.token.starts_with("ap1p."), "a token of the served registry carrying the wrapped one's");
    assert_eq!(removals_of("purged tmp/forwarded"), 0);
    let message = served.call(&call.clone().with_approval_token(&inner.token), &ctx).await;
    assert_eq!(message.text(), "purged tmp/forwarded");
    assert_eq!(removals_of("purged tmp/forwarded"), 1);
}
