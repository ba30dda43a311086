//! Stores on Redis, for state shared by many server processes (feature `redis`).
//!
//! This module lives in `tool-runtime` beside the [`OutputStore`] trait it implements, behind the
//! default-off cargo feature `redis`, so that a framework user who keeps the embedded file store
//! builds no Redis client at all; `tool-std` builds its Redis session store on the pieces here
//! ([`RedisConnection`], [`RedisEntries`]) with its own feature `redis`, and the `toolbox`
//! binary turns both on (`--store redis://HOST:PORT/DB`).
//!
//! - [`RedisConnection`]: one `redis` [`ConnectionManager`] (it reconnects by itself after Redis
//!   restarts or the network drops) driven by a runtime of its own, one thread named `redis-io`.
//!   The store traits are synchronous and are called from tokio's blocking pool
//!   ([`OutputStore::blocks`] is `true`): each command is sent to that thread and the caller waits
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
//! - [`RedisStore`]: the [`OutputStore`] on it. Texts are cut into chunks of
//!   [`REDIS_CHUNK_BYTES`] (256 KiB) keys while they stream in, with the line index
//!   ([`CHECKPOINT_LINES`] checkpoints) in a key of its own; reads fetch one chunk at a time, so a
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

use std::fmt;
use std::future::Future;
use std::io::{self, Read};
use std::sync::{Arc, LazyLock, mpsc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{RedisError, Script};

use crate::clock::{Clock, SystemClock};
use crate::output::scope::{OutputScope, ScopeKey};
use crate::output::store::{
    CHECKPOINT_LINES, IndexBuilder, OutputStore, StoreError, StoredInfo, parts_bytes, validate_ref_id,
};
use crate::output::{DEFAULT_OUTPUT_LIMITS, Expiry, StoreLimits, mint_ref_id};
use crate::result::ContentPart;

/// Bytes of one text chunk of a [`RedisStore`] entry: 256 KiB (262,144). Large enough that a
/// 1 GB output is 4,096 keys, small enough that a reader holds little.
pub const REDIS_CHUNK_BYTES: usize = 256 * 1024;

/// Bytes a [`RedisStore`] counts for each output beside its text, line index, typed parts and
/// owner: its keys and its slots in the bookkeeping (an estimate of Redis's memory for them).
pub const REDIS_ENTRY_OVERHEAD: u64 = 256;

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

/// Microseconds since the Unix epoch of `at` (0 before it).
fn unix_us(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// What [`RedisEntries::use_entry`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryUse {
    /// The entry is there and belongs to the caller; its keys' time to live starts again.
    Live(LiveEntry),
    /// The entry is there and belongs to another owner (nothing was changed).
    OtherOwner,
    /// The entry was the caller's and was let go (remembered for the time to live).
    Gone(Expiry),
    /// Nothing is known of it for this owner.
    Unknown,
}

/// An entry as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveEntry {
    /// How many times it was saved: 1 after the first.
    pub rev: u64,
    /// The generation of its sub-keys ([`RedisEntries::sub_key`]).
    pub generation: String,
    /// How many sub-keys it has.
    pub subs: u64,
    /// Its data.
    pub data: Vec<u8>,
}

/// An entry to save with [`RedisEntries::publish`]. Its sub-keys must be written (with
/// [`RedisEntries::sub_key`] of this `generation`) before it is published.
#[derive(Debug, Clone, Copy)]
pub struct NewEntry<'a> {
    /// Who owns it: only a reader giving the same string sees it.
    pub owner: &'a str,
    /// The generation of its sub-keys; a new one for each save that writes sub-keys.
    pub generation: &'a str,
    /// How many sub-keys it has.
    pub subs: u64,
    /// Bytes it counts against the size cap.
    pub size: u64,
    /// Its data (kept in its hash).
    pub data: &'a [u8],
    /// `Some(rev)`: save only when the stored revision is `rev` (0 for none), else
    /// [`Published::Conflict`]. `None`: save whatever is stored.
    pub expect_rev: Option<u64>,
    /// Refuse ([`Published::OtherOwner`]) when an entry of another owner is stored under the id.
    pub same_owner_only: bool,
}

