//! Progress of long tool calls ([`ToolContext::progress`](crate::ToolContext::progress)).

/// One progress report of a running tool call.
///
/// `done` and `total` count units the tool chooses (files searched, bytes fetched) and say which in
/// `message`; `total` is `None` when the tool cannot know it in advance. The MCP server forwards a
/// report as a `notifications/progress` message (`progress`, `total`, `message`), a CLI draws it
/// as a progress bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// The id of the tool call that reports (empty when reported outside a call).
    pub tool_call_id: String,
    /// The name of the tool that reports (empty when reported outside a call).
    pub tool_name: String,
    /// Units done so far.
    pub done: u64,
    /// Units in all, when known.
    pub total: Option<u64>,
    /// What is being done, for a person (may be empty).
    pub message: String,
}

/// Receives the progress reports of every call made with a context
/// ([`ToolContextBuilder::on_progress`](crate::ToolContextBuilder::on_progress)).
///
/// Called synchronously on the tool's task, between two steps of its work: return quickly (push to
/// a channel, update a bar). Any `Fn(Progress) + Send + Sync` closure is a listener:
///
/// ```
/// use tool_runtime::{Progress, ToolContext};
///
/// let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<Progress>();
/// let ctx = ToolContext::builder()
///     .on_progress(move |progress: Progress| {
///         // The receiver may be gone (the caller stopped listening): nothing to do then.
///         let _ = sender.send(progress);
///     })
///     .build();
/// ctx.progress(3, Some(10), "3 of 10 files searched");
/// assert_eq!(receiver.try_recv().unwrap().done, 3);
/// ```
pub trait ProgressListener: Send + Sync + 'static {
    /// Receives one report.
    fn on_progress(&self, progress: Progress);
}

impl<F> ProgressListener for F
where
    F: Fn(Progress) + Send + Sync + 'static,
{
    fn on_progress(&self, progress: Progress) {
        self(progress);
    }
}
