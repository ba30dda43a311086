//! The places of running commands in their principal's cap
//! ([`ExecConfig::max_commands_per_principal`](super::ExecConfig::max_commands_per_principal)).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// How many commands each principal runs now (calls without one count under the empty name).
pub(crate) type Running = Arc<Mutex<HashMap<String, usize>>>;

/// One running command counted against its principal's cap
/// ([`ExecConfig::max_commands_per_principal`](super::ExecConfig::max_commands_per_principal));
/// dropping it gives the place back.
#[derive(Debug)]
pub(crate) struct CommandSlot {
    running: Running,
    principal: String,
}

impl CommandSlot {
    /// A place in `running` for one more command of `principal`, when it runs fewer than `max`
    /// (0: no cap); else `Err(max)`.
    pub(crate) fn take(running: &Running, principal: &str, max: usize) -> Result<Self, usize> {
        let mut counts = running.lock().unwrap_or_else(PoisonError::into_inner);
        let count = counts.entry(principal.to_owned()).or_default();
        if max != 0 && *count >= max {
            return Err(max);
        }
        *count += 1;
        Ok(Self { running: running.clone(), principal: principal.to_owned() })
    }
}

impl Drop for CommandSlot {
    fn drop(&mut self) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = running.get_mut(&self.principal) {
            *count -= 1;
            if *count == 0 {
                running.remove(&self.principal);
            }
        }
    }
}
