//! [`RegistryBuilder`]: what a registry holds, and the checks of [`RegistryBuilder::build`].

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::Registry;
use crate::context::RegistryScope;
use crate::decode::RepairPolicy;
use crate::depends::DependencyKey;
use crate::error::ToolOrigin;
use crate::error::{
    KeyTypedArgument, MissingDependency, NameClash, RegistryError, UndescribedParameters, UnsupportedPattern,
};
use crate::policy::{DefaultPolicy, PermissionPolicy};
use crate::search::{CALL_TOOL, SEARCH_TOOL};
use crate::tool::{Tool, ToolSpec, is_valid_tool_name, registrations};

/// Builds a [`Registry`].
#[derive(Default)]
pub struct RegistryBuilder {
    tools: Vec<Added>,
    /// `true` when [`RegistryBuilder::discover`] ran and found no `#[tool]`.
    discovered_nothing: bool,
    /// [`tools_of`](RegistryBuilder::tools_of) was called: a binary of `#[tools]` methods alone
    /// may discover nothing.
    methods_given: bool,
    /// The filter of [`sets`](RegistryBuilder::sets) or [`tagged_sets`](RegistryBuilder::tagged_sets):
    /// the sets kept, and whether a tool without a set is kept too.
    sets: Option<(Vec<String>, bool)>,
    defer_sets: Vec<String>,
    defer_tools: Vec<String>,
    scope: RegistryScope,
    policy: Option<Arc<dyn PermissionPolicy>>,
    default_timeout: Option<Duration>,
    repair: RepairPolicy,
    output: crate::output::SharedLayer,
    /// The tags whose tools need the user's approval, beside [`CONFIRM_TAG`](crate::talk::CONFIRM_TAG).
    confirm_tags: Vec<String>,
    /// The keys given a value ([`provide`](RegistryBuilder::provide),
    /// [`override_dependency`](RegistryBuilder::override_dependency)), as `(id, type_name of
    /// the value type)`, for [`RegistryError::ArgumentsOfKeyTypes`].
    key_types: Vec<(&'static str, &'static str)>,
    /// [`require_parameter_descriptions`](RegistryBuilder::require_parameter_descriptions) was called.
    descriptions_required: bool,
    /// [`idempotency`](RegistryBuilder::idempotency), when given.
    idempotency: Option<crate::idempotency::Idempotency>,
    /// [`approval_tokens`](RegistryBuilder::approval_tokens), when given.
    approval_tokens: Option<crate::approvals::ApprovalTokens>,
    /// [`locks`](RegistryBuilder::locks); default a fresh [`LocalLocks`](crate::locks::LocalLocks).
    locks: Option<Arc<dyn crate::locks::LockStore>>,
    /// [`resource_resolver`](RegistryBuilder::resource_resolver).
    resolver: Option<Arc<dyn crate::locks::ResourceResolver>>,
    /// [`capture_content`](RegistryBuilder::capture_content) and [`meter`](RegistryBuilder::meter).
    telemetry: TelemetrySettings,
}

/// A tool added to a [`RegistryBuilder`].
struct Added {
    tool: Arc<dyn Tool>,
    /// The `#[tool]` static behind `tool`, to know the same one added twice.
    spec: Option<&'static ToolSpec>,
    /// Where the tool was added, named for a tool that does not know its [origin](Tool::origin).
    added_at: &'static std::panic::Location<'static>,
}

impl Added {
    /// What is the same for the same tool added twice: the address of its `#[tool]` static, or
    /// of what its `Arc` points to.
    fn identity(&self) -> *const () {
        match self.spec {
            Some(spec) => std::ptr::from_ref(spec).cast(),
            None => Arc::as_ptr(&self.tool).cast(),
        }
    }

    /// The tool's origin, or the place it was added when the tool does not say.
    fn origin(&self) -> ToolOrigin {
        let origin = self.tool.origin();
        if origin == ToolOrigin::default() { ToolOrigin::of_caller(self.added_at) } else { origin }
    }
}

