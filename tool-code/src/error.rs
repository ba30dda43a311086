//! Why a program ended without a result: [`ProgramError`].

use std::time::Duration;

/// Why a program ended without a result. Its text is what the model reads (an error result of
/// the run tool); each names the line where the program's stack gives one, and each limit names
/// its setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProgramError {
    /// The program threw (or a promise it returned rejected): a `SyntaxError` at parse time, a
    /// `TypeError`, an `Error` of its own, a failed tool call it did not catch, `RangeError:
    /// Maximum call stack size exceeded` past [`Limits::stack_bytes`](crate::Limits::stack_bytes),
    /// or a value that is not an `Error` (`throw null` gives the text `null`, `throw 42` `42`,
    /// `throw "text"` `text`, `throw {}` `{}`).
    #[error("{}", describe_thrown(.text, *.line))]
    Thrown {
        /// `Name: message` of the thrown error, or the thrown value's text.
        text: String,
        /// The 1-based line of the program: from the error's stack, else the line of the
        /// `throw` statement that threw the value (a promise's rejection has none).
        line: Option<u32>,
    },
    /// The run outlasted [`Limits::wall_time`](crate::Limits::wall_time).
    #[error("{}", describe_wall_time(*.limit, *.at))]
    WallTime {
        /// The limit.
        limit: Duration,
        /// The line the program was running, when the interrupt's stack names one.
        at: Option<u32>,
    },
    /// The program allocated past [`Limits::memory_bytes`](crate::Limits::memory_bytes) and did
    /// not catch QuickJS's `InternalError: out of memory`. QuickJS throws `null` instead when it
    /// cannot even make that error, so a `null` is read as this too unless a `throw` statement of
    /// the program threw it (then it is [`ProgramError::Thrown`] with that line) or a promise the
    /// program made was rejected with it ([`ProgramError::Thrown`] without a line).
    #[error("{}", describe_memory(*.limit, *.at))]
    Memory {
        /// The limit, in bytes.
        limit: usize,
        /// The line, when the error's stack names one.
        at: Option<u32>,
    },
    /// The program called past [`Limits::max_tool_calls`](crate::Limits::max_tool_calls).
    #[error(
        "the program made more than {limit} tool calls (max_tool_calls, `--code-max-tool-calls`); batch the work into fewer calls (one grep over a tree instead of one per file)"
    )]
    ToolCalls {
        /// The limit.
        limit: usize,
    },
    /// The program printed past [`Limits::max_result_bytes`](crate::Limits::max_result_bytes).
    #[error(
        "the program printed more than {limit} bytes (max_result_bytes, `--code-max-result-bytes`); print a summary, not the raw results"
    )]
    Printed {
        /// The limit.
        limit: usize,
    },
    /// The printed text and returned value together are over
    /// [`Limits::max_result_bytes`](crate::Limits::max_result_bytes).
    #[error(
        "the program's result is {size} bytes, over the limit of {limit} (max_result_bytes, `--code-max-result-bytes`); return a smaller value (counts, names, a slice)"
    )]
    Result {
        /// The result's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The source is over [`Limits::max_code_bytes`](crate::Limits::max_code_bytes).
    #[error("the program is {size} bytes, over the limit of {limit} (max_code_bytes, `--code-max-code-bytes`)")]
    Code {
        /// The source's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The returned value cannot be written as JSON (a cycle, a `BigInt`).
    #[error("the program's return value is not JSON: {message}; return plain objects, arrays, strings and numbers")]
    NotJson {
        /// What `JSON.stringify` threw.
        message: String,
    },
    /// The program awaits a promise that nothing will settle (no tool call is running).
    #[error(
        "the program awaits a promise that never settles (no tool call is running); await the tool calls' promises, not one of your own"
    )]
    NeverSettled,
    /// The call of the run tool was cancelled (or timed out in the registry) and the program was
    /// stopped.
    #[error("the program was cancelled")]
    Cancelled,
    /// A tool call the program made was refused for want of the user's approval, under approval
    /// tokens with no client to ask ([`tool_runtime::ApprovalProblem::Missing`]): the run stopped
    /// there, and `problem` holds that call's approval request (the inner tool's name, the
    /// preview of its arguments, the token), which [`RUN_PROGRAM`](crate::RUN_PROGRAM) hands its
    /// host as its own ("Approvals" in the crate docs). The text is the inner refusal's, what the
    /// model reads.
    #[error("tool `{tool}` did not run: {problem}")]
    NeedsApproval {
        /// The inner call's tool.
        tool: String,
        /// Its [`ApprovalProblem::Missing`](tool_runtime::ApprovalProblem::Missing), with the request.
        problem: tool_runtime::ApprovalProblem,
    },
    /// The interpreter could not start (no memory for a runtime, no thread).
    #[error("the interpreter could not run the program: {0}")]
    Engine(String),
}

impl ProgramError {
    /// The program line the error names, if any.
    pub fn line(&self) -> Option<u32> {
        match self {
            ProgramError::Thrown { line, .. } => *line,
            ProgramError::WallTime { at, .. } | ProgramError::Memory { at, .. } => *at,
            _ => None,
        }
    }
}

fn describe_thrown(text: &str, line: Option<u32>) -> String {
    match line {
        Some(line) => format!("the program failed at line {line}: {text}"),
        None => format!("the program failed: {text}"),
    }
}

fn describe_wall_time(limit: Duration, at: Option<u32>) -> String {
    let at = at.map(|line| format!(" at line {line}")).unwrap_or_default();
    format!(
        "the program ran past its time limit of {} ms{at} (wall_time, `--code-wall-time-ms`); look for a loop that does not end, or do less in one run",
        limit.as_millis()
    )
}

fn describe_memory(limit: usize, at: Option<u32>) -> String {
    let at = at.map(|line| format!(" at line {line}")).unwrap_or_default();
    format!(
        "the program ran out of memory{at}: its limit is {limit} bytes (memory_bytes, `--code-memory-bytes`); keep less: reduce each result to what you need as it arrives"
    )
}
