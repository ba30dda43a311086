//! Which tools may run: tools tagged `external` (they reach outside this machine: web fetch,
//! search) are off unless `--allow external` is given; tools tagged `exec` (they run commands:
//! bash) are off unless `--allow exec` is given. With both, commands may also open TCP
//! connections; `--allow unconfined-exec` lets them run where the kernel has no Landlock.
//!
//! A tool that is off is left out of `list` and of the MCP `tools/list`, and a call to it by name
//! gets an error result saying how to turn it on (it is not run): the policy is the registry's
//! [`PermissionPolicy`], so `call`, `run` and `mcp` refuse alike.

use clap::ValueEnum;
use tool_runtime::{
    BoxFuture, EXTERNAL_TAG, Permission as Decision, PermissionPolicy, PermissionRequest, Registry, ToolDefinition,
};

/// The tag of tools that run commands on this machine.
pub(crate) const EXEC_TAG: &str = "exec";

/// What `--allow` can turn on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Permission {
    /// Tools tagged `external`.
    External,
    /// Tools tagged `exec` (a shell in the workspace, confined by Landlock).
    Exec,
    /// Commands of `exec` tools run even where the kernel has no Landlock (unconfined).
    UnconfinedExec,
}

/// The permissions given on the command line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    allow_external: bool,
    allow_exec: bool,
    allow_unconfined: bool,
}

impl Policy {
    /// The policy of the `--allow` values.
    pub(crate) fn new(allowed: &[Permission]) -> Self {
        Self {
            allow_external: allowed.contains(&Permission::External),
            allow_exec: allowed.contains(&Permission::Exec),
            allow_unconfined: allowed.contains(&Permission::UnconfinedExec),
        }
    }

    /// `true` when `--allow external` was given.
    pub(crate) fn allows_external(&self) -> bool {
        self.allow_external
    }

    /// `true` when `--allow exec` was given.
    pub(crate) fn allows_exec(&self) -> bool {
        self.allow_exec
    }

    /// `true` when `--allow unconfined-exec` was given.
    pub(crate) fn allows_unconfined(&self) -> bool {
        self.allow_unconfined
    }

    /// Why the tool may not run, as the text of its error result; `None` when it may.
    pub(crate) fn refusal(&self, definition: &ToolDefinition) -> Option<String> {
        let has = |tag: &str| definition.tags.iter().any(|t| t == tag);
        if has(EXEC_TAG) && !self.allow_exec {
            return Some(format!(
                "tool `{}` is tagged `exec` (it runs commands on this machine) and is off; run toolbox with `--allow \
                 exec` to turn it on",
                definition.name
            ));
        }
        (has(EXTERNAL_TAG) && !self.allow_external).then(|| {
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

    /// Run a command.
    #[tool(tags(exec))]
    fn run_command(
        /// The command.
        command: String,
    ) -> String {
        format!("ran {command}")
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
    fn exec_tools_are_refused_with_how_to_turn_them_on() {
        let registry = Registry::builder().tool(run_command::TOOL).build().unwrap();
        let refusal = Policy::new(&[Permission::External]).refusal(&registry.definitions()[0]);
        assert_eq!(
            refusal.as_deref(),
            Some(
                "tool `run_command` is tagged `exec` (it runs commands on this machine) and is off; run toolbox with \
                 `--allow exec` to turn it on"
            )
        );
        assert_eq!(Policy::new(&[Permission::Exec]).refusal(&registry.definitions()[0]), None);
    }

    #[test]
    fn external_tools_are_hidden_unless_allowed() {
        let registry = registry();
        let names = |policy: &Policy| policy.visible(&registry).iter().map(|d| d.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&Policy::default()), ["hello"]);
        assert_eq!(names(&Policy::new(&[Permission::External])), ["fetch", "hello"]);
    }
}
