//! The MCP tasks of `toolbox mcp` in the store of `--store`: each task record is a session record
//! (`task/<id>`) of the session store the todo plans use, so that with `--store redis://..` every
//! worker behind a load balancer reads and advances the same tasks, and a task outlives the
//! request and the process that made it. The record's own principal decides who sees it
//! (`tool_mcp::tasks`); the session store's time to live and size cap bound the records, and a
//! record past its `ttlMs` reads as gone.
//!
//! Each principal's [`TaskQuota`] is kept in a ledger record of its own (`quota/=<principal>`, or
//! `quota/-` for callers without one) in a session store beside the records' (so that neither
//! evicts the other): per task of the principal its bytes, whether it is open
//! and when it expires. A write checks and changes the ledger first (the session store's
//! update is atomic across workers), then the task record; a record write that does not happen
//! gives its ledger change back.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_mcp::tasks::{TaskQuota, TaskRecord, TaskStore, TaskStoreError};
use tool_runtime::BoxFuture;
use tool_std::session::{SessionError, SessionStore, modify};

/// The key of the record within its session meta.
const RECORD: &str = "task";

/// The key of a ledger's tasks within its session meta: task id to `[bytes, open (0 or 1),
/// expires at (ms since the Unix epoch)]`.
const HELD: &str = "held";

/// The task flags of `toolbox mcp` beside `--task`: the lease of a run and each principal's quota.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TaskFlags {
    /// Tools with one of these tags (beside `read_only`, `idempotent`, `retry_safe`) are run
    /// again from the start when the worker running their task stopped; other tasks of a stopped
    /// worker fail saying the call may have had effects. Comma-separated or repeated.
    #[arg(long, value_delimiter = ',', value_name = "TAGS")]
    pub(crate) task_retry: Vec<String>,
    /// How long a task run's lease lasts unless renewed, in milliseconds: a task whose worker
    /// stopped (killed, frozen, cut off) is run again (a `read_only`, `idempotent` or
    /// `retry_safe` tool) or failed when next read after its lease lapsed.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub(crate) task_lease_ms: u64,
    /// How a created task reaches the worker that runs it: `local` runs it in the worker that
    /// created it; `streams` queues it on a Redis stream (in the Redis of `--store
    /// redis://...`, which it needs) that every worker on that Redis takes tasks from, so a task
    /// created on one worker may run on another, and one whose worker stopped after taking it is
    /// taken by another within about 1.6 leases. A task with a secret argument runs where it was
    /// created, unless the workers share `--task-key-file`.
    #[arg(long, value_enum, value_name = "RUNNER", default_value_t = RunnerChoice::Local)]
    pub(crate) task_runner: RunnerChoice,
    /// With `--task-runner streams`: queue the tasks this worker creates but take none from the
    /// queue (a front worker; the other workers run them).
    #[arg(long)]
    pub(crate) no_task_take: bool,
    /// A file of at least 32 random bytes (the first 32 are used) sealing the secret arguments of
    /// task records, the same file for every worker on the store: then a task with a secret
    /// argument may run on any worker (queued with `--task-runner streams`, or run again after
    /// its worker stopped). Without it each worker seals with a key of its own and such a task
    /// runs only where it was created. Use a file of its own, not `--request-state-key-file`.
    #[arg(long, value_name = "FILE")]
    pub(crate) task_key_file: Option<std::path::PathBuf>,
    /// The most open tasks (working or input_required) one principal keeps in the task store.
    #[arg(long, value_name = "N", default_value_t = tool_mcp::tasks::DEFAULT_TASK_QUOTA_OPEN)]
    pub(crate) task_quota_open: usize,
    /// The most bytes of task records (their JSON) one principal keeps in the task store.
    #[arg(long, value_name = "BYTES", default_value_t = tool_mcp::tasks::DEFAULT_TASK_QUOTA_BYTES)]
    pub(crate) task_quota_bytes: usize,
}

