use tool_runtime::prelude::*;

/// A struct is not a tool.
#[tool]
struct Search {
    query: String,
}

fn main() {}
