//! [`RedisStreamsRunner`]: tasks queued on a Redis stream and taken by a consumer group
//! (feature `redis`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::streams::{StreamAutoClaimOptions, StreamAutoClaimReply, StreamReadOptions, StreamReadReply};
use redis::{AsyncCommands, RedisError};
use tool_runtime::BoxFuture;
use tool_runtime::redis::RedisConnection;

use super::{Delivery, TaskRunner};
use crate::tasks::TaskStoreError;

/// The Redis namespace of the queue by default: `tool:task`, so the stream is `tool:task:queue`.
pub const DEFAULT_QUEUE_NAMESPACE: &str = "tool:task";

/// The most entries the stream holds by default: 100 000. A task created past it is refused
/// (the `tools/call` is answered -32603 saying so) and nothing is queued.
pub const DEFAULT_MAX_QUEUED: usize = 100_000;

/// How long one read of the stream waits for a task to come: 1 s (`XREADGROUP ... BLOCK 1000`).
/// A task is taken as soon as it is added; this only bounds how late a worker sees its shutdown.
pub const READ_BLOCK: Duration = Duration::from_secs(1);

/// How long a consumer (a worker) with no pending entry may stay idle before a sweep takes it out
/// of the group: 1 hour. Workers that stopped leave their consumer behind; this bounds their
/// number.
pub const CONSUMER_FORGET: Duration = Duration::from_secs(3600);

/// The name of the consumer group every worker joins: `workers`.
const GROUP: &str = "workers";

/// Adds an entry carrying the task id unless the stream holds its cap: the entry id, or `false`.
const SUBMIT: &str = r"
if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[1]) then return false end
return redis.call('XADD', KEYS[1], '*', 'task', ARGV[2])
";

/// A [`TaskRunner`] on a Redis stream with one consumer group, after Docket's design: a task
/// created on any worker is added to the stream (`XADD`, one field `task`); each worker that
/// [takes](TaskRunner::takes) tasks reads new entries as the consumer named by its worker id
/// (`XREADGROUP GROUP workers ID COUNT n BLOCK 1000 STREAMS NS:queue >`); a running task's entry
/// is held by claiming it again with no idle time (`XCLAIM ... 0 ID JUSTID`, every third of the
/// lease); the sweep of every worker takes over the entries idle for a lease
/// (`XAUTOCLAIM NS:queue workers ID LEASE_MS 0-0 COUNT n`); and an entry whose task ended, was
/// cancelled, is gone or waits for input is acknowledged and deleted (`XACK` and `XDEL` in one
/// `MULTI`), so the stream holds only tasks that still need a worker.
///
/// Keys, under the namespace `NS` ([`DEFAULT_QUEUE_NAMESPACE`] by default): `NS:queue` (the
/// stream) with its group `workers`. Each entry belongs to a task record of the task store; the
/// stream has no time to live of its own, and holds at most [`DEFAULT_MAX_QUEUED`] entries
/// ([`max_queued`](Self::max_queued)). The group is created on first use from the stream's start
/// (`XGROUP CREATE NS:queue workers 0 MKSTREAM`), so an entry added before it is not missed; a
/// group that disappears (Redis flushed) is created again.
///
/// The blocking reads have a Redis connection of their own, so that they never hold up the
/// other commands. Needs a Redis of 6.2 or later (`XAUTOCLAIM`); a single Redis, not Redis
/// Cluster.
#[derive(Debug)]
pub struct RedisStreamsRunner {
    /// Adds, holds, reclaims and settles entries.
    conn: RedisConnection,
    /// The blocking reads (`XREADGROUP ... BLOCK`).
    reads: RedisConnection,
    stream: String,
    takes: bool,
    max_queued: usize,
    /// Set once the group is known to exist.
    grouped: AtomicBool,
}

