//! MCP tasks (`io.modelcontextprotocol/tasks`) over stateless Streamable HTTP at protocol
//! 2026-07-28: a tagged tool's call becomes a task, read with `tasks/get`, answered with
//! `tasks/update`, stopped with `tasks/cancel`, seen only by the principal that created it.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tool_mcp::McpServer;
use tool_mcp::tasks::{MemoryTaskStore, TaskLease, TaskQuota, TaskRecord, TaskStore, TaskStoreError};
use tool_runtime::talk::Elicitation;
use tool_runtime::{BoxFuture, FixedClock, Registry, TalkBackError, ToolContext, tool};

use common::{Piped, RawClient, Running, rpc};

/// How long a test waits for what it expects.
const BOUND: Duration = Duration::from_secs(10);

/// How many times a test reads a task while waiting for it to change, 20 ms apart.
const POLLS: usize = 500;

static RELEASE: Notify = Notify::const_new();

/// Wait until the test releases it.
#[tool(tags(task))]
async fn held() -> String {
    RELEASE.notified().await;
    "released".to_owned()
}

/// Fail as a tool.
#[tool(tags(task))]
async fn broken() -> Result<String, String> {
    Err("the input is broken; send another".to_owned())
}

/// Run until cancelled.
#[tool(tags(task))]
async fn endless(ctx: &ToolContext) -> String {
    ctx.cancellation().cancelled().await;
    "stopped".to_owned()
}

/// Only as a task.
#[tool(tags(task_required))]
fn only_task() -> String {
    "ran".to_owned()
}

/// A yes or no.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Go ahead.
    confirm: bool,
}

/// Ask before going on.
#[tool(tags(task))]
async fn ask_first(ctx: &ToolContext, what: String) -> Result<String, TalkBackError> {
    Ok(match ctx.elicit::<Confirm>(format!("Do {what}?")).key("confirm").await? {
        Elicitation::Accept(Confirm { confirm: true }) => format!("did {what}"),
        _ => format!("skipped {what}"),
    })
}

/// A name.
#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

/// Ask a name in the request, then greet as a task.
#[tool(tags(task, task_after_input))]
async fn greet_later(ctx: &ToolContext) -> Result<String, TalkBackError> {
    Ok(match ctx.elicit::<Name>("Your name?").key("user_name").await? {
        Elicitation::Accept(Name { name }) => format!("Hello, {name}!"),
        _ => "no name".to_owned(),
    })
}

static RETRIED_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Count its runs; safe to run again.
#[tool(tags(task, retry_safe))]
fn count_runs() -> String {
    format!("run {}", RETRIED_RUNS.fetch_add(1, Ordering::SeqCst) + 1)
}

static SAW_CANCEL: Notify = Notify::const_new();

/// Run until cancelled, and say so.
#[tool(tags(task))]
async fn endless_watched(ctx: &ToolContext) -> String {
    // As work of its own (a child process) would: it sees the token fire.
    let token = ctx.cancellation().clone();
    tokio::spawn(async move {
        token.cancelled().await;
        SAW_CANCEL.notify_one();
    });
    std::future::pending().await
}

/// Fail with a text that reads like a panic.
#[tool(tags(task))]
fn looks_panicked() -> Result<String, String> {
    Err("tool `looks_panicked` panicked: not really".to_owned())
}

/// Panic.
#[tool(tags(task))]
fn panics() -> String {
    panic!("out of cheese")
}

static CONFIRMED_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Ask, then count the runs that got an answer.
#[tool(tags(task))]
async fn ask_then_count(ctx: &ToolContext) -> Result<String, TalkBackError> {
    ctx.elicit::<Confirm>("Go?").key("go").await?;
    Ok(format!("run {}", CONFIRMED_RUNS.fetch_add(1, Ordering::SeqCst) + 1))
}

