//! MCP tasks (the extension `io.modelcontextprotocol/tasks`, SEP-2663): a `tools/call` answered
//! with a task handle (`resultType: "task"`), the tool running in the background, and the client
//! reading its state with `tasks/get`, answering its input requests with `tasks/update` and
//! stopping it with `tasks/cancel`.
//!
//! # Which calls become tasks
//! A tool opts in by a tag:
//! - [`TASK_TAG`] (`task`): a call from a client that declared the extension (at `initialize`, or
//!   in the request's `_meta` client capabilities at 2026-07-28) becomes a task; from any other
//!   client it runs in the request as any call.
//! - [`TASK_REQUIRED_TAG`] (`task_required`): the same, and a client without the extension is
//!   refused with -32021 (missing required client capability) whose
//!   `data.requiredCapabilities.extensions` names the extension, before the tool runs.
//! - [`TASK_AFTER_INPUT_TAG`] (`task_after_input`, with one of the two): the first round of a
//!   call (no `requestState`, no `inputResponses`) runs in the request, so the tool gathers input
//!   with input-required results; the round that brings answers becomes a task that knows them.
//!
//! Other methods stay what rmcp makes of them: `tasks/result` and `tasks/list` (removed by the
//! extension) are -32601, and `tasks/*` from a client without the extension are -32021.
//!
//! # The record
//! A task lives in a [`TaskStore`] as a [`TaskRecord`], which holds all a worker needs: the tool,
//! its arguments, the principal, the status, the answers so far, the pending input requests, the
//! result or error and the times. The `CreateTaskResult` is sent once the record is stored, so a
//! `tasks/get` right after it finds the task. The default store, [`MemoryTaskStore`], keeps them
//! in the process; [`McpServerBuilder::task_store`](crate::McpServerBuilder::task_store) plugs in
//! another (Redis, a database) that every worker behind a load balancer shares. A task is only
//! seen by the principal that created it ([`ToolContext::principal`](tool_runtime::ToolContext::principal),
//! no principal matching no principal): for any other caller it does not exist (-32602).
//!
//! # Running
//! The tool runs on the server's task tracker (a shutdown waits for it as for any call) with a
//! cancellation token kept in the process by task id. It ends as:
//! - `completed` with the `tools/call` result inlined as `result` (a tool error too:
//!   `result.isError` is `true`);
//! - `failed` with a JSON-RPC error object as `error`: the tool panicked (-32603), or it failed
//!   on an answer the client could not give (-32021 or -32602, as in a request);
//! - `cancelled` by `tasks/cancel`, which cancels the token when the task runs in this process
//!   and marks the record; a task already terminal is left as it is (the ack is the same);
//! - `input_required` when the tool asked for input without an answer: the run stops (as a call
//!   does in a request, see [`talk`](crate::talk)) and the record holds the `inputRequests`.
//!   `tasks/update` merges the answers given into the record (unknown keys are ignored) and, once
//!   no request is pending, runs the tool again from the start with every answer known, on
//!   whichever worker received the update. A `tasks/update` of a task that is not
//!   `input_required` (working, or ended) is acknowledged and changes nothing.
//!
//! A run has no request open to the client: its log messages and progress reports are dropped,
//! and its input requests always park the task (also for a client of a protocol before
//! 2026-07-28). A deferred tool reached through the `call_tool` meta-tool runs in the request.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities as RmcpClientCapabilities, DetailedTask, ErrorData, JsonObject, Task, TaskPayload, TaskStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tool_runtime::talk::ClientCapabilities;
use tool_runtime::{BoxFuture, ToolDefinition};

pub use crate::limits::{DEFAULT_MAX_TASK_BYTES, DEFAULT_MAX_TASKS, DEFAULT_TASK_TTL};

/// The tag of a tool whose calls become tasks for clients that declared the tasks extension
/// (see the [module docs](self)).
pub const TASK_TAG: &str = "task";

/// The tag of a tool whose calls must be tasks: a client without the tasks extension is refused
/// with -32021 (see the [module docs](self)).
pub const TASK_REQUIRED_TAG: &str = "task_required";

