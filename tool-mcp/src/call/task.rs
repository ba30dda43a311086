//! Task runs ([`crate::tasks`]): creating a task, running its tool in the background (the run
//! outlives the request that created it), and `tasks/get`, `tasks/update` and `tasks/cancel`.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CancelTaskParams, CreateTaskResult, ErrorData, GetTaskParams, GetTaskResult, JsonObject, TaskStatus,
    UpdateTaskParams,
};
use rmcp::service::RequestContext;
use serde_json::Value;
use tool_runtime::talk::ClientCapabilities;
use tool_runtime::{ToolCall, ToolDefinition, ToolError};

use super::Ended;
use crate::content::call_result;
use crate::server::{CallRequest, McpServer, is_structured};
use crate::talk::McpChannel;
use crate::tasks::{
    MAX_TASK_ANSWER_BYTES, MAX_TASK_ANSWERS, TaskRecord, detailed, error_object, new_task_id, now_ms, store_error,
    task_of, unknown_task, update,
};

impl McpServer {
    /// Creates the task of a call: stores its record (with the answers known so far), starts it
    /// and gives the `CreateTaskResult`.
    pub(crate) async fn create_task(
        &self,
        tool: &str,
        arguments: String,
        principal: Option<String>,
        client: ClientCapabilities,
        answers: BTreeMap<String, Value>,
        http: Option<&::http::request::Parts>,
    ) -> Result<CreateTaskResult, ErrorData> {
        let tasks = &self.inner.tasks;
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
        let now = now_ms();
        let record = TaskRecord {
            id: new_task_id()?,
            revision: 0,
            tool: tool.to_owned(),
            arguments,
            principal,
            client: client.into(),
            status: TaskStatus::Working,
            answers,
            input_requests: BTreeMap::new(),
            result: None,
            error: None,
            created_at_ms: now,
            updated_at_ms: now,
            ttl_ms: u64::try_from(tasks.ttl.as_millis()).unwrap_or(u64::MAX),
        };
        tasks.reserve(&record.id, record.principal.as_deref())?;
        if let Err(error) = tasks.store.insert(record.clone()).await {
            tasks.release(&record.id);
            return Err(store_error(&error));
        }
        tracing::debug!(task = %record.id, tool, "task created");
        self.start_task(&record, http).await?;
        Ok(CreateTaskResult::new(task_of(&record)))
    }

    /// [`run_task`](Self::run_task), and a record that cannot start (the context hook refused)
    /// marked `failed` with the error, which is also returned.
    async fn start_task(&self, record: &TaskRecord, http: Option<&::http::request::Parts>) -> Result<(), ErrorData> {
        let Err(error) = self.run_task(record, http) else { return Ok(()) };
        self.inner.tasks.release(&record.id);
        let object = error_object(&error);
        let marked = update(self.inner.tasks.store.as_ref(), &record.id, |record| {
            record.status = TaskStatus::Failed;
            record.error = Some(object.clone());
            true
        })
        .await;
        if let Err(store) = marked {
            tracing::warn!(task = %record.id, %store, "cannot mark a task that did not start as failed");
        }
        Err(error)
    }

