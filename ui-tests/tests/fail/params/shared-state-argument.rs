use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tool_runtime::prelude::*;

/// Adds a note.
#[tool]
fn add_note(
    /// The note.
    text: String,
    notes: Arc<Mutex<HashMap<u64, String>>>,
) -> String {
    let _ = notes;
    text
}

fn main() {}
