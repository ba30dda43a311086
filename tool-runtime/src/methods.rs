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

/// What `#[tools]` submits to `inventory` for its impl block: the type's name and where the block
/// is. Discovery never adds these tools (it has no instance); it names the blocks in
/// [`RegistryError::NothingDiscovered`](crate::RegistryError::NothingDiscovered), so that a
/// binary of `#[tools]` methods alone is pointed at
/// [`tools_of`](crate::RegistryBuilder::tools_of).
#[derive(Debug)]
pub struct MethodsRegistration {
    type_name: &'static str,
    file: &'static str,
    line: u32,
}

impl MethodsRegistration {
    /// Used by `#[tools]`.
    #[doc(hidden)]
    pub const fn new(type_name: &'static str, file: &'static str, line: u32) -> Self {
        Self { type_name, file, line }
    }
}

inventory::collect!(MethodsRegistration);

/// Every `#[tools]` impl block linked into this binary, as `Type (file:line)`, sorted.
pub(crate) fn methods_blocks() -> Vec<String> {
    let mut blocks: Vec<String> = inventory::iter::<MethodsRegistration>()
        .map(|block| format!("`{}` ({}:{})", block.type_name, block.file, block.line))
        .collect();
    blocks.sort();
    blocks
}
