//! An example of tool-runtime's "Defining tools" (`tool-runtime/docs/defining-tools.md`), as
//! written there, and checks of what it defines.

use std::fmt;

use serde::Serialize;
use tool_runtime::prelude::*;

#[derive(Serialize)]
struct Stats {
    lines: usize,
    words: usize,
}

/// Count the lines and words of a text (sent to the model as JSON).
#[tool]
fn stats(
    /// The text.
    text: &str,
) -> Stats {
    Stats { lines: text.lines().count(), words: text.split_whitespace().count() }
}

#[derive(Debug)]
struct NotFound(String);

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no note named `{}`; list the notes with `search_notes`", self.0)
    }
}

/// Read a note.
#[tool]
fn read_note(
    /// The note's title.
    title: String,
) -> Result<Vec<ContentPart>, NotFound> {
    if title == "todo" { Ok(vec![ContentPart::text("- write the README")]) } else { Err(NotFound(title)) }
}

/// Forget everything (returns an empty text).
#[tool]
fn forget() {}

fn main() {
    assert_eq!(stats("a b\nc").words, 3);
    assert_eq!(read_note("x".to_owned()).unwrap_err().to_string(), "no note named `x`; list the notes with `search_notes`");
    forget();
    assert_eq!(forget::TOOL.definition().input_schema["properties"], serde_json::json!({}));
}