/// What [`RedisEntries::publish`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// Saved, with this revision.
    Saved {
        /// The new revision.
        rev: u64,
    },
    /// The stored revision was not the expected one: nothing was saved.
    Conflict,
    /// An entry of another owner is stored under the id: nothing was saved.
    OtherOwner,
}

/// What [`RedisEntries::remove`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removed {
    /// The entry was the caller's and is gone.
    Removed,
    /// Nothing was stored under the id.
    Nothing,
    /// The entry belongs to another owner: it was kept.
    OtherOwner,
}

/// Bounded entries of one namespace on a [`RedisConnection`] (see the [module docs](self) for
/// the keys and the rules). Every method is one round trip to Redis and atomic there.
#[derive(Clone)]
pub struct RedisEntries {
    conn: RedisConnection,
    namespace: Arc<str>,
    limits: StoreLimits,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for RedisEntries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisEntries")
            .field("url", &self.conn.url())
            .field("namespace", &self.namespace)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// The functions every script shares (ARGV[1] is the namespace).
const LUA_PRELUDE: &str = r"
local ns = ARGV[1]
local lru, entries, total = ns .. '-lru', ns .. '-entries', ns .. '-total'
local function main_key(id) return ns .. ':' .. id end
local function sub_key(id, gen, k) return ns .. ':' .. id .. ':' .. gen .. ':' .. k end
local function split(s)
  local tab = string.find(s, '\t', 1, true)
  return string.sub(s, 1, tab - 1), string.sub(s, tab + 1)
end
local function delete_subs(id, gen, subs)
  if gen then
    for k = 0, (tonumber(subs) or 0) - 1 do redis.call('DEL', sub_key(id, gen, k)) end
  end
end
local function forget(id)
  local rec = redis.call('HGET', entries, id)
  redis.call('HDEL', entries, id)
  redis.call('ZREM', lru, id)
  if not rec then return nil end
  local size, owner = split(rec)
  redis.call('DECRBY', total, size)
  return owner
end
local function let_go(id, why, ttl)
  local m = redis.call('HMGET', main_key(id), 'gen', 'subs')
  delete_subs(id, m[1], m[2])
  redis.call('DEL', main_key(id))
  local owner = forget(id)
  if owner then redis.call('SET', ns .. '-gone:' .. id, why .. '\t' .. owner, 'PX', ttl) end
end
local function touch(id, gen, subs, ttl, now)
  redis.call('PEXPIRE', main_key(id), ttl)
  for k = 0, subs - 1 do redis.call('PEXPIRE', sub_key(id, gen, k), ttl) end
  -- Strictly increasing, so that two uses in one microsecond keep their order.
  local top = redis.call('ZRANGE', lru, -1, -1, 'WITHSCORES')
  if top[2] and tonumber(top[2]) >= now then now = tonumber(top[2]) + 1 end
  redis.call('ZADD', lru, now, id)
end
";

/// ARGV: ns, id, owner, now (Unix microseconds), ttl (ms). Answers `{'live', rev, gen, subs, data}`,
/// `{'other'}`, `{'ttl'}`, `{'cap'}` or `{'unknown'}`.
static USE_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{LUA_PRELUDE}
local id, owner, now, ttl = ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local m = redis.call('HMGET', main_key(id), 'owner', 'gen', 'subs', 'rev', 'data')
if m[1] then
  if m[1] ~= owner then return {{'other'}} end
  touch(id, m[2], tonumber(m[3]), ttl, now)
  return {{'live', m[4], m[2], m[3], m[5]}}
end
-- Its record is kept while its keys are gone: its time to live ran out.
if redis.call('HEXISTS', entries, id) == 1 then let_go(id, 'ttl', ttl) end
local gone = redis.call('GET', ns .. '-gone:' .. id)
if gone then
  local why, gone_owner = split(gone)
  if gone_owner == owner then return {{why}} end
end
return {{'unknown'}}
"
    ))
});

