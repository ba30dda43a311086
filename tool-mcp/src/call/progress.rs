//! Progress reports of a call sent as `notifications/progress`.

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tool_runtime::Progress;

/// Sends the progress reports of one call as `notifications/progress` with the client's token.
pub(super) struct Forwarder {
    pub(super) token: ProgressToken,
    pub(super) peer: Peer<RoleServer>,
    /// Nothing more is sent once either is cancelled (the call's token, the request's).
    pub(super) cancelled: [CancellationToken; 2],
    /// The `done` of the last report sent.
    pub(super) last: Option<u64>,
}

impl Forwarder {
    /// Sends every report as it comes, until every sender is dropped or, once `finished` fires
    /// (the call is over), after sending the reports already made. A report that does not
    /// increase `done` is dropped; a notification that cannot be sent (the client is gone) is
    /// logged and the rest are dropped.
    pub(super) async fn run(
        mut self,
        mut receiver: mpsc::UnboundedReceiver<Progress>,
        mut finished: oneshot::Receiver<()>,
    ) {
        loop {
            tokio::select! {
                biased;
                report = receiver.recv() => match report {
                    Some(report) => if !self.send(&report).await {
                        return;
                    },
                    None => return,
                },
                _ = &mut finished => break,
            }
        }
        // The call is over: send what it reported, even if a clone of its context is still alive.
        receiver.close();
        while let Some(report) = receiver.recv().await {
            if !self.send(&report).await {
                return;
            }
        }
    }

    /// Sends one report unless it does not increase; `false` when nothing more may be sent.
    async fn send(&mut self, report: &Progress) -> bool {
        if self.cancelled.iter().any(CancellationToken::is_cancelled) {
            return false;
        }
        if self.last.is_some_and(|last| report.done <= last) {
            tracing::trace!(done = report.done, last = self.last, "dropping a progress report that does not increase");
            return true;
        }
        self.last = Some(report.done);
        if let Err(error) = self.peer.notify_progress(progress_notification(self.token.clone(), report)).await {
            tracing::debug!(%error, "cannot send a progress notification; dropping the rest");
            return false;
        }
        true
    }
}

/// The `notifications/progress` parameters of a report (see [`Forwarder`]).
fn progress_notification(token: ProgressToken, report: &Progress) -> ProgressNotificationParam {
    // Counts stay exact as f64 up to 2^53 units.
    #[allow(clippy::cast_precision_loss)]
    let mut param = ProgressNotificationParam::new(token, report.done as f64);
    if let Some(total) = report.total {
        #[allow(clippy::cast_precision_loss)]
        let total = total as f64;
        param = param.with_total(total);
    }
    if !report.message.is_empty() {
        param = param.with_message(report.message.clone());
    }
    param
}
