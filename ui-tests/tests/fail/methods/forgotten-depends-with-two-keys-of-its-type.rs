use std::sync::{Arc, Mutex};

use tool_runtime::prelude::*;

/// A store of notes, kept between calls.
type Notes = Arc<Mutex<Vec<String>>>;

fn no_notes(_: &ToolContext) -> Result<Notes, DependencyError> {
    Ok(Notes::default())
}

static NOTES: DependencyKey<Notes> = DependencyKey::shared("notes", no_notes);
static ARCHIVE: DependencyKey<Notes> = DependencyKey::shared("archive", no_notes);

struct NotesServer;

#[tools]
impl NotesServer {
    /// Move every note to the archive.
    #[tool]
    fn archive_notes(&self, #[depends(NOTES)] notes: Notes, #[depends(ARCHIVE)] archive: Notes) -> usize {
        let moved: Vec<String> = notes.lock().unwrap().drain(..).collect();
        let mut archive = archive.lock().unwrap();
        archive.extend(moved);
        archive.len()
    }

    /// The notes, one a line. `notes` lacks its `#[depends]`, and two keys hold its type.
    #[tool]
    fn list_notes(&self, notes: Notes) -> String {
        notes.lock().unwrap().join("\n")
    }
}

fn main() {}