    /// Runs `record`'s tool in the background from the start, with the answers it holds.
    fn run_task(&self, record: &TaskRecord, http: Option<&::http::request::Parts>) -> Result<(), ErrorData> {
        let inner = &self.inner;
        let served = self.served();
        let channel = Arc::new(McpChannel::for_task(record.client.into(), record.answers.clone()));
        let prepared = self.prepare(&record.tool, http, channel, None)?;
        let call = ToolCall::new(prepared.call_id.clone(), record.tool.clone(), record.arguments.clone());
        let id = record.id.clone();
        let lifetime =
            Duration::from_millis(record.created_at_ms.saturating_add(record.ttl_ms).saturating_sub(now_ms()));
        let principal = record.principal.clone();
        inner
            .tasks
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), (prepared.token.clone(), principal));
        let server = self.clone();
        let span = crate::telemetry::task_span(&record.tool);
        inner.calls.spawn(tracing::Instrument::instrument(
            async move {
                let listed = |d: &ToolDefinition| !served.hidden.contains(&d.name);
                let work = served.registry.call_with_search_where(&call, &prepared.ctx, &listed);
                // A run ends with its record (its time to live): nobody could see or cancel it after.
                let ran = prepared.run(&server, work, prepared.token.cancelled(), Some(lifetime)).await;
                prepared.finish(&ran).await;
                prepared.token.cancel();
                let channel = prepared.channel.clone();
                drop(prepared);
                let tasks = &server.inner.tasks;
                tasks.release(&id);
                let structured = is_structured(&served, &call.name);
                let outcome = match ran {
                    Ended::Done(message) => {
                        let panicked =
                            ToolError::Panicked { tool: call.name.clone(), message: String::new() }.to_string();
                        let error = match channel.refusal() {
                            Some(refusal) if message.is_error => Some(refusal),
                            _ if message.is_error && message.text().starts_with(&panicked) => {
                                Some(ErrorData::internal_error(message.text().into_owned(), None))
                            }
                            _ => None,
                        };
                        match error {
                            Some(error) => Outcome::Failed(error_object(&error)),
                            None => match serde_json::to_value(call_result(&message, structured)) {
                                Ok(Value::Object(result)) => Outcome::Completed(result),
                                _ => Outcome::Failed(error_object(&ErrorData::internal_error(
                                    "the tool's result could not be written as JSON",
                                    None,
                                ))),
                            },
                        }
                    }
                    Ended::Asked => Outcome::Asked(channel.used_answers(), channel.pending_requests()),
                    Ended::Expired => {
                        tracing::debug!(task = %id, "the task's time to live is over: its run is stopped");
                        return;
                    }
                    Ended::Cancelled => Outcome::Failed(error_object(&ErrorData::internal_error(
                        "the server stopped before the task finished; call the tool again",
                        None,
                    ))),
                };
                let written = update(tasks.store.as_ref(), &id, |record| {
                    if record.status.is_terminal() {
                        return false;
                    }
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
                    Ok(Some(record)) => tracing::debug!(task = %id, status = ?record.status, "task changed"),
                    Ok(None) => tracing::debug!(task = %id, "task already ended or gone; its run's outcome is dropped"),
                    Err(error) => tracing::warn!(task = %id, %error, "cannot write the outcome of a task"),
                }
            },
            span,
        ));
        Ok(())
    }

    /// The record of `id` when the request's caller may see it.
    async fn visible_task(&self, id: &str, context: &RequestContext<RoleServer>) -> Result<TaskRecord, ErrorData> {
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
        Ok(GetTaskResult::new(detailed(&record)?))
    }

    pub(crate) async fn update_task_answers(
        &self,
        params: UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let id = params.task_id;
        self.visible_task(&id, context).await?;
        let given = params.input_responses;
        let store = self.inner.tasks.store.as_ref();
        let written = update(store, &id, |record| {
            if record.status != TaskStatus::InputRequired {
                return false;
            }
            let mut changed = false;
            for (key, answer) in &given {
                if record.input_requests.remove(key).is_some() {
                    record.answers.insert(key.clone(), answer.clone());
                    changed = true;
                }
            }
            if record.input_requests.is_empty() {
                record.status = TaskStatus::Working;
            }
            changed
        })
        .await
        .map_err(|error| store_error(&error))?;
        if let Some(record) = written
            && record.status == TaskStatus::Working
        {
            self.start_task(&record, context.extensions.get::<::http::request::Parts>()).await?;
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
        update(self.inner.tasks.store.as_ref(), &id, |record| {
            if record.status.is_terminal() {
                return false;
            }
            record.status = TaskStatus::Cancelled;
            record.input_requests.clear();
            true
        })
        .await
        .map_err(|error| store_error(&error))?;
        let token = self.inner.tasks.release(&id);
        if let Some(token) = token {
            token.cancel();
        }
        tracing::debug!(task = %id, "task cancelled");
        Ok(())
    }
}

/// What a run wrote to its record.
enum Outcome {
    Completed(JsonObject),
    Failed(JsonObject),
    Asked(BTreeMap<String, Value>, BTreeMap<String, Value>),
}
