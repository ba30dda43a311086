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
//! cancellation token kept in the process by task id, in the worker the
//! [task runner](crate::runner) hands it to: the one that created it by default, or whichever
//! worker takes it from a shared queue (`RedisStreamsRunner`, feature `redis`). It ends as:
//! - `completed` with the `tools/call` result inlined as `result` (a tool error too:
//!   `result.isError` is `true`);
//! - `failed` with a JSON-RPC error object as `error`: the tool panicked (-32603; told by the
//!   result's [`ToolErrorKind::Panicked`](tool_runtime::ToolErrorKind::Panicked), never by its
//!   text), it failed on an answer the client could not give (-32021 or -32602, as in a
//!   request), its outcome is over the principal's [quota](#quotas), or its worker stopped (see
//!   [leases](#leases));
//! - `cancelled` by `tasks/cancel` on any worker: the record is marked, a run in this process has
//!   its token cancelled at once, and a run on another worker sees the mark within
//!   [`WATCH_PERIOD`] (1 s) and has its token cancelled then. A task already terminal is left as
//!   it is (the ack is the same);
//! - `input_required` when the tool asked for input without an answer: the run stops (as a call
//!   does in a request, see [`talk`](crate::talk)) and the record holds the `inputRequests`.
//!   `tasks/update` merges the answers given into the record (unknown keys are ignored) and, once
//!   no request is pending, runs the tool again from the start with every answer known, on
//!   whichever worker received the update. Its place among the running tasks is taken before the
//!   record says `working`, and the run starts only once it holds the record's lease, so a
//!   `tasks/cancel` in between keeps the rerun from starting. A `tasks/update` of a task that is
//!   not `input_required` (working, or ended), or that brings only answers the record no longer
//!   asks for (another update with the same answers came first), is acknowledged and changes
//!   nothing: any number of concurrent updates with the same answers are all acknowledged
//!   (`complete`) and the task runs once.
//!
//! A run has no request open to the client, so its input requests always park the task (also
//! for a client of a protocol before 2026-07-28), and its progress reports and log messages (at
//! `info` and above) are kept in the record instead: every [`STATUS_PERIOD`] (250 ms) the last
//! report as `progress` and the last log message (or, without one, the last report's message;
//! at most [`MAX_STATUS_CHARS`](crate::talk::MAX_STATUS_CHARS) characters) as the status message.
//! `tasks/get` gives them as `statusMessage`: the counts first, `"2/5 copied a.txt"`.
//! When the run ends (completed, failed, input_required), the client whose request created or
//! resumed the task is sent the extension's task status notification, `notifications/tasks`
//! with the task as `tasks/get` gives it, on that request's connection: a stdio client or a
//! legacy session gets it; a stateless HTTP request, answered already, does not (rmcp cannot
//! route it through `subscriptions/listen` yet), and such a client polls `tasks/get`.
//! A deferred tool reached through the `call_tool` meta-tool runs in the request.
//!
//! # Leases
//! A `working` record holds the [`TaskLease`] of the worker running it: the worker's id and when
//! the lease lapses unless renewed ([`McpServerBuilder::task_lease`](crate::McpServerBuilder::task_lease),
//! default [`DEFAULT_TASK_LEASE`], 10 s). The run reads its record every [`WATCH_PERIOD`] (or a
//! third of the lease when shorter) and renews the lease once a third of it has passed; it stops
//! when the record is gone, ended, or leased to another worker, and writes its outcome only while
//! it holds the lease, so a task never has two runs that both write; a run that cannot renew its
//! lease in time (the store does not answer) stops itself, without an outcome, once the lease is
//! within a sixth of lapsing, before another worker may take the task. A lease lapses when its
//! worker was killed, frozen, cut off from the store or restarted. Each server sweeps the store
//! every half lease, jittered by a quarter either way ([`TaskStore::working`], at most
//! [`SWEEP_BATCH`] records a round); the first sweep, `tasks/get` or `tasks/update` that
//! finds a `working` record with a lapsed lease settles it (a run in the worker that finds it is
//! left to go on; a `tasks/cancel` cancels it as it is):
//! - a tool that declares it may run again (tagged `read_only`, `idempotent`, or
//!   [`TASK_RETRY_TAG`] `retry_safe`) is run again from the start by the worker that found it,
//!   under a new lease;
//! - any other ends `failed` (-32603) saying that the worker running it stopped and that the call
//!   may have had effects.
//!
//! Times of records and leases are read from the server's clock
//! ([`McpServerBuilder::clock`](crate::McpServerBuilder::clock)); the periods are tokio's.
//!
//! # Quotas
//! Every store of this crate (and of `toolbox`) holds each principal to a [`TaskQuota`]: open
//! tasks (default [`DEFAULT_TASK_QUOTA_OPEN`], 100) and bytes of records
//! ([`DEFAULT_TASK_QUOTA_BYTES`], 8 MiB). A `tools/call` over it is refused with -32600 naming the
//! quota, and nothing is stored; a run whose outcome does not fit ends `failed` with that error.
//! Other principals are not affected. Beside it, one server runs at most
//! [`DEFAULT_MAX_RUNNING_TASKS`] tasks of one principal at once.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities as RmcpClientCapabilities, DetailedTask, ErrorData, JsonObject, Task, TaskPayload,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tool_runtime::talk::ClientCapabilities;
use tool_runtime::{BoxFuture, Clock, SystemClock, ToolDefinition};

