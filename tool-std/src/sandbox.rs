//! The workspace sandbox: every path a tool touches is resolved, checked and opened here.
//!
//! # Which path is allowed
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
//! linked directory that points out. A root of `/` allows every path.
//!
//! # How it is opened
//! A check by name is not enough: between the check and an open by name, a directory on the way
//! can be swapped for a symlink that points out. So the tools never open a workspace path by
//! name. The `Sandbox` holds a directory handle (an `O_PATH` file descriptor) on its root, made
//! by [`Sandbox::new`]; the checked real path is made relative to the root, and every open,
//! create, rename and `mkdir` is done relative to that handle (or to a handle on a directory
//! below it that was itself opened so). The real path has no symlink in it when it is checked,
//! so a symlink met while opening it was swapped in since.
//!
//! | attack | what stops it |
//! |---|---|
//! | a directory on the path swapped for a symlink that points out, between check and open | Linux 5.6+: `openat2` from the root handle with `RESOLVE_BENEATH \| RESOLVE_NO_MAGICLINKS` (the kernel refuses any step out of the root, `EXDEV`) and `O_NOFOLLOW` on the last component; older kernels: a walk from the root handle, one `openat(O_PATH \| O_DIRECTORY \| O_NOFOLLOW)` per component, so no symlink is followed at all. Either way the result is `Path escapes workspace: <p>` |
//! | a write landing outside through a swapped parent | the temporary file is created with `openat(O_CREAT \| O_EXCL \| O_NOFOLLOW)` in a handle on the parent directory opened as above, and renamed with `renameat` within that same handle; missing parents are made by `mkdirat` one component at a time, each opened again with `O_NOFOLLOW` |
//! | a FIFO, socket or device node (an open that blocks, a read that never ends) | the open is `O_NONBLOCK \| O_NOFOLLOW \| O_NOCTTY`; the type is checked by `fstat` on the handle, never on the name; anything but a regular file (or a directory where a tool walks one) is [`SandboxError::NotRegularFile`] (`<p> is a FIFO (named pipe), not a regular file; ...`), and a regular file then gets `O_NONBLOCK` cleared. An open the kernel refuses outright (a socket, `ENXIO`) is named by an `O_PATH` open and `fstat` |
//! | a file that claims one size and has another | reads are bounded by the tool's cap (at most cap + 1 bytes are read), never read to an end the file chooses |
//! | an ignore file (`.gitignore`, `.ignore`, `.git`, `.git/info/exclude`) that is a FIFO or device, which the `ignore` crate opens by name while walking | checked by `stat` before a directory is entered (the directory is skipped) and in the base and its parents before the walk (an error naming it, with `include_ignored` as the way out). A check by name: a FIFO swapped in after it can still stall that walk, since the crate cannot open these files by handle |
//! | `glob` and `grep` walking into a symlinked directory swapped in during the walk | the `ignore` crate walks by name, so each file it yields is opened again through the root handle as above (`grep` searches that handle; `glob` lists a file only once an `O_PATH` open of it beneath the root is a regular file); a file reached through a swapped directory fails that open and is skipped |
//!
//! Where `openat2` is missing (`ENOSYS`, or `EPERM` from a seccomp filter; probed once at
//! construction) the component walk is used; [`Sandbox::without_openat2`] forces it. The walk is
//! our own (a few lines over `rustix`) rather than `cap-std`: the path is already canonical when
//! it is opened, so the walk never has to follow a symlink, only refuse one, and the sandbox
//! keeps its rules above (absolute symlinks inside the root, writes through dangling links) that
//! `cap-std`'s own resolution would change.
//!
//! [`Sandbox::full_access`] turns the containment check off: a path inside the root is opened
//! through the root handle as above; a path outside it is opened through a handle on `/`, made
//! for the call, with the same flags (so special files are still refused without blocking), but
//! nothing confines it.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read as _};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use tool_runtime::{DependencyError, DependencyKey, ToolContext};

