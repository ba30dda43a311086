//! Checking a parsed patch against a file set and computing every file's new bytes, before
//! anything is written.

use std::collections::BTreeMap;
use std::fmt;

use super::parse::{Chunk, ChunkLine, ParseError, Patch, SectionKind};
use super::seek::Seeker;
use super::text::{TextBuilder, TextFile};

/// What is at a path of a [`FileSet`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Nothing.
    Missing,
    /// A regular file (through symbolic links) with these bytes.
    File(Vec<u8>),
    /// A directory.
    Directory,
}

/// The files a patch is checked against: a disk below a sandbox, or a map in memory
/// ([`MemoryFiles`](super::MemoryFiles)). Planning only reads; writing is up to the caller.
pub trait FileSet {
    /// The identity of a file: two paths that name the same file must give equal keys.
    type Key: Clone + Ord + fmt::Debug;

    /// The key of `path` (as written in the patch).
    ///
    /// # Errors
    /// The text the model reads when the path is refused (e.g. `Path escapes workspace: <p>`).
    fn key(&self, path: &str) -> Result<Self::Key, String>;

    /// What is at `key` now.
    ///
    /// # Errors
    /// The reason the entry cannot be read (an I/O error's text).
    fn read(&self, key: &Self::Key) -> Result<Entry, String>;

    /// Whether a file may be created at `key` (where nothing is): the default allows it.
    ///
    /// # Errors
    /// Why not, e.g. `a/b is a file, not a directory`.
    fn check_creatable(&self, _key: &Self::Key) -> Result<(), String> {
        Ok(())
    }

    /// Whether the file at `path` may be deleted or moved away: the default allows it.
    ///
    /// # Errors
    /// Why not, e.g. that the path is a symbolic link.
    fn check_removable(&self, _path: &str, _key: &Self::Key) -> Result<(), String> {
        Ok(())
    }
}

/// What a section does to its file, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAction {
    /// `*** Add File`: summary `A p`.
    Add,
    /// `*** Delete File`: summary `D p`.
    Delete,
    /// `*** Update File` without a move: summary `M p`.
    Update,
    /// `*** Update File` with `*** Move to` (content changed or not): summary `R p -> q`.
    Move,
}

/// One file change of a [`PatchPlan`]: the bytes before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange<K> {
    /// What the section does.
    pub action: FileAction,
    /// The path as the patch wrote it.
    pub path: String,
    /// The `*** Move to` path as the patch wrote it.
    pub move_to: Option<String>,
    /// The key of `path`.
    pub key: K,
    /// The key of `move_to`.
    pub move_key: Option<K>,
    /// The bytes at `path` before (`None` for Add).
    pub old: Option<Vec<u8>>,
    /// The bytes written at `move_to`, else at `path` (`None` for Delete).
    pub new: Option<Vec<u8>>,
}

/// Every change of a patch, in patch order, each checked against the file set as the earlier
/// sections leave it. Applying the changes in order gives the patched file set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchPlan<K> {
    /// The changes, one per section.
    pub changes: Vec<FileChange<K>>,
}

/// Why one section cannot be applied. `Display`: `patch line {line}: {problem}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("patch line {line}: {problem}")]
pub struct SectionError {
    /// 1-based line in the patch text: the section header, or the chunk that does not match.
    pub line: usize,
    /// The path the problem is about, as the patch wrote it.
    pub path: String,
    /// What is wrong and what to do about it.
    pub problem: String,
}

/// Why a patch was not applied. The `Display` text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// The text does not follow the grammar; nothing was read or written.
    #[error("{0}; nothing was written")]
    Parse(#[from] ParseError),
    /// Sections that cannot be applied (one entry per failing section, in patch order); nothing
    /// was written.
    #[error("{}", rejected_text(.0))]
    Rejected(Vec<SectionError>),
    /// Writing failed after the checks passed; the files written so far were restored.
    #[error("writing {path} failed: {message}; every file was restored to its state before the patch")]
    WriteFailed {
        /// The path being written, as the patch wrote it.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// The call was cancelled after the files were read and checked, before the first write;
    /// nothing was written. (Through a registry the caller gets the registry's cancelled error
    /// instead.)
    #[error("`apply_patch` was cancelled before writing; nothing was written")]
    Cancelled,
    /// Writing failed and restoring some files failed too.
    #[error(
        "writing {path} failed: {message}; restoring failed for {}: check these files by hand",
        .not_restored.join("; ")
    )]
    RestoreFailed {
        /// The path being written, as the patch wrote it.
        path: String,
        /// The operating system's message.
        message: String,
        /// Each file that could not be restored, with the reason.
        not_restored: Vec<String>,
    },
}

