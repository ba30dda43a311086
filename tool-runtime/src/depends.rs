//! Dependency injection for `#[depends(KEY)]` parameters.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::context::ToolContext;
use crate::error::{BoxError, DependencyError, DependencyName, ToolError};
use crate::lifecycle::Closer;

/// A type-erased dependency value, shared between the overrides, the memo tables and the callers.
pub(crate) type AnyValue = Arc<dyn Any + Send + Sync>;

/// How long a dependency value lives, chosen by the constructor that declares the key:
/// [`DependencyKey::per_call`] (and `per_call_async`), [`DependencyKey::shared`] (and
/// `shared_async`), or [`DependencyKey::provided`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// Created at most once per tool call, however many parameters or nested dependencies ask for
    /// it, and dropped when the call ends: two calls never see the same value.
    Call,
    /// Created once per [`Registry`](crate::Registry) on first use and shared by every later call;
    /// concurrent first uses create it once.
    Registry,
    /// Never created: the value is made by the program (in `main`, say) and handed to the
    /// registry with [`RegistryBuilder::provide`](crate::RegistryBuilder::provide); every call
    /// of that registry gets a clone of it.
    Provided,
}

enum Create<T> {
    /// A [`Scope::Provided`] key: nothing to create.
    None,
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

/// A dependency a tool can ask for with `#[depends(KEY)]`: a stable id, a lifetime ([`Scope`])
/// and, unless the value is handed in, a way to create it.
///
/// The lifetime is part of the declaration, one constructor each, so that a reader of the key
/// sees it:
/// - [`DependencyKey::shared`] (`shared_async`): made once per registry on first use and shared by
///   every call. A store that must keep what calls put into it (notes, a cache, a connection
///   pool) is declared this way.
/// - [`DependencyKey::per_call`] (`per_call_async`): made afresh for each call (at most once in
///   it) and dropped when the call ends. Declare per-call state this way (a request log, a
///   transaction); a store declared per call starts empty on every call.
/// - [`DependencyKey::provided`]: no `create`; the program makes the value (a database opened in
///   `main`) and hands it in with
///   [`RegistryBuilder::provide`](crate::RegistryBuilder::provide). A registry with a `#[tool]`
///   that asks for a provided key nobody provided does not build
///   ([`RegistryError::MissingDependencies`](crate::RegistryError::MissingDependencies), naming
///   the key and the tools).
///
/// Resolution order for one call: an override on the call's [`ToolContext`] wins, then a value
/// given to the [`Registry`](crate::Registry) (`provide` or `override_dependency`), then the
/// value memoised for the key's [`Scope`], then `create`. `create` gets the call's context and
/// may resolve other keys through it; a key that (indirectly) asks for itself is an error naming
/// the chain (`a -> b -> a`), never a hang.
///
/// The value type must be `Clone + Send + Sync + 'static` ([`DependencyValue`]): each parameter
/// receives a clone of the memoised value, and calls on other threads share it (wrap expensive or
/// mutable state in an `Arc`, an `Arc<Mutex<..>>` for a store that calls change or a value that
/// is `Send` but not `Sync`, such as a database connection). The constructors check it, so a key
/// of another type is a compile error where it is declared, saying what to wrap the value in.
///
/// A shared value that holds a resource (a connection pool, a child process) declares how to
/// release it with [`on_close`](DependencyKey::on_close); the registry runs it once when it is
/// closed or dropped (see [`Registry::close`](crate::Registry::close)). Per-call values are
/// dropped when their call ends: release them in `Drop`. A provided value belongs to the program
/// that made it and is never closed by the registry.
///
/// ```
/// use std::collections::BTreeMap;
/// use std::sync::{Arc, Mutex};
///
/// use tool_runtime::{DependencyError, DependencyKey, Scope, ToolContext};
///
/// type Notes = Arc<Mutex<BTreeMap<u64, String>>>;
///
/// fn empty_notes(_ctx: &ToolContext) -> Result<Notes, DependencyError> {
///     Ok(Notes::default())
/// }
///
/// /// One notes store per registry, kept between calls.
/// static NOTES: DependencyKey<Notes> = DependencyKey::shared("notes", empty_notes);
/// /// The database `main` opens, handed in with `RegistryBuilder::provide(&DATABASE, ..)`.
/// static DATABASE: DependencyKey<Arc<String>> = DependencyKey::provided("database");
///
/// assert_eq!(NOTES.scope(), Scope::Registry);
/// assert_eq!(DATABASE.scope(), Scope::Provided);
/// ```
pub struct DependencyKey<T: 'static> {
    id: &'static str,
    create: Create<T>,
    scope: Scope,
    close: Option<Close<T>>,
    /// [`ToolContext::resolve`] of this key's `T`, taken where the constructor checked
    /// [`DependencyValue`]: `#[depends]` resolves through it, so that the parameter's code needs
    /// no bound of its own (a key of a wrong type is reported once, where it is declared).
    resolve: ResolveFn<T>,
}

