//! Resource locks and concurrency limits: what `#[tool(resource ..)]` and `#[tool(concurrency ..)]`
//! declare, and how the registry runs calls that hold the same resource (one after the other, in
//! arrival order), other resources (in parallel), and calls cancelled while they wait.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::Semaphore;
use tool_runtime::locks::{LocalLocks, ResourceResolver};
use tool_runtime::prelude::*;
use tool_runtime::{CancellationToken, Resource, ToolSpec};

/// What the tools of one test did and what they wait for; every test overrides [`STAGE`].
#[derive(Debug)]
struct Stage {
    /// `start X` and `end X`, in order.
    journal: Mutex<Vec<String>>,
    /// The labels of the calls inside their body now.
    inside: Mutex<BTreeSet<String>>,
    /// The most calls inside at once.
    most: AtomicUsize,
    /// Each call takes one permit before it ends; the test adds them.
    gate: Semaphore,
}

impl Stage {
    /// A stage whose gate is open for `permits` calls.
    fn new(permits: usize) -> Arc<Self> {
        Arc::new(Stage {
            journal: Mutex::new(Vec::new()),
            inside: Mutex::new(BTreeSet::new()),
            most: AtomicUsize::new(0),
            gate: Semaphore::new(permits),
        })
    }

    fn journal(&self) -> Vec<String> {
        self.journal.lock().unwrap().clone()
    }

    fn inside(&self) -> BTreeSet<String> {
        self.inside.lock().unwrap().clone()
    }

    /// The body every tool here runs: enter, yield to the other calls a few times, pass the gate,
    /// leave.
    async fn body(&self, label: String) -> String {
        self.journal.lock().unwrap().push(format!("start {label}"));
        let now = {
            let mut inside = self.inside.lock().unwrap();
            inside.insert(label.clone());
            inside.len()
        };
        self.most.fetch_max(now, Ordering::SeqCst);
        for _ in 0..5 {
            tokio::task::yield_now().await;
        }
        self.gate.acquire().await.unwrap().forget();
        self.inside.lock().unwrap().remove(&label);
        self.journal.lock().unwrap().push(format!("end {label}"));
        label
    }
}

fn no_stage(_ctx: &ToolContext) -> Result<Arc<Stage>, DependencyError> {
    Err(DependencyError::new("override `stage`"))
}

static STAGE: DependencyKey<Arc<Stage>> = DependencyKey::per_call("stage", no_stage);

/// Works on the record `id`.
#[tool(resource = "id")]
async fn touch_record(
    #[depends(STAGE)] stage: Arc<Stage>,
    /// The record.
    id: String,
    /// The call's label.
    label: String,
) -> String {
    let _ = id;
    stage.body(label).await
}

/// Works on the same records as `touch_record`, named by another argument.
#[tool(resource(id = "record"))]
async fn copy_record(
    #[depends(STAGE)] stage: Arc<Stage>,
    /// The record.
    record: String,
    /// The call's label.
    label: String,
) -> String {
    let _ = record;
    stage.body(label).await
}

/// Undeclared: calls run as they come.
#[tool]
async fn free_record(
    #[depends(STAGE)] stage: Arc<Stage>,
    /// The record.
    id: String,
    /// The call's label.
    label: String,
) -> String {
    let _ = id;
    stage.body(label).await
}

/// At most two calls at once.
#[tool(concurrency = 2)]
async fn pair(
    #[depends(STAGE)] stage: Arc<Stage>,
    /// The call's label.
    label: String,
) -> String {
    stage.body(label).await
}

/// At most one call per user at once.
#[tool(concurrency(limit = 1, per = "user"))]
async fn per_user(
    #[depends(STAGE)] stage: Arc<Stage>,
    /// Whose call it is.
    user: String,
    /// The call's label.
    label: String,
) -> String {
    let _ = user;
    stage.body(label).await
}

