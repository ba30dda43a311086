//! The MCP tasks of `toolbox mcp` in the store of `--store`: each task record is a session record
//! (`task/<id>`) of the session store the todo plans use, so that with `--store redis://..` every
//! worker behind a load balancer reads and advances the same tasks, and a task outlives the
//! request and the process that made it. The record's own principal decides who sees it
//! (`tool_mcp::tasks`); the session store's time to live and size cap bound the records, and a
//! record past its `ttlMs` reads as gone.

use std::sync::Arc;

use tool_mcp::tasks::{TaskRecord, TaskStore, TaskStoreError};
use tool_runtime::BoxFuture;
use tool_std::session::{SessionError, SessionStore, modify};

/// The key of the record within its session meta.
const RECORD: &str = "task";

/// A [`TaskStore`] over a [`SessionStore`].
#[derive(Debug)]
pub(crate) struct SessionTaskStore {
    sessions: Arc<dyn SessionStore>,
}

impl SessionTaskStore {
    pub(crate) fn new(sessions: Arc<dyn SessionStore>) -> Self {
        Self { sessions }
    }
}

fn id_of(task: &str) -> String {
    format!("task/{task}")
}

fn failed(error: &SessionError) -> TaskStoreError {
    TaskStoreError(format!("the task store failed: {error}"))
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
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| TaskStoreError("the task store's work was stopped before it finished; try again".to_owned()))?
}

impl TaskStore for SessionTaskStore {
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        let sessions = self.sessions.clone();
        Box::pin(blocking(move || {
            let value = serde_json::to_value(&record).map_err(|e| TaskStoreError(format!("a task record: {e}")))?;
            modify(&*sessions, &id_of(&record.id), None, |meta| {
                meta.insert(RECORD.to_owned(), value.clone());
                Ok::<_, ()>(())
            })
            .map_err(|e| failed(&e))?
            .map_err(|()| TaskStoreError("the task record was not saved".to_owned()))
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
        let sessions = self.sessions.clone();
        Box::pin(blocking(move || {
            let value = serde_json::to_value(&record).map_err(|e| TaskStoreError(format!("a task record: {e}")))?;
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
            .map_err(|e| failed(&e))?;
            Ok(outcome.is_ok())
        }))
    }
}
