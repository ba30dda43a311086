//! Tool results of every content kind, as an MCP client receives them: audio, embedded text and
//! blob resources and resource links keep their own block, field for field.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use tool_mcp::McpServer;
use tool_runtime::{ContentPart, Registry, tool};

/// Return a short clip.
#[tool]
fn clip() -> Vec<ContentPart> {
    vec![ContentPart::text("one clip:"), ContentPart::audio("UklGRg==", "audio/wav")]
}

/// Return two embedded resources.
#[tool]
fn embedded() -> Vec<ContentPart> {
    vec![
        ContentPart::resource_text("file:///notes.md", Some("text/markdown".to_owned()), "# notes"),
        ContentPart::resource_blob("file:///a.bin", None, "AAEC"),
    ]
}

/// Return two links.
#[tool]
fn links() -> Vec<ContentPart> {
    vec![
        ContentPart::resource_link("file:///plain.txt", "plain.txt"),
        ContentPart::ResourceLink {
            uri: "file:///report.pdf".to_owned(),
            name: "report.pdf".to_owned(),
            title: Some("The report".to_owned()),
            description: Some("Quarterly figures".to_owned()),
            media_type: Some("application/pdf".to_owned()),
        },
    ]
}

/// The `content` of the result of calling `name` with no arguments.
async fn content_of(name: &'static str) -> Value {
    let registry = Registry::builder().tool(clip::TOOL).tool(embedded::TOOL).tool(links::TOOL).build().unwrap();
    let server = McpServer::builder(registry).build();
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move { server.serve(server_io).await.unwrap().waiting().await });
    let client = ().serve(client_io).await.unwrap();
    let result = client.call_tool(CallToolRequestParams::new(name)).await.unwrap();
    assert_eq!(result.is_error, Some(false));
    client.cancel().await.unwrap();
    serde_json::to_value(&result.content).unwrap()
}

#[tokio::test]
async fn audio_is_an_audio_block_after_the_text() {
    assert_eq!(
        content_of("clip").await,
        json!([
            {"type": "text", "text": "one clip:"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        ])
    );
}

#[tokio::test]
async fn embedded_resources_are_resource_blocks_with_text_or_blob() {
    assert_eq!(
        content_of("embedded").await,
        json!([
            {"type": "resource", "resource": {"uri": "file:///notes.md", "mimeType": "text/markdown", "text": "# notes"}},
            {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAEC"}},
        ])
    );
}

#[tokio::test]
async fn resource_links_are_resource_link_blocks_with_their_optional_fields() {
    assert_eq!(
        content_of("links").await,
        json!([
            {"type": "resource_link", "uri": "file:///plain.txt", "name": "plain.txt"},
            {
                "type": "resource_link",
                "uri": "file:///report.pdf",
                "name": "report.pdf",
                "title": "The report",
                "description": "Quarterly figures",
                "mimeType": "application/pdf",
            },
        ])
    );
}
