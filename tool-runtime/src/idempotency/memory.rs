//! [`MemoryIdempotencyStore`]: idempotency records in the process.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use super::{Claim, IdempotencyStore, IdempotencyStoreError};

/// The most keys a [`MemoryIdempotencyStore`] holds by default: 100,000.
pub const DEFAULT_MAX_KEYS: usize = 100_000;
/// The most keys one principal holds in a [`MemoryIdempotencyStore`] by default: 1,000.
pub const DEFAULT_MAX_KEYS_PER_PRINCIPAL: usize = 1_000;
/// The most bytes of kept messages a [`MemoryIdempotencyStore`] holds by default: 64 MiB.
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

/// One key's record.
struct Entry {
    principal: String,
    fingerprint: String,
    /// The message, once the call ended.
    message: Option<String>,
    /// The end of the lease while running, of the time to live once ended (tokio's clock).
    until: Instant,
}

/// Idempotency records in the process (for one worker, or tests), with a cap on keys, on keys per
/// principal and on bytes; expired records are dropped when room is needed. Times are on tokio's
/// clock.
pub struct MemoryIdempotencyStore {
    max_keys: usize,
    max_per_principal: usize,
    max_bytes: usize,
    entries: Mutex<Entries>,
}

/// The records, the bytes of their messages, and how many records each principal holds (kept
/// beside the map, so that a claim does not count them over every record).
#[derive(Default)]
struct Entries {
    map: HashMap<String, Entry>,
    bytes: usize,
    owned: HashMap<String, usize>,
}

impl Entries {
    fn insert(&mut self, key: &str, entry: Entry) {
        *self.owned.entry(entry.principal.clone()).or_default() += 1;
        if let Some(old) = self.map.insert(key.to_owned(), entry) {
            self.forget(old);
        }
    }

    fn remove(&mut self, key: &str) {
        if let Some(entry) = self.map.remove(key) {
            self.forget(entry);
        }
    }

    /// Takes a record that left the map off the counts.
    fn forget(&mut self, entry: Entry) {
        self.bytes -= entry.message.map_or(0, |m| m.len());
        if let Some(count) = self.owned.get_mut(&entry.principal) {
            *count -= 1;
            if *count == 0 {
                self.owned.remove(&entry.principal);
            }
        }
    }

    /// How many records `principal` holds.
    fn owned(&self, principal: &str) -> usize {
        self.owned.get(principal).copied().unwrap_or(0)
    }

    /// Drops the records whose lease or time to live ended before `now`.
    fn expire(&mut self, now: Instant) {
        let ended: Vec<String> = self.map.iter().filter(|(_, e)| e.until <= now).map(|(k, _)| k.clone()).collect();
        for key in ended {
            self.remove(&key);
        }
    }
}

impl Default for MemoryIdempotencyStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryIdempotencyStore {
    /// A store with the default caps ([`DEFAULT_MAX_KEYS`], [`DEFAULT_MAX_KEYS_PER_PRINCIPAL`],
    /// [`DEFAULT_MAX_BYTES`]).
    pub fn new() -> Self {
        Self::with_caps(DEFAULT_MAX_KEYS, DEFAULT_MAX_KEYS_PER_PRINCIPAL, DEFAULT_MAX_BYTES)
    }

    /// A store of at most `max_keys` keys, `max_per_principal` of one principal, and `max_bytes`
    /// bytes of kept messages.
    pub fn with_caps(max_keys: usize, max_per_principal: usize, max_bytes: usize) -> Self {
        Self { max_keys, max_per_principal, max_bytes, entries: Mutex::new(Entries::default()) }
    }

    /// How many records it holds (expired ones included until room is needed).
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).map.len()
    }

    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl IdempotencyStore for MemoryIdempotencyStore {
    fn claim<'a>(
        &'a self,
        key: &'a str,
        principal: &'a str,
        fingerprint: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Claim, IdempotencyStoreError>> {
        Box::pin(async move {
            let now = Instant::now();
            let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            match entries.map.get(key) {
                Some(entry) if entry.until > now => {
                    let fingerprint = entry.fingerprint.clone();
                    return Ok(match &entry.message {
                        Some(message) => Claim::Done { fingerprint, message: message.clone() },
                        None => Claim::Running { fingerprint },
                    });
                }
                // Expired: the key is free again.
                Some(_) => entries.remove(key),
                None => {}
            }
            if entries.map.len() >= self.max_keys || entries.owned(principal) >= self.max_per_principal {
                entries.expire(now);
            }
            if entries.map.len() >= self.max_keys {
                return Err(IdempotencyStoreError(format!(
                    "the idempotency store holds its most records ({}: idempotency keys and used approval tokens); \
                     retry once older ones expire",
                    self.max_keys
                )));
            }
            if entries.owned(principal) >= self.max_per_principal {
                return Err(IdempotencyStoreError::over_quota(self.max_per_principal));
            }
            entries.insert(
                key,
                Entry {
                    principal: principal.to_owned(),
                    fingerprint: fingerprint.to_owned(),
                    message: None,
                    until: now + lease,
                },
            );
            Ok(Claim::Claimed)
        })
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        message: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), IdempotencyStoreError>> {
        Box::pin(async move {
            let now = Instant::now();
            let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            if entries.bytes + message.len() > self.max_bytes {
                entries.expire(now);
            }
            if entries.bytes + message.len() > self.max_bytes {
                entries.remove(key);
                return Err(IdempotencyStoreError(format!(
                    "the idempotency store holds its most bytes of messages ({}); the key was freed",
                    self.max_bytes
                )));
            }
            let entries = &mut *entries;
            if let Some(entry) = entries.map.get_mut(key) {
                let old = entry.message.replace(message.to_owned()).map_or(0, |m| m.len());
                entries.bytes = entries.bytes - old + message.len();
                entry.until = now + ttl;
            }
            Ok(())
        })
    }

    fn release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), IdempotencyStoreError>> {
        Box::pin(async move {
            self.entries.lock().unwrap_or_else(PoisonError::into_inner).remove(key);
            Ok(())
        })
    }
}