/// How many dangling symlinks [`Sandbox::resolve`] follows by hand before giving up (Linux's
/// `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: usize = 40;

/// How often an `openat2` that failed with `EAGAIN` (a rename raced the lookup) is tried again.
const OPENAT2_RETRIES: usize = 16;

/// The workspace the file tools may touch: a canonical root directory, an open handle on it, and
/// whether the containment check is on.
///
/// Cheap to clone (the root and its handle are reference counted). Two sandboxes are equal when
/// their roots and modes are.
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
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: Arc<Path>,
    full_access: bool,
    /// An `O_PATH` handle on `root`, opened at construction.
    handle: Arc<OwnedFd>,
    /// Whether opens use `openat2` (else the component walk).
    openat2: bool,
}

impl PartialEq for Sandbox {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root && self.full_access == other.full_access
    }
}

impl Eq for Sandbox {}

/// Why [`Sandbox::resolve`] or an open through the sandbox refused a path. The `Display` text is
/// what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The path (after resolving `..` and symlinks) lies outside the root, or a symlink that
    /// points out was swapped in on it while it was opened.
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
    /// The path is a FIFO, a socket or a device node: the file tools open regular files only
    /// (an open of a FIFO blocks, a device may never end).
    #[error(
        "{path} is {kind}, not a regular file; the file tools open regular files only, so give the path of a \
         regular file"
    )]
    NotRegularFile {
        /// The path as the caller gave it (as shown, for a file found while walking).
        path: String,
        /// `a FIFO (named pipe)`, `a socket`, `a character device`, `a block device`,
        /// `a symbolic link` or `a file of unknown type`.
        kind: &'static str,
    },
}

/// Why an open through the sandbox failed.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// The sandbox refused the path, or it is not a regular file or directory.
    Refused(SandboxError),
    /// Nothing is at the path (`ENOENT`).
    NotFound(io::Error),
    /// Any other failure (`ENOTDIR` when a parent is a file).
    Io(io::Error),
}

impl From<SandboxError> for OpenError {
    fn from(error: SandboxError) -> Self {
        Self::Refused(error)
    }
}

/// What an open through the sandbox found.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum Kind {
    /// A regular file, open for reading (blocking reads).
    File,
    /// A directory (the handle is open read-only).
    Directory,
}

/// A checked path: its real (canonical) form, and that form relative to the directory its
/// handle is on (the root, or `/` for a full-access path outside the root).
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The path as the caller gave it (or as shown), for errors.
    pub(crate) given: String,
    /// The real path.
    pub(crate) real: PathBuf,
    /// `real` relative to the base directory: only normal components.
    rel: PathBuf,
    /// `true` when the base is the root handle, `false` for `/`.
    inside: bool,
}

/// A name in an open directory: where a file is created, replaced or removed.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    /// The directory.
    pub(crate) dir: Arc<OwnedFd>,
    /// One path component.
    pub(crate) name: OsString,
    /// The real path of the name, for messages.
    pub(crate) path: PathBuf,
}

