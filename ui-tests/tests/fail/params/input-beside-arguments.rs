use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Query {
    text: String,
}

/// Searches.
#[tool]
fn search(#[input] query: Query, limit: u32) -> String {
    format!("{} {limit}", query.text)
}

fn main() {}