impl RedisStreamsRunner {
    /// A runner on the Redis at `url` (`redis://HOST:PORT/DB`, as
    /// [`RedisConnection::open`](tool_runtime::redis::RedisConnection::open) takes it), its
    /// stream under `namespace` (`NS:queue`), taking tasks ([`takes`](Self::takes) `true`), with
    /// at most [`DEFAULT_MAX_QUEUED`] entries. Connects lazily.
    ///
    /// # Errors
    /// A message naming the URL when it is not a Redis URL, or a connection's thread cannot
    /// start.
    pub fn open(url: &str, namespace: &str) -> Result<Self, String> {
        Ok(Self {
            conn: RedisConnection::open(url)?,
            reads: RedisConnection::open(url)?,
            stream: format!("{namespace}:queue"),
            takes: true,
            max_queued: DEFAULT_MAX_QUEUED,
            grouped: AtomicBool::new(false),
        })
    }

    /// The same runner, taking tasks from the stream or not (`false`: a front worker that only
    /// queues the tasks it creates; others run them). Default `true`.
    #[must_use]
    pub fn takes(mut self, takes: bool) -> Self {
        self.takes = takes;
        self
    }

    /// The same runner with at most `entries` in the stream (at least 1; default
    /// [`DEFAULT_MAX_QUEUED`]).
    #[must_use]
    pub fn max_queued(mut self, entries: usize) -> Self {
        self.max_queued = entries.max(1);
        self
    }

    /// The stream's key (`NS:queue`).
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// A failure of `what`, naming the stream and what to check.
    fn failed(&self, what: &str, error: &RedisError) -> TaskStoreError {
        TaskStoreError::Failed(format!(
            "cannot {what} on the task queue {} at {}: {error}; check that Redis (6.2 or later) is up and reachable",
            self.stream,
            self.conn.url()
        ))
    }

    /// Creates the group when it is not known to exist (`BUSYGROUP`: it did).
    async fn group(&self) -> Result<(), TaskStoreError> {
        if self.grouped.load(Ordering::Acquire) {
            return Ok(());
        }
        let stream = self.stream.clone();
        let created = self
            .conn
            .call(move |mut m: ConnectionManager| async move {
                m.xgroup_create_mkstream::<_, _, _, ()>(&stream, GROUP, "0").await
            })
            .await;
        match created {
            Err(error) if error.code() != Some("BUSYGROUP") => Err(self.failed("create the consumer group", &error)),
            _ => {
                self.grouped.store(true, Ordering::Release);
                Ok(())
            }
        }
    }

    /// `error`, after forgetting the group when Redis says it has none (it is created again).
    fn lost(&self, what: &str, error: &RedisError) -> TaskStoreError {
        if error.code() == Some("NOGROUP") {
            self.grouped.store(false, Ordering::Release);
        }
        self.failed(what, error)
    }
}

impl RedisStreamsRunner {
    /// Takes out of the group the consumers with no pending entry idle for [`CONSUMER_FORGET`]
    /// (workers that stopped); a failure is logged and tried again at the next reclaim.
    async fn forget_stopped_consumers(&self) {
        let stream = self.stream.clone();
        let forgotten = self
            .conn
            .call(move |mut m: ConnectionManager| async move {
                let info: redis::streams::StreamInfoConsumersReply = m.xinfo_consumers(&stream, GROUP).await?;
                let stale = info
                    .consumers
                    .into_iter()
                    .filter(|c| c.pending == 0 && c.idle >= millis(CONSUMER_FORGET))
                    .map(|c| c.name);
                for name in stale {
                    m.xgroup_delconsumer::<_, _, _, ()>(&stream, GROUP, name).await?;
                }
                Ok(())
            })
            .await;
        if let Err(error) = forgotten {
            tracing::debug!(%error, "cannot take stopped consumers out of the task queue's group; trying again later");
        }
    }
}

/// The deliveries of stream entries.
fn deliveries(ids: Vec<redis::streams::StreamId>) -> Vec<Delivery> {
    ids.into_iter()
        .map(|entry| {
            let task: Option<String> = entry.get("task");
            Delivery { entry: entry.id, task: task.unwrap_or_default() }
        })
        .collect()
}

