//! The workspace sandbox: every path a tool touches is resolved and checked here.
//!
//! Rules (from `tools-spec.md`, "Sandbox"):
//!
//! 1. A relative path is joined to the root; an absolute path is taken as is.
//! 2. The result is normalised lexically: `.` and empty components vanish, `..` removes the
//!    previous component (never climbing above `/`).
//! 3. The deepest ancestor that exists is canonicalised (symlinks resolved) and the components
//!    that do not exist yet are appended to it. A dangling symlink on the way is followed by hand
//!    (at most 40 hops), so that a write through it is checked where it would land.
//! 4. The real path must lie below the root, compared component by component: a sibling
//!    `ws-evil` of the root `ws` is outside. A refused path is [`SandboxError::Escapes`]
//!    (`Path escapes workspace: <p>`).
//!
//! Together these refuse symlinks that point out, `..` that climbs out, and new files under a
//! linked directory that points out. A root of `/` allows every path; [`Sandbox::full_access`]
//! turns the check off (paths are still resolved the same way).

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use tool_runtime::{DependencyError, DependencyKey, ToolContext};

/// How many dangling symlinks [`Sandbox::resolve`] follows by hand before giving up (Linux's
/// `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: usize = 40;

/// The workspace the file tools may touch: a canonical root directory, and whether the
/// containment check is on.
///
/// Cheap to clone (the root is reference counted).
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let dir = std::env::temp_dir();
/// let sandbox = tool_std::sandbox::Sandbox::new(&dir)?;
/// assert!(sandbox.resolve("notes/today.md").is_ok());
/// assert_eq!(sandbox.resolve("/etc/passwd").unwrap_err().to_string(), "Path escapes workspace: /etc/passwd");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    root: Arc<Path>,
    full_access: bool,
}

/// Why [`Sandbox::resolve`] refused a path. The `Display` text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The path (after resolving `..` and symlinks) lies outside the root.
    #[error("Path escapes workspace: {path}")]
    Escapes {
        /// The path as the caller gave it.
        path: String,
    },
    /// The path is the empty string.
    #[error("Path is empty; give a path relative to the workspace root")]
    Empty,
    /// The path could not be resolved (a symlink loop, or more than 40 dangling symlinks).
    #[error("Cannot resolve path {path}: {reason}")]
    Unresolvable {
        /// The path as the caller gave it.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

impl Sandbox {
    /// A sandbox rooted at `root` (canonicalised now, so it must exist) with the containment
    /// check on.
    ///
    /// # Errors
    /// The error of [`std::fs::canonicalize`] when `root` does not exist or cannot be resolved.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Self { root: std::fs::canonicalize(root)?.into(), full_access: false })
    }

    /// A sandbox rooted at `root` (canonicalised now) with the containment check off: relative
    /// paths still resolve against the root, and any path is allowed.
    ///
    /// # Errors
    /// The error of [`std::fs::canonicalize`] when `root` does not exist or cannot be resolved.
    pub fn full_access(root: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Self { root: std::fs::canonicalize(root)?.into(), full_access: true })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `true` when the containment check is off.
    pub fn is_full_access(&self) -> bool {
        self.full_access
    }

    /// Resolves `path` (relative to the root, or absolute) to the real path a tool should open,
    /// by the rules in the [module docs](self). The path need not exist; the part that does
    /// exist is canonicalised, the rest is appended.
    ///
    /// # Errors
    /// [`SandboxError::Escapes`] when the real path is outside the root (never with full access),
    /// [`SandboxError::Empty`] for `""`, [`SandboxError::Unresolvable`] for symlink loops.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, SandboxError> {
        if path.is_empty() {
            return Err(SandboxError::Empty);
        }
        let joined = self.root.join(path);
        let real = real_path(&normalize(&joined))
            .map_err(|reason| SandboxError::Unresolvable { path: path.to_owned(), reason })?;
        if self.allows(&real) { Ok(real) } else { Err(SandboxError::Escapes { path: path.to_owned() }) }
    }

    /// `true` when a real (canonical) path may be used: it lies below the root (component-wise),
    /// or the sandbox has full access.
    pub fn allows(&self, real: &Path) -> bool {
        self.full_access || real.starts_with(&self.root)
    }

    /// How tools show a resolved path: relative to the root with `/` separators (`"."` for the
    /// root itself), or the absolute path when it lies outside the root (full access).
    pub fn display_path(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
            Ok(relative) => {
                relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
            }
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }
}

/// The workspace of the file tools. `create` uses the process's current directory with the
/// containment check on; applications set their own root with
/// `RegistryBuilder::override_dependency(&SANDBOX, Sandbox::new(root)?)`.
pub static SANDBOX: DependencyKey<Sandbox> = DependencyKey::per_call("sandbox", sandbox_from_current_dir);

fn sandbox_from_current_dir(_ctx: &ToolContext) -> Result<Sandbox, DependencyError> {
    std::env::current_dir()
        .and_then(Sandbox::new)
        .map_err(|e| DependencyError(format!("the current directory cannot be the workspace root: {e}")))
}

/// Lexical normalisation: drops `.` and empty components, lets `..` remove the previous normal
/// component (and stop at the root).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::Normal(_) => out.push(component),
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                }
            }
        }
    }
    out
}

/// Canonicalises the deepest existing ancestor of the (absolute, normalised) `path` and appends
/// the components that do not exist. Dangling symlinks are followed by hand.
fn real_path(path: &Path) -> Result<PathBuf, String> {
    let mut path = path.to_path_buf();
    for _ in 0..=MAX_SYMLINK_HOPS {
        // Components below `current` that do not exist yet, deepest first.
        let mut missing: Vec<OsString> = Vec::new();
        let mut current = path.as_path();
        let followed = loop {
            if let Ok(real) = std::fs::canonicalize(current) {
                let mut real = real;
                real.extend(missing.iter().rev());
                return Ok(real);
            }
            let is_link = std::fs::symlink_metadata(current).is_ok_and(|m| m.file_type().is_symlink());
            if is_link {
                // A dangling link (or a loop): continue from where it points.
                let target = std::fs::read_link(current).map_err(|e| e.to_string())?;
                let parent = current.parent().unwrap_or(Path::new("/"));
                let mut next = parent.join(target);
                next.extend(missing.iter().rev());
                break normalize(&next);
            }
            match (current.parent(), current.file_name()) {
                (Some(parent), Some(name)) => {
                    missing.push(name.to_owned());
                    current = parent;
                }
                // Nothing on the way exists (not even the root): keep the lexical path.
                _ => return Ok(path),
            }
        };
        path = followed;
    }
    Err(format!("more than {MAX_SYMLINK_HOPS} symbolic links to follow (a symlink loop?)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_drops_dots_and_resolves_parents_lexically() {
        assert_eq!(normalize(Path::new("/a/./b//c/../d")), PathBuf::from("/a/b/d"));
        assert_eq!(normalize(Path::new("/../../x")), PathBuf::from("/x"));
    }
}
