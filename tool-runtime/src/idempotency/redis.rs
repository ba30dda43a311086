//! [`RedisIdempotencyStore`]: idempotency records in a Redis every worker shares (feature `redis`).

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use redis::Script;

use super::{Claim, IdempotencyStore, IdempotencyStoreError};
use crate::output::store::redis::RedisConnection;

/// The namespace of the keys by default: `tool:idem`.
pub const IDEMPOTENCY_NAMESPACE: &str = "tool:idem";

/// Claims a key, atomically. KEYS: the record (a hash: `f` the fingerprint, `m` the message once
/// ended, `p` the principal's set), the principal's set (a sorted set of its records by end
/// time). ARGV: fingerprint, lease in ms, now in ms, the most keys of one principal.
static CLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        local f = redis.call('HGET', KEYS[1], 'f')
        if f then
            local m = redis.call('HGET', KEYS[1], 'm')
            if m then return {'done', f, m} end
            return {'running', f}
        end
        local now = tonumber(ARGV[3])
        redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
        if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return {'quota'} end
        redis.call('HSET', KEYS[1], 'f', ARGV[1], 'p', KEYS[2])
        redis.call('PEXPIRE', KEYS[1], ARGV[2])
        redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), KEYS[1])
        if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
        return {'claimed'}
        ",
    )
});

/// Records the message of a held key. KEYS: the record. ARGV: message, time to live in ms, now in
/// ms.
static COMPLETE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        local p = redis.call('HGET', KEYS[1], 'p')
        if not p then return 0 end
        redis.call('HSET', KEYS[1], 'm', ARGV[1])
        redis.call('PEXPIRE', KEYS[1], ARGV[2])
        redis.call('ZADD', p, tonumber(ARGV[3]) + tonumber(ARGV[2]), KEYS[1])
        if redis.call('PTTL', p) < tonumber(ARGV[2]) then redis.call('PEXPIRE', p, ARGV[2]) end
        return 1
        ",
    )
});

/// Frees a held key. KEYS: the record.
static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        local p = redis.call('HGET', KEYS[1], 'p')
        if p then redis.call('ZREM', p, KEYS[1]) end
        redis.call('DEL', KEYS[1])
        return 1
        ",
    )
});

/// Idempotency records in Redis, shared by every worker that opens the same Redis and namespace
/// (with the same [server key](super::Idempotency::server_key)). Each record is a hash under
/// `NAMESPACE:k:<hmac>` that expires with its lease while the call runs and with its time to live
/// once it ended (Redis drops it; a worker killed mid-call leaves a record that ends with its
/// lease). Each principal's records are counted in `NAMESPACE:p:<hmac>`, at most
/// `max_per_principal` at once (default 1,000,
/// [`DEFAULT_MAX_KEYS_PER_PRINCIPAL`](super::DEFAULT_MAX_KEYS_PER_PRINCIPAL)); a message is at
/// most `max_message_bytes` (default 1 MiB). A claim is one Lua script, so two workers never both
/// hold a key. Commands run on the connection's thread, awaited from tokio's blocking pool: no
/// call holds an async worker.
#[derive(Debug, Clone)]
pub struct RedisIdempotencyStore {
    conn: RedisConnection,
    namespace: String,
    max_per_principal: usize,
    max_message_bytes: usize,
}

/// The most bytes of one kept message in a [`RedisIdempotencyStore`] by default: 1 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1 << 20;

impl RedisIdempotencyStore {
    /// A store on `conn` under `namespace` ([`IDEMPOTENCY_NAMESPACE`] is the usual one), with the
    /// default caps.
    pub fn new(conn: RedisConnection, namespace: &str) -> Self {
        Self::with_caps(conn, namespace, super::DEFAULT_MAX_KEYS_PER_PRINCIPAL, DEFAULT_MAX_MESSAGE_BYTES)
    }

    /// A store of at most `max_per_principal` keys of one principal and `max_message_bytes` bytes
    /// of one message.
    pub fn with_caps(
        conn: RedisConnection,
        namespace: &str,
        max_per_principal: usize,
        max_message_bytes: usize,
    ) -> Self {
        Self { conn, namespace: namespace.to_owned(), max_per_principal, max_message_bytes }
    }

    fn failure(&self, what: &str, error: &dyn std::fmt::Display) -> IdempotencyStoreError {
        IdempotencyStoreError(format!("the idempotency store at {} could not {what}: {error}", self.conn.url()))
    }

    /// Runs `script` with `keys` and `args` on the connection's thread, awaited from the blocking
    /// pool.
    async fn invoke<T: redis::FromRedisValue + Send + 'static>(
        &self,
        what: &str,
        script: &'static Script,
        keys: Vec<String>,
        args: Vec<String>,
    ) -> Result<T, IdempotencyStoreError> {
        let pending = self.conn.start(move |mut con| async move {
            let mut call = script.prepare_invoke();
            for key in keys {
                call.key(key);
            }
            for arg in args {
                call.arg(arg);
            }
            call.invoke_async(&mut con).await
        });
        match tokio::task::spawn_blocking(move || pending.wait()).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(self.failure(what, &error)),
            Err(error) => Err(self.failure(what, &error)),
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn ms(duration: Duration) -> String {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX).max(1).to_string()
}

impl IdempotencyStore for RedisIdempotencyStore {
    fn claim<'a>(
        &'a self,
        key: &'a str,
        principal: &'a str,
        fingerprint: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Claim, IdempotencyStoreError>> {
        Box::pin(async move {
            let keys = vec![format!("{}:k:{key}", self.namespace), format!("{}:p:{principal}", self.namespace)];
            let args =
                vec![fingerprint.to_owned(), ms(lease), now_ms().to_string(), self.max_per_principal.to_string()];
            let answer: Vec<String> = self.invoke("claim a key", &CLAIM, keys, args).await?;
            match answer.as_slice() {
                [state] if state == "claimed" => Ok(Claim::Claimed),
                [state] if state == "quota" => Err(IdempotencyStoreError::over_quota(self.max_per_principal)),
                [state, fingerprint] if state == "running" => Ok(Claim::Running { fingerprint: fingerprint.clone() }),
                [state, fingerprint, message] if state == "done" => {
                    Ok(Claim::Done { fingerprint: fingerprint.clone(), message: message.clone() })
                }
                other => Err(self.failure("claim a key", &format!("unexpected answer {other:?}"))),
            }
        })
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        message: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), IdempotencyStoreError>> {
        Box::pin(async move {
            if message.len() > self.max_message_bytes {
                self.release(key).await?;
                return Err(IdempotencyStoreError(format!(
                    "a message of {} bytes is over the idempotency store's cap of {} bytes; the key was freed",
                    message.len(),
                    self.max_message_bytes
                )));
            }
            let keys = vec![format!("{}:k:{key}", self.namespace)];
            let args = vec![message.to_owned(), ms(ttl), now_ms().to_string()];
            let _: i64 = self.invoke("record a message", &COMPLETE, keys, args).await?;
            Ok(())
        })
    }

    fn release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), IdempotencyStoreError>> {
        Box::pin(async move {
            let _: i64 =
                self.invoke("free a key", &RELEASE, vec![format!("{}:k:{key}", self.namespace)], Vec::new()).await?;
            Ok(())
        })
    }
}
