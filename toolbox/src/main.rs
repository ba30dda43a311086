//! `toolbox`: the standard tools from one binary.
//!
//! - `toolbox list [--format FORMAT] [--set fs,todo]`: the tool definitions as JSON on stdout.
//! - `toolbox run RESPONSE.json [--root DIR] [--provider ID]`: reads a recorded provider response,
//!   runs its tool calls as one turn and prints the tool results in that provider's request shape.
//!
//! Exit codes: 0 success (a tool call that failed is still an answer for the model: it is printed
//! as an error result); 1 the input could not be used (unreadable file, not JSON, not a provider
//! response, a bad root); 2 bad command-line usage (clap's code).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::Value;
use tool_runtime::provider::Provider;
use tool_runtime::{Registry, ToolContext};
use tool_std::sandbox::{SANDBOX, Sandbox};

/// The standard agent tools (read, glob, grep, todo_*), from one binary.
#[derive(Debug, Parser)]
#[command(name = "toolbox", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the tool definitions as JSON, in a provider's shape.
    List {
        /// The shape: the canonical definitions, or a provider's `tools` array.
        #[arg(long, value_enum, default_value_t = Format::Canonical)]
        format: Format,
        /// Only these sets, comma-separated (fs, todo).
        #[arg(long, value_delimiter = ',')]
        set: Vec<String>,
    },
    /// Run the tool calls of a recorded provider response as one turn; print the tool results in
    /// that provider's request shape.
    Run {
        /// The response body (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages or
        /// Gemini generateContent); `-` reads standard input.
        response: PathBuf,
        /// The workspace root the file tools are confined to.
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// The provider, when detection from the body's shape is not wanted.
        #[arg(long, value_enum)]
        provider: Option<ProviderArg>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Canonical,
    OpenaiChat,
    OpenaiResponses,
    Anthropic,
    Gemini,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ProviderArg {
    OpenaiChat,
    OpenaiResponses,
    Anthropic,
    Gemini,
}

impl From<ProviderArg> for Provider {
    fn from(arg: ProviderArg) -> Self {
        match arg {
            ProviderArg::OpenaiChat => Provider::OpenAiChat,
            ProviderArg::OpenaiResponses => Provider::OpenAiResponses,
            ProviderArg::Anthropic => Provider::Anthropic,
            ProviderArg::Gemini => Provider::Gemini,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::List { format, set } => list(format, &set),
        Command::Run { response, root, provider } => run(&response, &root, provider.map(Provider::from)),
    };
    match outcome {
        Ok(output) => {
            println!("{output}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("toolbox: {message}");
            ExitCode::FAILURE
        }
    }
}

fn registry(sets: &[String], sandbox: Option<Sandbox>) -> Result<Registry, String> {
    let mut builder = tool_std::registry_builder();
    if !sets.is_empty() {
        builder = builder.sets(sets.iter().cloned());
    }
    if let Some(sandbox) = sandbox {
        builder = builder.override_dependency(&SANDBOX, sandbox);
    }
    builder.build().map_err(|e| e.to_string())
}

fn list(format: Format, sets: &[String]) -> Result<String, String> {
    let registry = registry(sets, None)?;
    let definitions = registry.definitions();
    let value = match format {
        Format::Canonical => serde_json::to_value(definitions).map_err(|e| e.to_string())?,
        Format::OpenaiChat => Value::Array(Provider::OpenAiChat.render_tools(definitions)),
        Format::OpenaiResponses => Value::Array(Provider::OpenAiResponses.render_tools(definitions)),
        Format::Anthropic => Value::Array(Provider::Anthropic.render_tools(definitions)),
        Format::Gemini => Value::Array(Provider::Gemini.render_tools(definitions)),
    };
    serde_json::to_string_pretty(&value).map_err(|e| e.to_string())
}

fn run(response: &PathBuf, root: &PathBuf, provider: Option<Provider>) -> Result<String, String> {
    let text = if response.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("cannot read standard input: {e}"))?
    } else {
        std::fs::read_to_string(response).map_err(|e| format!("cannot read {}: {e}", response.display()))?
    };
    let body: Value = serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", response.display()))?;
    let provider = match provider {
        Some(provider) => provider,
        None => Provider::detect(&body).ok_or_else(|| {
            format!(
                "{} is not an OpenAI Chat Completions, OpenAI Responses, Anthropic Messages or Gemini response; \
                 pass --provider to say which",
                response.display()
            )
        })?,
    };
    let calls = provider.parse_tool_calls(&body).map_err(|e| e.to_string())?;
    let sandbox = Sandbox::new(root).map_err(|e| format!("cannot use --root {}: {e}", root.display()))?;
    let registry = registry(&[], Some(sandbox))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let messages = runtime.block_on(registry.call_batch(&calls, &ToolContext::new()));
    serde_json::to_string_pretty(&provider.render_tool_results(&messages)).map_err(|e| e.to_string())
}
