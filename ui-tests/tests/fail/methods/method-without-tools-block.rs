use tool_runtime::prelude::*;

#[derive(Default)]
struct Notes;

impl Notes {
    /// Counts the notes.
    #[tool]
    async fn count(&self) -> String {
        String::new()
    }
}

fn main() {}
