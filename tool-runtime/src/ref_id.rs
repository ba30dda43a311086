//! Ref ids: the ids the output layer and the providers mint for stored outputs and calls.

use std::cell::RefCell;
use std::io;

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
