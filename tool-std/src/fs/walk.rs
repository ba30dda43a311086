//! The directory walk shared by `glob` and `grep` (ripgrep's `ignore` crate).

use std::path::{Path, PathBuf};

use ignore::overrides::Override;
use ignore::{DirEntry, WalkBuilder};

use super::error::FsError;
use crate::sandbox::Sandbox;

/// Resolves the `path` argument of a search (default: the root) and checks that it exists.
/// Returns the real path and whether it is a directory.
pub(crate) fn search_base(sandbox: &Sandbox, path: Option<&str>) -> Result<(PathBuf, bool), FsError> {
    let Some(given) = path else {
        return Ok((sandbox.root().to_path_buf(), true));
    };
    let real = sandbox.resolve(given)?;
    match std::fs::metadata(&real) {
        Ok(metadata) => Ok((real, metadata.is_dir())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(FsError::PathNotFound { path: given.to_owned() }),
        Err(e) => Err(FsError::io(given, &e)),
    }
}

/// The files below `base` (or `base` itself when it is a file), in path order: directories are
/// walked depth first with entries sorted by name (byte-wise), so `a/b.txt` comes before `a.txt`.
///
/// `.gitignore`, `.ignore` and `.git/info/exclude` rules are respected (also outside a git
/// repository) unless `include_ignored`, hidden files are included, `.git` is skipped, symlinks are not followed (a
/// symlink to a file inside the sandbox is listed, one whose target is outside is skipped, a
/// symlink to a directory is not walked). Entries that cannot be read are skipped.
pub(crate) fn files<'s>(
    sandbox: &'s Sandbox,
    base: &Path,
    overrides: Option<Override>,
    include_ignored: bool,
) -> impl Iterator<Item = DirEntry> + 's {
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
        .filter_entry(|entry| entry.file_name() != ".git");
    if let Some(overrides) = overrides {
        builder.overrides(overrides);
    }
    builder.build().filter_map(Result::ok).filter(|entry| is_file(sandbox, entry))
}

fn is_file(sandbox: &Sandbox, entry: &DirEntry) -> bool {
    match entry.file_type() {
        Some(t) if t.is_file() => true,
        Some(t) if t.is_symlink() => {
            std::fs::canonicalize(entry.path()).is_ok_and(|real| real.is_file() && sandbox.allows(&real))
        }
        _ => false,
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
