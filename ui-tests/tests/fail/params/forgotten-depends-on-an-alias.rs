use std::sync::{Arc, Mutex};

use tool_runtime::prelude::*;

/// The notes: one store per registry, kept between calls.
type Notes = Arc<Mutex<Vec<String>>>;

fn no_notes(_: &ToolContext) -> Result<Notes, DependencyError> {
    Ok(Notes::default())
}

static NOTES: DependencyKey<Notes> = DependencyKey::shared("notes", no_notes);

/// Add a note; returns how many there are. `notes` lacks its `#[depends(NOTES)]`, and its type's
/// name is an alias the macro cannot see through.
#[tool]
fn add(notes: Notes, /** The note's text. */ text: String) -> String {
    let mut notes = notes.lock().unwrap();
    notes.push(text);
    notes.len().to_string()
}

fn main() {}
