//! Closing a registry: its tools and its registry-scoped dependency values are closed once each,
//! a failure is reported and the others are still closed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tool_runtime::prelude::*;
use tool_runtime::{BoxError, CloseError, CloseFailure};

/// What was opened and closed, in order; every test overrides [`JOURNAL`] with its own.
#[derive(Debug, Default)]
struct Journal(Mutex<Vec<String>>);

impl Journal {
    fn write(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

fn no_journal(_ctx: &ToolContext) -> Result<Arc<Journal>, DependencyError> {
    Err(DependencyError::new("override `journal`"))
}

static JOURNAL: DependencyKey<Arc<Journal>> = DependencyKey::per_call("journal", no_journal);

/// A resource that notes when it is closed.
#[derive(Clone, Debug)]
struct Resource {
    name: &'static str,
    journal: Arc<Journal>,
}

async fn open(ctx: &ToolContext, name: &'static str) -> Result<Resource, DependencyError> {
    let journal = ctx.resolve(&JOURNAL).await?;
    journal.write(format!("open {name}"));
    Ok(Resource { name, journal })
}

fn open_database(ctx: &ToolContext) -> BoxFuture<'_, Result<Resource, DependencyError>> {
    Box::pin(open(ctx, "database"))
}

fn open_browser(ctx: &ToolContext) -> BoxFuture<'_, Result<Resource, DependencyError>> {
    Box::pin(open(ctx, "browser"))
}

fn open_cache(ctx: &ToolContext) -> BoxFuture<'_, Result<Resource, DependencyError>> {
    Box::pin(open(ctx, "cache"))
}

fn open_socket(ctx: &ToolContext) -> BoxFuture<'_, Result<Resource, DependencyError>> {
    Box::pin(open(ctx, "socket"))
}

fn close_quietly(resource: &Resource) -> Result<(), BoxError> {
    resource.journal.write(format!("close {}", resource.name));
    Ok(())
}

fn close_after_a_wait(resource: &Resource) -> BoxFuture<'_, Result<(), BoxError>> {
    Box::pin(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        resource.journal.write(format!("close {}", resource.name));
        Ok(())
    })
}

/// A close that waits for another thread (no tokio needed).
fn close_through_a_thread(resource: &Resource) -> BoxFuture<'_, Result<(), BoxError>> {
    Box::pin(async move {
        let (sender, receiver) = futures::channel::oneshot::channel();
        let journal = resource.journal.clone();
        let name = resource.name;
        std::thread::spawn(move || {
            journal.write(format!("close {name}"));
            sender.send(()).unwrap();
        });
        receiver.await.map_err(|e| e.into())
    })
}

fn open_pipe(ctx: &ToolContext) -> BoxFuture<'_, Result<Resource, DependencyError>> {
    Box::pin(open(ctx, "pipe"))
}

fn close_with_an_error(resource: &Resource) -> Result<(), BoxError> {
    resource.journal.write(format!("close {}", resource.name));
    Err("the browser process did not exit: pid 4242 still running".into())
}

fn close_with_a_panic(_resource: &Resource) -> Result<(), BoxError> {
    panic!("socket already closed")
}

/// A registry-scoped database with a synchronous close.
static DATABASE: DependencyKey<Resource> =
    DependencyKey::shared_async("database", open_database).on_close(close_quietly);
/// A registry-scoped browser whose close fails.
static BROWSER: DependencyKey<Resource> =
    DependencyKey::shared_async("browser", open_browser).on_close(close_with_an_error);
/// A registry-scoped cache with an asynchronous close.
static CACHE: DependencyKey<Resource> =
    DependencyKey::shared_async("cache", open_cache).on_close_async(close_after_a_wait);
/// A registry-scoped socket whose close panics.
static SOCKET: DependencyKey<Resource> =
    DependencyKey::shared_async("socket", open_socket).on_close(close_with_a_panic);

/// A registry-scoped pipe whose close waits for another thread.
static PIPE: DependencyKey<Resource> =
    DependencyKey::shared_async("pipe", open_pipe).on_close_async(close_through_a_thread);

/// Uses the pipe.
#[tool]
fn pipe(#[depends(PIPE)] resource: Resource) -> String {
    format!("wrote to {}", resource.name)
}

/// Uses the database.
#[tool]
fn query(#[depends(DATABASE)] db: Resource) -> String {
    format!("queried {}", db.name)
}

/// Uses the browser, then the database.
#[tool]
fn browse(#[depends(BROWSER)] browser: Resource, #[depends(DATABASE)] db: Resource) -> String {
    format!("browsed with {} and {}", browser.name, db.name)
}

/// Uses the cache.
#[tool]
fn cached(#[depends(CACHE)] cache: Resource) -> String {
    format!("read {}", cache.name)
}

/// Uses the socket.
#[tool]
fn send(#[depends(SOCKET)] socket: Resource) -> String {
    format!("sent on {}", socket.name)
}

/// A hand-written tool holding a connection of its own.
struct Terminal {
    journal: Arc<Journal>,
    definition: ToolDefinition,
    fail: bool,
}

impl Terminal {
    fn new(journal: &Arc<Journal>, fail: bool) -> Arc<Self> {
        let definition = ToolDefinition {
            name: "terminal".to_owned(),
            description: "Runs a command in a kept-open shell.".to_owned(),
            input_schema: serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
            set: None,
            tags: Vec::new(),
            strict: None,
            output_schema: None,
            callers: tool_runtime::Callers::Direct,
        };
        Arc::new(Self { journal: journal.clone(), definition, fail })
    }
}