impl Sandbox {
    /// A sandbox rooted at `root` (canonicalised now, so it must exist, and opened as a
    /// directory handle) with the containment check on.
    ///
    /// # Errors
    /// The error of [`std::fs::canonicalize`] when `root` does not exist or cannot be resolved,
    /// or of the open when it is not a directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        Self::build(root.as_ref(), false)
    }

    /// A sandbox rooted at `root` (canonicalised and opened now) with the containment check off:
    /// relative paths still resolve against the root, and any path is allowed; paths outside the
    /// root are opened through a handle on `/` (see the [module docs](self)).
    ///
    /// # Errors
    /// As [`Sandbox::new`].
    pub fn full_access(root: impl AsRef<Path>) -> io::Result<Self> {
        Self::build(root.as_ref(), true)
    }

    fn build(root: &Path, full_access: bool) -> io::Result<Self> {
        let root = std::fs::canonicalize(root)?;
        let handle = rustix::fs::open(&root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        let probe = rustix::fs::openat2(
            &handle,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        );
        let openat2 = !matches!(probe, Err(Errno::NOSYS | Errno::PERM));
        Ok(Self { root: root.into(), full_access, handle: Arc::new(handle), openat2 })
    }

    /// This sandbox opening paths by the component walk (one `openat` with `O_NOFOLLOW` per
    /// component) even where the kernel has `openat2`: for kernels whose `openat2` misbehaves
    /// in a way the probe at construction does not see, and to test the walk.
    #[must_use]
    pub fn without_openat2(mut self) -> Self {
        self.openat2 = false;
        self
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `true` when the containment check is off.
    pub fn is_full_access(&self) -> bool {
        self.full_access
    }

    /// `true` when opens use `openat2` with `RESOLVE_BENEATH`, `false` when they use the
    /// component walk (the kernel has no `openat2`, or [`Sandbox::without_openat2`]).
    pub fn uses_openat2(&self) -> bool {
        self.openat2
    }

    /// Resolves `path` (relative to the root, or absolute) to the real path a tool should open,
    /// by the rules in the [module docs](self). The path need not exist; the part that does
    /// exist is canonicalised, the rest is appended.
    ///
    /// The tools do not open the result by name (a directory on it may be swapped for a
    /// symlink meanwhile): they open it relative to the sandbox's root handle.
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

    /// Opens the regular file at `path` (checked as by [`Sandbox::resolve`]) for reading, through
    /// the root handle as the file tools do (see the [module docs](self)).
    ///
    /// # Errors
    /// `NotFound` when nothing is there; `PermissionDenied` with the [`SandboxError`] text when
    /// the path escapes or is a FIFO, socket or device node; `IsADirectory` for a directory; the
    /// operating system's error otherwise.
    pub fn open_read(&self, path: &str) -> io::Result<File> {
        match self.open(path) {
            Ok((file, Kind::File)) => Ok(file),
            Ok((_, Kind::Directory)) => {
                Err(io::Error::new(io::ErrorKind::IsADirectory, format!("{path} is a directory")))
            }
            Err(OpenError::Refused(refused)) => {
                Err(io::Error::new(io::ErrorKind::PermissionDenied, refused.to_string()))
            }
            Err(OpenError::NotFound(e) | OpenError::Io(e)) => Err(e),
        }
    }

    /// Replaces (or creates) the file at `path` with `bytes` atomically, through handles as the
    /// file tools do: missing parents made by `mkdirat`, a temporary file created beside it with
    /// `O_CREAT | O_EXCL | O_NOFOLLOW`, flushed to disk, given the old file's permissions and
    /// renamed over it with `renameat`. Nothing is written when it fails.
    ///
    /// # Errors
    /// `PermissionDenied` with the [`SandboxError`] text when the path escapes (also when a
    /// symlink that points out is swapped in on the way); the operating system's error otherwise.
    pub fn replace_file(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        let refused = |e: SandboxError| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string());
        let target = self.target(path).map_err(refused)?;
        let slot = self.slot(&target, Some(&mut Vec::new())).map_err(|e| match e {
            OpenError::Refused(e) => refused(e),
            OpenError::NotFound(e) | OpenError::Io(e) => e,
        })?;
        let mode = match slot.mode() {
            Ok(mode) => Some(mode),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        slot.replace(bytes, mode)
    }

    /// Resolves and checks `path` ([`Sandbox::resolve`]) for opening through a handle.
    pub(crate) fn target(&self, path: &str) -> Result<Target, SandboxError> {
        let real = self.resolve(path)?;
        self.target_of_real(path, real)
    }

    /// A real (canonical) path as a [`Target`], `given` naming it in errors.
    ///
    /// # Errors
    /// [`SandboxError::Escapes`] when it is not allowed.
    pub(crate) fn target_of_real(&self, given: &str, real: PathBuf) -> Result<Target, SandboxError> {
        let escapes = || SandboxError::Escapes { path: given.to_owned() };
        if !self.allows(&real) {
            return Err(escapes());
        }
        let (rel, inside) = match real.strip_prefix(&self.root) {
            Ok(rel) => (rel.to_path_buf(), true),
            Err(_) => (real.strip_prefix("/").map_err(|_| escapes())?.to_path_buf(), false),
        };
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(escapes());
        }
        Ok(Target { given: given.to_owned(), real, rel, inside })
    }

    /// The handle the target's relative path starts from.
    fn base(&self, target: &Target) -> io::Result<Arc<OwnedFd>> {
        if target.inside {
            Ok(self.handle.clone())
        } else {
            let slash = rustix::fs::open("/", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
            Ok(Arc::new(slash))
        }
    }

    /// Opens `path` (checked as by [`Sandbox::resolve`]) for reading through the root handle: a
    /// regular file or a directory. See [`Sandbox::open_target`].
    pub(crate) fn open(&self, path: &str) -> Result<(File, Kind), OpenError> {
        self.open_target(&self.target(path)?)
    }

    /// Opens a checked target for reading: `O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY`
    /// beneath its base handle, the type checked by `fstat` on the handle, `O_NONBLOCK` cleared
    /// for a regular file.
    ///
    /// # Errors
    /// [`OpenError::Refused`] with [`SandboxError::NotRegularFile`] for a FIFO, socket or device
    /// node, with [`SandboxError::Escapes`] when a symlink that points out was swapped in;
    /// [`OpenError::NotFound`]; [`OpenError::Io`].
    pub(crate) fn open_target(&self, target: &Target) -> Result<(File, Kind), OpenError> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY;
        let fd = self.open_fd(target, flags)?;
        let kind = kind_of(&fd, &target.given)?;
        if kind == Kind::File {
            let flags = rustix::fs::fcntl_getfl(&fd).map_err(|e| OpenError::Io(e.into()))?;
            rustix::fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK).map_err(|e| OpenError::Io(e.into()))?;
        }
        Ok((File::from(fd), kind))
    }

    /// An `O_PATH` handle on a checked target (no open of the file itself: nothing blocks, no
    /// device is woken), with its kind.
    ///
    /// # Errors
    /// As [`Sandbox::open_target`].
    pub(crate) fn probe_target(&self, target: &Target) -> Result<Kind, OpenError> {
        let fd = self.open_fd(target, OFlags::PATH | OFlags::NOFOLLOW)?;
        kind_of(&fd, &target.given)
    }

    /// Opens the target beneath its base with `flags`, the failures told as the tools need them.
    fn open_fd(&self, target: &Target, flags: OFlags) -> Result<OwnedFd, OpenError> {
        let base = self.base(target).map_err(OpenError::Io)?;
        match self.open_beneath(base.as_fd(), &target.rel, flags, Mode::empty()) {
            Ok(fd) => Ok(fd),
            Err(errno) => Err(self.failure(base.as_fd(), target, errno)),
        }
    }

    /// Why an open of `target` failed with `errno`, told as the tools need it.
    fn failure(&self, base: BorrowedFd<'_>, target: &Target, errno: Errno) -> OpenError {
        match errno {
            Errno::NOENT => OpenError::NotFound(errno.into()),
            Errno::XDEV | Errno::LOOP => OpenError::Refused(SandboxError::Escapes { path: target.given.clone() }),
            Errno::NOTDIR | Errno::ISDIR | Errno::NOMEM | Errno::MFILE | Errno::NFILE => OpenError::Io(errno.into()),
            // A socket (`ENXIO`), a device on a `nodev` mount (`EACCES`) and the like: say what
            // it is when it is no regular file.
            _ => match self.open_beneath(base, &target.rel, OFlags::PATH | OFlags::NOFOLLOW, Mode::empty()) {
                Ok(fd) => match kind_of(&fd, &target.given) {
                    Err(refused) => refused,
                    Ok(_) => OpenError::Io(errno.into()),
                },
                Err(_) => OpenError::Io(errno.into()),
            },
        }
    }

    /// `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` of `rel` from `base`, or the component
    /// walk. `flags` should hold `O_NOFOLLOW` (the last component is never followed); `rel` holds
    /// only normal components (empty for `base` itself).
    fn open_beneath(&self, base: BorrowedFd<'_>, rel: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        let flags = flags | OFlags::CLOEXEC;
        if rel.as_os_str().is_empty() {
            return rustix::fs::openat(base, ".", flags, mode);
        }
        if self.openat2 {
            for _ in 0..OPENAT2_RETRIES {
                match rustix::fs::openat2(base, rel, flags, mode, ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS) {
                    Err(Errno::AGAIN | Errno::INTR) => {}
                    result => return result,
                }
            }
            return Err(Errno::AGAIN);
        }
        let mut names = Vec::new();
        for component in rel.components() {
            match component {
                Component::Normal(name) => names.push(name),
                _ => return Err(Errno::XDEV),
            }
        }
        let (last, dirs) = names.split_last().ok_or(Errno::INVAL)?;
        let mut current: Option<OwnedFd> = None;
        for name in dirs {
            let at = current.as_ref().map_or(base, AsFd::as_fd);
            let next = walk_step(at, name)?;
            current = Some(next);
        }
        rustix::fs::openat(current.as_ref().map_or(base, AsFd::as_fd), *last, flags, mode)
    }

    /// The directory handle and name where the file of `target` is created or replaced. Missing
    /// parent directories are made (`mkdirat`, one component at a time, each opened again with
    /// `O_NOFOLLOW`) when `created` is given, and pushed onto it, outermost first.
    ///
    /// # Errors
    /// As [`Sandbox::open_target`]; [`OpenError::NotFound`] when a parent is missing and
    /// `created` is `None`.
    pub(crate) fn slot(&self, target: &Target, created: Option<&mut Vec<Slot>>) -> Result<Slot, OpenError> {
        let name =
            target.rel.file_name().ok_or_else(|| OpenError::Io(io::Error::other("the path has no file name")))?;
        let parent = target.rel.parent().unwrap_or(Path::new(""));
        let base = self.base(target).map_err(OpenError::Io)?;
        let mut scratch = Vec::new();
        let (create, created) = match created {
            Some(created) => (true, created),
            None => (false, &mut scratch),
        };
        let real_parent = target.real.parent().unwrap_or(Path::new("/"));
        let dir = self
            .open_dir(base.as_fd(), parent, real_parent, create, created)
            .map_err(|errno| self.failure(base.as_fd(), target, errno))?;
        Ok(Slot { dir: Arc::new(dir), name: name.to_owned(), path: target.real.clone() })
    }

    /// An `O_PATH` handle on the directory `rel` below `base` (whose real path is `real`),
    /// creating it and its missing parents when `create`.
    fn open_dir(
        &self,
        base: BorrowedFd<'_>,
        rel: &Path,
        real: &Path,
        create: bool,
        created: &mut Vec<Slot>,
    ) -> Result<OwnedFd, Errno> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW;
        match self.open_beneath(base, rel, flags, Mode::empty()) {
            Err(Errno::NOENT) if create => {}
            result => return result,
        }
        let Some(name) = rel.file_name() else { return Err(Errno::NOENT) };
        let parent_real = real.parent().unwrap_or(Path::new("/"));
        let parent = self.open_dir(base, rel.parent().unwrap_or(Path::new("")), parent_real, create, created)?;
        let made = match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(0o777)) {
            Ok(()) => true,
            Err(Errno::EXIST) => false,
            Err(errno) => return Err(errno),
        };
        let dir = walk_step(parent.as_fd(), name)?;
        if made {
            created.push(Slot { dir: Arc::new(parent), name: name.to_owned(), path: real.to_path_buf() });
        }
        Ok(dir)
    }

    /// The handle on a real path found by walking (`glob`, `grep`, the patch's reads): opened for
    /// reading when `read`, else `O_PATH`; `None` when it is not a regular file beneath the root
    /// now (a symlink swapped in, gone, a FIFO...).
    pub(crate) fn open_found(&self, real: &Path, read: bool) -> Option<File> {
        let target = self.target_of_real(&self.display_path(real), real.to_path_buf()).ok()?;
        if read {
            match self.open_target(&target) {
                Ok((file, Kind::File)) => Some(file),
                _ => None,
            }
        } else {
            let fd = self.open_fd(&target, OFlags::PATH | OFlags::NOFOLLOW).ok()?;
            matches!(kind_of(&fd, &target.given), Ok(Kind::File)).then(|| File::from(fd))
        }
    }
}

