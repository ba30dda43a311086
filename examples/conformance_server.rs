//! The tools the MCP conformance suite calls, and the resources, prompts and completion it reads
//! (the module `catalog`), served on Streamable HTTP at `http://ADDR/mcp`
//! (`cargo run -p examples --example conformance_server -- 127.0.0.1:8080`; the address defaults
//! to `127.0.0.1:0`, a free port). The first line on standard output is the bound URL. SIGTERM or
//! Ctrl-C stops it. With the argument `stdio` it serves standard input and output instead; with
//! `--legacy-sessions` after the address it also keeps sessions for clients of protocol versions
//! before 2026-07-28 (the TypeScript SDK 1.32's).
//!
//! Besides the suite's tools it has `test_approval`, tagged `confirm`: it runs only once the user
//! accepts the approval the framework asks for (`examples/tests/talk_back.rs` drives it with the
//! official Python MCP SDK), and the task fixtures of the suite's `tasks-*` scenarios (`greet`,
//! `slow_compute`, `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input`,
//! `test_tool_with_task`), tagged as [`tool_mcp::tasks`] says.

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;
use tool_runtime::talk::Elicitation;
use tool_runtime::{LogLevel, SamplingRequest, TalkBackError};

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

/// Sends three log messages (info, warning, error) 50 ms apart; the client sees those at or
/// above the level it asked for, none when it asked for none.
#[tool]
async fn test_logging_tool(ctx: &ToolContext) -> String {
    for (level, text) in [
        (LogLevel::Info, "Tool execution started"),
        (LogLevel::Warning, "Tool processing data"),
        (LogLevel::Error, "Tool execution completed"),
    ] {
        ctx.log(level, text);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    "Logging test completed".to_owned()
}

/// The same as `test_logging_tool`, under the name of earlier suites.
#[tool]
async fn test_tool_with_logging(ctx: &ToolContext) -> String {
    test_logging_tool(ctx).await
}

/// Asks the client's model; fails with -32021 when the client did not declare `sampling`.
#[tool]
async fn test_missing_capability(ctx: &ToolContext) -> Result<String, TalkBackError> {
    let answer = ctx.sample(SamplingRequest::new("Say hello", 20)).await?;
    Ok(answer.text().unwrap_or_default().to_owned())
}

/// A name to greet.
#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

/// A yes or no.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// A colour.
#[derive(Deserialize, JsonSchema)]
struct Colour {
    color: String,
}

/// What an elicitation's answer says, for a greeting.
fn greeting(answer: Elicitation<Name>) -> String {
    match answer {
        Elicitation::Accept(Name { name }) => format!("Hello, {name}!"),
        Elicitation::Decline => "The user declined to give a name.".to_owned(),
        Elicitation::Cancel => "The user cancelled.".to_owned(),
    }
}

/// Asks the user's name (key `user_name`) and greets them.
#[tool]
async fn test_input_required_result_elicitation(ctx: &ToolContext) -> Result<String, TalkBackError> {
    Ok(greeting(ctx.elicit::<Name>("What is your name?").key("user_name").await?))
}

/// Asks the user's name while the call's response stream is open.
#[tool]
async fn test_streaming_elicitation(ctx: &ToolContext) -> Result<String, TalkBackError> {
    Ok(greeting(ctx.elicit::<Name>("What is your name?").key("user_name").await?))
}

/// Asks the client's model a question (key `capital_question`).
#[tool]
async fn test_input_required_result_sampling(ctx: &ToolContext) -> Result<String, TalkBackError> {
    let answer =
        ctx.sample_keyed("capital_question", SamplingRequest::new("What is the capital of France?", 100)).await?;
    Ok(format!("The model said: {}", answer.text().unwrap_or_default()))
}

/// Asks the client for its roots (key `client_roots`).
#[tool]
async fn test_input_required_result_list_roots(ctx: &ToolContext) -> Result<String, TalkBackError> {
    let roots = ctx.list_roots_keyed("client_roots").await?;
    let uris: Vec<&str> = roots.iter().map(|root| root.uri.as_str()).collect();
    Ok(format!("Roots: {}", uris.join(", ")))
}

/// Asks for a confirmation (key `confirm`); the answer comes back with the sealed request state.
#[tool]
async fn test_input_required_result_request_state(ctx: &ToolContext) -> Result<String, TalkBackError> {
    confirmed(ctx).await
}

/// The same as `test_input_required_result_request_state`: a tampered state is refused before
/// the tool runs.
#[tool]
async fn test_input_required_result_tampered_state(ctx: &ToolContext) -> Result<String, TalkBackError> {
    confirmed(ctx).await
}

async fn confirmed(ctx: &ToolContext) -> Result<String, TalkBackError> {
    match ctx.elicit::<Confirm>("Please confirm").key("confirm").await? {
        Elicitation::Accept(Confirm { ok }) => Ok(format!("state-ok: confirmed={ok}")),
        _ => Ok("state-ok: not confirmed".to_owned()),
    }
}

/// Asks the user, the model and the client's roots in one round.
#[tool]
async fn test_input_required_result_multiple_inputs(ctx: &ToolContext) -> Result<String, TalkBackError> {
    let (name, greeting, roots) = tokio::join!(
        ctx.elicit::<Name>("What is your name?").key("user_name").into_future(),
        ctx.sample_keyed("greeting", SamplingRequest::new("Generate a greeting", 50)),
        ctx.list_roots_keyed("client_roots"),
    );
    let name = match name? {
        Elicitation::Accept(Name { name }) => name,
        _ => "nobody".to_owned(),
    };
    Ok(format!("{} {name}; {} roots", greeting?.text().unwrap_or_default(), roots?.len()))
}

/// Asks two questions in two rounds (keys `step1`, `step2`).
#[tool]
async fn test_input_required_result_multi_round(ctx: &ToolContext) -> Result<String, TalkBackError> {
    let Elicitation::Accept(Name { name }) = ctx.elicit::<Name>("Step 1: What is your name?").key("step1").await?
    else {
        return Ok("The user stopped at step 1.".to_owned());
    };
    let Elicitation::Accept(Colour { color }) =
        ctx.elicit::<Colour>("Step 2: What is your favorite color?").key("step2").await?
    else {
        return Ok("The user stopped at step 2.".to_owned());
    };
    Ok(format!("{name} likes {color}."))
}

/// Asks only what the client declared it can answer: the user when it has `elicitation`, the
/// model when it has `sampling`.
#[tool]
async fn test_input_required_result_capabilities(ctx: &ToolContext) -> Result<String, TalkBackError> {
    let capabilities = ctx.client_capabilities();
    let mut said = Vec::new();
    if capabilities.elicitation {
        said.push(greeting(ctx.elicit::<Name>("What is your name?").key("user_name").await?));
    }
    if capabilities.sampling {
        let answer = ctx.sample_keyed("greeting", SamplingRequest::new("Generate a greeting", 50)).await?;
        said.push(answer.text().unwrap_or_default().to_owned());
    }
    Ok(said.join(" "))
}

/// Runs only with the user's approval (tag `confirm`: the framework asks before the call).
#[tool(tags(confirm))]
fn test_approval(what: String) -> String {
    format!("approved: {what}")
}

/// Greets someone (runs in the request, never as a task).
#[tool]
fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

/// Sleeps `seconds` seconds, then says so; a task for clients with the tasks extension.
#[tool(tags(task))]
async fn slow_compute(
    /// How long to work, in seconds.
    seconds: u64,
    /// A label echoed in the result.
    label: Option<String>,
) -> String {
    tokio::time::sleep(std::time::Duration::from_secs(seconds)).await;
    format!("computed {} in {seconds} s", label.unwrap_or_default())
}

/// Fails with a tool error after a second; only runs as a task.
#[tool(tags(task_required))]
async fn failing_job() -> Result<String, String> {
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    Err("the job failed, as it always does".to_owned())
}

/// Panics: the task fails with a JSON-RPC error.
#[tool(tags(task))]
async fn protocol_error_job() -> String {
    tokio::task::yield_now().await;
    panic!("protocol_error_job always panics")
}

/// A confirmation of a deletion.
#[derive(Deserialize, JsonSchema)]
struct DeleteConfirm {
    confirm: bool,
}

/// Asks the user to confirm (key `confirm`), then deletes nothing and says what it would do.
#[tool(tags(task))]
async fn confirm_delete(ctx: &ToolContext, filename: String) -> Result<String, TalkBackError> {
    match ctx.elicit::<DeleteConfirm>(format!("Delete {filename}?")).key("confirm").await? {
        Elicitation::Accept(DeleteConfirm { confirm: true }) => Ok(format!("deleted {filename}")),
        _ => Ok(format!("kept {filename}")),
    }
}

/// A name, and maybe a confirmation.
#[derive(Deserialize, JsonSchema)]
struct NameAndConfirm {
    name: String,
    confirm: Option<bool>,
}

/// Asks two questions at once (keys `first`, `second`).
#[tool(tags(task))]
async fn multi_input(ctx: &ToolContext) -> Result<String, TalkBackError> {
    let (first, second) = tokio::join!(
        ctx.elicit::<NameAndConfirm>("First name?").key("first").into_future(),
        ctx.elicit::<NameAndConfirm>("Second name?").key("second").into_future(),
    );
    let name = |answer: Elicitation<NameAndConfirm>| match answer {
        Elicitation::Accept(NameAndConfirm { name, confirm }) => format!("{name} ({})", confirm.unwrap_or(false)),
        _ => "nobody".to_owned(),
    };
    Ok(format!("{} and {}", name(first?), name(second?)))
}

/// Asks the user's name in the request (key `user_name`), then greets them as a task.
#[tool(tags(task_required, task_after_input))]
async fn test_tool_with_task(ctx: &ToolContext) -> Result<String, TalkBackError> {
    Ok(greeting(ctx.elicit::<Name>("What is your name?").key("user_name").await?))
}

/// A tool whose input schema is served exactly as written (no canonical pass): the suite's
/// JSON Schema 2020-12 and SEP-2243 header fixtures. A call answers with its arguments.
struct AsWritten {
    definition: ToolDefinition,
}

impl AsWritten {
    fn tool(name: &str, description: &str, input_schema: serde_json::Value) -> std::sync::Arc<dyn Tool> {
        let definition = ToolDefinition {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema,
            set: None,
            tags: Vec::new(),
            strict: None,
            output_schema: None,
            callers: tool_runtime::Callers::Direct,
        };
        std::sync::Arc::new(Self { definition })
    }
}

impl Tool for AsWritten {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(
        &'a self,
        arguments: &'a str,
        _ctx: &'a ToolContext,
    ) -> tool_runtime::BoxFuture<'a, Result<ToolResult, ToolError>> {
        Box::pin(async move { Ok(ToolResult::text(format!("arguments: {arguments}"))) })
    }
}

