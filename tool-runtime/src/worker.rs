//! Blocking work off the async workers: the one helper the output layer, the file-backed stores
//! and the standard tools use.

/// Runs `work` on tokio's blocking thread pool and waits for it, so that disk I/O never holds an
/// async worker thread; runs it inline when no tokio runtime is running (a caller that drives the
/// future with another executor). A panic in `work` is resumed in the caller, where the registry
/// reports it as the tool's panic.
///
/// Returns `None` when the runtime shut down before `work` ran.
pub async fn off_worker<T, F>(work: F) -> Option<T>
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn work_runs_on_another_thread_than_the_worker() {
        let worker = std::thread::current().id();

        let ran_on = off_worker(|| std::thread::current().id()).await;

        assert!(ran_on.is_some_and(|id| id != worker));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_panic_in_the_work_is_a_panic_of_the_caller() {
        let caller = tokio::spawn(off_worker(|| -> u8 { panic!("disk on fire") }));

        let payload = caller.await.unwrap_err().into_panic();

        assert_eq!(payload.downcast_ref::<&str>(), Some(&"disk on fire"));
    }

    #[test]
    fn without_a_runtime_the_work_runs_inline() {
        let here = std::thread::current().id();

        let ran_on = futures::FutureExt::now_or_never(off_worker(|| std::thread::current().id()));

        assert_eq!(ran_on, Some(Some(here)));
    }
}
