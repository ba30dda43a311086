//! The exec tools of a registry whose commands may use the network: tagged `external` too.

use std::sync::Arc;
use std::time::Duration;

use tool_runtime::{
    BoxError, BoxFuture, EXTERNAL_TAG, Tool, ToolContext, ToolDefinition, ToolError, ToolOrigin, ToolResult, ToolSpec,
};

/// A standard tool with one more tag in its definition; everything else is the tool's own.
#[derive(Debug)]
struct Tagged {
    spec: &'static ToolSpec,
    definition: ToolDefinition,
}

/// `bash`, `bash_output` and `bash_kill` tagged `external` beside their own tags, for a registry
/// whose commands may open TCP connections ([`ExecConfig::network`](super::ExecConfig::network)):
/// permission policies then treat them as reaching outside the machine, and MCP servers, which
/// give `openWorldHint: true` to tools tagged `external`, say so. The tags of a `#[tool]` are
/// static, so this is a registration of its own: [`crate::registry_builder_with_network_exec`].
pub fn open_world_tools() -> Vec<Arc<dyn Tool>> {
    [super::bash::TOOL, super::bash_output::TOOL, super::bash_kill::TOOL]
        .into_iter()
        .map(|spec| {
            let mut definition = spec.definition().clone();
            definition.tags.push(EXTERNAL_TAG.to_owned());
            Arc::new(Tagged { spec, definition }) as Arc<dyn Tool>
        })
        .collect()
}

impl Tool for Tagged {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn name(&self) -> &str {
        self.spec.name()
    }

    fn set(&self) -> Option<&str> {
        self.spec.set()
    }

    fn origin(&self) -> ToolOrigin {
        self.spec.origin()
    }

    fn sequential(&self) -> bool {
        self.spec.sequential()
    }

    fn timeout(&self) -> Option<Duration> {
        self.spec.timeout()
    }

    fn idempotency_key_argument(&self) -> Option<&str> {
        self.spec.idempotency_key_argument()
    }

    fn deferred(&self) -> bool {
        Tool::deferred(self.spec)
    }

    fn reads_context(&self) -> bool {
        self.spec.reads_context()
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        self.spec.call(arguments, ctx)
    }

    fn call_now(&self, arguments: &str, ctx: &ToolContext) -> Option<Result<ToolResult, ToolError>> {
        self.spec.call_now(arguments, ctx)
    }

    fn close(&self) -> BoxFuture<'_, Result<(), BoxError>> {
        self.spec.close()
    }
}
