//! The permission policy: the hook that decides, before each call, whether the tool may run.

use std::collections::BTreeSet;

use futures::future::BoxFuture;

use crate::call::ToolCall;
use crate::context::ToolContext;
use crate::tool::ToolDefinition;

/// The tag of tools that reach outside the machine (the network, a paid API): the
/// [`DefaultPolicy`] refuses them unless they are allowed by name. The rule comes from the
/// standard tool set, where `webfetch` is "intentionally treated as external access for permission
/// policy, so it is not in the default allow-list".
pub const EXTERNAL_TAG: &str = "external";

/// The tag of tools that run commands on this machine (a shell): like [`EXTERNAL_TAG`], the
/// [`DefaultPolicy`] refuses them unless they are allowed by name or with
/// [`allow_all_exec`](DefaultPolicy::allow_all_exec).
pub const EXEC_TAG: &str = "exec";

/// What a [`PermissionPolicy`] decides for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    /// The call runs.
    Allow,
    /// The call does not run; its result is the error `Permission denied: <reason>`. The other
    /// calls of the turn still run.
    Deny(String),
    /// The call does not run (`Permission denied: <reason>`) and neither does any other call of its
    /// turn; [`Registry::call_batch`](crate::Registry::call_batch) reports the stop in
    /// [`Batch::stop`](crate::Batch::stop) so that the agent loop hands control back to the user.
    DenyAndStop(String),
}

/// The call a [`PermissionPolicy`] is asked about.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PermissionRequest<'a> {
    /// The call as the model made it (id, tool name, raw arguments).
    pub call: &'a ToolCall,
    /// The definition of the tool it calls (its tags say what it touches).
    pub definition: &'a ToolDefinition,
    /// The context the call runs in (session id, ...).
    pub context: &'a ToolContext,
}

/// Decides whether a call may run; consulted by the [`Registry`](crate::Registry) before each call
/// of a known tool, before its arguments are decoded and its dependencies created, so a refused
/// call costs nothing and changes nothing.
///
/// A policy may be asynchronous (ask a person, look up a rule store): implement
/// [`check`](PermissionPolicy::check). A synchronous closure
/// `Fn(PermissionRequest<'_>) -> Permission` is a policy as it is. The default is
/// [`DefaultPolicy`].
///
/// ```
/// use tool_runtime::{Permission, PermissionRequest, Registry};
///
/// let registry = Registry::builder()
///     .policy(|request: PermissionRequest<'_>| {
///         if request.definition.tags.iter().any(|t| t == "destructive") {
///             Permission::Deny(format!("`{}` changes files; ask the user first", request.call.name))
///         } else {
///             Permission::Allow
///         }
///     })
///     .build()
///     .unwrap();
/// # drop(registry);
/// ```
pub trait PermissionPolicy: Send + Sync + 'static {
    /// The decision for one call.
    fn check<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission>;

    /// The decision for one call when it needs no waiting, asked before
    /// [`check`](PermissionPolicy::check): `Some` is the decision and `check` is not called;
    /// `None` (the default) sends the call to `check`. A synchronous policy answers here and
    /// saves the boxed future of `check` on every call; both must decide alike. Unlike `check`,
    /// `check_now` may be asked about a call whose turn is already cancelled (the call then does
    /// not run: it reads ``tool `x` was cancelled`` unless the policy refused it).
    fn check_now(&self, request: PermissionRequest<'_>) -> Option<Permission> {
        let _ = request;
        None
    }
}

impl<F> PermissionPolicy for F
where
    F: Fn(PermissionRequest<'_>) -> Permission + Send + Sync + 'static,
{
    fn check<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        Box::pin(std::future::ready(self(request)))
    }

    fn check_now(&self, request: PermissionRequest<'_>) -> Option<Permission> {
        Some(self(request))
    }
}

/// The policy a registry uses unless told otherwise: every tool may run except those tagged
/// [`EXTERNAL_TAG`] (`external`) or [`EXEC_TAG`] (`exec`), which need an explicit
/// [`allow`](DefaultPolicy::allow) by name (or [`allow_all_external`](DefaultPolicy::allow_all_external),
/// [`allow_all_exec`](DefaultPolicy::allow_all_exec)).
///
/// A refused call reads ``Permission denied: tool `webfetch` reaches outside this machine (tag
/// `external`) and the permission policy does not allow it``, or ``Permission denied: tool `bash`
/// runs commands on this machine (tag `exec`) and the permission policy does not allow it``.
#[derive(Debug, Clone, Default)]
pub struct DefaultPolicy {
    allowed: BTreeSet<String>,
    all_external: bool,
    all_exec: bool,
}

impl DefaultPolicy {
    /// The default policy: external tools refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows the tool `name` even when it is tagged `external`.
    #[must_use]
    pub fn allow(mut self, name: impl Into<String>) -> Self {
        self.allowed.insert(name.into());
        self
    }

    /// Allows every tool, external ones included.
    #[must_use]
    pub fn allow_all_external(mut self) -> Self {
        self.all_external = true;
        self
    }

    /// Allows every tool tagged `exec`.
    #[must_use]
    pub fn allow_all_exec(mut self) -> Self {
        self.all_exec = true;
        self
    }

    /// The decision, synchronously.
    pub fn decide(&self, definition: &ToolDefinition) -> Permission {
        let has = |tag: &str| definition.tags.iter().any(|t| t == tag);
        if self.allowed.contains(&definition.name) {
            return Permission::Allow;
        }
        if has(EXEC_TAG) && !self.all_exec {
            return Permission::Deny(format!(
                "tool `{}` runs commands on this machine (tag `{EXEC_TAG}`) and the permission policy does not allow it",
                definition.name
            ));
        }
        if has(EXTERNAL_TAG) && !self.all_external {
            return Permission::Deny(format!(
                "tool `{}` reaches outside this machine (tag `{EXTERNAL_TAG}`) and the permission policy does not allow \
                 it",
                definition.name
            ));
        }
        Permission::Allow
    }
}

impl PermissionPolicy for DefaultPolicy {
    fn check<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        Box::pin(std::future::ready(self.decide(request.definition)))
    }

    fn check_now(&self, request: PermissionRequest<'_>) -> Option<Permission> {
        Some(self.decide(request.definition))
    }
}
