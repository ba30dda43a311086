//! The "todo" set: a plan the model keeps for itself, per session.
//!
//! | tool | does |
//! |---|---|
//! | [`todo_read()`] | shows the plan |
//! | [`todo_new()`] | replaces the plan with a new list |
//! | [`todo_append()`] | adds items at the end |
//! | [`todo_patch()`] | changes or removes items by id (omitted fields keep their values) |
//! | [`todo_clear()`] | empties the plan |
//!
//! Every tool but `todo_clear` returns the plan text of [`render_plan`]. Ids are [`slug`]s of the
//! given id or of the content, made unique within the plan with `-2`, `-3`. A priority outside
//! 1..=5 is refused at decode (the schema states the range). At most one item may be `in_progress`: a change that would make two is
//! refused with their ids named, and nothing is saved; the same holds for every other refusal
//! (a call either applies whole or not at all).
//!
//! # State
//! The plan lives in the meta of the call's session under `todos` (see [`crate::session`]): in
//! [`SESSION_STORE`](crate::session::SESSION_STORE) for a context with a session id, so a
//! resumed session id gets its plan back; in memory for the registry's lifetime for a context
//! without one. Emptying the plan removes the `todos` key. Each call is one atomic
//! read-modify-write of the session, so concurrent calls never lose an update. A session belongs
//! to the principal that made it: every todo tool refuses a session id of another principal
//! ([`SessionError::OtherPrincipal`]) and changes nothing. A plan not used for the store's time to
//! live (30 days by default) is gone: `todo_read` says so, and `todo_new` starts again.
//!
//! # Retries
//! A client that sees a change fail without knowing whether it was saved (its connection, the
//! server or the store went away mid-call) retries it. Every changing tool is applied at most
//! once per retry key: the `idempotency_key` argument of `todo_append` and `todo_patch` when given,
//! else the tool call id (`ToolContext::call_id`; the one the caller gave to `Registry::call`, or
//! `toolbox call --call-id`). The change is recorded under the key, with a digest of its arguments
//! and its answer, in the session's meta ([`APPLIED_KEY`]) in the same save as the change itself
//! (for Redis, the one compare-and-set script). A retry with the same key and arguments gets the
//! first answer and changes nothing; the same key with other arguments is refused
//! ([`TodoError::KeyReused`]). A session remembers its [`MAX_APPLIED`] most recent keyed changes
//! for [`APPLIED_TTL`], and the answers of the [`MAX_KEPT_ANSWERS`] most recent of them, each of
//! at most [`MAX_KEPT_ANSWER_BYTES`]; the retry of a change whose answer is not kept gets the plan
//! as it is, and a change forgotten is applied again. A replay saves nothing. `todo_new` and
//! `todo_clear`, whose repetition changes nothing more, are keyed by the call id alone (a retry
//! under a new call id applies them again, to the same effect unless the plan changed between).

mod item;
mod plan;
mod retry;
mod store;

use std::sync::Arc;

use tool_runtime::{ToolContext, tool};

pub use item::{DEFAULT_PRIORITY, MAX_SLUG_CHARS, NewTodo, TodoItem, TodoPatch, TodoStatus, slug};
pub use plan::{EMPTY_PLAN, render_plan};
pub use retry::{APPLIED_KEY, APPLIED_TTL, MAX_APPLIED, MAX_KEPT_ANSWER_BYTES, MAX_KEPT_ANSWERS, MAX_KEY_BYTES};
pub use store::{session_key, set_todos, todos_in};

use crate::session::{SessionError, session_store_for};
use item::UniqueIds;
use retry::RetryKey;
use tool_runtime::off_worker;

