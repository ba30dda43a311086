//! Paging tokens, sniffing and spill files.

use sha2::Digest;
use tool_runtime::output::{
    INLINE_RESULT_BYTES, PageError, detect_image_mime, is_binary, offset_token, page_rows, parse_page, spill_result,
};

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

#[test]
fn a_small_result_is_not_spilled() {
    let dir = tempfile::tempdir().unwrap();

    assert_eq!(spill_result(dir.path(), &"a".repeat(INLINE_RESULT_BYTES)).unwrap(), None);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_large_result_is_spilled_to_a_read_only_content_addressed_file() {
    let dir = tempfile::tempdir().unwrap();
    let content = format!("{}{}", "h".repeat(20_000), "t".repeat(20_000));

    let spilled = spill_result(dir.path(), &content).unwrap().unwrap();

    let digest = sha2::Sha256::digest(content.as_bytes());
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(spilled.path, dir.path().join(format!("{hex}.txt")));
    assert_eq!(std::fs::read_to_string(&spilled.path).unwrap(), content);
    assert!(std::fs::metadata(&spilled.path).unwrap().permissions().readonly());
    assert_eq!((spilled.head, spilled.tail), ("h".repeat(12_288), "t".repeat(4096)));
    assert_eq!(spilled.total_bytes, 40_000);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn spilling_the_same_content_again_keeps_the_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let content = "x".repeat(20_000);
    let first = spill_result(dir.path(), &content).unwrap().unwrap();
    let modified = std::fs::metadata(&first.path).unwrap().modified().unwrap();

    let second = spill_result(dir.path(), &content).unwrap().unwrap();

    assert_eq!(second.path, first.path);
    assert_eq!(std::fs::metadata(&second.path).unwrap().modified().unwrap(), modified);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn the_spill_preview_names_the_file_and_the_omitted_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let spilled = spill_result(dir.path(), &"z".repeat(20_000)).unwrap().unwrap();

    let preview = spilled.preview();

    assert!(preview.contains(&format!(
        "\n[... 3616 bytes omitted; the whole output (20000 bytes) is in {}]\n",
        spilled.path.display()
    )));
}
