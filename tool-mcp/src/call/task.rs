//! Task runs ([`crate::tasks`]): creating a task, running its tool in the background (the run
//! outlives the request that created it), and `tasks/get`, `tasks/update` and `tasks/cancel`.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CancelTaskParams, CreateTaskResult, ErrorData, GetTaskParams, GetTaskResult, JsonObject, ServerNotification,
    TaskStatus, TaskStatusNotification, TaskStatusNotificationParams, UpdateTaskParams,
};
use rmcp::service::{Peer, RequestContext};
use serde_json::Value;
use tokio::sync::mpsc;
use tool_runtime::{Progress, ToolCall, ToolDefinition, ToolErrorKind};

use super::Ended;
use crate::content::call_result;
use crate::runner::Delivery;
use crate::server::{CallRequest, McpServer, is_structured};
use crate::talk::{MAX_STATUS_CHARS, McpChannel};
use crate::tasks::{
    LoggedTaskId, MAX_TASK_ANSWER_BYTES, MAX_TASK_ANSWERS, STATUS_PERIOD, SWEEP_BATCH, TaskProgress, TaskRecord,
    TaskStoreError, Tasks, WATCH_PERIOD, asks_for, back_off, detailed, error_object, iso8601, new_task_id, store_error,
    take_answers, task_of, unknown_task, update,
};

/// How many times a `tasks/update` tries to take the place of a task's rerun on this server
/// while another update of the task holds it, a [`back_off`] apart: 24, about 1.2 s of waiting
/// at most, past what one update's write takes ([`update`], about 190 ms of back-off at most).
const RESUME_ATTEMPTS: u32 = 24;

impl McpServer {
    /// Creates the task of a call: stores its record (with what the client of `channel` can
    /// answer, the answers known so far and this worker's lease), starts it and gives the
    /// `CreateTaskResult`. `listener` is the client's connection, told the task's status
    /// ([`notify_status`]). `approval_token` is the call's approval token
    /// ([`APPROVAL_TOKEN_META`](crate::APPROVAL_TOKEN_META)), carried into the task's first run
    /// only (see [`run_task`](Self::run_task)); a task with one is not queued but runs here.
    #[allow(clippy::too_many_arguments, reason = "each is one part of the creating request, read once")]
    pub(crate) async fn create_task(
        &self,
        tool: &str,
        arguments: String,
        principal: Option<String>,
        channel: &McpChannel,
        http: Option<&::http::request::Parts>,
        listener: Option<Peer<RoleServer>>,
        approval_token: Option<String>,
    ) -> Result<CreateTaskResult, ErrorData> {
        self.start_sweep();
        let tasks = &self.inner.tasks;
        let client = tool_runtime::talk::ClientChannel::capabilities(channel);
        let answers = channel.known_answers();
        let bytes = serde_json::to_vec(&answers).map_or(usize::MAX, |json| json.len());
        if answers.len() > MAX_TASK_ANSWERS || bytes > MAX_TASK_ANSWER_BYTES {
            return Err(ErrorData::invalid_params(
                format!(
                    "a task keeps at most {MAX_TASK_ANSWERS} answers of {MAX_TASK_ANSWER_BYTES} bytes in all; this call \
                     brings {} of {bytes} bytes: send only the answers to the input requests asked",
                    answers.len()
                ),
                None,
            ));
        }
        let ttl_ms = u64::try_from(tasks.ttl.as_millis()).unwrap_or(u64::MAX);
        let served = self.served();
        let key = self.inner.task_key.as_ref();
        let sealed =
            crate::sealed::seal_arguments(&arguments, served.registry.definition(tool).map(|d| &d.input_schema), key);
        // Secrets sealed under this process's own key open only here: such a task runs here. So
        // does a task with an approval token, which is never stored.
        let queued = self.inner.runner.queues() && approval_token.is_none() && (sealed == arguments || key.is_some());
        let record = TaskRecord {
            client: client.into(),
            answers,
            lease: (!queued).then(|| tasks.new_lease()),
            ..TaskRecord::new(new_task_id()?, tool, sealed, principal, tasks.now_ms(), ttl_ms)
        };
        if queued {
            return self.queue_task(record).await;
        }
        tasks.reserve(&record.id, record.principal.as_deref())?;
        if let Err(error) = tasks.store.insert(record.clone()).await {
            tasks.release(&record.id);
            return Err(store_error(&error));
        }
        tracing::debug!(task = %LoggedTaskId(&record.id), tool, "task created");
        self.start_task(&record, RunFrom { http, listener, approval_token, ..RunFrom::default() }).await?;
        Ok(CreateTaskResult::new(task_of(&record)))
    }