/// `duration` in whole milliseconds for a command.
fn millis(duration: Duration) -> usize {
    usize::try_from(duration.as_millis()).unwrap_or(usize::MAX)
}

impl TaskRunner for RedisStreamsRunner {
    fn queues(&self) -> bool {
        true
    }

    fn takes(&self) -> bool {
        self.takes
    }

    fn submit<'a>(&'a self, task: &'a str) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        Box::pin(async move {
            self.group().await?;
            let (stream, cap, task) = (self.stream.clone(), self.max_queued, task.to_owned());
            let added: Option<String> = self
                .conn
                .call(move |mut m: ConnectionManager| async move {
                    redis::Script::new(SUBMIT).key(stream).arg(cap).arg(task).invoke_async(&mut m).await
                })
                .await
                .map_err(|error| self.failed("queue a task", &error))?;
            match added {
                Some(_) => Ok(()),
                None => Err(TaskStoreError::Failed(format!(
                    "the task queue {} holds {} entries, its cap; wait for tasks to end, or raise the cap \
                     (RedisStreamsRunner::max_queued)",
                    self.stream, self.max_queued
                ))),
            }
        })
    }

    fn next<'a>(&'a self, worker: &'a str, max: usize) -> BoxFuture<'a, Result<Vec<Delivery>, TaskStoreError>> {
        Box::pin(async move {
            self.group().await?;
            let (stream, worker) = (self.stream.clone(), worker.to_owned());
            let options = StreamReadOptions::default().group(GROUP, worker).count(max.max(1)).block(millis(READ_BLOCK));
            let read: Option<StreamReadReply> = self
                .reads
                .call(
                    move |mut m: ConnectionManager| async move { m.xread_options(&[&stream], &[">"], &options).await },
                )
                .await
                .map_err(|error| self.lost("read", &error))?;
            Ok(read
                .map(|reply| reply.keys.into_iter().flat_map(|key| deliveries(key.ids)).collect())
                .unwrap_or_default())
        })
    }

    fn reclaim<'a>(
        &'a self,
        worker: &'a str,
        idle: Duration,
        max: usize,
    ) -> BoxFuture<'a, Result<Vec<Delivery>, TaskStoreError>> {
        Box::pin(async move {
            self.group().await?;
            let (stream, worker) = (self.stream.clone(), worker.to_owned());
            let options = StreamAutoClaimOptions::default().count(max.max(1));
            let claimed: StreamAutoClaimReply = self
                .conn
                .call(move |mut m: ConnectionManager| async move {
                    m.xautoclaim_options(&stream, GROUP, worker, millis(idle), "0-0", options).await
                })
                .await
                .map_err(|error| self.lost("reclaim idle entries", &error))?;
            self.forget_stopped_consumers().await;
            Ok(deliveries(claimed.claimed))
        })
    }

    fn hold<'a>(&'a self, worker: &'a str, delivery: &'a Delivery) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        Box::pin(async move {
            let (stream, worker, entry) = (self.stream.clone(), worker.to_owned(), delivery.entry.clone());
            self.conn
                .call(move |mut m: ConnectionManager| async move {
                    redis::cmd("XCLAIM")
                        .arg(&stream)
                        .arg(GROUP)
                        .arg(worker)
                        .arg(0)
                        .arg(entry)
                        .arg("JUSTID")
                        .query_async::<redis::Value>(&mut m)
                        .await
                })
                .await
                .map(drop)
                .map_err(|error| self.lost("hold an entry", &error))
        })
    }

    fn settle<'a>(&'a self, delivery: &'a Delivery) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        Box::pin(async move {
            let (stream, entry) = (self.stream.clone(), delivery.entry.clone());
            self.conn
                .call(move |mut m: ConnectionManager| async move {
                    redis::pipe()
                        .atomic()
                        .xack(&stream, GROUP, &[&entry])
                        .ignore()
                        .xdel(&stream, &[&entry])
                        .ignore()
                        .query_async::<()>(&mut m)
                        .await
                })
                .await
                .map_err(|error| self.failed("settle an entry", &error))
        })
    }
}