/// A task's status (rmcp's): `working`, `input_required`, `completed`, `failed`, `cancelled`.
pub use rmcp::model::TaskStatus;

pub use crate::limits::{
    DEFAULT_MAX_TASK_BYTES, DEFAULT_MAX_TASKS, DEFAULT_TASK_LEASE, DEFAULT_TASK_QUOTA_BYTES, DEFAULT_TASK_QUOTA_OPEN,
    DEFAULT_TASK_TTL,
};

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

/// The tag of a tool that may run again from the start when the worker running its task
/// stopped (its lease lapsed), beside `read_only` and `idempotent`, which say so too
/// (see the [module docs](self#leases)).
pub const TASK_RETRY_TAG: &str = "retry_safe";

/// How often a run reads its task's record, at most, to see a `tasks/cancel` written by another
/// worker and to renew its lease: 1 s (a third of the lease when that is shorter). A cancel
/// reaching another worker stops the tool within about this long.
pub const WATCH_PERIOD: Duration = Duration::from_secs(1);

/// How often a run keeps its last progress report and log message in its record, at most:
/// 250 ms (the poll interval a client is told).
pub const STATUS_PERIOD: Duration = Duration::from_millis(POLL_INTERVAL_MS);

/// The most `working` tasks one round of the lease sweep reads: 256 ([leases](self#leases)).
pub const SWEEP_BATCH: usize = 256;

/// How often a client is told to poll `tasks/get` (`pollIntervalMs`): 250 ms.
pub const POLL_INTERVAL_MS: u64 = 250;

/// How many times a change of a record is tried, at most, when other writers keep changing it
/// first: 8. Between two tries the writer waits a [`back_off`].
const WRITE_ATTEMPTS: u32 = 8;

/// The longest wait of a [`back_off`]: 64 ms.
const BACK_OFF_CAP: Duration = Duration::from_millis(64);

/// Waits before try `attempt` (1 for the second try) of a write that another writer got in
/// ahead of: a time drawn evenly from zero to 2<sup>`attempt`</sup> ms, capped at
/// [`BACK_OFF_CAP`] (64 ms), so writers that collided spread out instead of colliding again
/// ("full jitter", as in AWS's *Exponential Backoff And Jitter*). It sleeps on tokio's timer and
/// holds no worker. Without the random source it waits the whole span.
pub(crate) async fn back_off(attempt: u32) {
    let span = Duration::from_millis(1u64 << attempt.min(16)).min(BACK_OFF_CAP);
    let span_us = u64::try_from(span.as_micros()).unwrap_or(u64::MAX);
    let wait_us = getrandom::u64().map_or(span_us, |drawn| drawn % (span_us + 1));
    tokio::time::sleep(Duration::from_micros(wait_us)).await;
}

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
    /// The last log message or progress message of its run, for a person (`statusMessage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// The last progress its run reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<TaskProgress>,
    /// The lease of the run working on it, while one is (`working` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<TaskLease>,
}

/// The last progress report of a task's run (as a `notifications/progress`: `progress`, `total`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskProgress {
    /// Units done so far (the tool chooses the unit).
    pub done: u64,
    /// Units in all, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

/// A run's hold on a `working` task: which worker runs it, until when unless renewed. A
/// `working` task whose lease lapsed has no live runner (its worker was killed, frozen or cut
/// off): see the [module docs](self#leases).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskLease {
    /// The worker running it: a random id drawn when its server was built.
    pub worker: String,
    /// When the lease lapses unless renewed, in ms since the Unix epoch.
    pub until_ms: u64,
}

impl TaskRecord {
    /// A new `working` record (revision 0) of a call of `tool` with `arguments` (JSON text, `""`
    /// for none) by `principal`, created at `created_at_ms` (ms since the Unix epoch) and kept
    /// `ttl_ms`: no answers, no lease, nothing else yet.
    pub fn new(
        id: impl Into<String>,
        tool: impl Into<String>,
        arguments: impl Into<String>,
        principal: Option<String>,
        created_at_ms: u64,
        ttl_ms: u64,
    ) -> Self {
        Self {
            id: id.into(),
            revision: 0,
            tool: tool.into(),
            arguments: arguments.into(),
            principal,
            client: TaskClient::default(),
            status: TaskStatus::Working,
            answers: BTreeMap::new(),
            input_requests: BTreeMap::new(),
            result: None,
            error: None,
            created_at_ms,
            updated_at_ms: created_at_ms,
            ttl_ms,
            status_message: None,
            progress: None,
            lease: None,
        }
    }