    /// Stores `record` (`working`, no lease) and queues it on the [task runner](crate::runner),
    /// for whichever worker takes it; a task that cannot be queued is marked `failed` with the
    /// runner's error, which is also returned (-32603).
    async fn queue_task(&self, record: TaskRecord) -> Result<CreateTaskResult, ErrorData> {
        let tasks = &self.inner.tasks;
        tasks.store.insert(record.clone()).await.map_err(|error| store_error(&error))?;
        if let Err(error) = self.inner.runner.submit(&record.id).await {
            let error = store_error(&error);
            self.mark_failed(&record.id, &error).await;
            return Err(error);
        }
        tracing::debug!(task = %LoggedTaskId(&record.id), tool = %record.tool, "task created and queued");
        Ok(CreateTaskResult::new(task_of(&record)))
    }

    /// Marks the record of `id` `failed` with `error` unless it ended already (a failure to
    /// write it is logged).
    async fn mark_failed(&self, id: &str, error: &ErrorData) {
        let object = error_object(error);
        let tasks = &self.inner.tasks;
        let marked = update(tasks.store.as_ref(), tasks.clock.as_ref(), id, |record| {
            if record.status.is_terminal() {
                return false;
            }
            record.status = TaskStatus::Failed;
            record.error = Some(object.clone());
            record.lease = None;
            true
        })
        .await;
        if let Err(store) = marked {
            tracing::warn!(task = %LoggedTaskId(id), %store, "cannot mark a task that did not start as failed");
        }
    }

    /// [`run_task`](Self::run_task) of a task whose place is reserved
    /// ([`Tasks::reserve`](crate::tasks::Tasks)), and a record that cannot start (the context
    /// hook refused) marked `failed` with the error, which is also returned.
    async fn start_task(&self, record: &TaskRecord, from: RunFrom<'_>) -> Result<(), ErrorData> {
        let delivery = from.delivery.clone();
        let Err(error) = self.run_task(record, from) else { return Ok(()) };
        self.inner.tasks.release(&record.id);
        self.mark_failed(&record.id, &error).await;
        if let Some(delivery) = &delivery {
            self.settle_delivery(delivery).await;
        }
        Err(error)
    }

    /// Runs `record`'s tool in the background from the start, with the answers it holds, unless
    /// its reserved place was given back (a `tasks/cancel` came first). The run first takes the
    /// task's lease in the store (only of a `working` record: a cancel written before is seen),
    /// renews it and watches the record while the tool runs (see [`watch`]), and writes its
    /// outcome only while it still holds the lease. A run of a delivery ([`RunFrom`]) holds its
    /// entry in the queue while it goes on ([`hold`]) and settles it once the task no longer needs
    /// a worker (it ran, was cancelled, or is another's); a run stopped for want of its lease
    /// leaves it, for the worker that settles the task.
    fn run_task(&self, record: &TaskRecord, from: RunFrom<'_>) -> Result<(), ErrorData> {
        let RunFrom { http, listener, delivery, approval_token } = from;
        let inner = &self.inner;
        let served = self.served();
        let schema = served.registry.definition(&record.tool).map(|d| &d.input_schema);
        let arguments = crate::sealed::open_arguments(&record.tool, &record.arguments, schema, inner.task_key.as_ref())
            .map_err(|message| ErrorData::invalid_params(message, None))?;
        let channel = Arc::new(McpChannel::for_task(record.client.into(), record.answers.clone()));
        let (progress, reports) = mpsc::unbounded_channel();
        let prepared = self.prepare(&record.tool, http, channel, Some(progress), record.principal.as_deref(), None)?;
        let call =
            ToolCall { approval_token, ..ToolCall::new(prepared.call_id.clone(), record.tool.clone(), arguments) };
        let id = record.id.clone();
        let lifetime = Duration::from_millis(
            record.created_at_ms.saturating_add(record.ttl_ms).saturating_sub(inner.tasks.now_ms()),
        );
        {
            let mut running = inner.tasks.running.lock().unwrap_or_else(PoisonError::into_inner);
            match running.get_mut(&id) {
                Some((token, _)) if !token.is_cancelled() => *token = prepared.token.clone(),
                _ => {
                    tracing::debug!(task = %LoggedTaskId(&id), "task cancelled before its run started");
                    return Ok(());
                }
            }
        }
        let server = self.clone();
        let span = crate::telemetry::task_span(&record.tool);
        inner.calls.spawn(tracing::Instrument::instrument(
            async move {
                let tasks = &server.inner.tasks;
                let Some(held_until) = claim(tasks, &id).await else {
                    tasks.release(&id);
                    tracing::debug!(task = %LoggedTaskId(&id), "task no longer working (cancelled) or run elsewhere: not started");
                    if let Some(delivery) = &delivery {
                        server.settle_delivery(delivery).await;
                    }
                    return;
                };
                tracing::debug!(task = %LoggedTaskId(&id), tool = %call.name, "task running here");
                let listed = |d: &ToolDefinition| !served.hidden.contains(&d.name);
                let work = served.registry.call_with_search_where(&call, &prepared.ctx, &listed);
                let fenced = std::sync::atomic::AtomicBool::new(false);
                let stop = async {
                    tokio::select! {
                        () = prepared.token.cancelled() => {}
                        stopped = watch(tasks, &id, held_until) => {
                            fenced.store(stopped == Watched::Fenced, std::sync::atomic::Ordering::Release);
                            // The tool sees its token fire and may end on its own before it is dropped.
                            prepared.token.cancel();
                            tokio::task::yield_now().await;
                        }
                        () = report(tasks, &id, reports, &prepared.channel) => {}
                        () = hold(&server, delivery.as_ref()) => {}
                    }
                };
                // A run ends with its record (its time to live): nobody could see or cancel it after.
                let ran = prepared.run(&server, work, stop, Some(lifetime)).await;
                prepared.finish(&ran).await;
                prepared.token.cancel();
                let channel = prepared.channel.clone();
                drop(prepared);
                tasks.release(&id);
                if fenced.load(std::sync::atomic::Ordering::Acquire) {
                    // Its lease may be another worker's by now: the sweep or a read settles the task.
                    tracing::debug!(task = %LoggedTaskId(&id), "a run stopped for want of its lease writes no outcome");
                    return;
                }
                if let Some(delivery) = &delivery {
                    // The record says the rest: the queue's entry is no longer needed.
                    server.settle_delivery(delivery).await;
                }
                let structured = is_structured(&served, &call.name);
                let outcome = match ran {
                    Ended::Done(message) => {
                        let error = match channel.refusal() {
                            Some(refusal) if message.is_error => Some(refusal),
                            _ if message.error_kind == Some(ToolErrorKind::Panicked) => {
                                Some(ErrorData::internal_error(message.text().into_owned(), None))
                            }
                            _ => None,
                        };
                        match error {
                            Some(error) => Outcome::Failed(error_object(&error)),
                            None => match serde_json::to_value(call_result(&message, structured)) {
                                Ok(Value::Object(mut result)) => {
                                    // A task store holds no usable approval token.
                                    crate::sealed::seal_approval_token(&mut result, server.inner.task_key.as_ref());
                                    Outcome::Completed(result)
                                }
                                _ => Outcome::Failed(error_object(&ErrorData::internal_error(
                                    "the tool's result could not be written as JSON",
                                    None,
                                ))),
                            },
                        }
                    }
                    Ended::Asked => Outcome::Asked(channel.used_answers(), channel.pending_requests()),
                    Ended::Expired => {
                        tracing::debug!(task = %LoggedTaskId(&id), "the task's time to live is over: its run is stopped");
                        return;
                    }
                    Ended::Cancelled => Outcome::Failed(error_object(&ErrorData::internal_error(
                        "the server stopped before the task finished; call the tool again",
                        None,
                    ))),
                };
                let written = write_outcome(tasks, &id, outcome).await;
                if let (Some(record), Some(listener)) = (written, listener) {
                    notify_status(&listener, &record, server.inner.task_key.as_ref()).await;
                }
            },
            span,
        ));
        Ok(())
    }