impl RegistryBuilder {
    /// Adds every `#[tool]` function linked into the binary (see [`Registry::discover`]; not the
    /// methods of a `#[tools]` block, which [`tools_of`](RegistryBuilder::tools_of) adds with
    /// their instance). A tool added already (by [`tool`](RegistryBuilder::tool), or by an earlier
    /// `discover`) is kept once.
    ///
    /// When it finds no `#[tool]` at all and no [`tools_of`](RegistryBuilder::tools_of) is
    /// given, [`build`](RegistryBuilder::build) fails with
    /// [`RegistryError::NothingDiscovered`].
    #[must_use]
    #[track_caller]
    pub fn discover(mut self) -> Self {
        let mut specs: Vec<&'static ToolSpec> = registrations().collect();
        // inventory's order is unspecified: sort so that the registration order is stable.
        specs.sort_by(|a, b| (a.name(), a.origin()).cmp(&(b.name(), b.origin())));
        self.discovered_nothing |= specs.is_empty();
        let added_at = std::panic::Location::caller();
        self.tools.extend(specs.into_iter().map(|spec| Added { tool: Arc::new(spec), spec: Some(spec), added_at }));
        self
    }

    /// Adds one `#[tool]` function's tool: `.tool(read::TOOL)`. Adding the same one twice (also
    /// through [`discover`](RegistryBuilder::discover)) keeps it once.
    #[must_use]
    #[track_caller]
    pub fn tool(mut self, spec: &'static ToolSpec) -> Self {
        self.tools.push(Added { tool: Arc::new(spec), spec: Some(spec), added_at: std::panic::Location::caller() });
        self
    }

    /// Adds the tools of a `#[tools]` impl block, the `#[tool]` methods of `S`, served on
    /// `instance`: every call of one of them gets `&instance` (the registry keeps the `Arc` until
    /// it is dropped; the instance belongs to the program and is never closed by the registry).
    /// One instance per type: a second `tools_of` of the same type replaces the instance, and its
    /// tools are kept once. Discovery never finds these tools (it has no instance).
    #[must_use]
    #[track_caller]
    pub fn tools_of<S: crate::ToolMethods>(mut self, instance: Arc<S>) -> Self {
        let added_at = std::panic::Location::caller();
        self.tools.extend(S::tools().iter().map(|&spec| Added { tool: Arc::new(spec), spec: Some(spec), added_at }));
        self.methods_given = true;
        self.provide(S::instance_key(), instance)
    }

    /// Adds a tool implemented by hand, or a `DynamicTool` (cargo feature `dynamic`). Its name must
    /// follow the rule of `#[tool]` names, `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`
    /// ([`RegistryError::InvalidNames`] otherwise). Adding the same `Arc` twice keeps it once. A
    /// tool whose [`origin`](Tool::origin) says nothing is named in errors by the file and line
    /// of this call.
    #[must_use]
    #[track_caller]
    pub fn tool_dyn(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(Added { tool, spec: None, added_at: std::panic::Location::caller() });
        self
    }

    /// Keeps only tools whose set is one of `sets`: **a tool without a set is dropped too** (your
    /// own `#[tool]`s, unless they say `#[tool(set = "..")]`). To choose some standard sets and
    /// keep your own tools beside them, use [`tagged_sets`](RegistryBuilder::tagged_sets). The
    /// filter applies at [`build`](RegistryBuilder::build) to every tool added before or after
    /// this call; a later `sets` or `tagged_sets` replaces it.
    #[must_use]
    pub fn sets<I, S>(self, sets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.set_filter(sets, false)
    }

