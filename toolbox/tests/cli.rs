//! `toolbox list` and `toolbox run`, run as a user runs them.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

/// The state directory of every run of this test binary (output cache and sessions), so that the
/// tests never write to the user's own state directory.
fn state_home() -> &'static Path {
    static STATE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    STATE.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

fn toolbox(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(args)
        .env("XDG_STATE_HOME", state_home())
        .output()
        .expect("the toolbox binary runs")
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
    assert_eq!(
        names,
        [
            "apply_patch",
            "done",
            "edit",
            "glob",
            "grep",
            "read",
            "read_line",
            "todo_append",
            "todo_clear",
            "todo_new",
            "todo_patch",
            "todo_read",
            "tool_output_cache",
            "tool_output_cache_grep",
            "tool_output_cache_line",
            "view_image",
            "write",
        ]
    );
    assert_eq!(definitions[11]["set"], "todo");
    assert_eq!(
        definitions[11]["input_schema"],
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
}

#[test]
fn list_filters_by_set_and_renders_a_provider_shape() {
    let tools = stdout_json(&toolbox(&["list", "--format", "openai-chat", "--set", "fs"]));
    let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["edit", "glob", "grep", "read", "read_line", "write"]);
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["strict"], false);
}

#[test]
fn list_as_openai_strict_sends_every_standard_tool_strict_with_optional_fields_required_and_nullable() {
    let tools = stdout_json(&toolbox(&["list", "--format", "openai-strict", "--set", "fs"]));
    let strict: Vec<(&str, bool)> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["function"]["name"].as_str().unwrap(), t["function"]["strict"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        strict,
        [("edit", true), ("glob", true), ("grep", true), ("read", true), ("read_line", true), ("write", true)]
    );
    assert_eq!(
        tools[3]["function"]["parameters"],
        json!({
            "type": "object",
            "properties": {
                "file_path": {"description": "Relative to the workspace root.", "type": "string"},
                "limit": {
                    "description": "Lines to show (default 1500).",
                    "minimum": 1,
                    "maximum": 100000,
                    "type": ["integer", "null"]
                },
                "offset": {
                    "description": "0-based first line.",
                    "minimum": 0,
                    "maximum": 9007199254740991u64,
                    "type": ["integer", "null"]
                }
            },
            "required": ["file_path", "limit", "offset"],
            "additionalProperties": false
        })
    );
}

#[test]
fn list_canonical_carries_the_output_schema_of_write_only() {
    let definitions = stdout_json(&toolbox(&["list", "--set", "fs"]));
    let with_schema: Vec<&str> = definitions
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d.get("output_schema").is_some())
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(with_schema, ["write"]);
    assert_eq!(
        definitions[5]["output_schema"]["required"],
        json!(["summary", "file_path", "created", "content_sha256", "diff", "diff_truncated"])
    );
}

#[test]
fn list_as_gemini_is_one_entry_of_function_declarations_without_additional_properties() {
    let tools = stdout_json(&toolbox(&["list", "--format", "gemini", "--set", "todo"]));
    let declarations = tools[0]["functionDeclarations"].as_array().unwrap();
    let names: Vec<&str> = declarations.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["todo_append", "todo_clear", "todo_new", "todo_patch", "todo_read"]);
    assert_eq!(tools.as_array().unwrap().len(), 1);
    assert!(!tools.to_string().contains("additionalProperties"));
    assert_eq!(declarations[1].get("parameters"), None);
}

#[test]
fn list_as_gemini_json_schema_gives_each_tool_its_canonical_schema_as_parameters_json_schema() {
    let tools = stdout_json(&toolbox(&["list", "--format", "gemini-json-schema", "--set", "todo"]));
    let canonical = stdout_json(&toolbox(&["list", "--set", "todo"]));
    let declarations = tools[0]["functionDeclarations"].as_array().unwrap();
    let names: Vec<&str> = declarations.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["todo_append", "todo_clear", "todo_new", "todo_patch", "todo_read"]);
    assert_eq!(tools.as_array().unwrap().len(), 1);
    assert_eq!(declarations[0]["parametersJsonSchema"], canonical[0]["input_schema"]);
    assert_eq!(declarations[0]["parametersJsonSchema"]["additionalProperties"], false);
    assert_eq!(declarations[0].get("parameters"), None);
    // todo_clear takes no parameters: neither key is sent.
    assert_eq!(declarations[1], json!({"name": "todo_clear", "description": canonical[1]["description"]}));
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
                "content": "unknown tool `memory`; available tools: apply_patch, bash, bash_kill, bash_output, done, edit, glob, grep, read, read_line, search, todo_append, todo_clear, todo_new, todo_patch, todo_read, tool_output_cache, tool_output_cache_grep, tool_output_cache_line, view_image, webfetch, write",
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