static SWEPT_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Count its runs; safe to run again (the sweep's test).
#[tool(tags(task, retry_safe))]
fn count_swept_runs() -> String {
    format!("run {}", SWEPT_RUNS.fetch_add(1, Ordering::SeqCst) + 1)
}

static HELD_RETRY_RUNS: AtomicUsize = AtomicUsize::new(0);
static RELEASE_RETRY: Notify = Notify::const_new();

/// Count its runs and wait until released; safe to run again.
#[tool(tags(task, retry_safe))]
async fn held_retry_safe() -> String {
    HELD_RETRY_RUNS.fetch_add(1, Ordering::SeqCst);
    RELEASE_RETRY.notified().await;
    "released".to_owned()
}

static CANCELLED_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Count its runs; safe to run again (the cancel of a lapsed task's test).
#[tool(tags(task, retry_safe))]
fn count_cancelled_runs() -> String {
    format!("run {}", CANCELLED_RUNS.fetch_add(1, Ordering::SeqCst) + 1)
}

static FENCED: Notify = Notify::const_new();

/// Run until cancelled, and say so (the self-fence's test).
#[tool(tags(task))]
async fn fenced(ctx: &ToolContext) -> String {
    let token = ctx.cancellation().clone();
    tokio::spawn(async move {
        token.cancelled().await;
        FENCED.notify_one();
    });
    std::future::pending().await
}

static REPORTED: Notify = Notify::const_new();

/// Report progress, log, then wait until released.
#[tool(tags(task))]
async fn reporting(ctx: &ToolContext, log: bool) -> String {
    ctx.progress(2, Some(5), "copying");
    if log {
        ctx.log(tool_runtime::LogLevel::Info, "copied a.txt");
    }
    REPORTED.notified().await;
    "copied".to_owned()
}

fn server() -> McpServer {
    server_with(|builder| builder)
}

fn server_with(configure: impl FnOnce(tool_mcp::McpServerBuilder) -> tool_mcp::McpServerBuilder) -> McpServer {
    let registry = Registry::builder()
        .tool(held::TOOL)
        .tool(broken::TOOL)
        .tool(endless::TOOL)
        .tool(only_task::TOOL)
        .tool(ask_first::TOOL)
        .tool(greet_later::TOOL)
        .tool(count_runs::TOOL)
        .tool(endless_watched::TOOL)
        .tool(looks_panicked::TOOL)
        .tool(panics::TOOL)
        .tool(ask_then_count::TOOL)
        .tool(reporting::TOOL)
        .tool(count_swept_runs::TOOL)
        .tool(held_retry_safe::TOOL)
        .tool(fenced::TOOL)
        .tool(count_cancelled_runs::TOOL)
        .build()
        .unwrap();
    // The principal is the `X-User` header, when sent.
    let builder = McpServer::builder(registry).context(|request, ctx| {
        let user = request.http.and_then(|p| p.headers.get("x-user")).and_then(|v| v.to_str().ok());
        Ok(match user {
            Some(user) => ctx.principal(user),
            None => ctx,
        })
    });
    configure(builder).build()
}

fn with_tasks() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// Calls `tool` as a client with the tasks extension; the task id of its `CreateTaskResult`.
async fn create(running: &Running, tool: &str, arguments: Value, user: Option<&str>) -> String {
    let created = rpc(running, "tools/call", json!({"name": tool, "arguments": arguments}), &with_tasks(), user).await;
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    assert_eq!(result["status"], "working");
    assert_eq!(result["ttlMs"], 3_600_000);
    assert_eq!(result["pollIntervalMs"], 250);
    assert_eq!(result.get("requestState"), None);
    result["taskId"].as_str().unwrap().to_owned()
}

async fn get(running: &Running, id: &str, user: Option<&str>) -> Value {
    rpc(running, "tasks/get", json!({"taskId": id}), &with_tasks(), user).await
}

/// Reads the task until its status is no longer `from` (`common::task_until_not`); its result.
async fn until_not(running: &Running, id: &str, from: &str) -> Value {
    common::task_until_not(running, id, from, &with_tasks()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_working_then_completed_with_its_result_inlined() {
    let running = Running::start(server()).await;
    let id = create(&running, "held", json!({}), None).await;
    let working = get(&running, &id, None).await["result"].clone();
    assert_eq!(working["resultType"], "complete");
    assert_eq!(working["taskId"], id.as_str());
    assert_eq!(working["status"], "working");
    assert_eq!(working.get("result"), None);

    RELEASE.notify_one();
    let done = until_not(&running, &id, "working").await;
    assert_eq!(done["status"], "completed");
    assert_eq!(
        done["result"],
        json!({"resultType": "complete", "content": [{"type": "text", "text": "released"}], "isError": false})
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_error_completes_the_task_with_is_error() {
    let running = Running::start(server()).await;
    let id = create(&running, "broken", json!({}), None).await;
    let done = until_not(&running, &id, "working").await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["isError"], true);
    assert_eq!(done["result"]["content"], json!([{"type": "text", "text": "the input is broken; send another"}]));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_is_cancelled_and_a_second_cancel_is_the_same_ack() {
    let running = Running::start(server()).await;
    let id = create(&running, "endless", json!({}), None).await;
    for _ in 0..2 {
        let ack = rpc(&running, "tasks/cancel", json!({"taskId": id}), &with_tasks(), None).await;
        assert_eq!(ack["result"], json!({"resultType": "complete"}));
    }
    let got = get(&running, &id, None).await["result"].clone();
    assert_eq!(got["status"], "cancelled");
    assert_eq!(got.get("result"), None);
    assert_eq!(got.get("error"), None);
    running.stop().await;
}

const UNKNOWN: &str = "no task `nope`: it does not exist, has expired or was created by another caller; send the \
                       taskId a tools/call result gave you";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_task_id_is_invalid_params() {
    let running = Running::start(server()).await;
    for method in ["tasks/get", "tasks/cancel"] {
        let answer = rpc(&running, method, json!({"taskId": "nope"}), &with_tasks(), None).await;
        assert_eq!(answer["error"], json!({"code": -32602, "message": UNKNOWN}), "{method}");
    }
    let update = json!({"taskId": "nope", "inputResponses": {}});
    let answer = rpc(&running, "tasks/update", update, &with_tasks(), None).await;
    assert_eq!(answer["error"], json!({"code": -32602, "message": UNKNOWN}));
    for method in ["tasks/result", "tasks/list"] {
        let answer = rpc(&running, method, json!({"taskId": "nope"}), &with_tasks(), None).await;
        assert_eq!(answer["error"]["code"], -32601, "{method}");
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_task_without_the_extension_is_refused_with_the_capability_named() {
    let running = Running::start(server()).await;
    let answer = rpc(&running, "tools/call", json!({"name": "only_task", "arguments": {}}), &json!({}), None).await;
    assert_eq!(
        answer["error"],
        json!({
            "code": -32021,
            "message": "tool `only_task` runs only as a task; declare the extension `io.modelcontextprotocol/tasks` \
                        in the client capabilities",
            "data": {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
        })
    );
    // A task-supporting tool without the extension runs in the request.
    let answer = rpc(&running, "tools/call", json!({"name": "broken", "arguments": {}}), &json!({}), None).await;
    assert_eq!(answer["result"]["resultType"], "complete");
    assert_eq!(answer["result"]["isError"], true);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_asking_for_input_is_input_required_and_tasks_update_resumes_it() {
    let running = Running::start(server()).await;
    let id = create(&running, "ask_first", json!({"what": "the backup"}), None).await;
    let asking = until_not(&running, &id, "working").await;
    assert_eq!(asking["status"], "input_required");
    assert_eq!(
        asking["inputRequests"],
        json!({"confirm": {"method": "elicitation/create", "params": {
            "message": "Do the backup?",
            "mode": "form",
            "requestedSchema": {"type": "object", "properties": {
                "confirm": {"type": "boolean", "description": "Go ahead."}}, "required": ["confirm"]}}}})
    );
    // An answer to no pending request changes nothing.
    let stray = json!({"taskId": id, "inputResponses": {"other": {"action": "accept", "content": {}}}});
    let ack = rpc(&running, "tasks/update", stray, &with_tasks(), None).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}));
    assert_eq!(get(&running, &id, None).await["result"]["status"], "input_required");

    let answer =
        json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    let ack = rpc(&running, "tasks/update", answer, &with_tasks(), None).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}));
    let done = until_not(&running, &id, "working").await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["content"], json!([{"type": "text", "text": "did the backup"}]));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_seen_only_by_the_principal_that_created_it() {
    let running = Running::start(server()).await;
    let id = create(&running, "endless", json!({}), Some("ana")).await;
    let unknown = UNKNOWN.replace("nope", &id);
    for user in [Some("bob"), None] {
        assert_eq!(get(&running, &id, user).await["error"], json!({"code": -32602, "message": unknown}), "{user:?}");
        let cancel = rpc(&running, "tasks/cancel", json!({"taskId": id}), &with_tasks(), user).await;
        assert_eq!(cancel["error"]["code"], -32602);
    }
    assert_eq!(get(&running, &id, Some("ana")).await["result"]["status"], "working");
    let cancel = rpc(&running, "tasks/cancel", json!({"taskId": id}), &with_tasks(), Some("ana")).await;
    assert_eq!(cancel["result"], json!({"resultType": "complete"}));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_tagged_task_after_input_asks_in_the_request_and_the_round_with_answers_is_a_task() {
    let running = Running::start(server()).await;
    let call = json!({"name": "greet_later", "arguments": {}});
    let first = rpc(&running, "tools/call", call, &with_tasks(), None).await["result"].clone();
    assert_eq!(first["resultType"], "input_required");
    assert_eq!(first.get("taskId"), None);
    assert_eq!(first["inputRequests"]["user_name"]["params"]["message"], "Your name?");
    let retry = json!({
        "name": "greet_later",
        "arguments": {},
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ana"}}},
        "requestState": first["requestState"],
    });
    let created = rpc(&running, "tools/call", retry, &with_tasks(), None).await["result"].clone();
    assert_eq!(created["resultType"], "task");
    assert_eq!(created.get("requestState"), None);
    let done = until_not(&running, created["taskId"].as_str().unwrap(), "working").await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["content"], json!([{"type": "text", "text": "Hello, Ana!"}]));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_runs_at_most_its_cap_of_tasks_at_once_and_others_are_not_counted() {
    let running = Running::start(server_with(|b| b.max_running_tasks(3))).await;
    let mut mallory = Vec::new();
    for _ in 0..3 {
        mallory.push(create(&running, "endless", json!({}), Some("mallory")).await);
    }
    let refused =
        rpc(&running, "tools/call", json!({"name": "endless", "arguments": {}}), &with_tasks(), Some("mallory")).await;
    assert_eq!(
        refused["error"],
        json!({"code": -32600, "message": "this caller already has 3 tasks running, the most this server runs at once \
               for one caller; wait for one to end, or cancel one with tasks/cancel"})
    );
    // Another principal still gets its tasks.
    let ana = create(&running, "endless", json!({}), Some("ana")).await;
    // A cancelled task gives its place back.
    let cancel = rpc(&running, "tasks/cancel", json!({"taskId": mallory[0]}), &with_tasks(), Some("mallory")).await;
    assert_eq!(cancel["result"], json!({"resultType": "complete"}), "{cancel}");
    mallory.push(create(&running, "endless", json!({}), Some("mallory")).await);
    for (id, user) in mallory.iter().skip(1).map(|id| (id, "mallory")).chain([(&ana, "ana")]) {
        rpc(&running, "tasks/cancel", json!({"taskId": id}), &with_tasks(), Some(user)).await;
    }
    running.stop().await;
}

/// A store several servers share (as workers share Redis), and that can stand in for another
/// worker writing between two writes of a server: `after_resume` runs once on the record a
/// write moved from `input_required` to `working`.
type Hook = Box<dyn FnOnce(&MemoryTaskStore, TaskRecord) + Send>;

#[derive(Clone)]
struct Shared {
    inner: Arc<MemoryTaskStore>,
    /// While set, every call waits forever (a store cut off).
    frozen: Arc<std::sync::atomic::AtomicBool>,
    after_resume: Arc<std::sync::Mutex<Option<Hook>>>,
}

impl Shared {
    fn new(clock: Arc<FixedClock>) -> Self {
        Self {
            inner: Arc::new(MemoryTaskStore::default().with_clock(clock)),
            frozen: Arc::default(),
            after_resume: Arc::default(),
        }
    }
}

impl Default for Shared {
    fn default() -> Self {
        Self { inner: Arc::new(MemoryTaskStore::default()), frozen: Arc::default(), after_resume: Arc::default() }
    }
}

impl TaskStore for Shared {
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        self.inner.insert(record)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        if self.frozen.load(Ordering::SeqCst) {
            return Box::pin(std::future::pending());
        }
        self.inner.get(id)
    }

    fn working(&self, limit: usize) -> BoxFuture<'_, Result<Vec<String>, TaskStoreError>> {
        self.inner.working(limit)
    }

    fn replace(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
        if self.frozen.load(Ordering::SeqCst) {
            return Box::pin(std::future::pending());
        }
        Box::pin(async move {
            let before = self.inner.get(&record.id).await?;
            let replaced = self.inner.replace(record.clone()).await?;
            let resumed = before.is_some_and(|b| b.status == rmcp::model::TaskStatus::InputRequired)
                && record.status == rmcp::model::TaskStatus::Working;
            if replaced && resumed {
                let hook = self.after_resume.lock().unwrap().take();
                if let Some(hook) = hook {
                    hook(&self.inner, record);
                }
            }
            Ok(replaced)
        })
    }
}

const START: Duration = Duration::from_secs(1_785_229_501);

fn clock() -> Arc<FixedClock> {
    Arc::new(FixedClock::new(UNIX_EPOCH + START))
}

/// A `working` record of `tool` whose runner is the worker `gone`, leased until `until`.
fn orphan(id: &str, tool: &str, until: SystemTime) -> TaskRecord {
    let ms = |t: SystemTime| u64::try_from(t.duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap();
    TaskRecord {
        lease: Some(TaskLease { worker: "gone".to_owned(), until_ms: ms(until) }),
        ..TaskRecord::new(id, tool, "{}", None, ms(UNIX_EPOCH + START), 3_600_000)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_over_its_quota_of_open_tasks_is_refused_naming_it_and_others_are_not() {
    let quota = TaskQuota { max_open: 2, max_bytes: 1 << 20 };
    let running = Running::start(server_with(|b| b.task_quota(quota))).await;
    let mallory = [
        create(&running, "endless", json!({}), Some("mallory")).await,
        create(&running, "endless", json!({}), Some("mallory")).await,
    ];
    let refused =
        rpc(&running, "tools/call", json!({"name": "endless", "arguments": {}}), &with_tasks(), Some("mallory")).await;
    assert_eq!(
        refused["error"],
        json!({"code": -32600, "message": "this caller has 2 tasks open, its quota of open tasks (TaskQuota::max_open \
               is 2); wait for one to end, or cancel one with tasks/cancel"})
    );
    let ana = create(&running, "endless", json!({}), Some("ana")).await;
    for (id, user) in [(&mallory[0], "mallory"), (&mallory[1], "mallory"), (&ana, "ana")] {
        rpc(&running, "tasks/cancel", json!({"taskId": id}), &with_tasks(), Some(user)).await;
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_state_expires_by_the_servers_clock() {
    let clock = clock();
    let running = Running::start(server_with(|b| b.clock(clock.clone()))).await;
    let call = json!({"name": "greet_later", "arguments": {}});
    let first = rpc(&running, "tools/call", call, &with_tasks(), None).await["result"].clone();
    let retry = json!({
        "name": "greet_later",
        "arguments": {},
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ana"}}},
        "requestState": first["requestState"],
    });
    clock.advance(Duration::from_millis(600_001));
    let late = rpc(&running, "tools/call", retry.clone(), &with_tasks(), None).await;
    assert_eq!(
        late["error"],
        json!({"code": -32602, "message": "the requestState was refused: it is not one this server sealed for this \
               call and caller, or it has expired; send the call again without requestState and inputResponses to \
               start over"})
    );
    clock.set(UNIX_EPOCH + START + Duration::from_secs(600));
    let in_time = rpc(&running, "tools/call", retry, &with_tasks(), None).await;
    assert_eq!(in_time["result"]["resultType"], "task", "{in_time}");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_working_task_whose_runner_is_gone_fails_saying_so_once_its_lease_lapses() {
    let clock = clock();
    let store = Shared::new(clock.clone());
    let until = UNIX_EPOCH + START + Duration::from_secs(10);
    store.inner.insert(orphan("a1", "endless", until)).await.unwrap();
    let running = Running::start(server_with(|b| b.clock(clock.clone()).task_store(store.clone()))).await;
    assert_eq!(get(&running, "a1", None).await["result"]["status"], "working");
    clock.advance(Duration::from_secs(10));
    let failed = get(&running, "a1", None).await["result"].clone();
    assert_eq!(failed["status"], "failed");
    assert_eq!(
        failed["error"],
        json!({"code": -32603, "message": "the worker running this task stopped before it finished (its lease \
               lapsed at 2026-07-28T09:05:11.000Z); the call may have had effects, so it was not run again: check \
               what it changed, then call the tool again"})
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_safe_task_whose_runner_is_gone_runs_again_from_the_start_once() {
    let clock = clock();
    let store = Shared::new(clock.clone());
    store.inner.insert(orphan("r1", "count_runs", UNIX_EPOCH + START + Duration::from_secs(10))).await.unwrap();
    let running = Running::start(server_with(|b| b.clock(clock.clone()).task_store(store.clone()))).await;
    clock.advance(Duration::from_secs(11));
    let done = until_not(&running, "r1", "working").await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["content"], json!([{"type": "text", "text": "run 1"}]));
    assert_eq!(RETRIED_RUNS.load(Ordering::SeqCst), 1);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_on_another_worker_stops_the_running_tool() {
    let store = Shared::default();
    let first = Running::start(server_with(|b| b.task_store(store.clone()))).await;
    let second = Running::start(server_with(|b| b.task_store(store.clone()))).await;
    let id = create(&first, "endless_watched", json!({}), None).await;
    let saw = SAW_CANCEL.notified();
    let ack = rpc(&second, "tasks/cancel", json!({"taskId": id}), &with_tasks(), None).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}));
    tokio::time::timeout(BOUND, saw).await.expect("the tool on the first worker saw its cancellation");
    assert_eq!(get(&first, &id, None).await["result"]["status"], "cancelled");
    first.stop().await;
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_between_the_last_answer_and_the_rerun_keeps_the_rerun_from_starting() {
    let store = Shared::default();
    let running = Running::start(server_with(|b| b.task_store(store.clone()))).await;
    let id = create(&running, "ask_then_count", json!({}), None).await;
    assert_eq!(until_not(&running, &id, "working").await["status"], "input_required");
    // Another worker's tasks/cancel lands right after the update wrote `working`.
    *store.after_resume.lock().unwrap() = Some(Box::new(|inner: &MemoryTaskStore, mut record: TaskRecord| {
        record.revision += 1;
        record.status = rmcp::model::TaskStatus::Cancelled;
        record.lease = None;
        let replaced = futures::executor::block_on(inner.replace(record)).unwrap();
        assert!(replaced);
    }));
    let answer = json!({"taskId": id, "inputResponses": {"go": {"action": "accept", "content": {"confirm": true}}}});
    let ack = rpc(&running, "tasks/update", answer, &with_tasks(), None).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}));
    assert_eq!(get(&running, &id, None).await["result"]["status"], "cancelled");
    running.stop().await;
    assert_eq!(CONFIRMED_RUNS.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_fails_the_task_and_an_error_text_like_a_panics_completes_it() {
    let running = Running::start(server()).await;
    let panicked = until_not(&running, &create(&running, "panics", json!({}), None).await, "working").await;
    assert_eq!(panicked["status"], "failed");
    assert_eq!(panicked["error"], json!({"code": -32603, "message": "tool `panics` panicked: out of cheese"}));
    let looks = until_not(&running, &create(&running, "looks_panicked", json!({}), None).await, "working").await;
    assert_eq!(looks["status"], "completed");
    assert_eq!(looks["result"]["isError"], true);
    running.stop().await;
}

/// Reads the task until it has a `statusMessage` (at most [`POLLS`] times); its result.
async fn until_status_message(running: &Running, id: &str) -> Value {
    for _ in 0..POLLS {
        let got = get(running, id, None).await;
        if got["result"].get("statusMessage").is_some() {
            return got["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} got no statusMessage");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_tasks_last_progress_and_log_message_are_its_status_message() {
    let running = Running::start(server()).await;
    let id = create(&running, "reporting", json!({"log": true}), None).await;
    let working = until_status_message(&running, &id).await;
    assert_eq!(
        (working["status"].clone(), working["statusMessage"].clone()),
        (json!("working"), json!("2/5 copied a.txt"))
    );
    REPORTED.notify_one();
    assert_eq!(until_not(&running, &id, "working").await["status"], "completed");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_log_message_the_status_message_is_the_progress_message() {
    let running = Running::start(server()).await;
    let id = create(&running, "reporting", json!({"log": false}), None).await;
    assert_eq!(until_status_message(&running, &id).await["statusMessage"], "2/5 copying");
    REPORTED.notify_one();
    assert_eq!(until_not(&running, &id, "working").await["status"], "completed");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_on_a_live_connection_is_sent_the_task_status_notification_when_the_task_ends() {
    let (piped, reader, writer) = Piped::start(server());
    let mut client = RawClient::initialize_with(reader, writer, with_tasks()).await;
    client.call(1, "held", json!({}), false).await;
    let created = client.recv().await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].clone();
    RELEASE.notify_one();
    let notified = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!(notified["method"], "notifications/tasks", "{notified}");
    assert_eq!(notified["params"]["taskId"], id);
    assert_eq!(notified["params"]["status"], "completed");
    assert_eq!(notified["params"]["result"]["content"], json!([{"type": "text", "text": "released"}]));
    piped.stop().await;
    drop(client);
}

/// Reads the record of `id` from `store` until it is no longer `working` (at most [`POLLS`]
/// times, 20 ms apart), without any request to a server.
async fn until_stored_not_working(store: &Shared, id: &str) -> TaskRecord {
    for _ in 0..POLLS {
        let record = store.inner.get(id).await.unwrap().unwrap();
        if record.status != rmcp::model::TaskStatus::Working {
            return record;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} stayed working");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_sweep_settles_lapsed_tasks_nobody_reads() {
    let clock = clock();
    let store = Shared::new(clock.clone());
    let until = UNIX_EPOCH + START + Duration::from_secs(10);
    store.inner.insert(orphan("s-unsafe", "endless", until)).await.unwrap();
    store.inner.insert(orphan("s-safe", "count_swept_runs", until)).await.unwrap();
    // A lease of 300 ms: the sweep runs every 113 to 187 ms of tokio's clock.
    let server =
        server_with(|b| b.clock(clock.clone()).task_store(store.clone()).task_lease(Duration::from_millis(300)));
    clock.advance(Duration::from_secs(10));
    let failed = until_stored_not_working(&store, "s-unsafe").await;
    assert_eq!(failed.status, rmcp::model::TaskStatus::Failed);
    assert_eq!(
        failed.error.unwrap()["message"],
        "the worker running this task stopped before it finished (its lease lapsed at 2026-07-28T09:05:11.000Z); the \
         call may have had effects, so it was not run again: check what it changed, then call the tool again"
    );
    let done = until_stored_not_working(&store, "s-safe").await;
    assert_eq!(done.status, rmcp::model::TaskStatus::Completed);
    assert_eq!(done.result.unwrap()["content"], json!([{"type": "text", "text": "run 1"}]));
    assert_eq!(SWEPT_RUNS.load(Ordering::SeqCst), 1);
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_lease_of_a_run_in_this_worker_is_not_taken_again() {
    let clock = clock();
    let store = Shared::new(clock.clone());
    let running = Running::start(server_with(|b| b.clock(clock.clone()).task_store(store.clone()))).await;
    let id = create(&running, "held_retry_safe", json!({}), None).await;
    // Its run has started (on a loaded machine the spawned run may come after the answer).
    for _ in 0..POLLS {
        if HELD_RETRY_RUNS.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Its run is late to renew (the clock jumps past the lease): it still runs here, once.
    clock.advance(Duration::from_secs(11));
    assert_eq!(get(&running, &id, None).await["result"]["status"], "working");
    assert_eq!(HELD_RETRY_RUNS.load(Ordering::SeqCst), 1);
    RELEASE_RETRY.notify_one();
    assert_eq!(until_not(&running, &id, "working").await["status"], "completed");
    assert_eq!(HELD_RETRY_RUNS.load(Ordering::SeqCst), 1);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_cannot_renew_its_lease_in_time_stops_before_another_worker_may_take_it() {
    let clock = clock();
    let store = Shared::new(clock.clone());
    let lease = Duration::from_millis(300);
    let running =
        Running::start(server_with(|b| b.clock(clock.clone()).task_store(store.clone()).task_lease(lease))).await;
    let id = create(&running, "fenced", json!({}), None).await;
    let fenced = FENCED.notified();
    // The run took its lease (its first write) before the store is cut off.
    let mut claimed = false;
    for _ in 0..POLLS {
        claimed = store.inner.get(&id).await.unwrap().unwrap().revision >= 1;
        if claimed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(claimed, "the run never took its lease");
    // The store is cut off, and the lease runs out by the server's clock.
    store.frozen.store(true, Ordering::SeqCst);
    clock.advance(lease);
    tokio::time::timeout(BOUND, fenced).await.expect("the run's token fired");
    store.frozen.store(false, Ordering::SeqCst);
    // Nothing was written while cut off: the record still says working under the lapsed lease.
    let record = store.inner.get(&id).await.unwrap().unwrap();
    assert_eq!(record.status, rmcp::model::TaskStatus::Working);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_of_a_lapsed_retry_safe_task_cancels_it_without_running_it_again() {
    let clock = clock();
    let store = Shared::new(clock.clone());
    store
        .inner
        .insert(orphan("c1", "count_cancelled_runs", UNIX_EPOCH + START + Duration::from_secs(10)))
        .await
        .unwrap();
    let running = Running::start(server_with(|b| b.clock(clock.clone()).task_store(store.clone()))).await;
    clock.advance(Duration::from_secs(11));
    let ack = rpc(&running, "tasks/cancel", json!({"taskId": "c1"}), &with_tasks(), None).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}));
    assert_eq!(get(&running, "c1", None).await["result"]["status"], "cancelled");
    assert_eq!(CANCELLED_RUNS.load(Ordering::SeqCst), 0);
    running.stop().await;
}
