//! Ref ids the output layer mints, and the scope a stored output belongs to.

use std::cell::RefCell;
use std::io::{self, Read};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::store::{OutputStore, StoreError, StoredInfo};
use crate::context::ToolContext;
use crate::result::ContentPart;

/// The length of a minted ref id: 22 characters (128 bits in unpadded URL-safe base64).
pub const REF_ID_LEN: usize = 22;

/// The bytes of one ref id: 128 bits.
const REF_ID_BYTES: usize = 16;

/// Ref ids drawn from the operating system's random source at a time: one draw of 4 KiB serves
/// 256 ids.
const IDS_PER_DRAW: usize = 256;

/// Random bytes drawn ahead for ref ids (one pool per thread, so minting takes no lock), and how
/// many of them are handed out.
struct RandomPool {
    bytes: [u8; REF_ID_BYTES * IDS_PER_DRAW],
    used: usize,
}

/// 128 bits from the operating system's random source (through the `getrandom` crate), drawn
/// [`IDS_PER_DRAW`] ids at a time; bytes handed out are wiped from the pool.
fn random_bits() -> io::Result<[u8; REF_ID_BYTES]> {
    const SIZE: usize = REF_ID_BYTES * IDS_PER_DRAW;
    thread_local! {
        static POOL: RefCell<RandomPool> = const { RefCell::new(RandomPool { bytes: [0; SIZE], used: SIZE }) };
    }
    POOL.with_borrow_mut(|pool| {
        if pool.used == SIZE {
            getrandom::fill(&mut pool.bytes)
                .map_err(|e| io::Error::other(format!("the random source of ref ids failed: {e}")))?;
            pool.used = 0;
        }
        let range = pool.used..pool.used + REF_ID_BYTES;
        let mut bits = [0; REF_ID_BYTES];
        bits.copy_from_slice(&pool.bytes[range.clone()]);
        pool.bytes[range].fill(0);
        pool.used += REF_ID_BYTES;
        Ok(bits)
    })
}

/// `bits` in unpadded URL-safe base64 (RFC 4648, section 5): 22 characters, each 6 bits, read
/// from the most significant bit on; the last one holds the 2 lowest bits and 4 zero bits.
fn url_safe_base64(bits: [u8; REF_ID_BYTES]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let n = u128::from_be_bytes(bits);
    let mut text = String::with_capacity(REF_ID_LEN);
    for i in 0..REF_ID_LEN {
        let sextet = if i + 1 < REF_ID_LEN { n >> (122 - 6 * i) } else { n << 4 };
        text.push(char::from(ALPHABET[(sextet & 0x3f) as usize]));
    }
    text
}

/// A new ref id: 22 characters of `[A-Za-z0-9_-]` (unpadded URL-safe base64 of 128 bits), not
/// guessable from other ids.
///
/// The bits come straight from the operating system's random source (drawn 4 KiB at a time,
/// for 256 ids, by each thread that mints), so an id tells nothing about any other, and two ids (of one process or of two)
/// are the same with probability 2^-128: among 2^32 ids, any two alike with probability under
/// 2^-64.
///
/// # Errors
/// When the operating system's random source failed (the error says so); a later call draws
/// again.
pub fn mint_ref_id() -> io::Result<String> {
    random_bits().map(url_safe_base64)
}

/// The scope a stored output was made in: the session id and the principal of the call's context
/// ([`ToolContext::session_id`], [`ToolContext::principal`]), each `None` when the caller set none.
/// A stored output is served only to a reader of the same scope (both ids equal, `None` equal to
/// `None` only); to any other it reads exactly like an unknown ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OutputScope<'a> {
    /// The session id.
    pub session: Option<&'a str>,
    /// The principal.
    pub principal: Option<&'a str>,
}

impl<'a> OutputScope<'a> {
    /// No session, no principal: what [`OutputStore::put`] stores under, and the scope of a
    /// context built without either.
    pub const NONE: OutputScope<'static> = OutputScope { session: None, principal: None };

    /// The scope of a call's context.
    pub fn of(ctx: &'a ToolContext) -> Self {
        Self { session: ctx.session_id(), principal: ctx.principal() }
    }
}

/// An [`OutputScope`] as a store keeps it; on disk (`scope` of a `FileStore`
/// entry) it is the JSON object `{"session":..,"principal":..}`, a missing key standing for `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScopeKey {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
    /// Set for an owner that could not be read back: it matches no scope.
    #[serde(skip)]
    unreadable: bool,
}

impl ScopeKey {
    pub(crate) fn of(scope: OutputScope<'_>) -> Self {
        Self {
            session: scope.session.map(str::to_owned),
            principal: scope.principal.map(str::to_owned),
            unreadable: false,
        }
    }

