//! The Redis Streams task runner ([`RedisStreamsRunner`]) on a real `redis-server`: several
//! servers (workers) in this process share one task store (a [`MemoryTaskStore`] behind an
//! `Arc`, as workers share Redis) and one stream. Each worker's context hook names it in the
//! call's session id, so a tool says which worker ran it. Every wait is bounded in count.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use test_support::redis_server::RedisServer;
use tool_mcp::McpServer;
use tool_mcp::runner::{DEFAULT_QUEUE_NAMESPACE, RedisStreamsRunner};
use tool_mcp::tasks::{MemoryTaskStore, TaskLease, TaskRecord, TaskStore, TaskStoreError};
use tool_runtime::{BoxFuture, Registry, Secret, ToolContext, tool};

use common::{Running, rpc};

/// The lease of these tests' workers: 600 ms, so a reclaim comes within about a second.
const LEASE: Duration = Duration::from_millis(600);

/// How many times a test reads a task while waiting for it to change, 20 ms apart (10 s).
const POLLS: usize = 500;

/// Say which worker runs this.
#[tool(tags(task))]
fn whereami(ctx: &ToolContext) -> String {
    ctx.session_id().unwrap_or("none").to_owned()
}

static EFFECTS: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// Record `n` once per run.
#[tool(tags(task))]
fn effect(n: u64) -> String {
    EFFECTS.lock().unwrap().push(n);
    format!("did {n}")
}

static CANCELLED_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Count its runs (the cancelled task's test).
#[tool(tags(task))]
fn count_cancelled() -> String {
    format!("run {}", CANCELLED_RUNS.fetch_add(1, Ordering::SeqCst) + 1)
}

static RECLAIMED_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Count its runs; safe to run again (the reclaim's tests).
#[tool(tags(task, retry_safe))]
fn count_reclaimed(ctx: &ToolContext) -> String {
    RECLAIMED_RUNS.fetch_add(1, Ordering::SeqCst);
    ctx.session_id().unwrap_or("none").to_owned()
}

/// Use a token; say which worker ran this.
#[tool(tags(task))]
fn with_token(
    ctx: &ToolContext,
    /// The token.
    token: Secret<String>,
) -> String {
    format!("{} used {} token bytes", ctx.session_id().unwrap_or("none"), token.expose().len())
}

/// One task store shared by the workers of a test.
#[derive(Clone, Default)]
struct Shared(Arc<MemoryTaskStore>);

impl TaskStore for Shared {
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        self.0.insert(record)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        self.0.get(id)
    }

    fn replace(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
        self.0.replace(record)
    }

    fn working(&self, limit: usize) -> BoxFuture<'_, Result<Vec<String>, TaskStoreError>> {
        self.0.working(limit)
    }
}

/// A worker named `name` on `store` and the stream of `redis`, taking tasks or not.
async fn worker(name: &'static str, store: &Shared, redis: &RedisServer, takes: bool) -> Running {
    worker_with(name, store, redis, takes, |builder| builder).await
}

/// As [`worker`], its builder changed by `configure`.
async fn worker_with(
    name: &'static str,
    store: &Shared,
    redis: &RedisServer,
    takes: bool,
    configure: impl FnOnce(tool_mcp::McpServerBuilder) -> tool_mcp::McpServerBuilder,
) -> Running {
    let registry = Registry::builder()
        .tool(whereami::TOOL)
        .tool(effect::TOOL)
        .tool(count_cancelled::TOOL)
        .tool(count_reclaimed::TOOL)
        .tool(with_token::TOOL)
        .tool(hang_first::TOOL)
        .tool(outlast_leases::TOOL)
        .build()
        .unwrap();
    let runner = RedisStreamsRunner::open(&redis.url(0), DEFAULT_QUEUE_NAMESPACE).unwrap().takes(takes);
    let builder = McpServer::builder(registry)
        .context(move |_, ctx| Ok(ctx.session_id(name)))
        .task_store(store.clone())
        .task_lease(LEASE)
        .task_runner(runner);
    Running::start(configure(builder).build()).await
}

