//! Closing what a registry holds: its tools and its registry-scoped dependency values.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::error::{BoxError, CloseFailure};

type Run = Box<dyn FnOnce() -> BoxFuture<'static, Result<(), BoxError>> + Send>;

/// One resource to close, named for error messages (``tool `x` ``, ``dependency `db` ``).
pub(crate) struct Closer {
    resource: String,
    run: Run,
}

impl Closer {
    pub(crate) fn new(
        resource: String,
        run: impl FnOnce() -> BoxFuture<'static, Result<(), BoxError>> + Send + 'static,
    ) -> Self {
        Self { resource, run: Box::new(run) }
    }

    /// The close as a future that never panics: a panic (while starting or while running) becomes
    /// a failure whose cause reads `panicked: ...`.
    fn start(self) -> (String, BoxFuture<'static, Result<(), String>>) {
        let run = self.run;
        let future = AssertUnwindSafe(async move { run().await }).catch_unwind().map(|outcome| match outcome {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(payload) => Err(format!("panicked: {}", panic_message(payload.as_ref()))),
        });
        (self.resource, Box::pin(future))
    }
}

/// Closes every resource one after the other, in the given order, and returns the failures; a
/// failure does not stop the others from being closed.
pub(crate) async fn close_all(closers: Vec<Closer>) -> Vec<CloseFailure> {
    let mut failures = Vec::new();
    for closer in closers {
        let (resource, future) = closer.start();
        if let Err(cause) = future.await {
            failures.push(CloseFailure { resource, cause });
        }
    }
    failures
}

/// Closes every resource from a `Drop`, where nothing can be awaited and nobody receives a value:
/// each close is started in order and, when it finishes at once (a synchronous close), done
/// there; closes that wait are finished on the current tokio runtime when there is one, else on
/// this thread. Failures are reported as `tracing` error events (target `tool_runtime::lifecycle`).
pub(crate) fn close_on_drop(closers: Vec<Closer>) {
    let mut context = Context::from_waker(futures::task::noop_waker_ref());
    let mut waiting = Vec::new();
    for closer in closers {
        let (resource, mut future) = closer.start();
        match future.as_mut().poll(&mut context) {
            Poll::Ready(outcome) => report_on_drop(&resource, outcome),
            Poll::Pending => waiting.push((resource, future)),
        }
    }
    if waiting.is_empty() {
        return;
    }
    let finish = async move {
        for (resource, future) in waiting {
            report_on_drop(&resource, future.await);
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => drop(handle.spawn(finish)),
        Err(_) => futures::executor::block_on(finish),
    }
}

fn report_on_drop(resource: &str, outcome: Result<(), String>) {
    if let Err(cause) = outcome {
        tracing::error!(
            target: "tool_runtime::lifecycle",
            resource,
            cause = cause.as_str(),
            "{resource} failed to close when its registry was dropped: {cause}"
        );
    }
}

/// The text of a panic payload: the `&str` or `String` it carries, else `Box<dyn Any>`.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "Box<dyn Any>".to_owned())
}