/// One step of the component walk: the directory `name` in `at`, never through a symlink (one
/// found there is told as `EXDEV`: it was swapped in after the check).
fn walk_step(at: BorrowedFd<'_>, name: &OsStr) -> Result<OwnedFd, Errno> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(at, name, flags, Mode::empty()) {
        Err(errno @ (Errno::NOTDIR | Errno::LOOP)) => {
            let is_link = rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink);
            Err(if is_link { Errno::XDEV } else { errno })
        }
        result => result,
    }
}

/// The kind of an open handle by `fstat`: a regular file or a directory, else refused naming it.
fn kind_of(fd: &OwnedFd, given: &str) -> Result<Kind, OpenError> {
    let stat = rustix::fs::fstat(fd).map_err(|e| OpenError::Io(e.into()))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Ok(Kind::File),
        FileType::Directory => Ok(Kind::Directory),
        other => {
            Err(OpenError::Refused(SandboxError::NotRegularFile { path: given.to_owned(), kind: kind_name(other) }))
        }
    }
}

/// How errors name a file type that is not a regular file: `a FIFO (named pipe)`, `a socket`,
/// `a character device`, `a block device`, `a symbolic link`, `a directory`,
/// `a file of unknown type`.
pub(crate) fn kind_name(file_type: FileType) -> &'static str {
    match file_type {
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Symlink => "a symbolic link",
        FileType::Directory => "a directory",
        FileType::RegularFile => "a regular file",
        FileType::Unknown => "a file of unknown type",
    }
}

