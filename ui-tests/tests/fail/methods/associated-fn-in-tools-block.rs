use tool_runtime::prelude::*;

struct Notes;

#[tools]
impl Notes {
    /// Makes a note.
    #[tool]
    fn make() -> String {
        String::new()
    }
}

fn main() {}
