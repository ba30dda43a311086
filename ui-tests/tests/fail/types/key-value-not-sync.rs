use tool_runtime::prelude::*;

/// A database connection: `Send` but neither `Sync` nor `Clone`, as `rusqlite::Connection`.
pub struct Connection(std::cell::RefCell<Vec<String>>);

fn open(_: &ToolContext) -> Result<Connection, DependencyError> {
    Ok(Connection(std::cell::RefCell::new(Vec::new())))
}

static DB: DependencyKey<Connection> = DependencyKey::shared("db", open);

/// Counts the rows.
#[tool]
fn count(#[depends(DB)] db: Connection) -> String {
    db.0.borrow().len().to_string()
}

fn main() {}
