//! Stores on Redis, for state shared by many server processes (feature `redis`).
//!
//! This module lives in `tool-runtime` beside the [`crate::output::OutputStore`] trait it implements, behind the
//! default-off cargo feature `redis`, so that a framework user who keeps the embedded file store
//! builds no Redis client at all; `tool-std` builds its Redis session store on the pieces here
//! ([`RedisConnection`], [`RedisEntries`]) with its own feature `redis`, and the `toolbox`
//! binary turns both on (`--store redis://HOST:PORT/DB`).
//!
//! - [`RedisConnection`]: one `redis` [`ConnectionManager`] (it reconnects by itself after Redis
//!   restarts or the network drops) driven by a runtime of its own, one thread named `redis-io`.
//!   The store traits are synchronous and are called from tokio's blocking pool
//!   ([`crate::output::OutputStore::blocks`] is `true`): each command is sent to that thread and the caller waits
//!   for the answer, so no async worker of the caller's runtime is ever held, and calling from
//!   any thread cannot panic. Connecting is lazy: a store is made while Redis is down, and its
//!   calls fail with an error naming the store and what to check until Redis answers.
//! - [`RedisEntries`]: the bookkeeping of bounded entries, done in Lua scripts so that every step
//!   is atomic across processes: a time to live since last use on every key of an entry (each use
//!   sets it again on all of them), a size cap (a sorted set of last uses, least recently used
//!   first out; the entry just written is never evicted for its size), the owner recorded with
//!   the entry (a reader of another owner is told "unknown"), a short memory of entries let go
//!   (for the time to live) so their owner learns why, and a revision per entry for
//!   compare-and-set updates. Pruning is incremental: each write drops at most 64 entries past
//!   their time to live and then evicts while over the cap; no call scans the whole store.
//! - [`RedisStore`]: the [`crate::output::OutputStore`] on it. Texts are cut into chunks of
//!   [`REDIS_CHUNK_BYTES`] (256 KiB) keys while they stream in, with the line index
//!   ([`crate::output::CHECKPOINT_LINES`] checkpoints) in a key of its own; reads fetch one chunk at a time, so a
//!   1 GB output is never in memory at once.
//!
//! Keys, under a namespace `NS` (`tool:out` for outputs, `tool:sess` for sessions by default):
//! `NS:ID` (a hash: `owner`, `gen`, `subs`, `rev`, `data`), `NS:ID:GEN:K` (the entry's K-th
//! sub-key: for an output 0 is the line index, 1 the typed parts as JSON, 2.. the text chunks),
//! `NS-lru` (sorted set, member ID, score the last use in Unix microseconds, made strictly
//! increasing so that two uses in one microsecond keep their order), `NS-entries` (hash,
//! ID to `SIZE\tOWNER`), `NS-total` (the bytes of all entries) and `NS-gone:ID` (`WHY\tOWNER`,
//! `WHY` being `ttl` or `cap`; kept for the time to live). The three store-wide keys have no time
//! to live: they hold the live entries and those a later write prunes. The scripts name keys they
//! compute, so this needs a single Redis (or a primary with replicas), not Redis Cluster.

mod entries;
mod output;

use std::fmt;
use std::future::Future;
use std::io;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use redis::RedisError;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

pub use entries::{EntryUse, LiveEntry, NewEntry, Published, REDIS_ENTRY_OVERHEAD, RedisEntries, Removed};
pub use output::{OUTPUT_NAMESPACE, REDIS_CHUNK_BYTES, RedisStore};

/// How long a connection attempt may take: 2 seconds.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long one command may wait for its answer: 10 seconds (a 256 KiB chunk or a script
/// touching 4,096 keys takes milliseconds).
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a caller waits for the connection's thread, at most: a bound above the two
/// timeouts, so that a caller never waits forever.
const CALL_WAIT: Duration = Duration::from_secs(30);

/// A connection to one Redis, shared by the stores on it (cheap to clone).
#[derive(Clone)]
pub struct RedisConnection {
    inner: Arc<Inner>,
}

struct Inner {
    /// The address as shown in messages (without a password).
    shown: String,
    manager: ConnectionManager,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Never blocks: the last clone may be dropped on an async worker.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConnection").field("url", &self.inner.shown).finish_non_exhaustive()
    }
}

/// A Redis URL without its password, for messages.
fn shown_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}://***{}", &url[..scheme], &url[at..]),
        _ => url.to_owned(),
    }
}