    /// The owner of an entry whose scope could not be read: no reader's.
    #[cfg(feature = "file-store")]
    pub(crate) fn unreadable() -> Self {
        Self { unreadable: true, ..Self::default() }
    }

    pub(crate) fn matches(&self, scope: OutputScope<'_>) -> bool {
        !self.unreadable && self.session.as_deref() == scope.session && self.principal.as_deref() == scope.principal
    }

    /// Bytes it takes, roughly (its ids).
    pub(crate) fn bytes(&self) -> u64 {
        (self.session.as_ref().map_or(0, String::len) + self.principal.as_ref().map_or(0, String::len)) as u64
    }
}

/// A store seen from one scope: the first read of a ref asks the store whether the ref belongs to
/// the scope ([`OutputStore::check_scope`], which is also the ref's use: a store with a time to
/// live starts it again), so a ref of another scope reads exactly as an unknown one (the same
/// [`StoreError::NotFound`]), and a ref of this scope that the store let go reads as
/// [`StoreError::Expired`], also when it goes between the check and a read. Writes go to the
/// scope of the view.
///
/// A view is made for one tool call: a ref whose check passed is not checked again by the same
/// view (a call that reads a ref's size, a checkpoint and its lines uses it once, and a shared
/// store answers one scope check instead of three). It remembers at most
/// [`ScopedStore::REMEMBERED`] refs; a failed check is never remembered.
pub struct ScopedStore<'a> {
    store: &'a dyn OutputStore,
    scope: OutputScope<'a>,
    /// The refs whose scope check passed in this view.
    checked: Mutex<Vec<String>>,
}

impl Clone for ScopedStore<'_> {
    fn clone(&self) -> Self {
        Self { store: self.store, scope: self.scope, checked: Mutex::new(self.lock_checked().clone()) }
    }
}

impl<'a> ScopedStore<'a> {
    /// How many refs whose check passed a view remembers: 8 (a tool call reads one or two).
    pub const REMEMBERED: usize = 8;

    /// `store` as `scope` sees it.
    pub fn new(store: &'a dyn OutputStore, scope: OutputScope<'a>) -> Self {
        Self { store, scope, checked: Mutex::new(Vec::new()) }
    }

    fn lock_checked(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.checked.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn read<T>(&self, ref_id: &str, read: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        if !self.lock_checked().iter().any(|checked| checked == ref_id) {
            self.store.check_scope(ref_id, self.scope)?;
            let mut checked = self.lock_checked();
            if checked.len() < Self::REMEMBERED {
                checked.push(ref_id.to_owned());
            }
        }
        read().map_err(|e| match e {
            StoreError::NotFound { ref_id } => StoreError::Expired { ref_id, why: super::Expiry::SizeCap },
            other => other,
        })
    }
}

impl std::fmt::Debug for ScopedStore<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopedStore").field("scope", &self.scope).finish_non_exhaustive()
    }
}

impl OutputStore for ScopedStore<'_> {
    fn put_scoped(
        &self,
        _scope: OutputScope<'_>,
        ref_id: &str,
        text: &mut dyn Read,
        parts: &[ContentPart],
    ) -> Result<StoredInfo, StoreError> {
        self.store.put_scoped(self.scope, ref_id, text, parts)
    }

    fn check_scope(&self, ref_id: &str, _scope: OutputScope<'_>) -> Result<(), StoreError> {
        self.store.check_scope(ref_id, self.scope)
    }

    fn info(&self, ref_id: &str) -> Result<StoredInfo, StoreError> {
        self.read(ref_id, || self.store.info(ref_id))
    }

    fn open_at(&self, ref_id: &str, offset: u64) -> Result<Box<dyn Read + Send>, StoreError> {
        self.read(ref_id, || self.store.open_at(ref_id, offset))
    }

    fn checkpoint(&self, ref_id: &str, line: u64) -> Result<(u64, u64), StoreError> {
        self.read(ref_id, || self.store.checkpoint(ref_id, line))
    }

    fn parts(&self, ref_id: &str) -> Result<Vec<ContentPart>, StoreError> {
        self.read(ref_id, || self.store.parts(ref_id))
    }

    fn blocks(&self) -> bool {
        self.store.blocks()
    }
}

#[cfg(test)]
mod tests {
    use super::url_safe_base64;

    #[test]
    fn ref_id_bits_are_written_as_unpadded_url_safe_base64() {
        // The vectors are what RFC 4648's URL-safe alphabet, without padding, gives for these bytes.
        let counting: [u8; 16] = std::array::from_fn(|i| i as u8);
        assert_eq!(url_safe_base64(counting), "AAECAwQFBgcICQoLDA0ODw");
        assert_eq!(url_safe_base64([0xff; 16]), "_____________________w");
        assert_eq!(url_safe_base64([0; 16]), "AAAAAAAAAAAAAAAAAAAAAA");
    }
}