impl Tool for Terminal {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(&'a self, _arguments: &'a str, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        Box::pin(async { Ok(ToolResult::text("$")) })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), BoxError>> {
        Box::pin(async move {
            self.journal.write("close terminal");
            if self.fail { Err("shell hung up".into()) } else { Ok(()) }
        })
    }
}

fn registry(journal: &Arc<Journal>, failing_terminal: bool) -> Registry {
    Registry::builder()
        .tool(query::TOOL)
        .tool(browse::TOOL)
        .tool(cached::TOOL)
        .tool(send::TOOL)
        .tool(pipe::TOOL)
        .tool_dyn(Terminal::new(journal, failing_terminal))
        .override_dependency(&JOURNAL, journal.clone())
        .build()
        .unwrap()
}

async fn call(registry: &Registry, name: &str) -> ToolMessage {
    registry.call(&ToolCall::new("c1", name, "{}"), &ToolContext::new()).await
}

#[tokio::test]
async fn close_closes_the_tools_then_the_registry_scoped_values_last_created_first() {
    let journal = Arc::new(Journal::default());
    let registry = registry(&journal, false);
    assert_eq!(call(&registry, "query").await.text(), "queried database");
    assert_eq!(call(&registry, "cached").await.text(), "read cache");
    registry.close().await.unwrap();
    assert_eq!(journal.entries(), ["open database", "open cache", "close terminal", "close cache", "close database"]);
}

#[tokio::test]
async fn values_never_created_are_not_closed() {
    let journal = Arc::new(Journal::default());
    let registry = registry(&journal, false);
    registry.close().await.unwrap();
    assert_eq!(journal.entries(), ["close terminal"]);
}

#[tokio::test]
async fn a_value_shared_by_many_calls_is_closed_once() {
    let journal = Arc::new(Journal::default());
    let registry = registry(&journal, false);
    call(&registry, "query").await;
    call(&registry, "query").await;
    registry.close().await.unwrap();
    registry.close().await.unwrap();
    drop(registry);
    assert_eq!(journal.entries(), ["open database", "close terminal", "close database"]);
}

#[tokio::test]
async fn a_failing_close_is_reported_and_the_other_resources_are_still_closed() {
    let journal = Arc::new(Journal::default());
    let registry = registry(&journal, true);
    assert_eq!(call(&registry, "browse").await.text(), "browsed with browser and database");
    assert_eq!(call(&registry, "send").await.text(), "sent on socket");
    let error = registry.close().await.unwrap_err();
    assert_eq!(
        error,
        CloseError {
            failures: vec![
                CloseFailure { resource: "tool `terminal`".to_owned(), cause: "shell hung up".to_owned() },
                CloseFailure {
                    resource: "dependency `SOCKET` (key id \"socket\")".to_owned(),
                    cause: "panicked: socket already closed".to_owned()
                },
                CloseFailure {
                    resource: "dependency `BROWSER` (key id \"browser\")".to_owned(),
                    cause: "the browser process did not exit: pid 4242 still running".to_owned()
                },
            ]
        }
    );
    assert_eq!(
        error.to_string(),
        "3 of the registry's resources failed to close: tool `terminal`: shell hung up; dependency `SOCKET` (key id \
         \"socket\"): panicked: socket already closed; dependency `BROWSER` (key id \"browser\"): the browser process \
         did not exit: pid 4242 still running"
    );
    assert_eq!(
        journal.entries(),
        ["open browser", "open database", "open socket", "close terminal", "close database", "close browser"]
    );
}

#[tokio::test]
async fn a_closed_registry_refuses_calls() {
    let journal = Arc::new(Journal::default());
    let registry = registry(&journal, false);
    registry.close().await.unwrap();
    let message = call(&registry, "query").await;
    assert_eq!(
        message,
        ToolMessage::error(
            "c1",
            "query",
            "tool `query` did not run: the registry is closed; build a new registry to serve more calls"
        )
    );
    assert_eq!(journal.entries(), ["close terminal"]);
}

#[tokio::test]
async fn dropping_a_registry_closes_what_it_holds() {
    let journal = Arc::new(Journal::default());
    let registry = registry(&journal, false);
    call(&registry, "query").await;
    drop(registry);
    assert_eq!(journal.entries(), ["open database", "close terminal", "close database"]);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_registry_finishes_an_asynchronous_close_on_the_runtime() {
    let journal = Arc::new(Journal::default());
    let registry = registry(&journal, false);
    call(&registry, "cached").await;
    drop(registry);
    assert_eq!(journal.entries(), ["open cache", "close terminal"]);
    tokio::time::sleep(Duration::from_millis(10)).await;
    tokio::task::yield_now().await;
    assert_eq!(journal.entries(), ["open cache", "close terminal", "close cache"]);
}

#[test]
fn dropping_a_registry_outside_a_runtime_finishes_an_asynchronous_close_on_the_dropping_thread() {
    let journal = Arc::new(Journal::default());
    let registry = registry(&journal, false);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(runtime.block_on(call(&registry, "pipe")).text(), "wrote to pipe");
    drop(runtime);
    drop(registry);
    assert_eq!(journal.entries(), ["open pipe", "close terminal", "close pipe"]);
}

#[tokio::test]
async fn an_overriding_value_belongs_to_the_caller_and_is_not_closed() {
    let journal = Arc::new(Journal::default());
    let registry = Registry::builder()
        .tool(query::TOOL)
        .override_dependency(&JOURNAL, journal.clone())
        .override_dependency(&DATABASE, Resource { name: "test database", journal: journal.clone() })
        .build()
        .unwrap();
    assert_eq!(call(&registry, "query").await.text(), "queried test database");
    registry.close().await.unwrap();
    assert_eq!(journal.entries(), Vec::<String>::new());
}
