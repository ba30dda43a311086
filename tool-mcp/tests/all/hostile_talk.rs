//! A hostile client against the talk-back, catalog and tasks methods over stateless Streamable HTTP
//! at protocol 2026-07-28: request states replayed for another call or caller, answers of wrong
//! shapes, tasks of another principal, a full task store, URI template values that name other
//! paths.

use crate::common;

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_mcp::tasks::{MemoryTaskStore, TaskRecord, TaskStore, TaskStoreError};
use tool_mcp::{McpServer, McpServerBuilder, Prompt, PromptMessage, ResourceTemplate};
use tool_runtime::talk::Elicitation;
use tool_runtime::{BoxFuture, ContentPart, Registry, ResourceContents, TalkBackError, ToolContext, tool};

use common::{Running, post, rpc};

const BOUND: Duration = Duration::from_secs(10);

/// How many times a test reads a task while waiting for it to change, 20 ms apart.
const POLLS: usize = 500;

const REFUSED: &str = "the requestState was refused: it is not one this server sealed for this call and caller, or \
                       it has expired; send the call again without requestState and inputResponses to start over";

/// A name.
#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

/// Ask a name.
#[tool(tags(task))]
async fn ask_name(ctx: &ToolContext) -> Result<String, TalkBackError> {
    Ok(match ctx.elicit::<Name>("Your name?").key("user_name").await? {
        Elicitation::Accept(Name { name }) => format!("Hello, {name}!"),
        _ => "no name".to_owned(),
    })
}

/// Ask a name too, under the same key.
#[tool]
async fn ask_name_too(ctx: &ToolContext) -> Result<String, TalkBackError> {
    Ok(match ctx.elicit::<Name>("Your name, again?").key("user_name").await? {
        Elicitation::Accept(Name { name }) => format!("Hi, {name}!"),
        _ => "no name".to_owned(),
    })
}

/// Answer at once.
#[tool(tags(task))]
fn quick() -> String {
    "done".to_owned()
}

/// Delete a file (after the user's approval).
#[tool(tags(confirm))]
fn wipe(path: String) -> String {
    format!("wiped {path}")
}

fn registry() -> Registry {
    Registry::builder()
        .tool(ask_name::TOOL)
        .tool(ask_name_too::TOOL)
        .tool(quick::TOOL)
        .tool(wipe::TOOL)
        .build()
        .unwrap()
}

/// The principal is the `X-User` header, when sent (as the context hook docs show).
fn builder() -> McpServerBuilder {
    McpServer::builder(registry()).context(|request, ctx| {
        let user = request.http.and_then(|p| p.headers.get("x-user")).and_then(|v| v.to_str().ok());
        Ok(match user {
            Some(user) => ctx.principal(user),
            None => ctx,
        })
    })
}