    /// `true` once its time to live is over at `now_ms` (ms since the Unix epoch).
    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms >= self.created_at_ms.saturating_add(self.ttl_ms)
    }

    /// `true` once its time to live is over now (the system clock).
    pub fn expired_now(&self) -> bool {
        self.expired(now_ms(&SystemClock))
    }

    /// `true` while it is `working` or `input_required` (it counts against
    /// [`TaskQuota::max_open`]).
    pub fn open(&self) -> bool {
        !self.status.is_terminal()
    }

    /// Its size as a store counts it: the bytes of its JSON.
    pub fn size(&self) -> usize {
        serde_json::to_vec(self).map_or(usize::MAX, |bytes| bytes.len())
    }
}

/// A store's failure: its text says what went wrong and what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskStoreError {
    /// The store cannot be used (unreachable, full, a bad record); a `tools/call` creating a task
    /// is answered -32603 (internal error) with the text.
    Failed(String),
    /// The principal of the record is over its [`TaskQuota`]; the text names the quota. A
    /// `tools/call` creating a task is answered -32600 (invalid request) with the text, and a
    /// run whose outcome does not fit ends `failed` with it.
    OverQuota(String),
}

impl TaskStoreError {
    /// The text: what went wrong and what to change (lowercase, as the server's other errors).
    pub fn message(&self) -> &str {
        match self {
            Self::Failed(message) | Self::OverQuota(message) => message,
        }
    }
}

impl std::fmt::Display for TaskStoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for TaskStoreError {}

/// What one principal may keep in a task store: records of one principal (the same
/// `Option<String>`; every caller without a principal shares one quota) count against it, those
/// of others never do. Every store of this crate enforces it, and a [`TaskStore`] of your own
/// should (its [`check`](Self::check) says how).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskQuota {
    /// The most open tasks (`working` or `input_required`, unexpired) at once. Default
    /// [`DEFAULT_TASK_QUOTA_OPEN`] (100). Checked when a task is created.
    pub max_open: usize,
    /// The most bytes of unexpired records (each counted as [`TaskRecord::size`]). Default
    /// [`DEFAULT_TASK_QUOTA_BYTES`] (8 MiB). Checked at every write.
    pub max_bytes: usize,
}

impl Default for TaskQuota {
    fn default() -> Self {
        Self { max_open: DEFAULT_TASK_QUOTA_OPEN, max_bytes: DEFAULT_TASK_QUOTA_BYTES }
    }
}

impl TaskQuota {
    /// Checks a write of one principal's record: `open` tasks of the principal before it (not
    /// counting the record written), `bytes` of its records once written, `creates` when the
    /// write is a new record (only then is `max_open` checked).
    ///
    /// # Errors
    /// [`TaskStoreError::OverQuota`] naming the quota passed.
    pub fn check(&self, open: usize, bytes: usize, creates: bool) -> Result<(), TaskStoreError> {
        if creates && open >= self.max_open {
            return Err(TaskStoreError::OverQuota(format!(
                "this caller has {open} tasks open, its quota of open tasks (TaskQuota::max_open is {}); wait for \
                 one to end, or cancel one with tasks/cancel",
                self.max_open
            )));
        }
        if bytes > self.max_bytes {
            return Err(TaskStoreError::OverQuota(format!(
                "this caller's task records would take {bytes} bytes, over its quota of stored bytes \
                 (TaskQuota::max_bytes is {}); wait for its tasks to expire, or send less",
                self.max_bytes
            )));
        }
        Ok(())
    }
}

/// Where task records live. Implement it over a shared store (Redis, a database) to let any
/// worker answer for any task; give it with
/// [`McpServerBuilder::task_store`](crate::McpServerBuilder::task_store). A store enforces a
/// [`TaskQuota`] per principal.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new record (revision 0).
    ///
    /// # Errors
    /// [`TaskStoreError::OverQuota`]: the record's principal is over its quota;
    /// [`TaskStoreError::Failed`]: the store is full or unreachable.
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
    /// As [`insert`](Self::insert).
    fn replace(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>>;

    /// The ids of (at most `limit`) records stored `working`, for the sweep that settles those
    /// whose lease lapsed without waiting for a read ([leases](self#leases)). The default lists
    /// none: with such a store, a task of a stopped worker is settled when it is next read.
    ///
    /// # Errors
    /// The store is unreachable (the sweep tries again at its next round).
    fn working(&self, limit: usize) -> BoxFuture<'_, Result<Vec<String>, TaskStoreError>> {
        let _ = limit;
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
}

/// A [`TaskStore`] in the process's memory, bounded in records and in bytes (each record counted
/// as [`TaskRecord::size`]) for all callers together, and per principal by a [`TaskQuota`]
/// ([`with_quota`](Self::with_quota)).
/// Expired records (by its clock, the system's unless [`with_clock`](Self::with_clock)) are
/// dropped when the store is full or read; a record that does not fit once they are gone is
/// refused.
pub struct MemoryTaskStore {
    max_tasks: usize,
    max_bytes: usize,
    quota: TaskQuota,
    clock: Arc<dyn Clock>,
    records: Mutex<HashMap<String, (TaskRecord, usize)>>,
}