/// The tag, beside [`TASK_TAG`] or [`TASK_REQUIRED_TAG`], of a tool that gathers input in the
/// request first: the round that brings answers becomes the task (see the [module docs](self)).
pub const TASK_AFTER_INPUT_TAG: &str = "task_after_input";

/// The most answers (`inputResponses`) a task is created with: 64. A task's later rounds keep only
/// the answers its tool used.
pub const MAX_TASK_ANSWERS: usize = 64;

/// The most bytes (as JSON) of the answers a task is created with: 1 MiB.
pub const MAX_TASK_ANSWER_BYTES: usize = 1 << 20;

/// How many tasks of one principal run at once in one server by default: 16. A task created
/// past it is refused (-32600, saying so) and nothing is stored; the other principals' tasks are
/// not counted ([`McpServerBuilder::max_running_tasks`](crate::McpServerBuilder::max_running_tasks)).
pub const DEFAULT_MAX_RUNNING_TASKS: usize = 16;

/// How often a client is told to poll `tasks/get` (`pollIntervalMs`): 250 ms.
pub const POLL_INTERVAL_MS: u64 = 250;

/// How many times a change of a record is tried again when another writer changed it first: 8.
const WRITE_ATTEMPTS: usize = 8;

/// How a tool takes part in tasks, from its tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Support {
    pub(crate) required: bool,
    pub(crate) after_input: bool,
}

/// The task support of `definition`: `None` for a tool tagged neither [`TASK_TAG`] nor
/// [`TASK_REQUIRED_TAG`].
pub(crate) fn support(definition: &ToolDefinition, task_tags: &[String]) -> Option<Support> {
    let has = |tag: &str| definition.tags.iter().any(|t| t == tag);
    let required = has(TASK_REQUIRED_TAG);
    let supported = required || has(TASK_TAG) || task_tags.iter().any(|tag| has(tag));
    supported.then(|| Support { required, after_input: has(TASK_AFTER_INPUT_TAG) })
}

/// The -32021 refusal of a call that must be a task from a client without the extension.
pub(crate) fn required_error(tool: &str) -> ErrorData {
    let mut error =
        ErrorData::missing_required_client_capability(RmcpClientCapabilities::builder().enable_tasks().build());
    error.message = format!(
        "tool `{tool}` runs only as a task; declare the extension `{}` in the client capabilities",
        rmcp::model::TASKS_EXTENSION_ID
    )
    .into();
    error
}

/// What the client that created a task can answer, kept for the runs after `tasks/update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TaskClient {
    /// It answers `elicitation/create`.
    pub elicitation: bool,
    /// It answers `sampling/createMessage`.
    pub sampling: bool,
    /// It answers `roots/list`.
    pub roots: bool,
}

impl From<ClientCapabilities> for TaskClient {
    fn from(c: ClientCapabilities) -> Self {
        Self { elicitation: c.elicitation, sampling: c.sampling, roots: c.roots }
    }
}

impl From<TaskClient> for ClientCapabilities {
    fn from(c: TaskClient) -> Self {
        Self { elicitation: c.elicitation, sampling: c.sampling, roots: c.roots }
    }
}

/// One task as a [`TaskStore`] keeps it (JSON through serde, for stores that keep bytes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task id: 32 hex digits drawn at random.
    pub id: String,
    /// Counts the writes: 0 when created, one more at each [`TaskStore::replace`].
    pub revision: u64,
    /// The tool's name.
    pub tool: String,
    /// The arguments as the client sent them (JSON text, `""` for none), but for the values the
    /// tool's schema marks `writeOnly` ([`Secret<T>`](tool_runtime::Secret) arguments): those are
    /// sealed (encrypted under a key of the creating process, `sealed:v1:...`), never in clear.
    pub arguments: String,
    /// The principal of the creating call; only the same principal sees the task.
    pub principal: Option<String>,
    /// What the creating client can answer.
    pub client: TaskClient,
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: TaskStatus,
    /// The answers known, by input request key (MCP result objects).
    pub answers: BTreeMap<String, Value>,
    /// The input requests without an answer, by key (`{"method", "params"}`), while
    /// `input_required`.
    pub input_requests: BTreeMap<String, Value>,
    /// The `tools/call` result, once `completed`.
    pub result: Option<JsonObject>,
    /// The JSON-RPC error object (`code`, `message`, `data`), once `failed`.
    pub error: Option<JsonObject>,
    /// When it was created, in ms since the Unix epoch.
    pub created_at_ms: u64,
    /// When it last changed, in ms since the Unix epoch.
    pub updated_at_ms: u64,
    /// How long it is kept from `created_at_ms`, in ms; a store may drop it after.
    pub ttl_ms: u64,
}

