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

mod item;
mod plan;
mod store;

use std::collections::HashSet;

use tool_runtime::{ToolContext, tool};

pub use item::{DEFAULT_PRIORITY, MAX_SLUG_CHARS, NewTodo, TodoItem, TodoPatch, TodoStatus, slug};
pub use plan::{EMPTY_PLAN, render_plan};
pub use store::{session_key, set_todos, todos_in};

use crate::session::{SessionError, session_store_for};
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
#[tool(set = "todo", tags(destructive, idempotent))]
pub async fn todo_new(
    /// The plan, in order.
    #[arg(length(min = 1))]
    todos: Vec<NewTodo>,
    ctx: &ToolContext,
) -> Result<String, TodoError> {
    if todos.is_empty() {
        return Err(TodoError::NoItems { field: "todos" });
    }
    let items = new_items(todos, &HashSet::new())?;
    check_in_progress(&items)?;
    edit_plan(ctx, move |_old| {
        let text = render_plan(&items);
        Ok((items.clone(), text))
    })
    .await
}

/// Add items to the end of this session's plan; at most one item may be in_progress.
#[tool(set = "todo")]
pub async fn todo_append(
    /// The items to add, in order.
    #[arg(length(min = 1))]
    todos: Vec<NewTodo>,
    ctx: &ToolContext,
) -> Result<String, TodoError> {
    if todos.is_empty() {
        return Err(TodoError::NoItems { field: "todos" });
    }
    edit_plan(ctx, move |old| {
        let mut items = old?;
        let taken: HashSet<String> = items.iter().map(|i| i.id.clone()).collect();
        items.extend(new_items(todos.clone(), &taken)?);
        check_in_progress(&items)?;
        let text = render_plan(&items);
        Ok((items, text))
    })
    .await
}

/// Change or remove items of this session's plan by id, all or nothing; omitted fields keep their
/// values. At most one item may be in_progress: complete the current one in the same call.
#[tool(set = "todo", tags(destructive, idempotent))]
pub async fn todo_patch(
    /// The changes, in order.
    #[arg(length(min = 1))]
    updates: Vec<TodoPatch>,
    ctx: &ToolContext,
) -> Result<String, TodoError> {
    if updates.is_empty() {
        return Err(TodoError::NoItems { field: "updates" });
    }
    edit_plan(ctx, move |old| {
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
#[tool(set = "todo", tags(destructive, idempotent))]
pub async fn todo_clear(ctx: &ToolContext) -> Result<String, TodoError> {
    edit_plan(ctx, |old| {
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
    let items = blocking(move || todos_in(&session.load()?)).await?;
    Ok(render_plan(&items))
}

/// Turns the model's items into stored ones: content checked, priority defaulted, ids slugged and
/// made unique against `taken` and each other.
fn new_items(todos: Vec<NewTodo>, taken: &HashSet<String>) -> Result<Vec<TodoItem>, TodoError> {
    let mut ids = item::UniqueIds::new(taken.iter().cloned());
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
async fn edit_plan<F>(ctx: &ToolContext, mut change: F) -> Result<String, TodoError>
where
    F: FnMut(Result<Vec<TodoItem>, TodoError>) -> Result<(Vec<TodoItem>, String), TodoError> + Send + 'static,
{
    let session = session_store_for(ctx).await.map_err(|e| TodoError::Store { message: e.to_string() })?;
    blocking(move || {
        session.modify(|meta| {
            let (items, text) = change(todos_in(meta))?;
            set_todos(meta, &items)?;
            Ok(text)
        })?
    })
    .await
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
