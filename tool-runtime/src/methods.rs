//! Tools as methods: what `#[tools]` implements for a type whose `impl` block has `#[tool]`
//! methods taking `&self`.

use std::sync::Arc;

use crate::depends::DependencyKey;
use crate::tool::ToolSpec;

/// A type whose `#[tools] impl` block defines tools as methods taking `&self`; implemented by
/// `#[tools]`, not by hand. A registry serves the methods of one instance, handed in with
/// [`RegistryBuilder::tools_of`](crate::RegistryBuilder::tools_of).
///
/// The methods are not submitted to discovery: [`Registry::discover`](crate::Registry::discover)
/// has no instance to call them on, so it never finds them.
pub trait ToolMethods: Send + Sync + Sized + 'static {
    /// One spec per `#[tool]` method, in the block's order.
    fn tools() -> &'static [&'static ToolSpec];

    /// The [provided](DependencyKey::provided) key under which a registry keeps the instance; its
    /// id is the type's module path and name (`my_crate::notes::NotesServer`). Each method's tool
    /// resolves it before the call, like a `#[depends]` parameter.
    fn instance_key() -> &'static DependencyKey<Arc<Self>>;
}