/// Reads `file` to its end, but at most `cap` bytes: `None` when it holds more (at most
/// `cap + 1` bytes are read, whatever its size claims).
pub(crate) fn read_capped(file: &File, cap: u64) -> io::Result<Option<Vec<u8>>> {
    let hint = file.metadata().map_or(0, |m| m.len()).min(cap);
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= cap).then_some(bytes))
}

/// A random name `.<name>.<16 hex digits>.<suffix>` for a file beside `name`.
fn random_name(name: &OsStr, suffix: &str) -> OsString {
    let mut random = [0_u8; 8];
    if rustix::rand::getrandom(&mut random, rustix::rand::GetRandomFlags::empty()).is_err() {
        // No entropy source: the time and a counter, still unique since every create below is
        // O_EXCL and retried.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let count = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        random = (u64::from(nanos) ^ count.rotate_left(32)).to_le_bytes();
    }
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let mut out = OsString::from(".");
    out.push(name);
    out.push(format!(".{hex}.{suffix}"));
    out
}

/// How many random names are tried before giving up.
const NAME_TRIES: usize = 16;

impl Slot {
    /// The slot's name with the directory: `<dir>/<other>`.
    fn sibling(&self, name: OsString) -> Slot {
        let path = self.path.parent().unwrap_or(Path::new("/")).join(&name);
        Slot { dir: self.dir.clone(), name, path }
    }