/// [`ToolContext::resolve`] of one value type, as [`DependencyKey`] holds it, with the key as the
/// `#[depends(..)]` wrote it.
type ResolveFn<T> =
    for<'a> fn(&'a ToolContext, &'a DependencyKey<T>, &'static str) -> BoxFuture<'a, Result<T, ToolError>>;

fn resolve_value<'a, T: DependencyValue>(
    ctx: &'a ToolContext,
    key: &'a DependencyKey<T>,
    name: &'static str,
) -> BoxFuture<'a, Result<T, ToolError>> {
    Box::pin(async move { ctx.resolve(key).await.map_err(|error| error.named(key.id, name)) })
}

/// What the value type of a [`DependencyKey`] must be: `Clone + Send + Sync + 'static`.
/// Implemented for every such type; the key's constructors require it, so a key of another type
/// is refused where it is declared, with a message that says what to wrap the value in.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the value of a `DependencyKey`: it must be `Clone + Send + Sync + 'static`; wrap it in `Arc<Mutex<{Self}>>` (or in `Arc<{Self}>` if it is `Sync`)",
    label = "not `Clone + Send + Sync + 'static`",
    note = "every `#[depends]` parameter gets a clone of the value, shared across threads: `Arc<Mutex<{Self}>>` for a value that is `Send` but not `Sync` (a database connection such as `rusqlite::Connection`) or that calls change, `Arc<{Self}>` for one that is `Sync` but not `Clone`; the `#[depends]` parameters take the same type"
)]
pub trait DependencyValue: Clone + Send + Sync + 'static {}

#[diagnostic::do_not_recommend]
impl<T: Clone + Send + Sync + 'static> DependencyValue for T {}

impl<T: DependencyValue> DependencyKey<T> {
    /// A key whose value a synchronous `create` makes afresh for each call ([`Scope::Call`]): at
    /// most once per call, dropped when the call ends.
    pub const fn per_call(id: &'static str, create: fn(&ToolContext) -> Result<T, DependencyError>) -> Self {
        Self { id, create: Create::Sync(create), scope: Scope::Call, close: None, resolve: resolve_value::<T> }
    }

    /// A key whose value an async `create` (return `Box::pin(async move { ... })`) makes afresh
    /// for each call ([`Scope::Call`]).
    pub const fn per_call_async(
        id: &'static str,
        create: for<'a> fn(&'a ToolContext) -> BoxFuture<'a, Result<T, DependencyError>>,
    ) -> Self {
        Self { id, create: Create::Async(create), scope: Scope::Call, close: None, resolve: resolve_value::<T> }
    }

    /// A key whose value a synchronous `create` makes once per registry, on first use, and every
    /// later call of that registry shares ([`Scope::Registry`]).
    pub const fn shared(id: &'static str, create: fn(&ToolContext) -> Result<T, DependencyError>) -> Self {
        Self { id, create: Create::Sync(create), scope: Scope::Registry, close: None, resolve: resolve_value::<T> }
    }

    /// A key whose value an async `create` (return `Box::pin(async move { ... })`) makes once per
    /// registry and every later call shares ([`Scope::Registry`]).
    pub const fn shared_async(
        id: &'static str,
        create: for<'a> fn(&'a ToolContext) -> BoxFuture<'a, Result<T, DependencyError>>,
    ) -> Self {
        Self { id, create: Create::Async(create), scope: Scope::Registry, close: None, resolve: resolve_value::<T> }
    }

    /// A key without a `create` ([`Scope::Provided`]): the program hands the value in with
    /// [`RegistryBuilder::provide`](crate::RegistryBuilder::provide). Building a registry whose
    /// `#[tool]` functions ask for it without a value fails with
    /// [`RegistryError::MissingDependencies`](crate::RegistryError::MissingDependencies); a
    /// resolution that still finds no value (a hand-written tool, another key's `create`) is a
    /// [`ToolError::Dependency`](crate::ToolError::Dependency) saying to provide it.
    pub const fn provided(id: &'static str) -> Self {
        Self { id, create: Create::None, scope: Scope::Provided, close: None, resolve: resolve_value::<T> }
    }

    /// A per-call key with a synchronous `create`.
    #[deprecated(
        note = "say the lifetime where the key is declared: `DependencyKey::per_call` or `DependencyKey::shared`"
    )]
    pub const fn new(id: &'static str, create: fn(&ToolContext) -> Result<T, DependencyError>) -> Self {
        Self::per_call(id, create)
    }

    /// A per-call key with an async `create`.
    #[deprecated(
        note = "say the lifetime where the key is declared: `DependencyKey::per_call_async` or `DependencyKey::shared_async`"
    )]
    pub const fn new_async(
        id: &'static str,
        create: for<'a> fn(&'a ToolContext) -> BoxFuture<'a, Result<T, DependencyError>>,
    ) -> Self {
        Self::per_call_async(id, create)
    }

    /// The same key with another scope. A key without a `create` stays [`Scope::Provided`], and a
    /// key with one cannot become provided (`scope` [`Scope::Provided`] leaves it as it is).
    #[deprecated(note = "declare the key with the constructor of its lifetime: `per_call`, `shared` or `provided`")]
    #[must_use]
    pub const fn with_scope(self, scope: Scope) -> Self {
        if matches!(self.create, Create::None) || matches!(scope, Scope::Provided) {
            self
        } else {
            Self { scope, ..self }
        }
    }
}

