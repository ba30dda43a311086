//! The marker test of `Secret<T>`: a marker secret sent through every tool form (a sync `fn`, an
//! `async fn`, a field of an `#[input]` struct, a `#[tools]` method, a dynamic tool), every error
//! path (a wrong type, a broken pattern, a cut error, the tool's own `Err`, a panic, arguments that
//! are no object) and every sink of the registry (the message, the output cache, the approval
//! question, `tracing` at trace level) is found nowhere but where the tool used it.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputLayer, OutputStore};
use tool_runtime::prelude::*;
use tool_runtime::talk::{ClientCapabilities, ClientChannel, InputRequest};
use tool_runtime::{DynamicTool, TalkBackError};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use crate::fields::Fields;

/// The marker: a value that appears nowhere else.
const MARK: &str = "MARKER-5ecret-7f3a9c";

/// Echo the user and the token (a tool that leaks what it is given).
#[tool(inline)]
fn echo_sync(
    /// The user.
    user: String,
    /// The token.
    token: Secret<String>,
) -> String {
    format!("user {user} token {}", token.expose())
}

/// Fail, quoting the token.
#[tool]
async fn fail_async(
    /// The token.
    token: Secret<String>,
) -> Result<String, String> {
    Err(format!("login refused for token {}", token.expose()))
}

/// Credentials.
#[derive(Deserialize, JsonSchema)]
struct Credentials {
    /// The user.
    user: String,
    /// The key: digits only.
    #[schemars(regex(pattern = "^[0-9]+$"))]
    key: Secret<String>,
}

/// Panic, quoting the key.
#[tool]
fn panics(#[input] credentials: Credentials) -> String {
    panic!("no vault for {} with key {}", credentials.user, credentials.key.expose())
}

/// A numeric PIN.
#[tool]
fn pin(
    /// The PIN.
    pin: Secret<u32>,
) -> String {
    format!("{} digits", pin.expose().to_string().len())
}

/// Delete the account (asks the user first).
#[tool(tags(confirm))]
fn delete_account(
    /// The account.
    account: String,
    /// The admin token.
    token: Secret<String>,
) -> String {
    format!("deleted {account} ({} token bytes)", token.expose().len())
}

/// A vault that keeps what it is given: the one place the secret is used.
#[derive(Default)]
struct Vault {
    kept: Mutex<Vec<String>>,
}

#[tools]
impl Vault {
    /// Keep a key in the vault.
    #[tool]
    async fn keep(
        &self,
        /// The key.
        key: Secret<String>,
    ) -> String {
        self.kept.lock().unwrap().push(key.expose().clone());
        format!("kept {}", key.expose())
    }
}

/// A dynamic tool whose schema marks `token` write-only, and which echoes its arguments.
fn dynamic() -> DynamicTool {
    let schema = json!({"type": "object", "properties": {
        "user": {"type": "string"},
        "token": {"type": "string", "writeOnly": true},
    }, "required": ["user", "token"], "additionalProperties": false});
    DynamicTool::new("dynamic_echo", "Echo the arguments.", schema, |arguments, _ctx| async move {
        Ok(ToolResult::Json(arguments))
    })
    .unwrap()
}

fn registry(vault: Arc<Vault>) -> Registry {
    Registry::builder()
        .tool(echo_sync::TOOL)
        .tool(fail_async::TOOL)
        .tool(panics::TOOL)
        .tool(pin::TOOL)
        .tool(delete_account::TOOL)
        .tools_of(vault)
        .tool_dyn(Arc::new(dynamic()))
        .build()
        .unwrap()
}

async fn run(name: &str, arguments: &str) -> ToolMessage {
    registry(Arc::default()).call(&ToolCall::new("c1", name, arguments), &ToolContext::new()).await
}

fn token_arguments() -> String {
    json!({"user": "ann", "token": MARK}).to_string()
}

#[tokio::test]
async fn a_sync_tool_that_echoes_its_secret_returns_it_redacted() {
    let message = run("echo_sync", &token_arguments()).await;
    assert_eq!(message.text(), "user ann token [redacted]");
    assert!(!message.is_error);
}

