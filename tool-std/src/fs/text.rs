//! Text helpers shared by the fs tools: binary sniffing, the content hash, grapheme cuts.

use sha2::{Digest, Sha256};
use unicode_segmentation::UnicodeSegmentation;

/// How many leading bytes [`sniff_binary`] looks at (8 KiB).
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;

/// Why a file is binary, or `None` for text. Looks at the first 8 KiB: a NUL byte, or more than
/// 10% of the bytes not valid UTF-8, means binary. A character cut by the end of the window (the
/// file goes on) is not counted as invalid; one cut by the end of the file is.
pub(crate) fn sniff_binary(bytes: &[u8]) -> Option<&'static str> {
    let window = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if window.contains(&0) {
        return Some("contains a NUL byte");
    }
    let window_is_cut = bytes.len() > window.len();
    if invalid_utf8_bytes(window, window_is_cut) * 10 > window.len() {
        return Some("more than 10% of its first 8 KiB is not UTF-8");
    }
    None
}

/// The number of bytes of `bytes` that are not part of valid UTF-8. When `cut` is true, an
/// incomplete character at the very end is assumed to go on past the slice and is not counted.
fn invalid_utf8_bytes(mut bytes: &[u8], cut: bool) -> usize {
    let mut invalid = 0;
    loop {
        match std::str::from_utf8(bytes) {
            Ok(_) => return invalid,
            Err(error) => {
                let rest = &bytes[error.valid_up_to()..];
                match error.error_len() {
                    Some(len) => {
                        invalid += len;
                        bytes = &rest[len..];
                    }
                    None => return if cut { invalid } else { invalid + rest.len() },
                }
            }
        }
    }
}

/// The lowercase hex SHA-256 of `bytes` (64 characters), as in `[read_metadata] content_sha256=`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The footer every output that carries a file's content ends with.
pub(crate) fn metadata_footer(bytes: &[u8]) -> String {
    format!("[read_metadata] content_sha256={}", sha256_hex(bytes))
}

/// `text` cut to at most `max` extended grapheme clusters: the kept prefix and whether anything
/// was cut.
pub(crate) fn cut_graphemes(text: &str, max: usize) -> (&str, bool) {
    match text.grapheme_indices(true).nth(max) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_cut_by_the_window_end_is_not_invalid() {
        assert_eq!(invalid_utf8_bytes("aé".as_bytes().split_at(2).0, true), 0);
        assert_eq!(invalid_utf8_bytes("aé".as_bytes().split_at(2).0, false), 1);
    }

    #[test]
    fn cut_graphemes_keeps_whole_clusters() {
        assert_eq!(cut_graphemes("e\u{301}e\u{301}x", 2), ("e\u{301}e\u{301}", true));
        assert_eq!(cut_graphemes("abc", 3), ("abc", false));
    }
}
