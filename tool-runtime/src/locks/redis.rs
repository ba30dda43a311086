//! [`RedisLocks`]: the places of resource locks and concurrency limits shared by the workers of a
//! cluster on one Redis (feature `redis`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use redis::Script;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::{LockError, LockGuard, LockStore};
use crate::output::store::redis::RedisConnection;

/// The default lease of a held place: 10 seconds, renewed every third of it while the call runs.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// The namespace of the lock keys by default.
pub const LOCK_NAMESPACE: &str = "tool:lock";

/// How often a waiter asks again at most: 100 ms (it starts at 5 ms and doubles).
const MAX_POLL: Duration = Duration::from_millis(100);

/// Takes a place, or queues for one. KEYS: holders (sorted set: token -> lease end, ms), queue
/// (sorted set: token -> ticket), alive (sorted set: waiting token -> end of its wait lease, ms),
/// counter (the last ticket). ARGV: token, permits, lease in ms. Returns 1 when the token holds a
/// place, 0 when it waits. Time is the Redis server's, so the workers' clocks do not matter.
const ACQUIRE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local token, permits, lease = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
for _, dead in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
  redis.call('ZREM', KEYS[2], dead)
  redis.call('ZREM', KEYS[3], dead)
end
local held = 0
if redis.call('ZSCORE', KEYS[1], token) then
  held = 1
else
  if not redis.call('ZSCORE', KEYS[2], token) then
    redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[4]), token)
  end
  local free = permits - redis.call('ZCARD', KEYS[1])
  if free > 0 and redis.call('ZRANK', KEYS[2], token) < free then
    redis.call('ZREM', KEYS[2], token)
    redis.call('ZREM', KEYS[3], token)
    held = 1
  else
    redis.call('ZADD', KEYS[3], now + lease, token)
  end
end
if held == 1 then redis.call('ZADD', KEYS[1], now + lease, token) end
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], lease * 3) end
return held
";

/// Renews a held place's lease. KEYS: holders and the three others (their time to live). ARGV:
/// token, lease in ms. Returns 1 when the token still held its place, 0 when its lease had lapsed
/// (the place may be another's now).
const RENEW: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ends = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not ends or tonumber(ends) < now then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[2]) * 3) end
return 1
";

/// Gives a place (or a place in the queue) back. KEYS as [`ACQUIRE`]; ARGV: token.
const RELEASE: &str = r"
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
";

/// The [`LockStore`] shared by the workers of a cluster on one Redis (feature `redis`; a single
/// Redis or a primary, not Redis Cluster: the scripts name four keys of one resource).
///
/// Per resource key (hashed with SHA-256, so no argument value is stored in clear), under the
/// namespace `NS` (default [`LOCK_NAMESPACE`]): `NS:HASH:held` (the holders and the end of their
/// leases), `NS:HASH:queue` (the waiters by ticket), `NS:HASH:alive` (the end of each waiter's own
/// lease) and `NS:HASH:ticket`. Every key expires three leases after its last use.
///
/// - **Leases.** A held place has a lease ([`DEFAULT_LEASE`], 10 s), renewed every third of it
///   while the call runs; a worker that dies holding a place (a crash, a kill, a lost network)
///   stops renewing, and the place is free when the lease lapses. A waiter has a lease too, renewed
///   by each of its polls, so a dead waiter leaves the queue.
/// - **Order.** Waiters are served in ticket order (the order in which their first request reached
///   Redis): first in, first out across workers, but for a waiter whose worker stalled longer than
///   a lease, which loses its place in the queue (and takes a new ticket when it asks again). A
///   waiter polls (from 5 ms, doubling, up to 100 ms), so a freed place waits up to that long.
/// - **Failures.** A Redis that cannot be reached fails the call before its body runs
///   ([`LockError`], naming the store without a password); a lease found lapsed at renewal is
///   logged (`tracing` warning) and the call goes on: the place may then be another's.
///
/// Time is the Redis server's (`TIME`), so the workers' clocks need not agree.
#[derive(Clone)]
pub struct RedisLocks {
    inner: Arc<Shared>,
}

struct Shared {
    conn: RedisConnection,
    namespace: String,
    lease: Duration,
    acquire: Script,
    renew: Script,
    release: Script,
}

impl fmt::Debug for RedisLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLocks")
            .field("url", &self.inner.conn.url())
            .field("namespace", &self.inner.namespace)
            .field("lease", &self.inner.lease)
            .finish_non_exhaustive()
    }
}

impl RedisLocks {
    /// The lock store on `conn`, under [`LOCK_NAMESPACE`], with [`DEFAULT_LEASE`].
    pub fn new(conn: RedisConnection) -> Self {
        Self::with_lease(conn, LOCK_NAMESPACE, DEFAULT_LEASE)
    }

