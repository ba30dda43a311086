use tool_runtime::prelude::*;

struct Notes;

impl Notes {
    /// Counts the notes.
    #[tool]
    fn count() -> String {
        String::new()
    }
}

fn main() {}
