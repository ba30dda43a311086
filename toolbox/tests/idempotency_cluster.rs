//! Idempotent retries on a cluster: a real `redis-server`, three `toolbox mcp --http
//! --idempotency` workers on it (`--store redis://...`, one `--idempotency-key-file`) and haproxy
//! round-robin in front (loopback only). The side-effecting call is `bash` appending a line to a
//! file of the shared workspace, so a test counts how often it ran. The first attempt goes to
//! worker 0 directly, so the test knows which worker to SIGKILL; every retry goes through the
//! balancer. Every process started here is stopped here (drop guards); every wait is bounded in
//! count.
//!
//! Needs `redis-server` and `haproxy` (`.ci/run` installs both with apt-get); without them the
//! test fails saying so.

#[path = "task_rpc/mod.rs"]
mod task_rpc;

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use task_rpc::request;
use test_support::haproxy;
use test_support::process::{Output, Running, TOOLBOX_SERVING, start_saying};
use test_support::redis_server::RedisServer;

/// The refusal of a retry while the first call with its key holds the lease.
const STILL_RUNNING: &str = "tool `bash` did not run again: the first call with this idempotency key is still running; \
                             retry later with the same key to get its result";

/// A worker: its process (SIGKILLed when dropped) and its address (`127.0.0.1:PORT`).
struct Worker {
    _process: Running,
    addr: String,
}

/// Redis, three workers sharing it and a workspace, haproxy in front.
struct Cluster {
    workers: Vec<Worker>,
    balancer: String,
    workspace: tempfile::TempDir,
    _redis: RedisServer,
    _haproxy: Running,
    _dirs: Vec<tempfile::TempDir>,
}

impl Cluster {
    /// Three workers whose running calls hold their keys for `lease_ms`, and whose retries
    /// answer at once (`--idempotency-wait-ms 0`).
    fn start(lease_ms: u64) -> Self {
        let redis = RedisServer::start();
        let workspace = tempfile::tempdir().unwrap();
        let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
        let key_file = dirs[3].path().join("idempotency.key");
        std::fs::write(&key_file, [7u8; 32]).unwrap();
        let workers: Vec<Worker> = (0..3)
            .map(|n| {
                let mut command = Command::new(env!("CARGO_BIN_EXE_toolbox"));
                command
                    .args(["mcp", "--http", "127.0.0.1:0", "--store", &redis.url(0), "--allow", "exec"])
                    .args([
                        "--idempotency",
                        "--idempotency-wait-ms",
                        "0",
                        "--idempotency-lease-ms",
                        &lease_ms.to_string(),
                    ])
                    .arg("--idempotency-key-file")
                    .arg(&key_file)
                    .arg("--root")
                    .arg(workspace.path())
                    .arg("--state-dir")
                    .arg(dirs[n].path());
                let started = start_saying(command, Output::Stderr, TOOLBOX_SERVING);
                let addr = started.said.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
                Worker { _process: started.process, addr }
            })
            .collect();
        let ports: Vec<u16> = workers.iter().map(|w| w.addr.rsplit(':').next().unwrap().parse().unwrap()).collect();
        let (haproxy, url) = haproxy::start(dirs[3].path(), &ports);
        let balancer = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
        Self { workers, balancer, workspace, _redis: redis, _haproxy: haproxy, _dirs: dirs }
    }

    /// The lines of the workspace's file `name` (none when it does not exist).
    fn lines(&self, name: &str) -> Vec<String> {
        task_rpc::lines(&self.workspace.path().join(name))
    }

    /// Waits until the workspace's file `name` has `count` lines ([`task_rpc::until_lines`]).
    fn until_lines(&self, name: &str, count: usize) {
        task_rpc::until_lines(&self.workspace.path().join(name), count);
    }
}

/// A `tools/call` of `bash` running `command` under the idempotency key `key`, sent to `addr`;
/// the JSON-RPC response.
fn bash(addr: &str, id: u64, command: &str, key: &str) -> Value {
    let params = json!({
        "name": "bash",
        "arguments": {"command": command},
        "_meta": {"tool-framework/idempotency-key": key},
    });
    request(addr, id, "tools/call", "bash", params)
}

/// The text of a call result's first content block, and whether it is an error.
fn text(response: &Value) -> (String, bool) {
    let result = &response["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {response}"));
    (text.to_owned(), result["isError"] == json!(true))
}

#[test]
fn retries_through_the_balancer_after_the_runners_kill_replay_its_result_and_the_effect_happens_once() {
    let mut cluster = Cluster::start(300_000);
    let command = "echo effect >> effects.txt; echo appended";
    let first = bash(&cluster.workers[0].addr, 1, command, "order-17");
    let (first_text, first_error) = text(&first);
    assert!(!first_error, "{first}");
    assert!(first_text.contains("appended"), "{first}");
    assert_eq!(cluster.lines("effects.txt"), ["effect"]);
    // SIGKILL of the worker that ran it, after its result was recorded in Redis.
    drop(cluster.workers.remove(0));
    for id in 2..6 {
        let retry = bash(&cluster.balancer, id, command, "order-17");
        assert_eq!(text(&retry), (first_text.clone(), false), "{retry}");
    }
    assert_eq!(cluster.lines("effects.txt"), ["effect"]);
}

#[test]
fn a_retry_through_the_balancer_with_a_new_key_runs_the_call_again() {
    let cluster = Cluster::start(300_000);
    let command = "echo effect >> effects.txt";
    assert!(!text(&bash(&cluster.workers[0].addr, 1, command, "order-17")).1);
    assert!(!text(&bash(&cluster.balancer, 2, command, "order-18")).1);
    assert_eq!(cluster.lines("effects.txt"), ["effect", "effect"]);
}