    /// A `working` record whose lease lapsed has no live runner (its worker was killed, frozen,
    /// cut off, or restarted): a retry-safe tool ([`Tasks::retry_safe`]) is run again from the start
    /// by this worker (unless its runner queues tasks and this worker takes none: then a worker
    /// that takes tasks does, at its sweep), any other ends `failed` saying so ([`crate::tasks`]).
    /// Gives the record as it is after.
    /// `delivery` is the queue's entry of the task, when a [runner](crate::runner) delivered it.
    async fn settle_lapsed(&self, record: TaskRecord, delivery: Option<Delivery>) -> Result<TaskRecord, ErrorData> {
        let tasks = &self.inner.tasks;
        let now = tasks.now_ms();
        let lapsed =
            |r: &TaskRecord| r.status == TaskStatus::Working && r.lease.as_ref().is_some_and(|l| l.until_ms <= now);
        if !lapsed(&record) {
            return Ok(record);
        }
        let again = self.served().registry.definition(&record.tool).is_some_and(|d| tasks.retry_safe(d));
        if tasks.runs_here(&record.id) {
            // Its run is in this process, only late to renew: its watch renews the lease.
            return Ok(record);
        }
        let runner = &self.inner.runner;
        if again && runner.queues() && !runner.takes() {
            // A worker that takes no task runs none again either: the sweep of one that does.
            return Ok(record);
        }
        if again {
            if tasks.reserve(&record.id, record.principal.as_deref()).is_err() {
                // No place to run it here now: a later read (here or elsewhere) takes it.
                return Ok(record);
            }
            let lease = tasks.new_lease();
            let taken = update(tasks.store.as_ref(), tasks.clock.as_ref(), &record.id, |r| {
                lapsed(r).then(|| r.lease = Some(lease.clone())).is_some()
            })
            .await
            .map_err(|error| store_error(&error));
            match taken {
                Ok(Some(taken)) => {
                    tracing::info!(task = %LoggedTaskId(&taken.id), tool = %taken.tool, "task's runner lapsed: running it again");
                    self.start_task(&taken, RunFrom { delivery, ..RunFrom::default() }).await?;
                    return Ok(taken);
                }
                Ok(None) => tasks.release(&record.id),
                Err(error) => {
                    tasks.release(&record.id);
                    return Err(error);
                }
            };
        } else {
            let until = record.lease.as_ref().map_or(0, |l| l.until_ms);
            let error = error_object(&ErrorData::internal_error(
                format!(
                    "the worker running this task stopped before it finished (its lease lapsed at {}); the call may \
                     have had effects, so it was not run again: check what it changed, then call the tool again",
                    iso8601(until)
                ),
                None,
            ));
            let failed = update(tasks.store.as_ref(), tasks.clock.as_ref(), &record.id, |r| {
                if !lapsed(r) {
                    return false;
                }
                r.status = TaskStatus::Failed;
                r.error = Some(error.clone());
                r.lease = None;
                true
            })
            .await
            .map_err(|error| store_error(&error))?;
            if let Some(failed) = failed {
                tracing::info!(task = %LoggedTaskId(&failed.id), tool = %failed.tool, "task's runner lapsed: failed");
                return Ok(failed);
            }
        }
        // Another writer changed it first: what it is now.
        self.inner
            .tasks
            .store
            .get(&record.id)
            .await
            .map_err(|error| store_error(&error))?
            .ok_or_else(|| unknown_task(&record.id))
    }

