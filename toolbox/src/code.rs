//! `--code-mode` and its limits: the registry of the standard tools wrapped in code mode
//! (`tool_code::CodeMode`), so that `toolbox run`, `call`, `list` and `mcp` serve `find_tools`,
//! `tool_signatures` and `run_program` instead of one tool per step.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tool_code::{CodeMode, Limits};
use tool_runtime::{Registry, RegistryBuilder};

/// The flags of code mode (global: accepted before or after the command).
#[derive(Debug, Clone, Args)]
pub(crate) struct CodeFlags {
    /// Serve code mode: `find_tools`, `tool_signatures` and `run_program` (one JavaScript program
    /// over the tools, in a QuickJS sandbox) instead of the tools themselves. Programs may call
    /// every tool but `done` (set `control`), which is served directly; each call from a program
    /// goes through the same policy (`--allow`), approval (`--confirm`) and output cache as a
    /// direct call.
    #[arg(long, global = true)]
    pub(crate) code_mode: bool,
    /// With `--code-mode`: a program's wall-clock time, in milliseconds [default: 30000].
    #[arg(long, global = true, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) code_wall_time_ms: Option<u64>,
    /// With `--code-mode`: the interpreter's memory, in bytes [default: 67108864].
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1_048_576..))]
    pub(crate) code_memory_bytes: Option<u64>,
    /// With `--code-mode`: the interpreter's stack, in bytes [default: 1048576].
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(65_536..=268_435_456))]
    pub(crate) code_stack_bytes: Option<u64>,
    /// With `--code-mode`: the tool calls of one program [default: 100].
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) code_max_tool_calls: Option<u64>,
    /// With `--code-mode`: the tool calls of a program running at once [default: 8].
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) code_max_in_flight: Option<u64>,
    /// With `--code-mode`: the bytes a program prints and returns [default: 65536].
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) code_max_result_bytes: Option<u64>,
    /// With `--code-mode`: the bytes of a program's source [default: 262144].
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) code_max_code_bytes: Option<u64>,
    /// With `--code-mode`: the programs running at once in this process; more wait their turn
    /// [default: 4].
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) code_max_programs: Option<u64>,
}

impl CodeFlags {
    /// The limits the flags give, the defaults elsewhere.
    pub(crate) fn limits(&self) -> Limits {
        let bytes =
            |flag: Option<u64>, default: usize| flag.map_or(default, |b| usize::try_from(b).unwrap_or(usize::MAX));
        let d = Limits::DEFAULT;
        Limits::DEFAULT
            .wall_time(self.code_wall_time_ms.map_or(d.wall_time, Duration::from_millis))
            .memory_bytes(bytes(self.code_memory_bytes, d.memory_bytes))
            .stack_bytes(bytes(self.code_stack_bytes, d.stack_bytes))
            .max_tool_calls(bytes(self.code_max_tool_calls, d.max_tool_calls))
            .max_in_flight(bytes(self.code_max_in_flight, d.max_in_flight))
            .max_result_bytes(bytes(self.code_max_result_bytes, d.max_result_bytes))
            .max_code_bytes(bytes(self.code_max_code_bytes, d.max_code_bytes))
            .max_programs(bytes(self.code_max_programs, d.max_programs))
    }

    /// `registry` as the flags want it: itself, or wrapped in code mode, the code-mode registry's
    /// builder first given to `outer` (which adds the output layer, so that a program's result is
    /// cut and stored like any result).
    ///
    /// # Errors
    /// The code-mode registry cannot be built (a tool of `registry` named like a meta-tool).
    pub(crate) fn wrap(
        &self,
        registry: Registry,
        outer: impl FnOnce(RegistryBuilder) -> RegistryBuilder,
    ) -> Result<Registry, String> {
        if !self.code_mode {
            return Ok(registry);
        }
        let builder = CodeMode::new(Arc::new(registry))
            .callable(|definition| definition.set.as_deref() != Some("control"))
            .limits(self.limits())
            .registry_builder();
        outer(builder).build().map_err(|e| format!("cannot serve --code-mode: {e}"))
    }
}
