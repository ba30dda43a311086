//! Who a command runs as: [`ExecUser`] resolved against the server's own user and the
//! workspace root.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::ExecUser;
use super::confine::CommandUser;

/// The user commands run as, when not the server's (`None`: the server's own, root included).
/// Blocking (it reads the workspace root's owner and mode).
///
/// # Errors
/// The refusal the model reads: a user given while the server is not root (only root switches
/// users), or a workspace root not writable by the user given, each saying what to change.
pub(crate) fn resolve(user: ExecUser, root: &Path) -> Result<Option<CommandUser>, String> {
    let server = rustix::process::geteuid();
    if !server.is_root() {
        return match user {
            ExecUser::Id { uid, .. } if uid != server.as_raw() => Err(format!(
                "refused to run the command as uid {uid}: the server runs as uid {} and only root can switch users; run \
                 the server as root or leave the exec user at its default (toolbox `--exec-user owner`)",
                server.as_raw()
            )),
            _ => Ok(None),
        };
    }
    let meta =
        std::fs::metadata(root).map_err(|e| format!("cannot read the workspace root {}: {e}", root.display()))?;
    match user {
        ExecUser::Server | ExecUser::Id { uid: 0, .. } => Ok(None),
        ExecUser::WorkspaceOwner if meta.uid() == 0 => Ok(None),
        ExecUser::WorkspaceOwner => Ok(Some(CommandUser { uid: meta.uid(), gid: meta.gid(), workspace_owner: true })),
        ExecUser::Id { uid, gid } => {
            let mode = meta.mode();
            let writable = if meta.uid() == uid {
                mode & 0o200 != 0
            } else if meta.gid() == gid {
                mode & 0o020 != 0
            } else {
                mode & 0o002 != 0
            };
            if !writable {
                return Err(format!(
                    "refused to run the command as uid {uid} (gid {gid}): the workspace root {} is not writable by it \
                     (owner uid {}, gid {}, mode {:o}); give the workspace to that user (`chown -R {uid}:{gid} {}`) or \
                     run commands as the workspace's owner (toolbox `--exec-user owner`)",
                    root.display(),
                    meta.uid(),
                    meta.gid(),
                    mode & 0o7777,
                    root.display()
                ));
            }
            Ok(Some(CommandUser { uid, gid, workspace_owner: false }))
        }
    }
}