/// ARGV: ns, id, owner, gen, subs, size, data, now (Unix microseconds), ttl (ms), max bytes, expected rev (or ''), '1'
/// to refuse another owner's entry. Answers `{'ok', rev}`, `{'conflict'}` or `{'other'}`.
static PUBLISH_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{LUA_PRELUDE}
local id, owner, gen, subs, size, data = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local now, ttl, max, expect, guard = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11], ARGV[12]
local key = main_key(id)
local m = redis.call('HMGET', key, 'owner', 'rev', 'gen', 'subs')
if guard == '1' and m[1] and m[1] ~= owner then return {{'other'}} end
local rev = tonumber(m[2]) or 0
if expect ~= '' and tonumber(expect) ~= rev then return {{'conflict'}} end
if m[3] ~= gen then delete_subs(id, m[3], m[4]) end
forget(id)
redis.call('DEL', key, ns .. '-gone:' .. id)
redis.call('HSET', key, 'owner', owner, 'gen', gen, 'subs', subs, 'rev', rev + 1, 'data', data)
touch(id, gen, subs, ttl, now)
redis.call('HSET', entries, id, size .. '\t' .. owner)
redis.call('INCRBY', total, size)
-- At most 64 entries past their time to live, then the least recently used while over the cap.
for _, old in ipairs(redis.call('ZRANGEBYSCORE', lru, '-inf', now - ttl * 1000, 'LIMIT', 0, 64)) do
  if old ~= id then let_go(old, 'ttl', ttl) end
end
while tonumber(redis.call('GET', total) or '0') > max do
  local oldest = redis.call('ZRANGE', lru, 0, 1)
  local victim = oldest[1]
  if victim == id then victim = oldest[2] end
  if not victim then break end
  let_go(victim, 'cap', ttl)
end
return {{'ok', tostring(rev + 1)}}
"
    ))
});

/// ARGV: ns, id, owner. Answers `removed`, `none` or `other`.
static REMOVE_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{LUA_PRELUDE}
local id, owner = ARGV[2], ARGV[3]
local m = redis.call('HMGET', main_key(id), 'owner', 'gen', 'subs')
if not m[1] then return 'none' end
if m[1] ~= owner then return 'other' end
delete_subs(id, m[2], m[3])
redis.call('DEL', main_key(id))
forget(id)
return 'removed'
"
    ))
});

/// A number from a script's answer.
fn number(bytes: Option<&Vec<u8>>) -> Result<u64, RedisError> {
    bytes
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other("a store script answered something that is not a number").into())
}

fn expiry(why: &[u8]) -> Option<Expiry> {
    match why {
        b"ttl" => Some(Expiry::TimeToLive),
        b"cap" => Some(Expiry::SizeCap),
        _ => None,
    }
}

impl RedisEntries {
    /// The entries of `namespace` (e.g. `tool:out`) on `conn`, bounded by `limits`, their last
    /// uses read from `clock` (Redis's own timers expire the keys).
    pub fn new(conn: RedisConnection, namespace: &str, limits: StoreLimits, clock: Arc<dyn Clock>) -> Self {
        Self { conn, namespace: namespace.into(), limits, clock }
    }

    /// The connection.
    pub fn connection(&self) -> &RedisConnection {
        &self.conn
    }