#[test]
fn run_answers_an_anthropic_parallel_turn_in_one_user_message() {
    let root = workspace();
    let output = toolbox(&[
        "run",
        &repo_file("toolbox/tests/data/anthropic-std-tools.json"),
        "--root",
        root.path().to_str().unwrap(),
    ]);
    assert_eq!(
        stdout_json(&output),
        json!([{
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_read",
                    "content": "    1  fn main() {\n\n[showing lines 1-1 of 3] Use offset=1 to read more.\n[read_metadata] \
                                content_sha256=35e0393811f794547c34763eb5773d6cddb295dc4f372180ed4aae67da3ea45f"
                },
                {"type": "tool_result", "tool_use_id": "toolu_grep", "content": "src/main.rs:2:     println!(\"hello\");"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_todo",
                    "content": "Todos: 2 total, 1 pending, 1 in_progress, 0 completed, 0 cancelled\nNext: [say-hello]\n\
                                1. [>] [say-hello] (p3) Say hello\n2. [ ] [say-hello-2] (p3) Say hello"
                }
            ]
        }])
    );
}

#[test]
fn call_prints_the_tool_message_as_json() {
    let root = workspace();
    let output = toolbox(&[
        "call",
        "grep",
        r#"{"pattern":"fn main"}"#,
        "--call-id",
        "call_grep_1",
        "--root",
        root.path().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0));
    let mut message = stdout_json(&output);
    let ref_id = message["ref_id"].take();
    assert_eq!(ref_id.as_str().map(str::len), Some(22), "{ref_id}");
    assert_eq!(
        message,
        json!({
            "tool_call_id": "call_grep_1",
            "tool_name": "grep",
            "content": "src/main.rs:1: fn main() {",
            "is_error": false,
            "ref_id": null
        })
    );
}

#[test]
fn a_ref_id_printed_by_one_call_is_readable_by_the_next() {
    let root = workspace();
    let state = tempfile::tempdir().unwrap();
    let (root, state) = (root.path().to_str().unwrap(), state.path().to_str().unwrap());
    let first = stdout_json(&toolbox(&[
        "call",
        "read",
        r#"{"file_path":"src/main.rs"}"#,
        "--root",
        root,
        "--state-dir",
        state,
    ]));
    let ref_id = first["ref_id"].as_str().unwrap();
    assert_eq!(ref_id.len(), 22, "{ref_id}");

    let arguments = json!({"ref_id": ref_id, "pattern": "println"}).to_string();
    let second =
        stdout_json(&toolbox(&["call", "tool_output_cache_grep", &arguments, "--root", root, "--state-dir", state]));
    assert_eq!(second["is_error"], false);
    // The cache holds the read's output as the model saw it, line numbers included.
    assert_eq!(second["content"], "    2:     2      println!(\"hello\");");
}

/// Two `read`s into one state dir with `bounds` (flags), then a grep of the first one's ref.
fn grep_of_the_first_after_a_second(bounds: &[&str]) -> Value {
    let root = workspace();
    let state = tempfile::tempdir().unwrap();
    let (root, state) = (root.path().to_str().unwrap(), state.path().to_str().unwrap());
    let read = |path: &str| {
        let arguments = json!({ "file_path": path }).to_string();
        let mut args = vec!["call", "read", arguments.as_str(), "--root", root, "--state-dir", state];
        args.extend_from_slice(bounds);
        stdout_json(&toolbox(&args))
    };
    let first = read("src/main.rs");
    read("src/main.rs");
    let arguments = json!({"ref_id": first["ref_id"], "pattern": "println"}).to_string();
    let grep = toolbox(&["call", "tool_output_cache_grep", &arguments, "--root", root, "--state-dir", state]);
    serde_json::from_slice(&grep.stdout).unwrap()
}

