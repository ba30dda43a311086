//! The directory walk shared by `glob` and `grep` (ripgrep's `ignore` crate).

use std::fs::File;
use std::path::{Path, PathBuf};

use ignore::overrides::Override;
use ignore::{DirEntry, WalkBuilder};

use super::error::FsError;
use std::os::unix::fs::MetadataExt as _;

use crate::sandbox::{Kind, OpenError, Sandbox, kind_name};

/// Resolves the `path` argument of a search (default: the root) and checks, through the root
/// handle, that it is a directory or a regular file. Returns the real path and whether it is a
/// directory.
///
/// # Errors
/// The sandbox's (a FIFO, socket or device node is refused naming its kind),
/// [`FsError::PathNotFound`], [`FsError::Io`].
///
/// Unless `include_ignored`, the ignore files the walk will read in the base and its parents
/// (the `ignore` crate opens them by name and blocks on a FIFO) must be regular files:
/// [`FsError::SpecialIgnoreFile`] otherwise.
pub(crate) fn search_base(
    sandbox: &Sandbox,
    path: Option<&str>,
    include_ignored: bool,
) -> Result<(PathBuf, bool), FsError> {
    let (base, is_dir) = match path {
        None => (sandbox.root().to_path_buf(), true),
        Some(given) => {
            let target = sandbox.target(given)?;
            match sandbox.probe_target(&target) {
                Ok(kind) => (target.real, kind == Kind::Directory),
                Err(OpenError::Refused(refused)) => return Err(refused.into()),
                Err(OpenError::NotFound(_)) => return Err(FsError::PathNotFound { path: given.to_owned() }),
                Err(OpenError::Io(e)) => return Err(FsError::io(given, &e)),
            }
        }
    };
    if !include_ignored && let Some((file, kind)) = base.ancestors().find_map(special_ignore_file) {
        return Err(FsError::SpecialIgnoreFile { path: sandbox.display_path(&file), kind });
    }
    Ok((base, is_dir))
}

/// The files in a directory the `ignore` crate reads for ignore rules.
const IGNORE_FILES: [&str; 4] = [".gitignore", ".ignore", ".git", ".git/info/exclude"];

/// The first ignore file in `dir` that is neither a regular file nor a directory (followed, as
/// the `ignore` crate opens it), with its kind. A check by name: a FIFO swapped in after it can
/// still stall the walk on that directory (the crate has no way to open these files by handle).
fn special_ignore_file(dir: &Path) -> Option<(PathBuf, &'static str)> {
    IGNORE_FILES.iter().find_map(|name| {
        let path = dir.join(name);
        let metadata = std::fs::metadata(&path).ok()?;
        let file_type = rustix::fs::FileType::from_raw_mode(metadata.mode());
        (!metadata.is_file() && !metadata.is_dir()).then(|| (path, kind_name(file_type)))
    })
}

/// The files below `base` (or `base` itself when it is a file), in path order: directories are
/// walked depth first with entries sorted by name (byte-wise), so `a/b.txt` comes before `a.txt`.
/// Each comes with a handle on it, opened again through the sandbox's root handle (for reading
/// when `read`, else `O_PATH`): the walk goes by name, so a directory swapped for a symlink that
/// points out may lead it outside, and a file yielded so fails that open and is skipped.
///
/// `.gitignore`, `.ignore` and `.git/info/exclude` rules are respected (also outside a git
/// repository) unless `include_ignored`, hidden files are included, `.git` is skipped, symlinks are not followed (a
/// symlink to a file inside the sandbox is listed, one whose target is outside is skipped, a
/// symlink to a directory is not walked). Entries that cannot be read, and anything that is not a
/// regular file (a FIFO, socket, device node), are skipped, and so is a directory holding an
/// ignore file that is one of these (unless `include_ignored`: no ignore file is read then).
pub(crate) fn files<'s>(
    sandbox: &'s Sandbox,
    base: &Path,
    overrides: Option<Override>,
    include_ignored: bool,
    read: bool,
) -> impl Iterator<Item = (DirEntry, File)> + 's {
    let mut builder = WalkBuilder::new(base);
    builder
        .hidden(false)
        .ignore(!include_ignored)
        .git_ignore(!include_ignored)
        .git_global(!include_ignored)
        .git_exclude(!include_ignored)
        .parents(!include_ignored)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        // A directory holding an ignore file that is a FIFO, socket or device is not entered:
        // reading its rules would block or never end.
        .filter_entry(move |entry| {
            entry.file_name() != ".git"
                && (include_ignored
                    || !entry.file_type().is_some_and(|t| t.is_dir())
                    || special_ignore_file(entry.path()).is_none())
        });
    if let Some(overrides) = overrides {
        builder.overrides(overrides);
    }
    builder.build().filter_map(Result::ok).filter_map(move |entry| {
        let file = open_file(sandbox, &entry, read)?;
        Some((entry, file))
    })
}

/// The handle on a regular file the walk found (or on the file a symlink leads to, inside the
/// sandbox), opened through the root handle; `None` for anything else.
fn open_file(sandbox: &Sandbox, entry: &DirEntry, read: bool) -> Option<File> {
    match entry.file_type() {
        Some(t) if t.is_file() => sandbox.open_found(entry.path(), read),
        Some(t) if t.is_symlink() => {
            let real = std::fs::canonicalize(entry.path()).ok()?;
            sandbox.open_found(&real, read)
        }
        _ => None,
    }
}

/// `path` relative to `base` with `/` separators (`path`'s file name when `path` is `base`).
pub(crate) fn relative_slash_path(base: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(base).unwrap_or(path);
    if relative.as_os_str().is_empty() {
        return path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    }
    relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}
