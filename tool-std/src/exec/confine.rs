//! Landlock confinement of a command, applied to the thread that spawns it.
//!
//! Landlock restricts the calling thread and everything it starts afterwards; the rules cannot be
//! lifted. So the restriction is applied on a short-lived thread made for one spawn: the thread
//! restricts itself, spawns the command (which inherits the restriction across `fork` and
//! `exec`), and ends. The process's other threads stay unrestricted, and no code runs between
//! `fork` and `exec` (no `pre_exec`, so no `unsafe`).

use std::fmt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError,
    RulesetStatus, Scope, path_beneath_rules,
};

/// The newest Landlock ABI whose file system rights the rules name (ABI 5 added `ioctl` on
/// devices; later ABIs add no file system right).
const FS_ABI: ABI = ABI::V5;

/// The Landlock ABI that added TCP `connect` and `bind` rights.
const NET_ABI: ABI = ABI::V4;

/// The Landlock ABI that added scoping signals to the sandbox.
const SIGNAL_ABI: ABI = ABI::V6;

/// Device files every command may write (and read): the ones shells and build tools open.
const WRITABLE_DEVICES: [&str; 6] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"];

/// The confinement a command ran under, as the first line of its result states it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Confinement {
    /// Landlock is in force.
    Landlock {
        /// The Landlock ABI in force (the lower of the kernel's and the newest the `landlock`
        /// crate knows).
        abi: i32,
        /// The directories the command may write below; everything else is read-only.
        writable: Vec<PathBuf>,
        /// How TCP is confined.
        network: NetworkConfinement,
    },
    /// No Landlock: the kernel has none and the configuration allows unconfined commands
    /// ([`ExecConfig::allow_unconfined`](super::ExecConfig::allow_unconfined)).
    Unconfined {
        /// Why Landlock is not in force.
        reason: String,
    },
}

/// How a command's TCP connections are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkConfinement {
    /// `connect` and `bind` on TCP are refused by the kernel.
    Refused,
    /// TCP is allowed by the configuration ([`ExecConfig::network`](super::ExecConfig::network)).
    Allowed,
    /// TCP should be refused, but the kernel's Landlock ABI is below 4 and cannot.
    NotConfinable,
}

impl fmt::Display for Confinement {
    /// `[sandbox: landlock ABI 7; writes only below /ws, /tmp/s/home; tcp connect/bind refused]`,
    /// or `[sandbox: none (<reason>); the command is not confined]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Landlock { abi, writable, network } => {
                let dirs: Vec<String> = writable.iter().map(|p| p.display().to_string()).collect();
                let tcp = match network {
                    NetworkConfinement::Refused => "tcp connect/bind refused",
                    NetworkConfinement::Allowed => "tcp allowed",
                    NetworkConfinement::NotConfinable => "tcp not confined (needs Landlock ABI 4)",
                };
                write!(f, "[sandbox: landlock ABI {abi}; writes only below {}; {tcp}]", dirs.join(", "))
            }
            Self::Unconfined { reason } => write!(f, "[sandbox: none ({reason}); the command is not confined]"),
        }
    }
}

/// Restricts the calling thread (and what it spawns later) to reading everywhere, writing below
/// `writable` (and to a few device files), signalling only processes it started (Landlock ABI 6
/// and up), and, unless `network`, no TCP `connect` or `bind` (ABI 4 and up). `max_abi` caps the
/// ABI whose rules are asked for, as on an older kernel
/// ([`ExecConfig::max_landlock_abi`](super::ExecConfig::max_landlock_abi); `None`: the kernel's).
///
/// # Errors
/// `Err(reason)` when Landlock is not in force: the kernel has none, it is disabled, `max_abi` is
/// 0, or a rule could not be made. The thread is then not restricted.
pub(crate) fn restrict_thread(writable: &[&Path], network: bool, max_abi: Option<i32>) -> Result<Confinement, String> {
    let cap = max_abi.map_or(ABI::V10, ABI::from);
    if cap == ABI::Unsupported {
        return Err(
            "Landlock is off in the exec configuration (`max_landlock_abi` is 0), as on a kernel without it".to_owned()
        );
    }
    let status = build_and_restrict(writable, network, cap).map_err(|e| format!("landlock failed: {e}"))?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => (effective_abi as i32).min(cap as i32),
        LandlockStatus::NotEnabled => return Err("the kernel has Landlock but it is not enabled".to_owned()),
        LandlockStatus::NotImplemented => return Err("the kernel has no Landlock".to_owned()),
    };
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(format!("the kernel's Landlock (ABI {abi}) did not enforce the rules"));
    }
    let network = if network {
        NetworkConfinement::Allowed
    } else if abi >= NET_ABI as i32 {
        NetworkConfinement::Refused
    } else {
        NetworkConfinement::NotConfinable
    };
    Ok(Confinement::Landlock { abi, writable: writable.iter().map(|p| p.to_path_buf()).collect(), network })
}

/// The rules of [`restrict_thread`], asked for up to the ABI `cap` (at least 1).
fn build_and_restrict(
    writable: &[&Path],
    network: bool,
    cap: ABI,
) -> Result<landlock::RestrictionStatus, RulesetError> {
    let fs = FS_ABI.min(cap);
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(fs))?;
    // Signals (ABI 6 and up): the command may signal its own processes only, not the agent or
    // anything else outside its sandbox.
    if cap >= SIGNAL_ABI {
        ruleset = ruleset.scope(Scope::Signal)?;
    }
    if !network && cap >= NET_ABI {
        ruleset = ruleset.handle_access(AccessNet::from_all(NET_ABI))?;
    }
    ruleset
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(fs)))?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(fs)))?
        .add_rules(path_beneath_rules(WRITABLE_DEVICES, AccessFs::from_all(fs)))?
        .restrict_self()
}

/// Whether a command may run where Landlock is not in force: `Ok` with the confinement to state
/// when unconfined commands are allowed, else the refusal the model reads.
pub(crate) fn unconfined(reason: String, allow_unconfined: bool) -> Result<Confinement, String> {
    if allow_unconfined {
        Ok(Confinement::Unconfined { reason })
    } else {
        Err(format!(
            "refused to run the command: {reason}, so it cannot be confined to the workspace; the operator can allow \
             unconfined commands (`ExecConfig::allow_unconfined`, toolbox `--allow unconfined-exec`)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_landlock_the_command_is_refused_with_the_reason_and_how_to_allow_it() {
        assert_eq!(
            unconfined("the kernel has no Landlock".to_owned(), false).unwrap_err(),
            "refused to run the command: the kernel has no Landlock, so it cannot be confined to the workspace; the \
             operator can allow unconfined commands (`ExecConfig::allow_unconfined`, toolbox `--allow \
             unconfined-exec`)"
        );
    }

    #[test]
    fn without_landlock_an_allowed_unconfined_command_says_so_in_its_first_line() {
        let confinement = unconfined("the kernel has no Landlock".to_owned(), true).unwrap();
        assert_eq!(
            confinement.to_string(),
            "[sandbox: none (the kernel has no Landlock); the command is not confined]"
        );
    }

    #[test]
    fn the_landlock_line_names_the_abi_the_writable_directories_and_tcp() {
        let confinement = Confinement::Landlock {
            abi: 3,
            writable: vec![PathBuf::from("/ws"), PathBuf::from("/tmp/s/home")],
            network: NetworkConfinement::NotConfinable,
        };
        assert_eq!(
            confinement.to_string(),
            "[sandbox: landlock ABI 3; writes only below /ws, /tmp/s/home; tcp not confined (needs Landlock ABI 4)]"
        );
    }
}
