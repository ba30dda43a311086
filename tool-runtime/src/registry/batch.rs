//! The tool calls of one model turn ([`Registry::call_batch`]) and what they produced ([`Batch`]).

use std::ops::Deref;
use std::task::Poll;

use tracing::Instrument;

use super::Registry;
use super::admission::Admission;
use super::call::{CallFuture, CallSpan, call_span};
use crate::call::ToolCall;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::ToolMessage;

impl Registry {
    /// Runs the tool calls of one model turn and returns their messages in call order (each keeps
    /// its `tool_call_id`), with whether the agent loop should stop ([`Batch::stop`]).
    ///
    /// 1. The [permission policy](crate::PermissionPolicy) is asked about every call of a known tool, one
    ///    after the other in call order, before any call runs. A
    ///    [`crate::Permission::DenyAndStop`] stops the turn: that call reads `Permission denied:
    ///    <reason>`, no other call runs (each reads ``tool `y` did not run: the turn was stopped
    ///    ...``), and the batch reports [`TurnStop::Denied`].
    /// 2. The calls run in call order as groups: consecutive calls of non-`sequential` tools run
    ///    concurrently; a call of a `sequential` tool runs alone, after the calls before it have
    ///    finished and before the calls after it start. Each call of a group starts (its first
    ///    poll) in call order, each as [`Registry::call`] runs it, fast path included. The
    ///    calls of a group are polled by the task that awaits the batch: plain `fn` tools run in
    ///    parallel on tokio's blocking pool, `async fn` tools interleave at their `.await`s, and
    ///    `inline` ones run one after the other on the polling thread.
    /// 3. A call that returns [`crate::ToolResult::Done`] does not cut the other calls of its turn short
    ///    (the model asked for them together); the batch reports [`TurnStop::Done`] with the first
    ///    such call in call order.
    /// 4. With an output layer, each message is finished as [`Registry::call`] finishes it, then
    ///    the turn budget is shared across them.
    ///
    /// Each call fails or succeeds on its own as in [`Registry::call`]: a panic or a timeout in one
    /// does not touch the others. Cancelling `ctx`'s token ends the running calls and every call
    /// not yet started with ``tool `x` was cancelled``.
    pub async fn call_batch(&self, calls: &[ToolCall], ctx: &ToolContext) -> Batch {
        let spans: Vec<CallSpan> = calls.iter().map(|call| call_span(self, call, ctx)).collect();
        let mut admissions = Vec::with_capacity(calls.len());
        let mut denied: Option<(usize, String)> = None;
        for (call, span) in calls.iter().zip(&spans) {
            let admission = if span.is_disabled() {
                self.admit(call, ctx).await
            } else {
                self.admit(call, ctx).instrument((**span).clone()).await
            };
            if let Admission::Stop(reason) = &admission {
                denied = Some((admissions.len(), reason.clone()));
            }
            admissions.push(admission);
            if denied.is_some() {
                break;
            }
        }

        if let Some((stopper, reason)) = denied {
            let denied_tool = calls[stopper].name.clone();
            let mut admissions = admissions.into_iter();
            let mut messages = Vec::with_capacity(calls.len());
            for (i, (call, span)) in calls.iter().zip(&spans).enumerate() {
                let error = match admissions.next() {
                    _ if i == stopper => {
                        ToolError::PermissionDenied { tool: call.name.clone(), reason: reason.clone() }
                    }
                    Some(Admission::Refuse(error)) => error,
                    _ => ToolError::TurnStopped {
                        tool: call.name.clone(),
                        denied_tool: denied_tool.clone(),
                        reason: reason.clone(),
                    },
                };
                let message = self.finish(call, Err(error), span, None);
                messages.push(self.output(message, call, ctx, None).await);
            }
            let stop = TurnStop::Denied { tool_call_id: calls[stopper].id.clone(), tool_name: denied_tool, reason };
            return Batch::new(self.turn_budget(messages), Some(stop));
        }

        // Each call starts (its first poll) in call order, once the calls before it that it must
        // wait for have finished; the calls that finish there (most) need no future of their own.
        let mut messages: Vec<Option<ToolMessage>> = Vec::with_capacity(calls.len());
        messages.resize_with(calls.len(), || None);
        let mut running: Vec<(usize, CallFuture<'_>)> = Vec::new();
        for (i, ((call, span), admission)) in calls.iter().zip(spans).zip(admissions).enumerate() {
            let alone = matches!(admission, Admission::Run(tool) if self.tools[tool].sequential());
            if alone {
                Self::finish_running(std::mem::take(&mut running), &mut messages).await;
            }
            let mut call = CallFuture::admitted(self, call, ctx, span, admission);
            match futures::poll!(&mut call) {
                Poll::Ready(message) => messages[i] = Some(message),
                Poll::Pending if alone => messages[i] = Some(call.await),
                Poll::Pending => running.push((i, call)),
            }
        }
        Self::finish_running(running, &mut messages).await;
        let messages: Vec<ToolMessage> = messages.into_iter().flatten().collect();

        let stop = messages
            .iter()
            .find(|m| m.done)
            .map(|m| TurnStop::Done { tool_call_id: m.tool_call_id.clone(), message: m.text().into_owned() });
        Batch::new(self.turn_budget(messages), stop)
    }

    /// Waits for the calls of a batch that did not finish on their first poll, together, and puts
    /// each message at its call's index.
    async fn finish_running(running: Vec<(usize, CallFuture<'_>)>, messages: &mut [Option<ToolMessage>]) {
        if running.is_empty() {
            return;
        }
        let (indexes, futures): (Vec<usize>, Vec<_>) = running.into_iter().unzip();
        for (i, message) in indexes.into_iter().zip(futures::future::join_all(futures).await) {
            messages[i] = Some(message);
        }
    }

    /// The messages of a turn with the output layer's turn budget shared across them, when the
    /// registry has a layer.
    fn turn_budget(&self, mut messages: Vec<ToolMessage>) -> Vec<ToolMessage> {
        if let Some(layer) = &self.output {
            layer.apply_turn(&mut messages);
        }
        messages
    }
}

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
