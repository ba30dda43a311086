//! `#[depends(KEY)]`: creation, overrides, scopes, nesting, failures and cycles, counting every
//! `create`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tool_runtime::prelude::*;
use tool_runtime::{DependencyName, ToolError, ToolErrorKind};

/// How many times each key's `create` ran; every test overrides [`CREATES`] with its own.
#[derive(Debug, Default)]
struct Creates(Mutex<BTreeMap<&'static str, usize>>);

impl Creates {
    fn bump(&self, id: &'static str) -> usize {
        let mut counts = self.0.lock().unwrap();
        let count = counts.entry(id).or_default();
        *count += 1;
        *count
    }

    fn counts(&self) -> BTreeMap<&'static str, usize> {
        self.0.lock().unwrap().clone()
    }
}

fn no_creates(_ctx: &ToolContext) -> Result<Arc<Creates>, DependencyError> {
    Err(DependencyError::new("override `creates` with a counter"))
}

/// The test's counter of `create` calls.
static CREATES: DependencyKey<Arc<Creates>> = DependencyKey::per_call("creates", no_creates);

fn make_counter(ctx: &ToolContext) -> BoxFuture<'_, Result<Arc<AtomicUsize>, DependencyError>> {
    Box::pin(async move {
        ctx.resolve(&CREATES).await?.bump("counter");
        Ok(Arc::new(AtomicUsize::new(0)))
    })
}

/// A counter created once per call.
static COUNTER: DependencyKey<Arc<AtomicUsize>> = DependencyKey::per_call_async("counter", make_counter);

fn make_prefix(ctx: &ToolContext) -> BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move {
        ctx.resolve(&CREATES).await?.bump("prefix");
        Ok(format!("call {}", ctx.call_id().unwrap_or("?")))
    })
}

/// A prefix created asynchronously from the context.
static PREFIX: DependencyKey<String> = DependencyKey::per_call_async("prefix", make_prefix);

fn make_report(ctx: &ToolContext) -> BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move {
        ctx.resolve(&CREATES).await?.bump("report");
        let counter = ctx.resolve(&COUNTER).await?;
        counter.fetch_add(100, Ordering::SeqCst);
        Ok("report".to_owned())
    })
}

/// A dependency whose `create` asks for [`COUNTER`].
static REPORT: DependencyKey<String> = DependencyKey::per_call_async("report", make_report);

fn make_connection(ctx: &ToolContext) -> BoxFuture<'_, Result<usize, DependencyError>> {
    Box::pin(async move {
        let number = ctx.resolve(&CREATES).await?.bump("connection");
        // A slow handshake: concurrent first uses all arrive while it is still running.
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok(number)
    })
}

/// A registry-scoped connection number (1 for the first connection made).
static CONNECTION: DependencyKey<usize> = DependencyKey::shared_async("connection", make_connection);

fn make_flaky(ctx: &ToolContext) -> BoxFuture<'_, Result<usize, DependencyError>> {
    Box::pin(async move {
        let attempt = ctx.resolve(&CREATES).await?.bump("flaky");
        if attempt == 1 { Err(DependencyError::new("server busy")) } else { Ok(attempt) }
    })
}

/// A registry-scoped value whose first `create` fails.
static FLAKY: DependencyKey<usize> = DependencyKey::shared_async("flaky", make_flaky);

fn broken(_ctx: &ToolContext) -> Result<String, DependencyError> {
    Err(DependencyError::new("database unreachable"))
}

/// A dependency that cannot be created.
static BROKEN: DependencyKey<String> = DependencyKey::per_call("database", broken);

fn make_repository(ctx: &ToolContext) -> BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move { Ok(format!("repository on {}", ctx.resolve(&BROKEN).await?)) })
}

/// A dependency that needs the broken one.
static REPOSITORY: DependencyKey<String> = DependencyKey::per_call_async("repository", make_repository);

fn make_a(ctx: &ToolContext) -> BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move { Ok(ctx.resolve(&CYCLE_B).await?) })
}

fn make_b(ctx: &ToolContext) -> BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move { Ok(ctx.resolve(&CYCLE_C).await?) })
}

fn make_c(ctx: &ToolContext) -> BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move { Ok(ctx.resolve(&CYCLE_A).await?) })
}