impl Default for MemoryTaskStore {
    /// [`DEFAULT_MAX_TASKS`] records, [`DEFAULT_MAX_TASK_BYTES`] bytes, the default
    /// [`TaskQuota`].
    fn default() -> Self {
        Self::new(DEFAULT_MAX_TASKS, DEFAULT_MAX_TASK_BYTES)
    }
}

impl MemoryTaskStore {
    /// A store of at most `max_tasks` records and `max_bytes` bytes of them, with the default
    /// [`TaskQuota`] per principal.
    pub fn new(max_tasks: usize, max_bytes: usize) -> Self {
        Self {
            max_tasks,
            max_bytes,
            quota: TaskQuota::default(),
            clock: Arc::new(SystemClock),
            records: Mutex::new(HashMap::new()),
        }
    }

    /// The same store with `quota` per principal.
    #[must_use]
    pub fn with_quota(mut self, quota: TaskQuota) -> Self {
        self.quota = quota;
        self
    }

    /// The same store telling expiry by `clock` (tests drive a
    /// [`FixedClock`](tool_runtime::FixedClock)).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// How many records it holds (expired ones included until they are dropped).
    pub fn len(&self) -> usize {
        self.records.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// `true` when it holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stores `record` in place of the record of its id (`replacing`), when it fits.
    fn fit(
        &self,
        records: &mut HashMap<String, (TaskRecord, usize)>,
        record: TaskRecord,
        replacing: bool,
    ) -> Result<(), TaskStoreError> {
        let size = record.size();
        let now = now_ms(self.clock.as_ref());
        records.retain(|id, (r, _)| *id == record.id || !r.expired(now));
        let others = || records.iter().filter(|(id, _)| **id != record.id).map(|(_, held)| held);
        let (mut open, mut bytes) = (0, size);
        for (held, n) in others().filter(|(r, _)| r.principal == record.principal) {
            open += usize::from(held.open());
            bytes = bytes.saturating_add(*n);
        }
        self.quota.check(open, bytes, !replacing)?;
        let count = others().count() + 1;
        let total = others().map(|(_, n)| n).sum::<usize>().saturating_add(size);
        if count > self.max_tasks || total > self.max_bytes {
            return Err(TaskStoreError::Failed(format!(
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
    fn working(&self, limit: usize) -> BoxFuture<'_, Result<Vec<String>, TaskStoreError>> {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let now = now_ms(self.clock.as_ref());
        let ids = records
            .values()
            .filter(|(r, _)| r.status == TaskStatus::Working && !r.expired(now))
            .map(|(r, _)| r.id.clone())
            .take(limit)
            .collect();
        Box::pin(std::future::ready(Ok(ids)))
    }

    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let stored = if records.contains_key(&record.id) {
            Err(TaskStoreError::Failed(format!("a task `{}` is stored already; draw another id", record.id)))
        } else {
            self.fit(&mut records, record, false)
        };
        Box::pin(std::future::ready(stored))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let found = match records.get(id) {
            Some((record, _)) if record.expired(now_ms(self.clock.as_ref())) => {
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
            Some((stored, _)) if stored.revision + 1 == record.revision => {
                self.fit(&mut records, record, true).map(|()| true)
            }
            _ => Ok(false),
        };
        Box::pin(std::future::ready(replaced))
    }
}

/// The tasks of a server: the store, the time to live, the clock, and the tokens of the runs in
/// this process.
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
    /// The wall clock of records' times, expiry and leases.
    pub(crate) clock: Arc<dyn Clock>,
    /// How long a run's lease lasts unless renewed ([`DEFAULT_TASK_LEASE`]).
    pub(crate) lease: Duration,
    /// This server's worker id in leases: 32 hex digits drawn when it was built.
    pub(crate) worker: String,
    /// The tags that make a tool retry-safe beside `read_only`, `idempotent` and
    /// [`TASK_RETRY_TAG`] ([`McpServerBuilder::task_retry_tag`](crate::McpServerBuilder::task_retry_tag)).
    retry_tags: Vec<String>,
    /// Set once this server's lease sweep is started.
    pub(crate) sweeping: std::sync::atomic::AtomicBool,
}

impl Tasks {
    pub(crate) fn new(
        store: Arc<dyn TaskStore>,
        ttl: Duration,
        tags: Vec<String>,
        max_running: usize,
        clock: Arc<dyn Clock>,
        lease: Duration,
    ) -> Self {
        // Without the random source, a worker id unique in practice: the time and the process.
        let worker = new_task_id().unwrap_or_else(|_| format!("{}-{}", now_ms(clock.as_ref()), std::process::id()));
        Self {
            store,
            ttl,
            tags,
            running: Mutex::new(HashMap::new()),
            max_running,
            clock,
            lease,
            worker,
            retry_tags: Vec::new(),
            sweeping: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The same, with `tags` making a tool retry-safe too.
    pub(crate) fn retry_tags(mut self, tags: Vec<String>) -> Self {
        self.retry_tags = tags;
        self
    }

    /// `true` for a tool that may run again from the start after its worker stopped: tagged
    /// `read_only`, `idempotent`, [`TASK_RETRY_TAG`] (`retry_safe`) or one of the retry tags.
    pub(crate) fn retry_safe(&self, definition: &ToolDefinition) -> bool {
        definition.tags.iter().any(|tag| {
            matches!(tag.as_str(), "read_only" | "idempotent" | TASK_RETRY_TAG) || self.retry_tags.contains(tag)
        })
    }

    /// Milliseconds since the Unix epoch by the server's clock.
    pub(crate) fn now_ms(&self) -> u64 {
        now_ms(self.clock.as_ref())
    }

    /// A lease of this worker from now.
    pub(crate) fn new_lease(&self) -> TaskLease {
        let lease = u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX);
        TaskLease { worker: self.worker.clone(), until_ms: self.now_ms().saturating_add(lease) }
    }

    /// `true` while a run of the task `id` is in this process (or its place is reserved).
    pub(crate) fn runs_here(&self, id: &str) -> bool {
        self.running.lock().unwrap_or_else(PoisonError::into_inner).contains_key(id)
    }

    /// Takes a place among `principal`'s running tasks for the task `id` (a token that a run
    /// replaces), or says that the principal has no place left, or that `id` has one already.
    pub(crate) fn reserve(&self, id: &str, principal: Option<&str>) -> Result<CancellationToken, ErrorData> {
        self.try_reserve(id, principal)?.ok_or_else(|| {
            ErrorData::invalid_request(
                format!("task `{id}` is running on this server already; wait for it with tasks/get"),
                None,
            )
        })
    }

    /// As [`reserve`](Self::reserve), but `None` when `id` has a place already (a run of it, or a
    /// `tasks/update` resuming it, on this server).
    pub(crate) fn try_reserve(
        &self,
        id: &str,
        principal: Option<&str>,
    ) -> Result<Option<CancellationToken>, ErrorData> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running.contains_key(id) {
            return Ok(None);
        }
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
        let token = CancellationToken::new();
        running.insert(id.to_owned(), (token.clone(), principal.map(str::to_owned)));
        Ok(Some(token))
    }

    /// Gives back the place of the task `id`.
    pub(crate) fn release(&self, id: &str) -> Option<CancellationToken> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner).remove(id).map(|(token, _)| token)
    }
}

/// Milliseconds since the Unix epoch by `clock`.
pub(crate) fn now_ms(clock: &dyn Clock) -> u64 {
    let since = clock.now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// `ms` since the Unix epoch as ISO 8601 UTC (`2026-07-28T09:05:01.250Z`).
pub(crate) fn iso8601(ms: u64) -> String {
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

/// A task id as a log line writes it (`tracing`'s `task` field): its first 8 characters and `…`,
/// e.g. `task=06b73d97…`. That tells one task's lines from another's and matches the id a client
/// shows, and never writes the whole id: a task id is what a client presents to reach its task
/// (the only key of a task whose principal is none), so the whole of it is a secret, and the
/// serving rule is that nothing secret is logged. The 8 characters are 32 of a random id's 128
/// bits; the 96 left are as hard to guess as ever. An id of 8 characters or fewer is written as
/// `…` alone.
pub struct LoggedTaskId<'a>(pub &'a str);

impl std::fmt::Display for LoggedTaskId<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown: String = self.0.chars().take(8).collect();
        if shown.len() == self.0.len() { f.write_str("…") } else { write!(f, "{shown}…") }
    }
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
    match error {
        TaskStoreError::OverQuota(message) => ErrorData::invalid_request(message.clone(), None),
        TaskStoreError::Failed(message) => ErrorData::internal_error(format!("the task store failed: {message}"), None),
    }
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
    let task =
        Task::new(record.id.clone(), record.status, iso8601(record.created_at_ms), iso8601(record.updated_at_ms))
            .with_ttl_ms(record.ttl_ms)
            .with_poll_interval_ms(POLL_INTERVAL_MS);
    match status_message(record) {
        Some(message) => task.with_status_message(message),
        None => task,
    }
}

/// A record's `statusMessage`: its last log or progress message, after its last progress as
/// `done/total` (or `done`) when it has one: `"3/10 reading files"`.
fn status_message(record: &TaskRecord) -> Option<String> {
    let counts = record.progress.as_ref().map(|p| match p.total {
        Some(total) => format!("{}/{total}", p.done),
        None => p.done.to_string(),
    });
    match (counts, &record.status_message) {
        (Some(counts), Some(message)) => Some(format!("{counts} {message}")),
        (Some(counts), None) => Some(counts),
        (None, message) => message.clone(),
    }
}

/// The `DetailedTask` of `record`; `key` opens a result's sealed approval token
/// ([`crate::sealed::open_approval_token`]).
pub(crate) fn detailed(record: &TaskRecord, key: Option<&crate::sealed::TaskKey>) -> Result<DetailedTask, ErrorData> {
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
        TaskStatus::Completed => {
            let mut result = record.result.clone().unwrap_or_default();
            crate::sealed::open_approval_token(&mut result, key);
            TaskPayload::Completed { result }
        }
        TaskStatus::Failed => TaskPayload::Failed { error: record.error.clone().unwrap_or_default() },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        _ => TaskPayload::Working,
    };
    Ok(DetailedTask::new(task_of(record), payload))
}