#[tokio::test]
async fn an_async_tools_error_that_quotes_its_secret_is_redacted() {
    let message = run("fail_async", &json!({"token": MARK}).to_string()).await;
    assert_eq!(message.text(), "login refused for token [redacted]");
    assert!(message.is_error);
}

#[tokio::test]
async fn a_panic_message_that_quotes_a_secret_field_of_an_input_struct_is_redacted() {
    let message = run("panics", &json!({"user": "ann", "key": "12345"}).to_string()).await;
    assert_eq!(message.text(), "tool `panics` panicked: no vault for ann with key [redacted]");
}

#[tokio::test]
async fn a_pattern_error_names_no_secret_value() {
    let message = run("panics", &json!({"user": "ann", "key": MARK}).to_string()).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `panics`: `key`: must match the pattern `^[0-9]+$`; got \"[redacted]\""
    );
}

#[tokio::test]
async fn a_wrong_type_error_names_no_secret_value() {
    let message = run("pin", &json!({"pin": MARK}).to_string()).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `pin`: `pin`: invalid type: string \"[redacted]\", expected an integer from 0 to 4294967295"
    );
}

#[tokio::test]
async fn a_cut_error_that_could_hold_part_of_a_secret_names_no_value() {
    let long = format!("{}{MARK}{}", "a".repeat(180), "b".repeat(300));
    let message = run("pin", &json!({"pin": long}).to_string()).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `pin`: the error quoted a secret argument, and was withheld; check each argument's type and bounds against the tool's schema"
    );
}