/// A third of a cycle.
static CYCLE_A: DependencyKey<String> = DependencyKey::per_call_async("a", make_a);
/// A third of a cycle.
static CYCLE_B: DependencyKey<String> = DependencyKey::per_call_async("b", make_b);
/// A third of a cycle, registry-scoped (a cycle through a shared value must not hang either).
static CYCLE_C: DependencyKey<String> = DependencyKey::shared_async("c", make_c);

fn make_selfish(ctx: &ToolContext) -> BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move { Ok(ctx.resolve(&SELFISH).await?) })
}

/// A key that asks for itself.
static SELFISH: DependencyKey<String> = DependencyKey::per_call_async("selfish", make_selfish);

fn make_x(ctx: &ToolContext) -> BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        Ok(ctx.resolve(&SHARED_Y).await?)
    })
}

fn make_y(ctx: &ToolContext) -> BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        Ok(ctx.resolve(&SHARED_X).await?)
    })
}

/// A registry-scoped half of a cycle whose `create` takes a while.
static SHARED_X: DependencyKey<String> = DependencyKey::shared_async("x", make_x);
/// The other half.
static SHARED_Y: DependencyKey<String> = DependencyKey::shared_async("y", make_y);

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

/// Uses the report, which uses the counter the tool also asks for.
#[tool]
fn audit(#[depends(REPORT)] report: String, #[depends(COUNTER)] counter: Arc<AtomicUsize>) -> String {
    format!("{report}: {}", counter.load(Ordering::SeqCst))
}

/// Reports the shared connection.
#[tool]
async fn connect(#[depends(CONNECTION)] connection: usize) -> String {
    format!("connection {connection}")
}

/// Reports the flaky value.
#[tool]
fn flaky(#[depends(FLAKY)] value: usize) -> String {
    format!("attempt {value}")
}

/// Needs the database.
#[tool]
fn query(#[depends(BROKEN)] db: String) -> String {
    BODY_RAN.fetch_add(1, Ordering::SeqCst);
    db
}

/// Needs the repository, which needs the database.
#[tool]
fn lookup(#[depends(REPOSITORY)] repository: String) -> String {
    BODY_RAN.fetch_add(1, Ordering::SeqCst);
    repository
}

/// Needs a cycle.
#[tool]
fn spin(#[depends(CYCLE_A)] a: String) -> String {
    BODY_RAN.fetch_add(1, Ordering::SeqCst);
    a
}

/// Needs a key that asks for itself.
#[tool]
fn mirror(#[depends(SELFISH)] value: String) -> String {
    BODY_RAN.fetch_add(1, Ordering::SeqCst);
    value
}

/// Enters the shared cycle at `x`.
#[tool]
fn enter_x(#[depends(SHARED_X)] x: String) -> String {
    x
}

/// Enters the shared cycle at `y`.
#[tool]
fn enter_y(#[depends(SHARED_Y)] y: String) -> String {
    y
}

/// A registry of every tool here, counting creates in `creates`.
fn registry(creates: &Arc<Creates>) -> Registry {
    Registry::builder().discover().override_dependency(&CREATES, creates.clone()).build().unwrap()
}

async fn call(registry: &Registry, name: &str, arguments: &str) -> ToolMessage {
    registry.call(&ToolCall::new("c1", name, arguments), &ToolContext::new()).await
}