impl TaskRecord {
    /// `true` once its time to live is over at `now_ms` (ms since the Unix epoch).
    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms >= self.created_at_ms.saturating_add(self.ttl_ms)
    }

    /// `true` once its time to live is over now (the system clock).
    pub fn expired_now(&self) -> bool {
        self.expired(now_ms())
    }
}

/// A store's failure: its text says what went wrong and what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStoreError(
    /// What went wrong and what to change (lowercase, as the server's other errors).
    pub String,
);

impl std::fmt::Display for TaskStoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TaskStoreError {}

/// Where task records live. Implement it over a shared store (Redis, a database) to let any
/// worker answer for any task; give it with
/// [`McpServerBuilder::task_store`](crate::McpServerBuilder::task_store).
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new record (revision 0).
    ///
    /// # Errors
    /// The store is full or unreachable; the `tools/call` is then answered with -32603 and the
    /// message.
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>>;

    /// The record of `id`; `None` when there is none or it expired.
    ///
    /// # Errors
    /// The store is unreachable.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>>;

    /// Stores `record` in place of the one of its id when that one's revision is
    /// `record.revision - 1` (a compare and swap); `Ok(false)` when it is another or gone.
    ///
    /// # Errors
    /// The store is full or unreachable.
    fn replace(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>>;
}

/// A [`TaskStore`] in the process's memory, bounded in records and in bytes (each record counted
/// as its JSON). The bounds are shared by every caller: one caller's tasks can fill the store until
/// they expire (no quota per principal). Expired records are dropped when the store is full or read; a record that does
/// not fit once they are gone is refused.
pub struct MemoryTaskStore {
    max_tasks: usize,
    max_bytes: usize,
    records: Mutex<HashMap<String, (TaskRecord, usize)>>,
}

impl Default for MemoryTaskStore {
    /// [`DEFAULT_MAX_TASKS`] records, [`DEFAULT_MAX_TASK_BYTES`] bytes.
    fn default() -> Self {
        Self::new(DEFAULT_MAX_TASKS, DEFAULT_MAX_TASK_BYTES)
    }
}

impl MemoryTaskStore {
    /// A store of at most `max_tasks` records and `max_bytes` bytes of them.
    pub fn new(max_tasks: usize, max_bytes: usize) -> Self {
        Self { max_tasks, max_bytes, records: Mutex::new(HashMap::new()) }
    }

    /// How many records it holds (expired ones included until they are dropped).
    pub fn len(&self) -> usize {
        self.records.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// `true` when it holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stores `record` (of `size` bytes) in place of `replacing` bytes, when it fits.
    fn fit(
        &self,
        records: &mut HashMap<String, (TaskRecord, usize)>,
        record: TaskRecord,
        replacing: Option<usize>,
    ) -> Result<(), TaskStoreError> {
        let size = serde_json::to_vec(&record).map_or(0, |bytes| bytes.len());
        let fits = |records: &HashMap<String, (TaskRecord, usize)>| {
            let count = records.len() + usize::from(replacing.is_none());
            let bytes = records.values().map(|(_, n)| n).sum::<usize>() - replacing.unwrap_or(0) + size;
            count <= self.max_tasks && bytes <= self.max_bytes
        };
        if !fits(records) {
            let now = now_ms();
            records.retain(|id, (r, _)| *id == record.id || !r.expired(now));
        }
        if !fits(records) {
            return Err(TaskStoreError(format!(
                "the task store is full (at most {} tasks and {} bytes); wait for tasks to expire, or raise the caps \
                 with MemoryTaskStore::new",
                self.max_tasks, self.max_bytes
            )));
        }
        records.insert(record.id.clone(), (record, size));
        Ok(())
    }
}

impl TaskStore for MemoryTaskStore {
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let stored = self.fit(&mut records, record, None);
        Box::pin(std::future::ready(stored))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let found = match records.get(id) {
            Some((record, _)) if record.expired(now_ms()) => {
                records.remove(id);
                None
            }
            Some((record, _)) => Some(record.clone()),
            None => None,
        };
        Box::pin(std::future::ready(Ok(found)))
    }

