//! Code mode in process: programs over a real registry, every limit attacked.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;
use tool_code::{CodeMode, Limits, ProgramError, RUN_PROGRAM};
use tool_runtime::prelude::*;
use tool_runtime::{CancellationToken, PermissionRequest};

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

#[tokio::test]
async fn a_loop_without_calls_ends_at_the_wall_time_without_a_line() {
    let limits = Limits::DEFAULT.wall_time(Duration::from_millis(200));
    let error = run_with(limits, "let i = 0;\nwhile (true) { i++; }").await.unwrap_err();
    assert_eq!(error, ProgramError::WallTime { limit: Duration::from_millis(200), at: None });
}

#[tokio::test]
async fn a_loop_that_catches_the_interrupt_still_ends_at_the_wall_time() {
    let limits = Limits::DEFAULT.wall_time(Duration::from_millis(200));
    let code = "for (;;) { try { for (;;) {} } catch (e) {} }\n";
    let error = run_with(limits, code).await.unwrap_err();
    assert!(matches!(error, ProgramError::WallTime { .. }), "{error}");
}

#[tokio::test]
async fn a_memory_bomb_ends_with_out_of_memory() {
    let limits = Limits::DEFAULT.memory_bytes(8 * 1024 * 1024);
    let error =
        run_with(limits, "const a = [];\nwhile (true) { a.push('x'.repeat(65536) + a.length); }").await.unwrap_err();
    assert!(error.to_string().contains("out of memory"), "{error}");
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
