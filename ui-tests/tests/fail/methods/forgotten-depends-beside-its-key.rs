use std::sync::{Arc, Mutex};

use tool_runtime::prelude::*;

/// The notes: one store per registry, kept between calls.
type Notes = Arc<Mutex<Vec<String>>>;

fn no_notes(_: &ToolContext) -> Result<Notes, DependencyError> {
    Ok(Notes::default())
}

static NOTES: DependencyKey<Notes> = DependencyKey::shared("notes", no_notes);

struct NotesServer;

#[tools]
impl NotesServer {
    /// Add a note; returns how many there are.
    #[tool]
    fn add_note(&self, /** The note's text. */ text: String, #[depends(NOTES)] notes: Notes) -> String {
        let mut notes = notes.lock().unwrap();
        notes.push(text);
        notes.len().to_string()
    }

    /// The notes, one a line. `notes` lacks the `#[depends(NOTES)]` the other methods give it.
    #[tool]
    fn list_notes(&self, notes: Notes) -> String {
        notes.lock().unwrap().join("\n")
    }

    /// How many notes there are.
    #[tool]
    fn count_notes(&self, #[depends(NOTES)] notes: Notes) -> usize {
        notes.lock().unwrap().len()
    }

    /// Remove every note.
    #[tool]
    fn clear_notes(&self, #[depends(NOTES)] notes: Notes) -> String {
        notes.lock().unwrap().clear();
        String::new()
    }
}

fn main() {}
