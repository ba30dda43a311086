//! An agent loop on genai's client (Anthropic, Gemini, OpenAI and more) with two `#[tool]`
//! functions.
//!
//!     cargo run -p tool-genai --example genai_agent
//!
//! With `GENAI_MODEL` set (e.g. `claude-sonnet-4-5` with `ANTHROPIC_API_KEY`, or
//! `gemini-2.5-flash` with `GEMINI_API_KEY`; build with `--features rustls` for https) it asks
//! that model. Without it, the model is a scripted Anthropic Messages provider on 127.0.0.1
//! (`provider-mock`, answering in Anthropic's recorded wire format) so the example runs offline:
//! two parallel calls, then the answer. Copy `main` and the tools; the `offline` function is only
//! the stand-in.

use genai::chat::{ChatMessage, ChatRequest};
use tool_runtime::prelude::*;

/// A text with its characters in reverse order.
#[tool]
fn reverse(
    /// The text to reverse.
    text: String,
) -> String {
    text.chars().rev().collect()
}

/// How many vowels (a, e, i, o, u, either case) a text has.
#[tool]
fn count_vowels(
    /// The text to count in.
    text: String,
) -> usize {
    text.chars().filter(|c| "aeiouAEIOU".contains(*c)).count()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builder().tool(reverse::TOOL).tool(count_vowels::TOOL).build()?;
    let (client, model, _offline) = match std::env::var("GENAI_MODEL") {
        Ok(model) => (genai::Client::builder().build()?, model, None),
        Err(_) => offline().await?,
    };

    let mut request = ChatRequest::new(vec![ChatMessage::user("Reverse the word 'stressed' and count its vowels.")])
        .with_tools(tool_genai::tools(registry.definitions()));
    for _turn in 0..8 {
        let response = client.exec_chat(&model, request.clone(), None).await?;
        let turn = tool_genai::answer(&registry, &response, &ToolContext::new()).await;
        for result in &turn.results {
            println!("tool {} -> {}", result.tool_name, result.text());
        }
        if turn.results.is_empty() {
            println!("{}", response.first_text().unwrap_or_default());
            return Ok(());
        }
        request = request.append_messages(turn.messages);
    }
    Err("no answer within 8 turns".into())
}

/// The stand-in for Anthropic: a scripted Messages provider on 127.0.0.1 that calls both tools
/// at once, then answers; genai's client sends there. Dropping the returned server stops it.
async fn offline() -> Result<(genai::Client, String, Option<provider_mock::MockProvider>), Box<dyn std::error::Error>> {
    let mut calls = provider_mock::fixture("anthropic-tool-use-parallel-1.json");
    calls["content"] = serde_json::json!([
        {"type": "tool_use", "id": "toolu_1", "name": "reverse", "input": {"text": "stressed"}},
        {"type": "tool_use", "id": "toolu_2", "name": "count_vowels", "input": {"text": "stressed"}},
    ]);
    let mut answer = calls.clone();
    answer["content"] =
        serde_json::json!([{"type": "text", "text": "'stressed' reversed is 'desserts'; it has 2 vowels."}]);
    answer["stop_reason"] = serde_json::json!("end_turn");
    let server = provider_mock::MockProvider::start(vec![calls, answer]).await?;
    let base = format!("{}/v1/", server.url());
    let client = genai::Client::builder()
        .with_service_target_resolver_fn(move |mut target: genai::ServiceTarget| {
            target.endpoint = genai::resolver::Endpoint::from_owned(base.clone());
            target.auth = genai::resolver::AuthData::from_single("offline");
            Ok(target)
        })
        .build()?;
    Ok((client, "claude-haiku-4-5".to_owned(), Some(server)))
}
