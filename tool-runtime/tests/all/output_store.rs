//! The output cache stores: memory and files, line access and search that stream.

use std::io::Read;
use std::sync::Arc;

use tool_runtime::ContentPart;
use tool_runtime::output::{
    CHECKPOINT_LINES, FileStore, GrepQuery, MemoryStore, OutputStore, REF_ID_LEN, StoreError, StoredInfo, grep_stored,
    mint_ref_id, open_lines, put_text, validate_ref_id,
};

fn stores() -> (tempfile::TempDir, Vec<Arc<dyn OutputStore>>) {
    let dir = tempfile::tempdir().unwrap();
    let file = FileStore::new(dir.path().join("cache")).unwrap();
    (dir, vec![Arc::new(MemoryStore::new()), Arc::new(file)])
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

fn read_all(store: &dyn OutputStore, ref_id: &str) -> String {
    let mut text = String::new();
    store.open_at(ref_id, 0).unwrap().read_to_string(&mut text).unwrap();
    text
}

#[test]
fn a_stored_text_reads_back_whole_with_its_counts() {
    let (_dir, stores) = stores();
    for store in stores {
        let info = put_text(&*store, "call_1", "a\nb\nc", &[]).unwrap();

        assert_eq!(info, StoredInfo { bytes: 5, lines: 3, parts: 0 });
        assert_eq!(store.info("call_1").unwrap(), info);
        assert_eq!(read_all(&*store, "call_1"), "a\nb\nc");
    }
}

#[test]
fn a_final_newline_does_not_start_another_line() {
    let (_dir, stores) = stores();
    for store in stores {
        assert_eq!(put_text(&*store, "r", "a\nb\n", &[]).unwrap().lines, 2);
        assert_eq!(put_text(&*store, "e", "", &[]).unwrap().lines, 0);
    }
}

#[test]
fn line_n_is_read_through_the_nearest_checkpoint() {
    let (_dir, stores) = stores();
    let text = numbered(5000);
    for store in stores {
        put_text(&*store, "big", &text, &[]).unwrap();
        assert_eq!(
            store.checkpoint("big", 3000).unwrap(),
            (2 * CHECKPOINT_LINES, "line 1\n".len() as u64 * 9 + 90 * 8 + 900 * 9 + 1049 * 10)
        );

        let mut cursor = open_lines(&*store, "big", 3000).unwrap();

        assert_eq!(cursor.next_line(100).unwrap().unwrap().text, "line 3001");
        assert_eq!(cursor.next_line(100).unwrap().unwrap().text, "line 3002");
    }
}

#[test]
fn the_checkpoint_of_a_line_is_the_last_one_at_or_before_it() {
    let (_dir, stores) = stores();
    let text = numbered(5000);
    let offset = |line: u64| -> u64 { text.split_inclusive('\n').take(line as usize).map(|l| l.len() as u64).sum() };
    for store in stores {
        put_text(&*store, "big", &text, &[]).unwrap();
        put_text(&*store, "small", "a\nb\nc", &[]).unwrap();
        let got: Vec<(u64, u64)> =
            [0, 1023, 1024, 4095, 4096, 4999, 100_000].iter().map(|&l| store.checkpoint("big", l).unwrap()).collect();
        assert_eq!(
            got,
            [
                (0, 0),
                (0, 0),
                (1024, offset(1024)),
                (3072, offset(3072)),
                (4096, offset(4096)),
                (4096, offset(4096)),
                (4096, offset(4096))
            ]
        );
        assert_eq!((store.checkpoint("small", 0).unwrap(), store.checkpoint("small", 5000).unwrap()), ((0, 0), (0, 0)));
    }
}

#[test]
fn a_long_line_is_kept_up_to_the_asked_bytes_at_a_character_boundary() {
    let (_dir, stores) = stores();
    for store in stores {
        put_text(&*store, "wide", &format!("{}\nnext", "é".repeat(100)), &[]).unwrap();

        let line = open_lines(&*store, "wide", 0).unwrap().next_line(5).unwrap().unwrap();

        assert_eq!((line.text.as_str(), line.len), ("éé", 200));
    }
}

#[test]
fn a_line_past_the_end_is_an_error_with_the_count() {
    let (_dir, stores) = stores();
    for store in stores {
        put_text(&*store, "r", "a\nb", &[]).unwrap();

        let error = open_lines(&*store, "r", 2).unwrap_err();

        assert_eq!(error.to_string(), "line 3 is past the end of ref_id `r`, which has 2 lines");
    }
}

#[test]
fn an_unknown_ref_is_not_found() {
    let (_dir, stores) = stores();
    for store in stores {
        assert_eq!(
            store.info("nope").unwrap_err().to_string(),
            "no tool output is cached under ref_id `nope` in this session; use the ref_id of a tool result of this \
             session"
        );
    }
}

#[test]
fn a_ref_id_with_a_path_separator_is_refused() {
    let (_dir, stores) = stores();
    for store in stores {
        let error = put_text(&*store, "../x", "a", &[]).unwrap_err();

        assert_eq!(error, StoreError::InvalidRefId { ref_id: "../x".to_owned() });
    }
    assert!(validate_ref_id(&"a".repeat(129)).is_err());
}

#[test]
fn a_minted_ref_id_is_22_url_safe_characters() {
    let ref_id = mint_ref_id().unwrap();
    assert_eq!(ref_id.len(), REF_ID_LEN);
    assert_eq!(REF_ID_LEN, 22);
    assert!(ref_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'), "{ref_id}");
    assert_eq!(validate_ref_id(&ref_id), Ok(()));
}

#[test]
fn minted_ref_ids_never_repeat() {
    let ids: std::collections::HashSet<String> = (0..10_000).map(|_| mint_ref_id().unwrap()).collect();
    assert_eq!(ids.len(), 10_000);
}

#[test]
fn minted_ref_ids_share_no_prefix_with_the_next_one() {
    // Consecutive ids are independent random draws: their first 4 characters (24 bits) agree
    // 1 time in 2^24, so 999 pairs share none but about once in 16,800 runs.
    let ids: Vec<String> = (0..1_000).map(|_| mint_ref_id().unwrap()).collect();
    let same_start = ids.windows(2).filter(|w| w[0][..4] == w[1][..4]).count();
    assert_eq!(same_start, 0);
}

#[test]
fn typed_parts_are_stored_and_given_back_as_parts() {
    let (_dir, stores) = stores();
    let image =
        ContentPart::Image { data: "iVBORw0KGgo=".to_owned(), media_type: "image/png".to_owned(), detail: None };
    for store in stores {
        let info = put_text(&*store, "img", "[image]", std::slice::from_ref(&image)).unwrap();

        assert_eq!(info.parts, 1);
        assert_eq!(store.parts("img").unwrap(), vec![image.clone()]);
    }
}

#[test]
fn storing_again_replaces_the_output() {
    let (_dir, stores) = stores();
    for store in stores {
        put_text(&*store, "r", "old\nold", &[]).unwrap();
        put_text(&*store, "r", "new", &[]).unwrap();

        assert_eq!(read_all(&*store, "r"), "new");
        assert_eq!(store.info("r").unwrap().lines, 1);
    }
}

#[test]
fn the_file_store_leaves_no_temp_files_behind() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path()).unwrap();
    put_text(&store, "r", "one", &[]).unwrap();
    put_text(&store, "r", "two", &[]).unwrap();

    let mut names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();

    assert_eq!(names, ["r"]);
}