fn with_tasks() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// Calls `tool` on `running` as a task; its id.
async fn create(running: &Running, tool: &str, arguments: Value) -> String {
    let created = rpc(running, "tools/call", json!({"name": tool, "arguments": arguments}), &with_tasks(), None).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    assert_eq!(created["result"]["status"], "working", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

/// Reads the task on `running` until it is no longer `working` (at most [`POLLS`] times).
async fn settled(running: &Running, id: &str) -> Value {
    for _ in 0..POLLS {
        let got = rpc(running, "tasks/get", json!({"taskId": id}), &with_tasks(), None).await;
        if got["result"]["status"] != "working" {
            return got["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} stayed working");
}

/// The text of a completed task's result.
fn text(task: &Value) -> &str {
    assert_eq!(task["status"], "completed", "{task}");
    task["result"]["content"][0]["text"].as_str().unwrap()
}

/// Waits until the stream holds no entry (at most [`POLLS`] reads); `false` when it still does.
async fn until_queue_empty(redis: &RedisServer) -> bool {
    for _ in 0..POLLS {
        if redis.cli(&["XLEN", "tool:task:queue"]) == ["0"] {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_created_on_a_worker_that_takes_none_runs_on_another_worker() {
    let redis = RedisServer::start();
    let store = Shared::default();
    let front = worker("front", &store, &redis, false).await;
    let back = worker("back", &store, &redis, true).await;
    let id = create(&front, "whereami", json!({})).await;
    assert_eq!(text(&settled(&front, &id).await), "back");
    assert!(until_queue_empty(&redis).await, "the settled task's entry is still queued");
    front.stop().await;
    back.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_task_runs_exactly_once_across_three_workers() {
    let redis = RedisServer::start();
    let store = Shared::default();
    let workers = [
        worker("w1", &store, &redis, true).await,
        worker("w2", &store, &redis, true).await,
        worker("w3", &store, &redis, true).await,
    ];
    let mut ids = Vec::new();
    for n in 0..30u64 {
        ids.push((n, create(&workers[(n % 3) as usize], "effect", json!({"n": n})).await));
    }
    for (n, id) in &ids {
        assert_eq!(text(&settled(&workers[0], id).await), format!("did {n}"));
    }
    let mut effects = EFFECTS.lock().unwrap().clone();
    effects.sort_unstable();
    assert_eq!(effects, (0..30).collect::<Vec<_>>());
    assert!(until_queue_empty(&redis).await, "settled tasks' entries are still queued");
    for running in workers {
        running.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_task_cancelled_before_any_worker_takes_it_never_starts() {
    let redis = RedisServer::start();
    let store = Shared::default();
    let front = worker("front", &store, &redis, false).await;
    let id = create(&front, "count_cancelled", json!({})).await;
    let ack = rpc(&front, "tasks/cancel", json!({"taskId": id}), &with_tasks(), None).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    assert_eq!(redis.cli(&["XLEN", "tool:task:queue"]), ["1"]);
    // A worker that takes tasks reads the entry, finds the record cancelled, and settles it.
    let back = worker("back", &store, &redis, true).await;
    assert!(until_queue_empty(&redis).await, "the cancelled task's entry was never settled");
    assert_eq!(CANCELLED_RUNS.load(Ordering::SeqCst), 0);
    let got = rpc(&back, "tasks/get", json!({"taskId": id}), &with_tasks(), None).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    front.stop().await;
    back.stop().await;
}

/// Milliseconds since the Unix epoch now.
fn now_ms() -> u64 {
    u64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_a_stopped_consumer_took_are_reclaimed_within_the_bound_and_run_once() {
    let redis = RedisServer::start();
    let store = Shared::default();
    // A worker `gone` took two tasks from the stream and stopped: one before it started it (no
    // lease), one mid-run (its lease lapsed). Their entries are pending under its name.
    let untaken = TaskRecord::new("untaken", "count_reclaimed", "{}", None, now_ms(), 3_600_000);
    let mid_run = TaskRecord {
        lease: Some(TaskLease { worker: "gone".to_owned(), until_ms: now_ms() }),
        ..TaskRecord::new("mid-run", "count_reclaimed", "{}", None, now_ms(), 3_600_000)
    };
    for record in [untaken, mid_run] {
        store.insert(record.clone()).await.unwrap();
    }
    redis.cli(&["XGROUP", "CREATE", "tool:task:queue", "workers", "0", "MKSTREAM"]);
    redis.cli(&["XADD", "tool:task:queue", "*", "task", "untaken"]);
    redis.cli(&["XADD", "tool:task:queue", "*", "task", "mid-run"]);
    let taken = redis.cli(&["XREADGROUP", "GROUP", "workers", "gone", "COUNT", "2", "STREAMS", "tool:task:queue", ">"]);
    assert_eq!(taken.iter().filter(|line| line.as_str() == "task").count(), 2, "{taken:?}");
    // Idle for a lease, found by a sweep at most 0.625 leases later (the bench measures it).
    let live = worker("live", &store, &redis, true).await;
    for id in ["untaken", "mid-run"] {
        assert_eq!(text(&settled(&live, id).await), "live");
    }
    assert!(until_queue_empty(&redis).await, "the reclaimed tasks' entries are still queued");
    assert_eq!(RECLAIMED_RUNS.load(Ordering::SeqCst), 2);
    live.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_with_a_secret_argument_runs_on_the_worker_that_created_it_and_is_not_queued() {
    let redis = RedisServer::start();
    let store = Shared::default();
    // The front takes no task from the queue: only running it itself completes the task.
    let front = worker("front", &store, &redis, false).await;
    let back = worker("back", &store, &redis, true).await;
    let id = create(&front, "with_token", json!({"token": "s3cret"})).await;
    assert_eq!(text(&settled(&front, &id).await), "front used 6 token bytes");
    assert_eq!(redis.cli(&["XLEN", "tool:task:queue"]), ["0"]);
    front.stop().await;
    back.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_cannot_be_queued_fails_saying_why_and_nothing_runs() {
    let redis = RedisServer::start();
    let store = Shared::default();
    let registry = Registry::builder().tool(whereami::TOOL).build().unwrap();
    let runner = RedisStreamsRunner::open(&redis.url(0), "capped").unwrap().takes(false).max_queued(1);
    let front =
        Running::start(McpServer::builder(registry).task_store(store.clone()).task_runner(runner).build()).await;
    create(&front, "whereami", json!({})).await;
    let refused = rpc(&front, "tools/call", json!({"name": "whereami", "arguments": {}}), &with_tasks(), None).await;
    assert_eq!(
        refused["error"],
        json!({"code": -32603, "message": "the task store failed: the task queue capped:queue holds 1 entries, its \
               cap; wait for tasks to end, or raise the cap (RedisStreamsRunner::max_queued)"})
    );
    assert_eq!(redis.cli(&["XLEN", "capped:queue"]), ["1"]);
    front.stop().await;
}

static STARTS: AtomicUsize = AtomicUsize::new(0);

/// Hang on its first run (until its worker dies); say which worker ran it after. Safe to run
/// again.
#[tool(tags(task, retry_safe))]
async fn hang_first(ctx: &ToolContext) -> String {
    if STARTS.fetch_add(1, Ordering::SeqCst) == 0 {
        std::future::pending::<()>().await;
    }
    ctx.session_id().unwrap_or("none").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_killed_mid_run_is_reclaimed_by_another_worker_that_runs_it_again() {
    let redis = RedisServer::start();
    let store = Shared::default();
    let front = worker("front", &store, &redis, false).await;
    // The worker that takes the task runs on a runtime of its own, which the test then drops
    // at once, as a kill would: its run, its lease renewals and its holds all stop.
    let (url, doomed_store) = (redis.url(0), store.clone());
    let doomed = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let server = runtime.block_on(async {
            let registry = Registry::builder().tool(hang_first::TOOL).build().unwrap();
            let runner = RedisStreamsRunner::open(&url, DEFAULT_QUEUE_NAMESPACE).unwrap();
            McpServer::builder(registry)
                .context(|_, ctx| Ok(ctx.session_id("doomed")))
                .task_store(doomed_store)
                .task_lease(LEASE)
                .task_runner(runner)
                .build()
        });
        (runtime, server)
    })
    .join()
    .unwrap();
    let id = create(&front, "hang_first", json!({})).await;
    for _ in 0..POLLS {
        if STARTS.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(STARTS.load(Ordering::SeqCst), 1, "the doomed worker never started the task");
    let (runtime, server) = doomed;
    runtime.shutdown_background();
    // Another worker takes it over once its lease lapsed and runs it again from the start.
    let survivor = worker("survivor", &store, &redis, true).await;
    assert_eq!(text(&settled(&front, &id).await), "survivor");
    assert_eq!(STARTS.load(Ordering::SeqCst), 2);
    assert!(until_queue_empty(&redis).await, "the reclaimed task's entry is still queued");
    front.stop().await;
    survivor.stop().await;
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_naming_no_task_or_an_unknown_one_are_settled_and_run_nothing() {
    let redis = RedisServer::start();
    let store = Shared::default();
    redis.cli(&["XGROUP", "CREATE", "tool:task:queue", "workers", "0", "MKSTREAM"]);
    redis.cli(&["XADD", "tool:task:queue", "*", "other", "field"]);
    redis.cli(&["XADD", "tool:task:queue", "*", "task", "no-such-task"]);
    let back = worker("back", &store, &redis, true).await;
    assert!(until_queue_empty(&redis).await, "hostile entries were left in the stream");
    // Nothing pending either: each entry was acknowledged, not just deleted.
    assert_eq!(redis.cli(&["XPENDING", "tool:task:queue", "workers"])[0], "0");
    assert_eq!(store.0.len(), 0);
    back.stop().await;
}

static OUTLASTING_STARTS: AtomicUsize = AtomicUsize::new(0);

/// Run for 2.5 leases (1.5 s), counting its starts; safe to run again, so a reclaim would rerun it.
#[tool(tags(task, retry_safe))]
async fn outlast_leases() -> String {
    let start = OUTLASTING_STARTS.fetch_add(1, Ordering::SeqCst) + 1;
    tokio::time::sleep(LEASE * 5 / 2).await;
    format!("start {start}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_longer_than_its_lease_holds_it_and_no_other_worker_reclaims_or_reruns_it() {
    let redis = RedisServer::start();
    let store = Shared::default();
    let workers = [worker("w1", &store, &redis, true).await, worker("w2", &store, &redis, true).await];
    let id = create(&workers[0], "outlast_leases", json!({})).await;
    // Both workers sweep and reclaim every 0.375 to 0.625 leases meanwhile.
    assert_eq!(text(&settled(&workers[1], &id).await), "start 1");
    assert_eq!(OUTLASTING_STARTS.load(Ordering::SeqCst), 1);
    assert!(until_queue_empty(&redis).await, "the task's entry is still queued");
    for running in workers {
        running.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_shared_task_key_a_task_with_a_secret_argument_is_queued_and_runs_on_another_worker() {
    let redis = RedisServer::start();
    let store = Shared::default();
    let key = |b: tool_mcp::McpServerBuilder| b.task_key([42u8; 32]).unwrap();
    let front = worker_with("front", &store, &redis, false, key).await;
    let back = worker_with("back", &store, &redis, true, key).await;
    let id = create(&front, "with_token", json!({"token": "s3cret"})).await;
    assert_eq!(text(&settled(&front, &id).await), "back used 6 token bytes");
    // The store never held the secret in clear.
    let record = store.get(&id).await.unwrap().unwrap();
    assert!(!record.arguments.contains("s3cret"), "{}", record.arguments);
    front.stop().await;
    back.stop().await;
}

#[test]
fn a_task_key_shorter_than_32_bytes_is_refused_saying_so() {
    let registry = Registry::builder().tool(whereami::TOOL).build().unwrap();
    let error = McpServer::builder(registry).task_key([1u8; 16]).err().unwrap();
    assert_eq!(error.to_string(), "a task key needs at least 32 bytes, got 16; give 32 random bytes");
}