    /// Creates a new file under a random name beside this one
    /// (`openat(O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW)`, mode 0o666 less the umask).
    pub(crate) fn create_temp(&self, suffix: &str) -> io::Result<(Slot, File)> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        for _ in 0..NAME_TRIES {
            let name = random_name(&self.name, suffix);
            match rustix::fs::openat(&*self.dir, &name, flags, Mode::from_raw_mode(0o666)) {
                Ok(fd) => return Ok((self.sibling(name), File::from(fd))),
                Err(Errno::EXIST) => {}
                Err(errno) => return Err(errno.into()),
            }
        }
        Err(io::Error::from(io::ErrorKind::AlreadyExists))
    }

    /// Makes a hard link to this file under a random name beside it (`linkat`).
    pub(crate) fn link_aside(&self, suffix: &str) -> io::Result<Slot> {
        self.aside(suffix, |from, to| rustix::fs::linkat(&*from.dir, &from.name, &*to.dir, &to.name, AtFlags::empty()))
    }

    /// Renames this file to a random name beside it, never over another file.
    pub(crate) fn rename_aside(&self, suffix: &str) -> io::Result<Slot> {
        self.aside(suffix, |from, to| {
            from.rename_noclobber(to).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))
        })
    }

    fn aside(&self, suffix: &str, step: impl Fn(&Slot, &Slot) -> Result<(), Errno>) -> io::Result<Slot> {
        for _ in 0..NAME_TRIES {
            let to = self.sibling(random_name(&self.name, suffix));
            match step(self, &to) {
                Ok(()) => return Ok(to),
                Err(Errno::EXIST) => {}
                Err(errno) => return Err(errno.into()),
            }
        }
        Err(io::Error::from(io::ErrorKind::AlreadyExists))
    }

    /// Renames this file over `to` (`renameat`; a symlink at `to` is replaced, never followed).
    pub(crate) fn rename_over(&self, to: &Slot) -> io::Result<()> {
        Ok(rustix::fs::renameat(&*self.dir, &self.name, &*to.dir, &to.name)?)
    }

    /// Renames this file to `to`, failing with `AlreadyExists` when something is there
    /// (`renameat2(RENAME_NOREPLACE)`, or a hard link and an unlink where the file system has
    /// no such rename).
    pub(crate) fn rename_noclobber(&self, to: &Slot) -> io::Result<()> {
        match rustix::fs::renameat_with(&*self.dir, &self.name, &*to.dir, &to.name, rustix::fs::RenameFlags::NOREPLACE)
        {
            Err(Errno::INVAL | Errno::NOSYS) => {
                rustix::fs::linkat(&*self.dir, &self.name, &*to.dir, &to.name, AtFlags::empty())?;
                self.remove()
            }
            result => Ok(result?),
        }
    }

    /// Removes the file (`unlinkat`).
    pub(crate) fn remove(&self) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&*self.dir, &self.name, AtFlags::empty())?)
    }

    /// Removes the directory when it is empty (`unlinkat(AT_REMOVEDIR)`).
    pub(crate) fn remove_dir(&self) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&*self.dir, &self.name, AtFlags::REMOVEDIR)?)
    }

    /// The permission bits of the file at this slot (`fstatat`, not following a symlink).
    pub(crate) fn mode(&self) -> io::Result<u32> {
        Ok(rustix::fs::statat(&*self.dir, &self.name, AtFlags::SYMLINK_NOFOLLOW)?.st_mode & 0o7777)
    }

    /// Replaces the file at this slot with `bytes` atomically: a temporary file beside it
    /// (flushed to disk, given `mode` when set) renamed over it. On any error the old file is
    /// untouched and the temporary file removed.
    pub(crate) fn replace(&self, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
        use std::io::Write as _;
        let (temp, mut file) = self.create_temp("tmp")?;
        let written = (|| {
            file.write_all(bytes)?;
            if let Some(mode) = mode {
                rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
            }
            file.sync_all()?;
            temp.rename_over(self)
        })();
        if written.is_err() {
            let _ = temp.remove();
        }
        written
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