    /// Starts this server's lease sweep once, when a tokio runtime runs (at build, else at the
    /// first task request): every half lease (jittered by up to a quarter either way, so that
    /// workers started together do not sweep together) it reads the store's `working` records
    /// ([`TaskStore::working`](crate::tasks::TaskStore::working), at most [`SWEEP_BATCH`]) and
    /// settles those whose lease lapsed ([`settle_lapsed`](Self::settle_lapsed)), so that a task
    /// of a stopped worker is run again or failed within about a lease and a half even when no
    /// client reads it. With a [runner](crate::runner) that queues and takes tasks, it also
    /// starts the consumer ([`consume`](Self::consume)), and each round reclaims the queue's
    /// entries idle for a lease. It stops with the server (the end of a shutdown's grace period).
    pub(crate) fn start_sweep(&self) {
        let tasks = &self.inner.tasks;
        if tokio::runtime::Handle::try_current().is_err()
            || tasks.sweeping.swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return;
        }
        if self.inner.runner.queues() && self.inner.runner.takes() {
            tokio::spawn(self.clone().consume());
        }
        let server = self.clone();
        tokio::spawn(async move {
            let stop = server.inner.stop.clone();
            loop {
                let mut byte = [0u8; 1];
                let _ = getrandom::fill(&mut byte);
                // 0.75 to 1.25 of half the lease.
                let period = server.inner.tasks.lease / 2 * (96 + u32::from(byte[0] / 4)) / 128;
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(period) => {}
                }
                server.sweep_once().await;
            }
        });
    }

    /// Takes the tasks the [runner](crate::runner) delivers to this worker, [`TAKE_BATCH`] at
    /// a time, until a shutdown begins; a queue that cannot be read is asked again a second
    /// later.
    async fn consume(self) {
        let stop = self.inner.stop.clone();
        let worker = self.inner.tasks.worker.clone();
        loop {
            if self.inner.calls.is_closed() {
                // A shutdown began: the tasks still queued are for the other workers.
                return;
            }
            let next = tokio::select! {
                () = stop.cancelled() => return,
                next = self.inner.runner.next(&worker, TAKE_BATCH) => next,
            };
            match next {
                Ok(deliveries) => {
                    for delivery in deliveries {
                        self.take(delivery).await;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot read the task queue; trying again in a second");
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                }
            }
        }
    }

    /// Acts on a task the runner delivered (new, or reclaimed from a worker idle for a lease),
    /// after reading its record: a task gone, ended, cancelled or waiting for input is settled
    /// and never started; one without a lease (never started) is run here when this worker has
    /// a place for its principal (else its entry waits to be reclaimed, here or elsewhere); one
    /// whose lease lapsed is settled as [`settle_lapsed`](Self::settle_lapsed) says (run again
    /// here, or failed); one another worker holds is left to it (its entry stays, and is
    /// reclaimed again once idle). A record that cannot be read leaves the entry for later, as
    /// does a shutdown that began (another worker reclaims it after a lease).
    async fn take(&self, delivery: Delivery) {
        let tasks = &self.inner.tasks;
        if tasks.runs_here(&delivery.task) || self.inner.calls.is_closed() {
            // Its run here settles it; or a shutdown began, and another worker reclaims it.
            return;
        }
        let record = match tasks.store.get(&delivery.task).await {
            Ok(record) => record,
            Err(error) => {
                tracing::warn!(task = %LoggedTaskId(&delivery.task), %error, "cannot read a queued task's record; it is taken later");
                return;
            }
        };
        let Some(record) = record.filter(|r| r.status == TaskStatus::Working) else {
            tracing::debug!(task = %LoggedTaskId(&delivery.task), "queued task gone, ended or cancelled: not started");
            self.settle_delivery(&delivery).await;
            return;
        };
        match &record.lease {
            None => {
                if tasks.reserve(&record.id, record.principal.as_deref()).is_err() {
                    tracing::debug!(task = %LoggedTaskId(&record.id), "no place to run a queued task here now; it is reclaimed later");
                    return;
                }
                // A failure to start is written to the record and settles the entry.
                let _ = self.start_task(&record, RunFrom { delivery: Some(delivery), ..RunFrom::default() }).await;
            }
            Some(lease) if lease.until_ms > tasks.now_ms() => {}
            Some(_) => match self.settle_lapsed(record, Some(delivery.clone())).await {
                Ok(settled) if settled.status != TaskStatus::Working => self.settle_delivery(&delivery).await,
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(task = %LoggedTaskId(&delivery.task), message = %error.message, "cannot settle a reclaimed task");
                }
            },
        }
    }

    /// Takes `delivery` out of the runner's queue (a failure is logged: a later reclaim settles
    /// it again).
    async fn settle_delivery(&self, delivery: &Delivery) {
        if let Err(error) = self.inner.runner.settle(delivery).await {
            tracing::warn!(task = %LoggedTaskId(&delivery.task), %error, "cannot take a task out of the queue; a reclaim does later");
        }
    }

    /// One round of the lease sweep (see [`start_sweep`](Self::start_sweep)): the store's
    /// `working` records, then, with a runner that queues and takes tasks, the queue's entries
    /// idle for a lease ([`TaskRunner::reclaim`](crate::runner::TaskRunner::reclaim)) and the
    /// records queued a lease ago that no worker took (their entry was never added: the worker
    /// that created them stopped in between), which run here.
    async fn sweep_once(&self) {
        let tasks = &self.inner.tasks;
        let runner = &self.inner.runner;
        if runner.queues() && runner.takes() {
            match runner.reclaim(&tasks.worker, tasks.lease, SWEEP_BATCH).await {
                Ok(deliveries) => {
                    for delivery in deliveries {
                        tracing::debug!(task = %LoggedTaskId(&delivery.task), "task reclaimed from an idle worker");
                        self.take(delivery).await;
                    }
                }
                Err(error) => tracing::warn!(%error, "the task sweep cannot reclaim idle tasks; trying again"),
            }
        }
        let ids = match tasks.store.working(SWEEP_BATCH).await {
            Ok(ids) => ids,
            Err(error) => {
                tracing::warn!(%error, "the task lease sweep cannot list working tasks; trying again");
                return;
            }
        };
        for id in ids {
            if tasks.runs_here(&id) {
                continue;
            }
            let Ok(Some(record)) = tasks.store.get(&id).await else { continue };
            let lease_ms = u64::try_from(tasks.lease.as_millis()).unwrap_or(u64::MAX);
            let untaken = record.lease.is_none() && record.updated_at_ms.saturating_add(lease_ms) <= tasks.now_ms();
            if untaken && runner.queues() && runner.takes() && record.status == TaskStatus::Working {
                if tasks.reserve(&record.id, record.principal.as_deref()).is_ok() {
                    tracing::info!(task = %LoggedTaskId(&record.id), "a queued task no worker took: running it here");
                    let _ = self.start_task(&record, RunFrom::default()).await;
                }
                continue;
            }
            if let Err(error) = self.settle_lapsed(record, None).await {
                tracing::warn!(task = %LoggedTaskId(&id), message = %error.message, "the task lease sweep cannot settle a task");
            }
        }
    }

    /// The record of `id` when the request's caller may see it.
    async fn visible_task(&self, id: &str, context: &RequestContext<RoleServer>) -> Result<TaskRecord, ErrorData> {
        self.start_sweep();
        let record = self.inner.tasks.store.get(id).await.map_err(|error| store_error(&error))?;
        let Some(record) = record else { return Err(unknown_task(id)) };
        let http = context.extensions.get::<::http::request::Parts>();
        let principal = self
            .call_context(&CallRequest { tool: &record.tool, call_id: &record.id, http })
            .map_err(|message| ErrorData::invalid_request(message, None))?
            .build()
            .principal()
            .map(str::to_owned);
        if principal != record.principal {
            return Err(unknown_task(id));
        }
        // A token whose scopes do not reach the task's tool sees no task of it (feature `auth`).
        #[cfg(feature = "auth")]
        let who = crate::server::caller(http);
        #[cfg(not(feature = "auth"))]
        let who: Option<&()> = None;
        if let Some(definition) = self.served().registry.definition(&record.tool)
            && !self.reaches(who, definition)
        {
            return Err(unknown_task(id));
        }
        Ok(record)
    }

    pub(crate) async fn get_task_state(
        &self,
        params: GetTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let record = self.visible_task(&params.task_id, context).await?;
        let record = self.settle_lapsed(record, None).await?;
        Ok(GetTaskResult::new(detailed(&record, self.inner.task_key.as_ref())?))
    }

    /// `tasks/update`: merges the answers given into the task's record and, once no input
    /// request is pending, starts its rerun here ([`crate::tasks`]).
    ///
    /// An update is idempotent: it answers `complete` without writing when the record no longer
    /// asks for any of its answers ([`take_answers`]): the task is not `input_required` (working,
    /// ended, or cancelled), or the same answers were merged already by another update, on this
    /// server or another one. So any number of concurrent updates with the same answers all
    /// answer `complete` and the task runs once. Concurrent updates on one server take turns on
    /// the task's place among the running tasks (the first holds it from before its write until
    /// its rerun ends, see [`Tasks::reserve`](crate::tasks::Tasks)): another waits a
    /// [`back_off`] and reads the record again, at most [`RESUME_ATTEMPTS`] times; updates on
    /// several servers meet at the store's compare and swap ([`update`]).
    ///
    /// # Errors
    /// -32602 for a task this caller cannot see; -32600 when the caller has no place left among
    /// its running tasks, or when another update of the task on this server still holds its
    /// place after every try (naming the task); -32603 when the store fails.
    pub(crate) async fn update_task_answers(
        &self,
        params: UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let id = params.task_id;
        let seen = self.visible_task(&id, context).await?;
        let mut seen = self.settle_lapsed(seen, None).await?;
        let given = params.input_responses;
        let tasks = &self.inner.tasks;
        // The place of the rerun is taken before the record says `working`, so that a
        // `tasks/cancel` between the two finds its token (and the rerun never starts).
        let mut attempt = 0;
        loop {
            if !asks_for(&seen, &given) {
                return Ok(());
            }
            if tasks.try_reserve(&id, seen.principal.as_deref())?.is_some() {
                break;
            }
            attempt += 1;
            if attempt >= RESUME_ATTEMPTS {
                return Err(ErrorData::invalid_request(
                    format!(
                        "task `{id}` is being resumed by another tasks/update on this server; read it with tasks/get \
                         and send the answers it still asks for again"
                    ),
                    None,
                ));
            }
            back_off(attempt).await;
            seen = tasks.store.get(&id).await.map_err(|error| store_error(&error))?.ok_or_else(|| unknown_task(&id))?;
        }
        let lease = tasks.new_lease();
        let written =
            update(tasks.store.as_ref(), tasks.clock.as_ref(), &id, |record| take_answers(record, &given, &lease))
                .await;
        match written {
            Ok(Some(record)) if record.status == TaskStatus::Working => {
                let http = context.extensions.get::<::http::request::Parts>();
                let listener = (!self.stateless_http(context)).then(|| context.peer.clone());
                self.start_task(&record, RunFrom { http, listener, ..RunFrom::default() }).await?;
            }
            Ok(_) => {
                tasks.release(&id);
            }
            Err(error) => {
                tasks.release(&id);
                return Err(store_error(&error));
            }
        }
        Ok(())
    }

    pub(crate) async fn cancel_task_run(
        &self,
        params: CancelTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let id = params.task_id;
        let record = self.visible_task(&id, context).await?;
        if record.status.is_terminal() {
            return Ok(());
        }
        let tasks = &self.inner.tasks;
        update(tasks.store.as_ref(), tasks.clock.as_ref(), &id, |record| {
            if record.status.is_terminal() {
                return false;
            }
            record.status = TaskStatus::Cancelled;
            record.input_requests.clear();
            record.lease = None;
            true
        })
        .await
        .map_err(|error| store_error(&error))?;
        // A run in this process stops now; one on another worker when its watch reads the record.
        if let Some(token) = tasks.release(&id) {
            token.cancel();
        }
        tracing::debug!(task = %LoggedTaskId(&id), "task cancelled");
        Ok(())
    }
}