/// Why a todo tool refused a change; nothing was saved. The `Display` text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TodoError {
    /// `todos` (or `updates`) is empty.
    #[error("{field} must hold at least one item; nothing was saved")]
    NoItems {
        /// `todos` or `updates`.
        field: &'static str,
    },
    /// An item's content is empty or blank.
    #[error("{field} is empty; give each item the text of its task. Nothing was saved")]
    EmptyContent {
        /// The argument path, e.g. `todos[0].content`.
        field: String,
    },
    /// More than one item would be in_progress.
    #[error(
        "At most one item may be in_progress, got {}: {}. Nothing was saved; keep one in_progress and set the others \
         to pending or completed (one todo_patch may change several items)",
        .ids.len(),
        .ids.join(", ")
    )]
    SeveralInProgress {
        /// The ids (after slugging) of the items that would be in progress, in plan order.
        ids: Vec<String>,
    },
    /// `todo_patch` names an id the plan does not have.
    #[error(
        "Unknown todo id `{id}` in updates[{index}]; existing ids: {}. Nothing was saved; use one of these ids \
         (todo_read shows the plan)",
        if .existing.is_empty() { "none, the plan is empty".to_owned() } else { .existing.join(", ") }
    )]
    UnknownId {
        /// 0-based position in `updates`.
        index: usize,
        /// The id given.
        id: String,
        /// The ids of the plan at that point, in plan order.
        existing: Vec<String>,
    },
    /// The session holds a `todos` value that is not a todo list.
    #[error(
        "the saved todo list of this session is damaged ({message}); replace it with todo_new or remove it with \
         todo_clear"
    )]
    Damaged {
        /// What is wrong with it.
        message: String,
    },
    /// `idempotency_key` is blank or longer than [`MAX_KEY_BYTES`].
    #[error(
        "idempotency_key must be 1 to {MAX_KEY_BYTES} bytes of text, got {bytes} bytes; give a short key unique to \
         this change (the same key again on a retry). Nothing was saved"
    )]
    BadKey {
        /// The key's length in bytes.
        bytes: usize,
    },
    /// The retry key (the `idempotency_key`, else the tool call id) was already used in this
    /// session for a change of the same tool with other arguments.
    #[error(
        "the key `{key}` was already used for another {tool} call of this session, with other arguments. Nothing \
         was saved; give a new idempotency_key (or tool call id) for a new change, and the same one only to retry \
         the same change"
    )]
    KeyReused {
        /// The key.
        key: String,
        /// The tool.
        tool: &'static str,
    },
    /// The session could not be read or written.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The session store could not be reached (its creation failed, or the runtime shut down
    /// before the store was called).
    #[error("the todo list cannot be reached: {message}")]
    Store {
        /// The cause.
        message: String,
    },
}

/// Write this session's plan for a task of several steps, replacing the current one. At most one
/// item may be in_progress; a call that breaks a rule saves nothing.
#[tool(set = "todo", resource(todo_plan), tags(destructive, idempotent))]
pub async fn todo_new(
    /// The plan, in order.
    #[arg(length(min = 1))]
    todos: Vec<NewTodo>,
    ctx: &ToolContext,
) -> Result<String, TodoError> {
    if todos.is_empty() {
        return Err(TodoError::NoItems { field: "todos" });
    }
    let call_id = ctx.call_id().map(str::to_owned);
    // Digesting, checking and slugging thousands of items is CPU-bound: off the async worker.
    let (retry, items) = blocking(move || {
        let retry = RetryKey::of("todo_new", None, call_id.as_deref(), &todos)?;
        let items = new_items(todos, UniqueIds::default())?;
        check_in_progress(&items)?;
        Ok((retry, items))
    })
    .await?;
    edit_plan(
        ctx,
        move || Ok(retry),
        move |_old| {
            let text = render_plan(&items);
            Ok((items.clone(), text))
        },
    )
    .await
}

/// Add items to the end of this session's plan; at most one item may be in_progress.
#[tool(set = "todo", resource(todo_plan))]
pub async fn todo_append(
    /// The items to add, in order.
    #[arg(length(min = 1))]
    todos: Vec<NewTodo>,
    // No description in the schema: the name is the common term (see "Retries" above).
    idempotency_key: Option<String>,
    ctx: &ToolContext,
) -> Result<String, TodoError> {
    if todos.is_empty() {
        return Err(TodoError::NoItems { field: "todos" });
    }
    let todos = Arc::new(todos);
    let call_id = ctx.call_id().map(str::to_owned);
    let arguments = Arc::clone(&todos);
    let retry = move || RetryKey::of("todo_append", idempotency_key, call_id.as_deref(), &*arguments);
    edit_plan(ctx, retry, move |old| {
        let mut items = old?;
        let ids = UniqueIds::new(items.iter().map(|i| i.id.clone()));
        items.extend(new_items(Vec::clone(&todos), ids)?);
        check_in_progress(&items)?;
        let text = render_plan(&items);
        Ok((items, text))
    })
    .await
}

