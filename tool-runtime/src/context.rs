//! The context every tool call runs in.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::depends::{AnyValue, DependencyKey, Scope};
use crate::error::{DependencyError, ToolError};

/// Memo slots, one per key id; a slot is created once and filled once.
#[derive(Default)]
pub(crate) struct Memo {
    slots: Mutex<HashMap<&'static str, Arc<OnceCell<AnyValue>>>>,
}

impl Memo {
    fn slot(&self, id: &'static str) -> Arc<OnceCell<AnyValue>> {
        let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        slots.entry(id).or_default().clone()
    }
}

/// What a registry shares with every call it runs: its dependency overrides and its
/// registry-scoped values.
#[derive(Default)]
pub(crate) struct RegistryScope {
    pub(crate) overrides: HashMap<&'static str, AnyValue>,
    pub(crate) memo: Memo,
}

#[derive(Default)]
struct Shared {
    session_id: Option<String>,
    cancellation: CancellationToken,
    overrides: HashMap<&'static str, AnyValue>,
}

struct CallScope {
    call_id: String,
    tool_name: String,
    memo: Memo,
}

/// The context of a tool call: the session, cancellation, dependency overrides and the per-call
/// dependency memo. A tool receives it by declaring a `&ToolContext` parameter.
///
/// The caller builds one context (per session or per turn) and passes it to
/// [`Registry::call`](crate::Registry::call); the registry derives a fresh per-call context from it
/// for each call, so call-scoped dependencies are never shared between two calls. Cloning is cheap
/// (reference counted).
#[derive(Clone, Default)]
pub struct ToolContext {
    shared: Arc<Shared>,
    registry: Option<Arc<RegistryScope>>,
    call: Option<Arc<CallScope>>,
    /// Keys being created on this resolution path, outermost first (cycle detection).
    chain: Vec<&'static str>,
}

impl ToolContext {
    /// An empty context: no session id, a fresh cancellation token, no overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder for a context with a session id, a cancellation token or dependency overrides.
    pub fn builder() -> ToolContextBuilder {
        ToolContextBuilder::default()
    }

    /// The session id, when the caller set one.
    pub fn session_id(&self) -> Option<&str> {
        self.shared.session_id.as_deref()
    }

    /// The cancellation token of this context (shared by every call made with it).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.shared.cancellation
    }

    /// The id of the tool call being served (`None` outside a call).
    pub fn call_id(&self) -> Option<&str> {
        self.call.as_ref().map(|c| c.call_id.as_str())
    }

    /// The name of the tool being served (`None` outside a call).
    pub fn tool_name(&self) -> Option<&str> {
        self.call.as_ref().map(|c| c.tool_name.as_str())
    }

    /// The per-call context the registry hands to a tool.
    pub(crate) fn for_call(&self, call_id: &str, tool_name: &str, registry: &Arc<RegistryScope>) -> Self {
        Self {
            shared: self.shared.clone(),
            registry: Some(registry.clone()),
            call: Some(Arc::new(CallScope {
                call_id: call_id.to_owned(),
                tool_name: tool_name.to_owned(),
                memo: Memo::default(),
            })),
            chain: Vec::new(),
        }
    }

    /// Resolves a dependency: the context's override, else the registry's override, else the value
    /// memoised for the key's [`Scope`], else the key's `create` (whose value is then memoised).
    ///
    /// # Errors
    /// [`ToolError::Dependency`] naming the key when `create` fails or when the key asks for itself
    /// through other keys (the message gives the chain, `a -> b -> a`).
    pub async fn resolve<T>(&self, key: &DependencyKey<T>) -> Result<T, ToolError>
    where
        T: Clone + Send + Sync + 'static,
    {
        if let Some(value) = self.shared.overrides.get(key.id()) {
            return self.downcast(value, key);
        }
        if let Some(value) = self.registry.as_ref().and_then(|r| r.overrides.get(key.id())) {
            return self.downcast(value, key);
        }
        if self.chain.contains(&key.id()) {
            let mut chain = self.chain.clone();
            chain.push(key.id());
            return Err(self.dependency_error(key.id(), format!("dependency cycle: {}", chain.join(" -> "))));
        }
        let memo = match key.scope() {
            Scope::Call => self.call.as_ref().map(|c| &c.memo),
            Scope::Registry => self.registry.as_ref().map(|r| &r.memo),
        };
        let mut nested = self.clone();
        nested.chain.push(key.id());
        let Some(memo) = memo else {
            // Outside a call (no memo table): create a fresh value each time.
            return key.create(&nested).await.map_err(|e| self.dependency_error(key.id(), e.0));
        };
        let slot = memo.slot(key.id());
        let value = slot
            .get_or_try_init(|| async {
                let value = key.create(&nested).await?;
                Ok::<AnyValue, DependencyError>(Arc::new(value))
            })
            .await
            .map_err(|e| self.dependency_error(key.id(), e.0))?;
        self.downcast(value, key)
    }

    /// Overrides and memo slots are only filled through the typed API with the key's own `T`; a
    /// mismatch means two keys share one id, which is reported instead of guessed around.
    fn downcast<T: Clone + 'static>(&self, value: &AnyValue, key: &DependencyKey<T>) -> Result<T, ToolError> {
        value.downcast_ref::<T>().cloned().ok_or_else(|| {
            self.dependency_error(
                key.id(),
                format!("two dependency keys share the id `{}` with different value types", key.id()),
            )
        })
    }

    fn dependency_error(&self, key: &str, cause: String) -> ToolError {
        ToolError::Dependency { tool: self.tool_name().unwrap_or_default().to_owned(), key: key.to_owned(), cause }
    }
}

impl From<ToolError> for DependencyError {
    /// Nesting: a `create` that resolves another key keeps that key's failure in its own cause.
    fn from(error: ToolError) -> Self {
        match error {
            ToolError::Dependency { key, cause, .. } => DependencyError(format!("dependency `{key}` failed: {cause}")),
            other => DependencyError(other.to_string()),
        }
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("session_id", &self.session_id())
            .field("call_id", &self.call_id())
            .field("tool_name", &self.tool_name())
            .finish_non_exhaustive()
    }
}

/// Builds a [`ToolContext`].
#[derive(Default)]
pub struct ToolContextBuilder {
    shared: Shared,
}

impl ToolContextBuilder {
    /// Sets the session id (the key of session state such as the todo list).
    #[must_use]
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.shared.session_id = Some(id.into());
        self
    }

    /// Uses the given cancellation token (default: a fresh one).
    #[must_use]
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.shared.cancellation = token;
        self
    }

    /// Overrides a dependency for every call made with this context; wins over the registry's
    /// override and over `create`.
    #[must_use]
    pub fn override_dependency<T>(mut self, key: &DependencyKey<T>, value: T) -> Self
    where
        T: Clone + Send + Sync + 'static,
    {
        self.shared.overrides.insert(key.id(), Arc::new(value));
        self
    }

    /// The context.
    pub fn build(self) -> ToolContext {
        ToolContext { shared: Arc::new(self.shared), registry: None, call: None, chain: Vec::new() }
    }
}
