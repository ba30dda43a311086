//! Many workers, one state: a real `redis-server`, two `toolbox mcp --http` workers with
//! `--store redis://...`, and haproxy round-robin in front (its config written here into a temp
//! dir, loopback only), driven by the official Python MCP SDK (`workers_client.py` beside this
//! file). The workers' own logs (`-v`: one `tools/call` record per call) show which worker served
//! which call, so the test proves that a plan written on one worker is read on the other, and that
//! a ref cut on one is grepped on the other. Worker 1 is killed with SIGKILL half way through 200
//! calls; every call is answered or fails with an error, its retry succeeds, and no todo item is
//! lost. Every process started here is stopped here (Drop guards); every loop is bounded.
//!
//! Needs `redis-server` and `haproxy` (`.ci/run` installs both with apt-get) and the Python SDK
//! in `$TOOL_CONFORMANCE_PYTHON` (scripts/test.sh sets it); without them the test fails saying so.

use test_support::process::{Output, Running, TOOLBOX_SERVING, start_saying};
use test_support::{haproxy, python, redis_server};

use std::path::Path;
use std::process::Command;
use std::sync::mpsc;

use redis_server::RedisServer;

/// A worker: its process, its URL, and its log lines (read on a thread until it ends).
struct Worker {
    process: Running,
    url: String,
    log: mpsc::Receiver<String>,
}

impl Worker {
    /// A worker whose messages over 8 KiB are cut with a ref to the whole (a grep page is 40 KiB).
    fn start(store: &str, root: &Path, state_dir: &Path) -> Self {
        Self::start_with(store, root, state_dir, "8192")
    }

    /// A worker whose messages over `max_bytes` are cut.
    fn start_with(store: &str, root: &Path, state_dir: &Path, max_bytes: &str) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolbox"));
        command
            .args(["mcp", "-v", "--http", "127.0.0.1:0", "--store", store, "--session", "plan-1", "--root"])
            .arg(root)
            .arg("--state-dir")
            .arg(state_dir)
            .env("TOOL_MAX_BYTES", max_bytes);
        let started = start_saying(command, Output::Stderr, TOOLBOX_SERVING);
        Self { process: started.process, url: started.said, log: started.lines }
    }

    fn port(&self) -> u16 {
        self.url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/mcp").parse().expect("the worker's port")
    }

    /// The tools this worker was asked to call, in order, from its log so far.
    fn calls(&self) -> Vec<String> {
        self.log
            .try_iter()
            .filter(|line| line.contains("tools/call"))
            .filter_map(|line| {
                line.split_whitespace().find_map(|w| w.strip_prefix("tool=")).map(|t| t.trim_matches('"').to_owned())
            })
            .collect()
    }
}

/// Runs `workers_client.py` with `args`; returns its standard output.
fn run_client(args: &[&str]) -> String {
    python::run(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workers_client.py"), args)
}

#[test]
fn two_workers_behind_haproxy_share_plans_and_refs_and_survive_one_killed() {
    let redis = RedisServer::start();
    let workspace = tempfile::tempdir().unwrap();
    let notes: String = (0..1000).map(|n| format!("needle {n:04} {}\n", "x".repeat(100))).collect();
    std::fs::write(workspace.path().join("notes.txt"), notes).unwrap();
    let (state1, state2, haproxy_dir) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = redis.url(0);
    let worker1 = Worker::start(&store, workspace.path(), state1.path());
    let worker2 = Worker::start(&store, workspace.path(), state2.path());
    let (_haproxy, balancer) = haproxy::start(haproxy_dir.path(), &[worker1.port(), worker2.port()]);

    let pid = worker1.process.0.id().to_string();
    let stdout = run_client(&[&balancer, &worker1.url, &worker2.url, &pid]);
    println!("{stdout}");
    let checks: Vec<&str> =
        stdout.lines().filter(|l| l.starts_with("ok ")).map(|l| l.split(" (").next().unwrap()).collect();
    assert_eq!(
        checks,
        [
            "ok todo_new then todo_read through the balancer see one plan",
            "ok a grep result cut on one worker is read with tool_output_cache_grep on the other",
            "ok 50 concurrent todo_append on two workers leave all 50 items, each once",
            "ok 200 calls while worker 1 is killed half way: nothing lost",
        ],
        "{stdout}"
    );

    // Which worker served which call, by their own logs (each in call order). The first check's
    // calls come before any grep in each worker's log (each worker serves one of the three calls
    // of the second check).
    let calls = [worker1.calls(), worker2.calls()];
    let first_check: Vec<&[String]> =
        calls.iter().map(|c| &c[..c.iter().position(|t| t.contains("grep")).unwrap_or(c.len())]).collect();
    let (writer, reader) = only_one_has(&first_check, "todo_new");
    // Round robin: the write and the second read on one worker, the first read on the other.
    assert_eq!(first_check[writer], ["todo_new", "todo_read"], "{calls:?}");
    assert_eq!(first_check[reader], ["todo_read"], "the plan was not read on the other worker: {calls:?}");
    let greps: Vec<Vec<&String>> = calls.iter().map(|c| c.iter().filter(|t| t.contains("grep")).collect()).collect();
    let cutter = (0..2).find(|&w| greps[w].first().is_some_and(|t| *t == "grep")).expect("a grep call");
    assert_eq!(greps[1 - cutter], ["tool_output_cache_grep"], "the ref was not read on the other worker: {calls:?}");
    // The 50 concurrent appends went to each worker directly, 25 each, before the 200 calls.
    assert!(calls.iter().all(|c| c.iter().filter(|t| *t == "todo_append").count() >= 25), "{calls:?}");
}

/// The index of the only log among two whose calls include `tool`, and the other's.
fn only_one_has(calls: &[&[String]], tool: &str) -> (usize, usize) {
    let has = |w: usize| calls[w].iter().filter(|c| *c == tool).count();
    assert_eq!(has(0) + has(1), 1, "{tool} calls: {calls:?}");
    if has(0) == 1 { (0, 1) } else { (1, 0) }
}

/// `toolbox call` with `--store` (or `TOOL_STORE`) naming a Redis nobody listens on: the read
/// works, the todo tool answers an error naming the store and what to check, and nothing panics.
#[test]
fn a_redis_that_is_down_fails_only_the_tools_that_need_the_store() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("a.txt"), "hello\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let url = format!("redis://127.0.0.1:{}/0", redis_server::closed_port());
    let call = |tool: &str, args: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_toolbox"))
            .arg("--root")
            .arg(workspace.path())
            .arg("--state-dir")
            .arg(state.path())
            .args(["call", tool, args])
            .env("TOOL_STORE", &url)
            .output()
            .unwrap();
        let message: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        (
            output.status.code(),
            message["is_error"].as_bool(),
            message["content"].as_str().unwrap_or_default().to_owned(),
        )
    };
    let (code, is_error, content) = call("read", r#"{"file_path":"a.txt"}"#);
    assert_eq!((code, is_error), (Some(0), Some(false)), "{content}");
    assert!(content.contains("hello"), "{content}");
    let (code, is_error, content) = call("todo_read", "{}");
    assert_eq!((code, is_error), (Some(1), Some(true)), "{content}");
    let prefix = format!("the redis session store at {url} failed (");
    assert!(content.starts_with(&prefix), "{content}");
    assert!(content.ends_with("check that redis-server runs there and accepts connections, or choose another store with `--store` or `TOOL_STORE`"), "{content}");
}