#[test]
fn cache_max_bytes_bounds_the_output_cache_across_calls() {
    assert_eq!(grep_of_the_first_after_a_second(&[])["is_error"], false);
    let evicted = grep_of_the_first_after_a_second(&["--cache-max-bytes", "1"]);
    assert_eq!(evicted["is_error"], true);
    assert!(evicted["content"].as_str().unwrap().starts_with("no tool output is cached under ref_id"), "{evicted}");
}

#[test]
fn a_cache_ttl_of_zero_is_refused_with_exit_2() {
    let output = toolbox(&["list", "--cache-ttl", "0"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--cache-ttl"));
}

#[test]
fn a_bad_store_bound_in_the_environment_is_refused_naming_it() {
    let output = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["list"])
        .env("XDG_STATE_HOME", state_home())
        .env("TOOL_SESSION_MAX_BYTES", "lots")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(
            "TOOL_SESSION_MAX_BYTES=\"lots\" is not a positive integer; set it to a whole number above 0 or unset it"
        ),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn todo_new_in_one_call_and_todo_read_in_the_next_see_the_same_plan() {
    let root = workspace();
    let state = tempfile::tempdir().unwrap();
    let (root, state) = (root.path().to_str().unwrap(), state.path().to_str().unwrap());
    let plan = json!({"todos": [{"content": "Write the parser", "status": "in_progress"}]}).to_string();
    toolbox(&["call", "todo_new", &plan, "--root", root, "--state-dir", state]);

    let read = stdout_json(&toolbox(&["call", "todo_read", "--root", root, "--state-dir", state]));
    assert_eq!(
        read["content"],
        "Todos: 1 total, 0 pending, 1 in_progress, 0 completed, 0 cancelled\nNext: [write-the-parser]\n\
         1. [>] [write-the-parser] (p3) Write the parser"
    );
}

#[test]
fn call_exits_1_and_prints_the_error_message_when_the_arguments_are_not_json() {
    let root = workspace();
    let output = toolbox(&["call", "read", "{", "--root", root.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let message: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(message["is_error"], true);
    assert_eq!(
        message["content"],
        "invalid arguments for `read`: not valid JSON: EOF while parsing an object at line 1 column 1; send one JSON \
         object"
    );
}

#[test]
fn list_as_mcp_gives_tools_list_entries_with_the_canonical_schema() {
    let canonical = stdout_json(&toolbox(&["list", "--set", "fs"]));
    let entries = stdout_json(&toolbox(&["list", "--format", "mcp", "--set", "fs"]));
    let names: Vec<&str> = entries.as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["edit", "glob", "grep", "read", "read_line", "write"]);
    assert_eq!(entries[3]["inputSchema"], canonical[3]["input_schema"]);
    assert_eq!(entries[3]["description"], canonical[3]["description"]);
    assert_eq!(entries[3]["annotations"], json!({"readOnlyHint": true, "openWorldHint": false}));
    assert_eq!(entries[3].get("outputSchema"), None);
    assert_eq!(entries[5]["outputSchema"], canonical[5]["output_schema"]);
}

#[test]
fn verbose_logs_go_to_stderr_and_stdout_stays_json() {
    let output = toolbox(&["-v", "list", "--set", "todo"]);
    let definitions = stdout_json(&output);
    assert_eq!(definitions.as_array().unwrap().len(), 5);
    assert!(String::from_utf8_lossy(&output.stderr).contains("resolved the global options"));
}

#[test]
fn a_state_dir_that_is_a_file_exits_1_saying_to_give_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state");
    std::fs::write(&file, "").unwrap();
    let output = toolbox(&["list", "--state-dir", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "toolbox: --state-dir {} is not a directory; give a directory (it is created when needed)\n",
            file.display()
        )
    );
}

#[test]
fn allow_takes_only_known_permissions() {
    assert_eq!(toolbox(&["--allow", "external", "list"]).status.code(), Some(0));
    let output = toolbox(&["--allow", "network", "list"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("invalid value 'network' for '--allow <WHAT>'"));
}

fn toolbox_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(args)
        .env("XDG_STATE_HOME", state_home())
        .envs(env.iter().copied())
        .output()
        .expect("the toolbox binary runs")
}

/// A workspace with `notes.txt`: 40 lines `note NN`, 320 bytes (`read` numbers them and adds the
/// metadata line: 696 bytes).
fn notes_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=40).map(|n| format!("note {n:02}\n")).collect();
    std::fs::write(dir.path().join("notes.txt"), text).unwrap();
    dir
}

