//! Bad input never costs data: every way a call can fail before its body runs gives its exact
//! message and leaves the files and the session meta exactly as they were.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tool_runtime::prelude::*;
use tool_runtime::{PermissionRequest, RegistryBuilder};

/// Session meta: per session id, a map of keys to values.
#[derive(Debug, Default)]
struct Meta(Mutex<BTreeMap<String, BTreeMap<String, String>>>);

impl Meta {
    fn snapshot(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.0.lock().unwrap().clone()
    }
}

fn no_meta(_ctx: &ToolContext) -> Result<Arc<Meta>, DependencyError> {
    Err(DependencyError::new("override `meta`"))
}

fn no_workdir(_ctx: &ToolContext) -> Result<PathBuf, DependencyError> {
    Err(DependencyError::new("override `workdir`"))
}

fn lock_held(_ctx: &ToolContext) -> Result<u32, DependencyError> {
    Err(DependencyError::new("the notes lock is held by pid 99"))
}

fn make_ring(ctx: &ToolContext) -> BoxFuture<'_, Result<u32, DependencyError>> {
    Box::pin(async move { Ok(ctx.resolve(&LINK).await?) })
}

fn make_link(ctx: &ToolContext) -> BoxFuture<'_, Result<u32, DependencyError>> {
    Box::pin(async move { Ok(ctx.resolve(&RING).await?) })
}

/// The session meta store.
static META: DependencyKey<Arc<Meta>> = DependencyKey::shared("meta", no_meta);
/// The directory notes are written to.
static WORKDIR: DependencyKey<PathBuf> = DependencyKey::per_call("workdir", no_workdir);
/// The notes lock (its `create` fails unless overridden).
static LOCK: DependencyKey<u32> = DependencyKey::per_call("lock", lock_held);
/// Half of a cycle.
static RING: DependencyKey<u32> = DependencyKey::per_call_async("ring", make_ring);
/// The other half.
static LINK: DependencyKey<u32> = DependencyKey::per_call_async("link", make_link);

fn write_note(ctx: &ToolContext, workdir: &std::path::Path, meta: &Meta, name: &str, text: &str) -> String {
    std::fs::write(workdir.join(name), text).unwrap();
    let session = ctx.session_id().unwrap_or("-").to_owned();
    let mut sessions = meta.0.lock().unwrap();
    let entry = sessions.entry(session).or_default().entry("notes".to_owned()).or_insert_with(|| "0".to_owned());
    *entry = (entry.parse::<u32>().unwrap() + 1).to_string();
    format!("saved {name}")
}

/// Saves a note and counts it in the session meta.
#[tool]
fn save_note(
    ctx: &ToolContext,
    #[depends(WORKDIR)] workdir: PathBuf,
    #[depends(META)] meta: Arc<Meta>,
    #[depends(LOCK)] _lock: u32,
    /// The file name.
    name: String,
    /// The note.
    text: String,
) -> String {
    write_note(ctx, &workdir, &meta, &name, &text)
}

/// Saves a note, but needs a dependency cycle first.
#[tool]
fn save_linked(
    ctx: &ToolContext,
    #[depends(WORKDIR)] workdir: PathBuf,
    #[depends(META)] meta: Arc<Meta>,
    #[depends(RING)] _ring: u32,
    /// The file name.
    name: String,
) -> String {
    write_note(ctx, &workdir, &meta, &name, "linked")
}

/// A workspace with one file and session meta, and a registry serving it.
struct Fixture {
    dir: tempfile::TempDir,
    meta: Arc<Meta>,
}

type Snapshot = (BTreeMap<String, String>, BTreeMap<String, BTreeMap<String, String>>);

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("existing.txt"), "keep me").unwrap();
        let meta = Arc::new(Meta::default());
        meta.0.lock().unwrap().insert("s1".to_owned(), BTreeMap::from([("notes".to_owned(), "1".to_owned())]));
        Self { dir, meta }
    }

    /// A registry whose lock can be taken.
    fn builder(&self) -> RegistryBuilder {
        self.builder_with_held_lock().override_dependency(&LOCK, 1)
    }

    fn builder_with_held_lock(&self) -> RegistryBuilder {
        Registry::builder()
            .tool(save_note::TOOL)
            .tool(save_linked::TOOL)
            .override_dependency(&WORKDIR, self.dir.path().to_path_buf())
            .override_dependency(&META, self.meta.clone())
    }

    /// Every file with its contents, and the session meta.
    fn snapshot(&self) -> Snapshot {
        let files = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                (entry.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(entry.path()).unwrap())
            })
            .collect();
        (files, self.meta.snapshot())
    }

    fn untouched() -> Snapshot {
        (
            BTreeMap::from([("existing.txt".to_owned(), "keep me".to_owned())]),
            BTreeMap::from([("s1".to_owned(), BTreeMap::from([("notes".to_owned(), "1".to_owned())]))]),
        )
    }
}

fn session() -> ToolContext {
    ToolContext::builder().session_id("s1").build()
}

fn save(arguments: &str) -> ToolCall {
    ToolCall::new("c1", "save_note", arguments)
}

const GOOD: &str = r#"{"name":"plan.md","text":"ship it"}"#;