/// Changes the record of `id` with `change` (which returns `false` to leave it): reads the
/// record, changes it, and writes it with [`TaskStore::replace`] over the revision read (a
/// compare and swap). When another writer changed the record first, it waits a [`back_off`] and
/// starts again from a fresh read, so `change` always sees the record as stored and a change
/// another writer made already (or made needless) is not written twice: `change` returns
/// `false` and nothing is written. The record written, or `None` when there is none or `change`
/// left it.
///
/// # Errors
/// The store's errors; and [`TaskStoreError::Failed`] naming the task when other writers got in
/// first at each of [`WRITE_ATTEMPTS`] (8) tries, about 190 ms of back-off at most.
pub(crate) async fn update(
    store: &dyn TaskStore,
    clock: &dyn Clock,
    id: &str,
    mut change: impl FnMut(&mut TaskRecord) -> bool,
) -> Result<Option<TaskRecord>, TaskStoreError> {
    for attempt in 0..WRITE_ATTEMPTS {
        if attempt > 0 {
            back_off(attempt).await;
        }
        let Some(mut record) = store.get(id).await? else { return Ok(None) };
        if !change(&mut record) {
            return Ok(None);
        }
        record.revision += 1;
        record.updated_at_ms = now_ms(clock).max(record.updated_at_ms);
        if store.replace(record.clone()).await? {
            return Ok(Some(record));
        }
    }
    Err(TaskStoreError::Failed(format!(
        "task `{id}` kept changing under {WRITE_ATTEMPTS} attempts to write it; try again"
    )))
}

