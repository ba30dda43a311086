//! The patch on the real file system: the sandbox as a [`FileSet`], and an all-or-nothing commit
//! (stage every new file, rename into place, undo on failure).
//!
//! Every read, create, rename and removal goes through directory handles opened beneath the
//! sandbox's root handle (see [`crate::sandbox`]), never by path: a directory swapped for a
//! symlink that points out between the plan and the commit makes the step fail, and the commit is
//! undone, instead of writing outside.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use super::plan::{Entry, FileAction, FileChange, FileSet, PatchError};
use crate::fs::REWRITE_MAX_FILE_BYTES;
use crate::sandbox::{Kind, OpenError, Sandbox, Slot, read_capped};

/// The files below a [`Sandbox`]: keys are the resolved real paths
/// ([`Sandbox::resolve`]), so two spellings of one file are one key. Files are read through the
/// sandbox's root handle; a FIFO, socket or device node is refused naming its kind, and a file
/// over [`REWRITE_MAX_FILE_BYTES`] is refused too.
#[derive(Debug, Clone, Copy)]
pub struct SandboxFiles<'a> {
    sandbox: &'a Sandbox,
}

impl<'a> SandboxFiles<'a> {
    /// The files below `sandbox`.
    pub fn new(sandbox: &'a Sandbox) -> Self {
        Self { sandbox }
    }
}

impl FileSet for SandboxFiles<'_> {
    type Key = PathBuf;

    fn key(&self, path: &str) -> Result<PathBuf, String> {
        self.sandbox.resolve(path).map_err(|e| e.to_string())
    }

    fn read(&self, key: &PathBuf) -> Result<Entry, String> {
        let shown = self.sandbox.display_path(key);
        let target = self.sandbox.target_of_real(&shown, key.clone()).map_err(|e| e.to_string())?;
        match self.sandbox.open_target(&target) {
            Ok((_, Kind::Directory)) => Ok(Entry::Directory),
            Ok((file, Kind::File)) => match read_capped(&file, REWRITE_MAX_FILE_BYTES) {
                Ok(Some(bytes)) => Ok(Entry::File(bytes)),
                Ok(None) => Err(format!(
                    "{shown} is over {REWRITE_MAX_FILE_BYTES} bytes, more than apply_patch reads; change it with a \
                     command made for large files"
                )),
                Err(e) => Err(format!("cannot read {shown}: {e}")),
            },
            Err(OpenError::NotFound(_)) => Ok(Entry::Missing),
            Err(OpenError::Io(e)) if e.kind() == io::ErrorKind::NotADirectory => Ok(Entry::Missing),
            Err(OpenError::Io(e)) => Err(format!("cannot read {shown}: {e}")),
            Err(OpenError::Refused(refused)) => Err(refused.to_string()),
        }
    }

    fn check_creatable(&self, key: &PathBuf) -> Result<(), String> {
        // A check for the message only: the commit creates through handles and fails safely.
        for ancestor in key.ancestors().skip(1) {
            match std::fs::metadata(ancestor) {
                Ok(m) if m.is_dir() => return Ok(()),
                Ok(_) => {
                    return Err(format!(
                        "{} is a file, so {} cannot be created below it",
                        self.sandbox.display_path(ancestor),
                        self.sandbox.display_path(key)
                    ));
                }
                Err(_) => {}
            }
        }
        Ok(())
    }

    fn check_removable(&self, path: &str, _key: &PathBuf) -> Result<(), String> {
        let link = self.sandbox.root().join(path);
        match std::fs::symlink_metadata(&link) {
            Ok(m) if m.file_type().is_symlink() => Err(format!(
                "{path} is a symbolic link; apply_patch does not delete or move links (it would act on the file \
                 they point to)"
            )),
            _ => Ok(()),
        }
    }
}

/// A file under a temporary name (a staged new file, or an old file set aside), removed when
/// dropped unless kept.
struct Temp {
    slot: Slot,
    kept: bool,
}

impl Temp {
    fn new(slot: Slot) -> Self {
        Self { slot, kept: false }
    }

    /// Keeps the file (it was renamed into place, or must stay); returns where it was.
    fn keep(mut self) -> Slot {
        self.kept = true;
        self.slot.clone()
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.kept {
            let _ = self.slot.remove();
        }
    }
}

/// What to do to undo one step of a commit, newest last.
enum Undo {
    /// A file was created at this slot: remove it.
    Remove(Slot),
    /// The file at `to` was set aside at `backup` (a rename or a hard link): put it back.
    Restore { backup: Temp, to: Slot },
}