    /// The limits.
    pub fn limits(&self) -> StoreLimits {
        self.limits
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.limits.ttl.as_millis()).unwrap_or(u64::MAX).max(1)
    }

    /// The key of an entry's `k`-th sub-key of `generation`: [`RedisEntries::sub_key_prefix`]
    /// and `k` in decimal.
    pub fn sub_key(&self, id: &str, generation: &str, k: u64) -> String {
        format!("{}{k}", self.sub_key_prefix(id, generation))
    }

    /// What the sub-keys of an entry's `generation` start with: `NS:ID:GEN:`.
    pub fn sub_key_prefix(&self, id: &str, generation: &str) -> String {
        format!("{}:{id}:{generation}:", self.namespace)
    }

    /// Writes an entry's sub-key (with the time to live, so that one of a save that never
    /// publishes goes by itself).
    ///
    /// # Errors
    /// The Redis error.
    pub fn write_sub_key(&self, key: String, value: Vec<u8>) -> Result<(), RedisError> {
        self.start_sub_key(key, value).wait()
    }

    /// [`RedisEntries::write_sub_key`] without waiting for it.
    pub fn start_sub_key(&self, key: String, value: Vec<u8>) -> Pending<()> {
        let ttl = self.ttl_ms();
        self.conn.start(move |mut con| async move {
            redis::cmd("SET").arg(key).arg(value).arg("PX").arg(ttl).query_async::<()>(&mut con).await
        })
    }

    /// Looks the entry up for `owner`, counting a use when it is the owner's.
    ///
    /// # Errors
    /// The Redis error.
    pub fn use_entry(&self, id: &str, owner: &str) -> Result<EntryUse, RedisError> {
        let args = (self.namespace.to_string(), id.to_owned(), owner.to_owned());
        let (now, ttl) = (unix_us(self.clock.now()), self.ttl_ms());
        let answer: Vec<Vec<u8>> = self.conn.run(move |mut con| async move {
            USE_SCRIPT.arg(args.0).arg(args.1).arg(args.2).arg(now).arg(ttl).invoke_async(&mut con).await
        })?;
        Ok(match answer.first().map(Vec::as_slice) {
            Some(b"live") => EntryUse::Live(LiveEntry {
                rev: number(answer.get(1))?,
                generation: String::from_utf8_lossy(answer.get(2).map_or(&[][..], Vec::as_slice)).into_owned(),
                subs: number(answer.get(3))?,
                data: answer.get(4).cloned().unwrap_or_default(),
            }),
            Some(b"other") => EntryUse::OtherOwner,
            Some(why) => expiry(why).map_or(EntryUse::Unknown, EntryUse::Gone),
            None => EntryUse::Unknown,
        })
    }

    /// The entry as stored, whoever owns it; no use is counted.
    ///
    /// # Errors
    /// The Redis error.
    pub fn peek(&self, id: &str) -> Result<Option<LiveEntry>, RedisError> {
        let key = format!("{}:{id}", self.namespace);
        let fields: (Option<u64>, Option<String>, Option<u64>, Option<Vec<u8>>) =
            self.conn.run(move |mut con| async move {
                redis::cmd("HMGET").arg(key).arg("rev").arg("gen").arg("subs").arg("data").query_async(&mut con).await
            })?;
        Ok(match fields {
            (Some(rev), Some(generation), Some(subs), Some(data)) => Some(LiveEntry { rev, generation, subs, data }),
            _ => None,
        })
    }

    /// Saves the entry (see [`NewEntry`]), then prunes: at most 64 entries past their time to
    /// live, then the least recently used while the entries are over the size cap (never this
    /// one).
    ///
    /// # Errors
    /// The Redis error.
    pub fn publish(&self, id: &str, entry: &NewEntry<'_>) -> Result<Published, RedisError> {
        self.publish_with(id, entry, Vec::new())
    }

    /// [`RedisEntries::publish`], writing `sub_keys` (key, value) first, in the same trip to the
    /// connection's thread (a pipeline, then the script).
    ///
    /// # Errors
    /// The Redis error (nothing is published when a sub-key could not be written).
    pub fn publish_with(
        &self,
        id: &str,
        entry: &NewEntry<'_>,
        sub_keys: Vec<(String, Vec<u8>)>,
    ) -> Result<Published, RedisError> {
        let args = (
            self.namespace.to_string(),
            id.to_owned(),
            entry.owner.to_owned(),
            entry.generation.to_owned(),
            entry.subs,
            entry.size,
            entry.data.to_vec(),
        );
        let expect = entry.expect_rev.map(|r| r.to_string()).unwrap_or_default();
        let guard = if entry.same_owner_only { "1" } else { "0" };
        let (now, ttl, max) = (unix_us(self.clock.now()), self.ttl_ms(), self.limits.max_bytes);
        let answer: Vec<Vec<u8>> = self.conn.run(move |mut con| async move {
            if !sub_keys.is_empty() {
                let mut pipe = redis::pipe();
                for (key, value) in sub_keys {
                    pipe.cmd("SET").arg(key).arg(value).arg("PX").arg(ttl).ignore();
                }
                pipe.query_async::<()>(&mut con).await?;
            }
            let mut call = PUBLISH_SCRIPT.prepare_invoke();
            call.arg(args.0).arg(args.1).arg(args.2).arg(args.3).arg(args.4).arg(args.5).arg(args.6);
            call.arg(now).arg(ttl).arg(max).arg(expect).arg(guard);
            call.invoke_async(&mut con).await
        })?;
        Ok(match answer.first().map(Vec::as_slice) {
            Some(b"ok") => Published::Saved { rev: number(answer.get(1))? },
            Some(b"conflict") => Published::Conflict,
            _ => Published::OtherOwner,
        })
    }

    /// Removes the entry when it is `owner`'s.
    ///
    /// # Errors
    /// The Redis error.
    pub fn remove(&self, id: &str, owner: &str) -> Result<Removed, RedisError> {
        let args = (self.namespace.to_string(), id.to_owned(), owner.to_owned());
        let answer: String = self.conn.run(move |mut con| async move {
            REMOVE_SCRIPT.arg(args.0).arg(args.1).arg(args.2).invoke_async(&mut con).await
        })?;
        Ok(match answer.as_str() {
            "removed" => Removed::Removed,
            "other" => Removed::OtherOwner,
            _ => Removed::Nothing,
        })
    }

    /// The bytes of all entries, as counted against the size cap.
    ///
    /// # Errors
    /// The Redis error.
    pub fn total_bytes(&self) -> Result<u64, RedisError> {
        let key = format!("{}-total", self.namespace);
        let total: Option<u64> =
            self.conn.run(move |mut con| async move { redis::cmd("GET").arg(key).query_async(&mut con).await })?;
        Ok(total.unwrap_or(0))
    }

    /// The number of entries the bookkeeping holds.
    ///
    /// # Errors
    /// The Redis error.
    pub fn count(&self) -> Result<u64, RedisError> {
        let key = format!("{}-lru", self.namespace);
        self.conn.run(move |mut con| async move { redis::cmd("ZCARD").arg(key).query_async(&mut con).await })
    }

    /// A message for a failure of the store named `what` (`output store`, `session store`): the
    /// URL, the error and what to check.
    pub fn failure(&self, what: &str, error: &dyn fmt::Display) -> String {
        format!(
            "the redis {what} at {} failed ({error}); check that redis-server runs there and accepts connections, \
             or choose another store with `--store` or `TOOL_STORE`",
            self.conn.url()
        )
    }
}

