//! The three meta-tools of code mode, and the registry that serves them.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tool_runtime::search::SearchQuery;
use tool_runtime::{
    DynamicTool, Registry, RegistryBuilder, Tool, ToolCall, ToolContext, ToolDefinition, ToolError, ToolResult,
};

use crate::CodeMode;

/// The name of the meta-tool that finds the tools a program may call.
pub const FIND_TOOLS: &str = "find_tools";
/// The name of the meta-tool that gives the tools' typed signatures.
pub const TOOL_SIGNATURES: &str = "tool_signatures";
/// The name of the meta-tool that runs a program.
pub const RUN_PROGRAM: &str = "run_program";

/// Time the registry gives [`RUN_PROGRAM`] beyond [`Limits::wall_time`](crate::Limits::wall_time),
/// so that the program's own limit, with its line, answers first.
const RUN_GRACE: Duration = Duration::from_secs(5);

impl CodeMode {
    /// The three meta-tools ([`FIND_TOOLS`], [`TOOL_SIGNATURES`], [`RUN_PROGRAM`]), for
    /// [`RegistryBuilder::tool_dyn`]; their arguments are decoded strictly (unknown fields,
    /// wrong types and missing fields are error results that say what to change).
    ///
    /// [`RUN_PROGRAM`] reports a time limit of [`Limits::wall_time`](crate::Limits::wall_time)
    /// plus 5 s ([`Tool::timeout`]), so that a registry's default time limit does not cut a
    /// program short of its own.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(self.find_tool()), Arc::new(self.signatures_tool()), Arc::new(self.run_tool())]
    }

    /// A registry builder holding the three meta-tools and, forwarded to this code mode's
    /// registry, every tool the model may call directly but a program may not
    /// ([`Callers::Direct`](tool_runtime::Callers::Direct)), so that none becomes unreachable.
    /// Tools callable both ways are reached through programs only. What `toolbox mcp
    /// --code-mode` serves; every forwarded call and every program call runs through the wrapped
    /// registry's dispatch (its policy, approval, time limits, output layer), so the outer
    /// registry needs none of its own. A forwarded call the wrapped registry refuses for want of
    /// approval (approval tokens, no one to ask) ends with that refusal as its own, the request
    /// in its [`ToolMessage::approval`](tool_runtime::ToolMessage::approval) for the host; the
    /// same call sent again with the token hands the token on to the wrapped registry, which
    /// redeems it (a program's calls: "Approvals" in the crate docs).
    pub fn registry_builder(&self) -> RegistryBuilder {
        let mut builder = Registry::builder();
        for tool in self.tools() {
            builder = builder.tool_dyn(tool);
        }
        for definition in self.registry.definitions() {
            if !self.callable.contains(&definition.name) {
                builder = builder
                    .tool_dyn(Arc::new(Forward { registry: self.registry.clone(), definition: definition.clone() }));
            }
        }
        builder
    }

    /// The answer of [`FIND_TOOLS`]: `name: summary` per line, best first.
    ///
    /// # Errors
    /// The search's error text (an empty query, a limit outside 1..=50).
    pub fn find(&self, query: &str, limit: usize) -> Result<String, String> {
        if !(1..=50).contains(&limit) {
            return Err(format!("`limit` must be between 1 and 50, not {limit}"));
        }
        let hits = self.registry.search(&SearchQuery::words(query).limit(50)).map_err(|e| e.to_string())?;
        let lines: Vec<String> = hits
            .iter()
            .filter(|hit| self.callable.contains(&hit.name))
            .take(limit)
            .filter_map(|hit| self.registry.definition(&hit.name))
            .map(|d| format!("{}: {}", d.name, summary(&d.description)))
            .collect();
        if lines.is_empty() {
            return Ok(format!("no tool matches; the tools are: {}", self.callable.join(", ")));
        }
        Ok(lines.join("\n"))
    }

    /// The answer of [`TOOL_SIGNATURES`]: the declarations of `names` (every callable tool when
    /// `None`), in the order asked, as members of `tools`.
    ///
    /// # Errors
    /// The names a program may not call, with the names it may.
    pub fn signatures(&self, names: Option<&[String]>) -> Result<String, String> {
        let names: Vec<&String> = match names {
            Some(names) => names.iter().collect(),
            None => self.callable.iter().collect(),
        };
        let unknown: Vec<&str> = names.iter().filter(|n| !self.callable.contains(n)).map(|n| n.as_str()).collect();
        if !unknown.is_empty() {
            return Err(format!(
                "no tool a program may call is named {}; the tools are: {}",
                unknown.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
                self.callable.join(", ")
            ));
        }
        let declarations: Vec<String> =
            names.iter().filter_map(|name| self.registry.definition(name)).map(crate::declare::declaration).collect();
        Ok(format!("declare const tools: {{\n{}\n}};", indent(&declarations.join("\n"))))
    }

    fn find_tool(&self) -> DynamicTool {
        let code = self.clone();
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "Words to look for in the tools' names, descriptions and parameters."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Tools to list (default 10)."}
            },
            "required": ["query"]
        });
        let description = "Find the tools a run_program program can call, by words; one line per tool. \
                           Read their signatures with tool_signatures.";
        DynamicTool::new(FIND_TOOLS, description, schema, move |arguments: Value, _ctx| {
            let code = code.clone();
            async move {
                let query = arguments["query"].as_str().unwrap_or_default();
                let limit = arguments.get("limit").and_then(Value::as_u64).map_or(10, |l| l as usize);
                code.find(query, limit).map(ToolResult::Text).map_err(ToolError::Failed)
            }
        })
        .expect("the find_tools schema is a valid object schema")
    }

    fn signatures_tool(&self) -> DynamicTool {
        let code = self.clone();
        let schema = json!({
            "type": "object",
            "properties": {
                "names": {"type": "array", "items": {"type": "string"}, "description": "Tool names (default: every tool a program can call)."}
            }
        });
        let description = "TypeScript signatures of the tools a run_program program can call, as members of `tools`, \
                           with their parameter docs.";
        DynamicTool::new(TOOL_SIGNATURES, description, schema, move |arguments: Value, _ctx| {
            let code = code.clone();
            async move {
                let names: Option<Vec<String>> =
                    arguments.get("names").and_then(|n| serde_json::from_value(n.clone()).ok());
                code.signatures(names.as_deref()).map(ToolResult::Text).map_err(ToolError::Failed)
            }
        })
        .expect("the tool_signatures schema is a valid object schema")
    }

    fn run_tool(&self) -> RunTool {
        let code = self.clone();
        let limits = self.limits;
        let schema = json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "minLength": 1, "description": "The body of an async JavaScript function."}
            },
            "required": ["code"]
        });
        let description = format!(
            "Run a JavaScript program (the body of an async function) in a sandbox. Each tool is an async function \
             of `tools` (see tool_signatures): `const text = await tools.read({{file_path: \"a.rs\"}})`; a failed call \
             throws. Only what the program prints with console.log and what it returns come back, so filter and \
             summarise in the program. No files, network or clock but through tools. Limits: {} s, {} MiB, {} tool \
             calls, {} KiB of output.",
            limits.wall_time.as_secs(),
            limits.memory_bytes / (1024 * 1024),
            limits.max_tool_calls,
            limits.max_result_bytes / 1024,
        );
        let tool = DynamicTool::new(RUN_PROGRAM, description, schema, move |arguments: Value, ctx: ToolContext| {
            let code = code.clone();
            async move {
                let source = arguments["code"].as_str().unwrap_or_default();
                match code.run(source, &ctx).await {
                    Ok(output) => Ok(ToolResult::Text(output.text())),
                    // The inner call's approval request reaches this call's host.
                    Err(crate::ProgramError::NeedsApproval { tool, problem }) => {
                        Err(ToolError::Approval { tool, problem })
                    }
                    Err(error) => Err(ToolError::Failed(error.to_string())),
                }
            }
        })
        .expect("the run_program schema is a valid object schema");
        RunTool { tool, timeout: limits.wall_time + RUN_GRACE }
    }
}

