//! An example of tool-runtime's "Defining tools" (`tool-runtime/docs/defining-tools.md`), as
//! written there, and checks of what it defines.

use std::sync::Arc;

use tool_runtime::prelude::*;

/// A notes server: its tools are methods, its state is on `self`.
#[derive(Default)]
struct NotesServer {
    notes: std::sync::Mutex<Vec<String>>,
}

#[tools]
impl NotesServer {
    /// Add a note; returns its 1-based number.
    #[tool]
    async fn add_note(
        &self,
        /// The note's text.
        text: String,
    ) -> String {
        let mut notes = self.notes.lock().unwrap();
        notes.push(text);
        notes.len().to_string()
    }

    /// The numbers of the notes that contain a text.
    #[tool(tags(read_only))]
    fn find_notes(
        &self,
        /// The text to look for.
        query: &str,
    ) -> Vec<usize> {
        let notes = self.notes.lock().unwrap();
        (1..=notes.len()).filter(|&n| notes[n - 1].contains(query)).collect()
    }
}

fn registry(server: Arc<NotesServer>) -> Registry {
    // The registry keeps the `Arc` and lends the instance to every call.
    Registry::builder().tools_of(server).build().expect("tool names are unique")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let server = Arc::new(NotesServer::default());
    let registry = registry(server.clone());
    let ctx = ToolContext::new();
    let first = registry.call(&ToolCall::new("1", "add_note", r#"{"text":"buy milk"}"#), &ctx).await;
    let second = registry.call(&ToolCall::new("2", "add_note", r#"{"text":"call Ada"}"#), &ctx).await;
    let found = registry.call(&ToolCall::new("3", "find_notes", r#"{"query":"milk"}"#), &ctx).await;
    assert_eq!([first.text(), second.text(), found.text()], ["1", "2", "[1]"]);
    assert_eq!(server.notes.lock().unwrap().len(), 2);
}