/// Where a task run comes from, beyond its record: what [`McpServer::start_task`] and
/// [`McpServer::run_task`] take. The default is a run with none of it (a rerun after a lapsed
/// lease, or after input, on no connection).
#[derive(Default)]
struct RunFrom<'a> {
    /// The HTTP request that started the run, for the context hook.
    http: Option<&'a ::http::request::Parts>,
    /// The connection of the client that created or resumed the task, told its status
    /// ([`notify_status`]).
    listener: Option<Peer<RoleServer>>,
    /// The queue's entry of the task, when a [runner](crate::runner) delivered it.
    delivery: Option<Delivery>,
    /// The creating `tools/call`'s approval token
    /// ([`APPROVAL_TOKEN_META`](crate::APPROVAL_TOKEN_META)), carried into the first run of a
    /// task and never into its record: a token runs one call once, so a run started again (after
    /// input, or by another worker once a lease lapsed) has none.
    approval_token: Option<String>,
}

/// Takes the lease of `id` for this worker when the record is `working` and its lease is this
/// worker's, lapsed, or none; when it lapses unless renewed (ms since the Unix epoch).
async fn claim(tasks: &Tasks, id: &str) -> Option<u64> {
    let lease = tasks.new_lease();
    let now = tasks.now_ms();
    let taken = update(tasks.store.as_ref(), tasks.clock.as_ref(), id, |record| {
        let free = record.lease.as_ref().is_none_or(|l| l.worker == tasks.worker || l.until_ms <= now);
        if record.status != TaskStatus::Working || !free {
            return false;
        }
        record.lease = Some(lease.clone());
        true
    })
    .await;
    match taken {
        Ok(taken) => taken.map(|_| lease.until_ms),
        Err(error) => {
            tracing::warn!(task = %LoggedTaskId(id), %error, "cannot take the lease of a task; it is not run here");
            None
        }
    }
}

