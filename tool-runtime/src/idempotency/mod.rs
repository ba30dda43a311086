//! Idempotent retries of any tool: a call that carries an idempotency key
//! ([`ToolCall::idempotency_key`](crate::ToolCall::idempotency_key)) runs at most once per key;
//! a retry with the same key and the same arguments gets the first call's message without the
//! tool running again.
//!
//! # The rules
//! - Scope: a key belongs to one principal ([`ToolContext::principal`](crate::ToolContext::principal),
//!   none being a principal of its own) and one tool: the same key from another principal, or for
//!   another tool, is another key.
//! - Same key, same arguments (compared as JSON values, so key order and spacing do not matter):
//!   the first call's message, with the retry's call id. The tool does not run, and the call's
//!   `tool_call` span records `outcome = "replayed"` (telemetry should count a replay as no new
//!   execution).
//! - Same key, other arguments: refused, before the tool runs, with an error that says to send a
//!   new key (kind [`InvalidArguments`](crate::ToolErrorKind::InvalidArguments)).
//! - Same key while the first call still runs (on any worker of a shared store): the retry waits
//!   for its message, polling the store every 50 ms, at most [`Idempotency::wait`] (default 30 s);
//!   after that it is told that the first call is still running and to retry later (kind
//!   [`Unavailable`](crate::ToolErrorKind::Unavailable): the retry has no outcome of its own).
//! - What is kept: every message of a call whose tool ran (a result, its own error, a time-out or
//!   a panic: an effect may have happened), for [`Idempotency::ttl`] (default 24 hours). A call
//!   that did not run (arguments that do not decode, a refusal of the policy, a cancellation
//!   before or during the run, a closed registry) releases its key: a retry runs it.
//! - A call without an outcome here releases its key too: its message is an error of kind
//!   [`Unavailable`](crate::ToolErrorKind::Unavailable) ([`ToolError::Unavailable`](crate::ToolError::Unavailable)),
//!   which says that the service the tool runs its effect through was not reached or did not
//!   answer (a refused or lost connection, no answer in time), or refused the call because its
//!   first call with the same key still runs there. The kind is the marker, never the text: an
//!   imported MCP tool (`tool-mcp`) sets it for those failures and for an upstream's result
//!   marked so, and a tool of your own may return it. Storing such a message would replay the
//!   failure to every retry for the time to live, although the service, which the forwarded key
//!   ([`ToolContext::idempotency_key_for`](crate::ToolContext::idempotency_key_for)) lets dedupe,
//!   would answer a retry with the effect's real outcome. A retry runs the tool again, and so
//!   reaches the service with the same forwarded key. An error the service answered after the
//!   call ran there (the upstream tool's own error) is kind `Failed` and is kept.
//! - A running call holds its key under a lease ([`Idempotency::lease`], default 5 minutes, or the
//!   tool's time limit when longer; the lease is not renewed, so a call that runs past it can be
//!   run again by a retry: give a long tool a time limit). A worker killed mid-call leaves the
//!   lease behind: retries wait
//!   (or are told it runs) until the lease ends, then the next retry runs the tool again. Whether
//!   the killed worker's effect happened before it died is not known: such a call is run at least
//!   once, and exactly once only when it ended or its worker lived.
//! - Stored forms: the key is kept only as HMAC-SHA256 under the server's key
//!   ([`Idempotency::server_key`], 32 random bytes per process by default: give every worker
//!   of a shared store the same one) over the principal, the tool and the key; the arguments only
//!   as their HMAC under the same key; the message as JSON (secret arguments are redacted from it already, see
//!   "Secret arguments" on [`Registry`](crate::Registry)). No key is logged or traced.
//! - A tool may name the argument whose value is the key
//!   (`#[tool(idempotency_key = "request_id")]`, [`Tool::idempotency_key_argument`](crate::Tool::idempotency_key_argument)):
//!   when the arguments carry it (not `null`), its value is the key (a string as it is, a number
//!   or another value as its JSON text) and wins over the call's own key, since the tool's author
//!   said what identifies one effect; without it the call's own key counts, as for any tool.
//! - Store failures (unreachable, full, over a principal's quota) refuse the call with the
//!   store's error: running it without the record would break the promise.
//! - Passing a call on: a tool that runs its effect through another service (an imported MCP
//!   tool, a payment API) sends that service
//!   [`ToolContext::idempotency_key_for`](crate::ToolContext::idempotency_key_for), an HMAC under
//!   the server key of the principal, the tool, the service and the key, never the key itself
//!   (there every caller of this registry is one principal). A retry after a restart, or on
//!   another worker with the same server key, forwards the same key, so the other service runs
//!   the effect once even when this registry's record is gone.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::call::ToolCall;
use crate::error::ToolErrorKind;
use crate::result::ToolMessage;

