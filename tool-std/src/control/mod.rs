//! The "control" set: [`done()`], the tool a model calls to end its run.
//!
//! The dispatcher's completion signal is not part of the runtime yet: until it is, `done` returns
//! its final message as an ordinary text result, and an agent loop ends the run when it sees a
//! successful `done` call (`message.tool_name == "done" && !message.is_error`). When the runtime
//! gains the completion signal, `done` returns it with the same message, so the loop can stop
//! without matching on the tool name.

use tool_runtime::tool;

/// Why `done` refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DoneError {
    /// The message is empty or blank.
    #[error("message is empty; give the final answer or a summary of what was done")]
    EmptyMessage,
}

/// Finish the task: call this once, when the work is complete, with the final answer for the user
/// (what was done, what is left, anything they must know). The run ends after this call; do not
/// call other tools with it.
///
/// Returns the message unchanged (the completion signal of the run).
#[tool(set = "control", sequential)]
pub fn done(
    /// The final answer or summary for the user; not empty.
    message: String,
) -> Result<String, DoneError> {
    if message.trim().is_empty() {
        return Err(DoneError::EmptyMessage);
    }
    Ok(message)
}
