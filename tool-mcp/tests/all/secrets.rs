//! `Secret<T>` arguments served over MCP on real Streamable HTTP (protocol 2026-07-28): a marker
//! secret sent in `tools/call` is found in no response (a result that echoes it, a decoding error
//! that would quote it, an approval question) and in no stored task record, while the tool that
//! uses it gets it whole, also on a task's rerun after `tasks/update`.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_mcp::McpServer;
use tool_mcp::tasks::{MemoryTaskStore, TaskRecord, TaskStore, TaskStoreError};
use tool_runtime::talk::Elicitation;
use tool_runtime::{BoxFuture, Registry, Secret, TalkBackError, ToolContext, tool};

use common::{Running, post};

const BOUND: Duration = Duration::from_secs(10);

/// How many times a test reads a task while waiting for it to change, 20 ms apart.
const POLLS: usize = 500;

/// The marker: a value that appears nowhere else.
const MARK: &str = "MARKER-5ecret-mcp-41d2";

/// Log in (echoes what it is given).
#[tool]
fn login(
    /// The user.
    user: String,
    /// The token.
    token: Secret<String>,
    /// A one-time code.
    code: Option<Secret<u32>>,
) -> String {
    format!(
        "{user} logged in with {} ({} code digits)",
        token.expose(),
        code.map_or(0, |c| c.expose().to_string().len())
    )
}

/// A yes or no.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Go ahead.
    confirm: bool,
}

/// Ask, then use the token (as a task).
#[tool(tags(task))]
async fn rotate(
    ctx: &ToolContext,
    /// The token to rotate.
    token: Secret<String>,
) -> Result<String, TalkBackError> {
    Ok(match ctx.elicit::<Confirm>("Rotate?").key("confirm").await? {
        Elicitation::Accept(Confirm { confirm: true }) => {
            format!("rotated a token of {} bytes: {}", token.expose().len(), token.expose())
        }
        _ => "kept".to_owned(),
    })
}

/// Delete an account (asks the user first).
#[tool(tags(confirm))]
fn delete_account(
    /// The account.
    account: String,
    /// The admin token.
    token: Secret<String>,
) -> String {
    format!("deleted {account} ({} token bytes)", token.expose().len())
}

/// A task store that keeps the JSON of every record written to it.
#[derive(Clone)]
pub(crate) struct Recording {
    pub(crate) store: Arc<MemoryTaskStore>,
    pub(crate) written: Arc<Mutex<Vec<String>>>,
}

impl TaskStore for Recording {
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        self.written.lock().unwrap().push(serde_json::to_string(&record).unwrap());
        self.store.insert(record)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        self.store.get(id)
    }

    fn replace(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
        self.written.lock().unwrap().push(serde_json::to_string(&record).unwrap());
        self.store.replace(record)
    }
}

fn server(written: Arc<Mutex<Vec<String>>>) -> McpServer {
    let registry = Registry::builder().tool(login::TOOL).tool(rotate::TOOL).tool(delete_account::TOOL).build().unwrap();
    let store = Recording { store: Arc::new(MemoryTaskStore::new(100, 1 << 20)), written };
    McpServer::builder(registry).task_store(store).build()
}

/// A request of protocol 2026-07-28 with `capabilities` in `_meta`: the response body as sent and
/// its JSON-RPC message.
async fn rpc(running: &Running, method: &str, mut params: Value, capabilities: Value) -> (String, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let name = params.get("name").or_else(|| params.get("taskId")).and_then(Value::as_str).unwrap_or("").to_owned();
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method), ("Mcp-Name", name.as_str())];
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = tokio::time::timeout(BOUND, post(running.addr, "/mcp", "127.0.0.1", &headers, &body)).await.unwrap();
    let message = match response.header("content-type") {
        Some("text/event-stream") => response.events().pop().unwrap(),
        _ => serde_json::from_str(&response.body).unwrap(),
    };
    (response.body, message)
}

fn elicitation() -> Value {
    json!({"elicitation": {}})
}

fn with_tasks() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_that_echoes_the_secret_is_sent_redacted() {
    let running = Running::start(server(Arc::default())).await;
    let call = json!({"name": "login", "arguments": {"user": "ann", "token": MARK}});
    let (body, message) = rpc(&running, "tools/call", call, elicitation()).await;
    assert_eq!(
        message["result"]["content"],
        json!([{"type": "text", "text": "ann logged in with [redacted] (0 code digits)"}])
    );
    assert!(!body.contains(MARK), "{body}");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decoding_error_is_sent_without_the_secret() {
    let running = Running::start(server(Arc::default())).await;
    let call = json!({"name": "login", "arguments": {"user": "ann", "token": "tok1", "code": MARK}});
    let (body, message) = rpc(&running, "tools/call", call, elicitation()).await;
    assert_eq!(message["result"]["isError"], true, "{message}");
    assert_eq!(
        message["result"]["content"][0]["text"],
        "invalid arguments for `login`: `code`: invalid type: string \"[redacted]\", expected an integer from 0 to 4294967295"
    );
    assert!(!body.contains(MARK), "{body}");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_question_and_its_request_state_carry_no_secret() {
    let running = Running::start(server(Arc::default())).await;
    let call = json!({"name": "delete_account", "arguments": {"account": "acme", "token": MARK}});
    let (body, message) = rpc(&running, "tools/call", call, elicitation()).await;
    let result = &message["result"];
    assert_eq!(result["resultType"], "input_required", "{message}");
    let question = result["inputRequests"]["approval"]["params"]["message"].as_str().unwrap();
    assert_eq!(
        question,
        "Allow the tool `delete_account` to run with these arguments?\n\"account\": \"acme\"\n\"token\": \"[redacted]\""
    );
    assert!(!body.contains(MARK), "{body}");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_record_keeps_the_secret_sealed_and_the_rerun_gets_it_whole() {
    let written = Arc::new(Mutex::new(Vec::new()));
    let running = Running::start(server(written.clone())).await;
    let call = json!({"name": "rotate", "arguments": {"token": MARK}});
    let (body, created) = rpc(&running, "tools/call", call, with_tasks()).await;
    assert!(!body.contains(MARK), "{body}");
    let id = created["result"]["taskId"].as_str().expect("a task").to_owned();
    let mut status = String::new();
    for _ in 0..POLLS {
        let (body, got) = rpc(&running, "tasks/get", json!({"taskId": id}), with_tasks()).await;
        assert!(!body.contains(MARK), "{body}");
        status = got["result"]["status"].as_str().unwrap_or_default().to_owned();
        if status != "working" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status, "input_required");
    let answer =
        json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    rpc(&running, "tasks/update", answer, with_tasks()).await;
    let mut done = Value::Null;
    for _ in 0..POLLS {
        let (body, got) = rpc(&running, "tasks/get", json!({"taskId": id}), with_tasks()).await;
        assert!(!body.contains(MARK), "{body}");
        if got["result"]["status"] != "working" {
            done = got["result"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The rerun opened the sealed token: its length is the marker's, its echo redacted.
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"],
        json!([{"type": "text", "text": format!("rotated a token of {} bytes: [redacted]", MARK.len())}])
    );
    let written = written.lock().unwrap().clone();
    assert!(written.len() >= 3, "{written:?}");
    for record in written.iter() {
        assert!(!record.contains(MARK), "{record}");
        assert!(record.contains(r#""arguments":"{\"token\":\"sealed:v1:"#), "{record}");
    }
    running.stop().await;
}
