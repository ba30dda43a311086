//! What one program may use: [`Limits`].

use std::time::Duration;

/// The limits of one program run. Each has a default (below), a setter on [`Limits`], and a
/// `toolbox` flag (`toolbox run|mcp --code-mode --code-wall-time-ms ...`, see toolbox's README).
///
/// Reaching a limit ends the program (never the server) with an error result that names the
/// limit, its value and the setting that raises it; see [`ProgramError`](crate::ProgramError).
///
/// | limit | default | what it bounds |
/// |---|---|---|
/// | [`wall_time`](Limits::wall_time) | 30 s | the whole run, tool calls included |
/// | [`memory_bytes`](Limits::memory_bytes) | 64 MiB | the interpreter's heap (QuickJS's allocator) |
/// | [`stack_bytes`](Limits::stack_bytes) | 1 MiB | the interpreter's stack (recursion depth) |
/// | [`max_tool_calls`](Limits::max_tool_calls) | 100 | tool calls one program makes in all |
/// | [`max_in_flight`](Limits::max_in_flight) | 8 | tool calls running at once; more wait their turn |
/// | [`max_result_bytes`](Limits::max_result_bytes) | 64 KiB | what goes back to the model: the printed text plus the returned value |
/// | [`max_code_bytes`](Limits::max_code_bytes) | 256 KiB | the program's source text |
/// | [`max_programs`](Limits::max_programs) | 4 | programs of one [`CodeMode`](crate::CodeMode) running at once (each has its thread and its memory); more wait their turn |
///
/// The defaults follow the peers' (Vercel's code mode: 30 s, 64 MiB; FastMCP's: a bounded
/// number of tool calls), with a smaller result cap: what a program returns enters the model's
/// context, and the point of code mode is that little does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Wall-clock time of one run, from its start to its return value, tool calls included.
    pub wall_time: Duration,
    /// Bytes the interpreter may allocate (QuickJS's memory limit); an allocation past it throws
    /// `out of memory`.
    pub memory_bytes: usize,
    /// Bytes of stack the interpreter may use (QuickJS's stack limit); deeper recursion throws
    /// `stack overflow`. The program runs on a thread of its own whose stack is this plus 2 MiB.
    pub stack_bytes: usize,
    /// Tool calls one program may make in all; the call past it throws and ends the program.
    pub max_tool_calls: usize,
    /// Tool calls running at once; a call past it waits (in the interpreter) until one ends.
    pub max_in_flight: usize,
    /// Bytes of the result text (what the program printed plus its returned value).
    pub max_result_bytes: usize,
    /// Bytes of the program's source.
    pub max_code_bytes: usize,
    /// Programs of one [`CodeMode`](crate::CodeMode) (and its clones) running at once; a run
    /// past it waits for one to end (its wall time starts when it starts), or for its caller's
    /// cancellation. Bounds the threads and the memory (`max_programs` x `memory_bytes`).
    pub max_programs: usize,
}

impl Limits {
    /// The defaults of the table on [`Limits`].
    pub const DEFAULT: Limits = Limits {
        wall_time: Duration::from_secs(30),
        memory_bytes: 64 * 1024 * 1024,
        stack_bytes: 1024 * 1024,
        max_tool_calls: 100,
        max_in_flight: 8,
        max_result_bytes: 64 * 1024,
        max_code_bytes: 256 * 1024,
        max_programs: 4,
    };

    /// Sets [`Limits::wall_time`].
    #[must_use]
    pub fn wall_time(mut self, limit: Duration) -> Self {
        self.wall_time = limit;
        self
    }

    /// Sets [`Limits::memory_bytes`].
    #[must_use]
    pub fn memory_bytes(mut self, bytes: usize) -> Self {
        self.memory_bytes = bytes;
        self
    }

    /// Sets [`Limits::stack_bytes`].
    #[must_use]
    pub fn stack_bytes(mut self, bytes: usize) -> Self {
        self.stack_bytes = bytes;
        self
    }

    /// Sets [`Limits::max_tool_calls`].
    #[must_use]
    pub fn max_tool_calls(mut self, calls: usize) -> Self {
        self.max_tool_calls = calls;
        self
    }

    /// Sets [`Limits::max_in_flight`] (at least 1: 0 is read as 1).
    #[must_use]
    pub fn max_in_flight(mut self, calls: usize) -> Self {
        self.max_in_flight = calls.max(1);
        self
    }

    /// Sets [`Limits::max_result_bytes`].
    #[must_use]
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }

    /// Sets [`Limits::max_code_bytes`].
    #[must_use]
    pub fn max_code_bytes(mut self, bytes: usize) -> Self {
        self.max_code_bytes = bytes;
        self
    }
}

impl Limits {
    /// Sets [`Limits::max_programs`] (at least 1: 0 is read as 1).
    #[must_use]
    pub fn max_programs(mut self, programs: usize) -> Self {
        self.max_programs = programs.max(1);
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