/// The default namespace of [`RedisStore`].
pub const OUTPUT_NAMESPACE: &str = "tool:out";

/// How many chunk writes of one output may be under way at once.
const CHUNKS_IN_FLIGHT: usize = 4;

/// Sub-key of an output's line index.
const INDEX_SUB: u64 = 0;
/// Sub-key of an output's typed parts.
const PARTS_SUB: u64 = 1;
/// Sub-key of an output's first text chunk.
const FIRST_CHUNK_SUB: u64 = 2;

/// The [`OutputStore`] on Redis (see the [module docs](self)): many server processes sharing one
/// Redis read each other's outputs, each in the [`OutputScope`] it was made in, exactly like the
/// other stores (a ref of another scope reads as unknown). Bounded by its [`StoreLimits`]
/// (default [`DEFAULT_OUTPUT_LIMITS`]): an entry's size is the bytes of its text, its line index,
/// its typed parts (as JSON) and its scope's ids, plus [`REDIS_ENTRY_OVERHEAD`]. A use is a scope
/// check ([`OutputStore::check_scope`], which a [`ScopedStore`](crate::output::ScopedStore) does
/// at its first read of a ref): it sets the time to live of every key of the entry again. An
/// output replaced while it is read makes the reader fail with an error saying so.
///
/// The entry's data is `BYTES LINES PARTS CHECKPOINTS` (decimal, space-separated); the line index
/// sub-key holds the byte offset of every [`CHECKPOINT_LINES`]th line start after line 0, as
/// little-endian `u64`s.
#[derive(Clone, Debug)]
pub struct RedisStore {
    entries: RedisEntries,
}