/// One call of the whole tool at a time.
#[tool(resource)]
async fn whole(
    #[depends(STAGE)] stage: Arc<Stage>,
    /// The call's label.
    label: String,
) -> String {
    stage.body(label).await
}

/// Several resources: both files of a copy, and the plan.
#[tool(resource(file = "from", file = "to", plan))]
async fn copy_file(from: String, to: String) -> String {
    format!("{from} -> {to}")
}

fn registry(stage: &Arc<Stage>, locks: &LocalLocks) -> Registry {
    Registry::builder()
        .tool(touch_record::TOOL)
        .tool(copy_record::TOOL)
        .tool(free_record::TOOL)
        .tool(pair::TOOL)
        .tool(per_user::TOOL)
        .tool(whole::TOOL)
        .tool(copy_file::TOOL)
        .override_dependency(&STAGE, Arc::clone(stage))
        .locks(locks.clone())
        .build()
        .unwrap()
}

fn call(id: usize, tool: &str, arguments: Value) -> ToolCall {
    ToolCall::new(format!("call_{id}"), tool, arguments.to_string())
}

/// Yields until `done` holds, at most 10,000 times; `false` when it never did.
async fn until(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..10_000 {
        if done() {
            return true;
        }
        tokio::task::yield_now().await;
    }
    done()
}

/// Lets every other task run for a while (200 yields).
async fn settle() {
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
}

/// The batch of `calls`, run on a task of its own.
fn spawn_batch(registry: &Arc<Registry>, calls: Vec<ToolCall>) -> tokio::task::JoinHandle<Batch> {
    let registry = Arc::clone(registry);
    tokio::spawn(async move { registry.call_batch(&calls, &ToolContext::new()).await })
}

fn texts(batch: &Batch) -> Vec<String> {
    batch.iter().map(|m| m.text().into_owned()).collect()
}

#[test]
fn the_declarations_are_the_tools_resources() {
    let resources = |spec: &'static ToolSpec| Tool::resources(spec).to_vec();
    assert_eq!(resources(touch_record::TOOL), [Resource::lock("id", Some("id"))]);
    assert_eq!(
        resources(copy_record::TOOL),
        [Resource { kind: "id", argument: Some("record"), permits: 1, per_tool: false }]
    );
    assert_eq!(resources(free_record::TOOL), []);
    assert_eq!(resources(pair::TOOL), [Resource { kind: "tool", argument: None, permits: 2, per_tool: true }]);
    assert_eq!(
        resources(per_user::TOOL),
        [Resource { kind: "user", argument: Some("user"), permits: 1, per_tool: true }]
    );
    assert_eq!(resources(whole::TOOL), [Resource::WHOLE_TOOL]);
    assert_eq!(
        resources(copy_file::TOOL),
        [Resource::lock("file", Some("from")), Resource::lock("file", Some("to")), Resource::lock("plan", None)]
    );
}