#[test]
fn a_failing_reader_publishes_nothing() {
    struct Broken;
    impl Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("pipe closed"))
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path()).unwrap();

    let error = store.put("r", &mut Broken, &[]).unwrap_err();

    assert!(error.to_string().contains("pipe closed"), "{error}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert!(matches!(store.info("r"), Err(StoreError::NotFound { .. })));
}

fn query(pattern: &str, regex: bool) -> GrepQuery {
    GrepQuery { pattern: pattern.to_owned(), regex, before: 0, after: 0, max_matches: 50, max_line_bytes: 1000 }
}

#[test]
fn grep_finds_numbered_lines_in_blocks_with_context() {
    let (_dir, stores) = stores();
    for store in stores {
        put_text(&*store, "r", "a\nerror 1\nb\nc\nd\nerror 2\ne", &[]).unwrap();

        let hits = grep_stored(&*store, "r", &GrepQuery { before: 1, after: 0, ..query("error", false) }).unwrap();

        let blocks: Vec<Vec<(u64, bool, &str)>> =
            hits.blocks.iter().map(|b| b.iter().map(|l| (l.number, l.is_match, l.text.as_str())).collect()).collect();
        assert_eq!(
            blocks,
            vec![vec![(1, false, "a"), (2, true, "error 1")], vec![(5, false, "d"), (6, true, "error 2")]]
        );
        assert_eq!((hits.matches, hits.truncated), (2, false));
    }
}

