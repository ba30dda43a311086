use tool_runtime::prelude::*;

struct Counter;

impl Counter {
    /// Counts.
    #[tool]
    fn count(&self) -> String {
        String::new()
    }
}

fn main() {}