/// `--task-runner`: how a created task reaches the worker that runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum RunnerChoice {
    /// In the worker that created it, at once.
    Local,
    /// Queued on a Redis stream that every worker on the Redis of `--store` takes tasks from.
    Streams,
}

impl TaskFlags {
    /// The builder with the task key of `--task-key-file`, when given.
    ///
    /// # Errors
    /// The file cannot be read or holds fewer than 32 bytes.
    pub(crate) fn apply_key(&self, builder: tool_mcp::McpServerBuilder) -> Result<tool_mcp::McpServerBuilder, String> {
        let Some(path) = &self.task_key_file else { return Ok(builder) };
        let key = std::fs::read(path).map_err(|e| format!("cannot read --task-key-file {}: {e}", path.display()))?;
        builder.task_key(key).map_err(|e| format!("--task-key-file {}: {e}", path.display()))
    }

    /// The quota of one principal.
    pub(crate) fn quota(&self) -> TaskQuota {
        TaskQuota { max_open: self.task_quota_open, max_bytes: self.task_quota_bytes }
    }
}

/// A [`TaskStore`] over a [`SessionStore`], with a [`TaskQuota`] per principal.
#[derive(Debug)]
pub(crate) struct SessionTaskStore {
    sessions: Arc<dyn SessionStore>,
    ledgers: Arc<dyn SessionStore>,
    quota: TaskQuota,
}

impl SessionTaskStore {
    /// Records in `sessions`, each principal's quota ledger in `ledgers`.
    pub(crate) fn new(sessions: Arc<dyn SessionStore>, ledgers: Arc<dyn SessionStore>, quota: TaskQuota) -> Self {
        Self { sessions, ledgers, quota }
    }
}

/// The ledger record of `principal`'s quota.
fn ledger_of(principal: Option<&str>) -> String {
    principal.map_or_else(|| "quota/-".to_owned(), |p| format!("quota/={p}"))
}

/// Puts `record`'s entry in its principal's ledger (`None`: takes it out) once `quota` allows it
/// (`creates`: a new record, the only write `max_open` is checked at); the entry it replaced.
fn account(
    sessions: &dyn SessionStore,
    quota: &TaskQuota,
    record: &TaskRecord,
    entry: Option<Value>,
    creates: bool,
) -> Result<Option<Value>, TaskStoreError> {
    let now = now_ms();
    modify(sessions, &ledger_of(record.principal.as_deref()), None, |meta| {
        let mut held = match meta.remove(HELD) {
            Some(Value::Object(held)) => held,
            _ => serde_json::Map::new(),
        };
        held.retain(|_, e| e[2].as_u64().is_some_and(|until| until > now));
        let before = held.remove(&record.id);
        if let Some(entry) = &entry {
            let (mut open, mut bytes) = (0, entry[0].as_u64().unwrap_or(0));
            for e in held.values() {
                open += usize::from(e[1].as_u64() == Some(1));
                bytes = bytes.saturating_add(e[0].as_u64().unwrap_or(0));
            }
            quota.check(open, usize::try_from(bytes).unwrap_or(usize::MAX), creates)?;
            held.insert(record.id.clone(), entry.clone());
        }
        meta.insert(HELD.to_owned(), Value::Object(held));
        Ok(before)
    })
    .map_err(|e| failed(&e))?
}

/// The ledger entry of `record`.
fn entry(record: &TaskRecord) -> Value {
    json!([record.size(), u8::from(record.open()), record.created_at_ms.saturating_add(record.ttl_ms)])
}

fn id_of(task: &str) -> String {
    format!("task/{task}")
}

fn failed(error: &SessionError) -> TaskStoreError {
    TaskStoreError::Failed(format!("the task store failed: {error}"))
}

/// The stored record, when there is one of this shape and its time to live is not over.
fn read(meta: &tool_std::session::SessionMeta) -> Option<TaskRecord> {
    let record: TaskRecord = serde_json::from_value(meta.get(RECORD)?.clone()).ok()?;
    (!record.expired_now()).then_some(record)
}