fn contents(output: &Output) -> Vec<String> {
    stdout_json(output).as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn run_shares_the_turn_budget_of_tool_max_turn_bytes_across_a_replayed_turn() {
    let root = notes_workspace();
    let args =
        ["run", &repo_file("toolbox/tests/data/openai-chat-two-reads.json"), "--root", root.path().to_str().unwrap()];

    let whole = contents(&toolbox_with_env(&args, &[]));
    let cut: Vec<String> = contents(&toolbox_with_env(&args, &[("TOOL_MAX_TURN_BYTES", "400")]))
        .iter()
        .map(|c| without_ref_id(c))
        .collect();

    assert_eq!(whole.iter().map(String::len).collect::<Vec<_>>(), [696, 696]);
    let cut_text = "    1  note 01\n    2 \n[... 655 bytes omitted by the turn output budget; read them with \
                    tool_output_cache {\"ref_id\":\"<ref>\"} or search with tool_output_cache_grep]\n\
                    c18233403e9b5368323f";
    assert_eq!(cut, [cut_text, cut_text]);
}

/// `text` with the ref id of its marker (22 characters of `[A-Za-z0-9_-]`, minted by the output
/// cache for each result) written `<ref>`.
fn without_ref_id(text: &str) -> String {
    let (head, rest) = text.split_once("{\"ref_id\":\"").expect("the marker names a ref id");
    let (ref_id, tail) = rest.split_once('"').expect("the ref id is quoted");
    assert_eq!(ref_id.len(), 22, "{ref_id}");
    assert!(ref_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'), "{ref_id}");
    format!("{head}{{\"ref_id\":\"<ref>\"{tail}")
}

#[test]
fn run_reports_a_turn_that_asks_to_stop_on_stderr_after_printing_every_result() {
    let root = workspace();
    let output = toolbox(&[
        "run",
        &repo_file("toolbox/tests/data/openai-chat-done.json"),
        "--root",
        root.path().to_str().unwrap(),
    ]);
    assert_eq!(
        stdout_json(&output),
        json!([
            {"role": "tool", "tool_call_id": "call_grep", "content": "src/main.rs:2:     println!(\"hello\");"},
            {"role": "tool", "tool_call_id": "call_done", "content": "said hello"}
        ])
    );
    // A debug build may also warn that a poll held its thread over 10 ms (wall clock: a busy
    // machine can preempt any poll); that warning is not what this test is about.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let reported: String =
        stderr.lines().filter(|l| !l.contains("held the thread polling its call")).map(|l| format!("{l}\n")).collect();
    assert_eq!(reported, "toolbox: the turn asks to stop: call `call_done` finished the run: said hello\n");
}

fn names(tools: &Value) -> Vec<&str> {
    tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[test]
fn list_with_defer_as_mcp_gives_the_tools_not_deferred_then_the_two_meta_tools() {
    let tools = stdout_json(&toolbox(&["list", "--format", "mcp", "--set", "fs,todo", "--defer", "fs"]));
    assert_eq!(
        names(&tools),
        ["todo_append", "todo_clear", "todo_new", "todo_patch", "todo_read", "search_tools", "call_tool"]
    );
}

#[test]
fn list_with_defer_as_anthropic_marks_the_deferred_tools_and_ends_with_the_search_tool() {
    let tools = stdout_json(&toolbox(&["list", "--format", "anthropic", "--set", "fs,todo", "--defer", "fs"]));
    let deferred: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["defer_loading"] == json!(true))
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(deferred, ["edit", "glob", "grep", "read", "read_line", "write"]);
    assert_eq!(names(&tools).last(), Some(&"search_tools"));
}

#[test]
fn list_with_defer_as_openai_responses_ends_with_a_client_tool_search() {
    let tools = stdout_json(&toolbox(&["list", "--format", "openai-responses", "--set", "fs", "--defer", "fs"]));
    let last = tools.as_array().unwrap().last().unwrap();
    assert_eq!((&last["type"], &last["execution"]), (&json!("tool_search"), &json!("client")));
}

#[test]
fn deferring_a_set_no_selected_tool_is_in_exits_1_naming_the_sets_there_are() {
    let output = toolbox(&["list", "--set", "todo", "--defer", "fs"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "toolbox: cannot defer: no tool is in the set `fs` (the sets: `todo`); give the names and sets of registered tools\n"
    );
}

#[test]
fn run_answers_an_anthropic_search_with_tool_references_in_the_user_message_of_the_other_results() {
    let root = workspace();
    let output = toolbox(&[
        "run",
        &repo_file("toolbox/tests/data/anthropic-tool-search.json"),
        "--defer",
        "fs",
        "--root",
        root.path().to_str().unwrap(),
    ]);
    let turn = stdout_json(&output);
    let content = turn[0]["content"].as_array().unwrap();
    assert_eq!(
        content[0],
        json!({"type": "tool_result", "tool_use_id": "toolu_search", "content": [{"type": "tool_reference", "tool_name": "read"}]})
    );
    assert_eq!((&content[1]["tool_use_id"], content.len()), (&json!("toolu_read"), 2));
    assert!(content[1]["content"].as_str().unwrap().starts_with("    1  fn main() {"), "{content:?}");
}

#[test]
fn run_answers_an_openai_client_tool_search_call_with_the_function_definitions_found() {
    let output = toolbox(&["run", &repo_file("toolbox/tests/data/openai-responses-tool-search.json"), "--defer", "fs"]);
    let items = stdout_json(&output);
    let glob = stdout_json(&toolbox(&["list", "--format", "openai-responses", "--set", "fs"]))
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "glob")
        .cloned()
        .unwrap();
    assert_eq!(
        items,
        json!([{"type": "tool_search_output", "call_id": "call_search", "execution": "client", "status": "completed", "tools": [glob]}])
    );
}

#[test]
fn run_answers_the_meta_tool_calls_of_openai_chat_in_call_order() {
    let root = workspace();
    let output = toolbox(&[
        "run",
        &repo_file("toolbox/tests/data/openai-chat-meta-tools.json"),
        "--defer",
        "fs",
        "--root",
        root.path().to_str().unwrap(),
    ]);
    let messages = stdout_json(&output);
    let ids: Vec<&str> = messages.as_array().unwrap().iter().map(|m| m["tool_call_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["call_search", "call_todo", "call_grep"]);
    let found: Value = serde_json::from_str(messages[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(names(&found["tools"]), ["read_line"]);
    assert_eq!(messages[2]["content"], "src/main.rs:2:     println!(\"hello\");");
}

#[test]
fn confirm_makes_a_tagged_tool_ask_and_call_which_cannot_ask_refuses_it_saying_so() {
    let root = workspace();
    let state = tempfile::tempdir().unwrap();
    let (root, state) = (root.path().to_str().unwrap(), state.path().to_str().unwrap());
    let arguments = r#"{"file_path":"src/main.rs"}"#;
    let output = toolbox(&["call", "read", arguments, "--root", root, "--state-dir", state, "--confirm", "read_only"]);
    assert_eq!(output.status.code(), Some(1));
    let asked: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(asked["is_error"], true);
    assert_eq!(
        asked["content"],
        "Permission denied: it needs the user's approval (tag `read_only`) and no client can be asked: install a \
         client channel (ToolContextBuilder::client or RegistryBuilder::client), or serve it without approval for the \
         tag `read_only`"
    );
    // Another tag leaves `read` alone.
    let read =
        stdout_json(&toolbox(&["call", "read", arguments, "--root", root, "--state-dir", state, "--confirm", "exec"]));
    assert_eq!(read["is_error"], false);
}

#[test]
fn a_request_state_key_file_under_32_bytes_is_a_usage_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, b"too short").unwrap();
    let key = key.to_str().unwrap();
    let output = toolbox(&[
        "mcp",
        "--http",
        "127.0.0.1:0",
        "--request-state-key-file",
        key,
        "--root",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "toolbox: --request-state-key-file {key}: a request state key needs at least 32 bytes, got 9; give 32 random \
             bytes\n"
        )
    );
}
