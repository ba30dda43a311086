//! Running one call: the one place every call passes, `tools/call` ([`tool`]), `prompts/get`
//! ([`prompt`]) and task runs ([`task`]) alike, in three steps:
//!
//! 1. [`McpServer::prepare`]: a new call id ([`crate::call_id`]), the call's context from the
//!    context hook and the access token ([`McpServer::call_context`]: principal, access), the
//!    call's cancellation token (a child of the server's, which the end of a shutdown's grace
//!    period cancels), the client channel and, when the request asks for progress, the progress
//!    listener. A refusal of the hook is `-32600` (invalid request).
//! 2. [`Prepared::run`]: the work, tracked by the server (a shutdown waits for it), raced against
//!    the ends a call may meet: the tool asked for input it has no answer to (MCP 2026-07-28's
//!    input-required results, or a task parked `input_required`), the call was cancelled (by the
//!    client, by `tasks/cancel`, by the end of a shutdown), or its deadline passed (a task's time
//!    to live). The work is polled first: a tool that answers on its first poll ends the call
//!    before the others register their wakers.
//! 3. [`Prepared::finish`]: the call's token cancelled unless the work completed (a tool waiting
//!    for input, or cancelled, stops), and the log messages it sent flushed before the answer.
//!    Each method then maps how the call [`Ended`] to its own answer.
//!
//! A task run is spawned on the server's tracker and outlives the request that created it (a
//! `tasks/update` may start it again on any worker); it goes through the same three steps.
//!
//! This is where what touches every call plugs in, once: telemetry (a span per call), durable
//! tasks, resource locks, code mode, and authorization decided once for the tool that actually
//! runs.

mod progress;
mod prompt;
mod task;
mod tool;

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tool_runtime::{Progress, ToolContext};

use crate::call_id::next_call_id;
use crate::server::{CallRequest, McpServer};
use crate::talk::McpChannel;

/// A call ready to run: what [`McpServer::prepare`] made.
pub(crate) struct Prepared {
    /// The id the tool sees.
    pub(crate) call_id: String,
    /// The call's context: principal, access, cancellation token, client channel, progress
    /// listener.
    pub(crate) ctx: ToolContext,
    /// The call's cancellation token (the context's).
    pub(crate) token: CancellationToken,
    /// The channel to the client (or, for a task run, the answers it knows).
    pub(crate) channel: Arc<McpChannel>,
}

/// How a call's run ended.
pub(crate) enum Ended<T> {
    /// The work completed with this value.
    Done(T),
    /// The tool asked for input it has no answer to.
    Asked,
    /// The call was cancelled.
    Cancelled,
    /// Its deadline passed.
    Expired,
}

impl McpServer {
    /// Step 1 (see the [module docs](self)): the context of a call of `name` (a tool, or a
    /// prompt) carried by `http` (`None` on standard input and output, and for a task run started
    /// without a request), talking to the client through `channel`; `progress` receives the
    /// tool's progress reports when the request asked for them; `principal` (a task's) is the
    /// context's principal when there is no request. `span`, the SERVER span of a `tools/call`
    /// run in its request, is handed to the registry as the call's one span
    /// ([`ToolContextBuilder::call_span`](tool_runtime::ToolContextBuilder::call_span);
    /// [`crate::telemetry`], "One span a call").
    ///
    /// # Errors
    /// `-32600` (invalid request) with the context hook's message when it refuses the call.
    pub(crate) fn prepare(
        &self,
        name: &str,
        http: Option<&::http::request::Parts>,
        channel: Arc<McpChannel>,
        progress: Option<mpsc::UnboundedSender<Progress>>,
        principal: Option<&str>,
        span: Option<tracing::Span>,
    ) -> Result<Prepared, ErrorData> {
        let call_id = next_call_id();
        let builder = self
            .call_context(&CallRequest { tool: name, call_id: &call_id, http })
            .map_err(|message| ErrorData::invalid_request(message, None))?;
        // A task run without its creating request (taken from the queue, or run again) runs as
        // the principal its record names.
        let builder = match principal {
            Some(principal) if http.is_none() => builder.principal(principal),
            _ => builder,
        };
        let token = self.inner.stop.child_token();
        let mut builder = builder.cancellation(token.clone()).client_arc(channel.clone());
        if let Some(sender) = progress {
            // The listener lives in the context (and its clones); see `Forwarder::run` for the end.
            builder = builder.on_progress(move |progress: Progress| {
                let _ = sender.send(progress);
            });
        }
        if let Some(span) = span {
            builder = builder.call_span(span);
        }
        Ok(Prepared { call_id, ctx: builder.build(), token, channel })
    }
}

impl Prepared {
    /// Step 2 (see the [module docs](self)): `work` tracked by `server`, until it completes, the
    /// tool asks for input without an answer, `cancelled` completes, or `deadline` passes (none:
    /// no deadline).
    pub(crate) async fn run<T>(
        &self,
        server: &McpServer,
        work: impl Future<Output = T>,
        cancelled: impl Future<Output = ()>,
        deadline: Option<Duration>,
    ) -> Ended<T> {
        let expired = async {
            match deadline {
                Some(deadline) => tokio::time::sleep(deadline).await,
                None => std::future::pending().await,
            }
        };
        server
            .inner
            .calls
            .track_future(async {
                tokio::select! {
                    biased;
                    value = work => Ended::Done(value),
                    () = self.channel.asked() => Ended::Asked,
                    () = cancelled => Ended::Cancelled,
                    () = expired => Ended::Expired,
                }
            })
            .await
    }

    /// Step 3 (see the [module docs](self)): the token cancelled unless the work completed, and
    /// the log messages sent so far flushed.
    pub(crate) async fn finish<T>(&self, ended: &Ended<T>) {
        if !matches!(ended, Ended::Done(_)) {
            self.token.cancel();
        }
        self.channel.flush().await;
    }
}