/// The first sentence (or line) of a description.
fn summary(description: &str) -> String {
    let line = description.lines().next().unwrap_or_default();
    match line.find(". ") {
        Some(end) => line[..=end].to_owned(),
        None => line.to_owned(),
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|line| format!("  {line}")).collect::<Vec<_>>().join("\n")
}

/// [`RUN_PROGRAM`]: the dynamic tool with the program's time limit.
struct RunTool {
    tool: DynamicTool,
    timeout: Duration,
}

impl Tool for RunTool {
    fn definition(&self) -> &ToolDefinition {
        self.tool.definition()
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout)
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        self.tool.call(arguments, ctx)
    }

    fn check_arguments(&self, arguments: &str) -> Option<Result<(), ToolError>> {
        self.tool.check_arguments(arguments)
    }
}

/// A tool of the wrapped registry, served by the outer one: each call runs through the wrapped
/// registry's dispatch under the same call id.
struct Forward {
    registry: Arc<Registry>,
    definition: ToolDefinition,
}

impl Tool for Forward {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        Box::pin(async move {
            let mut call = ToolCall::new(ctx.call_id().unwrap_or_default(), self.definition.name.clone(), arguments);
            // The host's approval token, which the outer registry hands on unredeemed.
            if let Some(token) = ctx.approval_token() {
                call = call.with_approval_token(token);
            }
            let mut message = self.registry.call(&call, ctx).await;
            if let Some(request) = message.approval.take() {
                // The wrapped registry's approval request reaches the host of the outer call.
                return Err(ToolError::Approval {
                    tool: message.tool_name,
                    problem: crate::missing_approval(*request, ctx),
                });
            }
            if message.is_error {
                return Err(ToolError::Failed(message.text().into_owned()));
            }
            Ok(match (message.content, message.structured_content) {
                (tool_runtime::MessageContent::Text(text), None) => ToolResult::Text(text),
                (tool_runtime::MessageContent::Parts(parts), None) => ToolResult::Parts(parts),
                (tool_runtime::MessageContent::Text(text), Some(value)) => {
                    ToolResult::Structured { content: vec![tool_runtime::ContentPart::text(text)], value }
                }
                (tool_runtime::MessageContent::Parts(content), Some(value)) => {
                    ToolResult::Structured { content, value }
                }
            })
        })
    }
}
