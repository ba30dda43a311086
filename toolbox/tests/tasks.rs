//! `toolbox mcp --http --task TAGS`: the calls of tools with those tags are MCP tasks for a
//! client that declares the tasks extension, kept in the store of `--store` (here the state
//! directory's files), so that a task made by one server process is read by the next.

#[path = "task_rpc/mod.rs"]
mod task_rpc;

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use task_rpc::{request, request_of};
use test_support::process::{Output, Started, TOOLBOX_SERVING, start_saying};

/// Starts `toolbox mcp --http 127.0.0.1:0` with `args` (its standard error read to the end on a
/// thread, and kept); returns it and its URL's address.
fn serve(args: &[&str]) -> (Started, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbox"));
    command.args(["mcp", "--http", "127.0.0.1:0"]).args(args);
    let started = start_saying(command, Output::Stderr, TOOLBOX_SERVING);
    let url = &started.said;
    let addr = url.strip_prefix("http://").and_then(|u| u.strip_suffix("/mcp")).unwrap_or_else(|| panic!("{url}"));
    let addr = addr.to_owned();
    (started, addr)
}

/// `tasks/get` of `task` until it is no longer `working` (at most 200 polls).
fn settled(addr: &str, task: &str) -> Value {
    for i in 0..200 {
        let got = request(addr, 100 + i, "tasks/get", task, json!({"taskId": task}));
        if got["result"]["status"] != "working" {
            return got["result"].clone();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("task {task} still working after 200 polls");
}

#[test]
fn a_write_is_a_task_whose_result_the_next_server_process_still_gives() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "one line\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let args = [
        "--task",
        "destructive",
        "--root",
        root.path().to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
    ];
    let (first, addr) = serve(&args);
    let arguments = json!({"file_path": "new.txt", "content": "written by a task\n"});
    let created = request(&addr, 1, "tools/call", "write", json!({"name": "write", "arguments": arguments}));
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    let done = settled(&addr, &task);
    assert_eq!(done["status"], "completed", "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::read_to_string(root.path().join("new.txt")).unwrap(), "written by a task\n");
    drop(first);

    // Another process on the same store gives the same task.
    let (second, addr) = serve(&args);
    let again = request(&addr, 2, "tasks/get", &task, json!({"taskId": task}));
    assert_eq!(
        (again["result"]["status"].clone(), again["result"]["result"]["content"][0]["text"].clone()),
        (json!("completed"), json!(text))
    );
    // A tool without the tag answers in the request.
    let read =
        request(&addr, 3, "tools/call", "read", json!({"name": "read", "arguments": {"file_path": "notes.txt"}}));
    assert_eq!(read["result"]["resultType"], "complete", "{read}");
    let shown = read["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(shown.lines().next(), Some("    1  one line"), "{read}");
    drop(second);
}

#[test]
fn task_records_never_evict_a_sessions_plan() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "one line\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let args = [
        "--task",
        "read_only",
        "--session-max-bytes",
        "4000",
        "--root",
        root.path().to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
    ];
    let (server, addr) = serve(&args);
    let plan = json!({"todos": [{"content": "ship the release", "status": "in_progress"}]});
    let made = request(&addr, 1, "tools/call", "todo_new", json!({"name": "todo_new", "arguments": plan}));
    assert_eq!(made["result"]["isError"], false, "{made}");
    // Forty task records of about 500 bytes each: ten times the budget.
    for id in 0..40 {
        let read = json!({"name": "read", "arguments": {"file_path": "notes.txt"}});
        let created = request(&addr, 10 + id, "tools/call", "read", read);
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        settled(&addr, created["result"]["taskId"].as_str().unwrap());
    }
    // `todo_read` is read-only too: a task, whose result is the plan.
    let read = request(&addr, 99, "tools/call", "todo_read", json!({"name": "todo_read", "arguments": {}}));
    let task = read["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{read}")).to_owned();
    let read = settled(&addr, &task);
    let text = read["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("ship the release"), "{read}");
    drop(server);
}

