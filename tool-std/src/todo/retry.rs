//! Changes applied at most once: a change made under a retry key is recorded in the session's
//! meta, in the same save as the change, and a retry with the same key gets the first answer
//! instead of being applied again.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::TodoError;
use crate::session::SessionMeta;

/// The key of the session meta holding the changes applied under a retry key.
pub const APPLIED_KEY: &str = "todo_applied";

/// How many applied changes a session remembers: the 64 most recent (older ones are forgotten, a
/// retry of one of them is applied again).
pub const MAX_APPLIED: usize = 64;

/// How long an applied change is remembered: 24 hours after it was applied (by the context's
/// clock), longer than any client retries one call.
pub const APPLIED_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The most bytes of a retry key: 200.
pub const MAX_KEY_BYTES: usize = 200;

/// How many answers a session keeps for retries: those of its 8 most recent keyed changes (a
/// client retries a change soon after it failed). A retry of an older change is still not
/// applied again; it gets the plan as it is now.
pub const MAX_KEPT_ANSWERS: usize = 8;

/// The most bytes of an answer kept for a retry: 16 KiB (16,384). A longer answer (a plan of a
/// few hundred items) is not kept; a retry then gets the plan as it is now. With
/// [`MAX_KEPT_ANSWERS`], a session's meta holds at most 128 KiB of answers.
pub const MAX_KEPT_ANSWER_BYTES: usize = 16 * 1024;

/// A change's retry key: the key, the tool, and a digest of the change's arguments (the first 16
/// bytes of the SHA-256 of the tool's name and the arguments' JSON, as 32 hex digits).
#[derive(Debug, Clone)]
pub(crate) struct RetryKey {
    key: String,
    tool: &'static str,
    digest: String,
}

impl RetryKey {
    /// The retry key of a call of `tool` with `arguments`: `given` (the `idempotency_key`
    /// argument) when there is one, else the call id, else none.
    ///
    /// # Errors
    /// [`TodoError::BadKey`] when `given` is empty or longer than [`MAX_KEY_BYTES`].
    pub(crate) fn of(
        tool: &'static str,
        given: Option<String>,
        call_id: Option<&str>,
        arguments: &impl Serialize,
    ) -> Result<Option<Self>, TodoError> {
        if let Some(key) = &given
            && (key.trim().is_empty() || key.len() > MAX_KEY_BYTES)
        {
            return Err(TodoError::BadKey { bytes: key.len() });
        }
        let Some(key) = given.or_else(|| call_id.map(str::to_owned)) else { return Ok(None) };
        // The arguments' JSON streams into the hash (`Sha256` is an `io::Write`): no copy of a
        // large argument list is made.
        let mut hasher = Sha256::new();
        hasher.update(tool.as_bytes());
        hasher.update(b"\n");
        serde_json::to_writer(&mut hasher, arguments).unwrap_or_default();
        let digest = hasher.finalize();
        let digest = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        Ok(Some(Self { key, tool, digest }))
    }
}

/// One change applied under a retry key, as the session meta keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Applied {
    key: String,
    tool: String,
    digest: String,
    /// Milliseconds since the Unix epoch, by the context's clock.
    at_ms: u64,
    /// The answer, when at most [`MAX_KEPT_ANSWER_BYTES`] and among the [`MAX_KEPT_ANSWERS`]
    /// most recent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The changes the meta remembers that are not older than [`APPLIED_TTL`] at `now`, oldest first
/// (a damaged record list reads as empty: it only ever holds what this module wrote).
fn applied_in(meta: &SessionMeta, now: SystemTime) -> Vec<Applied> {
    let now_ms = millis(now);
    let ttl_ms = u64::try_from(APPLIED_TTL.as_millis()).unwrap_or(u64::MAX);
    meta.get(APPLIED_KEY)
        .and_then(|value| serde_json::from_value::<Vec<Applied>>(value.clone()).ok())
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a.at_ms.saturating_add(ttl_ms) > now_ms)
        .collect()
}

/// What a retry gets: `None` when `retry` was not applied yet; `Some(text)` with the first
/// answer (or `None` inside when it was too long to keep).
///
/// # Errors
/// [`TodoError::KeyReused`] when the key was used for another change of the same tool.
pub(crate) fn replay(
    meta: &SessionMeta,
    retry: &RetryKey,
    now: SystemTime,
) -> Result<Option<Option<String>>, TodoError> {
    let found = applied_in(meta, now).into_iter().find(|a| a.key == retry.key && a.tool == retry.tool);
    match found {
        None => Ok(None),
        Some(applied) if applied.digest == retry.digest => Ok(Some(applied.text)),
        Some(_) => Err(TodoError::KeyReused { key: retry.key.clone(), tool: retry.tool }),
    }
}

/// Records in `meta` that `retry` was applied with the answer `text`, at `now`; forgets the
/// records past [`APPLIED_TTL`] and the oldest beyond [`MAX_APPLIED`], and the answers of all
/// but the [`MAX_KEPT_ANSWERS`] most recent.
pub(crate) fn record(meta: &mut SessionMeta, retry: &RetryKey, text: &str, now: SystemTime) {
    let mut applied = applied_in(meta, now);
    applied.push(Applied {
        key: retry.key.clone(),
        tool: retry.tool.to_owned(),
        digest: retry.digest.clone(),
        at_ms: millis(now),
        text: (text.len() <= MAX_KEPT_ANSWER_BYTES).then(|| text.to_owned()),
    });
    let excess = applied.len().saturating_sub(MAX_APPLIED);
    applied.drain(..excess);
    let unkept = applied.len().saturating_sub(MAX_KEPT_ANSWERS);
    for old in &mut applied[..unkept] {
        old.text = None;
    }
    meta.insert(APPLIED_KEY.to_owned(), serde_json::to_value(applied).unwrap_or_default());
}