/// The JSON Schema 2020-12 fixture: `$schema`, `$defs` with an `$anchor`, `allOf`/`anyOf`,
/// `if`/`then`/`else` and `additionalProperties`, all of which MCP clients must receive.
fn json_schema_2020_12_tool() -> std::sync::Arc<dyn Tool> {
    AsWritten::tool(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        }),
    )
}

/// The SEP-2243 fixture: `region` travels in the `Mcp-Param-Region` header too, which the server
/// checks against the body (rmcp's Streamable HTTP service does, from this schema).
fn test_custom_headers() -> std::sync::Arc<dyn Tool> {
    AsWritten::tool(
        "test_custom_headers",
        "Echoes a region that is also sent as a header",
        serde_json::json!({
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"]
        }),
    )
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
        .tool(test_logging_tool::TOOL)
        .tool(test_tool_with_logging::TOOL)
        .tool(test_missing_capability::TOOL)
        .tool(test_streaming_elicitation::TOOL)
        .tool(test_input_required_result_elicitation::TOOL)
        .tool(test_input_required_result_sampling::TOOL)
        .tool(test_input_required_result_list_roots::TOOL)
        .tool(test_input_required_result_request_state::TOOL)
        .tool(test_input_required_result_tampered_state::TOOL)
        .tool(test_input_required_result_multiple_inputs::TOOL)
        .tool(test_input_required_result_multi_round::TOOL)
        .tool(test_input_required_result_capabilities::TOOL)
        .tool(test_approval::TOOL)
        .tool(greet::TOOL)
        .tool(slow_compute::TOOL)
        .tool(failing_job::TOOL)
        .tool(protocol_error_job::TOOL)
        .tool(confirm_delete::TOOL)
        .tool(multi_input::TOOL)
        .tool(test_tool_with_task::TOOL)
        .tool_dyn(json_schema_2020_12_tool())
        .tool_dyn(test_custom_headers())
        .build()?;
    let addr = std::env::args().nth(1).unwrap_or("127.0.0.1:0".into());
    // `--legacy-sessions` after the address: sessions for clients of protocol versions before
    // 2026-07-28, whose questions to the client are server-to-client requests on the session.
    let legacy = std::env::args().nth(2).as_deref() == Some("--legacy-sessions");
    let builder = tool_mcp::McpServer::builder(registry).name("conformance", "1.0.0").legacy_session_mode(legacy);
    let server = catalog::declare(builder)?.build();
    if addr == "stdio" {
        return Ok(server.serve_stdio().await?);
    }
    let listener = tokio::net::TcpListener::bind(&addr).await.map_err(|e| format!("cannot bind {addr}: {e}"))?;
    println!("http://{}{}", listener.local_addr()?, tool_mcp::MCP_PATH);
    Ok(server.serve_http_on(listener, tool_mcp::shutdown_signal()).await?)
}
