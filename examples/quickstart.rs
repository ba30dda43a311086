//! The framework's main job on real input.
//!
//! Defines, with `#[tool]`, the tools that eight recorded provider requests declared, discovers
//! them, prints their definitions as OpenAI and Anthropic want them, then replays each recorded
//! response: parses its tool calls, runs them as one turn, and prints the tool results in that
//! provider's own request shape, ready to append to the conversation.
//!
//! Run it with `cargo run -p examples --example quickstart`. The recordings are in
//! `fixtures/provider-responses/` (see `SOURCES.md` there for where each comes from).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_runtime::prelude::*;
use tool_runtime::provider::Provider;

// ---------------------------------------------------------------------------------------------
// Dependencies
// ---------------------------------------------------------------------------------------------

/// A directory the file tools may touch; paths are relative to it and may not climb out.
#[derive(Debug, Clone)]
pub struct Workspace(pub PathBuf);

impl Workspace {
    fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        let relative = Path::new(path);
        if relative.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
            return Err(format!("Path escapes workspace: {path}"));
        }
        Ok(self.0.join(relative))
    }
}

fn no_workspace(_ctx: &ToolContext) -> Result<Workspace, DependencyError> {
    Err(DependencyError::new("no workspace configured: override the `workspace` dependency with a directory"))
}

/// The workspace of the file tools; the quickstart overrides it with a temporary directory.
pub static WORKSPACE: DependencyKey<Workspace> = DependencyKey::per_call("workspace", no_workspace);

/// An in-memory file tree for the memory tool: path -> contents.
pub type MemoryFiles = Arc<Mutex<BTreeMap<String, String>>>;

fn new_memory(_ctx: &ToolContext) -> Result<MemoryFiles, DependencyError> {
    Ok(MemoryFiles::default())
}

/// The memory tool's files, one tree per registry.
pub static MEMORY: DependencyKey<MemoryFiles> = DependencyKey::shared("memory", new_memory);

fn new_deck(_ctx: &ToolContext) -> Result<Arc<AtomicUsize>, DependencyError> {
    Ok(Arc::new(AtomicUsize::new(0)))
}

/// How many topics were dealt so far, one counter per registry.
pub static TOPIC_DECK: DependencyKey<Arc<AtomicUsize>> = DependencyKey::shared("topic_deck", new_deck);

// ---------------------------------------------------------------------------------------------
// Tools (the ones the recorded requests declared)
// ---------------------------------------------------------------------------------------------

/// Create an empty file in the workspace.
#[tool]
pub fn create_file(
    /// Path of the new file, relative to the workspace.
    path: String,
    #[depends(WORKSPACE)] workspace: Workspace,
) -> Result<String, String> {
    let full = workspace.resolve(&path)?;
    std::fs::OpenOptions::new().write(true).create_new(true).open(&full).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => format!("File already exists: {path}"),
        _ => format!("Cannot create {path}: {e}"),
    })?;
    Ok(format!("Created {path}"))
}

/// Delete a file from the workspace.
#[tool]
pub fn delete_file(
    /// Path of the file, relative to the workspace.
    path: String,
    #[depends(WORKSPACE)] workspace: Workspace,
) -> Result<String, String> {
    let full = workspace.resolve(&path)?;
    std::fs::remove_file(&full).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("File not found: {path}"),
        _ => format!("Cannot delete {path}: {e}"),
    })?;
    Ok(format!("Deleted {path}"))
}

/// Look up the population of a country.
#[tool]
pub fn lookup_population(
    /// The country's name.
    country: String,
) -> Result<u64, String> {
    match country.as_str() {
        "Crumpet" => Ok(123_124),
        "France" => Ok(68_170_000),
        _ => Err(format!("No population data for {country}; known countries: Crumpet, France")),
    }
}

/// Whether a country of this population can have dragons.
#[tool]
pub fn can_have_dragons(
    /// The number of inhabitants.
    population: u64,
) -> bool {
    population > 10_000
}

/// One person of the family.
#[derive(Debug, Serialize)]
pub struct EntityInfo {
    /// The name.
    pub name: &'static str,
    /// Age in years.
    pub age: u32,
    /// Role in the family.
    pub role: &'static str,
}

/// Retrieve what is known about a person.
#[tool]
pub fn retrieve_entity_info(
    /// The person's first name.
    name: String,
) -> Result<EntityInfo, String> {
    let family = [("Alice", 42, "mother"), ("Bob", 44, "father"), ("Charlie", 12, "son"), ("Daisy", 9, "daughter")];
    family
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|&(name, age, role)| EntityInfo { name, age, role })
        .ok_or_else(|| format!("No entity named {name}; known: Alice, Bob, Charlie, Daisy"))
}

