//! Running one call: `tools/call` ([`tool`]), `prompts/get` ([`prompt`]) and task runs
//! ([`task`]), with their progress reports ([`progress`]).

mod progress;
mod prompt;
mod task;
mod tool;
