//! Dependency injection for `#[depends(KEY)]` parameters.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::context::ToolContext;
use crate::error::{BoxError, DependencyError};
use crate::lifecycle::Closer;

/// A type-erased dependency value, shared between the overrides, the memo tables and the callers.
pub(crate) type AnyValue = Arc<dyn Any + Send + Sync>;

/// How long a created dependency value lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// Created at most once per tool call, however many parameters or nested dependencies ask for
    /// it (the default).
    Call,
    /// Created once per [`Registry`](crate::Registry) on first use and shared by every later call;
    /// concurrent first uses create it once.
    Registry,
}

enum Create<T> {
    Sync(fn(&ToolContext) -> Result<T, DependencyError>),
    Async(for<'a> fn(&'a ToolContext) -> BoxFuture<'a, Result<T, DependencyError>>),
}

enum Close<T> {
    Sync(fn(&T) -> Result<(), BoxError>),
    Async(for<'a> fn(&'a T) -> BoxFuture<'a, Result<(), BoxError>>),
}

impl<T> Clone for Close<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Close<T> {}

/// A dependency a tool can ask for with `#[depends(KEY)]`: a stable id and a way to create the value.
///
/// Resolution order for one call: an override on the call's [`ToolContext`] wins, then an override
/// on the [`Registry`](crate::Registry), then the key's [`Scope`] memo, then `create`. `create` gets
/// the call's context and may resolve other keys through it; a key that (indirectly) asks for itself
/// is an error naming the chain (`a -> b -> a`), never a hang.
///
/// The value type must be `Clone + Send + Sync + 'static`: each parameter receives a clone of the
/// memoised value (wrap expensive state in an `Arc`).
///
/// A registry-scoped value that holds a resource (a connection pool, a child process) declares how
/// to release it with [`on_close`](DependencyKey::on_close); the registry runs it once when it is
/// closed or dropped (see [`Registry::close`](crate::Registry::close)). Call-scoped values are
/// dropped when their call ends: release them in `Drop`.
///
/// ```
/// use tool_runtime::{DependencyError, DependencyKey, ToolContext};
///
/// fn greeting(_ctx: &ToolContext) -> Result<String, DependencyError> {
///     Ok("hello".to_owned())
/// }
///
/// /// The greeting every tool uses.
/// static GREETING: DependencyKey<String> = DependencyKey::new("greeting", greeting);
/// assert_eq!(GREETING.id(), "greeting");
/// ```
pub struct DependencyKey<T: 'static> {
    id: &'static str,
    create: Create<T>,
    scope: Scope,
    close: Option<Close<T>>,
}

impl<T: 'static> DependencyKey<T> {
    /// A call-scoped key whose value is created by a synchronous function.
    pub const fn new(id: &'static str, create: fn(&ToolContext) -> Result<T, DependencyError>) -> Self {
        Self { id, create: Create::Sync(create), scope: Scope::Call, close: None }
    }

    /// A call-scoped key whose value is created by an async function (return `Box::pin(async
    /// move { ... })`).
    pub const fn new_async(
        id: &'static str,
        create: for<'a> fn(&'a ToolContext) -> BoxFuture<'a, Result<T, DependencyError>>,
    ) -> Self {
        Self { id, create: Create::Async(create), scope: Scope::Call, close: None }
    }

    /// The same key with another scope.
    #[must_use]
    pub const fn with_scope(self, scope: Scope) -> Self {
        Self { scope, ..self }
    }

    /// The same key with a synchronous close: the registry calls `close` with the value it created
    /// when it is closed or dropped. Only [`Scope::Registry`] values are closed this way (a
    /// call-scoped value is dropped when its call ends); an overriding value belongs to whoever
    /// set it and is never closed by the registry.
    #[must_use]
    pub const fn on_close(self, close: fn(&T) -> Result<(), BoxError>) -> Self {
        Self { close: Some(Close::Sync(close)), ..self }
    }

    /// The same key with an asynchronous close (return `Box::pin(async move { ... })`); see
    /// [`on_close`](DependencyKey::on_close).
    #[must_use]
    pub const fn on_close_async(self, close: for<'a> fn(&'a T) -> BoxFuture<'a, Result<(), BoxError>>) -> Self {
        Self { close: Some(Close::Async(close)), ..self }
    }

    /// The key's stable id (also the name in error messages and the override slot).
    pub const fn id(&self) -> &'static str {
        self.id
    }

    /// The key's scope.
    pub const fn scope(&self) -> Scope {
        self.scope
    }

    pub(crate) async fn create(&self, ctx: &ToolContext) -> Result<T, DependencyError> {
        match &self.create {
            Create::Sync(create) => create(ctx),
            Create::Async(create) => create(ctx).await,
        }
    }

    /// The close of a value this key created, when the key declares one.
    pub(crate) fn closer(&self, value: AnyValue) -> Option<Closer>
    where
        T: Send + Sync,
    {
        let close = self.close?;
        let run = move || -> BoxFuture<'static, Result<(), BoxError>> {
            Box::pin(async move {
                let Some(value) = value.downcast_ref::<T>() else {
                    return Err("the value is not of the key's type".into());
                };
                match close {
                    Close::Sync(close) => close(value),
                    Close::Async(close) => close(value).await,
                }
            })
        };
        Some(Closer::new(format!("dependency `{}`", self.id), run))
    }
}

impl<T> fmt::Debug for DependencyKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DependencyKey").field("id", &self.id).field("scope", &self.scope).finish()
    }
}