/// What the memory tool should do.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryCommand {
    /// List a directory or show a file with line numbers.
    View,
    /// Create or overwrite a file with `file_text`.
    Create,
    /// Replace the unique `old_str` in a file with `new_str`.
    StrReplace,
    /// Delete a file.
    Delete,
}

/// Read and write notes under `/memories` that persist across conversations.
#[tool]
pub fn memory(
    /// The operation.
    command: MemoryCommand,
    /// A path under `/memories`.
    path: String,
    /// The whole content, for `create`.
    file_text: Option<String>,
    /// The text to replace, for `str_replace`.
    old_str: Option<String>,
    /// The replacement, for `str_replace`.
    new_str: Option<String>,
    #[depends(MEMORY)] files: MemoryFiles,
) -> Result<String, String> {
    if path != "/memories" && !path.starts_with("/memories/") {
        return Err(format!("Path must be under /memories: {path}"));
    }
    let mut files = files.lock().map_err(|_| "memory store is unavailable".to_owned())?;
    match command {
        MemoryCommand::View => {
            if let Some(text) = files.get(&path) {
                return Ok(text.lines().enumerate().map(|(i, l)| format!("{:>6}\t{l}\n", i + 1)).collect());
            }
            let prefix = format!("{}/", path.trim_end_matches('/'));
            let entries: Vec<String> = files
                .iter()
                .filter(|(p, _)| p.starts_with(&prefix))
                .map(|(p, t)| format!("- {p} ({} bytes)", t.len()))
                .collect();
            if entries.is_empty() {
                Ok(format!("Directory: {path}\n(empty)"))
            } else {
                Ok(format!("Directory: {path}\n{}", entries.join("\n")))
            }
        }
        MemoryCommand::Create => {
            let text = file_text.ok_or("`file_text` is required for `create`")?;
            files.insert(path.clone(), text);
            Ok(format!("File created: {path}"))
        }
        MemoryCommand::StrReplace => {
            let (old, new) = (old_str.ok_or("`old_str` is required")?, new_str.unwrap_or_default());
            let text = files.get_mut(&path).ok_or_else(|| format!("File not found: {path}"))?;
            match text.matches(old.as_str()).count() {
                1 => {
                    *text = text.replacen(old.as_str(), &new, 1);
                    Ok(format!("File edited: {path}"))
                }
                0 => Err(format!("`old_str` not found in {path}")),
                n => Err(format!("`old_str` matches {n} places in {path}; add context to make it unique")),
            }
        }
        MemoryCommand::Delete => {
            files.remove(&path).map(|_| format!("Deleted: {path}")).ok_or_else(|| format!("File not found: {path}"))
        }
    }
}

/// Look up a key in the puzzle database.
#[tool]
pub fn db_lookup(
    /// The key to look up.
    key: String,
) -> Result<String, String> {
    let table = [
        ("begin", "Begin with the value 7."),
        ("start", "Look up `begin` next."),
        ("start2", "Multiply the value by 6."),
        ("value", "7"),
    ];
    table.iter().find(|(k, _)| *k == key).map(|(_, v)| (*v).to_owned()).ok_or_else(|| {
        let known: Vec<&str> = table.iter().map(|(k, _)| *k).collect();
        format!("No entry for key `{key}`; known keys: {}", known.join(", "))
    })
}

/// Generate a topic for a joke.
// `inline`: a counter's increment is cheap, and the calls of one turn, run on the calling task in
// call order, take the topics in that order (on the blocking pool they would race for the deck).
#[tool(inline)]
pub fn generate_topic(#[depends(TOPIC_DECK)] deck: Arc<AtomicUsize>) -> String {
    const TOPICS: [&str; 4] = ["cats", "coffee", "computers", "clouds"];
    TOPICS[deck.fetch_add(1, Ordering::SeqCst) % TOPICS.len()].to_owned()
}

/// Give the final answer.
#[tool]
pub fn final_result(
    /// The jokes, one per topic.
    response: Vec<String>,
) -> String {
    format!("Final result recorded: {} item(s)", response.len())
}

/// Get the capital city of a country.
#[tool]
pub async fn get_capital(
    /// The country's name.
    country: String,
) -> Result<String, String> {
    match country.as_str() {
        "France" => Ok("Paris".to_owned()),
        "Italy" => Ok("Rome".to_owned()),
        _ => Err(format!("Unknown country: {country}; known countries: France, Italy")),
    }
}

/// A 1x1 transparent PNG.
const PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// Retrieve the image file of this conversation.
#[tool]
pub fn get_file() -> Vec<ContentPart> {
    vec![
        ContentPart::text("pixel.png (1x1, image/png)"),
        ContentPart::Image { data: PIXEL_PNG.to_owned(), media_type: "image/png".to_owned(), detail: None },
    ]
}