    fn replace(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let replaced = match records.get(&record.id) {
            Some((stored, size)) if stored.revision + 1 == record.revision => {
                let size = *size;
                self.fit(&mut records, record, Some(size)).map(|()| true)
            }
            _ => Ok(false),
        };
        Box::pin(std::future::ready(replaced))
    }
}

/// The tasks of a server: the store, the time to live, and the tokens of the runs in this
/// process.
pub(crate) struct Tasks {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) ttl: Duration,
    /// The tags that make a tool task-supporting beside [`TASK_TAG`]
    /// ([`McpServerBuilder::task_tag`](crate::McpServerBuilder::task_tag)).
    pub(crate) tags: Vec<String>,
    /// The runs in this process by task id: the token that stops each, and its principal.
    pub(crate) running: Mutex<HashMap<String, (CancellationToken, Option<String>)>>,
    /// The most runs of one principal at once ([`DEFAULT_MAX_RUNNING_TASKS`]).
    max_running: usize,
}

impl Tasks {
    pub(crate) fn new(store: Arc<dyn TaskStore>, ttl: Duration, tags: Vec<String>, max_running: usize) -> Self {
        Self { store, ttl, tags, running: Mutex::new(HashMap::new()), max_running }
    }

    /// Takes a place among `principal`'s running tasks for the task `id` (a token that a run
    /// replaces), or says that the principal has no place left.
    pub(crate) fn reserve(&self, id: &str, principal: Option<&str>) -> Result<(), ErrorData> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let own = running.values().filter(|(_, owner)| owner.as_deref() == principal).count();
        if own >= self.max_running {
            return Err(ErrorData::invalid_request(
                format!(
                    "this caller already has {own} tasks running, the most this server runs at once for one caller; \
                     wait for one to end, or cancel one with tasks/cancel"
                ),
                None,
            ));
        }
        running.insert(id.to_owned(), (CancellationToken::new(), principal.map(str::to_owned)));
        Ok(())
    }

    /// Gives back the place of the task `id`.
    pub(crate) fn release(&self, id: &str) -> Option<CancellationToken> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner).remove(id).map(|(token, _)| token)
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// `ms` since the Unix epoch as ISO 8601 UTC (`2026-07-28T09:05:01.250Z`).
fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        ms % 1000
    )
}

/// A new task id: 32 hex digits from the operating system's random source.
pub(crate) fn new_task_id() -> Result<String, ErrorData> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| {
        ErrorData::internal_error(format!("cannot draw a task id from the random source: {error}"), None)
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

pub(crate) fn store_error(error: &TaskStoreError) -> ErrorData {
    ErrorData::internal_error(format!("the task store failed: {error}"), None)
}

pub(crate) fn unknown_task(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "no task `{id}`: it does not exist, has expired or was created by another caller; send the taskId a \
             tools/call result gave you"
        ),
        None,
    )
}

/// The JSON-RPC error object of `error`.
pub(crate) fn error_object(error: &ErrorData) -> JsonObject {
    match serde_json::to_value(error) {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::from_iter([
            ("code".to_owned(), Value::from(error.code.0)),
            ("message".to_owned(), Value::from(error.message.to_string())),
        ]),
    }
}

