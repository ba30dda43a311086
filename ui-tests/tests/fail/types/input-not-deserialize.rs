use schemars::JsonSchema;
use tool_runtime::prelude::*;

#[derive(JsonSchema)]
struct Query {
    text: String,
}

/// Searches.
#[tool]
fn search(#[input] query: Query) -> String {
    query.text
}

fn main() {}
