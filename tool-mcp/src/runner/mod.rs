//! Task runners: how a task created by a `tools/call` ([`crate::tasks`]) reaches the worker that
//! runs it.
//!
//! A [`TaskRunner`] is the queue between creating a task and running it; the task's record in the
//! [`TaskStore`](crate::tasks::TaskStore) stays the single source of truth of who runs it (its
//! [lease](crate::tasks#leases), taken by a compare-and-swap), so a runner may deliver a task
//! more than once (to a worker that stopped, then to another) without it ever running twice at
//! once.
//!
//! - [`LocalTaskRunner`], the default: a task runs in the worker that created it, at once. No
//!   queue and no Redis; a single server needs nothing else.
//! - `RedisStreamsRunner` (feature `redis`): a Redis stream with one consumer group; a task is added to the stream when it
//!   is created and any worker sharing the store takes it, so a task created on one worker may
//!   run on another, and one whose taker stopped is reclaimed by another worker.
//!
//! Give one with [`McpServerBuilder::task_runner`](crate::McpServerBuilder::task_runner); the
//! rules of taking, holding, reclaiming and settling are in `tool-mcp/docs/tasks.md`.

use std::time::Duration;

use tool_runtime::BoxFuture;

use crate::tasks::TaskStoreError;

#[cfg(feature = "redis")]
pub mod streams;

#[cfg(feature = "redis")]
pub use streams::{DEFAULT_MAX_QUEUED, DEFAULT_QUEUE_NAMESPACE, READ_BLOCK, RedisStreamsRunner};

/// One task handed to this worker by a [`TaskRunner`]: the queue's entry and the task id it
/// carries. The worker checks the task's record before running it (a cancelled task never
/// starts) and [settles](TaskRunner::settle) the entry once the task no longer needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The queue's id of the entry (a Redis stream entry id, `1785229501000-0`).
    pub entry: String,
    /// The task id the entry carries (`""` when the entry carried none: it is settled unread).
    pub task: String,
}

/// How created tasks reach the worker that runs them (see the [module docs](self)). Every
/// method but [`queues`](Self::queues) and [`takes`](Self::takes) is called only when `queues`
/// is `true`; their defaults do nothing, which is all [`LocalTaskRunner`] needs.
///
/// A runner's errors are [`TaskStoreError::Failed`] with a text saying what to check; a
/// `tools/call` whose task cannot be queued ends the task `failed` with it and answers -32603.
pub trait TaskRunner: Send + Sync + 'static {
    /// `true` when tasks are queued ([`submit`](Self::submit)) for any worker to take; `false`
    /// (the default): a task runs in the worker that created it, at once.
    fn queues(&self) -> bool {
        false
    }

    /// `true` when this worker takes tasks from the queue ([`next`](Self::next),
    /// [`reclaim`](Self::reclaim)); a worker that only creates tasks (a front worker) says
    /// `false`. Default `false`.
    fn takes(&self) -> bool {
        false
    }

    /// Queues the task `task` (its record is stored, `working`, without a lease).
    ///
    /// # Errors
    /// The queue is unreachable or full.
    fn submit<'a>(&'a self, task: &'a str) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        let _ = task;
        Box::pin(std::future::ready(Ok(())))
    }

    /// The next tasks queued for any worker, taken by `worker` (at most `max`), waiting a bounded
    /// time (the runner's own, about a second) for one to come: empty when none came.
    ///
    /// # Errors
    /// The queue is unreachable (the caller waits a moment and asks again).
    fn next<'a>(&'a self, worker: &'a str, max: usize) -> BoxFuture<'a, Result<Vec<Delivery>, TaskStoreError>> {
        let _ = (worker, max);
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Takes over for `worker` (at most `max`) the tasks delivered to any worker that has not
    /// [held](Self::hold) them for `idle`: a worker that stopped after taking them.
    ///
    /// # Errors
    /// The queue is unreachable (the sweep tries again at its next round).
    fn reclaim<'a>(
        &'a self,
        worker: &'a str,
        idle: Duration,
        max: usize,
    ) -> BoxFuture<'a, Result<Vec<Delivery>, TaskStoreError>> {
        let _ = (worker, idle, max);
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Says that `worker` still holds `delivery` (its run goes on), so that no other worker
    /// [reclaims](Self::reclaim) it.
    ///
    /// # Errors
    /// The queue is unreachable (the run goes on; its record's lease decides who runs it).
    fn hold<'a>(&'a self, worker: &'a str, delivery: &'a Delivery) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        let _ = (worker, delivery);
        Box::pin(std::future::ready(Ok(())))
    }

    /// Takes `delivery` out of the queue: its task ended, was cancelled, is gone, or parked for
    /// input.
    ///
    /// # Errors
    /// The queue is unreachable (the entry stays; a later reclaim finds its task settled and
    /// settles it again).
    fn settle<'a>(&'a self, delivery: &'a Delivery) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        let _ = delivery;
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The default [`TaskRunner`]: a task runs in the worker that created it, at once, without a
/// queue. A task whose worker stopped is settled by the lease sweep of the store's records
/// ([leases](crate::tasks#leases)).
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalTaskRunner;

impl TaskRunner for LocalTaskRunner {}