#[tokio::test]
async fn calls_of_a_turn_on_one_resource_run_one_after_the_other_in_turn_order() {
    let (stage, locks) = (Stage::new(100), LocalLocks::new());
    let registry = registry(&stage, &locks);
    let calls: Vec<ToolCall> =
        (0..4).map(|i| call(i, "touch_record", serde_json::json!({"id": "r1", "label": i.to_string()}))).collect();
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(texts(&batch), ["0", "1", "2", "3"]);
    assert_eq!(stage.journal(), ["start 0", "end 0", "start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]);
    assert!(locks.is_empty());
}

#[tokio::test]
async fn the_same_calls_without_a_declared_resource_interleave() {
    let (stage, locks) = (Stage::new(100), LocalLocks::new());
    let registry = registry(&stage, &locks);
    let calls: Vec<ToolCall> =
        (0..2).map(|i| call(i, "free_record", serde_json::json!({"id": "r1", "label": i.to_string()}))).collect();
    registry.call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(stage.journal(), ["start 0", "start 1", "end 0", "end 1"]);
}

#[tokio::test]
async fn two_tools_naming_one_kind_share_its_resources() {
    let (stage, locks) = (Stage::new(100), LocalLocks::new());
    let registry = registry(&stage, &locks);
    let calls = [
        call(0, "touch_record", serde_json::json!({"id": "r1", "label": "touch"})),
        call(1, "copy_record", serde_json::json!({"record": "r1", "label": "copy"})),
    ];
    registry.call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(stage.journal(), ["start touch", "end touch", "start copy", "end copy"]);
}

#[tokio::test]
async fn calls_on_different_resources_run_at_the_same_time() {
    let (stage, locks) = (Stage::new(0), LocalLocks::new());
    let registry = registry(&stage, &locks);
    let calls = [
        call(0, "touch_record", serde_json::json!({"id": "r1", "label": "a"})),
        call(1, "touch_record", serde_json::json!({"id": "r2", "label": "b"})),
    ];
    let ctx = ToolContext::new();
    let mut batch = std::pin::pin!(registry.call_batch(&calls, &ctx));
    // Both are inside while the gate is shut: neither waits for the other.
    let both_inside = until(|| {
        let _ = futures::FutureExt::now_or_never(batch.as_mut());
        stage.inside().len() == 2
    })
    .await;
    assert!(both_inside, "inside: {:?}", stage.inside());
    stage.gate.add_permits(2);
    assert_eq!(texts(&batch.await), ["a", "b"]);
    assert!(locks.is_empty());
}

#[tokio::test]
async fn a_concurrency_limit_of_two_lets_two_calls_in_at_once() {
    let (stage, locks) = (Stage::new(0), LocalLocks::new());
    let registry = Arc::new(registry(&stage, &locks));
    let calls: Vec<ToolCall> = (0..4).map(|i| call(i, "pair", serde_json::json!({"label": i.to_string()}))).collect();
    let running = spawn_batch(&registry, calls);
    assert!(until(|| stage.inside().len() == 2).await);
    // The others stay out however long the first two take.
    settle().await;
    assert_eq!(stage.inside(), BTreeSet::from(["0".to_owned(), "1".to_owned()]));
    stage.gate.add_permits(4);
    assert_eq!(texts(&running.await.unwrap()), ["0", "1", "2", "3"]);
    assert_eq!(stage.most.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_limit_per_argument_value_holds_each_value_apart() {
    let (stage, locks) = (Stage::new(0), LocalLocks::new());
    let registry = Arc::new(registry(&stage, &locks));
    let calls = vec![
        call(0, "per_user", serde_json::json!({"user": "ann", "label": "ann 1"})),
        call(1, "per_user", serde_json::json!({"user": "ann", "label": "ann 2"})),
        call(2, "per_user", serde_json::json!({"user": "bob", "label": "bob 1"})),
    ];
    let running = spawn_batch(&registry, calls);
    assert!(until(|| stage.inside().len() == 2).await);
    settle().await;
    assert_eq!(stage.inside(), BTreeSet::from(["ann 1".to_owned(), "bob 1".to_owned()]));
    stage.gate.add_permits(3);
    assert_eq!(texts(&running.await.unwrap()), ["ann 1", "ann 2", "bob 1"]);
}

#[tokio::test]
async fn concurrent_requests_on_one_resource_wait_for_each_other() {
    let (stage, locks) = (Stage::new(0), LocalLocks::new());
    let registry = Arc::new(registry(&stage, &locks));
    let spawn = |label: &'static str| {
        let registry = Arc::clone(&registry);
        tokio::spawn(async move {
            let call = call(0, "whole", serde_json::json!({"label": label}));
            registry.call(&call, &ToolContext::new()).await.text().into_owned()
        })
    };
    let first = spawn("first");
    assert!(until(|| stage.inside().len() == 1).await);
    let second = spawn("second");
    settle().await;
    assert_eq!(stage.inside(), BTreeSet::from(["first".to_owned()]));
    stage.gate.add_permits(2);
    assert_eq!(first.await.unwrap(), "first");
    assert_eq!(second.await.unwrap(), "second");
    assert_eq!(stage.most.load(Ordering::SeqCst), 1);
    assert!(locks.is_empty());
}

#[tokio::test]
async fn a_call_cancelled_while_it_waits_gives_its_turn_up_and_never_runs() {
    let (stage, locks) = (Stage::new(0), LocalLocks::new());
    let registry = Arc::new(registry(&stage, &locks));
    let run = |label: &'static str, ctx: ToolContext| {
        let registry = Arc::clone(&registry);
        tokio::spawn(async move {
            let call = call(0, "touch_record", serde_json::json!({"id": "r1", "label": label}));
            registry.call(&call, &ctx).await.text().into_owned()
        })
    };
    let holder = run("holder", ToolContext::new());
    assert!(until(|| stage.inside().len() == 1).await);
    let token = CancellationToken::new();
    let waiter = run("waiter", ToolContext::builder().cancellation(token.clone()).build());
    settle().await;
    token.cancel();
    assert_eq!(waiter.await.unwrap(), "tool `touch_record` was cancelled");
    let next = run("next", ToolContext::new());
    stage.gate.add_permits(2);
    assert_eq!(holder.await.unwrap(), "holder");
    assert_eq!(next.await.unwrap(), "next");
    assert_eq!(stage.journal(), ["start holder", "end holder", "start next", "end next"]);
    assert!(locks.is_empty());
}

#[tokio::test]
async fn arguments_that_do_not_parse_take_no_lock_and_are_refused_by_the_tool() {
    let (stage, locks) = (Stage::new(0), LocalLocks::new());
    let registry = registry(&stage, &locks);
    let message = registry.call(&ToolCall::new("c", "touch_record", "{\"id\": \"r1\","), &ToolContext::new()).await;
    assert!(message.is_error);
    assert!(message.text().starts_with("invalid arguments for `touch_record`: not valid JSON"), "{}", message.text());
    assert!(locks.is_empty());
}

/// Reads `file` values case-insensitively, as a case-insensitive file system would.
struct CaseInsensitive;

impl ResourceResolver for CaseInsensitive {
    fn resolve<'a>(
        &'a self,
        kind: &'a str,
        value: Option<&'a Value>,
        _ctx: &'a ToolContext,
    ) -> Option<BoxFuture<'a, Vec<String>>> {
        (kind == "id").then(|| {
            let keys =
                value.and_then(Value::as_str).map(|id| format!("id:{}", id.to_lowercase())).into_iter().collect();
            Box::pin(std::future::ready(keys)) as BoxFuture<'a, Vec<String>>
        })
    }
}

#[tokio::test]
async fn the_resolver_makes_two_spellings_one_resource() {
    let stage = Stage::new(100);
    let registry = Registry::builder()
        .tool(touch_record::TOOL)
        .override_dependency(&STAGE, Arc::clone(&stage))
        .resource_resolver(CaseInsensitive)
        .build()
        .unwrap();
    let calls = [
        call(0, "touch_record", serde_json::json!({"id": "Report", "label": "upper"})),
        call(1, "touch_record", serde_json::json!({"id": "report", "label": "lower"})),
    ];
    registry.call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(stage.journal(), ["start upper", "end upper", "start lower", "end lower"]);
}

#[tokio::test]
async fn a_tool_holding_several_resources_runs_and_releases_them_all() {
    let locks = LocalLocks::new();
    let registry = registry(&Stage::new(0), &locks);
    let message =
        registry.call(&call(0, "copy_file", serde_json::json!({"from": "a", "to": "a"})), &ToolContext::new()).await;
    assert_eq!(message.text(), "a -> a");
    assert!(locks.is_empty());
}
