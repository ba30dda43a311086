use tool_runtime::prelude::*;

struct Buffer<T>(T);

impl Buffer<[u8; 4]> {
    /// Counts the bytes.
    #[tool]
    fn count() -> String {
        String::new()
    }
}

fn main() {}
