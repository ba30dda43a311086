//! The text of a plan, as `todo_new` and `todo_read` return it.

use std::fmt::Write as _;

use super::item::{TodoItem, TodoStatus};

/// What `todo_read` returns for a session without a plan.
pub const EMPTY_PLAN: &str = "No todos yet. Use todo_new to write a plan.";

/// The plan as the model reads it:
///
/// ```text
/// Todos: 3 total, 1 pending, 1 in_progress, 1 completed, 0 cancelled
/// Next: [write-parser]
/// 1. [x] [set-up-the-crate] (p3) Set up the crate
/// 2. [>] [write-parser] (p1) Writing the parser
///    notes: handle CRLF
/// 3. [ ] [add-tests] (p2) Add tests
/// ```
///
/// - The counts line always lists the four statuses in this order, zeros included.
/// - `Next:` is the first in_progress item, else the first pending one, else `none`.
/// - Plan lines are numbered from 1 in list order; the label is `active_form` for the item in
///   progress when it has one, else `content`; line breaks in a label become spaces.
/// - Notes follow their item as `   notes: ...`, further lines of them indented to match.
/// - An empty plan is [`EMPTY_PLAN`].
pub fn render_plan(items: &[TodoItem]) -> String {
    if items.is_empty() {
        return EMPTY_PLAN.to_owned();
    }
    let count = |status: TodoStatus| items.iter().filter(|i| i.status == status).count();
    let counts = TodoStatus::ALL.iter().map(|&s| format!("{} {}", count(s), s.as_str())).collect::<Vec<_>>().join(", ");
    let next = items
        .iter()
        .find(|i| i.status == TodoStatus::InProgress)
        .or_else(|| items.iter().find(|i| i.status == TodoStatus::Pending))
        .map_or_else(|| "none".to_owned(), |i| format!("[{}]", i.id));
    let mut out = format!("Todos: {} total, {counts}\nNext: {next}", items.len());
    for (n, item) in items.iter().enumerate() {
        let label = match (&item.active_form, item.status) {
            (Some(active), TodoStatus::InProgress) if !active.trim().is_empty() => active,
            _ => &item.content,
        };
        // Writing to a `String` cannot fail.
        let _ = write!(out, "\n{}. {} [{}] (p{}) ", n + 1, item.status.marker(), item.id, item.priority);
        if label.contains(['\n', '\r']) {
            out.push_str(&label.replace("\r\n", " ").replace(['\n', '\r'], " "));
        } else {
            out.push_str(label);
        }
        if let Some(notes) = item.notes.as_deref().filter(|n| !n.trim().is_empty()) {
            out.push_str("\n   notes: ");
            for (i, line) in notes.lines().enumerate() {
                if i > 0 {
                    out.push_str("\n          ");
                }
                out.push_str(line);
            }
        }
    }
    out
}