#[tokio::test]
async fn a_key_asked_for_twice_in_one_call_is_created_once_and_shared() {
    let creates = Arc::new(Creates::default());
    let message = call(&registry(&creates), "tally", r#"{"amount":2}"#).await;
    assert_eq!(message.text(), "call c1: 4");
    assert_eq!(creates.counts(), BTreeMap::from([("counter", 1), ("prefix", 1)]));
}

#[tokio::test]
async fn a_key_asked_for_by_a_parameter_and_by_a_nested_dependency_is_created_once() {
    let creates = Arc::new(Creates::default());
    let message = call(&registry(&creates), "audit", "{}").await;
    assert_eq!(message.text(), "report: 100");
    assert_eq!(creates.counts(), BTreeMap::from([("counter", 1), ("report", 1)]));
}

#[tokio::test]
async fn each_call_gets_its_own_call_scoped_value() {
    let creates = Arc::new(Creates::default());
    let registry = registry(&creates);
    let ctx = ToolContext::new();
    registry.call(&ToolCall::new("c1", "tally", r#"{"amount":1}"#), &ctx).await;
    let message = registry.call(&ToolCall::new("c2", "tally", r#"{"amount":1}"#), &ctx).await;
    assert_eq!(message.text(), "call c2: 2");
    assert_eq!(creates.counts(), BTreeMap::from([("counter", 2), ("prefix", 2)]));
}

#[tokio::test]
async fn a_registry_scoped_value_is_created_on_first_use_and_shared_by_later_calls() {
    tokio::time::pause();
    let creates = Arc::new(Creates::default());
    let registry = registry(&creates);
    assert_eq!(creates.counts(), BTreeMap::new());
    assert_eq!(call(&registry, "connect", "{}").await.text(), "connection 1");
    assert_eq!(call(&registry, "connect", "{}").await.text(), "connection 1");
    assert_eq!(creates.counts(), BTreeMap::from([("connection", 1)]));
}

#[tokio::test]
async fn concurrent_first_uses_of_a_registry_scoped_key_create_it_once() {
    tokio::time::pause();
    let creates = Arc::new(Creates::default());
    let registry = registry(&creates);
    let calls: Vec<ToolCall> = (1..=3).map(|i| ToolCall::new(format!("c{i}"), "connect", "{}")).collect();
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    let texts: Vec<String> = batch.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(texts, ["connection 1", "connection 1", "connection 1"]);
    assert_eq!(creates.counts(), BTreeMap::from([("connection", 1)]));
}

#[tokio::test]
async fn two_registries_do_not_share_registry_scoped_values() {
    tokio::time::pause();
    let creates = Arc::new(Creates::default());
    let first = registry(&creates);
    let second = registry(&creates);
    assert_eq!(call(&first, "connect", "{}").await.text(), "connection 1");
    assert_eq!(call(&second, "connect", "{}").await.text(), "connection 2");
}

#[tokio::test]
async fn a_failed_registry_scoped_create_is_tried_again_by_the_next_call() {
    let creates = Arc::new(Creates::default());
    let registry = registry(&creates);
    assert_eq!(
        call(&registry, "flaky", "{}").await.text(),
        "tool `flaky` could not run: dependency `FLAKY` (key id \"flaky\") failed: server busy"
    );
    assert_eq!(call(&registry, "flaky", "{}").await.text(), "attempt 2");
    assert_eq!(call(&registry, "flaky", "{}").await.text(), "attempt 2");
    assert_eq!(creates.counts(), BTreeMap::from([("flaky", 2)]));
}

#[tokio::test]
async fn a_registry_override_replaces_create_for_every_call() {
    let creates = Arc::new(Creates::default());
    let shared = Arc::new(AtomicUsize::new(10));
    let registry = Registry::builder()
        .tool(tally::TOOL)
        .override_dependency(&CREATES, creates.clone())
        .override_dependency(&COUNTER, shared.clone())
        .override_dependency(&PREFIX, "fixed".to_owned())
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    registry.call(&ToolCall::new("c1", "tally", r#"{"amount":1}"#), &ctx).await;
    let message = registry.call(&ToolCall::new("c2", "tally", r#"{"amount":1}"#), &ctx).await;
    assert_eq!(message.text(), "fixed: 14");
    assert_eq!(shared.load(Ordering::SeqCst), 14);
    assert_eq!(creates.counts(), BTreeMap::new());
}

#[tokio::test]
async fn a_context_override_wins_over_the_registry_override() {
    let creates = Arc::new(Creates::default());
    let registry = Registry::builder()
        .tool(tally::TOOL)
        .override_dependency(&CREATES, creates.clone())
        .override_dependency(&PREFIX, "registry".to_owned())
        .build()
        .unwrap();
    let ctx = ToolContext::builder().override_dependency(&PREFIX, "context".to_owned()).build();
    let message = registry.call(&ToolCall::new("c1", "tally", r#"{"amount":1}"#), &ctx).await;
    assert_eq!(message.text(), "context: 2");
    assert_eq!(creates.counts(), BTreeMap::from([("counter", 1)]));
}

#[tokio::test]
async fn an_override_also_serves_the_nested_dependencies_that_ask_for_the_key() {
    let creates = Arc::new(Creates::default());
    let registry = Registry::builder()
        .tool(audit::TOOL)
        .override_dependency(&CREATES, creates.clone())
        .override_dependency(&COUNTER, Arc::new(AtomicUsize::new(5)))
        .build()
        .unwrap();
    assert_eq!(call(&registry, "audit", "{}").await.text(), "report: 105");
    assert_eq!(creates.counts(), BTreeMap::from([("report", 1)]));
}

#[tokio::test]
async fn an_override_of_a_registry_scoped_key_replaces_create() {
    let creates = Arc::new(Creates::default());
    let registry = Registry::builder()
        .tool(connect::TOOL)
        .override_dependency(&CREATES, creates.clone())
        .override_dependency(&CONNECTION, 42)
        .build()
        .unwrap();
    assert_eq!(call(&registry, "connect", "{}").await.text(), "connection 42");
    assert_eq!(creates.counts(), BTreeMap::new());
}

#[tokio::test]
async fn a_failing_create_is_an_error_naming_the_dependency_and_the_body_never_runs() {
    let registry = Registry::builder().tool(query::TOOL).build().unwrap();
    let before = BODY_RAN.load(Ordering::SeqCst);
    let message = registry.call(&ToolCall::new("c1", "query", "{}"), &ToolContext::new()).await;
    assert_eq!(
        message,
        ToolMessage::error(
            "c1",
            "query",
            "tool `query` could not run: dependency `BROKEN` (key id \"database\") failed: database unreachable"
        )
    );
    assert_eq!(BODY_RAN.load(Ordering::SeqCst), before);
}

#[tokio::test]
async fn a_failing_nested_create_names_every_dependency_on_the_way() {
    let registry = Registry::builder().tool(lookup::TOOL).build().unwrap();
    let before = BODY_RAN.load(Ordering::SeqCst);
    let message = call(&registry, "lookup", "{}").await;
    assert_eq!(
        message.text(),
        "tool `lookup` could not run: dependency `REPOSITORY` (key id \"repository\") failed: dependency with key id \
         \"database\" failed: database unreachable"
    );
    assert_eq!(BODY_RAN.load(Ordering::SeqCst), before);
}

/// Needs the database, named by a path.
#[tool]
fn query_by_path(#[depends(crate::BROKEN)] db: String) -> String {
    db
}

#[tokio::test]
async fn a_nested_key_another_tool_of_the_registry_names_is_called_by_that_static() {
    let registry = Registry::builder().tool(lookup::TOOL).tool(query::TOOL).build().unwrap();
    assert_eq!(
        call(&registry, "lookup", "{}").await.text(),
        "tool `lookup` could not run: dependency `REPOSITORY` (key id \"repository\") failed: dependency `BROKEN` \
         (key id \"database\") failed: database unreachable"
    );
}

#[tokio::test]
async fn a_key_is_named_as_the_calling_tools_own_depends_wrote_it() {
    // The registry knows the key as `BROKEN` (`query` comes first by name); `query_by_path` wrote
    // `crate::BROKEN`.
    let registry = Registry::builder().tool(query_by_path::TOOL).tool(query::TOOL).build().unwrap();
    assert_eq!(
        call(&registry, "query_by_path", "{}").await.text(),
        "tool `query_by_path` could not run: dependency `crate::BROKEN` (key id \"database\") failed: database \
         unreachable"
    );
    assert_eq!(
        call(&registry, "query", "{}").await.text(),
        "tool `query` could not run: dependency `BROKEN` (key id \"database\") failed: database unreachable"
    );
}

/// The counter's id, with another value type.
static COUNTER_TEXT: DependencyKey<String> = DependencyKey::per_call("counter", |_| Ok(String::new()));

/// Asks for the counter's id as text.
#[tool]
fn count_text(#[depends(COUNTER_TEXT)] text: String) -> String {
    text
}

#[tokio::test]
async fn two_keys_of_one_id_and_different_types_are_a_dependency_error_naming_the_key_asked_for() {
    let registry = Registry::builder().tool(count_text::TOOL).build().unwrap();
    let ctx = ToolContext::builder().override_dependency(&COUNTER, Arc::new(AtomicUsize::new(1))).build();
    let message = registry.call(&ToolCall::new("c1", "count_text", "{}"), &ctx).await;
    assert_eq!(message.error_kind, Some(ToolErrorKind::Dependency));
    assert_eq!(
        message.text(),
        "tool `count_text` could not run: dependency `COUNTER_TEXT` (key id \"counter\") failed: two dependency keys \
         share the id \"counter\" with different value types; give each key an id of its own"
    );
}

#[tokio::test]
async fn outside_a_registry_a_cycle_names_the_key_by_the_static_the_tools_depends_wrote() {
    let error = mirror::TOOL.call("{}", &ToolContext::new()).await.unwrap_err();
    assert_eq!(
        error,
        ToolError::DependencyCycle {
            tool: String::new(),
            chain: vec![
                DependencyName::new("selfish", Some("SELFISH")),
                DependencyName::new("selfish", Some("SELFISH"))
            ],
        }
    );
}

#[tokio::test]
async fn a_dependency_cycle_is_an_error_naming_the_chain_once() {
    let registry = Registry::builder().tool(spin::TOOL).build().unwrap();
    let before = BODY_RAN.load(Ordering::SeqCst);
    let message = call(&registry, "spin", "{}").await;
    assert_eq!(
        message,
        ToolMessage::error(
            "c1",
            "spin",
            "tool `spin` could not run: dependency cycle: `CYCLE_A` -> key id \"b\" -> key id \"c\" -> `CYCLE_A` \
             (key ids \"a\" -> \"b\" -> \"c\" -> \"a\"); change one `create` so that it no longer asks for a key \
             already on the chain"
        )
    );
    assert_eq!(BODY_RAN.load(Ordering::SeqCst), before);
}

#[tokio::test]
async fn a_key_that_asks_for_itself_is_a_cycle_of_one() {
    let registry = Registry::builder().tool(mirror::TOOL).build().unwrap();
    let message = call(&registry, "mirror", "{}").await;
    assert_eq!(
        message.text(),
        "tool `mirror` could not run: dependency cycle: `SELFISH` -> `SELFISH` (key ids \"selfish\" -> \"selfish\"); \
         change one `create` so that it no longer asks for a key already on the chain"
    );
}

#[tokio::test]
async fn a_cycle_leaves_the_registry_serving_and_is_found_again_on_the_next_call() {
    let registry = Registry::builder().tool(spin::TOOL).tool(tally::TOOL).build().unwrap();
    let first = call(&registry, "spin", "{}").await;
    let second = call(&registry, "spin", "{}").await;
    assert_eq!(first, second);
    let ctx = ToolContext::builder().override_dependency(&CREATES, Arc::new(Creates::default())).build();
    let message = registry.call(&ToolCall::new("c3", "tally", r#"{"amount":1}"#), &ctx).await;
    assert_eq!(message.text(), "call c3: 2");
}

#[tokio::test(start_paused = true)]
async fn a_cycle_of_registry_scoped_keys_entered_by_two_calls_at_once_is_an_error_not_a_hang() {
    // Without the check, call 1 would wait for `y` (being created by call 2) while call 2 waits
    // for `x` (being created by call 1); the time limit only turns such a hang into a failure.
    let registry = Registry::builder()
        .tool(enter_x::TOOL)
        .tool(enter_y::TOOL)
        .default_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let calls = [ToolCall::new("c1", "enter_x", "{}"), ToolCall::new("c2", "enter_y", "{}")];
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    let texts: Vec<String> = batch.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(
        texts,
        [
            "tool `enter_x` could not run: dependency cycle: `SHARED_X` -> `SHARED_Y` -> `SHARED_X` (key ids \"x\" \
             -> \"y\" -> \"x\"); change one `create` so that it no longer asks for a key already on the chain",
            "tool `enter_y` could not run: dependency cycle: `SHARED_Y` -> `SHARED_X` -> `SHARED_Y` (key ids \"y\" \
             -> \"x\" -> \"y\"); change one `create` so that it no longer asks for a key already on the chain",
        ]
    );
}

#[tokio::test]
async fn resolving_outside_a_call_creates_a_fresh_value_each_time() {
    let creates = Arc::new(Creates::default());
    let ctx = ToolContext::builder().override_dependency(&CREATES, creates.clone()).build();
    ctx.resolve(&COUNTER).await.unwrap();
    ctx.resolve(&COUNTER).await.unwrap();
    assert_eq!(creates.counts(), BTreeMap::from([("counter", 2)]));
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