#[tokio::test]
async fn a_call_that_succeeds_writes_the_file_and_counts_the_note() {
    let fixture = Fixture::new();
    let registry = fixture.builder().build().unwrap();
    assert_eq!(registry.call(&save(GOOD), &session()).await.text(), "saved plan.md");
    assert_eq!(
        fixture.snapshot(),
        (
            BTreeMap::from([
                ("existing.txt".to_owned(), "keep me".to_owned()),
                ("plan.md".to_owned(), "ship it".to_owned()),
            ]),
            BTreeMap::from([("s1".to_owned(), BTreeMap::from([("notes".to_owned(), "2".to_owned())]))]),
        )
    );
}

#[tokio::test]
async fn an_unknown_tool_changes_nothing() {
    let fixture = Fixture::new();
    let registry = fixture.builder().build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "save_notes", GOOD), &session()).await;
    assert_eq!(message.text(), "unknown tool `save_notes`; available tools: save_linked, save_note");
    assert_eq!(fixture.snapshot(), Fixture::untouched());
}

#[tokio::test]
async fn arguments_with_an_unknown_field_change_nothing() {
    let fixture = Fixture::new();
    let registry = fixture.builder().build().unwrap();
    let message = registry.call(&save(r#"{"name":"plan.md","txt":"ship it"}"#), &session()).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `save_note`: unknown field `txt`; expected one of `name`, `text`"
    );
    assert_eq!(fixture.snapshot(), Fixture::untouched());
}

#[tokio::test]
async fn arguments_that_are_not_json_change_nothing() {
    let fixture = Fixture::new();
    let registry = fixture.builder().build().unwrap();
    let message = registry.call(&save(r#"{"name":"plan.md","#), &session()).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `save_note`: not valid JSON: EOF while parsing a value at line 1 column 18; send one JSON object"
    );
    assert_eq!(fixture.snapshot(), Fixture::untouched());
}

#[tokio::test]
async fn a_failing_dependency_changes_nothing() {
    let fixture = Fixture::new();
    let registry = fixture.builder_with_held_lock().build().unwrap();
    let message = registry.call(&save(GOOD), &session()).await;
    assert_eq!(
        message.text(),
        "tool `save_note` could not run: dependency `LOCK` (key id \"lock\") failed: the notes lock is held by pid 99"
    );
    assert_eq!(fixture.snapshot(), Fixture::untouched());
}

#[tokio::test]
async fn a_dependency_cycle_changes_nothing() {
    let fixture = Fixture::new();
    let registry = fixture.builder().build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "save_linked", r#"{"name":"x.md"}"#), &session()).await;
    assert_eq!(
        message.text(),
        "tool `save_linked` could not run: dependency cycle: `RING` -> key id \"link\" -> `RING` (key ids \"ring\" \
         -> \"link\" -> \"ring\"); change one `create` so that it no longer asks for a key already on the chain"
    );
    assert_eq!(fixture.snapshot(), Fixture::untouched());
}

#[tokio::test]
async fn a_denied_call_changes_nothing() {
    let fixture = Fixture::new();
    let registry = fixture
        .builder()
        .policy(|_request: PermissionRequest<'_>| Permission::Deny("notes are read-only today".to_owned()))
        .build()
        .unwrap();
    let message = registry.call(&save(GOOD), &session()).await;
    assert_eq!(message.text(), "Permission denied: notes are read-only today");
    assert_eq!(fixture.snapshot(), Fixture::untouched());
}

#[tokio::test]
async fn a_stopped_turn_changes_nothing() {
    let fixture = Fixture::new();
    let registry = fixture
        .builder()
        .policy(|request: PermissionRequest<'_>| {
            if request.call.name == "save_linked" {
                Permission::DenyAndStop("linking is off".to_owned())
            } else {
                Permission::Allow
            }
        })
        .build()
        .unwrap();
    let calls = [save(GOOD), ToolCall::new("c2", "save_linked", r#"{"name":"x.md"}"#)];
    let batch = registry.call_batch(&calls, &session()).await;
    assert_eq!(
        batch.messages[0].text(),
        "tool `save_note` did not run: the turn was stopped because the call of `save_linked` was denied: linking is off"
    );
    assert_eq!(fixture.snapshot(), Fixture::untouched());
}

#[tokio::test]
async fn a_call_cancelled_before_it_starts_changes_nothing() {
    let fixture = Fixture::new();
    let registry = fixture.builder().build().unwrap();
    let token = CancellationToken::new();
    token.cancel();
    let ctx = ToolContext::builder().session_id("s1").cancellation(token).build();
    let message = registry.call(&save(GOOD), &ctx).await;
    assert_eq!(message.text(), "tool `save_note` was cancelled");
    assert_eq!(fixture.snapshot(), Fixture::untouched());
}

#[tokio::test]
async fn a_call_on_a_closed_registry_changes_nothing() {
    let fixture = Fixture::new();
    let registry = fixture.builder().build().unwrap();
    registry.close().await.unwrap();
    let message = registry.call(&save(GOOD), &session()).await;
    assert_eq!(
        message.text(),
        "tool `save_note` did not run: the registry is closed; build a new registry to serve more calls"
    );
    assert_eq!(fixture.snapshot(), Fixture::untouched());
}
