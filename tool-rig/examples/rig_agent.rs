//! A rig agent with two `#[tool]` functions.
//!
//!     cargo run -p tool-rig --example rig_agent
//!
//! With `OPENAI_API_KEY` set it asks OpenAI through rig (`OPENAI_BASE_URL` for another endpoint
//! of the same API, `OPENAI_MODEL` for the model, default `gpt-4.1-mini`; build with
//! `--features rustls` for https). Without it, the model is a scripted provider on 127.0.0.1
//! (`provider-mock`, answering in OpenAI's recorded wire format) so the example runs offline: two
//! parallel calls, then the answer. Copy `main` and the tools; the `offline` function is only the
//! stand-in.

use std::sync::Arc;

use rig_agent::AgentBuilder;
use rig_core::providers::openai::OpenAIConfig;
use tool_runtime::prelude::*;

/// Convert a temperature from degrees Celsius to degrees Fahrenheit.
#[tool]
fn to_fahrenheit(
    /// The temperature in °C.
    celsius: f64,
) -> f64 {
    celsius * 9.0 / 5.0 + 32.0
}

/// Whether a year of the Gregorian calendar is a leap year.
#[tool]
fn is_leap_year(
    /// The year, e.g. 2028.
    year: i32,
) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Arc::new(Registry::builder().tool(to_fahrenheit::TOOL).tool(is_leap_year::TOOL).build()?);
    let (config, _offline) = match std::env::var("OPENAI_API_KEY") {
        Ok(key) => {
            let base = std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com/v1".to_owned());
            (OpenAIConfig::new(key).with_base_url(base), None)
        }
        Err(_) => offline().await?,
    };
    let model = config.client().chat(std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4.1-mini".to_owned()));

    let tools = tool_rig::RigTools::new(registry);
    let agent = AgentBuilder::new(model).tool_server_handle(tools.tool_server()?.run()).add_hook(tools.hook()).build();
    let answer = agent.prompt("What is 21 °C in °F, and is 2028 a leap year?").max_turns(8).await?;
    println!("{}", answer.output());
    Ok(())
}

/// The stand-in for OpenAI: a scripted provider on 127.0.0.1 that calls both tools at once, then
/// answers. Dropping the returned server stops it.
async fn offline() -> std::io::Result<(OpenAIConfig, Option<provider_mock::MockProvider>)> {
    use provider_mock::sample::openai_chat;
    let server = provider_mock::MockProvider::start(vec![
        openai_chat(
            &[("call_1", "to_fahrenheit", r#"{"celsius":21}"#), ("call_2", "is_leap_year", r#"{"year":2028}"#)],
            "",
        ),
        openai_chat(&[], "21 °C is 69.8 °F, and 2028 is a leap year."),
    ])
    .await?;
    Ok((OpenAIConfig::new("offline").with_base_url(format!("{}/v1", server.url())), Some(server)))
}