mod memory;
#[cfg(feature = "redis")]
mod redis;

pub use memory::{DEFAULT_MAX_BYTES, DEFAULT_MAX_KEYS, DEFAULT_MAX_KEYS_PER_PRINCIPAL, MemoryIdempotencyStore};
#[cfg(feature = "redis")]
pub use redis::{DEFAULT_MAX_MESSAGE_BYTES, IDEMPOTENCY_NAMESPACE, RedisIdempotencyStore};

/// How long a kept message lives by default: 24 hours.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// How long a running call holds its key by default: 5 minutes.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(5 * 60);
/// How long a retry waits for the first call by default: 30 seconds.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(30);
/// How often a waiting retry reads the store: every 50 ms.
const POLL: Duration = Duration::from_millis(50);
/// The longest idempotency key accepted, in bytes: 256.
pub const MAX_KEY_BYTES: usize = 256;

/// What a store says of a key when a call claims it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key was free (or its lease or time to live had ended): it is now held by this call.
    Claimed,
    /// Another call holds the key and runs; `fingerprint` is its arguments'.
    Running {
        /// The HMAC (hex) of the running call's arguments.
        fingerprint: String,
    },
    /// A call with this key ended: its arguments' fingerprint and its message (JSON).
    Done {
        /// The HMAC (hex) of the first call's arguments.
        fingerprint: String,
        /// The first call's [`ToolMessage`] as JSON.
        message: String,
    },
}

/// A store's failure: its text says what went wrong and what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyStoreError(
    /// What went wrong and what to change.
    pub String,
);

impl fmt::Display for IdempotencyStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for IdempotencyStoreError {}

impl IdempotencyStoreError {
    /// A principal holds `max` keys already: what every store says then.
    pub(super) fn over_quota(max: usize) -> Self {
        Self(format!(
            "this caller holds its most records in the idempotency store ({max}: idempotency keys and used approval \
             tokens); retry once older ones expire"
        ))
    }
}

/// Where idempotency records live: [`MemoryIdempotencyStore`] in the process, or a store every
/// worker shares (`RedisIdempotencyStore`, feature `redis`). `key` is the
/// HMAC of the principal, tool and client key (hex), `principal` the HMAC of the principal alone
/// (for quotas), `fingerprint` the HMAC of the arguments (hex).
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Claims `key` for a call of arguments `fingerprint`, holding it for `lease`; or says who
    /// holds it, or what the call that held it left.
    ///
    /// # Errors
    /// The store cannot be reached, is full, or `principal` holds its quota of keys.
    fn claim<'a>(
        &'a self,
        key: &'a str,
        principal: &'a str,
        fingerprint: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Claim, IdempotencyStoreError>>;

    /// Records the `message` (JSON) of the call that holds `key`, kept for `ttl`.
    ///
    /// # Errors
    /// The store cannot be reached.
    fn complete<'a>(
        &'a self,
        key: &'a str,
        message: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), IdempotencyStoreError>>;

    /// Frees `key`, held by a call that did not run.
    ///
    /// # Errors
    /// The store cannot be reached.
    fn release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), IdempotencyStoreError>>;
}

/// A store shared by several users in one process (two registries, or idempotency and
/// [approval tokens](crate::approvals)): each call goes to the one store.
impl<S: IdempotencyStore> IdempotencyStore for Arc<S> {
    fn claim<'a>(
        &'a self,
        key: &'a str,
        principal: &'a str,
        fingerprint: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Claim, IdempotencyStoreError>> {
        (**self).claim(key, principal, fingerprint, lease)
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        message: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), IdempotencyStoreError>> {
        (**self).complete(key, message, ttl)
    }

    fn release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), IdempotencyStoreError>> {
        (**self).release(key)
    }
}

/// Idempotent retries for a registry ([`RegistryBuilder::idempotency`](crate::RegistryBuilder::idempotency)):
/// a store, the server's key and the times (see the [module docs](self)).
#[derive(Clone)]
pub struct Idempotency {
    store: Arc<dyn IdempotencyStore>,
    server_key: Arc<[u8]>,
    ttl: Duration,
    lease: Duration,
    wait: Duration,
}

impl fmt::Debug for Idempotency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotency")
            .field("ttl", &self.ttl)
            .field("lease", &self.lease)
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

/// A server key shorter than 32 bytes ([`Idempotency::server_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerKeyError {
    /// The key's length in bytes.
    pub bytes: usize,
}

impl fmt::Display for ServerKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an idempotency server key needs at least 32 bytes, got {}; give 32 random bytes", self.bytes)
    }
}

impl std::error::Error for ServerKeyError {}