// ---------------------------------------------------------------------------------------------
// The replay
// ---------------------------------------------------------------------------------------------

/// The recorded response bodies, by file name, compiled in so that the quickstart runs anywhere.
pub const FIXTURES: [(&str, &str); 8] = [
    ("openai-chat-single-1.json", include_str!("../fixtures/provider-responses/openai-chat-single-1.json")),
    ("openai-chat-parallel-1.json", include_str!("../fixtures/provider-responses/openai-chat-parallel-1.json")),
    (
        "openai-responses-parallel-1.json",
        include_str!("../fixtures/provider-responses/openai-responses-parallel-1.json"),
    ),
    ("anthropic-tool-use-1.json", include_str!("../fixtures/provider-responses/anthropic-tool-use-1.json")),
    (
        "anthropic-tool-use-parallel-1.json",
        include_str!("../fixtures/provider-responses/anthropic-tool-use-parallel-1.json"),
    ),
    ("gemini-function-call-1.json", include_str!("../fixtures/provider-responses/gemini-function-call-1.json")),
    ("gemini-parallel-1.json", include_str!("../fixtures/provider-responses/gemini-parallel-1.json")),
    ("gemini-unknown-tool-1.json", include_str!("../fixtures/provider-responses/gemini-unknown-tool-1.json")),
];

/// What one recorded response became.
#[derive(Debug)]
pub struct Replay {
    /// The fixture's file name.
    pub fixture: &'static str,
    /// The provider detected from the body's shape.
    pub provider: Provider,
    /// The tool calls parsed out of it.
    pub calls: Vec<ToolCall>,
    /// One message per call, in call order.
    pub messages: Vec<ToolMessage>,
    /// The messages in the provider's own request shape.
    pub rendered: Vec<Value>,
}

/// The registry of the quickstart's tools, with the file tools rooted at `workspace`.
///
/// # Errors
/// A duplicate tool name.
pub fn registry(workspace: &Path) -> Result<Registry, tool_runtime::RegistryError> {
    Registry::builder().discover().override_dependency(&WORKSPACE, Workspace(workspace.to_path_buf())).build()
}

/// Replays one recorded response body: parse, run the calls as one turn, render the results.
///
/// # Errors
/// A body that is not JSON, not a known provider's response, or malformed.
pub async fn replay(
    registry: &Registry,
    fixture: &'static str,
    body: &str,
) -> Result<Replay, Box<dyn std::error::Error>> {
    let response: Value = serde_json::from_str(body)?;
    let provider = Provider::detect(&response).ok_or_else(|| format!("{fixture}: not a known provider response"))?;
    let calls = provider.parse_tool_calls(&response)?;
    let ctx = ToolContext::builder().session_id("quickstart").build();
    let messages = registry.call_batch(&calls, &ctx).await.into_messages();
    let rendered = provider.render_tool_results(&messages);
    Ok(Replay { fixture, provider, calls, messages, rendered })
}

/// Creates the workspace the recorded file calls expect (a `.env` to delete).
///
/// # Errors
/// I/O errors creating the file.
pub fn seed_workspace(dir: &Path) -> std::io::Result<()> {
    std::fs::write(dir.join(".env"), "API_KEY=not-a-real-key\n")
}

fn pretty(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("<unprintable: {e}>"))
}

#[cfg_attr(test, allow(dead_code))]
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = tempfile::tempdir()?;
    seed_workspace(workspace.path())?;
    let registry = registry(workspace.path())?;

    println!("== {} tools discovered ==", registry.len());
    println!("{}\n", registry.names().collect::<Vec<_>>().join(", "));
    println!("-- as OpenAI Chat Completions `tools` --");
    println!("{}\n", pretty(&Provider::OpenAiChat.render_tools(registry.definitions())?));
    println!("-- as Anthropic Messages `tools` --");
    println!("{}\n", pretty(&Provider::Anthropic.render_tools(registry.definitions())?));

    println!("== replaying {} recorded provider responses ==", FIXTURES.len());
    for (fixture, body) in FIXTURES {
        let replay = replay(&registry, fixture, body).await?;
        println!("\n-- {} ({}): {} tool call(s) --", replay.fixture, replay.provider, replay.calls.len());
        for (call, message) in replay.calls.iter().zip(&replay.messages) {
            let outcome = if message.is_error { "error" } else { "ok" };
            println!("{} {}({}) -> {outcome}: {}", call.id, call.name, call.arguments, message.text());
        }
        println!("tool results in the {} request shape:", replay.provider);
        println!("{}", pretty(&replay.rendered));
    }
    Ok(())
}
