//! The bookkeeping that keeps a store bounded: a time to live since last use, a total size cap,
//! least recently used first out, and a short memory of what was let go.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The maps' hasher: foldhash, seeded at random per process.
type Hasher = foldhash::fast::RandomState;

/// The bounds of a store: how long an entry lives without being used, and how many bytes all
/// entries may take together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// An entry not used (written or read) for longer than this is dropped.
    pub ttl: Duration,
    /// The entries' bytes together (for an output: its text, typed parts and index); past it,
    /// the least recently used entries are dropped until the rest fit. The entry just written is
    /// never dropped for the cap. One entry larger than the cap by itself (a command's whole
    /// output of 1 GB beside a cap of 256 MiB) is held outside it: it is not counted against the
    /// cap, and the others come and go beside it as if it were not there, until another entry
    /// larger than the cap is written (which replaces it, dropped as [`Expiry::SizeCap`]) or its
    /// time to live passes. So a store holds at most this plus one entry, and an output that
    /// alone passes the cap stays readable while the outputs of the calls that page it are stored.
    pub max_bytes: u64,
}

impl StoreLimits {
    /// Limits of the given time to live and size cap (bytes).
    pub const fn new(ttl: Duration, max_bytes: u64) -> Self {
        Self { ttl, max_bytes }
    }
}

/// Why an entry is no longer there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Expiry {
    /// It was not used for longer than the store's time to live.
    TimeToLive,
    /// The store was over its size cap and it was the least recently used entry.
    SizeCap,
}

impl fmt::Display for Expiry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::TimeToLive => "not used for longer than its time to live",
            Self::SizeCap => "evicted as the least recently used when the store was full",
        })
    }
}

/// How many entries a [`UsageIndex`] remembers after letting them go (each costs its key and
/// its owner's ids), so that a late reader learns why instead of reading "unknown".
pub const REMEMBERED_EXPIRIES: usize = 4096;

/// What a [`UsageIndex`] knows about a key.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<'a, M> {
    /// The entry is there; it now counts as used.
    Live(&'a mut M),
    /// The entry was dropped (one of the last [`REMEMBERED_EXPIRIES`]).
    Gone(&'a M, Expiry),
    /// The index never held it, or forgot that it did.
    Unknown,
}

struct Slot<M> {
    order: u64,
    last_used: SystemTime,
    bytes: u64,
    meta: M,
}

/// The usage of the entries of one store, kept in memory: each key's size, last use and owner
/// data `M`, in least recently used order. Every operation costs amortised `O(1)` plus the entries
/// it drops: an expired entry is found at the front of the order, so nothing ever scans the whole
/// index. The store does the I/O for what the index says to drop.
pub struct UsageIndex<M> {
    limits: StoreLimits,
    slots: HashMap<Arc<str>, Slot<M>, Hasher>,
    /// `(order, key)` in order of use, least recently used first. A use appends the key again;
    /// a pair whose order is no longer its slot's is stale and skipped (and dropped when the
    /// queue has twice as many pairs as slots).
    order: VecDeque<(u64, Arc<str>)>,
    next: u64,
    total: u64,
    gone: HashMap<Arc<str>, (M, Expiry), Hasher>,
    gone_order: VecDeque<Arc<str>>,
    /// The one entry larger than the cap by itself, held outside it (see
    /// [`StoreLimits::max_bytes`]): its key and bytes, which `total` includes.
    oversize: Option<(Arc<str>, u64)>,
}

/// An entry a [`UsageIndex`] dropped: the store deletes its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The entry's key.
    pub key: String,
    /// Why.
    pub why: Expiry,
}

impl<M: Clone> UsageIndex<M> {
    /// An empty index with these limits.
    pub fn new(limits: StoreLimits) -> Self {
        Self {
            limits,
            slots: HashMap::default(),
            order: VecDeque::new(),
            next: 0,
            total: 0,
            gone: HashMap::default(),
            gone_order: VecDeque::new(),
            oversize: None,
        }
    }

    /// The limits.
    pub fn limits(&self) -> StoreLimits {
        self.limits
    }

    /// The bytes of the entries held.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// The number of entries held.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// `true` when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Records an entry of `bytes` written (or found) with last use `used`, replacing one under
    /// the same key, then drops what the limits say must go (see [`UsageIndex::prune`]); `key`
    /// itself is only dropped when `used` is already past the time to live. An entry larger than
    /// the cap becomes the one held outside it, and the one held there before is dropped (see
    /// [`StoreLimits::max_bytes`]).
    pub fn insert(&mut self, key: &str, bytes: u64, meta: M, used: SystemTime, now: SystemTime) -> Vec<Dropped> {
        self.forget(key);
        let mut dropped = Vec::new();
        let key: Arc<str> = Arc::from(key);
        if bytes > self.limits.max_bytes {
            if let Some((previous, _)) = self.oversize.take() {
                self.drop_entry(&previous, Expiry::SizeCap);
                dropped.push(Dropped { key: previous.to_string(), why: Expiry::SizeCap });
            }
            self.oversize = Some((key.clone(), bytes));
        }
        let order = self.next_order();
        self.order.push_back((order, key.clone()));
        self.slots.insert(key.clone(), Slot { order, last_used: used, bytes, meta });
        self.total += bytes;
        self.gone.remove(&key);
        self.compact();
        dropped.extend(self.prune(now, Some(&key)));
        dropped
    }

    /// The bytes counted against the cap: all but the entry held outside it.
    fn counted(&self) -> u64 {
        self.total - self.oversize.as_ref().map_or(0, |(_, bytes)| *bytes)
    }

