//! The permission policy: asked before each call; allow, deny, or deny and stop the turn; the
//! default refuses tools tagged `external` unless allowed by name.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tool_runtime::prelude::*;
use tool_runtime::{DefaultPolicy, PermissionPolicy, PermissionRequest};

/// Every tool body that ran, by tool name; each test overrides [`RUNS`] with its own.
#[derive(Debug, Default)]
struct Runs(Mutex<BTreeMap<String, usize>>);

impl Runs {
    fn ran(&self, tool: &str) {
        *self.0.lock().unwrap().entry(tool.to_owned()).or_default() += 1;
    }

    fn counts(&self) -> BTreeMap<String, usize> {
        self.0.lock().unwrap().clone()
    }
}

fn no_runs(_ctx: &ToolContext) -> Result<Arc<Runs>, DependencyError> {
    Err(DependencyError::new("override `runs`"))
}

static RUNS: DependencyKey<Arc<Runs>> = DependencyKey::per_call("runs", no_runs);

/// Fetches a web page.
#[tool(tags(external, read_only))]
fn fetch(
    #[depends(RUNS)] runs: Arc<Runs>,
    /// The address.
    url: String,
) -> String {
    runs.ran("fetch");
    format!("fetched {url}")
}

/// Reads a local file.
#[tool(tags(read_only))]
fn read(
    #[depends(RUNS)] runs: Arc<Runs>,
    /// The path.
    path: String,
) -> String {
    runs.ran("read");
    format!("read {path}")
}

/// Deletes a local file.
#[tool(tags(destructive))]
fn delete(
    #[depends(RUNS)] runs: Arc<Runs>,
    /// The path.
    path: String,
) -> String {
    runs.ran("delete");
    format!("deleted {path}")
}

fn builder(runs: &Arc<Runs>) -> tool_runtime::RegistryBuilder {
    Registry::builder().tool(fetch::TOOL).tool(read::TOOL).tool(delete::TOOL).override_dependency(&RUNS, runs.clone())
}

