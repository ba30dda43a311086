//! The examples of tool-runtime's "Defining tools" (`tool-runtime/docs/defining-tools.md`), as
//! written there, and checks of what they define: two calls see one shared store, and a provided
//! value is handed in from `main`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tool_runtime::prelude::*;

/// The notes by number: one store per registry, kept between calls.
type Notes = Arc<Mutex<BTreeMap<usize, String>>>;

fn no_notes(_: &ToolContext) -> Result<Notes, DependencyError> {
    Ok(Notes::default())
}

static NOTES: DependencyKey<Notes> = DependencyKey::shared("notes", no_notes);

/// Add a note; returns its 1-based number.
#[tool]
fn add_note(
    /// The note's text.
    text: String,
    #[depends(NOTES)] notes: Notes,
) -> String {
    let mut notes = notes.lock().unwrap();
    let number = notes.len() + 1;
    notes.insert(number, text);
    number.to_string()
}

/// The numbers of the notes that contain a text.
#[tool]
fn find_notes(
    /// The text to look for.
    query: String,
    #[depends(NOTES)] notes: Notes,
) -> Vec<usize> {
    notes.lock().unwrap().iter().filter(|(_, text)| text.contains(&query)).map(|(number, _)| *number).collect()
}

/// Who runs the agent: made in `main`, handed to the registry.
#[derive(Clone)]
struct Author(String);

static AUTHOR: DependencyKey<Author> = DependencyKey::provided("author");

/// Add a note signed by the author.
#[tool]
fn add_signed_note(
    /// The note's text.
    text: String,
    #[depends(AUTHOR)] author: Author,
    #[depends(NOTES)] notes: Notes,
) -> String {
    add_note(format!("{text} ({})", author.0), notes)
}

fn registry(author: Author) -> Result<Registry, tool_runtime::RegistryError> {
    // Without `provide`, `build` fails: the key `AUTHOR` (asked for by `add_signed_note`) has no value.
    Registry::builder()
        .tool(add_note::TOOL)
        .tool(find_notes::TOOL)
        .tool(add_signed_note::TOOL)
        .provide(&AUTHOR, author)
        .build()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = registry(Author("Ada".to_owned())).unwrap();
    let ctx = ToolContext::new();
    let first = registry.call(&ToolCall::new("1", "add_note", r#"{"text":"buy milk"}"#), &ctx).await;
    let second = registry.call(&ToolCall::new("2", "add_signed_note", r#"{"text":"milk bought"}"#), &ctx).await;
    let found = registry.call(&ToolCall::new("3", "find_notes", r#"{"query":"milk"}"#), &ctx).await;
    assert_eq!([first.text(), second.text(), found.text()], ["1", "2", "[1,2]"]);

    let unprovided = Registry::builder().tool(add_signed_note::TOOL).build().unwrap_err();
    assert_eq!(
        unprovided.to_string(),
        "the dependency key `AUTHOR` (asked for by `add_signed_note`) has no value: a key declared with `DependencyKey::provided` gets its value from the program, before `build`: `Registry::builder().discover().provide(&AUTHOR, value).build()` (or `.tool(..)` for each tool instead of `.discover()`; `Registry::discover()` cannot take values)"
    );
}