/// `true` when `record` still waits for one of the `given` answers: it is `input_required` and
/// one of their keys is among its pending input requests. A `tasks/update` of a record for which
/// this is `false` has nothing left to write (see [`take_answers`]).
pub(crate) fn asks_for(record: &TaskRecord, given: &BTreeMap<String, Value>) -> bool {
    record.status == TaskStatus::InputRequired && given.keys().any(|key| record.input_requests.contains_key(key))
}

/// The change a `tasks/update` makes to `record` (through [`update`]) with the answers `given`:
/// each answer to a pending input request moves from `input_requests` to `answers` (an answer to
/// no pending request is ignored), and once no request is pending the record turns `working`
/// under `lease`, for the rerun. `false`, writing nothing, when the record no longer asks for
/// any of them ([`asks_for`]): another `tasks/update` took the same answers first, or the task
/// was resumed, cancelled or ended meanwhile. That update is acknowledged as this one, as an
/// idempotent `tasks/update` is.
pub(crate) fn take_answers(record: &mut TaskRecord, given: &BTreeMap<String, Value>, lease: &TaskLease) -> bool {
    if !asks_for(record, given) {
        return false;
    }
    for (key, answer) in given {
        if record.input_requests.remove(key).is_some() {
            record.answers.insert(key.clone(), answer.clone());
        }
    }
    if record.input_requests.is_empty() {
        record.status = TaskStatus::Working;
        record.lease = Some(lease.clone());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logged_task_id_is_its_first_eight_characters_and_an_ellipsis() {
        assert_eq!(LoggedTaskId("06b73d97bbd59989711ade4ba04382f4").to_string(), "06b73d97…");
        assert_eq!(LoggedTaskId("123456789").to_string(), "12345678…");
        assert_eq!(LoggedTaskId("12345678").to_string(), "…");
        assert_eq!(LoggedTaskId("").to_string(), "…");
        assert_eq!(LoggedTaskId("ééééééééé").to_string(), "éééééééé…");
    }

    #[test]
    fn times_are_iso_8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_785_229_501_250), "2026-07-28T09:05:01.250Z");
    }

    const T0: u64 = 1_785_229_501_000;

    fn record(id: &str, ttl_ms: u64) -> TaskRecord {
        TaskRecord::new(id, "t", "", None, T0, ttl_ms)
    }

    fn of(principal: &str, id: &str) -> TaskRecord {
        TaskRecord { principal: Some(principal.to_owned()), ..record(id, 60_000) }
    }

    fn clock_at(ms: u64) -> Arc<tool_runtime::FixedClock> {
        Arc::new(tool_runtime::FixedClock::new(std::time::UNIX_EPOCH + Duration::from_millis(ms)))
    }

    /// A store whose next `losses` writes lose on purpose: before each, another writer changes
    /// the stored record with `other` (a compare and swap of its own), so the write finds a newer
    /// revision and is refused.
    struct Losing {
        inner: MemoryTaskStore,
        losses: std::sync::atomic::AtomicUsize,
        other: fn(&mut TaskRecord),
    }

    impl Losing {
        fn new(losses: usize, other: fn(&mut TaskRecord)) -> Self {
            Self { inner: MemoryTaskStore::default().with_clock(clock_at(T0)), losses: losses.into(), other }
        }
    }

    impl TaskStore for Losing {
        fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
            self.inner.insert(record)
        }

        fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
            self.inner.get(id)
        }

        fn replace(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
            Box::pin(async move {
                let ordering = std::sync::atomic::Ordering::SeqCst;
                if self.losses.fetch_update(ordering, ordering, |left| left.checked_sub(1)).is_err() {
                    return self.inner.replace(record).await;
                }
                let mut stored = self.inner.get(&record.id).await?.expect("the record is stored");
                (self.other)(&mut stored);
                stored.revision += 1;
                assert!(self.inner.replace(stored).await?);
                Ok(false)
            })
        }
    }

    /// The answer a client gives to the input request `user_name`.
    fn given() -> BTreeMap<String, Value> {
        BTreeMap::from([("user_name".to_owned(), serde_json::json!({"action": "accept", "content": {"name": "Ana"}}))])
    }

    fn lease_of(worker: &str) -> TaskLease {
        TaskLease { worker: worker.to_owned(), until_ms: T0 + 10_000 }
    }

    /// A task `t1` waiting for the answers to `keys`.
    async fn asking(store: &dyn TaskStore, keys: &[&str]) {
        let requests = keys.iter().map(|key| ((*key).to_owned(), serde_json::json!({"method": "elicitation/create"})));
        let record = TaskRecord {
            status: TaskStatus::InputRequired,
            input_requests: requests.collect(),
            ..record("t1", 60_000)
        };
        store.insert(record).await.unwrap();
    }

    /// The `tasks/update` change of `t1` with [`given`] under the lease of worker `ours`.
    async fn answer_t1(store: &Losing) -> Result<Option<TaskRecord>, TaskStoreError> {
        let ours = lease_of("ours");
        update(store, clock_at(T0).as_ref(), "t1", |r| take_answers(r, &given(), &ours)).await
    }

    #[tokio::test(start_paused = true)]
    async fn an_update_whose_answers_another_update_took_first_writes_nothing() {
        let store = Losing::new(1, |r| assert!(take_answers(r, &given(), &lease_of("other"))));
        asking(&store, &["user_name"]).await;
        let written = answer_t1(&store).await;
        assert_eq!(written, Ok(None));
        let stored = store.get("t1").await.unwrap().unwrap();
        assert_eq!((stored.revision, stored.status, stored.lease), (1, TaskStatus::Working, Some(lease_of("other"))));
        assert_eq!(stored.answers, given());
    }

    #[tokio::test(start_paused = true)]
    async fn an_update_whose_answers_were_merged_while_another_request_is_pending_writes_nothing() {
        let store = Losing::new(1, |r| assert!(take_answers(r, &given(), &lease_of("other"))));
        asking(&store, &["user_name", "user_age"]).await;
        let written = answer_t1(&store).await;
        assert_eq!(written, Ok(None));
        let stored = store.get("t1").await.unwrap().unwrap();
        assert_eq!((stored.revision, stored.status, stored.lease), (1, TaskStatus::InputRequired, None));
        assert_eq!(stored.input_requests.keys().collect::<Vec<_>>(), ["user_age"]);
        assert_eq!(stored.answers, given());
    }

    #[tokio::test(start_paused = true)]
    async fn a_change_still_needed_is_written_over_the_others_after_losing_seven_rounds() {
        let store = Losing::new(7, |r| r.status_message = Some(format!("write {}", r.revision + 1)));
        asking(&store, &["user_name"]).await;
        let written = answer_t1(&store).await.unwrap();
        let stored = store.get("t1").await.unwrap();
        assert_eq!(written, stored);
        let stored = stored.unwrap();
        assert_eq!((stored.revision, stored.status, stored.lease), (8, TaskStatus::Working, Some(lease_of("ours"))));
        assert_eq!(stored.status_message.as_deref(), Some("write 7"));
        assert_eq!(stored.answers, given());
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_that_loses_eight_rounds_fails_naming_the_task() {
        let store = Losing::new(8, |r| r.status_message = Some(format!("write {}", r.revision + 1)));
        asking(&store, &["user_name"]).await;
        let written = answer_t1(&store).await;
        assert_eq!(
            written,
            Err(TaskStoreError::Failed("task `t1` kept changing under 8 attempts to write it; try again".to_owned()))
        );
        let stored = store.get("t1").await.unwrap().unwrap();
        assert_eq!((stored.revision, stored.status), (8, TaskStatus::InputRequired));
    }

    #[tokio::test(start_paused = true)]
    async fn a_back_off_waits_at_most_two_to_the_attempt_ms_and_never_past_64_ms() {
        for attempt in 1..=12 {
            let start = tokio::time::Instant::now();
            back_off(attempt).await;
            let most = Duration::from_millis(1 << attempt).min(BACK_OFF_CAP);
            assert!(start.elapsed() <= most, "attempt {attempt} waited {:?}", start.elapsed());
        }
    }

    #[tokio::test]
    async fn the_memory_store_is_capped_drops_expired_records_and_replaces_by_revision() {
        let clock = clock_at(T0 + 1);
        let store = MemoryTaskStore::new(2, 1 << 20).with_clock(clock.clone());
        store.insert(record("a", 1)).await.unwrap();
        store.insert(record("b", 60_000)).await.unwrap();
        // `a` expired: it makes room.
        store.insert(record("c", 60_000)).await.unwrap();
        assert_eq!(store.len(), 2);
        assert_eq!(store.get("a").await.unwrap(), None);
        let error = store.insert(record("d", 60_000)).await.unwrap_err();
        assert_eq!(
            error,
            TaskStoreError::Failed(
                "the task store is full (at most 2 tasks and 1048576 bytes); wait for tasks to expire, or raise the \
                 caps with MemoryTaskStore::new"
                    .to_owned()
            )
        );
        let mut next = store.get("b").await.unwrap().unwrap();
        next.revision = 1;
        assert!(store.replace(next.clone()).await.unwrap());
        assert!(!store.replace(next).await.unwrap());
        assert_eq!(store.get("b").await.unwrap().unwrap().revision, 1);
        let small = MemoryTaskStore::new(10, 10);
        assert!(small.insert(record("e", 60_000)).await.is_err());
    }

    #[tokio::test]
    async fn a_record_is_read_until_its_time_to_live_ends_by_the_stores_clock() {
        let clock = clock_at(T0);
        let store = MemoryTaskStore::default().with_clock(clock.clone());
        store.insert(record("a", 60_000)).await.unwrap();
        clock.advance(Duration::from_millis(59_999));
        assert_eq!(store.get("a").await.unwrap().map(|r| r.id), Some("a".to_owned()));
        clock.advance(Duration::from_millis(1));
        assert_eq!(store.get("a").await.unwrap(), None);
        assert!(store.is_empty());
    }

    #[tokio::test]
    async fn a_principal_over_its_open_quota_is_refused_and_others_are_not() {
        let store = MemoryTaskStore::default()
            .with_quota(TaskQuota { max_open: 2, max_bytes: 1 << 20 })
            .with_clock(clock_at(T0));
        store.insert(of("mallory", "m1")).await.unwrap();
        store.insert(of("mallory", "m2")).await.unwrap();
        assert_eq!(
            store.insert(of("mallory", "m3")).await,
            Err(TaskStoreError::OverQuota(
                "this caller has 2 tasks open, its quota of open tasks (TaskQuota::max_open is 2); wait for one to \
                 end, or cancel one with tasks/cancel"
                    .to_owned()
            ))
        );
        store.insert(of("ana", "a1")).await.unwrap();
        // An ended task is not open: its place is free again.
        let mut ended = store.get("m1").await.unwrap().unwrap();
        ended.revision = 1;
        ended.status = TaskStatus::Completed;
        assert!(store.replace(ended).await.unwrap());
        store.insert(of("mallory", "m3")).await.unwrap();
    }

    #[tokio::test]
    async fn a_principal_over_its_byte_quota_is_refused_at_any_write_and_others_are_not() {
        let size = of("mallory", "m1").size();
        let store = MemoryTaskStore::default()
            .with_quota(TaskQuota { max_open: 10, max_bytes: 2 * size + 10 })
            .with_clock(clock_at(T0));
        store.insert(of("mallory", "m1")).await.unwrap();
        store.insert(of("mallory", "m2")).await.unwrap();
        let mut grown = store.get("m2").await.unwrap().unwrap();
        grown.revision = 1;
        grown.status_message = Some("x".repeat(100));
        let over = format!(
            "this caller's task records would take {} bytes, over its quota of stored bytes (TaskQuota::max_bytes is \
             {}); wait for its tasks to expire, or send less",
            grown.size() + size,
            2 * size + 10
        );
        assert_eq!(store.replace(grown).await, Err(TaskStoreError::OverQuota(over)));
        assert_eq!(store.get("m2").await.unwrap().unwrap().revision, 0);
        assert!(matches!(store.insert(of("mallory", "m3")).await, Err(TaskStoreError::OverQuota(_))));
        store.insert(of("ana", "a1")).await.unwrap();
        store.insert(of("ana", "a2")).await.unwrap();
    }
}