/// One change made ready: its staged new file, and the slots of its path and its target.
struct Prepared {
    staged: Option<Temp>,
    key: Slot,
    target: Slot,
}

/// Writes the changes of a plan: every new file is first written to a temp file beside its
/// target (Add: mode 0o666 less the umask; Update and Move: the mode of the old file), then the
/// changes are done in patch order by renames, each old file kept aside (hard link, or rename
/// where links are not supported) until the end. On any failure the steps done are undone in
/// reverse, temp files are removed, and so are directories created for new files. Every step is
/// relative to a directory handle opened beneath the sandbox's root.
pub(crate) fn commit(sandbox: &Sandbox, changes: &[FileChange<PathBuf>]) -> Result<(), PatchError> {
    commit_with(sandbox, changes, |_| Ok(()))
}

/// [`commit`], calling `before_step(k)` before the `k`-th rename (0-based); an error from it
/// fails the commit there (for tests of the undo path).
pub(crate) fn commit_with(
    sandbox: &Sandbox,
    changes: &[FileChange<PathBuf>],
    mut before_step: impl FnMut(usize) -> io::Result<()>,
) -> Result<(), PatchError> {
    let mut created_dirs: Vec<Slot> = Vec::new();
    let mut prepared: Vec<Prepared> = Vec::with_capacity(changes.len());
    for change in changes {
        match prepare(sandbox, change, &mut created_dirs) {
            Ok(ready) => prepared.push(ready),
            Err(e) => {
                drop(prepared);
                remove_dirs(&created_dirs);
                return Err(PatchError::WriteFailed { path: written_path(change).to_owned(), message: e.to_string() });
            }
        }
    }
    let mut undo: Vec<Undo> = Vec::new();
    let mut step = 0;
    let mut prepared = prepared.into_iter();
    for change in changes {
        let Some(ready) = prepared.next() else { break };
        if let Err(e) = apply_change(change, ready, &mut undo, &mut step, &mut before_step) {
            // The temp files not used yet go before the directories they are in.
            drop(prepared);
            let not_restored = roll_back(undo);
            remove_dirs(&created_dirs);
            let path = written_path(change).to_owned();
            let message = e.to_string();
            return Err(if not_restored.is_empty() {
                PatchError::WriteFailed { path, message }
            } else {
                PatchError::RestoreFailed { path, message, not_restored }
            });
        }
    }
    // Success: dropping the backups deletes them.
    drop(undo);
    Ok(())
}

fn written_path(change: &FileChange<PathBuf>) -> &str {
    change.move_to.as_deref().unwrap_or(&change.path)
}

/// The slot of a real path through the sandbox, making missing parents when `created` is given.
fn slot_of(sandbox: &Sandbox, real: &Path, created: Option<&mut Vec<Slot>>) -> io::Result<Slot> {
    let shown = sandbox.display_path(real);
    let target = sandbox.target_of_real(&shown, real.to_path_buf()).map_err(io::Error::other)?;
    sandbox.slot(&target, created).map_err(|e| match e {
        OpenError::Refused(refused) => io::Error::other(refused.to_string()),
        OpenError::NotFound(e) | OpenError::Io(e) => e,
    })
}

/// Opens the slots of a change and writes its new bytes to a temp file beside its target, with
/// its mode.
fn prepare(sandbox: &Sandbox, change: &FileChange<PathBuf>, created_dirs: &mut Vec<Slot>) -> io::Result<Prepared> {
    let target_key = change.move_key.as_ref().unwrap_or(&change.key);
    let creates = change.new.is_some();
    let target = slot_of(sandbox, target_key, creates.then_some(&mut *created_dirs))?;
    let key = if change.move_key.is_some() { slot_of(sandbox, &change.key, None)? } else { target.clone() };
    let Some(new) = &change.new else { return Ok(Prepared { staged: None, key, target }) };
    let (temp, mut file) = target.create_temp("patch-tmp")?;
    let staged = Temp::new(temp);
    file.write_all(new)?;
    file.flush()?;
    if change.action != FileAction::Add {
        file.set_permissions(std::fs::Permissions::from_mode(key.mode()?))?;
    }
    Ok(Prepared { staged: Some(staged), key, target })
}