impl RedisConnection {
    /// A connection to the Redis at `url` (`redis://HOST:PORT/DB` or
    /// `redis://:PASSWORD@HOST:PORT/DB`; TLS, `rediss://`, is not built in). Connects lazily: this
    /// succeeds while Redis is down, and every command then fails until it answers; a lost
    /// connection is made again by itself. A connection attempt gives up after 2 seconds (one
    /// retry, at most 500 ms later), a command after 10 seconds. Messages show the URL without its
    /// password. Starts the connection's thread (`redis-io`).
    ///
    /// # Errors
    /// A message naming the URL when it is not a Redis URL, or the thread cannot start.
    pub fn open(url: &str) -> Result<Self, String> {
        let shown = shown_url(url);
        let client = redis::Client::open(url).map_err(|e| {
            format!(
                "`{shown}` is not a redis url ({e}); write it as redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0"
            )
        })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("redis-io")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the thread of the redis store at {shown}: {e}"))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let manager = {
            let _enter = runtime.enter();
            ConnectionManager::new_lazy_with_config(client, config)
                .map_err(|e| format!("cannot use the redis store at {shown}: {e}"))?
        };
        Ok(Self { inner: Arc::new(Inner { shown, manager, runtime: Some(runtime) }) })
    }

    /// The URL, without a password.
    pub fn url(&self) -> &str {
        &self.inner.shown
    }

    /// Runs `command` on the connection's thread and waits for its result. Blocks the calling
    /// thread (call it from the blocking pool, or from a thread of your own), never an async
    /// worker of the connection's runtime.
    ///
    /// # Errors
    /// The command's error; an I/O error of kind `TimedOut` when no answer came within 30
    /// seconds, or when the connection's thread has stopped.
    pub fn run<T, F>(&self, command: impl FnOnce(ConnectionManager) -> F) -> Result<T, RedisError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, RedisError>> + Send + 'static,
    {
        self.start(command).wait()
    }

    /// Starts `command` on the connection's thread without waiting: [`Pending::wait`] gets its
    /// result. Lets a caller overlap its own work (reading the next chunk) with the command.
    pub fn start<T, F>(&self, command: impl FnOnce(ConnectionManager) -> F) -> Pending<T>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, RedisError>> + Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        if let Some(runtime) = &self.inner.runtime {
            let future = command(self.inner.manager.clone());
            runtime.spawn(async move {
                let _ = tx.send(future.await);
            });
        }
        Pending(rx)
    }
}

impl RedisConnection {
    /// Runs `command` on the connection's thread and awaits its result without blocking the
    /// caller's thread: for async callers (the lock store, `locks::RedisLocks`).
    ///
    /// # Errors
    /// The command's error; an I/O error when the connection's thread has stopped.
    pub async fn call<T, F>(&self, command: impl FnOnce(ConnectionManager) -> F) -> Result<T, RedisError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, RedisError>> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Some(runtime) = &self.inner.runtime {
            let future = command(self.inner.manager.clone());
            runtime.spawn(async move {
                let _ = tx.send(future.await);
            });
        }
        rx.await.unwrap_or_else(|_| Err(io::Error::other("the redis connection is closed").into()))
    }

    /// Runs `command` on the connection's thread and forgets it (a release that nobody waits for).
    pub fn detach<F>(&self, command: impl FnOnce(ConnectionManager) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if let Some(runtime) = &self.inner.runtime {
            runtime.spawn(command(self.inner.manager.clone()));
        }
    }
}

/// A command started with [`RedisConnection::start`].
#[derive(Debug)]
pub struct Pending<T>(mpsc::Receiver<Result<T, RedisError>>);

impl<T> Pending<T> {
    /// Waits for the command's result (at most 30 seconds).
    ///
    /// # Errors
    /// As [`RedisConnection::run`].
    pub fn wait(self) -> Result<T, RedisError> {
        match self.0.recv_timeout(CALL_WAIT) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                Err(io::Error::new(io::ErrorKind::TimedOut, "no answer within 30 s").into())
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(io::Error::other("the redis connection is closed").into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::shown_url;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(shown_url("redis://:hunter2@10.0.0.5:6379/1"), "redis://***@10.0.0.5:6379/1");
        assert_eq!(shown_url("redis://user:pw@h:1/0"), "redis://***@h:1/0");
        assert_eq!(shown_url("redis://127.0.0.1:6379/0"), "redis://127.0.0.1:6379/0");
    }
}