/// While the run of `id` goes on: reads its record every [`WATCH_PERIOD`] (or a third of the
/// lease, when shorter) and renews the lease once a third of it has passed; completes (to stop
/// the run) once the record is gone, no longer `working` (a `tasks/cancel` on any worker), or
/// leased to another worker, and once the lease it holds (`held_until`, ms since the Unix epoch)
/// is within a sixth of the lease of lapsing without a renewal (the store could not be reached in
/// time): another worker may take the task after that, and two runs must never overlap; such a
/// run writes no outcome ([`Watched::Fenced`]). A store call that does not answer within the
/// period is given up and tried again at the next.
async fn watch(tasks: &Tasks, id: &str, mut held_until: u64) -> Watched {
    let period = WATCH_PERIOD.min(tasks.lease / 3).max(Duration::from_millis(1));
    let lease_ms = u64::try_from(tasks.lease.as_millis()).unwrap_or(u64::MAX);
    loop {
        tokio::time::sleep(period).await;
        match tokio::time::timeout(period, tasks.store.get(id)).await {
            Ok(Ok(Some(record))) => {
                let mine = record.lease.as_ref().filter(|l| l.worker == tasks.worker);
                let Some(lease) = mine.filter(|_| record.status == TaskStatus::Working) else {
                    tracing::debug!(task = %LoggedTaskId(id), status = ?record.status, "task ended or taken elsewhere: stopping its run");
                    return Watched::Ended;
                };
                held_until = lease.until_ms;
                if tasks.now_ms() >= held_until.saturating_sub(lease_ms - lease_ms / 3) {
                    held_until = renew(tasks, id, period).await.unwrap_or(held_until);
                }
            }
            Ok(Ok(None)) => return Watched::Ended,
            Ok(Err(error)) => {
                tracing::warn!(task = %LoggedTaskId(id), %error, "cannot read a running task's record; trying again")
            }
            Err(_) => tracing::warn!(task = %LoggedTaskId(id), "the task store did not answer in time; trying again"),
        }
        if tasks.now_ms() >= held_until.saturating_sub(lease_ms / 6) {
            tracing::warn!(task = %LoggedTaskId(id), "a task's lease could not be renewed in time: its run is stopped");
            return Watched::Fenced;
        }
    }
}