impl Idempotency {
    /// Idempotency on `store`, under 32 random bytes drawn now as the server key (only this
    /// process knows it: use [`Idempotency::server_key`] for a store shared by workers), with
    /// the default times.
    pub fn new(store: impl IdempotencyStore) -> Self {
        Self::shared(Arc::new(store))
    }

    /// [`Idempotency::new`] on a store shared with other users of it (approval tokens).
    pub(crate) fn shared(store: Arc<dyn IdempotencyStore>) -> Self {
        let server_key = crate::mac::random_secret();
        Self { store, server_key, ttl: DEFAULT_TTL, lease: DEFAULT_LEASE, wait: DEFAULT_WAIT }
    }

    /// The server key the stored keys are HMACs under: at least 32 bytes, the same on every
    /// worker of a shared store. Never logged.
    ///
    /// # Errors
    /// [`ServerKeyError`] for a key shorter than 32 bytes.
    pub fn server_key(mut self, key: impl AsRef<[u8]>) -> Result<Self, ServerKeyError> {
        let key = key.as_ref();
        if key.len() < 32 {
            return Err(ServerKeyError { bytes: key.len() });
        }
        self.server_key = Arc::from(key);
        Ok(self)
    }

    /// How long a kept message lives ([`DEFAULT_TTL`]).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How long a running call holds its key ([`DEFAULT_LEASE`]); a tool's longer time limit wins.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How long a retry waits for the first call ([`DEFAULT_WAIT`]); zero answers at once.
    #[must_use]
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// HMAC-SHA256 (hex) under the server key of `parts`, each length-prefixed.
    pub(crate) fn mac(&self, parts: &[&str]) -> String {
        crate::mac::hmac_hex(&self.server_key, parts)
    }

    /// The server key, for the keys a call forwards ([`ToolContext::idempotency_key_for`](crate::ToolContext::idempotency_key_for)).
    pub(crate) fn key_bytes(&self) -> Arc<[u8]> {
        self.server_key.clone()
    }

    /// Starts the call `call` of the tool named `tool` by `principal`, under `key`.
    pub(crate) async fn begin(
        &self,
        tool: &str,
        key: &str,
        call: &ToolCall,
        principal: Option<&str>,
        limit: Option<Duration>,
    ) -> Begin {
        if key.is_empty() || key.len() > MAX_KEY_BYTES {
            return Begin::Refuse(refusal(
                call,
                ToolErrorKind::InvalidArguments,
                format!(
                    "the idempotency key must be 1 to {MAX_KEY_BYTES} bytes, got {}; send a shorter unique key \
                     (a UUID)",
                    key.len()
                ),
            ));
        }
        let who = principal.unwrap_or("");
        let stored = self.mac(&["key", who, tool, key]);
        let scope = self.mac(&["principal", who]);
        // An HMAC, not a bare hash: a low-entropy secret argument cannot be found by guessing.
        let fingerprint = self.mac(&["arguments", &canonical_arguments(&call.arguments)]);
        let lease = limit.map_or(self.lease, |limit| limit.max(self.lease));
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            match self.store.claim(&stored, &scope, &fingerprint, lease).await {
                Err(error) => {
                    return Begin::Refuse(refusal(
                        call,
                        ToolErrorKind::Failed,
                        format!("tool `{}` did not run: its idempotency record could not be kept: {error}", call.name),
                    ));
                }
                Ok(Claim::Claimed) => {
                    return Begin::Run(Held { store: self.store.clone(), key: stored, ttl: self.ttl });
                }
                Ok(Claim::Running { fingerprint: first } | Claim::Done { fingerprint: first, .. })
                    if first != fingerprint =>
                {
                    return Begin::Refuse(mismatch(call));
                }
                Ok(Claim::Done { message, .. }) => {
                    return match serde_json::from_str::<ToolMessage>(&message) {
                        Ok(mut message) => {
                            message.tool_call_id.clone_from(&call.id);
                            Begin::Replay(message)
                        }
                        Err(error) => Begin::Refuse(refusal(
                            call,
                            ToolErrorKind::Failed,
                            format!(
                                "tool `{}` did not run: the message kept for this idempotency key cannot be read \
                                 ({error}); send a new key",
                                call.name
                            ),
                        )),
                    };
                }
                Ok(Claim::Running { .. }) => {
                    if tokio::time::Instant::now() + POLL > deadline {
                        return Begin::Refuse(refusal(
                            call,
                            ToolErrorKind::Unavailable,
                            format!(
                                "tool `{}` did not run again: the first call with this idempotency key is still \
                                 running; retry later with the same key to get its result",
                                call.name
                            ),
                        ));
                    }
                    tokio::time::sleep(POLL).await;
                }
            }
        }
    }
}

