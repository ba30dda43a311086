//! Which tools may run: tools tagged `external` (they reach outside this machine: web fetch,
//! search) are off unless `--allow external` is given.
//!
//! A tool that is off is left out of `list` and of the MCP `tools/list`, and a call to it by name
//! gets an error result saying how to turn it on (it is not run): the policy is the registry's
//! [`PermissionPolicy`], so `call`, `run` and `mcp` refuse alike.

use clap::ValueEnum;
use tool_runtime::{
    BoxFuture, EXTERNAL_TAG, Permission as Decision, PermissionPolicy, PermissionRequest, Registry, ToolDefinition,
};

/// What `--allow` can turn on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Permission {
    /// Tools tagged `external`.
    External,
}

/// The permissions given on the command line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    allow_external: bool,
}

impl Policy {
    /// The policy of the `--allow` values.
    pub(crate) fn new(allowed: &[Permission]) -> Self {
        Self { allow_external: allowed.contains(&Permission::External) }
    }

    /// Why the tool may not run, as the text of its error result; `None` when it may.
    pub(crate) fn refusal(&self, definition: &ToolDefinition) -> Option<String> {
        let external = definition.tags.iter().any(|t| t == EXTERNAL_TAG);
        (external && !self.allow_external).then(|| {
            format!(
                "tool `{}` is tagged `external` (it reaches outside this machine) and is off; run toolbox with \
                 `--allow external` to turn it on",
                definition.name
            )
        })
    }

    /// The definitions of the tools that may run, in the registry's order (sorted by name).
    pub(crate) fn visible<'a>(&self, registry: &'a Registry) -> Vec<&'a ToolDefinition> {
        registry.definitions().iter().filter(|d| self.refusal(d).is_none()).collect()
    }

    /// The decision for a tool: [`Policy::refusal`] as a denial.
    fn decide(&self, definition: &ToolDefinition) -> Decision {
        self.refusal(definition).map_or(Decision::Allow, Decision::Deny)
    }
}

impl PermissionPolicy for Policy {
    fn check<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Decision> {
        Box::pin(std::future::ready(self.decide(request.definition)))
    }

    fn check_now(&self, request: PermissionRequest<'_>) -> Option<Decision> {
        Some(self.decide(request.definition))
    }
}

#[cfg(test)]
mod tests {
    use tool_runtime::{ToolCall, ToolContext, ToolMessage, tool};

    use super::*;

    /// Fetch a web page.
    #[tool(tags(external))]
    fn fetch(
        /// The URL.
        url: String,
    ) -> String {
        format!("fetched {url}")
    }

    /// Say hello.
    #[tool]
    fn hello() -> String {
        "hello".to_owned()
    }

    fn registry() -> Registry {
        Registry::builder().tool(fetch::TOOL).tool(hello::TOOL).build().unwrap()
    }

    /// The registry as `Setup` builds it: the policy is the registry's.
    fn registry_for(policy: &Policy) -> Registry {
        Registry::builder().tool(fetch::TOOL).tool(hello::TOOL).policy(policy.clone()).build().unwrap()
    }

    fn run(policy: &Policy, call: &ToolCall) -> ToolMessage {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(registry_for(policy).call(call, &ToolContext::new()))
    }

    #[test]
    fn external_tools_are_refused_with_how_to_turn_them_on() {
        let message = run(&Policy::default(), &ToolCall::new("c1", "fetch", r#"{"url":"https://example.com"}"#));
        assert!(message.is_error);
        assert_eq!(
            message.text(),
            "Permission denied: tool `fetch` is tagged `external` (it reaches outside this machine) and is off; run \
             toolbox with `--allow external` to turn it on"
        );
    }

    #[test]
    fn allow_external_runs_external_tools() {
        let policy = Policy::new(&[Permission::External]);
        let message = run(&policy, &ToolCall::new("c1", "fetch", r#"{"url":"https://example.com"}"#));
        assert!(!message.is_error);
        assert_eq!(message.text(), "fetched https://example.com");
    }

    #[test]
    fn external_tools_are_hidden_unless_allowed() {
        let registry = registry();
        let names = |policy: &Policy| policy.visible(&registry).iter().map(|d| d.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&Policy::default()), ["hello"]);
        assert_eq!(names(&Policy::new(&[Permission::External])), ["fetch", "hello"]);
    }
}
