//! The checks of `tool_std::patch` that the fuzz targets of `tool-std/fuzz` run, shared with the
//! seeded runs in `tool-std/tests/all/patch_fuzz.rs` (a crate of its own, so that neither
//! includes the other's files).
//!
//! - [`parse_target`]: any text; the parser must not panic, and a patch it accepts must read back
//!   equal from its canonical form.
//! - [`apply_target`]: a small in-memory file set and a patch, both built from the input bytes
//!   (mostly well-formed, with lines from a small vocabulary so that chunks often match); parse,
//!   plan and apply must not panic, and a patch that applies must report exactly what it changed.

use std::collections::{BTreeMap, BTreeSet};

use arbitrary::Result;
/// The byte source [`build_case`] reads (from `arbitrary`), for callers without a dependency of
/// their own.
pub use arbitrary::Unstructured;
use tool_std::patch::{
    ChunkLine, FileAction, MemoryFiles, Patch, PatchError, SectionKind, apply_to_memory, parse_patch,
};

/// Parses arbitrary text; checks the round trip through `Display`.
pub fn parse_target(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(patch) = parse_patch(&text) {
        let rendered = patch.to_string();
        let again = parse_patch(&rendered).unwrap_or_else(|e| panic!("canonical form rejected: {e}\n{rendered}"));
        assert_eq!(without_lines(&again), without_lines(&patch), "canonical form reads back differently:\n{rendered}");
        // Planning against an empty file set must not panic either.
        let _ = apply_to_memory(&mut MemoryFiles::new(), &text);
    }
}

/// Builds a file set and a patch from `data`, applies it, and checks the report against the
/// change.
pub fn apply_target(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok((files, text)) = build_case(&mut u) else { return };
    check_apply(&files, &text);
}

