//! Content sniffing: binary or text, and the image formats a model can be shown.

/// How many leading bytes [`is_binary`] looks at (8 KiB).
pub const SNIFF_BYTES: usize = 8 * 1024;

/// `true` when `data` looks binary: its first 8 KiB ([`SNIFF_BYTES`]) hold a NUL byte, or more than
/// 10% of those bytes are not part of valid UTF-8. A character cut by the end of the window (the
/// data goes on past it) is not counted as invalid; one cut by the end of the data is. Empty data is
/// text. Source: the Go seed's `IsBinary`, with the cut-character rule of `tools-spec.md`.
pub fn is_binary(data: &[u8]) -> bool {
    let window = &data[..data.len().min(SNIFF_BYTES)];
    binary_reason(window, data.len() > window.len()).is_some()
}

/// Why data is binary, from its first bytes (`window`, at most [`SNIFF_BYTES`]), or `None` for
/// text, by the rule of [`is_binary`]: `"contains a NUL byte"` or `"more than 10% of its first 8 KiB
/// is not UTF-8"`. `window_is_cut` says the data goes on past the window (a character cut by the
/// window's end is then not counted as invalid). For callers that read the window themselves and
/// want to say why in an error.
pub fn binary_reason(window: &[u8], window_is_cut: bool) -> Option<&'static str> {
    if memchr::memchr(0, window).is_some() {
        return Some("contains a NUL byte");
    }
    if invalid_utf8_bytes(window, window_is_cut) * 10 > window.len() {
        return Some("more than 10% of its first 8 KiB is not UTF-8");
    }
    None
}

/// The number of bytes of `bytes` that are not part of valid UTF-8; with `cut`, an incomplete
/// character at the very end is assumed to continue past the slice and is not counted.
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

/// The MIME type of image bytes a model can be shown, from their magic numbers: `image/png`,
/// `image/jpeg`, `image/gif` (GIF87a and GIF89a) or `image/webp` (a `RIFF` container whose form
/// type is `WEBP` and whose first chunk is `VP8 `, `VP8L` or `VP8X`); `None` for anything else.
/// Never from a file name. Source: the Go seed's `DetectImageMime`, with the WebP chunk checked.
///
/// ```
/// use tool_runtime::output::detect_image_mime;
///
/// assert_eq!(detect_image_mime(b"GIF89a\x01\x00\x01\x00"), Some("image/gif"));
/// assert_eq!(detect_image_mime(b"RIFF\x10\0\0\0WEBPJUNK"), None);
/// assert_eq!(detect_image_mime(b"<svg/>"), None);
/// ```
pub fn detect_image_mime(data: &[u8]) -> Option<&'static str> {
    if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if data.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if data.len() >= 16
        && data.starts_with(b"RIFF")
        && &data[8..12] == b"WEBP"
        && matches!(&data[12..16], b"VP8 " | b"VP8L" | b"VP8X")
    {
        Some("image/webp")
    } else {
        None
    }
}