/// Change or remove items of this session's plan by id, all or nothing; omitted fields keep their
/// values. At most one item may be in_progress: complete the current one in the same call.
#[tool(set = "todo", resource(todo_plan), tags(destructive, idempotent))]
pub async fn todo_patch(
    /// The changes, in order.
    #[arg(length(min = 1))]
    updates: Vec<TodoPatch>,
    // No description in the schema: the name is the common term (see "Retries" above).
    idempotency_key: Option<String>,
    ctx: &ToolContext,
) -> Result<String, TodoError> {
    if updates.is_empty() {
        return Err(TodoError::NoItems { field: "updates" });
    }
    let updates = Arc::new(updates);
    let call_id = ctx.call_id().map(str::to_owned);
    let arguments = Arc::clone(&updates);
    let retry = move || RetryKey::of("todo_patch", idempotency_key, call_id.as_deref(), &*arguments);
    edit_plan(ctx, retry, move |old| {
        let mut items = old?;
        for (index, update) in updates.iter().cloned().enumerate() {
            apply_patch(&mut items, index, update)?;
        }
        check_in_progress(&items)?;
        let text = render_plan(&items);
        Ok((items, text))
    })
    .await
}

/// Remove every item of this session's plan.
#[tool(set = "todo", resource(todo_plan), tags(destructive, idempotent))]
pub async fn todo_clear(ctx: &ToolContext) -> Result<String, TodoError> {
    let call_id = ctx.call_id().map(str::to_owned);
    let retry = move || RetryKey::of("todo_clear", None, call_id.as_deref(), &());
    edit_plan(ctx, retry, |old| {
        let removed = old.map_or(0, |items| items.len());
        let noun = if removed == 1 { "item" } else { "items" };
        Ok((Vec::new(), format!("Cleared the plan ({removed} {noun} removed). Use todo_new to write a new one.")))
    })
    .await
}

/// Show this session's plan.
#[tool(set = "todo", tags(read_only))]
pub async fn todo_read(ctx: &ToolContext) -> Result<String, TodoError> {
    let session = session_store_for(ctx).await.map_err(|e| TodoError::Store { message: e.to_string() })?;
    // Rendering a plan of thousands of items is CPU-bound: off the async worker, with the read.
    blocking(move || Ok(render_plan(&todos_in(&session.load()?)?))).await
}

/// Turns the model's items into stored ones: content checked, priority defaulted, ids slugged and
/// made unique against the ids `ids` holds and each other, in one pass.
fn new_items(todos: Vec<NewTodo>, mut ids: UniqueIds) -> Result<Vec<TodoItem>, TodoError> {
    let mut items = Vec::with_capacity(todos.len());
    for (index, todo) in todos.into_iter().enumerate() {
        if todo.content.trim().is_empty() {
            return Err(TodoError::EmptyContent { field: format!("todos[{index}].content") });
        }
        let base = match todo.id.as_deref().filter(|id| !id.trim().is_empty()) {
            Some(id) => slug(id),
            None => slug(&todo.content),
        };
        let id = ids.id(base);
        items.push(TodoItem {
            id,
            content: todo.content,
            status: todo.status,
            priority: todo.priority.unwrap_or(DEFAULT_PRIORITY),
            notes: todo.notes.filter(|n| !n.is_empty()),
            active_form: todo.active_form.filter(|a| !a.is_empty()),
        });
    }
    Ok(items)
}