/// A `toolbox mcp --http` worker whose Redis is down keeps serving: the Python SDK's `read` and
/// `glob` are answered, `todo_read` is an error naming the store and what to check.
#[test]
fn a_server_whose_redis_is_down_keeps_serving_the_tools_that_need_no_store() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "needle 0000\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let store = format!("redis://127.0.0.1:{}/0", redis_server::closed_port());
    let worker = Worker::start(&store, workspace.path(), state.path());
    let stdout = run_client(&["down", &worker.url, &store]);
    assert_eq!(stdout.trim(), "ok with redis down, read and glob answer and todo_read names the store");
}

/// Retried changes apply once: through haproxy to two workers on one Redis, 100 `todo_append`
/// calls with an `idempotency_key` each. Redis is stopped (SIGSTOP) under one batch for longer
/// than a worker waits for its reply, worker 1 is killed while its calls of that batch wait, and
/// Redis is continued (SIGCONT): those calls fail, and the writes they sent may still be applied.
/// Every failed call is retried with the same key, and every item is in the plan exactly once
/// (`workers_client.py retries`).
#[test]
fn keyed_appends_retried_through_a_stopped_redis_and_a_killed_worker_apply_once() {
    let redis = RedisServer::start();
    let workspace = tempfile::tempdir().unwrap();
    let (state1, state2, haproxy_dir) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = redis.url(0);
    // Plans of 1,100 items are read whole (about 40 KiB).
    let worker1 = Worker::start_with(&store, workspace.path(), state1.path(), "1048576");
    let worker2 = Worker::start_with(&store, workspace.path(), state2.path(), "1048576");
    let (_haproxy, balancer) = haproxy::start(haproxy_dir.path(), &[worker1.port(), worker2.port()]);

    let (redis_pid, worker1_pid) = (redis.pid().to_string(), worker1.process.0.id().to_string());
    let stdout = run_client(&["retries", &balancer, &redis_pid, &worker1_pid]);
    println!("{stdout}");
    let checks: Vec<&str> =
        stdout.lines().filter(|l| l.starts_with("ok ")).map(|l| l.split(" (").next().unwrap()).collect();
    assert_eq!(checks, ["ok 100 keyed appends through a stopped redis and a killed worker: each once"], "{stdout}");
    // Both workers served appends before worker 1 was killed.
    let calls = [worker1.calls(), worker2.calls()];
    assert!(calls.iter().all(|c| c.iter().any(|t| t == "todo_append")), "{calls:?}");
}

/// Resource locks across workers: two workers on one Redis, 20 `edit` calls of one file sent at
/// once, 10 to each worker directly, each upper-casing its own line (`workers_client.py edits`).
/// Each `edit` holds the file's lock in Redis while it runs, so every edit applies; without the
/// shared lock, edits read the file before another's write and lose it.
#[test]
fn twenty_parallel_edits_of_one_file_on_two_workers_all_apply() {
    let redis = RedisServer::start();
    let workspace = tempfile::tempdir().unwrap();
    let lines: String = (0..20).map(|n| format!("line {n}\n")).collect();
    std::fs::write(workspace.path().join("edits.txt"), lines).unwrap();
    let (state1, state2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = redis.url(0);
    let worker1 = Worker::start(&store, workspace.path(), state1.path());
    let worker2 = Worker::start(&store, workspace.path(), state2.path());

    let stdout = run_client(&["edits", &worker1.url, &worker2.url]);
    assert_eq!(stdout.trim(), "ok 20 parallel edits of one file on two workers all apply");
    let expected: String = (0..20).map(|n| format!("LINE {n}\n")).collect();
    assert_eq!(std::fs::read_to_string(workspace.path().join("edits.txt")).unwrap(), expected);
    let edits = [worker1.calls(), worker2.calls()].map(|calls| calls.iter().filter(|t| *t == "edit").count());
    assert_eq!(edits, [10, 10]);
}
