//! Text helpers shared by the fs tools: binary sniffing, the content hash, grapheme cuts.

use sha2::{Digest, Sha256};
use unicode_segmentation::UnicodeSegmentation;

/// How many leading bytes [`sniff_binary`] looks at (8 KiB).
pub(crate) use tool_runtime::output::SNIFF_BYTES;

/// Why a whole file's `bytes` are binary, or `None` for text: [`sniff_binary`] of its first 8 KiB.
pub(crate) fn sniff_bytes(bytes: &[u8]) -> Option<&'static str> {
    let window = &bytes[..bytes.len().min(SNIFF_BYTES)];
    sniff_binary(window, bytes.len() > window.len())
}

/// Why a file is binary, or `None` for text, from its first bytes (`window`, at most 8 KiB): the
/// output layer's rule ([`tool_runtime::output::binary_reason`]), so that a file the fs tools call
/// text is text to the output cache too.
pub(crate) fn sniff_binary(window: &[u8], window_is_cut: bool) -> Option<&'static str> {
    tool_runtime::output::binary_reason(window, window_is_cut)
}

/// The lowercase hex SHA-256 of `bytes` (64 characters), as in `[read_metadata] content_sha256=`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The footer every output that carries a file's content ends with, from the hex SHA-256 of the
/// whole file.
pub(crate) fn metadata_footer(sha256_hex: &str) -> String {
    format!("[read_metadata] content_sha256={sha256_hex}")
}

/// The footer in place of [`metadata_footer`] when a file of `size` bytes, over the whole-file
/// scan limit of `limit` bytes, was not read to its end.
pub(crate) fn unhashed_metadata_footer(size: u64, limit: u64) -> String {
    format!(
        "[read_metadata] content_sha256 not computed: the file is {size} bytes, over the {limit}-byte whole-file \
         scan limit, and was not read to its end; write and edit work without expected_hash"
    )
}

/// `text` cut to at most `max` extended grapheme clusters: the kept prefix and whether anything
/// was cut.
pub(crate) fn cut_graphemes(text: &str, max: usize) -> (&str, bool) {
    match text.grapheme_indices(true).nth(max) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    }
}

/// The window of a line too long to show whole: at most `width` grapheme clusters of `text`,
/// placed so that the cluster holding byte `at` sits in its middle (or as near as the line's ends
/// allow). Returns the window and its columns: 1-based first and last grapheme, and the line's
/// length in graphemes.
pub(crate) fn grapheme_window(text: &str, at: usize, width: usize) -> (&str, usize, usize, usize) {
    let bounds: Vec<usize> = text.grapheme_indices(true).map(|(i, _)| i).collect();
    let total = bounds.len();
    if total <= width {
        return (text, 1.min(total), total, total);
    }
    let column = bounds.partition_point(|&start| start <= at).saturating_sub(1);
    let first = column.saturating_sub(width / 2).min(total - width);
    let last = first + width;
    let end = bounds.get(last).copied().unwrap_or(text.len());
    (&text[bounds[first]..end], first + 1, last, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_cut_by_the_window_end_is_not_invalid() {
        let cut = "aé".as_bytes().split_at(2).0;
        assert_eq!(sniff_binary(cut, true), None);
        assert_eq!(sniff_binary(cut, false), Some("more than 10% of its first 8 KiB is not UTF-8"));
    }

    #[test]
    fn a_window_centres_on_the_match_and_stops_at_the_line_ends() {
        let line = "0123456789";
        assert_eq!(grapheme_window(line, 5, 4), ("3456", 4, 7, 10));
        assert_eq!(grapheme_window(line, 0, 4), ("0123", 1, 4, 10));
        assert_eq!(grapheme_window(line, 9, 4), ("6789", 7, 10, 10));
        assert_eq!(grapheme_window("e\u{301}xyz", 1, 2), ("e\u{301}x", 1, 2, 4));
    }

    #[test]
    fn cut_graphemes_keeps_whole_clusters() {
        assert_eq!(cut_graphemes("e\u{301}e\u{301}x", 2), ("e\u{301}e\u{301}", true));
        assert_eq!(cut_graphemes("abc", 3), ("abc", false));
    }
}