/// Runs `work` (the session store blocks) on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, TaskStoreError> + Send + 'static,
) -> Result<T, TaskStoreError> {
    tokio::task::spawn_blocking(work).await.map_err(|_| {
        TaskStoreError::Failed("the task store's work was stopped before it finished; try again".to_owned())
    })?
}

impl TaskStore for SessionTaskStore {
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        let (sessions, ledgers) = (self.sessions.clone(), self.ledgers.clone());
        let quota = self.quota;
        Box::pin(blocking(move || {
            let value =
                serde_json::to_value(&record).map_err(|e| TaskStoreError::Failed(format!("a task record: {e}")))?;
            account(&*ledgers, &quota, &record, Some(entry(&record)), true)?;
            let written = modify(&*sessions, &id_of(&record.id), None, |meta| {
                meta.insert(RECORD.to_owned(), value.clone());
                Ok::<_, ()>(())
            });
            if matches!(written, Ok(Ok(()))) {
                index(&*ledgers, &record);
            } else {
                let _ = account(&*ledgers, &quota, &record, None, false);
            }
            written
                .map_err(|e| failed(&e))?
                .map_err(|()| TaskStoreError::Failed("the task record was not saved".to_owned()))
        }))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        let sessions = self.sessions.clone();
        let id = id_of(id);
        Box::pin(blocking(move || match sessions.load(&id, None) {
            Ok(meta) => Ok(read(&meta)),
            Err(SessionError::Expired { .. }) => Ok(None),
            Err(error) => Err(failed(&error)),
        }))
    }

    fn replace(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
        let (sessions, ledgers) = (self.sessions.clone(), self.ledgers.clone());
        let quota = self.quota;
        Box::pin(blocking(move || {
            let value =
                serde_json::to_value(&record).map_err(|e| TaskStoreError::Failed(format!("a task record: {e}")))?;
            let before = account(&*ledgers, &quota, &record, Some(entry(&record)), false)?;
            let outcome = modify(&*sessions, &id_of(&record.id), None, |meta| {
                // A compare and swap: only over the revision before this one.
                match read(meta) {
                    Some(stored) if stored.revision + 1 == record.revision => {
                        meta.insert(RECORD.to_owned(), value.clone());
                        Ok(())
                    }
                    _ => Err(()),
                }
            })
            .map_err(|e| failed(&e));
            if matches!(outcome, Ok(Ok(()))) {
                index(&*ledgers, &record);
            } else {
                // Not written: the ledger keeps what it had (no entry when it had none).
                let _ = account(&*ledgers, &quota, &record, before, false);
            }
            Ok(outcome?.is_ok())
        }))
    }

    fn working(&self, limit: usize) -> BoxFuture<'_, Result<Vec<String>, TaskStoreError>> {
        let ledgers = self.ledgers.clone();
        Box::pin(blocking(move || {
            let meta = match ledgers.load(WORKING, None) {
                Ok(meta) => meta,
                Err(SessionError::Expired { .. }) => return Ok(Vec::new()),
                Err(error) => return Err(failed(&error)),
            };
            let now = now_ms();
            let ids = meta.get(HELD).and_then(Value::as_object).map(|held| {
                held.iter().filter(|(_, until)| until.as_u64().is_some_and(|u| u > now)).map(|(id, _)| id.clone())
            });
            Ok(ids.into_iter().flatten().take(limit).collect())
        }))
    }
}

/// The record (in the ledgers' store) indexing the tasks stored `working`, for the lease sweep:
/// task id to when it expires.
const WORKING: &str = "working";

