//! `toolbox`: the standard tools for any MCP client and any provider, from one binary.
//!
//! - `toolbox list [--format FORMAT] [--set fs,todo]`: the tool definitions as JSON on stdout.
//! - `toolbox call NAME [ARGS_JSON | -]`: runs one tool call and prints its `ToolMessage` as JSON.
//!   `call` and `run` draw a progress bar on standard error, when it is a terminal, for calls that
//!   report progress (see [`bars`]).
//! - `toolbox run RESPONSE.json [--provider ID]`: reads a recorded provider response, runs its
//!   tool calls as one turn and prints the tool results in that provider's request shape.
//! - `toolbox mcp [--set fs,todo] [--http ADDR]`: an MCP server on standard input and output, or
//!   on Streamable HTTP at `http://ADDR/mcp` (see [`mcp`]).
//!
//! Global options (accepted before or after the command): `--root DIR`, `--state-dir DIR`,
//! `--session ID`, `--store file|redis://HOST:PORT/DB`, `--allow external,exec,unconfined-exec`,
//! `--max-processes N`, `--max-cpu-seconds SECS`, `--max-address-space-bytes BYTES`,
//! `--max-file-size-bytes BYTES` (the limits of each shell command), `--max-session-memory-bytes
//! BYTES`, `--max-home-bytes BYTES` (of each session's commands together), `--exec-user
//! owner|server|UID[:GID]` (who they run as),
//! `--config FILE` (the tools of the MCP servers of an `mcpServers` file join the standard ones:
//! `toolbox mcp --config FILE` is a gateway), `--code-mode` and its limits (`--code-wall-time-ms`,
//! `--code-memory-bytes`, `--code-stack-bytes`, `--code-max-tool-calls`, `--code-max-in-flight`,
//! `--code-max-result-bytes`, `--code-max-code-bytes`, `--code-max-programs`; see [`code`]), `-v`
//! (see [`setup`]).
//!
//! Exit codes:
//! - 0: success. For `run`, a tool call that failed is still an answer for the model: it is
//!   printed as an error result.
//! - 1: `call` printed a message with `is_error: true`; or the input could not be used
//!   (unreadable file, not JSON, not a provider response, a bad root, state dir or session id),
//!   said on stderr as `toolbox: <what to change>`.
//! - 2: bad command-line usage (clap's code), said on stderr.
//!
//! Standard output carries only the JSON result (nothing at all for `mcp`, whose standard output
//! is the protocol stream); logs go to standard error. `mcp` exits 0 after SIGTERM or Ctrl-C.
#![doc = include_str!("../README.md")]

mod bars;
mod call;
mod code;
mod list;
mod mcp;
mod policy;
mod run;
mod setup;
mod tasks;
mod telemetry;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::list::Format;
use crate::run::ProviderArg;
use crate::setup::{Global, Setup};

/// The standard agent tools (read, write, edit, glob, grep, todo_*, ...), for any MCP client and
/// any provider.
#[derive(Debug, Parser)]
#[command(
    name = "toolbox",
    version,
    about,
    after_help = "Exit codes: 0 success; 1 `call` printed an error result, or the input could not be used \
                  (said on stderr); 2 bad command-line usage."
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    /// Export OpenTelemetry spans and metrics over OTLP/HTTP (protobuf) to this base URL, e.g.
    /// `http://127.0.0.1:4318` (`/v1/traces` and `/v1/metrics` are added) [default:
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, else no export]. The standard `OTEL_*` variables apply. A URL
    /// with a user name or password is refused (give it in `OTEL_EXPORTER_OTLP_HEADERS`).
    #[arg(long, global = true, value_name = "URL")]
    otlp_endpoint: Option<String>,
    #[command(subcommand)]
    command: Command,
}