fn capabilities(tasks: bool) -> Value {
    match tasks {
        true => json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}),
        false => json!({"elicitation": {}}),
    }
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// The first round of `tool` as `user`: its `requestState`.
async fn first_state(running: &Running, tool: &str, arguments: Value, user: Option<&str>) -> String {
    let first =
        rpc(running, "tools/call", json!({"name": tool, "arguments": arguments}), &capabilities(false), user).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    first["result"]["requestState"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_state_is_refused_for_another_tool_and_another_principal() {
    let running = Running::start(builder().build()).await;
    let state = first_state(&running, "ask_name", json!({}), Some("ana")).await;
    let retry = |tool: &str| {
        json!({"name": tool, "arguments": {}, "requestState": state,
            "inputResponses": {"user_name": accept(json!({"name": "Mallory"}))}})
    };
    let other_tool = rpc(&running, "tools/call", retry("ask_name_too"), &capabilities(false), Some("ana")).await;
    assert_eq!(other_tool["error"], json!({"code": -32602, "message": REFUSED}));
    for user in [Some("bob"), None] {
        let other_user = rpc(&running, "tools/call", retry("ask_name"), &capabilities(false), user).await;
        assert_eq!(other_user["error"], json!({"code": -32602, "message": REFUSED}), "{user:?}");
    }
    let same = rpc(&running, "tools/call", retry("ask_name"), &capabilities(false), Some("ana")).await;
    assert_eq!(same["result"]["content"], json!([{"type": "text", "text": "Hello, Mallory!"}]));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_state_sealed_for_arguments_with_other_whitespace_is_refused() {
    // The binding is the arguments' text as sent: a client that writes the same object again with
    // other spacing or key order starts over.
    let running = Running::start(builder().build()).await;
    let state = first_state(&running, "ask_name", json!({}), None).await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"ask_name","arguments":{{ }},"requestState":"{state}","inputResponses":{{"user_name":{{"action":"accept","content":{{"name":"Ana"}}}}}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{}}}}}}}}}}"#
    );
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "ask_name")];
    let response = common::post_raw(running.addr, "/mcp", "127.0.0.1", &headers, body.as_bytes()).await;
    let reply: Value = match response.header("content-type") {
        Some("text/event-stream") => response.events().pop().unwrap(),
        _ => serde_json::from_str(&response.body).unwrap(),
    };
    assert_eq!(reply["error"], json!({"code": -32602, "message": REFUSED}));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_responses_of_wrong_shapes_are_refused_or_ignored_and_ten_thousand_keys_are_ignored() {
    let running = Running::start(builder().build()).await;
    let call = |responses: Value| json!({"name": "ask_name", "arguments": {}, "inputResponses": responses});
    // Not an object: invalid params saying what to send.
    for (responses, kind) in [(json!([1, 2]), "an array"), (json!("yes"), "a string")] {
        let refused = rpc(&running, "tools/call", call(responses), &capabilities(false), None).await;
        let said = format!(
            "`params.inputResponses` must be an object of the answers by input request key (or left out), not {kind}"
        );
        assert_eq!(refused["error"], json!({"code": -32602, "message": said}), "{refused}");
    }
    let state = json!({"name": "ask_name", "arguments": {}, "requestState": 7});
    let refused = rpc(&running, "tools/call", state, &capabilities(false), None).await;
    let said = "`params.requestState` must be the string the server sent in its input-required result, not a number";
    assert_eq!(refused["error"], json!({"code": -32602, "message": said}));
    // Junk for the key asked: the tool's answer is invalid params saying what was expected.
    let junk = rpc(&running, "tools/call", call(json!({"user_name": [[[{}]]]})), &capabilities(false), None).await;
    assert_eq!(
        junk["error"],
        json!({"code": -32602, "message": "the client's answer to input request `user_name` is not an elicitation \
               result (an object with `action`): [[[{}]]]"})
    );
    let nested = rpc(
        &running,
        "tools/call",
        call(json!({"user_name": accept(json!({"name": {"first": "Ana"}}))})),
        &capabilities(false),
        None,
    )
    .await;
    assert_eq!(nested["error"]["code"], -32602, "{nested}");
    // 10 000 answers to requests never made: ignored, the one asked for is used, none is sealed.
    let mut many: serde_json::Map<String, Value> =
        (0..10_000).map(|i| (format!("k{i}"), accept(json!({"name": "x".repeat(8)})))).collect();
    let flood = rpc(&running, "tools/call", call(Value::Object(many.clone())), &capabilities(false), None).await;
    assert_eq!(flood["result"]["resultType"], "input_required");
    assert!(flood["result"]["requestState"].as_str().unwrap().len() < 1_000, "{}", flood["result"]["requestState"]);
    many.insert("user_name".to_owned(), accept(json!({"name": "Ana"})));
    let used = rpc(&running, "tools/call", call(Value::Object(many)), &capabilities(false), None).await;
    assert_eq!(used["result"]["content"], json!([{"type": "text", "text": "Hello, Ana!"}]));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_sent_before_it_was_asked_runs_the_tool_in_one_round() {
    // The client answers for its user: an `approval` in the first round is taken as given.
    let running = Running::start(builder().build()).await;
    let call = json!({"name": "wipe", "arguments": {"path": "/srv/data"},
        "inputResponses": {"approval": {"action": "accept", "content": {}}}});
    let reply = rpc(&running, "tools/call", call, &capabilities(false), None).await;
    assert_eq!(reply["result"]["content"], json!([{"type": "text", "text": "wiped /srv/data"}]));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_question_shows_the_start_of_an_argument_and_states_the_cut() {
    let running = Running::start(builder().build()).await;
    // A model puts what matters past what the user is shown.
    let arguments = json!({"path": format!("{}/etc/passwd", "a".repeat(3_000))});
    let first =
        rpc(&running, "tools/call", json!({"name": "wipe", "arguments": arguments}), &capabilities(false), None).await;
    let message = first["result"]["inputRequests"]["approval"]["params"]["message"].as_str().unwrap().to_owned();
    assert!(!message.contains("/etc/passwd"));
    assert_eq!(
        message,
        format!(
            "Allow the tool `wipe` to run with these arguments?\n\"path\": \"{}... (cut: 2713 more characters)",
            "a".repeat(299)
        )
    );
    running.stop().await;
}

/// Creates a task of `tool` as `user`: the `tools/call` response.
async fn create(running: &Running, tool: &str, user: Option<&str>) -> Value {
    rpc(running, "tools/call", json!({"name": tool, "arguments": {}}), &capabilities(true), user).await
}

async fn until_not(running: &Running, id: &str, from: &str, user: Option<&str>) -> Value {
    for _ in 0..POLLS {
        let got = rpc(running, "tasks/get", json!({"taskId": id}), &capabilities(true), user).await;
        if got["result"]["status"] != from {
            return got["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} stayed {from}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_principal_fills_the_task_store_and_every_other_principal_is_refused_until_the_ttl() {
    let running = Running::start(builder().task_store(MemoryTaskStore::new(3, 1 << 20)).build()).await;
    for _ in 0..3 {
        let created = create(&running, "quick", Some("mallory")).await;
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();
        assert_eq!(until_not(&running, &id, "working", Some("mallory")).await["status"], "completed");
    }
    // Three finished tasks of one caller hold the store for their whole time to live.
    let refused = create(&running, "quick", Some("ana")).await;
    assert_eq!(
        refused["error"],
        json!({"code": -32603, "message": "the task store failed: the task store is full (at most 3 tasks and 1048576 \
               bytes); wait for tasks to expire, or raise the caps with MemoryTaskStore::new"})
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_update_of_another_principal_a_finished_task_or_a_cancelled_one_changes_nothing() {
    let running = Running::start(builder().build()).await;
    let created = create(&running, "ask_name", Some("ana")).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(until_not(&running, &id, "working", Some("ana")).await["status"], "input_required");
    let answer = json!({"taskId": id, "inputResponses": {"user_name": accept(json!({"name": "Mallory"}))}});
    let stranger = rpc(&running, "tasks/update", answer.clone(), &capabilities(true), Some("bob")).await;
    assert_eq!(stranger["error"]["code"], -32602);
    assert_eq!(until_not(&running, &id, "working", Some("ana")).await["status"], "input_required");

    // Cancelled while it waits for input: an answer after does not run it again.
    let ack = rpc(&running, "tasks/cancel", json!({"taskId": id}), &capabilities(true), Some("ana")).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}));
    let late = rpc(&running, "tasks/update", answer, &capabilities(true), Some("ana")).await;
    assert_eq!(late["result"], json!({"resultType": "complete"}));
    let got = until_not(&running, &id, "working", Some("ana")).await;
    assert_eq!(got["status"], "cancelled");
    assert_eq!(got.get("result"), None);

    // A finished task: the update is acknowledged and ignored.
    let created = create(&running, "quick", None).await;
    let done = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(until_not(&running, &done, "working", None).await["status"], "completed");
    let update = json!({"taskId": done, "inputResponses": {"x": accept(json!({}))}});
    let ack = rpc(&running, "tasks/update", update, &capabilities(true), None).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}));
    assert_eq!(until_not(&running, &done, "working", None).await["result"]["content"][0]["text"], "done");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_answered_with_junk_fails_with_invalid_params() {
    let running = Running::start(builder().build()).await;
    let created = create(&running, "ask_name", None).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(until_not(&running, &id, "working", None).await["status"], "input_required");
    let answer = json!({"taskId": id, "inputResponses": {"user_name": {"action": 7}}});
    let ack = rpc(&running, "tasks/update", answer, &capabilities(true), None).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}));
    let got = until_not(&running, &id, "working", None).await;
    assert_eq!(got["status"], "failed");
    assert_eq!(got["error"]["code"], -32602, "{got}");
    running.stop().await;
}

