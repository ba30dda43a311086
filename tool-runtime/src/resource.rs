//! What a tool declares it touches: [`Resource`], the declaration behind `#[tool(resource ..)]` and
//! `#[tool(concurrency ..)]`. Plain data; the registry's lock manager (`locks/`) acts on it.

/// One resource a tool's calls hold while their body runs, or one concurrency limit: a lock is a
/// limit of one call per resource ("Resource locks and concurrency limits" on
/// [`Registry`](crate::Registry)).
///
/// Declared with `#[tool(...)]` (the [`#[tool]` reference](crate::tool)):
///
/// | option | `kind` | `argument` | `permits` | `per_tool` |
/// |---|---|---|---|---|
/// | `resource` | `"tool"` | `None` | 1 | `true` |
/// | `resource = "id"` | `"id"` | `Some("id")` | 1 | `false` |
/// | `resource(path = "file_path")` | `"path"` | `Some("file_path")` | 1 | `false` |
/// | `resource(plan)` | `"plan"` | `None` | 1 | `false` |
/// | `concurrency = N` | `"tool"` | `None` | N | `true` |
/// | `concurrency(limit = N, per = "user")` | `"user"` | `Some("user")` | N | `true` |
///
/// A resource that is not [`per_tool`](Resource::per_tool) is shared by every tool naming the same
/// kind: `write`'s `resource(path = "file_path")` and `edit`'s `resource(path = "file_path")` lock
/// the same files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resource {
    /// The kind of resource (`"path"`, `"plan"`, an argument's name): the namespace of its keys,
    /// and what the registry's [resolver](crate::locks::ResourceResolver) is asked about.
    pub kind: &'static str,
    /// The argument (its property name, as the model sends it) whose value identifies the
    /// resource; `None` for one resource of the kind (or, with `per_tool`, the whole tool).
    pub argument: Option<&'static str>,
    /// How many calls may hold one resource at once: 1 for a lock, N for `concurrency = N`.
    /// At least 1.
    pub permits: u32,
    /// `true` when the keys belong to this tool alone (a concurrency limit, or `resource` on the
    /// whole tool); `false` when every tool naming `kind` shares them.
    pub per_tool: bool,
}

impl Resource {
    /// `#[tool(resource)]`: one call of the whole tool at a time.
    pub const WHOLE_TOOL: Resource = Resource { kind: "tool", argument: None, permits: 1, per_tool: true };

    /// A lock on the resource of `kind` named by `argument`'s value (`resource(kind = "argument")`),
    /// or on the one resource of `kind` when `argument` is `None` (`resource(kind)`).
    pub const fn lock(kind: &'static str, argument: Option<&'static str>) -> Self {
        Resource { kind, argument, permits: 1, per_tool: false }
    }

    /// At most `permits` calls of the tool at once (`concurrency = N`), or, with `argument`, at
    /// most `permits` per value of that argument (`concurrency(limit = N, per = "argument")`).
    /// `permits` of 0 is read as 1 (`#[tool]` refuses 0 at compile time).
    pub const fn limit(permits: u32, argument: Option<&'static str>) -> Self {
        let kind = match argument {
            Some(argument) => argument,
            None => "tool",
        };
        let permits = if permits == 0 { 1 } else { permits };
        Resource { kind, argument, permits, per_tool: true }
    }
}