// `mcp` has many flags and the others few; the one value is parsed once per run.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Print the tool definitions as JSON, in a provider's shape.
    List {
        /// The shape: the canonical definitions, a provider's `tools` array, or MCP `tools/list`
        /// entries.
        #[arg(long, value_enum, default_value_t = Format::Canonical)]
        format: Format,
        /// Only these sets, comma-separated: fs, todo, cache, control, media, web, exec (web needs
        /// `--allow external`, exec `--allow exec`), or the name of a `--config` server (its
        /// tools).
        #[arg(long, value_delimiter = ',')]
        set: Vec<String>,
    },
    /// Run one tool call and print its tool message as JSON; exit 1 when it is an error. A call
    /// that reports progress draws a bar on standard error when it is a terminal.
    Call {
        /// The tool name, e.g. `read`.
        name: String,
        /// The arguments object as JSON text, or `-` to read it from standard input [default:
        /// no arguments].
        arguments: Option<String>,
        /// The tool call id, which is also the output cache ref id of the result [default: `call_`
        /// and 16 hex digits, new for every call, so that no call overwrites another's output].
        #[arg(long)]
        call_id: Option<String>,
    },
    /// Run the tool calls of a recorded provider response as one turn; print the tool results in
    /// that provider's request shape. Calls that report progress draw bars on standard error when
    /// it is a terminal.
    Run {
        /// The response body (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages or
        /// Gemini generateContent); `-` reads standard input.
        response: PathBuf,
        /// The provider, when detection from the body's shape is not wanted.
        #[arg(long, value_enum)]
        provider: Option<ProviderArg>,
    },
    /// Serve the tools over MCP on standard input and output until the client closes the stream,
    /// or on Streamable HTTP with `--http`. Progress is sent as notifications to a client that
    /// gives a progress token; tools with an output schema return structured content. SIGTERM or
    /// Ctrl-C: no new calls, running ones get the grace period, then are cancelled; exit 0.
    Mcp {
        /// Only these sets, comma-separated: fs, todo, cache, control, media, web, exec (web needs
        /// `--allow external`, exec `--allow exec`), or the name of a `--config` server (its
        /// tools).
        #[arg(long, value_delimiter = ',')]
        set: Vec<String>,
        /// Serve stateless Streamable HTTP at `http://ADDR/mcp` instead of standard input and
        /// output, e.g. `127.0.0.1:8080` (port 0: a free port). The bound address is said on
        /// standard error.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// With `--http`: also accept requests whose `Host` is HOST (or HOST:PORT), beside
        /// `localhost`, `127.0.0.1` and `::1`. Repeat for more hosts. Other hosts get 403 (DNS
        /// rebinding protection).
        #[arg(long, value_name = "HOST", requires = "http")]
        allowed_host: Vec<String>,
        /// With `--http`: also serve clients of protocol versions before 2026-07-28 that need a
        /// session (`Mcp-Session-Id`, kept in this process).
        #[arg(long, requires = "http")]
        legacy_sessions: bool,
        #[command(flatten)]
        limits: mcp::HttpFlags,
        #[command(flatten)]
        auth: mcp::AuthFlags,
        #[command(flatten)]
        bounds: mcp::BoundFlags,
        #[command(flatten)]
        idempotency: mcp::IdempotencyFlags,
        /// How long running calls may go on after SIGTERM or Ctrl-C before they are cancelled,
        /// in milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 10_000)]
        grace_period_ms: u64,
        /// Run the calls of tools with one of these tags (e.g. `exec`) as MCP tasks (the tasks
        /// extension, SEP-2663) for clients that declare it: the call answers at once with a task
        /// id, and `tasks/get` gives its state and result from the store of `--store` (with
        /// `redis://`, on any worker). Other clients get the result in the request.
        /// Comma-separated or repeated.
        #[arg(long, value_delimiter = ',', value_name = "TAGS")]
        task: Vec<String>,
        #[command(flatten)]
        task_flags: tasks::TaskFlags,
    },
}

/// What a command leaves on standard output, and how the process exits.
struct Outcome {
    stdout: Option<String>,
    code: ExitCode,
}

impl Outcome {
    fn printed(stdout: String) -> Self {
        Self { stdout: Some(stdout), code: ExitCode::SUCCESS }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let telemetry = match telemetry::init(log_level(cli.global.verbose), cli.otlp_endpoint.as_deref()) {
        Ok(telemetry) => telemetry,
        Err(message) => {
            eprintln!("toolbox: {message}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = execute(cli);
    telemetry.shutdown();
    match outcome {
        Ok(outcome) => {
            if let Some(stdout) = outcome.stdout {
                println!("{stdout}");
            }
            outcome.code
        }
        Err(message) => {
            eprintln!("toolbox: {message}");
            ExitCode::FAILURE
        }
    }
}

fn execute(cli: Cli) -> Result<Outcome, String> {
    let setup = Setup::new(&cli.global)?;
    match cli.command {
        Command::List { format, set } => list::list(&setup, format, &set).map(Outcome::printed),
        Command::Call { name, arguments, call_id } => {
            let (stdout, is_error) = call::call(&setup, &name, arguments.as_deref(), call_id)?;
            Ok(Outcome { stdout: Some(stdout), code: if is_error { ExitCode::FAILURE } else { ExitCode::SUCCESS } })
        }
        Command::Run { response, provider } => {
            run::run(&setup, &response, provider.map(Into::into)).map(Outcome::printed)
        }
        Command::Mcp {
            set,
            http,
            allowed_host,
            legacy_sessions,
            limits,
            auth,
            bounds,
            idempotency,
            grace_period_ms,
            task,
            task_flags,
        } => {
            let serving = mcp::Serving {
                http,
                allowed_hosts: allowed_host,
                legacy_sessions,
                limits,
                auth,
                grace: std::time::Duration::from_millis(grace_period_ms),
                task_tags: task,
                tasks: task_flags,
                bounds,
                idempotency,
            };
            mcp::serve(&setup, &set, &serving).map(|()| Outcome { stdout: None, code: ExitCode::SUCCESS })
        }
    }
}

/// The level of the logs, which go to standard error only: standard output is the result, or the
/// MCP stream ([`telemetry::init`]; rmcp's own lines stay at WARN, `telemetry::log_filter`).
fn log_level(verbose: u8) -> tracing::Level {
    match verbose {
        0 => tracing::Level::WARN,
        1 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    }
}
