//! Your own tools over MCP: a small notebook served on standard input and output
//! (`cargo run -p examples --example mcp_server -- stdio`) or on Streamable HTTP at
//! `http://ADDR/mcp` (`cargo run -p examples --example mcp_server -- http 127.0.0.1:8080`).
//! The notes are kept in the file `$NOTES_FILE` (default `notes.txt` in the current directory),
//! so they outlive the server and every server process shares them. SIGTERM or Ctrl-C stops it.

use tokio::io::AsyncWriteExt;
use tool_runtime::prelude::*;

/// The notes file, one note per line: `$NOTES_FILE`, else `notes.txt`.
static NOTES_FILE: DependencyKey<String> =
    DependencyKey::per_call("notes_file", |_| Ok(std::env::var("NOTES_FILE").unwrap_or("notes.txt".into())));

/// Add a note to the notebook.
#[tool]
async fn add_note(
    /// The note (line breaks become spaces).
    text: String,
    #[depends(NOTES_FILE)] file: String,
) -> Result<String, std::io::Error> {
    let mut notes = tokio::fs::OpenOptions::new().create(true).append(true).open(&file).await?;
    notes.write_all(format!("{}\n", text.replace('\n', " ")).as_bytes()).await?;
    Ok(format!("noted: {text}"))
}

/// Every note in the notebook, one per line, oldest first.
#[tool]
async fn list_notes(#[depends(NOTES_FILE)] file: String) -> Result<String, std::io::Error> {
    match tokio::fs::read_to_string(&file).await {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok("No notes yet.".to_owned()),
        notes => notes,
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builder().tool(add_note::TOOL).tool(list_notes::TOOL).build()?;
    let server = tool_mcp::McpServer::builder(registry).name("notebook", "1.0.0").build();
    match std::env::args().nth(1).as_deref() {
        Some("stdio") => Ok(server.serve_stdio().await?),
        Some("http") => Ok(server.serve_http(std::env::args().nth(2).unwrap_or("127.0.0.1:8080".into())).await?),
        _ => Err("usage: mcp_server stdio | mcp_server http [ADDR]".into()),
    }
}
