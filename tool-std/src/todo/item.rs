//! Todo items: what the model writes, what is stored, and how ids are made.

use std::collections::{HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The state of a todo item. In JSON: `pending`, `in_progress`, `completed`, `cancelled`. (The
/// schema lists these values and says nothing more.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(description = "")]
pub enum TodoStatus {
    /// Not started.
    #[schemars(description = "")]
    Pending,
    /// Being worked on; at most one item of a list.
    #[schemars(description = "")]
    InProgress,
    /// Done.
    #[schemars(description = "")]
    Completed,
    /// Dropped.
    #[schemars(description = "")]
    Cancelled,
}

impl TodoStatus {
    /// Every status, in the order of the counts line.
    pub const ALL: [TodoStatus; 4] = [Self::Pending, Self::InProgress, Self::Completed, Self::Cancelled];

    /// The JSON name: `pending`, `in_progress`, `completed` or `cancelled`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The checkbox of a plan line: `[ ]`, `[>]`, `[x]` or `[-]`.
    pub const fn marker(self) -> &'static str {
        match self {
            Self::Pending => "[ ]",
            Self::InProgress => "[>]",
            Self::Completed => "[x]",
            Self::Cancelled => "[-]",
        }
    }
}

/// One item of a plan as the model writes it (`todo_new`'s `todos`). Unknown keys are refused.
/// (The list's own description is what the model reads; fields whose name and type say it all
/// carry no description in the schema.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTodo {
    /// Short id (default: from content).
    #[serde(default)]
    pub id: Option<String>,
    /// The task, imperative.
    pub content: String,
    /// The state.
    #[schemars(description = "")]
    pub status: TodoStatus,
    /// 1 (highest) to 5 (default 3); the schema states the range, its description the rest.
    #[serde(default)]
    #[schemars(range(min = 1, max = 5), description = "1 is highest (default 3).")]
    pub priority: Option<u8>,
    /// Free notes.
    #[serde(default)]
    #[schemars(description = "")]
    pub notes: Option<String>,
    /// The task in present continuous, shown while in progress.
    #[serde(default)]
    pub active_form: Option<String>,
}

/// One change of `todo_patch`: the item `id`, and the fields to change. Omitted fields keep
/// their values; an empty `notes` or `active_form` clears it. Unknown keys are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoPatch {
    /// The item's id.
    pub id: String,
    /// `true` removes the item.
    #[serde(default)]
    #[schemars(description = "")]
    pub remove: Option<bool>,
    /// New task text.
    #[serde(default)]
    pub content: Option<String>,
    /// New status.
    #[serde(default)]
    #[schemars(description = "")]
    pub status: Option<TodoStatus>,
    /// 1 (highest) to 5; the schema states the range, its description the rest.
    #[serde(default)]
    #[schemars(range(min = 1, max = 5), description = "1 is highest.")]
    pub priority: Option<u8>,
    /// "" removes them.
    #[serde(default)]
    pub notes: Option<String>,
    /// "" removes it.
    #[serde(default)]
    pub active_form: Option<String>,
}

/// One stored item of a session's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// Unique within the plan: a slug (see [`slug`]), with `-2`, `-3` appended when taken.
    pub id: String,
    /// What to do.
    pub content: String,
    /// The state.
    pub status: TodoStatus,
    /// 1 (most important) to 5.
    pub priority: u8,
    /// Free notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// The present-continuous form of `content`, shown while the item is in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
}

/// The priority of an item that gives none.
pub const DEFAULT_PRIORITY: u8 = 3;

/// The longest slug, in characters (Unicode scalar values).
pub const MAX_SLUG_CHARS: usize = 40;

/// The slug of `text`: letters and digits lowercased, every run of other characters one `-`, no
/// leading or trailing `-`; longer than 40 characters is cut at the last `-` within the first 40
/// (or at 40 when there is none). `"todo"` when nothing is left.
///
/// ```
/// assert_eq!(tool_std::todo::slug("Fix the parser (again)!"), "fix-the-parser-again");
/// assert_eq!(tool_std::todo::slug("!!!"), "todo");
/// ```
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    let mut gap = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push('-');
            }
            gap = false;
            out.extend(c.to_lowercase());
        } else {
            gap = true;
        }
    }
    if out.chars().count() > MAX_SLUG_CHARS {
        let cut: String = out.chars().take(MAX_SLUG_CHARS).collect();
        out = match cut.rfind('-') {
            Some(dash) if dash > 0 => cut[..dash].to_owned(),
            _ => cut,
        };
    }
    if out.is_empty() { "todo".to_owned() } else { out }
}

/// Unique ids within a plan: [`UniqueIds::id`] gives `base`, or `base-2`, `base-3`, ...,
/// whichever is not taken first. For each base it remembers the suffix its last duplicate got, so
/// that the next duplicate of that base starts its search there: `n` identical items cost `O(n)`
/// look-ups in all, not `O(n²)` (the ids already taken never come free, so the first free suffix
/// only grows).
#[derive(Debug, Default)]
pub(crate) struct UniqueIds {
    taken: HashSet<String>,
    /// Per base: the smallest suffix (at least 2) that may still be free.
    next: HashMap<String, u64>,
}

impl UniqueIds {
    /// The allocator of a plan whose items have the ids `taken`.
    pub(crate) fn new(taken: impl IntoIterator<Item = String>) -> Self {
        Self { taken: taken.into_iter().collect(), next: HashMap::new() }
    }

    /// `base` when it is free, else `base-N` for the smallest free `N` from 2; marks it taken.
    pub(crate) fn id(&mut self, base: String) -> String {
        if self.taken.insert(base.clone()) {
            return base;
        }
        let next = self.next.entry(base.clone()).or_insert(2);
        loop {
            let id = format!("{base}-{next}");
            *next += 1;
            if self.taken.insert(id.clone()) {
                return id;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_get_the_smallest_free_suffix_from_2_past_ids_taken_by_hand() {
        let mut ids = UniqueIds::new(["a".to_owned(), "a-3".to_owned()]);
        let got: Vec<String> = ["a", "a", "a-2", "a", "b", "b", "a-2"].map(|base| ids.id(base.to_owned())).into();
        assert_eq!(got, ["a-2", "a-4", "a-2-2", "a-5", "b", "b-2", "a-2-3"]);
    }
}
