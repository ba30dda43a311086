//! MCP tasks on a cluster: a real `redis-server`, three `toolbox mcp --http --task exec` workers
//! on it (`--store redis://...`, a task lease of 5 s) and haproxy round-robin in front (its config
//! written here into a temp dir, loopback only). The tasks are `bash` commands whose effects are
//! lines appended to files of the workspace, so that a test counts how often each ran. A worker
//! running a task is found by its own log (`-v`: `task created task=ID…`, the id's first 8
//! characters). Every process started
//! here is stopped here (drop guards); every wait is bounded in count.
//!
//! Needs `redis-server` and `haproxy` (`.ci/run` installs both with apt-get); without them the
//! test fails saying so.

#[path = "task_rpc/mod.rs"]
mod task_rpc;

use task_rpc::{request, request_of};
use test_support::process::{Output, Running, TOOLBOX_SERVING, start_saying};
use test_support::{haproxy, procs, redis_server};

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis_server::RedisServer;
use serde_json::{Value, json};
use tool_mcp::tasks::LoggedTaskId;

/// A worker: its process, its address, and its log so far (read on a thread until it ends).
struct Worker {
    /// Killed when the worker is dropped.
    _process: Running,
    addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Worker {
    fn start(store: &str, root: &Path, state: &Path, extra: &[&str]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolbox"));
        command
            .args(["-v", "mcp", "--http", "127.0.0.1:0", "--store", store, "--allow", "exec", "--task", "exec"])
            .args(["--task-lease-ms", "5000"])
            .args(extra)
            .arg("--root")
            .arg(root)
            .arg("--state-dir")
            .arg(state);
        let started = start_saying(command, Output::Stderr, TOOLBOX_SERVING);
        let log = Arc::new(Mutex::new(Vec::new()));
        let kept = log.clone();
        let lines = started.lines;
        std::thread::spawn(move || {
            for line in lines {
                kept.lock().unwrap().push(line);
            }
        });
        let addr = started.said.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
        Self { _process: started.process, addr, log }
    }

    /// `true` when this worker's log has a line with `text` and the task `id` (as a log names a
    /// task: `tool_mcp::tasks::LoggedTaskId`, the id's first 8 characters).
    fn logged(&self, text: &str, id: &str) -> bool {
        let task = format!("task={}", LoggedTaskId(id));
        self.log.lock().unwrap().iter().any(|line| line.contains(text) && line.contains(&task))
    }

    /// `true` when this worker's log says it created (and so ran) the task `id`.
    fn created(&self, id: &str) -> bool {
        let needle = format!("task created task={}", LoggedTaskId(id));
        self.log.lock().unwrap().iter().any(|line| line.contains(&needle))
    }
}

/// haproxy round robin over `workers` ([`haproxy::start`]); its address (`127.0.0.1:PORT`).
fn balance(dir: &Path, workers: &[Worker]) -> (Running, String) {
    let ports: Vec<u16> =
        workers.iter().map(|w| w.addr.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port")).collect();
    let (running, url) = haproxy::start(dir, &ports);
    (running, url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned())
}

/// A cluster: Redis, three workers sharing it and a workspace, haproxy in front.
struct Cluster {
    workers: Vec<Worker>,
    balancer: String,
    workspace: tempfile::TempDir,
    redis: RedisServer,
    _haproxy: Running,
    _dirs: Vec<tempfile::TempDir>,
}

impl Cluster {
    fn start(extra: &[&str]) -> Self {
        Self::start_with(3, extra)
    }

    /// A cluster of `count` workers started with `extra` arguments.
    fn start_with(count: usize, extra: &[&str]) -> Self {
        let redis = RedisServer::start();
        let workspace = tempfile::tempdir().unwrap();
        let dirs: Vec<_> = (0..=count).map(|_| tempfile::tempdir().unwrap()).collect();
        let workers: Vec<Worker> =
            (0..count).map(|n| Worker::start(&redis.url(0), workspace.path(), dirs[n].path(), extra)).collect();
        let (haproxy, balancer) = balance(dirs[count].path(), &workers);
        Self { workers, balancer, workspace, redis, _haproxy: haproxy, _dirs: dirs }
    }

    /// The lines of the workspace's file `name` (none when it does not exist).
    fn lines(&self, name: &str) -> Vec<String> {
        task_rpc::lines(&self.workspace.path().join(name))
    }

    /// Waits until the workspace's file `name` has `count` lines ([`task_rpc::until_lines`]).
    fn until_lines(&self, name: &str, count: usize) {
        task_rpc::until_lines(&self.workspace.path().join(name), count);
    }

    /// The index of the worker that runs the task `id` (by its log: `task running here`).
    fn runner(&self, id: &str) -> usize {
        for _ in 0..250 {
            if let Some(n) = self.workers.iter().position(|w| w.logged("task running here", id)) {
                return n;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("no worker's log says it runs task {id}");
    }

    /// Starts `command` as a bash task through the balancer; its task id.
    fn bash_task(&self, id: u64, command: &str) -> String {
        let call = json!({"name": "bash", "arguments": {"command": command}});
        let created = request(&self.balancer, id, "tools/call", "bash", call);
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        created["result"]["taskId"].as_str().unwrap().to_owned()
    }

    /// `tasks/get` of `task` through the balancer until it is no longer `working` (at most 400
    /// polls, 50 ms apart); the task.
    fn settled(&self, task: &str) -> Value {
        self.settled_every(task, Duration::from_millis(50))
    }

    /// As [`settled`](Self::settled), polls `pause` apart (at most 20 s of pauses).
    fn settled_every(&self, task: &str, pause: Duration) -> Value {
        let polls = (Duration::from_secs(20).as_millis() / pause.as_millis().max(1)) as u64;
        for i in 0..polls {
            let got = request(&self.balancer, 1000 + i, "tasks/get", task, json!({"taskId": task}));
            if got["result"]["status"] != "working" {
                return got["result"].clone();
            }
            std::thread::sleep(pause);
        }
        panic!("task {task} still working after {polls} polls");
    }
}

/// A command appending `start` to `file`, sleeping `secs`, then appending `done`.
fn start_sleep_done(file: &str, secs: u32) -> String {
    format!("echo start >> {file}; sleep {secs}; echo done >> {file}")
}

#[test]
fn a_task_whose_worker_is_killed_fails_saying_it_may_have_had_effects_and_never_runs_again() {
    let mut cluster = Cluster::start(&[]);
    let task = cluster.bash_task(1, &start_sleep_done("runs.txt", 4));
    cluster.until_lines("runs.txt", 1);
    let runner = cluster.runner(&task);
    cluster.workers.remove(runner);
    let failed = cluster.settled(&task);
    assert_eq!(failed["status"], "failed", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap();
    let (head, tail) = message.split_once(" (its lease lapsed at ").unwrap_or_else(|| panic!("{message}"));
    assert_eq!(head, "the worker running this task stopped before it finished");
    assert!(
        tail.ends_with(
            "); the call may have had effects, so it was not run again: check what it changed, then call the tool again"
        ),
        "{message}"
    );
    assert_eq!(failed["error"]["code"], -32603);
    assert_eq!(cluster.lines("runs.txt"), ["start"]);
}

#[test]
fn a_killed_workers_task_is_settled_by_another_workers_sweep_without_any_read() {
    let mut cluster = Cluster::start(&[]);
    let task = cluster.bash_task(1, &start_sleep_done("runs.txt", 30));
    cluster.until_lines("runs.txt", 1);
    let runner = cluster.runner(&task);
    cluster.workers.remove(runner);
    // The lease (5 s) lapses, then a sweep (every 1.9 to 3.1 s) of one of the others fails it.
    let swept = (0..1000).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        cluster.workers.iter().any(|w| w.logged("task's runner lapsed: failed", &task))
    });
    assert!(swept, "no worker's sweep settled the task");
    let failed = request(&cluster.balancer, 2, "tasks/get", &task, json!({"taskId": task}));
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    assert_eq!(cluster.lines("runs.txt"), ["start"]);
}

#[test]
fn a_retry_safe_task_whose_worker_is_killed_runs_again_on_another_worker_and_completes() {
    let mut cluster = Cluster::start(&["--task-retry", "exec"]);
    let task = cluster.bash_task(1, &start_sleep_done("runs.txt", 2));
    cluster.until_lines("runs.txt", 1);
    let runner = cluster.runner(&task);
    cluster.workers.remove(runner);
    let done = cluster.settled(&task);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    // The killed run's shell died with its worker; the rerun ran from the start.
    assert_eq!(cluster.lines("runs.txt"), ["start", "start", "done"]);
}

#[test]
fn a_cancel_through_the_balancer_stops_the_tool_on_whichever_worker_runs_it() {
    let cluster = Cluster::start(&[]);
    let command = format!("{}; sleep 30; echo done >> cancelled.txt", procs::write_pid("pid.txt"));
    let task = cluster.bash_task(1, &command);
    cluster.until_lines("pid.txt", 1);
    let pid: u32 = cluster.lines("pid.txt")[0].parse().unwrap();
    assert!(procs::running(pid));
    let ack = request(&cluster.balancer, 2, "tasks/cancel", &task, json!({"taskId": task}));
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let stopped = (0..250).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        !procs::running(pid)
    });
    assert!(stopped, "the shell of the cancelled task still runs");
    assert_eq!(cluster.settled(&task)["status"], "cancelled");
    assert_eq!(cluster.lines("cancelled.txt"), Vec::<String>::new());
}

#[test]
fn redis_stopped_and_continued_mid_lease_loses_nothing_and_runs_nothing_twice() {
    let cluster = Cluster::start(&[]);
    let task = cluster.bash_task(1, &start_sleep_done("runs.txt", 2));
    cluster.until_lines("runs.txt", 1);
    let redis = cluster.redis.pid().to_string();
    let signal = |name: &str| {
        let status = Command::new("kill").args([name, &redis]).status().unwrap();
        assert!(status.success(), "kill {name} {redis}");
    };
    signal("-STOP");
    std::thread::sleep(Duration::from_millis(1000));
    signal("-CONT");
    let done = cluster.settled(&task);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(cluster.lines("runs.txt"), ["start", "done"]);
}

#[test]
fn two_hundred_tasks_over_three_workers_each_run_exactly_once() {
    let cluster = Cluster::start(&[]);
    let mut tasks = Vec::new();
    // In rounds of 30 (about 10 a worker), under each worker's 16 running tasks of one caller.
    for round in 0..7u64 {
        let batch: Vec<String> = (round * 30..(round * 30 + 30).min(200))
            .map(|n| cluster.bash_task(n + 1, &format!("echo {n} >> effects.txt")))
            .collect();
        for task in &batch {
            let done = cluster.settled(task);
            assert_eq!((&done["status"], &done["result"]["isError"]), (&json!("completed"), &json!(false)), "{done}");
        }
        tasks.extend(batch);
    }
    assert_eq!(tasks.len(), 200);
    let mut effects: Vec<u64> = cluster.lines("effects.txt").iter().map(|l| l.parse().unwrap()).collect();
    effects.sort_unstable();
    assert_eq!(effects, (0..200).collect::<Vec<_>>());
    // Every worker ran some.
    for worker in &cluster.workers {
        assert!(tasks.iter().any(|t| worker.created(t)), "a worker ran none of the tasks");
    }
}

#[test]
fn eight_concurrent_updates_with_the_same_approval_over_two_workers_all_complete_and_the_task_runs_once() {
    let cluster = Cluster::start_with(2, &["--confirm", "exec"]);
    let asker = json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let call = json!({"name": "bash", "arguments": {"command": "echo ran >> runs.txt"}});
    let created = request_of(&cluster.balancer, 1, "tools/call", "bash", call, asker.clone());
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    let asked = cluster.settled(&task);
    assert_eq!(asked["status"], "input_required", "{asked}");
    let key = asked["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let answer = json!({"taskId": task, "inputResponses": {key: {"action": "accept", "content": {}}}});
    // Four updates to each worker at once, straight to the worker (not round robin).
    let acks: Vec<Value> = std::thread::scope(|scope| {
        let updates: Vec<_> = (0..8u64)
            .map(|n| {
                let (addr, answer, asker, task) = (&cluster.workers[n as usize % 2].addr, &answer, &asker, &task);
                scope.spawn(move || request_of(addr, 10 + n, "tasks/update", task, answer.clone(), asker.clone()))
            })
            .collect();
        updates.into_iter().map(|update| update.join().unwrap()).collect()
    });
    for ack in &acks {
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    }
    let done = cluster.settled(&task);
    assert_eq!((&done["status"], &done["result"]["isError"]), (&json!("completed"), &json!(false)), "{done}");
    assert_eq!(cluster.lines("runs.txt"), ["ran"]);
}

#[test]
fn with_the_streams_runner_a_task_accepted_by_one_worker_runs_on_another() {
    let redis = RedisServer::start();
    let workspace = tempfile::tempdir().unwrap();
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let (root, store) = (workspace.path(), redis.url(0));
    // The front worker queues the tasks it accepts and takes none; the two others take them.
    let front = Worker::start(&store, root, dirs[0].path(), &["--task-runner", "streams", "--no-task-take"]);
    let backs: Vec<Worker> =
        (1..3).map(|n| Worker::start(&store, root, dirs[n].path(), &["--task-runner", "streams"])).collect();
    let call = json!({"name": "bash", "arguments": {"command": "echo ran >> runs.txt"}});
    let created = request(&front.addr, 1, "tools/call", "bash", call);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    let mut done = Value::Null;
    for i in 0..400 {
        done = request(&front.addr, 100 + i, "tasks/get", &task, json!({"taskId": task}))["result"].clone();
        if done["status"] != "working" {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!((&done["status"], &done["result"]["isError"]), (&json!("completed"), &json!(false)), "{done}");
    assert_eq!(task_rpc::lines(&root.join("runs.txt")), ["ran"]);
    let ran_on: Vec<bool> = backs.iter().map(|w| w.logged("task running here", &task)).collect();
    assert_eq!(ran_on.iter().filter(|ran| **ran).count(), 1, "{ran_on:?}");
    assert!(!front.logged("task running here", &task), "the front worker ran the task");
    assert!(front.logged("task created and queued", &task));
    assert_eq!(redis.cli(&["XLEN", "tool:task:queue"]), ["0"]);
}

/// The bench of BENCHMARKS.md ("MCP tasks on a cluster"), not run by `cargo test`: for each task
/// runner (`--task-runner local`, then `streams`), tasks created and completed per second through
/// one worker and through three on one Redis (a `read` of a small file as a task; rounds of 15
/// tasks a worker, each task created and polled by a client thread of its own, every 20 ms), and
/// the time from killing the worker that runs a retry-safe task to that task completed on
/// another. Prints its figures.
#[test]
#[ignore = "a benchmark: cargo test -p toolbox --test task_cluster -- --ignored --nocapture"]
fn bench_tasks_per_second_and_reclaim_time() {
    for runner in ["local", "streams"] {
        for workers in [1, 3] {
            let extra = ["--task", "read_only", "--task-retry", "exec", "--task-runner", runner];
            let cluster = Cluster::start_with(workers, &extra);
            std::fs::write(cluster.workspace.path().join("a.txt"), "one line\n").unwrap();
            let (total, batch) = (600u64, 15 * workers as u64);
            let started = std::time::Instant::now();
            // One client thread per task of a round: each creates its task and polls it until done.
            for round in 0..total / batch {
                std::thread::scope(|scope| {
                    for n in 0..batch {
                        let cluster = &cluster;
                        scope.spawn(move || {
                            let call = json!({"name": "read", "arguments": {"file_path": "a.txt"}});
                            let created = request(&cluster.balancer, round * batch + n, "tools/call", "read", call);
                            let task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}"));
                            let done = cluster.settled_every(task, Duration::from_millis(20));
                            assert_eq!(done["status"], "completed", "{done}");
                        });
                    }
                });
            }
            let elapsed = started.elapsed();
            println!(
                "--task-runner {runner}, {workers} worker(s): {total} tasks created and completed in {elapsed:.2?}: \
                 {:.0} tasks/s",
                total as f64 / elapsed.as_secs_f64()
            );
        }
        let mut cluster = Cluster::start_with(3, &["--task-retry", "exec", "--task-runner", runner]);
        let task = cluster.bash_task(1, "if [ -e marker ]; then echo again; else touch marker; sleep 60; fi");
        for _ in 0..500 {
            if cluster.workspace.path().join("marker").exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let runner_index = cluster.runner(&task);
        let killed = std::time::Instant::now();
        cluster.workers.remove(runner_index);
        let done = cluster.settled_every(&task, Duration::from_millis(50));
        assert_eq!(done["status"], "completed", "{done}");
        println!(
            "--task-runner {runner}: reclaim after a kill (lease 5000 ms, a poll every 50 ms): {:.2?}",
            killed.elapsed()
        );
    }
}