/// An output's data, parsed.
#[derive(Debug, Clone, Copy)]
struct OutputData {
    info: StoredInfo,
    checkpoints: u64,
}

impl OutputData {
    fn encode(&self) -> Vec<u8> {
        format!("{} {} {} {}", self.info.bytes, self.info.lines, self.info.parts, self.checkpoints).into_bytes()
    }

    fn decode(ref_id: &str, data: &[u8]) -> Result<Self, StoreError> {
        let text = std::str::from_utf8(data).unwrap_or_default();
        let numbers: Vec<u64> = text.split(' ').filter_map(|n| n.parse().ok()).collect();
        match numbers[..] {
            [bytes, lines, parts, checkpoints] => Ok(Self {
                info: StoredInfo { bytes, lines, parts: usize::try_from(parts).unwrap_or(usize::MAX) },
                checkpoints,
            }),
            _ => Err(StoreError::Io {
                ref_id: ref_id.to_owned(),
                message: format!("its record in redis is damaged ({text:?}); call the tool again"),
            }),
        }
    }
}

impl RedisStore {
    /// A store on `conn` in [`OUTPUT_NAMESPACE`] with [`DEFAULT_OUTPUT_LIMITS`] and the system
    /// clock.
    pub fn new(conn: RedisConnection) -> Self {
        Self::with_limits(conn, OUTPUT_NAMESPACE, DEFAULT_OUTPUT_LIMITS, Arc::new(SystemClock))
    }

    /// A store on `conn` in `namespace`, bounded by `limits`, its last uses read from `clock`.
    pub fn with_limits(conn: RedisConnection, namespace: &str, limits: StoreLimits, clock: Arc<dyn Clock>) -> Self {
        Self { entries: RedisEntries::new(conn, namespace, limits, clock) }
    }

    /// The bookkeeping (for its counts).
    pub fn entries(&self) -> &RedisEntries {
        &self.entries
    }

    fn failed(&self, ref_id: &str, error: &RedisError) -> StoreError {
        StoreError::Io { ref_id: ref_id.to_owned(), message: self.entries.failure("output store", error) }
    }

    /// The entry and its data, whoever owns it; [`StoreError::NotFound`] when there is none.
    fn stored(&self, ref_id: &str) -> Result<(LiveEntry, OutputData), StoreError> {
        validate_ref_id(ref_id)?;
        let entry = self
            .entries
            .peek(ref_id)
            .map_err(|e| self.failed(ref_id, &e))?
            .ok_or_else(|| StoreError::NotFound { ref_id: ref_id.to_owned() })?;
        let data = OutputData::decode(ref_id, &entry.data)?;
        Ok((entry, data))
    }

    /// Streams `text` into chunk keys of `generation`; returns the line index built on the way.
    ///
    /// The write of a chunk overlaps the reading of the next: at most [`CHUNKS_IN_FLIGHT`] are
    /// being written at once, so at most that many and one more chunk are in memory.
    fn write_chunks(&self, ref_id: &str, generation: &str, text: &mut dyn Read) -> Result<IndexBuilder, StoreError> {
        let mut index = IndexBuilder::new();
        let mut in_flight = std::collections::VecDeque::new();
        let wait = |pending: Pending<()>| pending.wait().map_err(|e| self.failed(ref_id, &e));
        for chunk in 0u64.. {
            let mut buf = Vec::with_capacity(REDIS_CHUNK_BYTES);
            let read = text
                .take(REDIS_CHUNK_BYTES as u64)
                .read_to_end(&mut buf)
                .map_err(|e| StoreError::Io { ref_id: ref_id.to_owned(), message: e.to_string() })?;
            if read > 0 {
                index.feed(&buf);
                if in_flight.len() == CHUNKS_IN_FLIGHT
                    && let Some(oldest) = in_flight.pop_front()
                {
                    wait(oldest)?;
                }
                let key = self.entries.sub_key(ref_id, generation, FIRST_CHUNK_SUB + chunk);
                in_flight.push_back(self.entries.start_sub_key(key, buf));
            }
            if read < REDIS_CHUNK_BYTES {
                break;
            }
        }
        in_flight.into_iter().try_for_each(wait)?;
        Ok(index)
    }
}

