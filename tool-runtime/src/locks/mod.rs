//! Resource locks and concurrency limits: the store of places ([`LockStore`], in process:
//! [`LocalLocks`]), the hook that turns a declared resource into keys ([`ResourceResolver`]), and
//! the keys of one call ([`call_keys`]). The registry takes a call's places after its admission and
//! approval and before its body runs ("Resource locks and concurrency limits" on
//! [`Registry`](crate::Registry)).
//!
//! One mechanism: a key with `permits` places; a lock is a key with one place.

mod local;
#[cfg(feature = "redis")]
mod redis;

use std::fmt;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::context::ToolContext;
use crate::resource::Resource;

pub use local::LocalLocks;
#[cfg(feature = "redis")]
pub use redis::{DEFAULT_LEASE, LOCK_NAMESPACE, RedisLocks};

/// A place held on one key of a [`LockStore`]; dropping it gives the place back (to the next
/// waiter in arrival order, for [`LocalLocks`]).
pub struct LockGuard {
    _held: Box<dyn Send + Sync>,
}

impl LockGuard {
    /// A guard whose drop gives the place back: `held` releases it in its own `Drop`.
    pub fn new(held: impl Send + Sync + 'static) -> Self {
        LockGuard { _held: Box::new(held) }
    }
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LockGuard")
    }
}

/// Why a [`LockStore`] could not give a place (a shared store that cannot be reached). The text
/// says what failed; the call then does not run and reads
/// ``tool `x` did not run: its resource lock could not be taken: <text>``.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LockError {
    /// What failed, for the model and the logs (never a secret: keys are hashed by shared stores).
    pub message: String,
}

/// Where the places of resource locks and concurrency limits are kept: in process
/// ([`LocalLocks`], the default) or shared by the workers of a cluster (`RedisLocks`, feature
/// `redis`). Set with [`RegistryBuilder::locks`](crate::RegistryBuilder::locks).
pub trait LockStore: Send + Sync + 'static {
    /// Waits for one of `permits` places on `key` and holds it until the guard drops. Waiters on
    /// one key are served in arrival order (the first poll of the returned future is the arrival).
    /// Dropping the future while it waits gives up its turn, and takes no place.
    ///
    /// `permits` is the same for every call of one key (the registry derives both from the
    /// tool's declaration); at least 1.
    ///
    /// # Errors
    /// [`LockError`] when the store cannot be reached; the in-process store never fails.
    fn acquire<'a>(&'a self, key: &'a str, permits: u32) -> BoxFuture<'a, Result<LockGuard, LockError>>;
}

/// Turns a declared resource's value into the keys of what it names, where the raw value would not
/// do: `tool-std`'s resolver turns a `path` into the file's real path inside the sandbox, so that
/// `a.txt` and `./dir/../a.txt` are one resource, and an `apply_patch` patch into the paths it
/// changes. Set with [`RegistryBuilder::resource_resolver`](crate::RegistryBuilder::resource_resolver).
///
/// The registry asks it about every declared resource of a call that is not [per
/// tool](Resource::per_tool), with the argument's decoded value (`None` for a resource of the kind
/// alone, or an argument the call left out), before the call's body runs. Its future is polled on
/// the thread that polls the call and should answer without waiting (a few system calls at most):
/// the calls of a turn reach the lock in turn order only when it does.
pub trait ResourceResolver: Send + Sync + 'static {
    /// The keys of the resource of `kind` that `value` names in a call run with `ctx`, whole
    /// (`kind:key` by convention; a resolver may put several kinds in one namespace, as
    /// `tool-std`'s puts a patch's paths among `path:` keys); `None` when the resolver does not
    /// know `kind`, and `kind:` before each [default key](default_keys) applies. A value the
    /// resolver refuses (a path outside the sandbox) should get a key of its own text: the tool
    /// then refuses the call itself.
    fn resolve<'a>(
        &'a self,
        kind: &'a str,
        value: Option<&'a Value>,
        ctx: &'a ToolContext,
    ) -> Option<BoxFuture<'a, Vec<String>>>;
}

/// The keys of a declared resource's value when no resolver knows its kind: none for an absent
/// argument or `null` (the call then holds nothing for it); a string as it is; each item of an
/// array, as a string or else its JSON text; any other value as its JSON text. `None` (a resource
/// of the kind alone) is the one key `""`.
pub fn default_keys(value: Option<&Value>) -> Vec<String> {
    fn one(value: &Value) -> String {
        match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    }
    match value {
        None => vec![String::new()],
        Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().filter(|item| !item.is_null()).map(one).collect(),
        Some(other) => vec![one(other)],
    }
}

/// The most resource keys one call may hold: 1,024. A call whose arguments name more (a patch of
/// thousands of files) is refused before it runs, so that no call makes thousands of lock round
/// trips or fills the lock table.
pub const MAX_CALL_KEYS: usize = 1024;

/// The keys and places a call of `tool` with `arguments` (the decoded arguments object; `None`
/// when they do not parse, and the tool refuses them itself) holds while it runs, sorted by key
/// with duplicates removed (sorted, so that two calls holding several keys take them in one order
/// and never wait on each other in a circle).
///
/// Key shapes: `kind:key` for a shared resource (`path:/work/a.txt`), `tool:NAME` for the whole
/// tool, `tool:NAME/kind:key` for a per-tool limit on an argument's value.
pub async fn call_keys(
    tool: &str,
    resources: &[Resource],
    arguments: Option<&Value>,
    resolver: Option<&dyn ResourceResolver>,
    ctx: &ToolContext,
) -> Vec<(String, u32)> {
    let mut keys = Vec::new();
    for resource in resources {
        let value = match (resource.argument, arguments) {
            (None, _) => None,
            (Some(argument), Some(arguments)) => match arguments.get(argument) {
                Some(value) => Some(value),
                // An argument the call left out names nothing.
                None => continue,
            },
            (Some(_), None) => continue,
        };
        if resource.per_tool {
            match resource.argument {
                None => keys.push((format!("tool:{tool}"), resource.permits)),
                Some(_) => keys.extend(
                    default_keys(value)
                        .into_iter()
                        .map(|key| (format!("tool:{tool}/{}:{key}", resource.kind), resource.permits)),
                ),
            }
            continue;
        }
        match resolver.and_then(|resolver| resolver.resolve(resource.kind, value, ctx)) {
            Some(resolving) => keys.extend(resolving.await.into_iter().map(|key| (key, resource.permits))),
            None => keys.extend(
                default_keys(value).into_iter().map(|key| (format!("{}:{key}", resource.kind), resource.permits)),
            ),
        }
    }
    keys.sort();
    keys.dedup_by(|a, b| a.0 == b.0);
    keys
}