/// A prompt whose handler tells the principal its context has, after asking a name.
fn prompt_server() -> McpServer {
    builder()
        .prompt(Prompt::new("whoami"), |request| async move {
            let name = match request.ctx.elicit::<Name>("Your name?").key("user_name").await? {
                Elicitation::Accept(Name { name }) => name,
                _ => "nobody".to_owned(),
            };
            let principal = request.ctx.principal().unwrap_or("none").to_owned();
            Ok(vec![PromptMessage::user(ContentPart::text(format!("{name} as {principal}")))])
        })
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_sees_the_principal_of_the_context_hook_and_its_state_is_bound_to_it() {
    let running = Running::start(prompt_server()).await;
    let first = rpc(&running, "prompts/get", json!({"name": "whoami"}), &capabilities(false), Some("ana")).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = json!({"name": "whoami", "requestState": state,
        "inputResponses": {"user_name": accept(json!({"name": "Ana"}))}});
    let ana = rpc(&running, "prompts/get", retry.clone(), &capabilities(false), Some("ana")).await;
    assert_eq!(ana["result"]["messages"][0]["content"]["text"], "Ana as ana");
    let bob = rpc(&running, "prompts/get", retry, &capabilities(false), Some("bob")).await;
    assert_eq!(bob["error"], json!({"code": -32602, "message": REFUSED}));
    running.stop().await;
}

/// A template whose handler echoes the value of its variable.
fn template_server() -> McpServer {
    builder()
        .resource_template(ResourceTemplate::new("files://doc/{name}", "doc").unwrap(), |request| async move {
            Ok(ResourceContents::Text(format!("{:?}", request.variables["name"])))
        })
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_variable_that_decodes_to_a_path_or_nul_expands_nothing() {
    // A value decoded holds no `/` or `\\`, no control character, and is not `.` or `..`.
    let running = Running::start(template_server()).await;
    let read = |uri: &str| json!({"uri": uri});
    for uri in ["files://doc/..", "files://doc/..%2F..%2Fetc%2Fpasswd", "files://doc/a%00b", "files://doc/%2E"] {
        let reply = rpc(&running, "resources/read", read(uri), &capabilities(false), None).await;
        assert_eq!(
            (reply["error"]["code"].clone(), reply["error"]["data"].clone()),
            (json!(-32602), json!({"uri": uri})),
            "{uri}"
        );
    }
    let reply = rpc(&running, "resources/read", read("files://doc/%3F%23"), &capabilities(false), None).await;
    assert_eq!(reply["result"]["contents"][0]["text"], r#""?#""#);
    let refused = rpc(&running, "resources/read", read("files://doc/../x"), &capabilities(false), None).await;
    assert_eq!(refused["error"]["code"], -32602);
    let long = format!("files://doc/{}", "a".repeat(6_000));
    let reply = rpc(&running, "resources/read", read(&long), &capabilities(false), None).await;
    assert_eq!(reply["result"]["contents"][0]["text"].as_str().map(str::len), Some(6_002));
    // A URI of 1 MiB does not fit the `Mcp-Name` header the request must carry: 431.
    let huge = format!("files://doc/{}", "a".repeat(1 << 20));
    let reply = rpc(&running, "resources/read", read(&huge), &capabilities(false), None).await;
    assert_eq!(reply, json!({"status": 431}));
    running.stop().await;
}

/// How many times `count_after_answer` got past its question.
static ANSWERED_RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Count the runs that got an answer.
#[tool(tags(task))]
async fn count_after_answer(ctx: &ToolContext) -> Result<String, TalkBackError> {
    ctx.elicit::<Name>("Your name?").key("user_name").await?;
    let runs = ANSWERED_RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    Ok(format!("run {runs}"))
}

/// Ask with the default key, after the approval.
#[tool(tags(confirm))]
async fn approved_question(ctx: &ToolContext) -> Result<String, TalkBackError> {
    ctx.elicit::<Name>("Your name?").await?;
    Ok("asked".to_owned())
}

/// Ask `count` questions with the default keys, one after the other.
#[tool]
async fn many_questions(ctx: &ToolContext, count: u32) -> Result<String, TalkBackError> {
    let mut names = 0;
    for _ in 0..count {
        if let Elicitation::Accept(Name { .. }) = ctx.elicit::<Name>("Next name?").await? {
            names += 1;
        }
    }
    Ok(format!("{names} names"))
}

fn more_server() -> McpServer {
    let registry = Registry::builder()
        .tool(count_after_answer::TOOL)
        .tool(approved_question::TOOL)
        .tool(many_questions::TOOL)
        .build()
        .unwrap();
    McpServer::builder(registry).build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_updates_at_once_with_the_last_answer_run_the_task_once() {
    let running = Running::start(more_server()).await;
    let created = create(&running, "count_after_answer", None).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(until_not(&running, &id, "working", None).await["status"], "input_required");
    let answer = json!({"taskId": id, "inputResponses": {"user_name": accept(json!({"name": "Ana"}))}});
    let with_tasks = capabilities(true);
    let updates: Vec<_> = (0..8).map(|_| rpc(&running, "tasks/update", answer.clone(), &with_tasks, None)).collect();
    for ack in futures::future::join_all(updates).await {
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    }
    let done = until_not(&running, &id, "working", None).await;
    assert_eq!(done["result"]["content"][0]["text"], "run 1");
    assert_eq!(ANSWERED_RUNS.load(std::sync::atomic::Ordering::SeqCst), 1);
    running.stop().await;
}

/// How many times `gated_after_answer` got past its question.
static GATED_RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Opened by its test once every `tasks/update` is acknowledged: until then a run of
/// `gated_after_answer` holds its place among the server's running tasks.
static GATE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// Count the runs that got an answer; each ends once the gate opens.
#[tool(tags(task))]
async fn gated_after_answer(ctx: &ToolContext) -> Result<String, TalkBackError> {
    ctx.elicit::<Name>("Your name?").key("user_name").await?;
    let runs = GATED_RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    drop(GATE.acquire().await);
    Ok(format!("run {runs}"))
}

/// A task store whose next `readers` reads (once armed) each read the record, then wait until
/// all of them have, so that as many concurrent `tasks/update`s all read the record before any of
/// them writes it.
#[derive(Clone)]
struct Gathering(std::sync::Arc<(MemoryTaskStore, std::sync::atomic::AtomicUsize, tokio::sync::Barrier)>);

impl Gathering {
    fn new(readers: usize) -> Self {
        Self(std::sync::Arc::new((
            MemoryTaskStore::default(),
            std::sync::atomic::AtomicUsize::new(0),
            tokio::sync::Barrier::new(readers),
        )))
    }

    /// Makes the next `readers` reads gather.
    fn arm(&self, readers: usize) {
        self.0.1.store(readers, std::sync::atomic::Ordering::SeqCst);
    }
}

impl TaskStore for Gathering {
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        self.0.0.insert(record)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        Box::pin(async move {
            let read = self.0.0.get(id).await;
            let ordering = std::sync::atomic::Ordering::SeqCst;
            if self.0.1.fetch_update(ordering, ordering, |left| left.checked_sub(1)).is_ok() {
                self.0.2.wait().await;
            }
            read
        })
    }

    fn replace(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
        self.0.0.replace(record)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_updates_that_all_read_input_required_before_any_writes_all_complete_and_run_the_task_once() {
    let store = Gathering::new(8);
    let registry = Registry::builder().tool(gated_after_answer::TOOL).build().unwrap();
    let running = Running::start(McpServer::builder(registry).task_store(store.clone()).build()).await;
    let created = create(&running, "gated_after_answer", None).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(until_not(&running, &id, "working", None).await["status"], "input_required");
    store.arm(8);
    let answer = json!({"taskId": id, "inputResponses": {"user_name": accept(json!({"name": "Ana"}))}});
    let with_tasks = capabilities(true);
    let updates: Vec<_> = (0..8).map(|_| rpc(&running, "tasks/update", answer.clone(), &with_tasks, None)).collect();
    let acks = tokio::time::timeout(BOUND, futures::future::join_all(updates)).await.unwrap();
    for ack in acks {
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    }
    GATE.add_permits(1);
    let done = until_not(&running, &id, "working", None).await;
    assert_eq!(done["result"]["content"][0]["text"], "run 1");
    assert_eq!(GATED_RUNS.load(std::sync::atomic::Ordering::SeqCst), 1);
    running.stop().await;
}

/// A task store whose next write (once armed) stalls until the test lets it go, as a store that
/// is slow to answer.
#[derive(Clone, Default)]
struct Stalling(std::sync::Arc<StallingParts>);

#[derive(Default)]
struct StallingParts {
    inner: MemoryTaskStore,
    armed: std::sync::atomic::AtomicBool,
    /// Told when the stalled write arrived.
    stalled: tokio::sync::Notify,
    /// Lets the stalled write go on.
    go: tokio::sync::Notify,
}

impl TaskStore for Stalling {
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        self.0.inner.insert(record)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        self.0.inner.get(id)
    }

    fn replace(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
        Box::pin(async move {
            if self.0.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
                self.0.stalled.notify_one();
                self.0.go.notified().await;
            }
            self.0.inner.replace(record).await
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_waiting_on_another_update_whose_write_stalls_fails_naming_the_task_and_the_other_completes() {
    let store = Stalling::default();
    let running = Running::start(McpServer::builder(registry()).task_store(store.clone()).build()).await;
    let created = create(&running, "ask_name", None).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(until_not(&running, &id, "working", None).await["status"], "input_required");
    store.0.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let answer = json!({"taskId": id, "inputResponses": {"user_name": accept(json!({"name": "Ana"}))}});
    let with_tasks = capabilities(true);
    let first = rpc(&running, "tasks/update", answer.clone(), &with_tasks, None);
    let second = async {
        tokio::time::timeout(BOUND, store.0.stalled.notified()).await.unwrap();
        let second = rpc(&running, "tasks/update", answer.clone(), &with_tasks, None).await;
        store.0.go.notify_one();
        second
    };
    let (first, second) = tokio::time::timeout(BOUND, async { tokio::join!(first, second) }).await.unwrap();
    assert_eq!(
        second["error"],
        json!({"code": -32600, "message": format!("task `{id}` is being resumed by another tasks/update on this \
               server; read it with tasks/get and send the answers it still asks for again")})
    );
    assert_eq!(first["result"], json!({"resultType": "complete"}), "{first}");
    let done = until_not(&running, &id, "working", None).await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ana!");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_approval_the_first_default_key_is_still_input_1() {
    let running = Running::start(more_server()).await;
    let call = json!({"name": "approved_question", "arguments": {},
        "inputResponses": {"approval": {"action": "accept", "content": {}}}});
    let reply = rpc(&running, "tools/call", call, &capabilities(false), None).await;
    let keys: Vec<&String> = reply["result"]["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["input-1"]);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_rounds_of_questions_end_with_every_answer_and_a_state_that_grows_by_round() {
    let running = Running::start(more_server()).await;
    let rounds = 300;
    let mut state: Option<String> = None;
    let mut sizes = Vec::new();
    for round in 1..=rounds {
        let mut call = json!({"name": "many_questions", "arguments": {"count": rounds}});
        if let Some(state) = &state {
            call["requestState"] = json!(state);
            call["inputResponses"] = json!({format!("input-{}", round - 1): accept(json!({"name": "x"}))});
        }
        let reply = rpc(&running, "tools/call", call, &capabilities(false), None).await;
        assert_eq!(reply["result"]["resultType"], "input_required", "round {round}: {reply:.300}");
        let next = reply["result"]["requestState"].as_str().unwrap().to_owned();
        sizes.push(next.len());
        state = Some(next);
    }
    let call = json!({"name": "many_questions", "arguments": {"count": rounds}, "requestState": state,
        "inputResponses": {format!("input-{rounds}"): accept(json!({"name": "x"}))}});
    let reply = rpc(&running, "tools/call", call, &capabilities(false), None).await;
    assert_eq!(reply["result"]["content"][0]["text"], "300 names");
    // Each answer adds its bytes to the state the client sends back: about 60 bytes a round.
    assert!(sizes[rounds as usize - 1] > 50 * rounds as usize, "{sizes:?}");
    running.stop().await;
}

/// A server of one prompt that asks a name, over stdio at protocol 2025-06-18.
async fn stdio_prompt_client(
    capabilities: Value,
) -> (common::RawClient<tokio::io::DuplexStream, tokio::io::DuplexStream>, tokio::sync::oneshot::Sender<()>) {
    let server = prompt_server();
    let (server_read, client_write) = tokio::io::duplex(64 * 1024);
    let (client_read, server_write) = tokio::io::duplex(64 * 1024);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        server
            .serve_lines_until(server_read, server_write, async {
                let _ = stopped.await;
            })
            .await
    });
    (common::RawClient::initialize_with(client_read, client_write, capabilities).await, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_a_prompt_elicits_with_a_server_request_and_a_ping_is_answered_meanwhile() {
    let (mut client, _stop) = stdio_prompt_client(json!({"elicitation": {}})).await;
    client.send(json!({"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": "whoami"}})).await;
    let request = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!(request["method"], "elicitation/create", "{request}");
    client.send(json!({"jsonrpc": "2.0", "id": 6, "method": "ping"})).await;
    let pong = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 6, "result": {}}));
    client
        .send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"name": "Bo"}}}))
        .await;
    let reply = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!(reply["id"], 5);
    assert_eq!(reply["result"]["messages"][0]["content"]["text"], "Bo as none");

    // The client never answers: cancelling the prompt frees it, and the connection goes on.
    client.send(json!({"jsonrpc": "2.0", "id": 7, "method": "prompts/get", "params": {"name": "whoami"}})).await;
    let request = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!(request["method"], "elicitation/create");
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})).await;
    client.send(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"})).await;
    let pong = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 8, "result": {}}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_a_client_may_follow_a_thousand_uris_and_the_next_is_refused_until_it_unsubscribes() {
    // Each `resources/subscribe` of a URI that expands a template is a forwarding task that ends
    // on unsubscribe or when an update of that URI cannot be sent: 1,000 per connection at most.
    let server = builder()
        .resource_template(ResourceTemplate::new("files://doc/{name}", "doc").unwrap(), |_| async {
            Ok(ResourceContents::Text(String::new()))
        })
        .resource_subscriptions(true)
        .build();
    let (server_read, client_write) = tokio::io::duplex(64 * 1024);
    let (client_read, server_write) = tokio::io::duplex(64 * 1024);
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        server
            .serve_lines_until(server_read, server_write, async {
                let _ = stopped.await;
            })
            .await
    });
    let mut client = common::RawClient::initialize_with(client_read, client_write, json!({})).await;
    for i in 0..1_000u64 {
        let uri = format!("files://doc/made-up-{i}");
        client
            .send(json!({"jsonrpc": "2.0", "id": 10 + i, "method": "resources/subscribe", "params": {"uri": uri}}))
            .await;
        let reply = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
        assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 10 + i, "result": {}}));
    }
    let subscribe = |id: u64, uri: &str| json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": uri}});
    client.send(subscribe(5_000, "files://doc/one-more")).await;
    assert_eq!(
        tokio::time::timeout(BOUND, client.recv()).await.unwrap()["error"],
        json!({"code": -32600, "message": "this connection follows 1000 resources already, the most it may; \
            `resources/unsubscribe` from one first"})
    );
    client
        .send(json!({"jsonrpc": "2.0", "id": 5_001, "method": "resources/unsubscribe", "params": {"uri": "files://doc/made-up-0"}}))
        .await;
    assert_eq!(tokio::time::timeout(BOUND, client.recv()).await.unwrap()["result"], json!({}));
    client.send(subscribe(5_002, "files://doc/one-more")).await;
    assert_eq!(tokio::time::timeout(BOUND, client.recv()).await.unwrap()["result"], json!({}));
}

