//! The "control" set: [`done()`], the tool a model calls to end its run.
//!
//! `done` returns the dispatcher's completion signal ([`ToolResult::done`]): its message carries
//! `done: true`, and [`Registry::call_batch`](tool_runtime::Registry::call_batch) reports
//! [`TurnStop::Done`](tool_runtime::TurnStop::Done) with the final message, so an agent loop stops
//! without matching on the tool name.

use tool_runtime::{ToolResult, tool};

/// Why `done` refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DoneError {
    /// The message is empty or blank.
    #[error("message is empty; give the final answer or a summary of what was done")]
    EmptyMessage,
}

/// Finish the task: call once, when the work is complete; the run ends with this call.
#[tool(set = "control", inline, sequential, tags(read_only))]
pub fn done(
    /// The final answer for the user.
    #[arg(length(min = 1))]
    message: String,
) -> Result<ToolResult, DoneError> {
    if message.trim().is_empty() {
        return Err(DoneError::EmptyMessage);
    }
    Ok(ToolResult::done(message))
}