/// How many queued tasks a worker takes at one read of the queue: 8.
const TAKE_BATCH: usize = 8;

/// While the run of `delivery`'s task goes on: tells the runner every third of the lease that
/// this worker still holds it, so that no other worker reclaims it. Never completes (at once
/// without a delivery).
async fn hold(server: &McpServer, delivery: Option<&Delivery>) {
    let Some(delivery) = delivery else { return std::future::pending().await };
    let tasks = &server.inner.tasks;
    let period = (tasks.lease / 3).max(Duration::from_millis(1));
    loop {
        tokio::time::sleep(period).await;
        if let Err(error) = server.inner.runner.hold(&tasks.worker, delivery).await {
            tracing::warn!(task = %LoggedTaskId(&delivery.task), %error, "cannot hold a running task's queue entry; trying again");
        }
    }
}

/// Why [`watch`] stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watched {
    /// The record is gone, ended (cancelled) or leased to another worker.
    Ended,
    /// Its lease was about to lapse without a renewal: the run writes no outcome.
    Fenced,
}

/// Renews this worker's lease of `id` (giving up after `period`); when the new one lapses.
async fn renew(tasks: &Tasks, id: &str, period: Duration) -> Option<u64> {
    let lease = tasks.new_lease();
    let renewing = update(tasks.store.as_ref(), tasks.clock.as_ref(), id, |record| {
        let mine = record.lease.as_ref().is_some_and(|l| l.worker == tasks.worker);
        (record.status == TaskStatus::Working && mine).then(|| record.lease = Some(lease.clone())).is_some()
    });
    match tokio::time::timeout(period, renewing).await {
        Ok(Ok(Some(_))) => Some(lease.until_ms),
        Ok(Ok(None)) => None,
        Ok(Err(error)) => {
            tracing::warn!(task = %LoggedTaskId(id), %error, "cannot renew a task's lease; trying again");
            None
        }
        Err(_) => {
            tracing::warn!(task = %LoggedTaskId(id), "the task store did not answer in time; trying again");
            None
        }
    }
}