    /// Of the tools that belong to a set, keeps those whose set is one of `sets`; **a tool without
    /// a set is kept** (your own `#[tool]`s, usually). The way to add some of the standard tools
    /// (`tool_std::registry_builder()`, whose every tool has a set) to your own:
    /// `tool_std::registry_builder().tool(my_tool::TOOL).tagged_sets(["fs"])`, or
    /// `.discover()` instead of `.tool(..)`. As [`sets`](RegistryBuilder::sets) otherwise: applied
    /// at [`build`](RegistryBuilder::build), replaced by a later `sets` or `tagged_sets`.
    #[must_use]
    pub fn tagged_sets<I, S>(self, sets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.set_filter(sets, true)
    }

    /// The filter of [`sets`](RegistryBuilder::sets) (`untagged` false) and
    /// [`tagged_sets`](RegistryBuilder::tagged_sets) (true).
    fn set_filter<I, S>(mut self, sets: I, untagged: bool) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.sets = Some((sets.into_iter().map(Into::into).collect(), untagged));
        self
    }

    /// Requires a description of every parameter: [`build`](RegistryBuilder::build) fails with
    /// [`RegistryError::UndescribedParameters`] when a property of a tool's input schema has no
    /// `description` (nor the definition its `$ref` names), naming every such tool and property.
    /// It applies to every tool the registry keeps: `#[tool]` functions (a parameter's doc
    /// comment or `#[arg(description = "..")]`; an `#[input]` struct's field doc comments), the
    /// tools of `#[tools]` blocks, hand-written, run-time and imported tools.
    ///
    /// Off by default: a parameter without a doc comment is sent without a description, and
    /// the model has its name and type alone to go by (a tool's own description is always
    /// required: a `#[tool]` without one does not compile). A check at `build` rather than a
    /// `#[tool]` option, so that one line holds every tool of the registry to the rule,
    /// whichever crate or server defines it.
    #[must_use]
    pub fn require_parameter_descriptions(mut self) -> Self {
        self.descriptions_required = true;
        self
    }

    /// Defers every tool of these sets: they are listed only through tool search and called by
    /// name like any other (see [`Registry::is_deferred`]). Adds to earlier calls.
    #[must_use]
    pub fn defer_sets<I, S>(mut self, sets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.defer_sets.extend(sets.into_iter().map(Into::into));
        self
    }

    /// Defers the tools of these names (see [`RegistryBuilder::defer_sets`]). Adds to earlier
    /// calls.
    #[must_use]
    pub fn defer_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.defer_tools.extend(names.into_iter().map(Into::into));
        self
    }

    /// Hands in the value of a [provided](DependencyKey::provided) key (one made in `main`, such
    /// as an open database): every call this registry serves gets a clone of it (a call's own
    /// context override still wins). The value belongs to the program: the registry never closes
    /// it. Works for any key (then it is [`override_dependency`](RegistryBuilder::override_dependency)).
    #[must_use]
    pub fn provide<T>(self, key: &DependencyKey<T>, value: T) -> Self
    where
        T: Clone + Send + Sync + 'static,
    {
        self.override_dependency(key, value)
    }

    /// Overrides a dependency for every call this registry serves (a call's own context override
    /// still wins).
    #[must_use]
    pub fn override_dependency<T>(mut self, key: &DependencyKey<T>, value: T) -> Self
    where
        T: Clone + Send + Sync + 'static,
    {
        self.scope.overrides.insert(key.id(), Arc::new(value));
        self.key_types.push((key.id(), std::any::type_name::<T>()));
        self
    }

    /// Sets the [client channel](crate::ClientChannel) of every call whose context sets none
    /// ([`ToolContextBuilder::client`](crate::ToolContextBuilder::client) wins): where a program
    /// answers its tools' log messages and input requests (elicitation, sampling, roots).
    /// Default: none (an input request fails with [`TalkBackError::NoClient`](crate::TalkBackError::NoClient)).
    #[must_use]
    pub fn client(mut self, channel: impl crate::ClientChannel) -> Self {
        self.scope.client = Some(Arc::new(channel));
        self
    }

    /// Makes every call of a tool tagged `tag` ask the user's approval before it runs, as a tool
    /// tagged [`CONFIRM_TAG`](crate::talk::CONFIRM_TAG) (`confirm`) always does (e.g.
    /// `confirm_tag("destructive")`, `confirm_tag("exec")`). The question goes through the call's
    /// [client channel](crate::ClientChannel) as an elicitation (over MCP, to the client's user)
    /// after the permission policy allowed the call and before its arguments are decoded; see
    /// [`talk::approve`](crate::talk::approve) for what the model reads when the user says no or
    /// cannot be asked. Default: only `confirm`.
    #[must_use]
    pub fn confirm_tag(mut self, tag: impl Into<String>) -> Self {
        self.confirm_tags.push(tag.into());
        self
    }

    /// Sets the permission policy asked before each call (default: [`DefaultPolicy`], which
    /// refuses tools tagged `external` unless allowed by name).
    #[must_use]
    pub fn policy(mut self, policy: impl PermissionPolicy) -> Self {
        self.policy = Some(Arc::new(policy));
        self
    }

    /// Sets the time limit of tools that declare none with `#[tool(timeout_ms = N)]` (default:
    /// none). A call over its limit ends with ``tool `x` timed out after N ms``.
    ///
    /// The limit races the call's future: it ends an `async fn` at its next `.await` and a
    /// plain `fn` tool's wait for its thread on the blocking pool. It does not end an `inline` `fn`:
    /// that one runs to its end in the future's first poll, on the thread that polls the call, and its
    /// call answers as without a limit (with `#[depends]`, the limit bounds the resolution of its
    /// dependencies). Such a registry calls every tool through its future, without the fast path
    /// (see "How a call runs" on [`Registry`]).
    #[must_use]
    pub fn default_timeout(mut self, limit: Duration) -> Self {
        self.default_timeout = Some(limit);
        self
    }

    /// Repairs arguments that models send slightly wrong before they are decoded (see
    /// [`RepairPolicy`]; off by default).
    #[must_use]
    pub fn repair(mut self, policy: RepairPolicy) -> Self {
        self.repair = policy;
        self
    }

    /// Makes calls that carry an idempotency key ([`ToolCall::idempotency_key`](crate::ToolCall::idempotency_key))
    /// run at most once per key: a retry with the same key and arguments gets the first call's
    /// message (see [`crate::idempotency`] for every rule). Off by default; calls without a key
    /// are not affected.
    #[must_use]
    pub fn idempotency(mut self, idempotency: crate::idempotency::Idempotency) -> Self {
        self.idempotency = Some(idempotency);
        self
    }

    /// Binds approvals to the exact call (see [`crate::approvals`] for every rule): a call of a
    /// tool that needs approval runs with an approval token minted for that tool, those
    /// arguments and that principal, once, before its expiry; without a token the user is asked
    /// through the client channel when one can ask, else the call's error gives the preview and a
    /// token. Off by default: approval is then the question of [`confirm_tag`](Self::confirm_tag)
    /// alone.
    #[must_use]
    pub fn approval_tokens(mut self, tokens: crate::approvals::ApprovalTokens) -> Self {
        self.approval_tokens = Some(tokens);
        self
    }

    /// Applies `layer` to every message and batch (see [`crate::output`]); without it messages are
    /// returned as the tools made them. The store is the dependency
    /// [`OUTPUT_STORE`](crate::output::OUTPUT_STORE) (override it to choose one).
    #[must_use]
    pub fn output(mut self, layer: crate::output::OutputLayer) -> Self {
        self.output = Some(Arc::new(layer));
        self
    }

    /// Where the places of resource locks and concurrency limits are kept ("Resource locks and
    /// concurrency limits" on [`Registry`]). Default: a [`LocalLocks`](crate::locks::LocalLocks) of
    /// this registry's own; give one `LocalLocks` to several registries of a process so that they
    /// lock each other's resources, or a shared store (`RedisLocks`, feature `redis`) for the
    /// workers of a cluster.
    #[must_use]
    pub fn locks(mut self, store: impl crate::locks::LockStore) -> Self {
        self.locks = Some(Arc::new(store));
        self
    }

    /// Turns declared resources' values into keys where the raw value would not do (see
    /// [`ResourceResolver`](crate::locks::ResourceResolver); `tool-std`'s registry builders install
    /// the sandbox's path resolver). Default: none, every value is its own key
    /// ([`default_keys`](crate::locks::default_keys)).
    #[must_use]
    pub fn resource_resolver(mut self, resolver: impl crate::locks::ResourceResolver) -> Self {
        self.resolver = Some(Arc::new(resolver));
        self
    }

    /// The registry, sorted by tool name.
    ///
    /// # Errors
    /// Every problem of the first kind found, in this order:
    /// - [`RegistryError::NothingDiscovered`] when [`discover`](RegistryBuilder::discover) found
    ///   no `#[tool]` in the binary and no [`tools_of`](RegistryBuilder::tools_of) was given;
    /// - [`RegistryError::InvalidNames`] listing every tool whose name breaks
    ///   `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`;
    /// - [`RegistryError::DuplicateNames`] listing every name that two or more different tools
    ///   share, each with where every one of them is defined;
    /// - [`RegistryError::UnknownDeferred`] listing every name given to
    ///   [`defer_tools`](RegistryBuilder::defer_tools) that no tool has, and every set given to
    ///   [`defer_sets`](RegistryBuilder::defer_sets) that no tool is in;
    /// - [`RegistryError::ReservedNames`] when tools are deferred and a tool is named like a
    ///   meta-tool (`search_tools`, `call_tool`);
    /// - [`RegistryError::UnsupportedPatterns`] listing every `pattern` of a `#[tool]`'s schema
    ///   that decoding cannot enforce as JSON Schema reads it (from an `#[input]` type);
    /// - [`RegistryError::MissingDependencies`] listing every [provided](DependencyKey::provided)
    ///   key a `#[tool]` asks for and no [`provide`](RegistryBuilder::provide) gave a value, with
    ///   the tools that ask for it (only the tools kept by [`sets`](RegistryBuilder::sets) count);
    /// - [`RegistryError::ArgumentsOfKeyTypes`] listing every model argument of a `#[tool]` whose
    ///   type is the value type of a dependency key that a kept tool asks for or that
    ///   [`provide`](RegistryBuilder::provide) was given: a parameter that lacks its
    ///   `#[depends(KEY)]`;
    /// - [`RegistryError::UndescribedParameters`], when
    ///   [`require_parameter_descriptions`](RegistryBuilder::require_parameter_descriptions) was
    ///   called, listing every kept tool with a parameter that has no description.
    pub fn build(mut self) -> Result<Registry, RegistryError> {
        if self.discovered_nothing && !self.methods_given {
            return Err(RegistryError::NothingDiscovered { methods_blocks: crate::methods::methods_blocks() });
        }
        let mut seen = std::collections::HashSet::with_capacity(self.tools.len());
        let mut added: Vec<Added> = Vec::with_capacity(self.tools.len());
        for entry in self.tools {
            let selected = match &self.sets {
                Some((sets, untagged)) => match entry.tool.set() {
                    Some(set) => sets.iter().any(|x| x == set),
                    None => *untagged,
                },
                None => true,
            };
            if selected && seen.insert(entry.identity()) {
                added.push(entry);
            }
        }
        let invalid: Vec<(String, ToolOrigin)> = added
            .iter()
            .filter(|a| !is_valid_tool_name(a.tool.name()))
            .map(|a| (a.tool.name().to_owned(), a.origin()))
            .collect();
        if !invalid.is_empty() {
            return Err(RegistryError::InvalidNames { tools: invalid });
        }
        // A stable sort keeps the registration order among tools of one name.
        added.sort_by(|a, b| a.tool.name().cmp(b.tool.name()));
        let clashes: Vec<NameClash> = added
            .chunk_by(|a, b| a.tool.name() == b.tool.name())
            .filter(|group| group.len() > 1)
            .map(|group| NameClash {
                name: group[0].tool.name().to_owned(),
                origins: group.iter().map(Added::origin).collect(),
            })
            .collect();
        if !clashes.is_empty() {
            return Err(RegistryError::DuplicateNames { clashes });
        }
        let unsupported: Vec<UnsupportedPattern> = added
            .iter()
            .filter_map(|a| a.spec)
            .flat_map(|spec| {
                let mut found = Vec::new();
                crate::schema::patterns(&spec.definition().input_schema, "", &mut found);
                found.into_iter().filter_map(|(path, pattern)| {
                    tool_pattern::pattern_problem(pattern).map(|problem| UnsupportedPattern {
                        tool: spec.name().to_owned(),
                        path,
                        pattern: pattern.to_owned(),
                        problem,
                    })
                })
            })
            .collect();
        if !unsupported.is_empty() {
            return Err(RegistryError::UnsupportedPatterns { patterns: unsupported });
        }
        // By id, each with the key as the first tool's `#[depends(..)]` wrote it.
        if self.descriptions_required {
            let undescribed: Vec<UndescribedParameters> = added
                .iter()
                .filter_map(|a| {
                    let parameters = undescribed_parameters(&a.tool.definition().input_schema);
                    (!parameters.is_empty())
                        .then(|| UndescribedParameters { tool: a.tool.name().to_owned(), parameters })
                })
                .collect();
            if !undescribed.is_empty() {
                return Err(RegistryError::UndescribedParameters { tools: undescribed });
            }
        }
        let mut missing: std::collections::BTreeMap<&'static str, (&'static str, Vec<String>)> =
            std::collections::BTreeMap::new();
        for entry in &added {
            for (id, name) in entry.spec.into_iter().flat_map(ToolSpec::provided_keys) {
                if !self.scope.overrides.contains_key(id) {
                    let (_, tools) = missing.entry(id).or_insert((name, Vec::new()));
                    if !tools.iter().any(|t| t == entry.tool.name()) {
                        tools.push(entry.tool.name().to_owned());
                    }
                }
            }
        }
        if !missing.is_empty() {
            let missing =
                missing.into_values().map(|(name, tools)| MissingDependency { key: name.to_owned(), tools }).collect();
            return Err(RegistryError::MissingDependencies { missing });
        }
        let key_typed = key_typed_arguments(&added, &self.key_types);
        if !key_typed.is_empty() {
            return Err(RegistryError::ArgumentsOfKeyTypes { arguments: key_typed });
        }
        // The statics the runtime's dependency errors name: each key as the first tool (by name)
        // wrote it in its `#[depends(..)]`.
        for (id, name, _) in added.iter().filter_map(|a| a.spec).flat_map(ToolSpec::key_types) {
            self.scope.names.entry(id).or_insert(name);
        }
        let tools: Vec<Arc<dyn Tool>> = added.into_iter().map(|a| a.tool).collect();
        let deferred = deferral(&tools, &self.defer_sets, &self.defer_tools)?;
        let names: Vec<Arc<str>> = tools.iter().map(|t| Arc::from(t.name())).collect();
        let approval = tools
            .iter()
            .map(|tool| {
                let tags = &tool.definition().tags;
                std::iter::once(crate::talk::CONFIRM_TAG)
                    .chain(self.confirm_tags.iter().map(String::as_str))
                    .find(|wanted| tags.iter().any(|tag| tag == wanted))
                    .map(Arc::from)
            })
            .collect();
        let secret: Vec<bool> =
            tools.iter().map(|tool| crate::secret::has_secrets(&tool.definition().input_schema)).collect();
        let index = names.iter().enumerate().map(|(i, name)| (name.clone(), i)).collect();
        let output = self.output.map(|layer| match layer.for_tools(names.iter().map(|n| &**n)) {
            Some(adjusted) => Arc::new(adjusted),
            None => layer,
        });
        let mut scope = self.scope;
        // The keys calls forward are HMACs under the idempotency server key, when there is one.
        scope.forward_secret = self.idempotency.as_ref().map(crate::idempotency::Idempotency::key_bytes);
        Ok(Registry {
            tools,
            names,
            index,
            definitions: OnceLock::new(),
            deferred,
            approval,
            any_secret: secret.contains(&true),
            idempotency: self.idempotency,
            approval_tokens: self.approval_tokens,
            secret,
            search_index: OnceLock::new(),
            scope: Arc::new(scope),
            policy: self.policy.unwrap_or_else(|| Arc::new(DefaultPolicy::new())),
            default_timeout: self.default_timeout,
            repair: self.repair,
            output,
            locks: self.locks.unwrap_or_else(|| Arc::new(crate::locks::LocalLocks::new())),
            resolver: self.resolver,
            closed: AtomicBool::new(false),
            telemetry: self.telemetry.into_telemetry(),
        })
    }
}