#[test]
fn grep_stops_past_max_matches_without_the_next_match_context() {
    let (_dir, stores) = stores();
    for store in stores {
        put_text(&*store, "r", "x1\nctx\nx2\nx3", &[]).unwrap();

        let hits = grep_stored(&*store, "r", &GrepQuery { before: 1, max_matches: 1, ..query("x", false) }).unwrap();

        assert_eq!(hits.blocks.len(), 1);
        assert_eq!(hits.blocks[0].iter().map(|l| l.number).collect::<Vec<_>>(), [1]);
        assert!(hits.truncated);
    }
}

#[test]
fn a_literal_pattern_is_not_a_regex() {
    let (_dir, stores) = stores();
    for store in stores {
        put_text(&*store, "r", "a.b\naxb", &[]).unwrap();

        assert_eq!(grep_stored(&*store, "r", &query("a.b", false)).unwrap().matches, 1);
        assert_eq!(grep_stored(&*store, "r", &query("a.b", true)).unwrap().matches, 2);
    }
}

#[test]
fn an_invalid_regex_names_the_pattern() {
    let store = MemoryStore::new();
    put_text(&store, "r", "a", &[]).unwrap();

    let error = grep_stored(&store, "r", &query("(", true)).unwrap_err();

    assert!(error.to_string().starts_with("invalid regex `(`: "), "{error}");
    assert!(error.to_string().ends_with("; fix it or set regex to false for a literal search"), "{error}");
}

#[test]
fn a_long_matching_line_is_shown_as_a_window_around_the_match() {
    let store = MemoryStore::new();
    let line = format!("{}NEEDLE{}", "é".repeat(2000), "z".repeat(2000));
    put_text(&store, "r", &line, &[]).unwrap();

    let hits = grep_stored(&store, "r", &query("NEEDLE", false)).unwrap();

    let hit = &hits.blocks[0][0];
    assert_eq!((hit.len, hit.window_start, hit.window_start_graphemes), (6006, 3750, 1875));
    assert!(hit.text.starts_with(&"é".repeat(125)));
    assert!(hit.text[250..].starts_with("NEEDLE"));
    assert!(hit.text.len() <= 1000);
}

