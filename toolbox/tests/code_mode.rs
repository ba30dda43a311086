//! `--code-mode`: `toolbox list`, `call`, `run` and `mcp` serve code mode over the standard tools,
//! run as a user runs them.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

fn toolbox(state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(args)
        .env("XDG_STATE_HOME", state)
        .output()
        .expect("the toolbox binary runs")
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/a.rs"), "// TODO one\nfn a() {}\n// TODO two\n").unwrap();
    std::fs::write(dir.path().join("src/b.rs"), "fn b() {}\n").unwrap();
    dir
}

/// `toolbox call --code-mode run_program` with `code`, and the flags after: the message as JSON.
fn run_program(root: &Path, code: &str, flags: &[&str]) -> Value {
    let state = tempfile::tempdir().unwrap();
    let arguments = json!({ "code": code }).to_string();
    let mut args = vec!["call", "run_program", &arguments, "--code-mode", "--root", root.to_str().unwrap()];
    args.extend_from_slice(flags);
    let output = toolbox(state.path(), &args);
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}

#[test]
fn list_with_code_mode_lists_the_meta_tools_and_done() {
    let state = tempfile::tempdir().unwrap();
    let output = toolbox(state.path(), &["list", "--code-mode"]);
    assert!(output.status.success());
    let definitions: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = definitions.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["done", "find_tools", "run_program", "tool_signatures"]);
}

#[test]
fn a_program_counts_todos_over_the_file_tools_and_only_its_answer_comes_back() {
    let root = workspace();
    let code = "const out = await tools.grep({pattern: 'TODO'});\n\
                const files = out.split('\\n').map(l => l.split(':')[0]);\n\
                return files.reduce((c, f) => ({...c, [f]: (c[f] || 0) + 1}), {});";
    let message = run_program(root.path(), code, &[]);
    assert_eq!(message["is_error"], false, "{message}");
    assert_eq!(message["content"], r#"{"src/a.rs":2}"#);
    // The program's result went through the output layer, like any result: stored under a ref id.
    assert_eq!(message["ref_id"].as_str().map(str::len), Some(22), "{message}");
}

#[test]
fn the_wall_time_flag_ends_a_loop() {
    let root = workspace();
    let message = run_program(root.path(), "while (true) {}", &["--code-wall-time-ms", "100"]);
    assert_eq!(message["is_error"], true);
    assert_eq!(
        message["content"],
        "the program ran past its time limit of 100 ms at line 1 (wall_time, `--code-wall-time-ms`); look for a loop \
         that does not end, or do less in one run"
    );
}

#[test]
fn the_tool_call_flag_ends_a_program_past_it() {
    let root = workspace();
    let code = "for (const p of ['src/a.rs', 'src/b.rs']) await tools.read({file_path: p});";
    let message = run_program(root.path(), code, &["--code-max-tool-calls", "1"]);
    assert_eq!(
        message["content"],
        "the program made more than 1 tool calls (max_tool_calls, `--code-max-tool-calls`); batch the work into fewer \
         calls (one grep over a tree instead of one per file)"
    );
}

#[test]
fn the_result_flag_refuses_a_larger_result() {
    let root = workspace();
    let message = run_program(root.path(), "return 'x'.repeat(50);", &["--code-max-result-bytes", "10"]);
    assert_eq!(
        message["content"],
        "the program's result is 50 bytes, over the limit of 10 (max_result_bytes, `--code-max-result-bytes`); return a \
         smaller value (counts, names, a slice)"
    );
}

#[test]
fn the_memory_stack_in_flight_code_and_programs_flags_are_taken() {
    let root = workspace();
    let flags = [
        "--code-memory-bytes",
        "4194304",
        "--code-stack-bytes",
        "262144",
        "--code-max-in-flight",
        "1",
        "--code-max-code-bytes",
        "64",
        "--code-max-programs",
        "1",
    ];
    let bomb = run_program(root.path(), "let a = []; for (;;) a.push('y'.repeat(1 << 16) + a.length);", &flags);
    assert!(bomb["content"].as_str().unwrap().starts_with("the program ran out of memory"), "{bomb}");
    let deep = run_program(root.path(), "function f() { return f() + 1; }\nf();", &flags);
    assert!(deep["content"].as_str().unwrap().contains("Maximum call stack size exceeded"), "{deep}");
    let long = run_program(root.path(), &format!("return '{}';", "z".repeat(64)), &flags);
    assert_eq!(
        long["content"],
        "the program is 74 bytes, over the limit of 64 (max_code_bytes, `--code-max-code-bytes`)"
    );
}

#[test]
fn a_program_call_of_a_tool_the_policy_refuses_is_refused_as_a_direct_call_is() {
    let root = workspace();
    // `--confirm read_only` asks the user before each read; `call` has nobody to ask.
    let message = run_program(root.path(), "\nawait tools.read({file_path: 'src/b.rs'});", &["--confirm", "read_only"]);
    let text = message["content"].as_str().unwrap();
    assert!(
        text.starts_with(
            "the program failed at line 2: Error: Permission denied: it needs the user's approval (tag `read_only`)"
        ),
        "{text}"
    );
}

#[test]
fn run_answers_a_recorded_run_program_call_in_the_providers_shape() {
    let root = workspace();
    let state = tempfile::tempdir().unwrap();
    let response = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "run_program",
                     "input": {"code": "return (await tools.glob({pattern: 'src/*.rs'})).split('\\n').length;"}}],
        "usage": {"input_tokens": 1, "output_tokens": 1}
    });
    let file = state.path().join("response.json");
    std::fs::write(&file, response.to_string()).unwrap();
    let output =
        toolbox(state.path(), &["run", file.to_str().unwrap(), "--code-mode", "--root", root.path().to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let results: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(results[0]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(results[0]["content"][0]["content"], "2");
}

#[tokio::test]
async fn mcp_with_code_mode_serves_the_meta_tools_and_runs_a_program() {
    let root = workspace();
    let state = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--code-mode", "--set", "fs", "--root", root.path().to_str().unwrap()])
        .env("XDG_STATE_HOME", state.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = ().serve(transport).await.unwrap();
    let names: Vec<String> = client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.into_owned()).collect();
    assert_eq!(names, ["find_tools", "run_program", "tool_signatures"]);
    let arguments = json!({"code": "console.log('files:');\nreturn (await tools.glob({pattern: '**/*.rs'}));"});
    let result = client
        .call_tool(CallToolRequestParams::new("run_program").with_arguments(arguments.as_object().unwrap().clone()))
        .await
        .unwrap();
    let result = serde_json::to_value(result).unwrap();
    assert_eq!(result["isError"], false);
    assert_eq!(result["content"][0]["text"], "files:\nreturned:\nsrc/a.rs\nsrc/b.rs");
    client.cancel().await.unwrap();
    assert!(child.wait().await.unwrap().success());
}