/// The base `Task` fields of `record`.
pub(crate) fn task_of(record: &TaskRecord) -> Task {
    Task::new(record.id.clone(), record.status, iso8601(record.created_at_ms), iso8601(record.updated_at_ms))
        .with_ttl_ms(record.ttl_ms)
        .with_poll_interval_ms(POLL_INTERVAL_MS)
}

/// The `DetailedTask` of `record`.
pub(crate) fn detailed(record: &TaskRecord) -> Result<DetailedTask, ErrorData> {
    let payload = match record.status {
        TaskStatus::InputRequired => {
            let mut input_requests = BTreeMap::new();
            for (key, request) in &record.input_requests {
                let request = serde_json::from_value(request.clone()).map_err(|error| {
                    ErrorData::internal_error(
                        format!("input request `{key}` is not a valid MCP request: {error}"),
                        None,
                    )
                })?;
                input_requests.insert(key.clone(), request);
            }
            TaskPayload::InputRequired { input_requests }
        }
        TaskStatus::Completed => TaskPayload::Completed { result: record.result.clone().unwrap_or_default() },
        TaskStatus::Failed => TaskPayload::Failed { error: record.error.clone().unwrap_or_default() },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        _ => TaskPayload::Working,
    };
    Ok(DetailedTask::new(task_of(record), payload))
}

/// Changes the record of `id` with `change` (which returns `false` to leave it), again on a
/// record another writer changed first, at most [`WRITE_ATTEMPTS`] times. The record written,
/// or `None` when there is none or `change` left it.
pub(crate) async fn update(
    store: &dyn TaskStore,
    id: &str,
    mut change: impl FnMut(&mut TaskRecord) -> bool,
) -> Result<Option<TaskRecord>, TaskStoreError> {
    for _ in 0..WRITE_ATTEMPTS {
        let Some(mut record) = store.get(id).await? else { return Ok(None) };
        if !change(&mut record) {
            return Ok(None);
        }
        record.revision += 1;
        record.updated_at_ms = now_ms().max(record.updated_at_ms);
        if store.replace(record.clone()).await? {
            return Ok(Some(record));
        }
    }
    Err(TaskStoreError(format!("task `{id}` kept changing under {WRITE_ATTEMPTS} attempts to write it; try again")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_iso_8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_785_229_501_250), "2026-07-28T09:05:01.250Z");
    }

    fn record(id: &str, ttl_ms: u64) -> TaskRecord {
        TaskRecord {
            id: id.to_owned(),
            revision: 0,
            tool: "t".to_owned(),
            arguments: String::new(),
            principal: None,
            client: TaskClient::default(),
            status: TaskStatus::Working,
            answers: BTreeMap::new(),
            input_requests: BTreeMap::new(),
            result: None,
            error: None,
            created_at_ms: now_ms(),
            updated_at_ms: now_ms(),
            ttl_ms,
        }
    }

    #[tokio::test]
    async fn the_memory_store_is_capped_drops_expired_records_and_replaces_by_revision() {
        let store = MemoryTaskStore::new(2, 1 << 20);
        store.insert(record("a", 0)).await.unwrap();
        store.insert(record("b", 60_000)).await.unwrap();
        // `a` expired: it makes room.
        store.insert(record("c", 60_000)).await.unwrap();
        assert_eq!(store.len(), 2);
        assert_eq!(store.get("a").await.unwrap(), None);
        let error = store.insert(record("d", 60_000)).await.unwrap_err();
        assert_eq!(
            error.0,
            "the task store is full (at most 2 tasks and 1048576 bytes); wait for tasks to expire, or raise the caps \
             with MemoryTaskStore::new"
        );
        let mut next = store.get("b").await.unwrap().unwrap();
        next.revision = 1;
        assert!(store.replace(next.clone()).await.unwrap());
        assert!(!store.replace(next).await.unwrap());
        assert_eq!(store.get("b").await.unwrap().unwrap().revision, 1);
        let small = MemoryTaskStore::new(10, 10);
        assert!(small.insert(record("e", 60_000)).await.is_err());
    }
}