/// Writes the outcome of this worker's run of `id`, while the record is `working` under its
/// lease (a cancelled task, or one another worker took, keeps what it has). An outcome over the
/// principal's quota ends the task `failed` with the quota's error instead.
async fn write_outcome(tasks: &Tasks, id: &str, outcome: Outcome) -> Option<TaskRecord> {
    let mut outcome = outcome;
    for _ in 0..2 {
        let written = update(tasks.store.as_ref(), tasks.clock.as_ref(), id, |record| {
            let mine = record.lease.as_ref().is_none_or(|l| l.worker == tasks.worker);
            if record.status != TaskStatus::Working || !mine {
                return false;
            }
            record.lease = None;
            match &outcome {
                Outcome::Completed(result) => {
                    record.status = TaskStatus::Completed;
                    record.result = Some(result.clone());
                }
                Outcome::Failed(error) => {
                    record.status = TaskStatus::Failed;
                    record.error = Some(error.clone());
                }
                Outcome::Asked(answers, requests) => {
                    record.status = TaskStatus::InputRequired;
                    record.answers.extend(answers.clone());
                    record.input_requests = requests.clone();
                }
            }
            true
        })
        .await;
        match written {
            Ok(Some(record)) => {
                tracing::debug!(task = %LoggedTaskId(id), status = ?record.status, "task changed");
                return Some(record);
            }
            Ok(None) => {
                tracing::debug!(task = %LoggedTaskId(id), "task already ended, gone or taken elsewhere; its run's outcome is dropped");
            }
            Err(error @ TaskStoreError::OverQuota(_)) if !matches!(outcome, Outcome::Failed(_)) => {
                outcome = Outcome::Failed(error_object(&store_error(&error)));
                continue;
            }
            Err(error) => tracing::warn!(task = %LoggedTaskId(id), %error, "cannot write the outcome of a task"),
        }
        return None;
    }
    None
}

/// How long [`notify_status`] waits for a connection to take a task status notification: 5 s.
const NOTIFY_BOUND: Duration = Duration::from_secs(5);

/// Sends `notifications/tasks` (the extension's task status notification: the task as
/// `tasks/get` gives it) of `record` to `listener`, the connection of the client that created
/// or resumed the task (stdio, a legacy session; a stateless HTTP request has none). A
/// connection that is gone, or does not take the notification within [`NOTIFY_BOUND`], drops
/// it: a run never waits on its client for longer (a shutdown waits for the run).
async fn notify_status(listener: &Peer<RoleServer>, record: &TaskRecord, key: Option<&crate::sealed::TaskKey>) {
    let Ok(task) = detailed(record, key) else { return };
    let notification = ServerNotification::TaskStatusNotification(TaskStatusNotification::new(
        TaskStatusNotificationParams::new(task),
    ));
    match tokio::time::timeout(NOTIFY_BOUND, listener.send_notification(notification)).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            tracing::debug!(task = %LoggedTaskId(&record.id), %error, "cannot send a task status notification; dropped")
        }
        Err(_) => {
            tracing::debug!(task = %LoggedTaskId(&record.id), "the client did not take a task status notification in time; dropped")
        }
    }
}

/// While the run of `id` goes on: every [`STATUS_PERIOD`], keeps the last progress report and
/// the last log message (or, without one, the last report's message) in the record as its
/// `progress` and `statusMessage`, when they changed. Never completes.
async fn report(tasks: &Tasks, id: &str, mut reports: mpsc::UnboundedReceiver<Progress>, channel: &McpChannel) {
    let mut shown: (Option<TaskProgress>, Option<String>) = (None, None);
    let mut open = true;
    loop {
        tokio::time::sleep(STATUS_PERIOD).await;
        let mut last = None;
        while open {
            match reports.try_recv() {
                Ok(report) => last = Some(report),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => open = false,
            }
        }
        let progress = last.as_ref().map(|p| TaskProgress { done: p.done, total: p.total }).or(shown.0.clone());
        let from_report =
            last.filter(|p| !p.message.is_empty()).map(|p| p.message.chars().take(MAX_STATUS_CHARS).collect());
        let message = channel.take_log().or(from_report).or(shown.1.clone());
        if (&progress, &message) == (&shown.0, &shown.1) {
            continue;
        }
        let written = update(tasks.store.as_ref(), tasks.clock.as_ref(), id, |record| {
            let mine = record.lease.as_ref().is_some_and(|l| l.worker == tasks.worker);
            if record.status != TaskStatus::Working || !mine {
                return false;
            }
            record.progress.clone_from(&progress);
            record.status_message.clone_from(&message);
            true
        })
        .await;
        match written {
            Ok(_) => shown = (progress, message),
            Err(error) => {
                tracing::debug!(task = %LoggedTaskId(id), %error, "cannot keep a task's progress; trying again")
            }
        }
    }
}

/// What a run wrote to its record.
enum Outcome {
    Completed(JsonObject),
    Failed(JsonObject),
    Asked(BTreeMap<String, Value>, BTreeMap<String, Value>),
}
