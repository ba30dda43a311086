//! [`RedisEntries`]: the bookkeeping of bounded entries on Redis, in Lua scripts (see the module
//! docs of [`redis`](super)).

use std::fmt;
use std::io;
use std::sync::{Arc, LazyLock};
use std::time::{SystemTime, UNIX_EPOCH};

use redis::{RedisError, Script};

use super::{Pending, RedisConnection};
use crate::clock::Clock;
use crate::output::{Expiry, StoreLimits};

/// Bytes a [`crate::redis::RedisStore`] counts for each output beside its text, line index, typed parts and
/// owner: its keys and its slots in the bookkeeping (an estimate of Redis's memory for them).
pub const REDIS_ENTRY_OVERHEAD: u64 = 256;

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

/// Bounded entries of one namespace on a [`RedisConnection`] (see the [module docs](crate::redis) for
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
