//! Opaque page tokens for tools that list rows page by page. Cargo feature `paging` (off by
//! default): without it the items here are absent.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Why a page request was refused. The text says which value to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PageError {
    /// The page size is 0 or above the maximum.
    #[error("page_size must be between 1 and {max}, got {got}")]
    BadSize {
        /// The size asked for.
        got: usize,
        /// The largest size allowed.
        max: usize,
    },
    /// The token is not one this API handed out.
    #[error(
        "page_token `{token}` is not valid; pass the next_page_token of the previous page, or none for the first page"
    )]
    BadToken {
        /// The token as given.
        token: String,
    },
}

/// The page token for a resume offset (0-based row index): URL-safe base64 without padding of the
/// offset's decimal digits, e.g. `offset_token(100) == "MTAw"`. Tokens are opaque to clients;
/// [`parse_page`] decodes them. Source: the Go seed's `OffsetToken`. Cargo feature `paging`.
pub fn offset_token(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(offset.to_string())
}

/// The page size and 0-based offset of a request.
///
/// `page_size`: `None` means `default_size`; otherwise it must be `1..=max_size`. `page_token`:
/// empty means offset 0; otherwise a token from [`offset_token`] / [`page_rows`]. Cargo feature `paging`.
///
/// # Errors
/// [`PageError::BadSize`] for a size of 0 or over `max_size`; [`PageError::BadToken`] for a token
/// that is not URL-safe base64 of a decimal offset.
pub fn parse_page(
    page_size: Option<usize>,
    page_token: &str,
    default_size: usize,
    max_size: usize,
) -> Result<(usize, usize), PageError> {
    let size = page_size.unwrap_or(default_size);
    if size == 0 || size > max_size {
        return Err(PageError::BadSize { got: size, max: max_size });
    }
    if page_token.is_empty() {
        return Ok((size, 0));
    }
    let bad = || PageError::BadToken { token: page_token.to_owned() };
    let bytes = URL_SAFE_NO_PAD.decode(page_token).map_err(|_| bad())?;
    let digits = std::str::from_utf8(&bytes).map_err(|_| bad())?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let offset = digits.parse::<usize>().map_err(|_| bad())?;
    Ok((size, offset))
}

/// The rows of one page, `rows[offset..offset + limit]` (clamped to the end), and the token of the
/// next page when rows remain after it (`None` on the last page). An offset past the end gives an
/// empty page and no token. Source: the Go seed's `PageRows`. Cargo feature `paging`.
pub fn page_rows<T>(rows: &[T], limit: usize, offset: usize) -> (&[T], Option<String>) {
    let start = offset.min(rows.len());
    let end = start.saturating_add(limit).min(rows.len());
    let next = (end < rows.len()).then(|| offset_token(end));
    (&rows[start..end], next)
}