    /// The entry under `key`: live, gone (and why), or unknown. A live entry that `owns` accepts
    /// counts as used at `now` (one that it refuses is left as it was, so a reader of another
    /// scope does not keep it alive). An entry past its time to live is dropped here and reads as
    /// gone; the second value names it so that the store deletes its data.
    pub fn lookup(
        &mut self,
        key: &str,
        now: SystemTime,
        owns: impl FnOnce(&M) -> bool,
    ) -> (Lookup<'_, M>, Option<Dropped>) {
        enum Act {
            Expire,
            Touch,
            Leave,
        }
        let act = match self.slots.get(key) {
            Some(slot) if idle_past(slot.last_used, now, self.limits.ttl) => Act::Expire,
            Some(slot) if owns(&slot.meta) => Act::Touch,
            _ => Act::Leave,
        };
        let mut dropped = None;
        match act {
            Act::Expire => {
                self.drop_entry(key, Expiry::TimeToLive);
                dropped = Some(Dropped { key: key.to_owned(), why: Expiry::TimeToLive });
            }
            Act::Touch => {
                let order = self.next_order();
                let shared = self.slots.get_key_value(key).map(|(k, _)| k.clone());
                if let (Some(shared), Some(slot)) = (shared, self.slots.get_mut(key)) {
                    slot.order = order;
                    slot.last_used = now;
                    self.order.push_back((order, shared));
                }
                self.compact();
            }
            Act::Leave => {}
        }
        let lookup = match (self.slots.get_mut(key), self.gone.get(key)) {
            (Some(slot), _) => Lookup::Live(&mut slot.meta),
            (None, Some((meta, why))) => Lookup::Gone(meta, *why),
            (None, None) => Lookup::Unknown,
        };
        (lookup, dropped)
    }

    /// The owner data of a live entry, without counting a use.
    pub fn meta_mut(&mut self, key: &str) -> Option<&mut M> {
        self.slots.get_mut(key).map(|slot| &mut slot.meta)
    }

    /// Forgets `key` without remembering it as gone (the store deleted it on purpose).
    pub fn forget(&mut self, key: &str) {
        if let Some(slot) = self.slots.remove(key) {
            self.total -= slot.bytes;
            self.release_oversize(key);
            self.compact();
        }
    }

    /// Drops the entries past their time to live (least recently used first, stopping at the first
    /// one still alive), then, while the total is over the cap, the least recently used ones;
    /// `keep` is never dropped for the cap, nor is the entry held outside it (which the total does
    /// not count).
    pub fn prune(&mut self, now: SystemTime, keep: Option<&str>) -> Vec<Dropped> {
        let mut dropped = Vec::new();
        while let Some(key) = self.oldest(None, None) {
            let expired = self.slots.get(&key).is_some_and(|slot| idle_past(slot.last_used, now, self.limits.ttl));
            if !expired {
                break;
            }
            self.drop_entry(&key, Expiry::TimeToLive);
            dropped.push(Dropped { key: key.to_string(), why: Expiry::TimeToLive });
        }
        while self.counted() > self.limits.max_bytes {
            let oversize = self.oversize.as_ref().map(|(key, _)| key.clone());
            let Some(key) = self.oldest(keep, oversize.as_deref()) else { break };
            self.drop_entry(&key, Expiry::SizeCap);
            dropped.push(Dropped { key: key.to_string(), why: Expiry::SizeCap });
        }
        dropped
    }

    /// The least recently used key but `skip` and `also`, dropping the stale pairs in front of it.
    fn oldest(&mut self, skip: Option<&str>, also: Option<&str>) -> Option<Arc<str>> {
        while let Some((order, key)) = self.order.front() {
            if self.slots.get(key).is_some_and(|slot| slot.order == *order) {
                break;
            }
            self.order.pop_front();
        }
        self.order
            .iter()
            .filter(|(order, key)| self.slots.get(key).is_some_and(|slot| slot.order == *order))
            .map(|(_, key)| key)
            .find(|key| Some(&***key) != skip && Some(&***key) != also)
            .cloned()
    }

    /// Drops the stale pairs of the order once they are as many as the live ones (amortised
    /// `O(1)` per use).
    fn compact(&mut self) {
        if self.order.len() > 2 * self.slots.len() + 64 {
            let slots = &self.slots;
            self.order.retain(|(order, key)| slots.get(key).is_some_and(|slot| slot.order == *order));
        }
    }

    fn next_order(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn drop_entry(&mut self, key: &str, why: Expiry) {
        let Some((key, slot)) = self.slots.remove_entry(key) else { return };
        self.total -= slot.bytes;
        self.release_oversize(&key);
        if self.gone.insert(key.clone(), (slot.meta, why)).is_none() {
            self.gone_order.push_back(key);
        }
        while self.gone_order.len() > REMEMBERED_EXPIRIES {
            if let Some(old) = self.gone_order.pop_front() {
                self.gone.remove(&old);
            }
        }
    }
}

impl<M> UsageIndex<M> {
    /// `key` is no longer held: when it was the entry held outside the cap, none is now.
    fn release_oversize(&mut self, key: &str) {
        if self.oversize.as_ref().is_some_and(|(held, _)| &**held == key) {
            self.oversize = None;
        }
    }
}

/// `true` when an entry last used at `last_used` was idle for longer than `ttl` at `now`.
fn idle_past(last_used: SystemTime, now: SystemTime, ttl: Duration) -> bool {
    now.duration_since(last_used).is_ok_and(|idle| idle > ttl)
}

impl<M> fmt::Debug for UsageIndex<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UsageIndex")
            .field("limits", &self.limits)
            .field("entries", &self.slots.len())
            .field("total_bytes", &self.total)
            .finish_non_exhaustive()
    }
}