/// The most tasks [`WORKING`] indexes: 10 000. Past it a new `working` task is not indexed (it is
/// settled when read, as with a store without a sweep).
const MAX_INDEXED: usize = 10_000;

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// Keeps `record`, just written, in the [`WORKING`] index while it is `working`, out of it
/// otherwise. An index that cannot be written is logged: its tasks are settled when read.
fn index(ledgers: &dyn SessionStore, record: &TaskRecord) {
    let working = record.status == tool_mcp::tasks::TaskStatus::Working;
    let now = now_ms();
    let changed = modify(ledgers, WORKING, None, |meta| {
        let mut held = match meta.remove(HELD) {
            Some(Value::Object(held)) => held,
            _ => serde_json::Map::new(),
        };
        held.retain(|_, until| until.as_u64().is_some_and(|u| u > now));
        if !working {
            held.remove(&record.id);
        } else if held.len() < MAX_INDEXED || held.contains_key(&record.id) {
            held.insert(record.id.clone(), json!(record.created_at_ms.saturating_add(record.ttl_ms)));
        }
        meta.insert(HELD.to_owned(), Value::Object(held));
        Ok::<_, ()>(())
    });
    if let Err(error) = changed {
        tracing::warn!(task = %tool_mcp::tasks::LoggedTaskId(&record.id), %error, "cannot keep the index of working tasks; the task is settled when read");
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::TaskStatus;
    use tool_std::session::MemorySessionStore;

    use super::*;

    fn record(principal: &str, id: &str) -> TaskRecord {
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        TaskRecord::new(id, "t", "", Some(principal.to_owned()), u64::try_from(since.as_millis()).unwrap(), 60_000)
    }

    fn store(quota: TaskQuota) -> SessionTaskStore {
        SessionTaskStore::new(Arc::new(MemorySessionStore::new()), Arc::new(MemorySessionStore::new()), quota)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn working_lists_the_tasks_stored_working_and_no_others() {
        let store = store(TaskQuota::default());
        for id in ["w1", "w2", "w3"] {
            store.insert(record("ana", id)).await.unwrap();
        }
        let mut ended = store.get("w2").await.unwrap().unwrap();
        ended.revision = 1;
        ended.status = TaskStatus::Failed;
        assert!(store.replace(ended).await.unwrap());
        let mut working = store.working(10).await.unwrap();
        working.sort();
        assert_eq!(working, ["w1", "w3"]);
        assert_eq!(store.working(1).await.unwrap().len(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_principal_over_its_open_quota_is_refused_naming_it_and_an_ended_task_frees_its_place() {
        let store = store(TaskQuota { max_open: 1, max_bytes: 1 << 20 });
        store.insert(record("mallory", "m1")).await.unwrap();
        assert_eq!(
            store.insert(record("mallory", "m2")).await,
            Err(TaskStoreError::OverQuota(
                "this caller has 1 tasks open, its quota of open tasks (TaskQuota::max_open is 1); wait for one to \
                 end, or cancel one with tasks/cancel"
                    .to_owned()
            ))
        );
        assert_eq!(store.get("m2").await.unwrap(), None);
        store.insert(record("ana", "a1")).await.unwrap();
        let mut ended = store.get("m1").await.unwrap().unwrap();
        ended.revision = 1;
        ended.status = TaskStatus::Completed;
        assert!(store.replace(ended).await.unwrap());
        store.insert(record("mallory", "m2")).await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_over_the_byte_quota_is_refused_and_a_failed_compare_and_swap_gives_its_bytes_back() {
        let size = record("mallory", "m1").size();
        let quota = TaskQuota { max_open: 10, max_bytes: 2 * size + 20 };
        let store = store(quota);
        store.insert(record("mallory", "m1")).await.unwrap();
        // A write over a revision that is not the stored one is not made, and takes no quota.
        let mut stale = record("mallory", "m1");
        stale.revision = 5;
        stale.status_message = Some("x".repeat(10));
        assert!(!store.replace(stale).await.unwrap());
        store.insert(record("mallory", "m2")).await.unwrap();
        // Over the bytes: refused with the quota's error (its text is tool-mcp's to test).
        let mut grown = store.get("m2").await.unwrap().unwrap();
        grown.revision = 1;
        grown.status_message = Some("x".repeat(100));
        let expected = quota.check(0, grown.size() + size, false).unwrap_err();
        assert_eq!(store.replace(grown).await, Err(expected));
        assert_eq!(store.get("m2").await.unwrap().unwrap().revision, 0);
        store.insert(record("ana", "a1")).await.unwrap();
    }
}
