use std::sync::Mutex;

use tool_runtime::prelude::*;

#[derive(Default)]
struct Notes {
    notes: Mutex<Vec<String>>,
}

#[tools]
impl Notes {
    /// Adds a note.
    #[tool]
    async fn add(&mut self, text: String) -> String {
        self.notes.get_mut().unwrap().push(text);
        String::new()
    }
}

fn main() {
    let _ = std::sync::Arc::new(Notes::default());
}