/// Log `count` messages of 1 KiB from a blocking thread.
#[tool(blocking)]
fn flood(ctx: &ToolContext, count: u32) -> String {
    for i in 0..count {
        ctx.log(tool_runtime::LogLevel::Info, format!("{i:04} {}", "x".repeat(1019)));
    }
    "flooded".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_no_log_message_follows_the_response_of_its_call() {
    let registry = Registry::builder().tool(flood::TOOL).build().unwrap();
    let server = McpServer::builder(registry).build();
    let (server_read, client_write) = tokio::io::duplex(64 * 1024);
    let (client_read, server_write) = tokio::io::duplex(64 * 1024);
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        server
            .serve_lines_until(server_read, server_write, async {
                let _ = stopped.await;
            })
            .await
    });
    let mut client = common::RawClient::initialize_with(client_read, client_write, json!({})).await;
    client.send(json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "info"}})).await;
    assert_eq!(tokio::time::timeout(BOUND, client.recv()).await.unwrap()["id"], 1);
    // 4 000 messages of 1 KiB, read only after the 5 s the response waits for them.
    client.call(2, "flood", json!({"count": 4_000}), false).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let mut before = 0;
    loop {
        let message = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
        if message.get("id") == Some(&json!(2)) {
            assert_eq!(message["result"]["content"][0]["text"], "flooded");
            break;
        }
        before += 1;
    }
    client.ping(3).await;
    let mut after = 0;
    loop {
        let message = tokio::time::timeout(BOUND, client.recv()).await.unwrap();
        if message.get("id") == Some(&json!(3)) {
            break;
        }
        after += 1;
    }
    // The sender is stopped when the wait times out; the one message rmcp already had queued when
    // it stopped may still be written after the response (rmcp writes responses first).
    assert!(after <= 1, "{before} messages before the response, {after} after it");
    // The call's queue holds at most `LOG_QUEUE` messages: with the client not reading, the rest
    // (beyond the queue, the pipe's 64 KiB and the one being written) are dropped.
    assert!(before <= tool_mcp::talk::LOG_QUEUE + 64 + 1, "{before} messages before the response");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_not_created_with_more_answers_than_it_keeps() {
    // 200 answers of 1 KB no tool asked for: refused before anything is stored, saying what to send.
    let running = Running::start(builder().task_store(MemoryTaskStore::new(100, 300_000)).build()).await;
    let junk: serde_json::Map<String, Value> = (0..200)
        .map(|i| (format!("junk-{i}"), json!({"action": "accept", "content": {"x": "y".repeat(1_000)}})))
        .collect();
    let call = json!({"name": "quick", "arguments": {}, "inputResponses": junk});
    let refused = rpc(&running, "tools/call", call, &capabilities(true), Some("mallory")).await;
    assert_eq!(
        refused["error"],
        json!({"code": -32602, "message": "a task keeps at most 64 answers of 1048576 bytes in all; this call brings \
            200 of 209891 bytes: send only the answers to the input requests asked"}),
    );
    let small = create(&running, "quick", Some("ana")).await;
    assert_eq!(small["result"]["resultType"], "task", "{small:.300}");
    running.stop().await;
}