#[test]
fn lines_on_both_sides_of_a_checkpoint_are_read_exactly() {
    let (_dir, stores) = stores();
    let text = numbered(3000);
    for store in stores {
        put_text(&*store, "r", &text, &[]).unwrap();
        for line in [0u64, 1022, 1023, 1024, 1025, 2047, 2048, 2999] {
            let got = open_lines(&*store, "r", line).unwrap().next_line(100).unwrap().unwrap();
            assert_eq!((got.line, got.text), (line, format!("line {}", line + 1)));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checkpoints at the edges, the file store's index format, and damaged files.
// ---------------------------------------------------------------------------------------------

/// The byte offset of the start of 0-based `line` in `text` (its length past the last line).
fn offset_of(text: &str, line: u64) -> u64 {
    text.split_inclusive('\n').take(usize::try_from(line).unwrap()).map(|l| l.len() as u64).sum()
}

/// The little-endian `u64`s of a file store's index file.
fn index_numbers(dir: &std::path::Path, ref_id: &str) -> Vec<u64> {
    let bytes = std::fs::read(dir.join("cache").join(ref_id).join("index")).unwrap();
    bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn the_checkpoint_of_every_line_near_a_multiple_of_1024_is_the_last_line_start_recorded_at_or_before_it() {
    let (_dir, stores) = stores();
    for store in stores {
        for (lines, final_newline) in [
            (0, false),
            (1, false),
            (1023, true),
            (1024, false),
            (1024, true),
            (1025, true),
            (2048, true),
            (2049, false),
        ] {
            let mut text = numbered(lines);
            if !final_newline {
                text.pop();
            }
            put_text(&*store, "r", &text, &[]).unwrap();
            let newlines = text.matches('\n').count() as u64;
            for line in [0, 1, 1022, 1023, 1024, 1025, 2047, 2048, 2049, 3072, u64::MAX] {
                // A line start is recorded after every 1024th newline, the end of the text included.
                let at = (line / CHECKPOINT_LINES).min(newlines / CHECKPOINT_LINES) * CHECKPOINT_LINES;
                assert_eq!(
                    store.checkpoint("r", line).unwrap(),
                    (at, offset_of(&text, at)),
                    "line {line} of {lines} lines (final newline: {final_newline})"
                );
                let read =
                    open_lines(&*store, "r", line).map(|mut c| c.next_line(100).unwrap().map(|l| (l.line, l.text)));
                let expected = if line < lines as u64 {
                    Ok(Some((line, format!("line {}", line + 1))))
                } else if lines == 0 && line == 0 {
                    Ok(None)
                } else {
                    Err(StoreError::LinePastEnd {
                        ref_id: "r".to_owned(),
                        line: line.saturating_add(1),
                        lines: lines as u64,
                    })
                };
                assert_eq!(read, expected, "line {line} of {lines} lines (final newline: {final_newline})");
            }
        }
    }
}

#[test]
fn the_file_store_index_holds_the_counts_then_every_checkpoint_from_line_0() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path().join("cache")).unwrap();
    let text = numbered(2049);
    put_text(&store, "big", &text, &[ContentPart::text("p")]).unwrap();
    put_text(&store, "small", "a\nb", &[]).unwrap();
    put_text(&store, "empty", "", &[]).unwrap();
    assert_eq!(
        [index_numbers(dir.path(), "big"), index_numbers(dir.path(), "small"), index_numbers(dir.path(), "empty")],
        [
            vec![text.len() as u64, 2049, 1, 0, offset_of(&text, 1024), offset_of(&text, 2048)],
            vec![3, 2, 0, 0],
            vec![0, 0, 0, 0]
        ]
    );
}

#[test]
fn an_output_written_by_hand_in_the_index_format_is_read_through_its_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cache").join("old");
    std::fs::create_dir_all(&out).unwrap();
    let text = numbered(3000);
    std::fs::write(out.join("text"), &text).unwrap();
    std::fs::write(out.join("parts.json"), "[]").unwrap();
    let numbers = [text.len() as u64, 3000, 0, 0, offset_of(&text, 1024), offset_of(&text, 2048)];
    std::fs::write(out.join("index"), numbers.iter().flat_map(|n| n.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let store = FileStore::new(dir.path().join("cache")).unwrap();
    let lines: Vec<String> = [0, 1023, 1024, 2047, 2048, 2999]
        .iter()
        .map(|&line| open_lines(&store, "old", line).unwrap().next_line(100).unwrap().unwrap().text)
        .collect();
    assert_eq!(store.info("old").unwrap(), StoredInfo { bytes: text.len() as u64, lines: 3000, parts: 0 });
    assert_eq!(store.checkpoint("old", 2500).unwrap(), (2048, offset_of(&text, 2048)));
    assert_eq!(lines, ["line 1", "line 1024", "line 1025", "line 2048", "line 2049", "line 3000"]);
}

#[test]
fn an_index_file_too_short_or_cut_mid_number_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path().join("cache")).unwrap();
    put_text(&store, "r", "a\nb", &[]).unwrap();
    let index = dir.path().join("cache").join("r").join("index");
    let whole = std::fs::read(&index).unwrap();
    let mut got = Vec::new();
    for cut in [0, 24, 31, 33] {
        let mut bytes = whole.clone();
        bytes.resize(cut, 0);
        std::fs::write(&index, bytes).unwrap();
        got.push(store.checkpoint("r", 0).unwrap_err().to_string());
        got.push(store.info("r").unwrap_err().to_string());
    }
    let damaged =
        format!("the output cache failed for ref_id `r`: {} is damaged; call the tool again", index.display());
    assert_eq!(got, vec![damaged; 8]);
}

#[test]
fn a_text_shorter_than_its_index_says_is_an_error_when_a_line_past_its_end_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path().join("cache")).unwrap();
    put_text(&store, "r", &numbered(3000), &[]).unwrap();
    // The text loses its end (the index still counts 3000 lines).
    std::fs::write(dir.path().join("cache").join("r").join("text"), numbered(10)).unwrap();
    let got: Vec<String> = [5, 100, 2500]
        .iter()
        .map(|&line| match open_lines(&store, "r", line) {
            Ok(mut cursor) => format!("ok: {}", cursor.next_line(100).unwrap().unwrap().text),
            Err(error) => format!("error: {error}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            "ok: line 6",
            "error: the output cache failed for ref_id `r`: its text ends before line 101 of the 3000 lines its index counts: it is damaged or was replaced; call the tool again",
            "error: the output cache failed for ref_id `r`: its text ends before line 2501 of the 3000 lines its index counts: it is damaged or was replaced; call the tool again"
        ]
    );
}
