//! The "todo" set: a plan the model keeps for itself, per session.
//!
//! [`todo_new()`] replaces the session's plan, [`todo_read()`] shows it (`todo_append`,
//! `todo_patch` and `todo_clear` are to come). Both return the plan text of [`render_plan`].
//! Ids are [`slug`]s of the given id or of the content, made unique with `-2`, `-3`. At most one
//! item may be `in_progress`: a plan with two is refused with their ids named, and nothing is saved.
//!
//! State lives in the [`TodoStore`] of [`TODO_STORE`] (one per registry), keyed by the call's
//! session id ([`session_key`]: `ToolContext::session_id`, else `"default"`). It is kept in memory
//! only: persisting it in session meta (`todos`) is to come.

mod item;
mod plan;
mod store;

use std::collections::HashSet;
use std::sync::Arc;

use tool_runtime::{ToolContext, tool};

pub use item::{DEFAULT_PRIORITY, MAX_SLUG_CHARS, NewTodo, TodoItem, TodoStatus, slug};
pub use plan::{EMPTY_PLAN, render_plan};
pub use store::{DEFAULT_SESSION, TODO_STORE, TodoStore, session_key};

/// Why a todo tool refused a change; nothing was saved. The `Display` text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TodoError {
    /// `todos` is empty.
    #[error("todos must hold at least one item; nothing was saved")]
    NoItems,
    /// An item's content is empty or blank.
    #[error("todos[{index}].content is empty; give each item the text of its task. Nothing was saved")]
    EmptyContent {
        /// 0-based position in `todos`.
        index: usize,
    },
    /// An item's priority is outside 1..=5.
    #[error("todos[{index}].priority must be 1 to 5 (1 = most important), got {value}. Nothing was saved")]
    Priority {
        /// 0-based position in `todos`.
        index: usize,
        /// The priority given.
        value: u8,
    },
    /// More than one item is in_progress.
    #[error(
        "At most one item may be in_progress, got {}: {}. Nothing was saved; keep one in_progress and make the \
         others pending",
        .ids.len(),
        .ids.join(", ")
    )]
    SeveralInProgress {
        /// The ids (after slugging) of the items in progress, in list order.
        ids: Vec<String>,
    },
}

/// Write a new plan for this session, replacing the current one: a list of at least one item, in
/// the order to do them. Ids are made from the given id or the content (lowercase, dashes) and
/// made unique with -2, -3. At most one item may be in_progress: a plan with two or more is
/// refused with their ids named, and nothing is saved.
///
/// Returns the plan: a counts line, `Next: [id]` (the item in progress, else the first pending
/// one), and one line per item: `n. [ ]|[>]|[x]|[-] [id] (pN) label` for pending, in_progress,
/// completed, cancelled.
#[tool(set = "todo")]
pub fn todo_new(
    /// The plan, in order; at least one item.
    todos: Vec<NewTodo>,
    #[depends(TODO_STORE)] store: Arc<TodoStore>,
    ctx: &ToolContext,
) -> Result<String, TodoError> {
    if todos.is_empty() {
        return Err(TodoError::NoItems);
    }
    let mut taken = HashSet::new();
    let mut items = Vec::with_capacity(todos.len());
    for (index, todo) in todos.into_iter().enumerate() {
        if todo.content.trim().is_empty() {
            return Err(TodoError::EmptyContent { index });
        }
        let priority = todo.priority.unwrap_or(DEFAULT_PRIORITY);
        if !(1..=5).contains(&priority) {
            return Err(TodoError::Priority { index, value: priority });
        }
        let base = match todo.id.as_deref().filter(|id| !id.trim().is_empty()) {
            Some(id) => slug(id),
            None => slug(&todo.content),
        };
        let id = item::unique_id(base, &taken);
        taken.insert(id.clone());
        items.push(TodoItem {
            id,
            content: todo.content,
            status: todo.status,
            priority,
            notes: todo.notes,
            active_form: todo.active_form,
        });
    }
    let in_progress: Vec<String> =
        items.iter().filter(|i| i.status == TodoStatus::InProgress).map(|i| i.id.clone()).collect();
    if in_progress.len() > 1 {
        return Err(TodoError::SeveralInProgress { ids: in_progress });
    }
    let text = render_plan(&items);
    store.replace(session_key(ctx), items);
    Ok(text)
}

/// Show this session's plan: a counts line, `Next: [id]`, and one line per item
/// `n. [ ]|[>]|[x]|[-] [id] (pN) label`.
#[tool(set = "todo")]
pub fn todo_read(#[depends(TODO_STORE)] store: Arc<TodoStore>, ctx: &ToolContext) -> String {
    render_plan(&store.get(session_key(ctx)))
}
