//! MCP tasks (`io.modelcontextprotocol/tasks`) over stateless Streamable HTTP at protocol
//! 2026-07-28: a tagged tool's call becomes a task, read with `tasks/get`, answered with
//! `tasks/update`, stopped with `tasks/cancel`, seen only by the principal that created it.

use crate::common;

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tool_mcp::McpServer;
use tool_runtime::talk::Elicitation;
use tool_runtime::{Registry, TalkBackError, ToolContext, tool};

use common::{Running, rpc};

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

/// Reads the task until its status is no longer `from` (at most [`POLLS`] times); its result.
async fn until_not(running: &Running, id: &str, from: &str) -> Value {
    for _ in 0..POLLS {
        let got = get(running, id, None).await;
        if got["result"]["status"] != from {
            return got["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} stayed {from}");
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