fn apply_change(
    change: &FileChange<PathBuf>,
    ready: Prepared,
    undo: &mut Vec<Undo>,
    step: &mut usize,
    before_step: &mut impl FnMut(usize) -> io::Result<()>,
) -> io::Result<()> {
    let mut next_step = || {
        let k = *step;
        *step += 1;
        before_step(k)
    };
    let Prepared { staged, key, target } = ready;
    match (change.action, staged) {
        (FileAction::Add, Some(file)) => {
            next_step()?;
            file.slot.rename_noclobber(&key)?;
            file.keep();
            undo.push(Undo::Remove(key));
        }
        (FileAction::Update, Some(file)) => {
            next_step()?;
            let (backup, linked) = set_aside(&key, true)?;
            undo.push(Undo::Restore { backup, to: key.clone() });
            if linked {
                file.slot.rename_over(&key)?;
            } else {
                // The old file was renamed away: put the new one in its place without clobbering.
                file.slot.rename_noclobber(&key)?;
            }
            file.keep();
        }
        (FileAction::Move, Some(file)) => {
            next_step()?;
            file.slot.rename_noclobber(&target)?;
            file.keep();
            undo.push(Undo::Remove(target));
            next_step()?;
            let (backup, _) = set_aside(&key, false)?;
            undo.push(Undo::Restore { backup, to: key });
        }
        (FileAction::Delete, _) => {
            next_step()?;
            let (backup, _) = set_aside(&key, false)?;
            undo.push(Undo::Restore { backup, to: key });
        }
        (_, None) => return Err(io::Error::other("no staged file for a change that writes one")),
    }
    Ok(())
}

/// Keeps the file at `slot` under a temp name beside it: a hard link when `link` is set and the
/// file system allows it (the file stays in place), else a rename. Returns the backup and whether
/// it is a link.
fn set_aside(slot: &Slot, link: bool) -> io::Result<(Temp, bool)> {
    if link && let Ok(backup) = slot.link_aside("patch-old") {
        return Ok((Temp::new(backup), true));
    }
    Ok((Temp::new(slot.rename_aside("patch-old")?), false))
}

/// Undoes the steps in reverse; returns the files that could not be restored, with the reason.
fn roll_back(undo: Vec<Undo>) -> Vec<String> {
    let mut failed = Vec::new();
    for step in undo.into_iter().rev() {
        match step {
            Undo::Remove(slot) => {
                if let Err(e) = slot.remove() {
                    failed.push(format!("{} (remove the new file: {e})", slot.path.display()));
                }
            }
            Undo::Restore { backup, to } => match backup.slot.rename_over(&to) {
                Ok(()) => {
                    backup.keep();
                }
                Err(e) => {
                    let kept = backup.keep().path.display().to_string();
                    failed.push(format!("{} (its old content is kept at {kept}: {e})", to.path.display()));
                }
            },
        }
    }
    failed
}

/// Removes directories created for new files, deepest first, where they are empty.
fn remove_dirs(created: &[Slot]) {
    for dir in created.iter().rev() {
        let _ = dir.remove_dir();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::{parse_patch, plan_patch};
    use std::fs;

    const PATCH: &str = "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Delete File: b.txt\n\
                         *** Update File: c.txt\n*** Move to: d/c2.txt\n-c\n+C\n*** Add File: e.txt\n+e\n*** End Patch\n";

    fn workspace() -> (tempfile::TempDir, Sandbox) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n")] {
            fs::write(dir.path().join(name), text).unwrap();
        }
        let sandbox = Sandbox::new(dir.path()).unwrap();
        (dir, sandbox)
    }

    fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    if p.is_dir() { vec![] } else { fs::read(&p).unwrap() },
                )
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_failure_at_any_step_restores_every_file_and_leaves_no_temp_file_or_new_directory() {
        // Update: 1 step, Delete: 1, Move: 2, Add: 1.
        for failing in 0..5 {
            let (dir, sandbox) = workspace();
            let before = snapshot(dir.path());
            let plan = plan_patch(&parse_patch(PATCH).unwrap(), &SandboxFiles::new(&sandbox)).unwrap();

            let result = commit_with(&sandbox, &plan.changes, |step| {
                if step == failing { Err(io::Error::other("injected")) } else { Ok(()) }
            });

            assert!(
                matches!(result, Err(PatchError::WriteFailed { ref message, .. }) if message == "injected"),
                "{result:?}"
            );
            assert_eq!(snapshot(dir.path()), before, "failing at step {failing}");
        }
    }

    #[test]
    fn without_failure_every_change_is_written() {
        let (dir, sandbox) = workspace();
        let plan = plan_patch(&parse_patch(PATCH).unwrap(), &SandboxFiles::new(&sandbox)).unwrap();

        commit(&sandbox, &plan.changes).unwrap();

        assert_eq!(
            snapshot(dir.path()),
            [("a.txt".to_owned(), b"A\n".to_vec()), ("d".to_owned(), vec![]), ("e.txt".to_owned(), b"e\n".to_vec())]
        );
        assert_eq!(fs::read(dir.path().join("d/c2.txt")).unwrap(), b"C\n");
    }
}
