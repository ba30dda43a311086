//! `toolbox list` and `toolbox run`, run as a user runs them.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

fn toolbox(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolbox")).args(args).output().expect("the toolbox binary runs")
}

fn stdout_json(output: &Output) -> Value {
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}

fn repo_file(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path).display().to_string()
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {\n    println!(\"hello\");\n}\n").unwrap();
    dir
}

#[test]
fn list_prints_the_canonical_definitions_sorted_by_name() {
    let definitions = stdout_json(&toolbox(&["list"]));
    let names: Vec<&str> = definitions.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["apply_patch", "glob", "grep", "read", "todo_new", "todo_read"]);
    assert_eq!(definitions[5]["set"], "todo");
    assert_eq!(
        definitions[5]["input_schema"],
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
}

#[test]
fn list_filters_by_set_and_renders_a_provider_shape() {
    let tools = stdout_json(&toolbox(&["list", "--format", "openai-chat", "--set", "fs"]));
    let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["glob", "grep", "read"]);
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["strict"], false);
}

#[test]
fn list_as_gemini_is_one_entry_of_function_declarations_without_additional_properties() {
    let tools = stdout_json(&toolbox(&["list", "--format", "gemini", "--set", "todo"]));
    let declarations = tools[0]["functionDeclarations"].as_array().unwrap();
    let names: Vec<&str> = declarations.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["todo_new", "todo_read"]);
    assert_eq!(tools.as_array().unwrap().len(), 1);
    assert!(!tools.to_string().contains("additionalProperties"));
    assert_eq!(declarations[1].get("parameters"), None);
}

#[test]
fn run_dispatches_a_parallel_turn_and_prints_the_results_in_the_provider_shape() {
    let root = workspace();
    let output = toolbox(&[
        "run",
        &repo_file("toolbox/tests/data/openai-chat-std-tools.json"),
        "--root",
        root.path().to_str().unwrap(),
    ]);
    assert_eq!(
        stdout_json(&output),
        json!([
            {
                "role": "tool",
                "tool_call_id": "call_read",
                "content": "    1  fn main() {\n    2      println!(\"hello\");\n    3  }\n\n[read_metadata] \
                            content_sha256=35e0393811f794547c34763eb5773d6cddb295dc4f372180ed4aae67da3ea45f"
            },
            {"role": "tool", "tool_call_id": "call_grep", "content": "src/main.rs:2:     println!(\"hello\");"},
            {
                "role": "tool",
                "tool_call_id": "call_todo",
                "content": "Todos: 1 total, 0 pending, 1 in_progress, 0 completed, 0 cancelled\nNext: [say-hello]\n\
                            1. [>] [say-hello] (p3) Say hello"
            },
            {"role": "tool", "tool_call_id": "call_bad", "content": "Path escapes workspace: ../etc/passwd"}
        ])
    );
}

#[test]
fn run_answers_calls_of_tools_it_does_not_have_with_unknown_tool_results() {
    let root = workspace();
    let output = toolbox(&[
        "run",
        &repo_file("fixtures/provider-responses/anthropic-tool-use-1.json"),
        "--root",
        root.path().to_str().unwrap(),
    ]);
    assert_eq!(
        stdout_json(&output),
        json!([{
            "role": "user",
            "content": [{
                "type": "tool_result",
                "tool_use_id": "toolu_01YC8RhZeDTZRbb8n1gUFTmb",
                "content": "unknown tool `memory`; available tools: apply_patch, glob, grep, read, todo_new, todo_read",
                "is_error": true
            }]
        }])
    );
}

#[test]
fn run_reads_every_recorded_provider_response() {
    let root = workspace();
    let dir = repo_file("fixtures/provider-responses");
    let mut counts = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    for path in names {
        let output = toolbox(&["run", path.to_str().unwrap(), "--root", root.path().to_str().unwrap()]);
        let rendered = stdout_json(&output);
        counts.push((path.file_name().unwrap().to_string_lossy().into_owned(), rendered.as_array().unwrap().len()));
    }
    assert_eq!(
        counts,
        [
            ("anthropic-tool-use-1.json".to_owned(), 1),
            ("anthropic-tool-use-parallel-1.json".to_owned(), 1),
            ("gemini-function-call-1.json".to_owned(), 1),
            ("gemini-parallel-1.json".to_owned(), 1),
            ("gemini-unknown-tool-1.json".to_owned(), 1),
            ("openai-chat-parallel-1.json".to_owned(), 2),
            ("openai-chat-single-1.json".to_owned(), 1),
            ("openai-responses-parallel-1.json".to_owned(), 5),
        ]
    );
}

#[test]
fn run_exits_1_with_a_message_on_stderr_when_the_file_is_missing() {
    let output = toolbox(&["run", "/nonexistent/response.json"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(output.stdout, b"");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "toolbox: cannot read /nonexistent/response.json: No such file or directory (os error 2)\n"
    );
}

#[test]
fn run_exits_1_when_the_body_is_not_a_provider_response() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("error.json");
    std::fs::write(&path, r#"{"error":{"message":"rate limited"}}"#).unwrap();
    let output = toolbox(&["run", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "toolbox: {} is not an OpenAI Chat Completions, OpenAI Responses, Anthropic Messages or Gemini \
             response; pass --provider to say which\n",
            path.display()
        )
    );
}

#[test]
fn a_bad_option_value_exits_2() {
    let output = toolbox(&["list", "--format", "nope"]);
    assert_eq!(output.status.code(), Some(2));
}