/// Applies `text` to a copy of `files` and checks the outcome. Panics when a rule is broken.
pub fn check_apply(files: &MemoryFiles, text: &str) {
    let mut after = files.clone();
    let result = apply_to_memory(&mut after, text);
    let output = match result {
        Err(PatchError::Parse(_) | PatchError::Rejected(_)) => {
            assert_eq!(&after, files, "a rejected patch changed the files");
            return;
        }
        Err(other) => panic!("in-memory apply cannot fail while writing: {other}"),
        Ok(output) => output,
    };
    let patch = parse_patch(text).expect("an applied patch parses");
    assert_eq!(output.file_count, patch.sections.len());
    assert_eq!(output.files.len(), patch.sections.len());

    // The state each touched path must end in: the last section touching it decides.
    let mut last: BTreeMap<String, bool> = BTreeMap::new();
    for (summary, section) in output.files.iter().zip(&patch.sections) {
        let path = normal(&summary.file_path);
        match summary.action {
            FileAction::Add | FileAction::Update => {
                last.insert(path, true);
            }
            FileAction::Delete => {
                last.insert(path, false);
            }
            FileAction::Move => {
                last.insert(path, false);
                last.insert(normal(summary.move_to.as_deref().expect("a move names its target")), true);
            }
        }
        let expected = matches!(
            (&section.kind, summary.action),
            (SectionKind::Add { .. }, FileAction::Add)
                | (SectionKind::Delete, FileAction::Delete)
                | (SectionKind::Update { move_to: None, .. }, FileAction::Update)
                | (SectionKind::Update { move_to: Some(_), .. }, FileAction::Move)
        );
        assert!(expected, "section {section:?} reported as {summary:?}");
    }
    let before = files.files();
    let now = after.files();
    // Untouched paths keep their bytes; touched ones end as their last section left them.
    let every: BTreeSet<&String> = before.keys().chain(now.keys()).collect();
    for path in every {
        match last.get(path) {
            None => assert_eq!(before.get(path), now.get(path), "{path} changed without being reported"),
            Some(&exists) => assert_eq!(now.contains_key(path), exists, "{path} is not as its last section left it"),
        }
    }
    // Every in-place update really changed its file, and keeps its line endings, byte order mark
    // and final-newline state; its lines come from the old file or from the patch's `+` lines.
    for section in &patch.sections {
        let SectionKind::Update { move_to, chunks } = &section.kind else { continue };
        let old = &before[&normal(&section.path)];
        let new = &now[&normal(move_to.as_deref().unwrap_or(&section.path))];
        if move_to.is_none() {
            assert_ne!(old, new, "{} reported as updated but unchanged", section.path);
        }
        if chunks.is_empty() {
            assert_eq!(old, new, "a move without chunks changed the content");
            continue;
        }
        let (old, new) = (std::str::from_utf8(old).unwrap(), std::str::from_utf8(new).unwrap());
        let added: BTreeSet<&str> = chunks
            .iter()
            .flat_map(|c| &c.lines)
            .filter_map(|l| match l {
                ChunkLine::Add(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let old_lines: BTreeSet<&str> = lines(old).collect();
        for line in lines(new) {
            assert!(
                old_lines.contains(line) || added.contains(line),
                "line {line:?} of {} comes from nowhere",
                section.path
            );
        }
        assert_eq!(old.starts_with('\u{feff}'), new.starts_with('\u{feff}'), "byte order mark of {}", section.path);
        let body = |s: &str| s.trim_start_matches('\u{feff}').to_owned();
        // A file keeps its final newline, and a file without one gets none, unless its new last
        // line is empty (which cannot be written without an ending).
        let (old_body, new_body) = (body(old), body(new));
        let last_is_empty =
            new_body.split_inclusive('\n').next_back().is_some_and(|l| l.trim_end_matches(['\r', '\n']).is_empty());
        if !old_body.is_empty() && !new_body.is_empty() && !last_is_empty {
            assert_eq!(old.ends_with('\n'), new.ends_with('\n'), "final newline of {}", section.path);
        }
        // No line is lost or made up: the count changes by the added minus the removed lines.
        let count = |text: &str| text.split_inclusive('\n').count() as isize;
        let delta: isize = chunks
            .iter()
            .flat_map(|c| &c.lines)
            .map(|l| match l {
                ChunkLine::Add(_) => 1,
                ChunkLine::Remove(_) => -1,
                ChunkLine::Context(_) => 0,
            })
            .sum();
        assert_eq!(count(&new_body), count(&old_body) + delta, "line count of {}", section.path);
        if old.contains("\r\n") && !old.replace("\r\n", "").contains('\n') {
            assert!(!new.replace("\r\n", "").contains('\n'), "a CRLF file got a bare LF: {new:?}");
        }
    }
    // The same patch on the same files gives the same files.
    let mut again = files.clone();
    apply_to_memory(&mut again, text).expect("a patch that applied once applies again to the same files");
    assert_eq!(again, after);
}

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.trim_start_matches('\u{feff}').split_inclusive('\n').map(|l| l.trim_end_matches('\n').trim_end_matches('\r'))
}

fn normal(path: &str) -> String {
    path.split('/').filter(|p| !p.is_empty() && *p != ".").collect::<Vec<_>>().join("/")
}

fn without_lines(patch: &Patch) -> Patch {
    let mut patch = patch.clone();
    for section in &mut patch.sections {
        section.line = 0;
        if let SectionKind::Update { chunks, .. } = &mut section.kind {
            for chunk in chunks {
                chunk.line = 0;
            }
        }
    }
    patch
}

const PATHS: [&str; 6] = ["a.txt", "b.txt", "d/c.txt", "./a.txt", "d/e/f.txt", "new.txt"];
const WORDS: [&str; 14] = [
    "",
    "x",
    "y",
    "z",
    " x",
    "x ",
    "\tx",
    "fn a() {",
    "}",
    "\u{201C}q\u{201D}",
    "\"q\"",
    "a \u{2014} b",
    "a - b",
    "  ",
];

fn word(u: &mut Unstructured<'_>) -> Result<&'static str> {
    u.choose(&WORDS).copied()
}

/// A file set of up to four text files and a patch for it.
pub fn build_case(u: &mut Unstructured<'_>) -> Result<(MemoryFiles, String)> {
    let mut files = MemoryFiles::new();
    for path in ["a.txt", "b.txt", "d/c.txt", "d/e/f.txt"] {
        if !u.ratio(3, 4)? {
            continue;
        }
        let crlf = u.ratio(1, 4)?;
        let mut text = String::new();
        if u.ratio(1, 16)? {
            text.push('\u{feff}');
        }
        let count = u.int_in_range(0..=8)?;
        for i in 0..count {
            text.push_str(word(u)?);
            if i + 1 < count || u.ratio(3, 4)? {
                text.push_str(if crlf { "\r\n" } else { "\n" });
            }
        }
        files.insert(path, text).expect("fixed paths are valid");
    }
    if u.ratio(1, 8)? {
        let raw: String = u.arbitrary()?;
        return Ok((files, raw));
    }
    let mut text = String::new();
    if u.ratio(1, 4)? {
        text.push_str("Here is the patch:\n```\n");
    }
    text.push_str("*** Begin Patch\n");
    for _ in 0..u.int_in_range(1..=3)? {
        let kind = u.int_in_range(0..=3)?;
        // Mostly a path that suits the section (missing for Add, present otherwise).
        let suits: Vec<&str> = PATHS.iter().copied().filter(|p| (files.get(p).is_none()) == (kind == 0)).collect();
        let path = if !suits.is_empty() && u.ratio(4, 5)? { *u.choose(&suits)? } else { *u.choose(&PATHS)? };
        match kind {
            0 => {
                text.push_str(&format!("*** Add File: {path}\n"));
                for _ in 0..u.int_in_range(0..=3)? {
                    text.push_str(&format!("+{}\n", word(u)?));
                }
            }
            1 => text.push_str(&format!("*** Delete File: {path}\n")),
            _ => {
                text.push_str(&format!("*** Update File: {path}\n"));
                if u.ratio(1, 5)? {
                    text.push_str(&format!("*** Move to: {}\n", u.choose(&PATHS)?));
                }
                let current: Vec<String> = files
                    .get(path)
                    .map(|bytes| lines(std::str::from_utf8(bytes).unwrap_or_default()).map(str::to_owned).collect())
                    .unwrap_or_default();
                let mut cursor = 0;
                for _ in 0..u.int_in_range(0..=3)? {
                    for _ in 0..u.int_in_range(0..=1)? {
                        text.push_str(&format!("@@ {}\n", word(u)?));
                    }
                    if u.ratio(1, 2)? {
                        text.push_str("@@\n");
                    }
                    if !current.is_empty() && cursor < current.len() && u.ratio(3, 4)? {
                        // A run of the file's own lines, some of them changed a little.
                        let start = u.int_in_range(cursor..=current.len() - 1)?;
                        let end = u.int_in_range(start + 1..=current.len().min(start + 4))?;
                        for line in &current[start..end] {
                            let prefix = *u.choose(&[" ", "-", "-", " "])?;
                            let shown = match u.int_in_range(0..=5)? {
                                0 => format!("{line} "),
                                1 => format!("  {}", line.trim()),
                                2 => line.replace(['\u{201C}', '\u{201D}'], "\"").replace('\u{2014}', "-"),
                                _ => line.clone(),
                            };
                            text.push_str(&format!("{prefix}{shown}\n"));
                            if u.ratio(1, 3)? {
                                text.push_str(&format!("+{}\n", word(u)?));
                            }
                        }
                        text.push_str(&format!("+{}\n", word(u)?));
                        cursor = end;
                        if end == current.len() && u.ratio(1, 2)? {
                            text.push_str("*** End of File\n");
                        }
                        continue;
                    }
                    for _ in 0..u.int_in_range(1..=5)? {
                        let prefix = *u.choose(&[" ", "-", "+", ""])?;
                        let line = if prefix.is_empty() { "" } else { word(u)? };
                        text.push_str(&format!("{prefix}{line}\n"));
                    }
                    if u.ratio(1, 5)? {
                        text.push_str("*** End of File\n");
                    }
                }
            }
        }
        if u.ratio(1, 6)? {
            text.push('\n');
        }
    }
    text.push_str("*** End Patch\n");
    if u.ratio(1, 4)? {
        text.push_str("```\n");
    }
    if u.ratio(1, 8)? {
        text = text.replace('\n', "\r\n");
    }
    Ok((files, text))
}
