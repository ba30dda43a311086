//! Dependency injection with `#[depends(KEY)]`: keys, overrides, nesting and scopes.
//!
//! Run it with `cargo run -p examples --example dependency_injection`. It serves a few calls of two
//! small tools and prints, after each step, how many times each key's `create` ran:
//!
//! - `POOL` is shared (`DependencyKey::shared_async`): created once on first use (even by
//!   concurrent calls), shared by every later call, closed when the registry is closed.
//! - `REQUEST_LOG` is per call (`DependencyKey::per_call`): created at most once per call,
//!   although the tool asks for it directly and the `AUDITOR` asks for it again while being
//!   created.
//! - `NOTES_ROOT` has no sensible default (`DependencyKey::provided`): `main` hands the value in
//!   with `RegistryBuilder::provide` (as a CLI does with its workspace root), and the registry
//!   would not build without it; `USER` is overridden for one session on its context.
//! - `API_TOKEN`'s `create` fails: the tool body never runs and the model is told which
//!   dependency failed and why.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tool_runtime::prelude::*;
use tool_runtime::{BoxError, BoxFuture};

static CREATED_POOLS: AtomicUsize = AtomicUsize::new(0);
static CREATED_LOGS: AtomicUsize = AtomicUsize::new(0);
static CREATED_AUDITORS: AtomicUsize = AtomicUsize::new(0);

/// A connection pool: expensive, shared by every call of a registry.
#[derive(Debug)]
pub struct Pool {
    number: usize,
}

fn connect(_ctx: &ToolContext) -> BoxFuture<'_, Result<Arc<Pool>, DependencyError>> {
    Box::pin(async {
        let number = CREATED_POOLS.fetch_add(1, Ordering::SeqCst) + 1;
        // Connecting takes a while; calls that arrive meanwhile wait for this pool.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        Ok(Arc::new(Pool { number }))
    })
}

fn disconnect(pool: &Arc<Pool>) -> Result<(), BoxError> {
    println!("  closed pool #{}", pool.number);
    Ok(())
}

/// The pool: one per registry, closed with it.
pub static POOL: DependencyKey<Arc<Pool>> = DependencyKey::shared_async("pool", connect).on_close(disconnect);

/// What one call did, in order.
pub type RequestLog = Arc<Mutex<Vec<String>>>;

fn new_log(ctx: &ToolContext) -> Result<RequestLog, DependencyError> {
    CREATED_LOGS.fetch_add(1, Ordering::SeqCst);
    Ok(Arc::new(Mutex::new(vec![format!("call {}", ctx.call_id().unwrap_or("?"))])))
}

/// The log of one call.
pub static REQUEST_LOG: DependencyKey<RequestLog> = DependencyKey::per_call("request_log", new_log);

/// Writes audit lines into the call's log.
#[derive(Debug, Clone)]
pub struct Auditor {
    log: RequestLog,
}

impl Auditor {
    fn note(&self, line: String) {
        self.log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(line);
    }
}

fn new_auditor(ctx: &ToolContext) -> BoxFuture<'_, Result<Auditor, DependencyError>> {
    Box::pin(async move {
        CREATED_AUDITORS.fetch_add(1, Ordering::SeqCst);
        // Nesting: the auditor asks for the call's log, the same value the tool receives.
        Ok(Auditor { log: ctx.resolve(&REQUEST_LOG).await? })
    })
}

/// The auditor of one call.
pub static AUDITOR: DependencyKey<Auditor> = DependencyKey::per_call_async("auditor", new_auditor);

/// Where the notes live; the application provides it.
pub static NOTES_ROOT: DependencyKey<String> = DependencyKey::provided("notes_root");

fn anonymous(_ctx: &ToolContext) -> Result<String, DependencyError> {
    Ok("anonymous".to_owned())
}

/// Who is asking; a session overrides it on its context.
pub static USER: DependencyKey<String> = DependencyKey::per_call("user", anonymous);

fn token_from_env(_ctx: &ToolContext) -> Result<String, DependencyError> {
    std::env::var("NOTES_EXAMPLE_API_TOKEN")
        .map_err(|_| DependencyError::new("NOTES_EXAMPLE_API_TOKEN is not set; export it to publish"))
}

/// The token for publishing, from the environment.
pub static API_TOKEN: DependencyKey<String> = DependencyKey::per_call("api_token", token_from_env);

/// Reads a note.
#[tool]
pub fn read_note(
    /// The note's name.
    name: String,
    #[depends(POOL)] pool: Arc<Pool>,
    #[depends(NOTES_ROOT)] root: String,
    #[depends(USER)] user: String,
    #[depends(REQUEST_LOG)] log: RequestLog,
    #[depends(AUDITOR)] auditor: Auditor,
) -> String {
    auditor.note(format!("{user} read {name}"));
    let lines = log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).join("; ");
    format!("{root}/{name} via pool #{} [{lines}]", pool.number)
}

/// Publishes a note.
#[tool]
pub fn publish_note(
    /// The note's name.
    name: String,
    #[depends(API_TOKEN)] token: String,
) -> String {
    format!("published {name} with a token of {} bytes", token.len())
}

fn counts() -> String {
    format!(
        "creates so far: pool {}, request_log {}, auditor {}",
        CREATED_POOLS.load(Ordering::SeqCst),
        CREATED_LOGS.load(Ordering::SeqCst),
        CREATED_AUDITORS.load(Ordering::SeqCst)
    )
}

fn show(batch: &[ToolMessage]) {
    for message in batch {
        let marker = if message.is_error { "error" } else { "ok" };
        println!("  {} {marker}: {}", message.tool_call_id, message.text());
    }
    println!("  {}", counts());
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builder()
        .tool(read_note::TOOL)
        .tool(publish_note::TOOL)
        .provide(&NOTES_ROOT, "/srv/notes".to_owned())
        .build()?;

    println!("one turn of three calls (they share one new pool; each call has its own log):");
    let calls: Vec<ToolCall> = ["todo.md", "ideas.md", "log.md"]
        .iter()
        .enumerate()
        .map(|(i, name)| ToolCall::new(format!("call_{}", i + 1), "read_note", format!(r#"{{"name":"{name}"}}"#)))
        .collect();
    show(&registry.call_batch(&calls, &ToolContext::new()).await);

    println!("a later call from Ada's session (context override of `user`; the pool is reused):");
    let ada = ToolContext::builder().session_id("ada").override_dependency(&USER, "ada".to_owned()).build();
    show(&[registry.call(&ToolCall::new("call_4", "read_note", r#"{"name":"todo.md"}"#), &ada).await]);

    println!("a dependency that cannot be created (the tool body does not run):");
    show(&[registry.call(&ToolCall::new("call_5", "publish_note", r#"{"name":"todo.md"}"#), &ada).await]);

    println!("closing the registry:");
    registry.close().await?;
    Ok(())
}