/// The properties of an input schema, in its order, that have no description: no non-empty
/// `description` of their own, nor on the definition a `$ref` of theirs names (`#/$defs/..`).
fn undescribed_parameters(schema: &serde_json::Value) -> Vec<String> {
    let described = |value: &serde_json::Value| {
        value.get("description").and_then(serde_json::Value::as_str).is_some_and(|d| !d.trim().is_empty())
    };
    let Some(properties) = schema.get("properties").and_then(serde_json::Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .filter(|(_, property)| {
            let referenced = property
                .get("$ref")
                .and_then(serde_json::Value::as_str)
                .and_then(|reference| reference.strip_prefix('#'))
                .and_then(|pointer| schema.pointer(pointer));
            !described(property) && !referenced.is_some_and(described)
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// The model arguments of `added` whose type is the value type of a key (one a tool asks for
/// with `#[depends]`, or one of `given`), in tool name order (`added` is sorted), then argument
/// order; see [`RegistryError::ArgumentsOfKeyTypes`].
fn key_typed_arguments(added: &[Added], given: &[(&'static str, &'static str)]) -> Vec<KeyTypedArgument> {
    // The keys by value type, each by id with the key as a `#[depends(..)]` wrote it (its id
    // when only `given` has it).
    let mut keys: std::collections::BTreeMap<&'static str, std::collections::BTreeMap<&'static str, &'static str>> =
        std::collections::BTreeMap::new();
    let used = added.iter().filter_map(|a| a.spec).flat_map(ToolSpec::key_types);
    for (id, name, type_name) in used.chain(given.iter().map(|&(id, type_name)| (id, id, type_name))) {
        if !of_std_alone(type_name) {
            keys.entry(type_name).or_default().entry(id).or_insert(name);
        }
    }
    if keys.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    for spec in added.iter().filter_map(|a| a.spec) {
        for (argument, type_name) in spec.compared_arguments() {
            let inner = type_name
                .strip_prefix("core::option::Option<")
                .and_then(|rest| rest.strip_suffix('>'))
                .unwrap_or(type_name);
            if let Some(ids) = keys.get(type_name).or_else(|| keys.get(inner)) {
                found.push(KeyTypedArgument {
                    tool: spec.name().to_owned(),
                    argument: argument.to_owned(),
                    type_name: type_name.to_owned(),
                    keys: {
                        let mut names: Vec<String> = ids.values().map(|&name| name.to_owned()).collect();
                        names.sort();
                        names
                    },
                });
            }
        }
    }
    found
}

/// Whether a [`std::any::type_name`] names the standard library's types, `serde_json`'s and
/// primitives alone (`alloc::vec::Vec<alloc::string::String>`, `[u8; 4]`): data as often as
/// state, so an argument of such a type is never taken for a forgotten `#[depends]`.
fn of_std_alone(type_name: &str) -> bool {
    const PRIMITIVES: &[&str] = &[
        "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
        "f32", "f64", "mut", "const", "dyn",
    ];
    const CRATES: &[&str] = &["std::", "core::", "alloc::", "serde_json::"];
    type_name
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .filter(|word| !word.is_empty() && !word.bytes().all(|b| b.is_ascii_digit()))
        .all(|word| CRATES.iter().any(|c| word.starts_with(c)) || PRIMITIVES.contains(&word))
}

/// Which tools are deferred: by their own wish, their set or their name.
///
/// # Errors
/// [`RegistryError::UnknownDeferred`], [`RegistryError::ReservedNames`] (see
/// [`RegistryBuilder::build`]).
fn deferral(tools: &[Arc<dyn Tool>], sets: &[String], names: &[String]) -> Result<Vec<bool>, RegistryError> {
    let unknown_names: Vec<String> = names.iter().filter(|n| !tools.iter().any(|t| t.name() == *n)).cloned().collect();
    let unknown_sets: Vec<String> =
        sets.iter().filter(|s| !tools.iter().any(|t| t.set() == Some(s.as_str()))).cloned().collect();
    if !unknown_names.is_empty() || !unknown_sets.is_empty() {
        return Err(RegistryError::UnknownDeferred {
            names: unknown_names,
            sets: unknown_sets,
            available_sets: {
                let mut all: Vec<String> = tools.iter().filter_map(|t| t.set().map(str::to_owned)).collect();
                all.sort();
                all.dedup();
                all
            },
        });
    }
    let deferred: Vec<bool> = tools
        .iter()
        .map(|t| {
            t.deferred() || t.set().is_some_and(|s| sets.iter().any(|x| x == s)) || names.iter().any(|n| n == t.name())
        })
        .collect();
    if deferred.contains(&true) {
        let reserved: Vec<String> = tools
            .iter()
            .filter(|t| t.name() == SEARCH_TOOL || t.name() == CALL_TOOL)
            .map(|t| t.name().to_owned())
            .collect();
        if !reserved.is_empty() {
            return Err(RegistryError::ReservedNames { names: reserved });
        }
    }
    Ok(deferred)
}

/// What [`RegistryBuilder::capture_content`] and [`RegistryBuilder::meter`] set.
#[derive(Default)]
struct TelemetrySettings {
    capture_content: bool,
    #[cfg(feature = "otel")]
    meter: Option<opentelemetry::metrics::Meter>,
}

impl TelemetrySettings {
    #[cfg(feature = "otel")]
    fn into_telemetry(self) -> crate::telemetry::Telemetry {
        crate::telemetry::Telemetry::with_meter(self.capture_content, self.meter)
    }

    #[cfg(not(feature = "otel"))]
    fn into_telemetry(self) -> crate::telemetry::Telemetry {
        crate::telemetry::Telemetry { capture_content: self.capture_content }
    }
}

impl RegistryBuilder {
    /// Content capture ([`crate::telemetry`]): with `true`, each call's span records its arguments
    /// (`gen_ai.tool.call.arguments`) and its result's text (`gen_ai.tool.call.result`), each
    /// through [`telemetry::captured`](crate::telemetry::captured). Off by default: the
    /// OpenTelemetry conventions make both opt-in, since they hold what users and tools said.
    #[must_use]
    pub fn capture_content(mut self, on: bool) -> Self {
        self.telemetry.capture_content = on;
        self
    }

    /// The meter the registry records `gen_ai.execute_tool.duration` on ([`crate::telemetry`]).
    /// By default, the global meter provider's (`opentelemetry::global::meter_provider()`) as it
    /// is when [`build`](RegistryBuilder::build) runs: install the provider first.
    #[cfg(feature = "otel")]
    #[must_use]
    pub fn meter(mut self, meter: opentelemetry::metrics::Meter) -> Self {
        self.telemetry.meter = Some(meter);
        self
    }
}
