//! An agent loop on async-openai's Chat Completions client with two `#[tool]` functions.
//!
//!     cargo run -p tool-openai --example openai_agent
//!
//! With `OPENAI_API_KEY` set it asks OpenAI (`OPENAI_BASE_URL` for another endpoint of the same
//! API, `OPENAI_MODEL` for the model, default `gpt-4.1-mini`). Without it, the model is a scripted
//! provider on 127.0.0.1 (`provider-mock`, answering in OpenAI's recorded wire format) so the
//! example runs offline: two parallel calls, then the answer. Copy `main` and the tools; the
//! `offline` function is only the stand-in.

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionRequestMessage, ChatCompletionRequestUserMessage, CreateChatCompletionRequestArgs,
};
use tool_runtime::prelude::*;

/// Add two integers.
#[tool]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a + b
}

/// The length of a text, in Unicode scalar values.
#[tool]
fn length(
    /// The text to measure.
    text: String,
) -> usize {
    text.chars().count()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builder().tool(add::TOOL).tool(length::TOOL).build()?;
    let (config, _offline) = match std::env::var("OPENAI_API_KEY") {
        Ok(key) => {
            let base = std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com/v1".to_owned());
            (OpenAIConfig::new().with_api_key(key).with_api_base(base), None)
        }
        Err(_) => offline().await?,
    };
    let client = Client::with_config(config);
    let model = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4.1-mini".to_owned());

    let tools = tool_openai::chat::tools(registry.definitions())?;
    let mut messages: Vec<ChatCompletionRequestMessage> =
        vec![ChatCompletionRequestUserMessage::from("What is 17 + 25, and how long is the word 'ownership'?").into()];
    for _turn in 0..8 {
        let request = CreateChatCompletionRequestArgs::default()
            .model(model.as_str())
            .messages(messages.clone())
            .tools(tools.clone())
            .build()?;
        let response = client.chat().create(request).await?;
        let Some(choice) = response.choices.first() else { return Err("the response has no choice".into()) };
        let turn = tool_openai::chat::answer(&registry, &choice.message, &ToolContext::new()).await?;
        for result in &turn.results {
            println!("tool {} -> {}", result.tool_name, result.text());
        }
        if turn.results.is_empty() {
            println!("{}", choice.message.content.as_deref().unwrap_or_default());
            return Ok(());
        }
        messages.extend(turn.messages);
    }
    Err("no answer within 8 turns".into())
}

/// The stand-in for OpenAI: a scripted provider on 127.0.0.1 that calls both tools at once, then
/// answers. Dropping the returned server stops it.
async fn offline() -> std::io::Result<(OpenAIConfig, Option<provider_mock::MockProvider>)> {
    use provider_mock::sample::openai_chat;
    let server = provider_mock::MockProvider::start(vec![
        openai_chat(&[("call_1", "add", r#"{"a":17,"b":25}"#), ("call_2", "length", r#"{"text":"ownership"}"#)], ""),
        openai_chat(&[], "17 + 25 = 42, and 'ownership' has 9 letters."),
    ])
    .await?;
    let config = OpenAIConfig::new().with_api_key("offline").with_api_base(format!("{}/v1", server.url()));
    Ok((config, Some(server)))
}
