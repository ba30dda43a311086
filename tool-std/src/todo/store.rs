//! The plan in session meta: read it, write it back.

use serde::Deserialize;
use tool_runtime::ToolContext;

use super::TodoError;
use super::item::TodoItem;
use crate::session::{SessionMeta, TODOS_KEY};

/// The plan kept in `meta` under [`TODOS_KEY`] (empty when the key is absent).
///
/// # Errors
/// [`TodoError::Damaged`] when the key holds something that is not a todo list.
pub fn todos_in(meta: &SessionMeta) -> Result<Vec<TodoItem>, TodoError> {
    match meta.get(TODOS_KEY) {
        None => Ok(Vec::new()),
        // Read through the reference: a plan of thousands of items is not copied first.
        Some(value) => Vec::<TodoItem>::deserialize(value).map_err(|e| TodoError::Damaged { message: e.to_string() }),
    }
}

/// Stores `items` in `meta` under [`TODOS_KEY`]; an empty list removes the key.
///
/// # Errors
/// [`TodoError::Damaged`] if the items cannot be written as JSON (they always can: text, numbers
/// and a status); `meta` is unchanged then.
pub fn set_todos(meta: &mut SessionMeta, items: &[TodoItem]) -> Result<(), TodoError> {
    if items.is_empty() {
        meta.remove(TODOS_KEY);
    } else {
        let value = serde_json::to_value(items).map_err(|e| TodoError::Damaged { message: e.to_string() })?;
        meta.insert(TODOS_KEY.to_owned(), value);
    }
    Ok(())
}

/// The session id the todo tools key a call's plan by: the context's session id, or
/// [`UNNAMED_SESSION`](crate::session::UNNAMED_SESSION).
pub fn session_key(ctx: &ToolContext) -> &str {
    ctx.session_id().unwrap_or(crate::session::UNNAMED_SESSION)
}