fn rejected_text(errors: &[SectionError]) -> String {
    match errors {
        [one] => format!("{one}; nothing was written"),
        many => {
            let list: Vec<String> = many.iter().map(|e| format!("- {e}")).collect();
            format!("the patch has {} problems; nothing was written:\n{}", many.len(), list.join("\n"))
        }
    }
}

/// How a path was used by an earlier section.
#[derive(Debug, Clone, Copy)]
struct Claim {
    line: usize,
    /// `Some(how)` when the earlier section removed the file (deleted, or moved it away).
    removed: Option<&'static str>,
    /// How the earlier section used it, for messages.
    how: &'static str,
}

/// Checks every section of `patch` against `files` as the earlier sections leave them, and
/// computes each file's new bytes. Reads files; writes nothing.
///
/// Rules: Add needs nothing at its path (or a file deleted or moved away earlier in the patch);
/// Delete and Update need a file; a Move needs nothing at its target (or a file removed earlier)
/// and a target other than its source; a path may be used by one section only, except that a
/// section may create a file where an earlier one removed one. An Update reads the file as UTF-8
/// (a byte order mark is kept) and must change its bytes unless it moves it. How chunks match is
/// in the [module docs](super).
///
/// # Errors
/// [`PatchError::Rejected`] with the first problem of every section that has one.
pub fn plan_patch<F: FileSet + ?Sized>(patch: &Patch, files: &F) -> Result<PatchPlan<F::Key>, PatchError> {
    let mut claims: BTreeMap<F::Key, Claim> = BTreeMap::new();
    let mut changes = Vec::new();
    let mut errors = Vec::new();
    for section in &patch.sections {
        let line = section.line;
        let path = section.path.as_str();
        let fail = |problem: String| SectionError { line, path: path.to_owned(), problem };
        let result = (|| -> Result<FileChange<F::Key>, SectionError> {
            let key = files.key(path).map_err(fail)?;
            match &section.kind {
                SectionKind::Add { lines } => {
                    target_is_free(files, &claims, &key, path).map_err(fail)?;
                    claims.insert(key.clone(), Claim { line, removed: None, how: "added" });
                    let mut text = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
                    for added in lines {
                        text.push_str(added);
                        text.push('\n');
                    }
                    Ok(FileChange {
                        action: FileAction::Add,
                        path: path.to_owned(),
                        move_to: None,
                        key,
                        move_key: None,
                        old: None,
                        new: Some(text.into_bytes()),
                    })
                }
                SectionKind::Delete => {
                    let old = existing_file(files, &claims, &key, path, "Delete File").map_err(fail)?;
                    files.check_removable(path, &key).map_err(fail)?;
                    claims.insert(key.clone(), Claim { line, removed: Some("deleted"), how: "deleted" });
                    Ok(FileChange {
                        action: FileAction::Delete,
                        path: path.to_owned(),
                        move_to: None,
                        key,
                        move_key: None,
                        old: Some(old),
                        new: None,
                    })
                }
                SectionKind::Update { move_to, chunks } => {
                    let old = existing_file(files, &claims, &key, path, "Update File").map_err(fail)?;
                    let move_key = match move_to {
                        None => None,
                        Some(target) => {
                            let target_key = files.key(target).map_err(fail)?;
                            if target_key == key {
                                return Err(fail(format!(
                                    "`*** Move to: {target}` names the file being updated; remove the Move to line"
                                )));
                            }
                            files.check_removable(path, &key).map_err(fail)?;
                            target_is_free(files, &claims, &target_key, target)
                                .map_err(|problem| fail(format!("Move to: {problem}")))?;
                            Some(target_key)
                        }
                    };
                    claims.insert(
                        key.clone(),
                        match move_to {
                            Some(_) => Claim { line, removed: Some("moved away"), how: "moved away" },
                            None => Claim { line, removed: None, how: "updated" },
                        },
                    );
                    if let Some(target_key) = &move_key {
                        claims.insert(target_key.clone(), Claim { line, removed: None, how: "moved to" });
                    }
                    let new = if chunks.is_empty() {
                        old.clone()
                    } else {
                        let text = std::str::from_utf8(&old).map_err(|_| {
                            fail(format!("{path} is not UTF-8 text; apply_patch changes text files only"))
                        })?;
                        apply_chunks(text, chunks, path)
                            .map_err(|(line, problem)| SectionError { line, path: path.to_owned(), problem })?
                            .into_bytes()
                    };
                    if move_to.is_none() && new == old {
                        return Err(fail(format!(
                            "`*** Update File: {path}` leaves the file unchanged (its `+` lines put back what its `-` \
                             lines remove); drop the section, or change the lines"
                        )));
                    }
                    Ok(FileChange {
                        action: if move_to.is_some() { FileAction::Move } else { FileAction::Update },
                        path: path.to_owned(),
                        move_to: move_to.clone(),
                        key,
                        move_key,
                        old: Some(old),
                        new: Some(new),
                    })
                }
            }
        })();
        match result {
            Ok(change) => changes.push(change),
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() { Ok(PatchPlan { changes }) } else { Err(PatchError::Rejected(errors)) }
}

/// Checks that a file can be created at `key`: nothing there, or removed earlier in the patch.
fn target_is_free<F: FileSet + ?Sized>(
    files: &F,
    claims: &BTreeMap<F::Key, Claim>,
    key: &F::Key,
    path: &str,
) -> Result<(), String> {
    if let Some(claim) = claims.get(key) {
        return match claim.removed {
            Some(_) => Ok(()),
            None => Err(already_used(path, claim)),
        };
    }
    match files.read(key)? {
        Entry::Missing => files.check_creatable(key),
        Entry::File(_) => Err(format!(
            "{path} already exists; change it with `*** Update File: {path}`, or delete it earlier in the patch with \
             `*** Delete File: {path}`"
        )),
        Entry::Directory => Err(format!("{path} is a directory; choose a file path")),
    }
}

/// The bytes of the file at `key`, which must exist and not be used by an earlier section.
fn existing_file<F: FileSet + ?Sized>(
    files: &F,
    claims: &BTreeMap<F::Key, Claim>,
    key: &F::Key,
    path: &str,
    header: &str,
) -> Result<Vec<u8>, String> {
    if let Some(claim) = claims.get(key) {
        return Err(already_used(path, claim));
    }
    match files.read(key)? {
        Entry::File(bytes) => Ok(bytes),
        Entry::Missing => Err(format!(
            "`*** {header}: {path}`: file not found; check the path{}",
            if header == "Update File" { ", or create the file with `*** Add File:`" } else { "" }
        )),
        Entry::Directory => Err(format!("{path} is a directory; apply_patch changes files only")),
    }
}

fn already_used(path: &str, claim: &Claim) -> String {
    format!(
        "{path} was already {} by the section at patch line {}; put all changes to one file in one section",
        claim.how, claim.line
    )
}

/// The new text of a file after its chunks, or the patch line and text of the first problem.
fn apply_chunks(text: &str, chunks: &[Chunk], path: &str) -> Result<String, (usize, String)> {
    let file = TextFile::split(text);
    let mut seeker = Seeker::new(&file.lines);
    let n = file.lines.len();
    // (start, number of file lines replaced, chunk body, patch line), in chunk order.
    let mut edits: Vec<(usize, usize, &[ChunkLine], usize)> = Vec::with_capacity(chunks.len());
    let mut cursor = 0;
    for (number, chunk) in chunks.iter().enumerate().map(|(i, c)| (i + 1, c)) {
        for anchor in &chunk.anchors {
            match seeker.find(&[anchor.as_str()], cursor, false) {
                Some((at, _)) => cursor = at + 1,
                None => {
                    return Err((
                        chunk.line,
                        format!(
                            "chunk {number} of {path}: cannot find the `@@` context line `{anchor}` {}; it must be a \
                             whole line of the file, after the previous chunk",
                            after_line(cursor)
                        ),
                    ));
                }
            }
        }
        let mut body = chunk.lines.as_slice();
        let mut old = old_lines(body);
        let mut found = seeker.find(&old, cursor, chunk.end_of_file);
        if found.is_none() && !old.is_empty() {
            // Empty context lines at the end may stand for the file's final newline: try without them.
            let kept = body.len() - body.iter().rev().take_while(|l| **l == ChunkLine::Context(String::new())).count();
            if kept < body.len() {
                body = &body[..kept];
                old = old_lines(body);
                found = seeker.find(&old, cursor, chunk.end_of_file);
            }
        }
        if old.is_empty() {
            // Only added lines: right after the `@@` context line, else at the end of the file.
            let at = if chunk.end_of_file || chunk.anchors.is_empty() { n } else { cursor };
            edits.push((at, 0, body, chunk.line));
            continue;
        }
        match found {
            Some((start, _)) => {
                edits.push((start, old.len(), body, chunk.line));
                cursor = start + old.len();
            }
            None => return Err((chunk.line, not_found(&mut seeker, &old, cursor, chunk, number, path))),
        }
    }
    edits.sort_by_key(|&(start, ..)| start);
    let added: usize = edits.iter().flat_map(|(_, _, body, _)| body.iter()).map(|l| l.text().len() + 2).sum();
    let mut out = TextBuilder::new(&file, text.len() + added);
    let mut next = 0;
    for (start, replaced, body, line) in edits {
        if start < next {
            return Err((line, format!("this chunk of {path} overlaps another; put the chunks in file order")));
        }
        for i in next..start {
            out.keep(file.lines[i], file.endings[i]);
        }
        let mut at = start;
        for line in body {
            match line {
                ChunkLine::Context(_) => {
                    out.keep(file.lines[at], file.endings[at]);
                    at += 1;
                }
                ChunkLine::Remove(_) => at += 1,
                ChunkLine::Add(text) => out.insert(text),
            }
        }
        debug_assert_eq!(at, start + replaced);
        next = start + replaced;
    }
    for i in next..n {
        out.keep(file.lines[i], file.endings[i]);
    }
    Ok(out.finish())
}

/// The lines a chunk body expects in the file: its context and removed lines.
fn old_lines(body: &[ChunkLine]) -> Vec<&str> {
    body.iter().filter(|l| !matches!(l, ChunkLine::Add(_))).map(ChunkLine::text).collect()
}

fn after_line(cursor: usize) -> String {
    if cursor == 0 { "in the file".to_owned() } else { format!("after line {cursor} of the file") }
}

/// The message for a chunk whose lines are not in the file.
fn not_found(seeker: &mut Seeker<'_>, old: &[&str], cursor: usize, chunk: &Chunk, number: usize, path: &str) -> String {
    const SHOWN: usize = 12;
    let mut shown: Vec<String> = old.iter().take(SHOWN).map(|l| format!("    {l}")).collect();
    if old.len() > SHOWN {
        shown.push(format!("    ...({} more)", old.len() - SHOWN));
    }
    let mut message = if chunk.end_of_file {
        format!(
            "chunk {number} of {path} ends with `*** End of File` but these {} line(s) are not the last lines of the \
             file{}:\n{}",
            old.len(),
            if cursor > 0 { format!(" after line {cursor}") } else { String::new() },
            shown.join("\n")
        )
    } else {
        format!(
            "chunk {number} of {path}: cannot find these {} line(s) {}:\n{}",
            old.len(),
            after_line(cursor),
            shown.join("\n")
        )
    };
    match seeker.find(old, 0, false) {
        Some((at, _)) if at >= cursor => message.push_str(&format!(
            "\nThey are at line {}, which is not the end; remove `*** End of File`, or give the file's last lines",
            at + 1
        )),
        Some((at, _)) => message.push_str(&format!(
            "\nThey are at line {}, before the text of the previous chunk or `@@` line; chunks must be in file order",
            at + 1
        )),
        None => message.push_str("\nRead the file again and copy the context and removed lines exactly"),
    }
    message
}
