//! The tools the MCP conformance suite calls, and the resources, prompts and completion it reads
//! (the module `catalog`), served on Streamable HTTP at `http://ADDR/mcp`
//! (`cargo run -p examples --example conformance_server -- 127.0.0.1:8080`; the address defaults
//! to `127.0.0.1:0`, a free port). The first line on standard output is the bound URL. SIGTERM or
//! Ctrl-C stops it.

use tool_runtime::prelude::*;

#[path = "conformance_server/catalog.rs"]
mod catalog;

/// A 1x1 transparent PNG.
const PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A WAV file of one silent 8-bit mono sample at 8 000 Hz.
const SILENT_WAV: &str = "UklGRiUAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQEAAACA";

/// Returns a simple text response.
#[tool]
fn test_simple_text() -> String {
    "This is a simple text response for testing.".to_owned()
}

/// Returns a 1x1 PNG image.
#[tool]
fn test_image_content() -> Vec<ContentPart> {
    vec![ContentPart::image(PIXEL_PNG, "image/png")]
}

/// Returns a short WAV clip.
#[tool]
fn test_audio_content() -> Vec<ContentPart> {
    vec![ContentPart::audio(SILENT_WAV, "audio/wav")]
}

/// Returns an embedded text resource.
#[tool]
fn test_embedded_resource() -> Vec<ContentPart> {
    vec![ContentPart::resource_text(
        "test://embedded-resource",
        Some("text/plain".to_owned()),
        "This is an embedded resource content.",
    )]
}

/// Returns text, an image and an embedded JSON resource.
#[tool]
fn test_multiple_content_types() -> Vec<ContentPart> {
    vec![
        ContentPart::text("Multiple content types test:"),
        ContentPart::image(PIXEL_PNG, "image/png"),
        ContentPart::resource_text(
            "test://mixed-content-resource",
            Some("application/json".to_owned()),
            r#"{"test":"data","value":123}"#,
        ),
    ]
}

/// Always fails.
#[tool]
fn test_error_handling() -> Result<String, String> {
    Err("This tool intentionally returns an error for testing".to_owned())
}

/// Reports progress 0, 50 and 100 of 100, 50 ms apart.
#[tool]
async fn test_tool_with_progress(ctx: &ToolContext) -> String {
    for done in [0, 50, 100] {
        ctx.progress(done, Some(100), &format!("{done} of 100"));
        if done < 100 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    "Progress test completed".to_owned()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builder()
        .tool(test_simple_text::TOOL)
        .tool(test_image_content::TOOL)
        .tool(test_audio_content::TOOL)
        .tool(test_embedded_resource::TOOL)
        .tool(test_multiple_content_types::TOOL)
        .tool(test_error_handling::TOOL)
        .tool(test_tool_with_progress::TOOL)
        .build()?;
    let server = catalog::declare(tool_mcp::McpServer::builder(registry).name("conformance", "1.0.0"))?.build();
    let addr = std::env::args().nth(1).unwrap_or("127.0.0.1:0".into());
    let listener = tokio::net::TcpListener::bind(&addr).await.map_err(|e| format!("cannot bind {addr}: {e}"))?;
    println!("http://{}{}", listener.local_addr()?, tool_mcp::MCP_PATH);
    Ok(server.serve_http_on(listener, tool_mcp::shutdown_signal()).await?)
}