#[test]
fn a_retry_with_the_same_key_and_other_arguments_is_refused_without_running() {
    let cluster = Cluster::start(300_000);
    assert!(!text(&bash(&cluster.workers[0].addr, 1, "echo a >> effects.txt", "order-17")).1);
    let other = bash(&cluster.balancer, 2, "echo b >> effects.txt", "order-17");
    assert_eq!(
        text(&other),
        (
            "tool `bash` did not run: this idempotency key was used for a call with other arguments; send a new key \
             for new arguments, or the same arguments to get the first call's result"
                .to_owned(),
            true
        ),
        "{other}"
    );
    assert_eq!(cluster.lines("effects.txt"), ["a"]);
}

/// The design's promise when the worker dies before it records the result: the key stays held
/// until the lease (here 8 s) ends, retries meanwhile are told the call still runs, and the first
/// retry after it runs the tool again, since whether the dead worker's effect happened is not
/// known. The call is run at least once, not exactly once; its record then makes it exactly once
/// for every later retry.
#[test]
fn a_kill_before_the_result_is_recorded_holds_the_key_for_the_lease_then_a_retry_runs_the_call_again() {
    let mut cluster = Cluster::start(8_000);
    // The first run (no `slept` file yet) sleeps long enough to be killed mid-call; it makes
    // `slept` before it writes `start`, so a run after the kill does not sleep.
    let command = "if [ -e slept ]; then s=0; else s=60; fi; touch slept; echo start >> effects.txt; sleep $s; echo done >> effects.txt";
    let runner = cluster.workers[0].addr.clone();
    let command_of_thread = command.to_owned();
    // Its connection dies with the worker, so this thread's request panics: its result is not read.
    let _first = std::thread::spawn(move || bash(&runner, 1, &command_of_thread, "order-17"));
    cluster.until_lines("effects.txt", 1);
    drop(cluster.workers.remove(0));
    let during_lease = bash(&cluster.balancer, 2, command, "order-17");
    assert_eq!(text(&during_lease), (STILL_RUNNING.to_owned(), true), "{during_lease}");
    assert_eq!(cluster.lines("effects.txt"), ["start"]);
    // At most 200 retries 100 ms apart: the lease ends in about 8 s.
    let rerun = (3..203)
        .find_map(|id| {
            let retry = bash(&cluster.balancer, id, command, "order-17");
            if text(&retry) == (STILL_RUNNING.to_owned(), true) {
                std::thread::sleep(Duration::from_millis(100));
                return None;
            }
            Some(retry)
        })
        .expect("the lease never ended");
    assert!(!text(&rerun).1, "{rerun}");
    assert_eq!(cluster.lines("effects.txt"), ["start", "start", "done"]);
    // Recorded now: later retries replay it.
    let replayed = bash(&cluster.balancer, 300, command, "order-17");
    assert_eq!(text(&replayed), text(&rerun));
    assert_eq!(cluster.lines("effects.txt"), ["start", "start", "done"]);
}

/// Starts `toolbox mcp --http 127.0.0.1:0 --idempotency` with `args`, a root and a state directory
/// of its own; its standard error, after checking that it exited 1.
fn refused(args: &[&std::ffi::OsStr]) -> String {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let output = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--http", "127.0.0.1:0", "--idempotency"])
        .args(args)
        .args([std::ffi::OsStr::new("--root"), root.path().as_os_str()])
        .args([std::ffi::OsStr::new("--state-dir"), state.path().as_os_str()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn idempotency_on_a_redis_store_without_a_key_file_is_refused_saying_what_to_give() {
    let redis = RedisServer::start();
    let url = redis.url(0);
    assert_eq!(
        refused(&["--store".as_ref(), url.as_ref()]),
        "toolbox: `--idempotency` with `--store redis://...` needs `--idempotency-key-file FILE` (at least 32 random \
         bytes, the same file for every worker on that Redis): a key drawn by each worker would hide its records \
         from the others\n"
    );
}

#[test]
fn an_idempotency_key_file_shorter_than_32_bytes_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("short.key");
    std::fs::write(&key, [1u8; 16]).unwrap();
    assert_eq!(
        refused(&["--idempotency-key-file".as_ref(), key.as_os_str()]),
        format!(
            "toolbox: --idempotency-key-file {}: an idempotency server key needs at least 32 bytes, got 16; give 32 \
             random bytes\n",
            key.display()
        )
    );
}

#[test]
fn an_idempotency_flag_without_idempotency_is_a_usage_error() {
    let output =
        Command::new(env!("CARGO_BIN_EXE_toolbox")).args(["mcp", "--idempotency-wait-ms", "0"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the following required arguments were not provided:\n  --idempotency"), "{stderr}");
}

#[test]
fn with_the_file_store_one_worker_keeps_its_records_in_memory_and_runs_a_retried_call_once() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbox"));
    command
        .args(["mcp", "--http", "127.0.0.1:0", "--store", "file", "--allow", "exec", "--idempotency"])
        .arg("--root")
        .arg(root.path())
        .arg("--state-dir")
        .arg(state.path());
    let started = start_saying(command, Output::Stderr, TOOLBOX_SERVING);
    let addr = started.said.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let command = "echo effect >> effects.txt; echo appended";
    let first = bash(&addr, 1, command, "order-17");
    let retry = bash(&addr, 2, command, "order-17");
    assert_eq!(text(&retry), text(&first));
    assert_eq!(std::fs::read_to_string(root.path().join("effects.txt")).unwrap(), "effect\n");
}