#[tokio::test]
async fn a_number_secret_is_redacted_where_the_tool_echoes_it() {
    let message = run("pin", r#"{"pin": 4817}"#).await;
    // The tool's text is `4 digits`: the PIN's length, not its value, so nothing is replaced.
    assert_eq!(message.text(), "4 digits");
    let message = run("fail_async", r#"{"token": "4817"}"#).await;
    assert_eq!(message.text(), "login refused for token [redacted]");
}

#[tokio::test]
async fn arguments_that_are_no_object_are_secret_whole() {
    let message = run("fail_async", &format!("[\"{MARK}\"]")).await;
    assert!(message.is_error);
    assert!(!message.text().contains(MARK), "{}", message.text());
}

#[tokio::test]
async fn a_tools_method_uses_its_secret_and_returns_it_redacted() {
    let vault = Arc::new(Vault::default());
    let message = registry(vault.clone())
        .call(&ToolCall::new("c1", "keep", json!({"key": MARK}).to_string()), &ToolContext::new())
        .await;
    assert_eq!(message.text(), "kept [redacted]");
    assert_eq!(*vault.kept.lock().unwrap(), vec![MARK.to_owned()]);
}

#[tokio::test]
async fn a_dynamic_tools_write_only_value_is_redacted_in_its_structured_result() {
    let message = run("dynamic_echo", &token_arguments()).await;
    assert_eq!(message.structured_content, Some(json!({"token": "[redacted]", "user": "ann"})));
    assert_eq!(message.text(), r#"{"token":"[redacted]","user":"ann"}"#);
}

#[tokio::test]
async fn the_output_cache_stores_the_redacted_result() {
    let store = Arc::new(MemoryStore::new());
    let registry = Registry::builder()
        .tool(echo_sync::TOOL)
        .override_dependency(&OUTPUT_STORE, store.clone() as Arc<dyn OutputStore>)
        .output(OutputLayer::new())
        .build()
        .unwrap();
    let message = registry.call(&ToolCall::new("c1", "echo_sync", token_arguments()), &ToolContext::new()).await;
    let ref_id = message.ref_id.clone().expect("stored");
    let mut stored = String::new();
    store.open_at(&ref_id, 0).unwrap().read_to_string(&mut stored).unwrap();
    assert_eq!(stored, "user ann token [redacted]");
}

/// A client channel that accepts every approval and keeps the questions.
#[derive(Clone, Default)]
struct Approver {
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientChannel for Approver {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities { elicitation: true, sampling: false, roots: false }
    }

    fn request(&self, _key: &str, request: InputRequest) -> BoxFuture<'_, Result<Value, TalkBackError>> {
        self.asked.lock().unwrap().push(format!("{request:?}"));
        Box::pin(async { Ok(json!({"action": "accept", "content": {}})) })
    }
}

#[tokio::test]
async fn the_approval_question_shows_the_secret_redacted() {
    let approver = Approver::default();
    let ctx = ToolContext::builder().client(approver.clone()).build();
    let arguments = json!({"account": "acme", "token": MARK}).to_string();
    let message = registry(Arc::default()).call(&ToolCall::new("c1", "delete_account", arguments), &ctx).await;
    assert_eq!(message.text(), "deleted acme (20 token bytes)");
    let asked = approver.asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].contains(r#"\"token\": \"[redacted]\""#), "{}", asked[0]);
    assert!(!asked[0].contains(MARK), "{}", asked[0]);
}

/// Every span's and event's fields, as text.
#[derive(Clone, Default)]
struct Capture {
    seen: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
    next: Arc<AtomicU64>,
}

impl Subscriber for Capture {
    fn enabled(&self, _metadata: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut fields = BTreeMap::new();
        span.record(&mut Fields(&mut fields));
        fields.insert("name".to_owned(), span.metadata().name().to_owned());
        self.seen.lock().unwrap().push(fields);
        Id::from_u64(self.next.fetch_add(1, Ordering::SeqCst) + 1)
    }

    fn record(&self, _span: &Id, values: &Record<'_>) {
        let mut fields = BTreeMap::new();
        values.record(&mut Fields(&mut fields));
        self.seen.lock().unwrap().push(fields);
    }

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.seen.lock().unwrap().push(fields);
    }

    fn enter(&self, _span: &Id) {}

    fn exit(&self, _span: &Id) {}
}

#[test]
fn tracing_at_trace_level_records_no_secret_of_any_call() {
    let capture = Capture::default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    tracing::subscriber::with_default(capture.clone(), || {
        runtime.block_on(async {
            for (name, arguments) in [
                ("echo_sync", token_arguments()),
                ("fail_async", json!({"token": MARK}).to_string()),
                ("panics", json!({"user": "ann", "key": MARK}).to_string()),
                ("pin", json!({"pin": MARK}).to_string()),
                ("keep", json!({"key": MARK}).to_string()),
                ("dynamic_echo", token_arguments()),
            ] {
                let message = run(name, &arguments).await;
                assert!(!message.text().contains(MARK), "{name}: {}", message.text());
            }
        });
    });
    let seen = capture.seen.lock().unwrap();
    let text = format!("{seen:?}");
    // The calls were seen (six spans named tool_call), and none of them carried the marker.
    assert_eq!(seen.iter().filter(|f| f.get("name").map(String::as_str) == Some("tool_call")).count(), 6);
    assert!(!text.contains(MARK), "{text}");
}

/// A tool passing on another server's approval request (as a `tool-mcp` import does) whose
/// preview quotes its write-only `token`, as a hostile server's may.
fn passing_on() -> DynamicTool {
    let schema = json!({"type": "object", "properties": {
        "token": {"type": "string", "writeOnly": true},
    }, "required": ["token"], "additionalProperties": false});
    DynamicTool::new("pass_on", "Pass the call on.", schema, |arguments, _ctx| async move {
        let preview = format!("log in with {}", arguments["token"].as_str().unwrap_or_default());
        let request = tool_runtime::ApprovalRequest {
            tool: "pass_on".to_owned(),
            preview,
            token: "ap1.9.ab.cd".to_owned(),
            expires_at: 9,
            servers: Vec::new(),
        };
        Err(ToolError::Approval {
            tool: "pass_on".to_owned(),
            problem: tool_runtime::ApprovalProblem::Missing { request: Box::new(request), valid_secs: 9 },
        })
    })
    .unwrap()
}

#[tokio::test]
async fn an_approval_request_a_tool_passes_on_shows_its_secret_redacted_to_the_host() {
    let registry = Registry::builder().tool_dyn(Arc::new(passing_on())).build().unwrap();
    let arguments = json!({"token": MARK}).to_string();
    let message = registry.call(&ToolCall::new("c1", "pass_on", arguments), &ToolContext::new()).await;
    let request = message.approval.as_deref().expect("the approval request, for the host");
    assert_eq!((request.preview.as_str(), request.token.as_str()), ("log in with [redacted]", "ap1.9.ab.cd"));
    assert!(!message.text().contains(MARK), "{}", message.text());
}