fn fetch_call(id: &str) -> ToolCall {
    ToolCall::new(id, "fetch", r#"{"url":"https://example.com"}"#)
}

fn read_call(id: &str) -> ToolCall {
    ToolCall::new(id, "read", r#"{"path":"a.txt"}"#)
}

fn delete_call(id: &str) -> ToolCall {
    ToolCall::new(id, "delete", r#"{"path":"a.txt"}"#)
}

const EXTERNAL_DENIED: &str = "Permission denied: tool `fetch` reaches outside this machine (tag `external`) and the \
                               permission policy does not allow it";

#[tokio::test]
async fn the_default_policy_denies_a_tool_tagged_external() {
    let runs = Arc::new(Runs::default());
    let registry = builder(&runs).build().unwrap();
    let message = registry.call(&fetch_call("c1"), &ToolContext::new()).await;
    assert_eq!(message, ToolMessage::error("c1", "fetch", EXTERNAL_DENIED));
    assert_eq!(runs.counts(), BTreeMap::new());
}

#[tokio::test]
async fn the_default_policy_allows_tools_not_tagged_external() {
    let runs = Arc::new(Runs::default());
    let registry = builder(&runs).build().unwrap();
    assert_eq!(registry.call(&read_call("c1"), &ToolContext::new()).await.text(), "read a.txt");
    assert_eq!(registry.call(&delete_call("c2"), &ToolContext::new()).await.text(), "deleted a.txt");
}

#[tokio::test]
async fn an_external_tool_allowed_by_name_runs() {
    let runs = Arc::new(Runs::default());
    let registry = builder(&runs).policy(DefaultPolicy::new().allow("fetch")).build().unwrap();
    let message = registry.call(&fetch_call("c1"), &ToolContext::new()).await;
    assert_eq!(message.text(), "fetched https://example.com");
    assert_eq!(runs.counts(), BTreeMap::from([("fetch".to_owned(), 1)]));
}

#[tokio::test]
async fn allowing_every_external_tool_lets_them_all_run() {
    let runs = Arc::new(Runs::default());
    let registry = builder(&runs).policy(DefaultPolicy::new().allow_all_external()).build().unwrap();
    assert_eq!(registry.call(&fetch_call("c1"), &ToolContext::new()).await.text(), "fetched https://example.com");
}

#[tokio::test]
async fn a_denied_call_in_a_batch_fails_alone_and_the_others_run() {
    let runs = Arc::new(Runs::default());
    let registry = builder(&runs).build().unwrap();
    let batch = registry.call_batch(&[read_call("1"), fetch_call("2"), delete_call("3")], &ToolContext::new()).await;
    assert_eq!(
        batch.messages,
        [
            ToolMessage::success("1", "read", ToolResult::text("read a.txt")),
            ToolMessage::error("2", "fetch", EXTERNAL_DENIED),
            ToolMessage::success("3", "delete", ToolResult::text("deleted a.txt")),
        ]
    );
    assert_eq!(batch.stop, None);
    assert_eq!(runs.counts(), BTreeMap::from([("delete".to_owned(), 1), ("read".to_owned(), 1)]));
}

/// Stops the turn at any destructive tool, allows the rest.
fn careful(request: PermissionRequest<'_>) -> Permission {
    if request.definition.tags.iter().any(|t| t == "destructive") {
        Permission::DenyAndStop(format!(
            "`{}` would delete {}; the user must confirm",
            request.call.name, request.call.arguments
        ))
    } else {
        Permission::Allow
    }
}

#[tokio::test]
async fn deny_and_stop_runs_no_call_of_the_turn_and_the_batch_reports_the_stop() {
    let runs = Arc::new(Runs::default());
    let registry = builder(&runs).policy(careful).build().unwrap();
    let batch = registry.call_batch(&[read_call("1"), delete_call("2"), read_call("3")], &ToolContext::new()).await;
    let reason = r#"`delete` would delete {"path":"a.txt"}; the user must confirm"#;
    let stopped = |id: &str| {
        ToolMessage::error(
            id,
            "read",
            format!("tool `read` did not run: the turn was stopped because the call of `delete` was denied: {reason}"),
        )
    };
    assert_eq!(
        batch.messages,
        [stopped("1"), ToolMessage::error("2", "delete", format!("Permission denied: {reason}")), stopped("3")]
    );
    assert_eq!(
        batch.stop,
        Some(TurnStop::Denied {
            tool_call_id: "2".to_owned(),
            tool_name: "delete".to_owned(),
            reason: reason.to_owned()
        })
    );
    assert_eq!(runs.counts(), BTreeMap::new());
}

#[tokio::test]
async fn in_a_stopped_turn_an_unknown_tool_still_reads_as_unknown() {
    let runs = Arc::new(Runs::default());
    let registry = builder(&runs).policy(careful).build().unwrap();
    let calls = [ToolCall::new("1", "nope", "{}"), delete_call("2")];
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(batch.messages[0].text(), "unknown tool `nope`; available tools: delete, fetch, read");
}

#[tokio::test]
async fn deny_and_stop_in_a_single_call_reads_as_a_denial() {
    let runs = Arc::new(Runs::default());
    let registry = builder(&runs).policy(careful).build().unwrap();
    let message = registry.call(&delete_call("c1"), &ToolContext::new()).await;
    assert_eq!(message.text(), r#"Permission denied: `delete` would delete {"path":"a.txt"}; the user must confirm"#);
    assert_eq!(runs.counts(), BTreeMap::new());
}

/// Records what it was asked, in order, and allows everything but `read` of session `guest`.
#[derive(Clone, Default)]
struct Recording {
    asked: Arc<Mutex<Vec<String>>>,
}

impl PermissionPolicy for Recording {
    fn check<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        Box::pin(async move {
            let session = request.context.session_id().unwrap_or("-");
            // An asynchronous policy may wait (ask a person, read a rule store).
            tokio::task::yield_now().await;
            self.asked.lock().unwrap().push(format!("{} {} {}", request.call.id, request.definition.name, session));
            if session == "guest" && request.call.name == "read" {
                Permission::Deny("guests cannot read files".to_owned())
            } else {
                Permission::Allow
            }
        })
    }
}

#[tokio::test]
async fn the_policy_is_asked_once_per_call_in_call_order_and_sees_the_context() {
    let runs = Arc::new(Runs::default());
    let policy = Recording::default();
    let registry = builder(&runs).policy(policy.clone()).build().unwrap();
    let ctx = ToolContext::builder().session_id("guest").build();
    let batch = registry.call_batch(&[delete_call("1"), read_call("2"), fetch_call("3")], &ctx).await;
    assert_eq!(*policy.asked.lock().unwrap(), ["1 delete guest", "2 read guest", "3 fetch guest"]);
    assert_eq!(batch.messages[1].text(), "Permission denied: guests cannot read files");
    assert_eq!(batch.messages[2].text(), "fetched https://example.com");
}

#[tokio::test]
async fn the_policy_is_not_asked_about_an_unknown_tool() {
    let runs = Arc::new(Runs::default());
    let policy = Recording::default();
    let registry = builder(&runs).policy(policy.clone()).build().unwrap();
    let message = registry.call(&ToolCall::new("1", "nope", "{}"), &ToolContext::new()).await;
    assert_eq!(message.text(), "unknown tool `nope`; available tools: delete, fetch, read");
    assert_eq!(*policy.asked.lock().unwrap(), Vec::<String>::new());
}

#[tokio::test]
async fn a_policy_that_panics_denies_the_call() {
    let runs = Arc::new(Runs::default());
    let registry = builder(&runs)
        .policy(|_request: PermissionRequest<'_>| -> Permission { panic!("rules file missing") })
        .build()
        .unwrap();
    let message = registry.call(&read_call("c1"), &ToolContext::new()).await;
    assert_eq!(message.text(), "Permission denied: the permission policy panicked: rules file missing");
    assert_eq!(runs.counts(), BTreeMap::new());
}

/// Waits for an answer that never comes (a person who walked away).
struct NeverAnswers;

impl PermissionPolicy for NeverAnswers {
    fn check<'a>(&'a self, _request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_turn_ends_the_wait_for_the_policy() {
    let runs = Arc::new(Runs::default());
    let registry = builder(&runs).policy(NeverAnswers).build().unwrap();
    let token = tool_runtime::CancellationToken::new();
    let ctx = ToolContext::builder().cancellation(token.clone()).build();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        token.cancel();
    });
    let message = registry.call(&read_call("c1"), &ctx).await;
    canceller.await.unwrap();
    assert_eq!(message, ToolMessage::error("c1", "read", "tool `read` was cancelled"));
    assert_eq!(runs.counts(), BTreeMap::new());
}

#[tokio::test]
async fn the_policy_is_not_asked_about_a_call_of_a_cancelled_turn() {
    let runs = Arc::new(Runs::default());
    let policy = Recording::default();
    let registry = builder(&runs).policy(policy.clone()).build().unwrap();
    let token = tool_runtime::CancellationToken::new();
    token.cancel();
    let ctx = ToolContext::builder().cancellation(token).build();
    let message = registry.call(&read_call("c1"), &ctx).await;
    assert_eq!(message.text(), "tool `read` was cancelled");
    assert_eq!(*policy.asked.lock().unwrap(), Vec::<String>::new());
}

/// A context whose access reaches only tools tagged `read_only`.
fn reader() -> ToolContext {
    ToolContext::builder().access(|_: &str, tags: &[String]| tags.iter().any(|t| t == "read_only")).build()
}

#[tokio::test]
async fn a_tool_beyond_the_callers_access_is_unknown_to_it_on_every_path_and_never_runs() {
    let runs = Arc::new(Runs::default());
    let registry = builder(&runs).defer_tools(["delete"]).build().unwrap();
    let unknown = "unknown tool `delete`; available tools: fetch, read";
    // A direct call, one of a batch, and the inner call of `call_tool`.
    assert_eq!(registry.call(&delete_call("c1"), &reader()).await, ToolMessage::error("c1", "delete", unknown));
    let batch = registry.call_batch(&[delete_call("c2"), read_call("c3")], &reader()).await;
    assert_eq!(batch.messages[0], ToolMessage::error("c2", "delete", unknown));
    assert_eq!(batch.messages[1].text(), "read a.txt");
    let meta = ToolCall::new("c4", "call_tool", r#"{"name":"delete","arguments":{"path":"a.txt"}}"#);
    assert_eq!(registry.call_with_search(&meta, &reader()).await, ToolMessage::error("c4", "call_tool", unknown));
    // A search finds it only for a caller that reaches it.
    let search = ToolCall::new("c5", "search_tools", r#"{"query":"deletes a local file"}"#);
    assert_eq!(registry.call_with_search(&search, &reader()).await.text(), r#"{"tools":[]}"#);
    let found = registry.call_with_search(&search, &ToolContext::new()).await;
    assert!(found.text().contains(r#""name":"delete""#), "{}", found.text());
    assert_eq!(runs.counts(), BTreeMap::from([("read".to_owned(), 1)]));
}
