use tool_runtime::prelude::*;

#[derive(Default)]
struct Notes;

#[tools]
impl Notes {
    /// Consumes the server.
    #[tool]
    fn shut_down(self) -> String {
        String::new()
    }
}

fn main() {}
