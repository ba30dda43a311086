use tool_runtime::prelude::*;

struct Notes;

trait Describe {
    fn describe(&self) -> String;
}

#[tools]
impl Describe for Notes {
    /// Describes.
    #[tool]
    fn describe(&self) -> String {
        String::new()
    }
}

fn main() {}
