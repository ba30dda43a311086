//! The scope a stored output belongs to.

use serde::{Deserialize, Serialize};

use crate::context::ToolContext;

/// The scope a stored output was made in: the session id and the principal of the call's context
/// ([`ToolContext::session_id`], [`ToolContext::principal`]), each `None` when the caller set none.
/// A stored output is served only to a reader of the same scope (both ids equal, `None` equal to
/// `None` only); to any other it reads exactly like an unknown ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OutputScope<'a> {
    /// The session id.
    pub session: Option<&'a str>,
    /// The principal.
    pub principal: Option<&'a str>,
}

impl<'a> OutputScope<'a> {
    /// No session, no principal: what [`crate::output::OutputStore::put`] stores under, and the scope of a
    /// context built without either.
    pub const NONE: OutputScope<'static> = OutputScope { session: None, principal: None };

    /// The scope of a call's context.
    pub fn of(ctx: &'a ToolContext) -> Self {
        Self { session: ctx.session_id(), principal: ctx.principal() }
    }
}

/// An [`OutputScope`] as a store keeps it; on disk (`scope` of a `FileStore`
/// entry) it is the JSON object `{"session":..,"principal":..}`, a missing key standing for `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScopeKey {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
    /// Set for an owner that could not be read back: it matches no scope.
    #[serde(skip)]
    unreadable: bool,
}

impl ScopeKey {
    pub(crate) fn of(scope: OutputScope<'_>) -> Self {
        Self {
            session: scope.session.map(str::to_owned),
            principal: scope.principal.map(str::to_owned),
            unreadable: false,
        }
    }

    /// The owner of an entry whose scope could not be read: no reader's.
    #[cfg(feature = "file-store")]
    pub(crate) fn unreadable() -> Self {
        Self { unreadable: true, ..Self::default() }
    }

    pub(crate) fn matches(&self, scope: OutputScope<'_>) -> bool {
        !self.unreadable && self.session.as_deref() == scope.session && self.principal.as_deref() == scope.principal
    }

    /// Bytes it takes, roughly (its ids).
    pub(crate) fn bytes(&self) -> u64 {
        (self.session.as_ref().map_or(0, String::len) + self.principal.as_ref().map_or(0, String::len)) as u64
    }
}