/// Reads a stored text chunk by chunk, fetching the next chunk while the current one is read (so
/// at most two chunks are in memory).
struct ChunkReader {
    entries: RedisEntries,
    /// `NS:ID:GEN:` — a chunk's key is this and its sub-key number.
    key_base: String,
    ref_id: String,
    next_chunk: u64,
    chunks: u64,
    /// Bytes to skip in the first chunk fetched.
    skip: usize,
    buf: Vec<u8>,
    pos: usize,
    /// The fetch of chunk `next_chunk`, when started.
    ahead: Option<Pending<Option<Vec<u8>>>>,
}

impl ChunkReader {
    /// Starts fetching chunk `chunk`, `skip` bytes into it; `None` (the key's value) when it is
    /// gone.
    fn fetch(&self, chunk: u64, skip: usize) -> Pending<Option<Vec<u8>>> {
        let key = format!("{}{}", self.key_base, FIRST_CHUNK_SUB + chunk);
        self.entries.connection().start(move |mut con| async move {
            if skip == 0 {
                redis::cmd("GET").arg(key).query_async(&mut con).await
            } else {
                let (found, exists): (Vec<u8>, bool) = redis::pipe()
                    .cmd("GETRANGE")
                    .arg(&key)
                    .arg(skip)
                    .arg(-1)
                    .cmd("EXISTS")
                    .arg(&key)
                    .query_async(&mut con)
                    .await?;
                Ok(exists.then_some(found))
            }
        })
    }
}