impl<T: 'static> DependencyKey<T> {
    /// The same key with a synchronous close: the registry calls `close` with the value it created
    /// when it is closed or dropped. Only [`Scope::Registry`] values are closed this way (a
    /// per-call value is dropped when its call ends); a provided or overriding value belongs to
    /// whoever made it and is never closed by the registry.
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

    /// `true` for a key without a `create` ([`DependencyKey::provided`]).
    pub const fn is_provided(&self) -> bool {
        matches!(self.create, Create::None)
    }

    /// Resolves the key in `ctx` ([`ToolContext::resolve`]), for `#[depends(..)]` written `name`
    /// (`DB`), which its errors then call the key: without a bound on `T`, which the constructor
    /// checked.
    pub(crate) fn resolve_in<'a>(
        &'a self,
        ctx: &'a ToolContext,
        name: &'static str,
    ) -> BoxFuture<'a, Result<T, ToolError>> {
        (self.resolve)(ctx, self, name)
    }

    /// Makes a value with the key's `create`; [`ToolContext::resolve`] never asks a
    /// [provided](DependencyKey::provided) key (it has none), which would get an error.
    pub(crate) async fn create(&self, ctx: &ToolContext) -> Result<T, DependencyError> {
        match &self.create {
            Create::None => Err(DependencyError(format!(
                "the provided key with id {:?} has no `create`: give it a value with `RegistryBuilder::provide`",
                self.id
            ))),
            Create::Sync(create) => create(ctx),
            Create::Async(create) => create(ctx).await,
        }
    }

    /// The close of a value this key created, when the key declares one; `name` says how a
    /// failure of it names the key.
    pub(crate) fn closer(&self, value: AnyValue, name: impl FnOnce() -> DependencyName) -> Option<Closer>
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
        Some(Closer::new(format!("dependency {}", name()), run))
    }
}

impl<T> fmt::Debug for DependencyKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DependencyKey").field("id", &self.id).field("scope", &self.scope).finish()
    }
}

/// One `#[depends(KEY)]` of a `#[tool]` function, as its [`ToolSpec`](crate::ToolSpec) records
/// it for the registry's checks: that every [provided](DependencyKey::provided) key has a value,
/// and that no tool asks the model for a value of a key's type. Used by `#[tool]`.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct DependencyUse {
    pub(crate) id: &'static str,
    /// The key as the user wrote it in `#[depends(..)]` (`DB`, `crate::db::DB`), which the
    /// registry's errors name; the id for a key named by the generated code (a method's instance).
    pub(crate) name: &'static str,
    pub(crate) provided: bool,
    /// `std::any::type_name` of the key's value type.
    pub(crate) value_type: fn() -> &'static str,
}

impl DependencyUse {
    /// The use of `key`.
    pub const fn of<T>(key: &DependencyKey<T>) -> Self {
        Self { id: key.id, name: key.id, provided: key.is_provided(), value_type: std::any::type_name::<T> }
    }

    /// The use of `key`, written `name` in its `#[depends(..)]`.
    pub const fn named(self, name: &'static str) -> Self {
        Self { name, ..self }
    }
}
