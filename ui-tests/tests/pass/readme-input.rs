//! An example of tool-runtime's "Defining tools" (`tool-runtime/docs/defining-tools.md`), as
//! written there, and checks of what it defines.

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;

/// What to search for.
#[derive(Deserialize, JsonSchema)]
struct Query {
    /// The text to look for.
    text: String,
    /// At most this many results.
    limit: Option<u32>,
}

#[derive(Clone)]
struct Index(Vec<String>);

fn open_index(_: &ToolContext) -> Result<Index, DependencyError> {
    Ok(Index(vec!["alpha".to_owned(), "beta".to_owned()]))
}

static INDEX: DependencyKey<Index> = DependencyKey::per_call("index", open_index);

/// Search the index.
#[tool]
async fn search(#[input] query: Query, #[depends(INDEX)] index: Index, ctx: &ToolContext) -> String {
    let hits: Vec<&String> = index.0.iter().filter(|entry| entry.contains(&query.text)).collect();
    let limit = query.limit.map_or(hits.len(), |l| l as usize);
    format!("{}: {} hit(s)", ctx.call_id().unwrap_or("-"), hits.len().min(limit))
}

fn main() {
    assert_eq!(
        search::TOOL.definition().input_schema,
        serde_json::json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The text to look for."},
                "limit": {"type": "integer", "minimum": 0, "description": "At most this many results."}
            },
            "required": ["text"],
            "additionalProperties": false
        })
    );
}
