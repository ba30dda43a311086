//! [`RedisStore`]: the [`OutputStore`] on Redis (see the module docs of [`redis`](super)).

use std::io::{self, Read};
use std::sync::Arc;

use redis::RedisError;

use super::entries::{EntryUse, LiveEntry, NewEntry, REDIS_ENTRY_OVERHEAD, RedisEntries};
use super::{Pending, RedisConnection};
use crate::clock::{Clock, SystemClock};
use crate::output::scope::{OutputScope, ScopeKey};
use crate::output::store::{
    CHECKPOINT_LINES, IndexBuilder, OutputStore, StoreError, StoredInfo, parts_bytes, validate_ref_id,
};
use crate::output::{DEFAULT_OUTPUT_LIMITS, StoreLimits};
use crate::ref_id::mint_ref_id;
use crate::result::ContentPart;

/// Bytes of one text chunk of a [`RedisStore`] entry: 256 KiB (262,144). Large enough that a
/// 1 GB output is 4,096 keys, small enough that a reader holds little.
pub const REDIS_CHUNK_BYTES: usize = 256 * 1024;

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

/// The [`OutputStore`] on Redis (see the [module docs](crate::redis)): many server processes sharing one
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