fn apply_patch(items: &mut Vec<TodoItem>, index: usize, update: TodoPatch) -> Result<(), TodoError> {
    let position = items
        .iter()
        .position(|i| i.id == update.id)
        .or_else(|| {
            let slugged = slug(&update.id);
            items.iter().position(|i| i.id == slugged)
        })
        .ok_or_else(|| TodoError::UnknownId {
            index,
            id: update.id.clone(),
            existing: items.iter().map(|i| i.id.clone()).collect(),
        })?;
    if update.remove == Some(true) {
        items.remove(position);
        return Ok(());
    }
    let item = &mut items[position];
    if let Some(content) = update.content {
        if content.trim().is_empty() {
            return Err(TodoError::EmptyContent { field: format!("updates[{index}].content") });
        }
        item.content = content;
    }
    if let Some(status) = update.status {
        item.status = status;
    }
    if let Some(priority) = update.priority {
        item.priority = priority;
    }
    if let Some(notes) = update.notes {
        item.notes = Some(notes).filter(|n| !n.is_empty());
    }
    if let Some(active_form) = update.active_form {
        item.active_form = Some(active_form).filter(|a| !a.is_empty());
    }
    Ok(())
}

fn check_in_progress(items: &[TodoItem]) -> Result<(), TodoError> {
    let ids: Vec<String> = items.iter().filter(|i| i.status == TodoStatus::InProgress).map(|i| i.id.clone()).collect();
    if ids.len() > 1 { Err(TodoError::SeveralInProgress { ids }) } else { Ok(()) }
}

/// One atomic change of the call's plan. `change` gets the current plan (or why it cannot be
/// read) and returns the new plan and the tool's text; the new plan is saved only when it returns
/// `Ok`. It runs again on the newer plan when a shared store saw another process save first.
///
/// `retry` gives the change's retry key (see "Retries" in the module docs); it runs first, off the
/// async worker with the rest (a digest of thousands of items is CPU-bound). A change already
/// applied under its key is not applied again and nothing is saved: its first answer is returned
/// (the plan as it is, when that answer was not kept). Otherwise the key is recorded in the same
/// save as the change.
async fn edit_plan<K, F>(ctx: &ToolContext, retry: K, mut change: F) -> Result<String, TodoError>
where
    K: FnOnce() -> Result<Option<RetryKey>, TodoError> + Send + 'static,
    F: FnMut(Result<Vec<TodoItem>, TodoError>) -> Result<(Vec<TodoItem>, String), TodoError> + Send + 'static,
{
    let session = session_store_for(ctx).await.map_err(|e| TodoError::Store { message: e.to_string() })?;
    let now = ctx.now();
    blocking(move || {
        let retry = retry()?;
        let outcome = session.modify(|meta| {
            if let Some(retry) = &retry
                && let Some(answer) = retry::replay(meta, retry, now).map_err(Unsaved::Refused)?
            {
                // An `Err` saves nothing: a replay writes no byte.
                return Err(match answer {
                    Some(text) => Unsaved::Replayed(text),
                    None => match todos_in(meta) {
                        Ok(items) => Unsaved::Replayed(render_plan(&items)),
                        Err(e) => Unsaved::Refused(e),
                    },
                });
            }
            let (items, text) = change(todos_in(meta)).map_err(Unsaved::Refused)?;
            set_todos(meta, &items).map_err(Unsaved::Refused)?;
            if let Some(retry) = &retry {
                retry::record(meta, retry, &text, now);
            }
            Ok(text)
        })?;
        match outcome {
            Ok(text) | Err(Unsaved::Replayed(text)) => Ok(text),
            Err(Unsaved::Refused(e)) => Err(e),
        }
    })
    .await
}

/// Why [`edit_plan`] saved nothing.
enum Unsaved {
    /// The change was refused.
    Refused(TodoError),
    /// The change was applied before under its retry key: this is the answer.
    Replayed(String),
}

/// Runs blocking store I/O off the async workers (see [`off_worker`]).
async fn blocking<T, F>(work: F) -> Result<T, TodoError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, TodoError> + Send + 'static,
{
    off_worker(work)
        .await
        .unwrap_or_else(|| Err(TodoError::Store { message: "the runtime is shutting down".to_owned() }))
}
