//! What one turn of tool calls produced ([`Registry::call_batch`](crate::Registry::call_batch)).

use std::ops::Deref;

use crate::result::ToolMessage;

/// The results of one model turn: one message per call, in call order, and whether the agent loop
/// should stop after sending them back.
///
/// Derefs to `[ToolMessage]`, so it can be passed where a slice of messages is expected
/// (`provider.render_tool_results(&batch)`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Batch {
    /// One message per call, in the order of the calls, each with its call's `tool_call_id`.
    pub messages: Vec<ToolMessage>,
    /// Why the run should end after this turn, when it should.
    pub stop: Option<TurnStop>,
}

/// Why an agent loop should stop after a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TurnStop {
    /// A tool returned [`ToolResult::Done`](crate::ToolResult::Done): the work is finished. When
    /// several calls of the turn did, the first in call order.
    Done {
        /// The id of the call that ended the run.
        tool_call_id: String,
        /// The final message.
        message: String,
    },
    /// The permission policy answered [`Permission::DenyAndStop`](crate::Permission::DenyAndStop):
    /// no call of the turn ran; hand control back to the user.
    Denied {
        /// The id of the denied call.
        tool_call_id: String,
        /// The tool it called.
        tool_name: String,
        /// The policy's reason.
        reason: String,
    },
}

impl Batch {
    pub(crate) fn new(messages: Vec<ToolMessage>, stop: Option<TurnStop>) -> Self {
        Self { messages, stop }
    }

    /// `true` when the agent loop should stop after this turn ([`Batch::stop`] is set).
    pub fn should_stop(&self) -> bool {
        self.stop.is_some()
    }

    /// The messages, in call order.
    pub fn into_messages(self) -> Vec<ToolMessage> {
        self.messages
    }
}

impl Deref for Batch {
    type Target = [ToolMessage];

    fn deref(&self) -> &[ToolMessage] {
        &self.messages
    }
}

impl IntoIterator for Batch {
    type Item = ToolMessage;
    type IntoIter = std::vec::IntoIter<ToolMessage>;

    fn into_iter(self) -> Self::IntoIter {
        self.messages.into_iter()
    }
}

impl<'a> IntoIterator for &'a Batch {
    type Item = &'a ToolMessage;
    type IntoIter = std::slice::Iter<'a, ToolMessage>;

    fn into_iter(self) -> Self::IntoIter {
        self.messages.iter()
    }
}

impl From<Batch> for Vec<ToolMessage> {
    fn from(batch: Batch) -> Self {
        batch.messages
    }
}