/// How a call with an idempotency key goes on.
pub(crate) enum Begin {
    /// Run the tool, holding the key.
    Run(Held),
    /// The first call's message, for this call's id.
    Replay(ToolMessage),
    /// Refused before the tool ran.
    Refuse(ToolMessage),
}

/// A key held by a running call: [`Held::settle`] records its message or frees the key.
pub(crate) struct Held {
    store: Arc<dyn IdempotencyStore>,
    key: String,
    ttl: Duration,
}

impl Held {
    /// Records `message` when the tool ran (see the module docs), else frees the key. A store
    /// failure here is left to the lease and the time to live.
    pub(crate) async fn settle(self, message: &ToolMessage) {
        let ran = !matches!(
            message.error_kind,
            Some(
                ToolErrorKind::UnknownTool
                    | ToolErrorKind::InvalidArguments
                    | ToolErrorKind::Dependency
                    | ToolErrorKind::PermissionDenied
                    | ToolErrorKind::TurnStopped
                    | ToolErrorKind::Cancelled
                    | ToolErrorKind::RegistryClosed
                    | ToolErrorKind::Unavailable
            )
        );
        let kept = match serde_json::to_string(message) {
            Ok(json) if ran => self.store.complete(&self.key, &json, self.ttl).await,
            _ => self.store.release(&self.key).await,
        };
        if let Err(error) = kept {
            tracing::warn!(%error, "an idempotency record could not be written; its lease will end it");
        }
    }
}

/// The idempotency key of `call` of `tool`: the value of the tool's declared argument
/// ([`Tool::idempotency_key_argument`](crate::Tool::idempotency_key_argument)) when the arguments
/// (a JSON object) carry it and it is not `null` (a string as it is, any other JSON value as its
/// JSON text, `42` as `42`), else the call's own key.
pub(crate) fn key_of<'a>(tool: &dyn crate::Tool, call: &'a ToolCall) -> Option<std::borrow::Cow<'a, str>> {
    let declared = tool.idempotency_key_argument().and_then(|argument| {
        let arguments = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&call.arguments).ok()?;
        match arguments.get(argument)? {
            serde_json::Value::Null => None,
            serde_json::Value::String(key) => Some(key.clone()),
            other => Some(other.to_string()),
        }
    });
    match declared {
        Some(key) => Some(std::borrow::Cow::Owned(key)),
        None => call.idempotency_key.as_deref().map(std::borrow::Cow::Borrowed),
    }
}

/// The error message of a refused call.
fn refusal(call: &ToolCall, kind: ToolErrorKind, text: String) -> ToolMessage {
    ToolMessage::error(&call.id, &call.name, text).with_error_kind(kind)
}

/// The refusal of a key sent again with other arguments.
fn mismatch(call: &ToolCall) -> ToolMessage {
    refusal(
        call,
        ToolErrorKind::InvalidArguments,
        format!(
            "tool `{}` did not run: this idempotency key was used for a call with other arguments; send a new key \
             for new arguments, or the same arguments to get the first call's result",
            call.name
        ),
    )
}

/// `arguments` as a JSON value (keys sorted, no spacing), or the text as sent when it is not JSON.
pub(crate) fn canonical_arguments(arguments: &str) -> String {
    let text = arguments.trim();
    let text = if text.is_empty() { "{}" } else { text };
    serde_json::from_str::<serde_json::Value>(text).map_or_else(|_| text.to_owned(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_compared_ignore_key_order_and_spacing() {
        assert_eq!(canonical_arguments(r#"{"a":1,"b":2}"#), canonical_arguments(r#"{ "b": 2, "a": 1 }"#));
        assert_ne!(canonical_arguments(r#"{"a":1}"#), canonical_arguments(r#"{"a":2}"#));
        assert_eq!(canonical_arguments(""), "{}");
    }

    #[test]
    fn stored_keys_differ_by_principal_and_tool_and_hide_the_key() {
        let idempotency = Idempotency::new(MemoryIdempotencyStore::new()).server_key([7u8; 32]).unwrap();
        let a = idempotency.mac(&["key", "ann", "pay", "k-123"]);
        assert_eq!(a.len(), 64);
        assert!(!a.contains("k-123"));
        assert_ne!(a, idempotency.mac(&["key", "bob", "pay", "k-123"]));
        assert_ne!(a, idempotency.mac(&["key", "ann", "refund", "k-123"]));
        assert_eq!(a, idempotency.mac(&["key", "ann", "pay", "k-123"]));
    }

    #[test]
    fn a_short_server_key_is_refused_saying_how_long() {
        let error = Idempotency::new(MemoryIdempotencyStore::new()).server_key([1u8; 16]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "an idempotency server key needs at least 32 bytes, got 16; give 32 random bytes"
        );
    }
}
