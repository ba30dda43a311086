//! `#[depends(KEY)]`: creation, overrides, per-call memoisation, failures and cycles.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tool_runtime::prelude::*;

static CREATED: AtomicUsize = AtomicUsize::new(0);

fn make_counter(_ctx: &ToolContext) -> Result<Arc<AtomicUsize>, DependencyError> {
    CREATED.fetch_add(1, Ordering::SeqCst);
    Ok(Arc::new(AtomicUsize::new(0)))
}

/// A counter created once per call.
static COUNTER: DependencyKey<Arc<AtomicUsize>> = DependencyKey::new("counter", make_counter);

fn make_prefix(ctx: &ToolContext) -> futures::future::BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move { Ok(format!("call {}", ctx.call_id().unwrap_or("?"))) })
}

/// A prefix created asynchronously from the context.
static PREFIX: DependencyKey<String> = DependencyKey::new_async("prefix", make_prefix);

fn broken(_ctx: &ToolContext) -> Result<String, DependencyError> {
    Err(DependencyError::new("database unreachable"))
}

/// A dependency that cannot be created.
static BROKEN: DependencyKey<String> = DependencyKey::new("database", broken);

fn make_a(ctx: &ToolContext) -> futures::future::BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move { Ok(ctx.resolve(&CYCLE_B).await?) })
}

fn make_b(ctx: &ToolContext) -> futures::future::BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move { Ok(ctx.resolve(&CYCLE_A).await?) })
}

/// Half of a cycle.
static CYCLE_A: DependencyKey<String> = DependencyKey::new_async("a", make_a);
/// The other half.
static CYCLE_B: DependencyKey<String> = DependencyKey::new_async("b", make_b);

static BODY_RAN: AtomicUsize = AtomicUsize::new(0);

/// Uses the counter twice and the prefix.
#[tool]
async fn tally(
    #[depends(COUNTER)] first: Arc<AtomicUsize>,
    /// What to add.
    amount: usize,
    #[depends(PREFIX)] prefix: String,
    #[depends(COUNTER)] second: Arc<AtomicUsize>,
) -> String {
    first.fetch_add(amount, Ordering::SeqCst);
    second.fetch_add(amount, Ordering::SeqCst);
    format!("{prefix}: {}", first.load(Ordering::SeqCst))
}

/// Needs the database.
#[tool]
fn query(#[depends(BROKEN)] db: String) -> String {
    BODY_RAN.fetch_add(1, Ordering::SeqCst);
    db
}

/// Needs a cycle.
#[tool]
fn spin(#[depends(CYCLE_A)] a: String) -> String {
    a
}

#[tokio::test]
async fn a_key_asked_for_twice_in_one_call_is_created_once_and_shared() {
    let registry = Registry::builder().tool(tally::TOOL).build().unwrap();
    let before = CREATED.load(Ordering::SeqCst);
    let message = registry.call(&ToolCall::new("c1", "tally", r#"{"amount":2}"#), &ToolContext::new()).await;
    assert_eq!(message.text(), "call c1: 4");
    assert_eq!(CREATED.load(Ordering::SeqCst) - before, 1);
}

#[tokio::test]
async fn a_registry_override_replaces_create() {
    let shared = Arc::new(AtomicUsize::new(10));
    let registry = Registry::builder()
        .tool(tally::TOOL)
        .override_dependency(&COUNTER, shared.clone())
        .override_dependency(&PREFIX, "fixed".to_owned())
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    registry.call(&ToolCall::new("c1", "tally", r#"{"amount":1}"#), &ctx).await;
    let message = registry.call(&ToolCall::new("c2", "tally", r#"{"amount":1}"#), &ctx).await;
    assert_eq!(message.text(), "fixed: 14");
    assert_eq!(shared.load(Ordering::SeqCst), 14);
}

#[tokio::test]
async fn a_context_override_wins_over_the_registry_override() {
    let registry =
        Registry::builder().tool(tally::TOOL).override_dependency(&PREFIX, "registry".to_owned()).build().unwrap();
    let ctx = ToolContext::builder().override_dependency(&PREFIX, "context".to_owned()).build();
    let message = registry.call(&ToolCall::new("c1", "tally", r#"{"amount":1}"#), &ctx).await;
    assert_eq!(message.text(), "context: 2");
}

#[tokio::test]
async fn a_failing_create_is_an_error_naming_the_dependency_and_the_body_never_runs() {
    let registry = Registry::builder().tool(query::TOOL).build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "query", "{}"), &ToolContext::new()).await;
    assert_eq!(
        message,
        ToolMessage::error(
            "c1",
            "query",
            "tool `query` could not run: dependency `database` failed: database unreachable"
        )
    );
    assert_eq!(BODY_RAN.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_dependency_cycle_is_an_error_naming_the_chain() {
    let registry = Registry::builder().tool(spin::TOOL).build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "spin", "{}"), &ToolContext::new()).await;
    assert_eq!(
        message.text(),
        "tool `spin` could not run: dependency cycle: a -> b -> a; change one `create` so that it no longer \
         asks for a key already on the chain"
    );
}

#[tokio::test]
async fn dependencies_are_not_part_of_the_schema() {
    assert_eq!(
        tally::TOOL.definition().input_schema,
        serde_json::json!({
            "type": "object",
            "properties": {"amount": {"description": "What to add.", "type": "integer", "minimum": 0}},
            "required": ["amount"],
            "additionalProperties": false
        })
    );
}
