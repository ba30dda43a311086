//! An example of tool-runtime's "Defining tools" (`tool-runtime/docs/defining-tools.md`), as
//! written there, and checks of what it defines.

use tool_runtime::prelude::*;

/// Search the notes for a text.
///
/// Matching ignores case. The result lists note titles, best match first.
///
/// # Arguments
///
/// * `query` - The text to look for.
#[tool]
async fn search_notes(
    query: &str,
    /// At most this many titles; all of them when absent.
    limit: Option<usize>,
    /// Also search archived notes.
    #[arg(default)]
    archived: bool,
    /// Ignored: the `description` option wins.
    #[arg(default = "title", description = "The field to sort by: `title` or `date`.")]
    sort: String,
    /// Only notes with this tag.
    #[arg(rename = "tagFilter")]
    tag: Option<String>,
) -> Vec<String> {
    let _ = (archived, sort, tag);
    let titles = vec![format!("Notes on {query}")];
    titles.into_iter().take(limit.unwrap_or(usize::MAX)).collect()
}

fn main() {
    let definition = search_notes::TOOL.definition();
    assert_eq!(definition.description, "Search the notes for a text.\n\nMatching ignores case. The result lists note titles, best match first.");
    assert_eq!(
        definition.input_schema,
        serde_json::json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The text to look for."},
                "limit": {"type": "integer", "minimum": 0, "description": "At most this many titles; all of them when absent."},
                "archived": {"type": "boolean", "default": false, "description": "Also search archived notes."},
                "sort": {"type": "string", "default": "title", "description": "The field to sort by: `title` or `date`."},
                "tagFilter": {"type": "string", "description": "Only notes with this tag."}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    );
}
