use tool_runtime::prelude::*;

trait Notes {
    /// Counts the notes.
    #[tool]
    fn count() -> String {
        String::new()
    }
}

fn main() {}
