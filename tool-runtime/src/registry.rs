//! The dispatch table: tools by name, their definitions, and the call pipeline.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use futures::FutureExt;

use crate::call::ToolCall;
use crate::context::{RegistryScope, ToolContext};
use crate::depends::DependencyKey;
use crate::error::{RegistryError, ToolError};
use crate::result::ToolMessage;
use crate::tool::{Tool, ToolDefinition, ToolSpec, registrations};

/// The tools an agent can call, by name, and the dispatcher that runs a model's tool calls.
///
/// Built once (by [`Registry::discover`] or [`Registry::builder`]) and shared; every method takes
/// `&self`. Tools are kept sorted by name; lookup is a hash map.
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    index: HashMap<String, usize>,
    definitions: OnceLock<Vec<ToolDefinition>>,
    scope: Arc<RegistryScope>,
    output: crate::output::SharedLayer,
}

impl Registry {
    /// A registry of every `#[tool]` linked into the binary.
    ///
    /// `inventory` only sees crates that are linked: a crate of tools that nothing else references
    /// must be referenced (for example `use my_tools as _;`) or registered through
    /// [`Registry::builder`].
    ///
    /// # Errors
    /// [`RegistryError::DuplicateName`] when two tools share a name.
    pub fn discover() -> Result<Self, RegistryError> {
        Self::builder().discover().build()
    }

    /// A builder for explicit registration, set filters and dependency overrides.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// The definitions of every tool, sorted by name. Built on the first call, then the same
    /// slice is returned.
    pub fn definitions(&self) -> &[ToolDefinition] {
        self.definitions.get_or_init(|| self.tools.iter().map(|t| t.definition().clone()).collect())
    }

    /// The tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name())
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.index.get(name).map(|&i| &*self.tools[i])
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// `true` when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Runs one tool call and returns its message. Never fails: an unknown tool, arguments that do
    /// not decode, a failing dependency, a tool returning `Err` and a tool that panics all become
    /// messages with `is_error: true` whose text says what to change; the registry keeps serving.
    ///
    /// With an [output layer](RegistryBuilder::output), the message is then stored in the output
    /// cache, gets its `output_ref` and is held to the per-message cap.
    pub async fn call(&self, call: &ToolCall, ctx: &ToolContext) -> ToolMessage {
        let message = self.dispatch(call, ctx).await;
        match &self.output {
            Some(layer) => layer.finish(message, &ctx.for_call(&call.id, &call.name, &self.scope)).await,
            None => message,
        }
    }

    async fn dispatch(&self, call: &ToolCall, ctx: &ToolContext) -> ToolMessage {
        let Some(tool) = self.get(&call.name) else {
            let error = ToolError::UnknownTool {
                name: call.name.clone(),
                available: self.names().map(str::to_owned).collect(),
            };
            return ToolMessage::error(&call.id, &call.name, error.to_string());
        };
        let ctx = ctx.for_call(&call.id, &call.name, &self.scope);
        let outcome = AssertUnwindSafe(async { tool.call(&call.arguments, &ctx).await }).catch_unwind().await;
        match outcome {
            Ok(Ok(result)) => ToolMessage::success(&call.id, &call.name, result),
            Ok(Err(error)) => ToolMessage::error(&call.id, &call.name, error.to_string()),
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "Box<dyn Any>".to_owned());
                let error = ToolError::Panicked { tool: call.name.clone(), message };
                ToolMessage::error(&call.id, &call.name, error.to_string())
            }
        }
    }

    /// Runs the tool calls of one model turn concurrently and returns their messages in call
    /// order (each keeps its `tool_call_id`).
    ///
    /// With an output layer, the batch's messages then share the turn budget.
    pub async fn call_batch(&self, calls: &[ToolCall], ctx: &ToolContext) -> Vec<ToolMessage> {
        let mut messages = futures::future::join_all(calls.iter().map(|call| self.call(call, ctx))).await;
        if let Some(layer) = &self.output {
            layer.apply_turn(&mut messages);
        }
        messages
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").field("tools", &self.names().collect::<Vec<_>>()).finish_non_exhaustive()
    }
}

/// Builds a [`Registry`].
#[derive(Default)]
pub struct RegistryBuilder {
    tools: Vec<Arc<dyn Tool>>,
    sets: Option<Vec<String>>,
    scope: RegistryScope,
    output: crate::output::SharedLayer,
}

impl RegistryBuilder {
    /// Adds every `#[tool]` linked into the binary (see [`Registry::discover`]).
    #[must_use]
    pub fn discover(mut self) -> Self {
        let mut specs: Vec<&'static ToolSpec> = registrations().collect();
        // inventory's order is unspecified: sort so that "the first one keeps the name" is stable.
        specs.sort_by(|a, b| (a.name(), a.origin()).cmp(&(b.name(), b.origin())));
        self.tools.extend(specs.into_iter().map(|s| Arc::new(s) as Arc<dyn Tool>));
        self
    }

    /// Adds one `#[tool]` function's tool: `.tool(read::TOOL)`.
    #[must_use]
    pub fn tool(mut self, spec: &'static ToolSpec) -> Self {
        self.tools.push(Arc::new(spec));
        self
    }

    /// Adds a tool implemented by hand.
    #[must_use]
    pub fn tool_dyn(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Keeps only tools whose set is one of `sets` (tools without a set are dropped too).
    #[must_use]
    pub fn sets<I, S>(mut self, sets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.sets = Some(sets.into_iter().map(Into::into).collect());
        self
    }

    /// Overrides a dependency for every call this registry serves (a call's own context override
    /// still wins).
    #[must_use]
    pub fn override_dependency<T>(mut self, key: &DependencyKey<T>, value: T) -> Self
    where
        T: Clone + Send + Sync + 'static,
    {
        self.scope.overrides.insert(key.id(), Arc::new(value));
        self
    }

    /// Applies `layer` to every message and batch (see [`crate::output`]); without it messages are
    /// returned as the tools made them. The store is the dependency
    /// [`OUTPUT_STORE`](crate::output::OUTPUT_STORE) (override it to choose one).
    #[must_use]
    pub fn output(mut self, layer: crate::output::OutputLayer) -> Self {
        self.output = Some(Arc::new(layer));
        self
    }

    /// The registry, sorted by tool name.
    ///
    /// # Errors
    /// [`RegistryError::DuplicateName`] naming both definitions when two tools share a name (the
    /// one added first keeps it).
    pub fn build(self) -> Result<Registry, RegistryError> {
        let mut tools: Vec<Arc<dyn Tool>> = match &self.sets {
            Some(sets) => {
                self.tools.into_iter().filter(|t| t.set().is_some_and(|s| sets.iter().any(|x| x == s))).collect()
            }
            None => self.tools,
        };
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, tool) in tools.iter().enumerate() {
            let name = tool.name();
            if let Some(&first) = seen.get(name) {
                return Err(RegistryError::DuplicateName {
                    name: name.to_owned(),
                    first: tools[first].origin().to_owned(),
                    second: tool.origin().to_owned(),
                });
            }
            seen.insert(name.to_owned(), i);
        }
        tools.sort_by(|a, b| a.name().cmp(b.name()));
        let index = tools.iter().enumerate().map(|(i, t)| (t.name().to_owned(), i)).collect();
        Ok(Registry { tools, index, definitions: OnceLock::new(), scope: Arc::new(self.scope), output: self.output })
    }
}
