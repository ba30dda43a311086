//! Keyed hashes: HMAC-SHA256 over length-prefixed parts, as lowercase hex. What the idempotency
//! records, approval tokens and the keys a call forwards to other services are made of.

use std::sync::{Arc, OnceLock};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// HMAC-SHA256 (64 lowercase hex characters) under `key` of `parts`, each preceded by its length
/// in bytes as a big-endian `u64`, so that no two lists of parts give the same input.
pub(crate) fn hmac_hex(key: &[u8], parts: &[&str]) -> String {
    // HMAC takes a key of any length.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else { return String::new() };
    for part in parts {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part.as_bytes());
    }
    hex(&mac.finalize().into_bytes())
}

/// `bytes` as lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// 32 random bytes drawn once per process, for a key that has no configured one.
pub(crate) fn process_secret() -> Arc<[u8]> {
    static SECRET: OnceLock<Arc<[u8]>> = OnceLock::new();
    SECRET.get_or_init(random_secret).clone()
}

/// 32 bytes from the operating system's random source (zeros without one: still an HMAC key,
/// though not a secret one).
pub(crate) fn random_secret() -> Arc<[u8]> {
    let mut key = [0u8; 32];
    let _ = getrandom::fill(&mut key);
    Arc::from(&key[..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_are_length_prefixed_so_moving_a_boundary_changes_the_hash() {
        assert_ne!(hmac_hex(b"k", &["ab", "c"]), hmac_hex(b"k", &["a", "bc"]));
        assert_eq!(hmac_hex(b"k", &["ab", "c"]), hmac_hex(b"k", &["ab", "c"]));
        assert_eq!(hmac_hex(b"k", &["ab", "c"]).len(), 64);
    }

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(hex(&[0, 15, 171, 255]), "000fabff");
    }
}
