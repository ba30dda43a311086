//! Paging tokens and sniffing.

use tool_runtime::output::{PageError, detect_image_mime, is_binary, offset_token, page_rows, parse_page};

#[test]
fn an_offset_token_is_url_safe_base64_of_the_offset() {
    assert_eq!(offset_token(100), "MTAw");
    assert_eq!(parse_page(None, "MTAw", 20, 50), Ok((20, 100)));
}

#[test]
fn an_empty_token_is_the_first_page() {
    assert_eq!(parse_page(Some(5), "", 20, 50), Ok((5, 0)));
}

#[test]
fn bad_sizes_are_refused() {
    assert_eq!(parse_page(Some(0), "", 20, 50), Err(PageError::BadSize { got: 0, max: 50 }));
    assert_eq!(parse_page(Some(51), "", 20, 50).unwrap_err().to_string(), "page_size must be between 1 and 50, got 51");
}

#[test]
fn bad_tokens_are_refused() {
    for token in ["%%%", "LTE", "YWJj"] {
        assert_eq!(parse_page(None, token, 20, 50), Err(PageError::BadToken { token: token.to_owned() }), "{token}");
    }
}

#[test]
fn page_rows_gives_the_next_token_while_rows_remain() {
    let rows = [1, 2, 3, 4, 5];

    assert_eq!(page_rows(&rows, 2, 0), (&rows[0..2], Some(offset_token(2))));
    assert_eq!(page_rows(&rows, 2, 4), (&rows[4..5], None));
    assert_eq!(page_rows(&rows, 2, 9), (&rows[5..5], None));
}

#[test]
fn a_nul_byte_in_the_first_8_kib_is_binary() {
    assert!(is_binary(b"text\0more"));
    assert!(!is_binary(b"plain text\n"));
    assert!(!is_binary(b""));
}

#[test]
fn more_than_ten_percent_invalid_utf8_is_binary() {
    let mut data = vec![b'a'; 90];
    data.extend([0xFF; 11]);
    assert!(is_binary(&data));
    data.truncate(99);
    assert!(!is_binary(&data));
}

#[test]
fn a_character_cut_by_the_window_end_is_not_invalid() {
    let mut data = vec![b'a'; 8191];
    data.extend("é".as_bytes());
    assert!(!is_binary(&data));
}

#[test]
fn a_character_cut_by_the_end_of_the_data_is_invalid() {
    let mut short = vec![b'a'; 8];
    short.push(0xC3);
    // 1 invalid byte of 9 is over 10%.
    assert!(is_binary(&short));
}

#[test]
fn image_formats_are_recognised_by_their_magic_numbers() {
    assert_eq!(detect_image_mime(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
    assert_eq!(detect_image_mime(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
    assert_eq!(detect_image_mime(b"GIF89a.."), Some("image/gif"));
    assert_eq!(detect_image_mime(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
    assert_eq!(detect_image_mime(b"RIFF\x10\0\0\0WAVE"), None);
    assert_eq!(detect_image_mime(b"%PDF-1.7"), None);
}
