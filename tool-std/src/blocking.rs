//! Blocking work off the async workers.

/// Runs `work` on tokio's blocking thread pool and waits for it, so that disk I/O never holds an
/// async worker thread; runs it inline when no tokio runtime is running (a caller that drives the
/// future with another executor). A panic in `work` is resumed in the caller, where the registry
/// reports it as the tool's panic.
///
/// Returns `None` when the runtime shut down before `work` ran.
pub(crate) async fn off_worker<T, F>(work: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return Some(work());
    }
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => Some(value),
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => None,
    }
}
