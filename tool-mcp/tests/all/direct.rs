//! Stateless 2026-07-28 `tools/call` requests that the Streamable HTTP endpoint answers itself,
//! on a real loopback server: each answer is the one rmcp's path gives the same request (sent
//! again with an `Accept` weight, which leaves it to rmcp), and a client that goes away cancels
//! the call.

use crate::common;

use std::sync::OnceLock;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tool_mcp::McpServer;
use tool_runtime::talk::Elicitation;
use tool_runtime::{Registry, TalkBackError, ToolContext, tool};

use common::{Running, post_raw};

const BOUND: Duration = Duration::from_secs(10);

/// Greet someone.
#[tool]
fn greet(
    /// Who to greet.
    name: String,
) -> String {
    format!("hello, {name}")
}

/// A name.
#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

/// Ask for a name.
#[tool]
async fn ask(ctx: &ToolContext) -> Result<String, TalkBackError> {
    Ok(match ctx.elicit::<Name>("Your name?").key("who").await? {
        Elicitation::Accept(Name { name }) => format!("hello, {name}"),
        _ => "no name".to_owned(),
    })
}

/// The cancellation token of the running `wait` call, and the signal that it started.
static WAITING: OnceLock<CancellationToken> = OnceLock::new();
static STARTED: Notify = Notify::const_new();

/// Wait until cancelled.
#[tool]
async fn wait(ctx: &ToolContext) -> String {
    let _ = WAITING.set(ctx.cancellation().clone());
    STARTED.notify_one();
    ctx.cancellation().cancelled().await;
    "cancelled".to_owned()
}

fn server() -> McpServer {
    let registry = Registry::builder().tool(greet::TOOL).tool(ask::TOOL).tool(wait::TOOL).build().unwrap();
    McpServer::builder(registry).build()
}

/// A 2026-07-28 `tools/call` of `tool` with `arguments` (JSON text, sent as written).
fn body(tool: &str, arguments: &str, capabilities: &Value) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{capabilities}}}}}}}"#
    )
    .into_bytes()
}

/// The status, content type and message of the answer to `body`, sent with the headers of a
/// 2026-07-28 client; `weighted` adds an `Accept` value with a weight, which the endpoint leaves
/// to rmcp. A sealed `requestState` (new on every answer) is replaced by `"sealed"`.
async fn answer(running: &Running, tool: &str, body: &[u8], weighted: bool) -> (u16, Option<String>, Value) {
    let mut headers = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", tool)];
    if weighted {
        headers.push(("Accept", "application/json;q=0.9, text/event-stream"));
    }
    let response =
        tokio::time::timeout(BOUND, post_raw(running.addr, "/mcp", "127.0.0.1", &headers, body)).await.unwrap();
    let mut message: Value = serde_json::from_str(&response.body).unwrap_or_else(|_| json!(response.body));
    if let Some(state) = message.pointer_mut("/result/requestState") {
        *state = json!("sealed");
    }
    (response.status, response.header("content-type").map(str::to_owned), message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_call_the_endpoint_answers_gets_the_answer_rmcp_gives() {
    let running = Running::start(server()).await;
    let none = json!({});
    let elicits = json!({"elicitation": {}});
    let cases = [
        ("greet", body("greet", r#"{"name":"Ana"}"#, &none)),
        ("greet", body("greet", r#"{}"#, &none)),
        ("greet", body("greet", r#"{"name":"Ana","name":"Bob"}"#, &none)),
        ("greet", body("greet", r#"{"name":"Ana","age":3}"#, &none)),
        ("ask", body("ask", "{}", &elicits)),
        ("ask", body("ask", "{}", &none)),
    ];
    let mut answers = Vec::new();
    for (tool, body) in &cases {
        let direct = answer(&running, tool, body, false).await;
        let through_rmcp = answer(&running, tool, body, true).await;
        assert_eq!(direct, through_rmcp, "{}", String::from_utf8_lossy(body));
        answers.push(direct);
    }
    let json = Some("application/json".to_owned());
    assert_eq!(
        answers[0],
        (
            200,
            json.clone(),
            json!({"jsonrpc": "2.0", "id": 1, "result": {
                "content": [{"type": "text", "text": "hello, Ana"}], "isError": false, "resultType": "complete"}})
        )
    );
    assert_eq!(answers[1].2["result"]["isError"], true);
    assert_eq!(answers[4].2["result"]["resultType"], "input_required");
    assert_eq!(answers[4].2["result"]["requestState"], "sealed");
    assert_eq!((answers[5].0, answers[5].2["error"]["code"].clone()), (400, json!(-32021)));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_the_call_the_endpoint_was_answering() {
    let running = Running::start(server()).await;
    let body = body("wait", "{}", &json!({}));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\nContent-Type: \
         application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: wait\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(running.addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.write_all(&body).await.unwrap();
    tokio::time::timeout(BOUND, STARTED.notified()).await.expect("the call did not start");
    drop(stream);
    tokio::time::timeout(BOUND, WAITING.get().unwrap().cancelled())
        .await
        .expect("the call's cancellation token was not cancelled when its client went away");
    running.stop().await;
}