/// Set once the run of `until_cancelled` ended (its future dropped, as a stopped call's is).
static SAW_CANCEL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sets [`SAW_CANCEL`] when dropped.
struct Ended;

impl Drop for Ended {
    fn drop(&mut self) {
        SAW_CANCEL.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Run until stopped.
#[tool(tags(task))]
async fn until_cancelled(ctx: &ToolContext) -> String {
    let _ended = Ended;
    ctx.cancellation().cancelled().await;
    "stopped".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_record_expired_is_stopped() {
    let registry = Registry::builder().tool(until_cancelled::TOOL).build().unwrap();
    let running = Running::start(McpServer::builder(registry).task_ttl(Duration::from_millis(200)).build()).await;
    let created = create(&running, "until_cancelled", None).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let cancel = rpc(&running, "tasks/cancel", json!({"taskId": id}), &capabilities(true), None).await;
    assert_eq!(cancel["error"]["code"], -32602, "{cancel}");
    // Bounded wait for the run to see its end.
    for _ in 0..50 {
        if SAW_CANCEL.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(SAW_CANCEL.load(std::sync::atomic::Ordering::SeqCst), "the run of an expired task is still going");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_protocol_with_a_made_up_session_header_on_a_stateless_server_is_not_left_waiting() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let running = Running::start(builder().build()).await;
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask_name", "arguments": {},
        "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}})
        .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\nContent-Type: \
         application/json\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: made-up\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(running.addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    // Read what comes in 3 s, until the call's result.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while let Ok(Ok(n)) = tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buffer[..n]);
        if String::from_utf8_lossy(&seen).contains("isError") {
            break;
        }
    }
    let seen = String::from_utf8_lossy(&seen);
    assert!(seen.contains("cannot reach the client on stateless Streamable HTTP before protocol 2026-07-28"), "{seen}");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_subscribe_with_a_made_up_session_header_on_a_stateless_server_is_refused() {
    let server = builder()
        .resource_template(ResourceTemplate::new("files://doc/{name}", "doc").unwrap(), |_| async {
            Ok(ResourceContents::Text(String::new()))
        })
        .resource_subscriptions(true)
        .build();
    let running = Running::start(server).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "files://doc/a"}});
    for session in [None, Some("made-up")] {
        let mut headers = vec![("MCP-Protocol-Version", "2025-11-25")];
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id", session));
        }
        let response =
            tokio::time::timeout(BOUND, post(running.addr, "/mcp", "127.0.0.1", &headers, &body)).await.unwrap();
        let reply: Value = match response.header("content-type") {
            Some("text/event-stream") => response.events().pop().unwrap(),
            _ => serde_json::from_str(&response.body).unwrap(),
        };
        assert_eq!(reply["error"]["code"], -32600, "{session:?}: {reply}");
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_asks_over_stateless_http_at_an_earlier_protocol_says_what_to_change() {
    let running = Running::start(prompt_server()).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "whoami",
        "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}});
    let headers = [("MCP-Protocol-Version", "2025-11-25")];
    let response = tokio::time::timeout(BOUND, post(running.addr, "/mcp", "127.0.0.1", &headers, &body)).await.unwrap();
    let reply: Value = match response.header("content-type") {
        Some("text/event-stream") => response.events().pop().unwrap(),
        _ => serde_json::from_str(&response.body).unwrap(),
    };
    assert_eq!(
        reply["error"],
        json!({"code": -32602, "message": "the input request failed: `elicitation/create` cannot reach the client on \
               stateless Streamable HTTP before protocol 2026-07-28 (no session carries the answer back); send the \
               call at protocol 2026-07-28, or use stdio or a server with legacy sessions"})
    );
    running.stop().await;
}

#[cfg(feature = "auth")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_update_with_a_token_that_does_not_reach_the_tool_is_refused() {
    use common::auth::{Issuer, claims, rsa_a};
    let issuer = Issuer::start(true).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let auth = tool_mcp::auth::ResourceServer::builder(&issuer.url, &resource).discover().await.unwrap();
    let server = McpServer::builder(registry()).auth(auth).build();
    let running = Running::start_on(server, listener).await;
    let writer = rsa_a(&claims(&issuer, &resource, "ana", "tools:read tools:write"));
    let reader = rsa_a(&claims(&issuer, &resource, "ana", "tools:read"));
    let send = |method: &'static str, mut params: Value, token: String| {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities(true),
        });
        async move {
            let name = params.get("name").or_else(|| params.get("taskId")).and_then(Value::as_str).unwrap().to_owned();
            let authorization = format!("Bearer {token}");
            let headers = [
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", method),
                ("Mcp-Name", name.as_str()),
                ("Authorization", authorization.as_str()),
            ];
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
            let response = tokio::time::timeout(BOUND, post(addr, "/mcp", "127.0.0.1", &headers, &body)).await.unwrap();
            match response.header("content-type") {
                Some("text/event-stream") => response.events().pop().unwrap(),
                _ => serde_json::from_str(&response.body).unwrap_or(json!({"status": response.status})),
            }
        }
    };
    // The reader may not call the tool at all.
    let refused = send("tools/call", json!({"name": "ask_name", "arguments": {}}), reader.clone()).await;
    assert_eq!(
        refused["error"],
        json!({"code": -32600, "message": "tool `ask_name` needs the scope `tools:write`; the token has tools:read"})
    );
    let created = send("tools/call", json!({"name": "ask_name", "arguments": {}}), writer.clone()).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let mut status = Value::Null;
    for _ in 0..POLLS {
        status = send("tasks/get", json!({"taskId": id}), writer.clone()).await["result"]["status"].clone();
        if status != "working" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status, "input_required");
    let answer = json!({"taskId": id, "inputResponses": {"user_name": accept(json!({"name": "Mallory"}))}});
    let update = send("tasks/update", answer, reader.clone()).await;
    // A token whose scopes do not reach the tool sees no task of it, as if there were none.
    assert_eq!(
        update["error"],
        json!({"code": -32602, "message": format!("no task `{id}`: it does not exist, has expired or was created by \
            another caller; send the taskId a tools/call result gave you")}),
        "{update}"
    );
    running.stop().await;
}