impl Read for ChunkReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            if self.next_chunk >= self.chunks {
                return Ok(0);
            }
            let skip = std::mem::take(&mut self.skip);
            let pending = match self.ahead.take() {
                Some(pending) => pending,
                None => self.fetch(self.next_chunk, skip),
            };
            let chunk = pending.wait().map_err(|e| io::Error::other(self.entries.failure("output store", &e)))?;
            let Some(chunk) = chunk else {
                return Err(io::Error::other(format!(
                    "the cached output under ref_id `{}` was replaced or expired while it was read; call the tool again",
                    self.ref_id
                )));
            };
            self.buf = chunk;
            self.pos = 0;
            self.next_chunk += 1;
            if self.next_chunk < self.chunks {
                self.ahead = Some(self.fetch(self.next_chunk, 0));
            }
            if self.buf.is_empty() {
                return Ok(0);
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl OutputStore for RedisStore {
    fn put_scoped(
        &self,
        scope: OutputScope<'_>,
        ref_id: &str,
        text: &mut dyn Read,
        parts: &[ContentPart],
    ) -> Result<StoredInfo, StoreError> {
        validate_ref_id(ref_id)?;
        let generation =
            mint_ref_id().map_err(|e| StoreError::Io { ref_id: ref_id.to_owned(), message: e.to_string() })?;
        let index = self.write_chunks(ref_id, &generation, text)?;
        let info = StoredInfo { bytes: index.bytes, lines: index.lines(), parts: parts.len() };
        let checkpoints: Vec<u8> = index.checkpoints.iter().flat_map(|c| c.to_le_bytes()).collect();
        let parts_json = serde_json::to_vec(parts)
            .map_err(|e| StoreError::Io { ref_id: ref_id.to_owned(), message: e.to_string() })?;
        let owner = serde_json::to_string(&ScopeKey::of(scope))
            .map_err(|e| StoreError::Io { ref_id: ref_id.to_owned(), message: e.to_string() })?;
        let size = info.bytes
            + checkpoints.len() as u64
            + parts_bytes(parts)
            + ScopeKey::of(scope).bytes()
            + REDIS_ENTRY_OVERHEAD;
        let chunks = info.bytes.div_ceil(REDIS_CHUNK_BYTES as u64);
        let sub_keys = vec![
            (self.entries.sub_key(ref_id, &generation, INDEX_SUB), checkpoints),
            (self.entries.sub_key(ref_id, &generation, PARTS_SUB), parts_json),
        ];
        let data = OutputData { info, checkpoints: index.checkpoints.len() as u64 }.encode();
        let entry = NewEntry {
            owner: &owner,
            generation: &generation,
            subs: FIRST_CHUNK_SUB + chunks,
            size,
            data: &data,
            expect_rev: None,
            same_owner_only: false,
        };
        self.entries.publish_with(ref_id, &entry, sub_keys).map_err(|e| self.failed(ref_id, &e))?;
        Ok(info)
    }

    fn check_scope(&self, ref_id: &str, scope: OutputScope<'_>) -> Result<(), StoreError> {
        validate_ref_id(ref_id)?;
        let owner = serde_json::to_string(&ScopeKey::of(scope))
            .map_err(|e| StoreError::Io { ref_id: ref_id.to_owned(), message: e.to_string() })?;
        match self.entries.use_entry(ref_id, &owner).map_err(|e| self.failed(ref_id, &e))? {
            EntryUse::Live(_) => Ok(()),
            EntryUse::Gone(why) => Err(StoreError::Expired { ref_id: ref_id.to_owned(), why }),
            EntryUse::OtherOwner | EntryUse::Unknown => Err(StoreError::NotFound { ref_id: ref_id.to_owned() }),
        }
    }

    fn info(&self, ref_id: &str) -> Result<StoredInfo, StoreError> {
        Ok(self.stored(ref_id)?.1.info)
    }

    fn open_at(&self, ref_id: &str, offset: u64) -> Result<Box<dyn Read + Send>, StoreError> {
        let (entry, data) = self.stored(ref_id)?;
        let chunk_bytes = REDIS_CHUNK_BYTES as u64;
        let chunks = entry.subs.saturating_sub(FIRST_CHUNK_SUB);
        let offset = offset.min(data.info.bytes);
        Ok(Box::new(ChunkReader {
            entries: self.entries.clone(),
            key_base: self.entries.sub_key_prefix(ref_id, &entry.generation),
            ref_id: ref_id.to_owned(),
            next_chunk: offset / chunk_bytes,
            chunks,
            skip: usize::try_from(offset % chunk_bytes).unwrap_or(0),
            buf: Vec::new(),
            pos: 0,
            ahead: None,
        }))
    }

    fn checkpoint(&self, ref_id: &str, line: u64) -> Result<(u64, u64), StoreError> {
        let (entry, data) = self.stored(ref_id)?;
        let k = (line / CHECKPOINT_LINES).min(data.checkpoints);
        if k == 0 {
            return Ok((0, 0));
        }
        let key = self.entries.sub_key(ref_id, &entry.generation, INDEX_SUB);
        let start = (k - 1) * 8;
        let bytes: Vec<u8> = self
            .entries
            .connection()
            .run(move |mut con| async move {
                redis::cmd("GETRANGE").arg(key).arg(start).arg(start + 7).query_async(&mut con).await
            })
            .map_err(|e| self.failed(ref_id, &e))?;
        let offset: [u8; 8] = bytes.try_into().map_err(|_| StoreError::NotFound { ref_id: ref_id.to_owned() })?;
        Ok((k * CHECKPOINT_LINES, u64::from_le_bytes(offset)))
    }

    fn parts(&self, ref_id: &str) -> Result<Vec<ContentPart>, StoreError> {
        let (entry, _) = self.stored(ref_id)?;
        let key = self.entries.sub_key(ref_id, &entry.generation, PARTS_SUB);
        let bytes: Option<Vec<u8>> = self
            .entries
            .connection()
            .run(move |mut con| async move { redis::cmd("GET").arg(key).query_async(&mut con).await })
            .map_err(|e| self.failed(ref_id, &e))?;
        let bytes = bytes.ok_or_else(|| StoreError::NotFound { ref_id: ref_id.to_owned() })?;
        serde_json::from_slice(&bytes).map_err(|e| StoreError::Io {
            ref_id: ref_id.to_owned(),
            message: format!("its typed parts in redis are damaged ({e}); call the tool again"),
        })
    }

    fn blocks(&self) -> bool {
        true
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
