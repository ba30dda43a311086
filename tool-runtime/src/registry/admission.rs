//! What the registry decides before a call runs: the lookup, the caller's access
//! ([`ToolContext::reaches`]), the closed registry and the permission policy.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;

use futures::FutureExt;

use super::Registry;
use crate::call::ToolCall;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::lifecycle;
use crate::policy::{Permission, PermissionRequest};

/// What the registry decided before running a call.
pub(super) enum Admission {
    /// The index of the tool in the registry.
    Run(usize),
    Refuse(ToolError),
    /// Denied with [`Permission::DenyAndStop`]: the reason.
    Stop(String),
}

/// What [`Registry::admit_now`] decided: an [`Admission`], or the index of the tool whose
/// policy's [`check`](PermissionPolicy::check) must be awaited ([`PermissionPolicy::check_now`]
/// gave `None`).
pub(super) type AdmittedNow = Result<Admission, usize>;

/// A permission policy's panic as a refusal: a broken policy must not let calls through.
fn policy_panicked(payload: Box<dyn std::any::Any + Send>) -> Permission {
    Permission::Deny(format!("the permission policy panicked: {}", lifecycle::panic_message(payload.as_ref())))
}

impl Registry {
    /// Looks the tool up and asks the permission policy. Nothing of the call has run yet.
    pub(super) async fn admit(&self, call: &ToolCall, ctx: &ToolContext) -> Admission {
        match self.admit_now(call, ctx) {
            Ok(admission) => admission,
            Err(index) => self.ask(index, call, ctx).await,
        }
    }

    /// What [`Registry::admit`] decides without waiting: the lookup, the closed registry, and the
    /// policy's [`check_now`](PermissionPolicy::check_now); the tool's index when the policy has
    /// to be awaited.
    pub(super) fn admit_now(&self, call: &ToolCall, ctx: &ToolContext) -> AdmittedNow {
        // A tool beyond the caller's access is, to that caller, a tool that does not exist; the
        // list of available tools names only the tools it reaches.
        let index = match self.index.get(call.name.as_str()) {
            Some(&index) if ctx.reaches(&call.name, &self.tools[index].definition().tags) => index,
            _ => return Ok(Admission::Refuse(self.unknown_tool(call, ctx))),
        };
        if self.closed.load(Ordering::Acquire) {
            return Ok(Admission::Refuse(ToolError::RegistryClosed { tool: call.name.clone() }));
        }
        let request = PermissionRequest { call, definition: self.tools[index].definition(), context: ctx };
        // A policy that answers at once is asked also when the call is cancelled already (it costs
        // nothing; the call is refused before it starts, a lock saved per call). A policy that may
        // wait is not asked for a cancelled call.
        // A policy that panics refuses: a broken policy must not let calls through.
        match std::panic::catch_unwind(AssertUnwindSafe(|| self.policy.check_now(request))) {
            Ok(Some(decision)) => Ok(self.admission(index, call, decision)),
            Ok(None) => Err(index),
            Err(payload) => Ok(self.admission(index, call, policy_panicked(payload))),
        }
    }

    /// The error of a call to a tool the registry does not have, or that `ctx`'s access does not
    /// reach: it lists the tools `ctx` reaches.
    pub(super) fn unknown_tool(&self, call: &ToolCall, ctx: &ToolContext) -> ToolError {
        let available = self
            .tools
            .iter()
            .filter(|tool| ctx.reaches(tool.name(), &tool.definition().tags))
            .map(|tool| tool.name().to_owned())
            .collect();
        ToolError::UnknownTool { name: call.name.clone(), available }
    }

    /// Asks the policy's [`check`](PermissionPolicy::check) about the call of `self.tools[index]`;
    /// refused as cancelled when the caller's token is cancelled before it answers.
    pub(super) async fn ask(&self, index: usize, call: &ToolCall, ctx: &ToolContext) -> Admission {
        let cancelled = || Admission::Refuse(ToolError::Cancelled { tool: call.name.clone() });
        if ctx.is_cancelled() {
            return cancelled();
        }
        let request = PermissionRequest { call, definition: self.tools[index].definition(), context: ctx };
        // Boxed: the waiting is the rare path, and keeps every call's future small.
        match Box::pin(self.ask_policy(request)).await {
            Some(answer) => self.admission(index, call, answer.unwrap_or_else(policy_panicked)),
            None => cancelled(),
        }
    }

    /// Asks the policy's [`check`](PermissionPolicy::check); `None` when the caller's token is
    /// cancelled before the answer (a policy may wait for a person; a cancelled turn does not).
    async fn ask_policy(&self, request: PermissionRequest<'_>) -> Option<std::thread::Result<Permission>> {
        let mut check = std::pin::pin!(AssertUnwindSafe(self.policy.check(request)).catch_unwind());
        // A policy that answers at once never registers with the cancellation token.
        if let std::task::Poll::Ready(answer) = futures::poll!(check.as_mut()) {
            return Some(answer);
        }
        tokio::select! {
            biased;
            () = request.context.cancellation().cancelled() => None,
            answer = check => Some(answer),
        }
    }

    /// What the policy's decision means for the call of `self.tools[index]`.
    fn admission(&self, index: usize, call: &ToolCall, decision: Permission) -> Admission {
        match decision {
            Permission::Allow => Admission::Run(index),
            Permission::Deny(reason) => {
                Admission::Refuse(ToolError::PermissionDenied { tool: call.name.clone(), reason })
            }
            Permission::DenyAndStop(reason) => Admission::Stop(reason),
        }
    }
}
