use std::sync::{Arc, Mutex};

use tool_runtime::prelude::*;

/// A database connection: `Send`, not `Sync`, not `Clone`, not data (as `rusqlite::Connection`).
pub struct Connection(std::cell::RefCell<Vec<String>>);

/// The connection, shared by every call.
type Db = Arc<Mutex<Connection>>;

fn open(_: &ToolContext) -> Result<Db, DependencyError> {
    Ok(Arc::new(Mutex::new(Connection(std::cell::RefCell::new(Vec::new())))))
}

static DB: DependencyKey<Db> = DependencyKey::shared("db", open);

/// Counts the rows of a table. `db` lacks its `#[depends(DB)]`; its type, an alias the macro
/// cannot see through, is neither `Deserialize` nor `JsonSchema`.
#[tool]
fn count(/** The table. */ table: String, db: Db) -> String {
    let _ = (&DB, table);
    db.lock().unwrap().0.borrow().len().to_string()
}

fn main() {}