    /// The lock store on `conn` under `namespace`, with `lease` (at least 30 ms is used: a third
    /// of it is the renewal period).
    pub fn with_lease(conn: RedisConnection, namespace: &str, lease: Duration) -> Self {
        RedisLocks {
            inner: Arc::new(Shared {
                conn,
                namespace: namespace.to_owned(),
                lease: lease.max(Duration::from_millis(30)),
                acquire: Script::new(ACQUIRE),
                renew: Script::new(RENEW),
                release: Script::new(RELEASE),
            }),
        }
    }

    /// The four Redis keys of a resource key.
    fn keys(&self, key: &str) -> [String; 4] {
        let hash = Sha256::digest(key.as_bytes());
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        let ns = &self.inner.namespace;
        ["held", "queue", "alive", "ticket"].map(|part| format!("{ns}:{hex}:{part}"))
    }

    fn failure(&self, error: &dyn fmt::Display) -> LockError {
        LockError { message: format!("the redis lock store at {} cannot be reached: {error}", self.inner.conn.url()) }
    }

    /// Runs one of the scripts on `keys` with `args`.
    async fn script(&self, script: &Script, keys: &[String; 4], args: Vec<String>) -> Result<i64, LockError> {
        let (script, keys) = (script.clone(), keys.clone());
        self.inner
            .conn
            .call(move |mut con| async move { invocation(&script, &keys, args).invoke_async(&mut con).await })
            .await
            .map_err(|e| self.failure(&e))
    }

    fn lease_ms(&self) -> String {
        self.inner.lease.as_millis().to_string()
    }
}

/// A random token naming one holder or waiter: 128 bits from the operating system.
fn token() -> String {
    let mut bytes = [0u8; 16];
    // Without randomness, a counter and the time still tell holders apart within a process; the
    // process id apart between processes.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        bytes = (nanos ^ (u128::from(std::process::id()) << 64)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A waiter's or holder's token on one key: its drop takes it out of the queue or gives its place
/// back (and stops the renewal of a held place's lease).
struct Place {
    store: RedisLocks,
    keys: [String; 4],
    token: String,
    /// Set once the place is held: stops the lease's renewal.
    renewing: Option<CancellationToken>,
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(renewing) = &self.renewing {
            renewing.cancel();
        }
        release(&self.store, self.keys.clone(), self.token.clone());
    }
}

/// Gives `token`'s place back (or its place in the queue) on the connection's thread, without
/// waiting (a drop may happen on any thread; a release that fails leaves the lease to lapse).
fn release(store: &RedisLocks, keys: [String; 4], token: String) {
    let script = store.inner.release.clone();
    store.inner.conn.detach(move |mut con| async move {
        let _: Result<i64, _> = invocation(&script, &keys, vec![token]).invoke_async(&mut con).await;
    });
}

/// `script` on the four `keys` with `args`.
fn invocation<'s>(script: &'s Script, keys: &[String; 4], args: Vec<String>) -> redis::ScriptInvocation<'s> {
    let mut invocation = script.prepare_invoke();
    for key in keys {
        invocation.key(key);
    }
    for arg in args {
        invocation.arg(arg);
    }
    invocation
}

impl LockStore for RedisLocks {
    fn acquire<'a>(&'a self, key: &'a str, permits: u32) -> BoxFuture<'a, Result<LockGuard, LockError>> {
        Box::pin(async move {
            let mut place = Place { store: self.clone(), keys: self.keys(key), token: token(), renewing: None };
            let mut pause = Duration::from_millis(5);
            loop {
                let args = vec![place.token.clone(), permits.max(1).to_string(), self.lease_ms()];
                if self.script(&self.inner.acquire, &place.keys, args).await? == 1 {
                    break;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_POLL);
            }
            let renewing = CancellationToken::new();
            tokio::spawn(renew(self.clone(), place.keys.clone(), place.token.clone(), renewing.clone()));
            place.renewing = Some(renewing);
            Ok(LockGuard::new(place))
        })
    }
}

/// Renews `token`'s lease every third of it until `stop`.
async fn renew(store: RedisLocks, keys: [String; 4], token: String, stop: CancellationToken) {
    let period = store.inner.lease / 3;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(period) => {}
        }
        match store.script(&store.inner.renew, &keys, vec![token.clone(), store.lease_ms()]).await {
            Ok(1) => {}
            Ok(_) => {
                tracing::warn!(
                    "a resource lock's lease lapsed while its call ran (the worker stalled longer than the lease); another call may hold the resource now"
                );
                return;
            }
            // Tried again at the next period; the lease lapses if Redis stays away.
            Err(error) => tracing::warn!(%error, "a resource lock's lease could not be renewed"),
        }
    }
}
