//! The patch on the real file system: the sandbox as a [`FileSet`], and an all-or-nothing commit
//! (stage every new file, rename into place, undo on failure).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tempfile::{Builder, NamedTempFile, TempPath};

use super::plan::{Entry, FileAction, FileChange, FileSet, PatchError};
use crate::sandbox::Sandbox;

/// The files below a [`Sandbox`]: keys are the resolved real paths
/// ([`Sandbox::resolve`]), so two spellings of one file are one key.
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
        match fs::metadata(key) {
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => Ok(Entry::Missing),
            Err(e) => Err(format!("cannot read {}: {e}", self.sandbox.display_path(key))),
            Ok(m) if m.is_dir() => Ok(Entry::Directory),
            Ok(m) if !m.is_file() => Err(format!("{} is not a regular file", self.sandbox.display_path(key))),
            Ok(_) => fs::read(key)
                .map(Entry::File)
                .map_err(|e| format!("cannot read {}: {e}", self.sandbox.display_path(key))),
        }
    }

    fn check_creatable(&self, key: &PathBuf) -> Result<(), String> {
        for ancestor in key.ancestors().skip(1) {
            match fs::metadata(ancestor) {
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
        match fs::symlink_metadata(&link) {
            Ok(m) if m.file_type().is_symlink() => Err(format!(
                "{path} is a symbolic link; apply_patch does not delete or move links (it would act on the file \
                 they point to)"
            )),
            _ => Ok(()),
        }
    }
}

/// What to do to undo one step of a commit, newest last.
enum Undo {
    /// A file was created at this path: remove it.
    Remove(PathBuf),
    /// The file at `to` was set aside at `backup` (a rename or a hard link): put it back.
    Restore { backup: TempPath, to: PathBuf },
}

/// Writes the changes of a plan: every new file is first written to a temp file beside its
/// target (Add: mode 0o666 less the umask; Update and Move: the mode of the old file), then the
/// changes are done in patch order by renames, each old file kept aside (hard link, or rename
/// where links are not supported) until the end. On any failure the steps done are undone in
/// reverse, temp files are removed, and so are directories created for new files.
pub(crate) fn commit(changes: &[FileChange<PathBuf>]) -> Result<(), PatchError> {
    commit_with(changes, |_| Ok(()))
}

/// [`commit`], calling `before_step(k)` before the `k`-th rename (0-based); an error from it
/// fails the commit there (for tests of the undo path).
pub(crate) fn commit_with(
    changes: &[FileChange<PathBuf>],
    mut before_step: impl FnMut(usize) -> io::Result<()>,
) -> Result<(), PatchError> {
    let mut created_dirs: Vec<PathBuf> = Vec::new();
    let mut staged: Vec<Option<NamedTempFile>> = Vec::with_capacity(changes.len());
    for change in changes {
        match stage(change, &mut created_dirs) {
            Ok(file) => staged.push(file),
            Err(e) => {
                drop(staged);
                remove_dirs(&created_dirs);
                return Err(PatchError::WriteFailed { path: written_path(change).to_owned(), message: e.to_string() });
            }
        }
    }
    let mut undo: Vec<Undo> = Vec::new();
    let mut step = 0;
    let mut staged = staged.into_iter();
    for change in changes {
        let file = staged.next().flatten();
        if let Err(e) = apply_change(change, file, &mut undo, &mut step, &mut before_step) {
            // The temp files not used yet go before the directories they are in.
            drop(staged);
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

fn target(change: &FileChange<PathBuf>) -> &Path {
    change.move_key.as_deref().unwrap_or(&change.key)
}

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("/"))
}

fn name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Writes a change's new bytes to a temp file beside its target, with its mode.
fn stage(change: &FileChange<PathBuf>, created_dirs: &mut Vec<PathBuf>) -> io::Result<Option<NamedTempFile>> {
    let Some(new) = &change.new else { return Ok(None) };
    let target = target(change);
    let dir = parent(target);
    let mut missing: Vec<PathBuf> = dir.ancestors().take_while(|d| !d.exists()).map(Path::to_path_buf).collect();
    if !missing.is_empty() {
        fs::create_dir_all(dir)?;
        missing.reverse();
        created_dirs.extend(missing);
    }
    let prefix = format!(".{}.", name(target));
    let mut builder = Builder::new();
    builder.prefix(&prefix).suffix(".patch-tmp");
    #[cfg(unix)]
    let default_mode = {
        use std::os::unix::fs::PermissionsExt;
        fs::Permissions::from_mode(0o666)
    };
    #[cfg(unix)]
    builder.permissions(default_mode);
    let mut file = builder.tempfile_in(dir)?;
    file.write_all(new)?;
    file.flush()?;
    if change.action != FileAction::Add {
        let mode = fs::metadata(&change.key)?.permissions();
        fs::set_permissions(file.path(), mode)?;
    }
    Ok(Some(file))
}

fn apply_change(
    change: &FileChange<PathBuf>,
    staged: Option<NamedTempFile>,
    undo: &mut Vec<Undo>,
    step: &mut usize,
    before_step: &mut impl FnMut(usize) -> io::Result<()>,
) -> io::Result<()> {
    let mut next_step = || {
        let k = *step;
        *step += 1;
        before_step(k)
    };
    let key = &change.key;
    match (change.action, staged) {
        (FileAction::Add, Some(file)) => {
            next_step()?;
            file.persist_noclobber(key).map_err(|e| e.error)?;
            undo.push(Undo::Remove(key.clone()));
        }
        (FileAction::Update, Some(file)) => {
            next_step()?;
            let (backup, linked) = set_aside(key, true)?;
            if linked {
                undo.push(Undo::Restore { backup, to: key.clone() });
                file.persist(key).map_err(|e| e.error)?;
            } else {
                // The old file was renamed away: put the new one in its place without clobbering.
                undo.push(Undo::Restore { backup, to: key.clone() });
                file.persist_noclobber(key).map_err(|e| e.error)?;
            }
        }
        (FileAction::Move, Some(file)) => {
            let to = target(change).to_path_buf();
            next_step()?;
            file.persist_noclobber(&to).map_err(|e| e.error)?;
            undo.push(Undo::Remove(to));
            next_step()?;
            let (backup, _) = set_aside(key, false)?;
            undo.push(Undo::Restore { backup, to: key.clone() });
        }
        (FileAction::Delete, _) => {
            next_step()?;
            let (backup, _) = set_aside(key, false)?;
            undo.push(Undo::Restore { backup, to: key.clone() });
        }
        (_, None) => return Err(io::Error::other("no staged file for a change that writes one")),
    }
    Ok(())
}

/// Keeps the file at `path` under a temp name beside it: a hard link when `link` is set and the
/// file system allows it (the file stays in place), else a rename. Returns the backup and whether
/// it is a link.
fn set_aside(path: &Path, link: bool) -> io::Result<(TempPath, bool)> {
    let prefix = format!(".{}.", name(path));
    let mut builder = Builder::new();
    builder.prefix(&prefix).suffix(".patch-old");
    if link && let Ok(backup) = builder.make_in(parent(path), |candidate| fs::hard_link(path, candidate)) {
        return Ok((backup.into_temp_path(), true));
    }
    let backup = builder.make_in(parent(path), |candidate| {
        if fs::symlink_metadata(candidate).is_ok() {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        fs::rename(path, candidate)
    })?;
    Ok((backup.into_temp_path(), false))
}

/// Undoes the steps in reverse; returns the files that could not be restored, with the reason.
fn roll_back(undo: Vec<Undo>) -> Vec<String> {
    let mut failed = Vec::new();
    for step in undo.into_iter().rev() {
        match step {
            Undo::Remove(path) => {
                if let Err(e) = fs::remove_file(&path) {
                    failed.push(format!("{} (remove the new file: {e})", path.display()));
                }
            }
            Undo::Restore { backup, to } => match fs::rename(&backup, &to) {
                Ok(()) => {
                    let _ = backup.keep();
                }
                Err(e) => {
                    let kept = backup.keep().map(|p| p.display().to_string()).unwrap_or_default();
                    failed.push(format!("{} (its old content is kept at {kept}: {e})", to.display()));
                }
            },
        }
    }
    failed
}

/// Removes directories created for new files, deepest first, where they are empty.
fn remove_dirs(created: &[PathBuf]) {
    for dir in created.iter().rev() {
        let _ = fs::remove_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::{parse_patch, plan_patch};

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

            let result =
                commit_with(
                    &plan.changes,
                    |step| {
                        if step == failing { Err(io::Error::other("injected")) } else { Ok(()) }
                    },
                );

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

        commit(&plan.changes).unwrap();

        assert_eq!(
            snapshot(dir.path()),
            [("a.txt".to_owned(), b"A\n".to_vec()), ("d".to_owned(), vec![]), ("e.txt".to_owned(), b"e\n".to_vec())]
        );
        assert_eq!(fs::read(dir.path().join("d/c2.txt")).unwrap(), b"C\n");
    }
}