#[test]
fn max_running_tasks_refuses_a_callers_task_past_the_flags_count() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (server, addr) = serve(&[
        "--task",
        "exec",
        "--allow",
        "exec",
        "--max-running-tasks",
        "1",
        "--root",
        root.path().to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
    ]);
    let sleep = json!({"name": "bash", "arguments": {"command": "sleep 60"}});
    let created = request(&addr, 1, "tools/call", "bash", sleep.clone());
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let refused = request(&addr, 2, "tools/call", "bash", sleep);
    assert_eq!(
        (&refused["error"]["code"], &refused["error"]["message"]),
        (
            &json!(-32600),
            &json!(
                "this caller already has 1 tasks running, the most this server runs at once for one caller; wait for \
                 one to end, or cancel one with tasks/cancel"
            )
        ),
        "{refused}"
    );
    drop(server);
}

#[test]
fn max_input_response_bytes_refuses_answers_past_the_flags_count() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (server, addr) = serve(&[
        "--confirm",
        "destructive",
        "--max-input-response-bytes",
        "100",
        "--root",
        root.path().to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
    ]);
    let asker = json!({"elicitation": {}});
    let write = json!({"name": "write", "arguments": {"file_path": "a.txt", "content": "hi\n"}});
    let asked = request_of(&addr, 1, "tools/call", "write", write.clone(), asker.clone());
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let key = asked["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let mut retry = write;
    retry["requestState"] = asked["result"]["requestState"].clone();
    retry["inputResponses"] = json!({key: {"action": "accept", "content": {"note": "a".repeat(200)}}});
    // Counted as the JSON of the answers by key, as sent.
    let bytes = retry["inputResponses"].to_string().len();
    let refused = request_of(&addr, 2, "tools/call", "write", retry, asker);
    assert_eq!(
        refused["error"],
        json!({"code": -32602, "message": format!("the answers of this call are {bytes} bytes of JSON, over this \
               server's limit of 100; answer the input requests with less")}),
        "{refused}"
    );
    assert!(!root.path().join("a.txt").exists());
    drop(server);
}

/// What `toolbox mcp --http 127.0.0.1:0 ARGS` says on standard error when it refuses to start
/// (exit code 1).
fn refused(args: &[&str]) -> String {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let output = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--http", "127.0.0.1:0"])
        .args(args)
        .args([std::ffi::OsStr::new("--root"), root.path().as_os_str()])
        .args([std::ffi::OsStr::new("--state-dir"), state.path().as_os_str()])
        .env_remove("TOOL_STORE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn the_streams_runner_without_a_redis_store_is_refused_saying_what_to_give() {
    assert_eq!(
        refused(&["--task-runner", "streams"]),
        "toolbox: `--task-runner streams` needs `--store redis://HOST:PORT/DB`: the queue of tasks lives in the Redis \
         every worker shares; pass --store, or use --task-runner local\n"
    );
}

#[test]
fn no_task_take_without_the_streams_runner_is_refused() {
    assert_eq!(
        refused(&["--no-task-take"]),
        "toolbox: `--no-task-take` needs `--task-runner streams`: with `local`, a worker runs the tasks it creates\n"
    );
}

#[test]
fn the_streams_runner_with_an_auth_issuer_is_refused_saying_why() {
    let args = ["--task-runner", "streams", "--store", "redis://127.0.0.1:1/0", "--auth-issuer", "http://127.0.0.1:1"];
    assert_eq!(
        refused(&args),
        "toolbox: `--task-runner streams` cannot be used with `--auth-issuer` yet: a queued task runs on another \
         worker without its caller's access token (its session and scopes); use `--task-runner local`\n"
    );
}

#[test]
fn a_task_key_file_shorter_than_32_bytes_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("short.key");
    std::fs::write(&key, [1u8; 16]).unwrap();
    let path = key.to_str().unwrap();
    assert_eq!(
        refused(&["--task-key-file", path]),
        format!("toolbox: --task-key-file {path}: a task key needs at least 32 bytes, got 16; give 32 random bytes\n")
    );
}
