//! The [`Tool`] trait, the definition a model sees, and the static form `#[tool]` generates.

use std::sync::OnceLock;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::ToolContext;
use crate::decode::Decoding;
use crate::error::{BoxError, ToolError, ToolOrigin};
use crate::resource::Resource;
use crate::result::ToolResult;

/// What a model is told about a tool: its name, description and the canonical JSON Schema of its
/// arguments. Provider shapes are projections of it (see [`crate::provider`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The tool name (`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`, the intersection of what every provider accepts).
    pub name: String,
    /// The description: the function's doc comment, or the `description` option.
    pub description: String,
    /// The canonical JSON Schema of the arguments object (see [`crate::schema`]).
    pub input_schema: Value,
    /// The set the tool belongs to (`"fs"`, `"todo"`, ...), used to select groups of tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<String>,
    /// Free-form tags for permission policies and MCP annotations (`read_only`, `destructive`,
    /// `idempotent`, `external`, ...), in declaration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The tool's wish for OpenAI strict mode: `Some(true)` asks for it, `Some(false)` refuses it,
    /// `None` leaves the choice to the projection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// The JSON Schema of the tool's result value, for a tool whose result is a JSON object it
    /// declares (`#[tool(output_schema)]`, see [`crate::schema::output_schema`]); `None` otherwise.
    /// MCP serves it as the tool's `outputSchema`; provider projections leave it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Who may call the tool: the model directly, a program it wrote, or both ([`Callers`]);
    /// `#[tool(callers = ...)]` sets it. Default [`Callers::Direct`] (left out when serialized;
    /// otherwise `"code"` or `"both"`). The provider projections show it as `allowed_callers`.
    #[serde(default, skip_serializing_if = "Callers::is_direct")]
    pub callers: Callers,
}

/// Who may call a tool: the model directly, a program the model wrote (code mode: `tool-code`,
/// Anthropic's programmatic tool calling, OpenAI's programmatic tool calling), or both.
///
/// Declared with `#[tool(callers = direct | code | both)]` (or
/// `DynamicTool::with_callers`, feature `dynamic`) and carried in the field
/// [`ToolDefinition::callers`](field@ToolDefinition::callers); undeclared is [`Callers::Direct`], the providers' default, so a
/// tool opts in to being called from code. Serialized in lower case (`"direct"`, `"code"`,
/// `"both"`). The provider projections show a declared value as Anthropic's and OpenAI's
/// `allowed_callers` ([`crate::provider`]). It decides what is offered and listed, never what is
/// allowed: the permission policy and approval judge a call from code like any other.
///
/// Before the field, the value was carried as the tag `callers:code` / `callers:both` among
/// [`ToolDefinition::tags`]. That tag is still read, deprecated:
/// [`Registry::definitions`](crate::Registry::definitions) shows a definition whose field is
/// `Direct` and that carries it with the tag's value in the field, and so does
/// [`ToolDefinition::legacy_callers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Callers {
    /// Only the model, by a direct tool call (the default).
    #[default]
    Direct,
    /// Only a program the model wrote.
    Code,
    /// Both.
    Both,
}

impl Callers {
    /// `true` when the model may call the tool directly.
    pub const fn direct(self) -> bool {
        matches!(self, Callers::Direct | Callers::Both)
    }

    /// `true` when a program may call the tool.
    pub const fn code(self) -> bool {
        matches!(self, Callers::Code | Callers::Both)
    }

    /// `true` for [`Callers::Direct`], the default (serde leaves it out).
    pub const fn is_direct(&self) -> bool {
        matches!(self, Callers::Direct)
    }

    /// The legacy tag that declared it: `callers:code`, `callers:both`; `None` for
    /// [`Callers::Direct`], which needs no tag.
    #[deprecated(
        note = "set the field `ToolDefinition::callers` (`#[tool(callers = ...)]`, `DynamicTool::with_callers`)"
    )]
    pub const fn tag(self) -> Option<&'static str> {
        match self {
            Callers::Direct => None,
            Callers::Code => Some("callers:code"),
            Callers::Both => Some("callers:both"),
        }
    }
}

impl ToolDefinition {
    /// Who may call the tool, as [`ToolDefinition::legacy_callers`] reads it: the method of
    /// the releases that carried it as a tag.
    #[deprecated(note = "read the field `ToolDefinition::callers`")]
    pub fn callers(&self) -> Callers {
        self.legacy_callers()
    }

    /// Who may call the tool: the field [`ToolDefinition::callers`](field@ToolDefinition::callers), or, when it is
    /// [`Callers::Direct`], the last legacy tag `callers:direct`, `callers:code` or
    /// `callers:both` (deprecated, see [`Callers`]).
    pub fn legacy_callers(&self) -> Callers {
        if !self.callers.is_direct() {
            return self.callers;
        }
        self.tags
            .iter()
            .rev()
            .find_map(|tag| match tag.as_str() {
                "callers:direct" => Some(Callers::Direct),
                "callers:code" => Some(Callers::Code),
                "callers:both" => Some(Callers::Both),
                _ => None,
            })
            .unwrap_or_default()
    }
}

/// Whether `name` follows the tool-name rule `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`, the intersection of
/// the tool-name rules of every provider ([`ToolDefinition::name`]): the rule `#[tool]` checks at
/// compile time, and the registry and `DynamicTool` (cargo feature `dynamic`) at run time.
pub fn is_valid_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.len() <= 64
}

/// How a tool wants to be run and described, from the options of `#[tool(...)]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolMeta {
    /// A plain `fn` run on tokio's blocking pool, off the async workers: every plain `fn` tool
    /// but an `#[tool(inline)]` one (`#[tool(blocking)]` says the default); `false` for an
    /// `async fn`.
    pub blocking: bool,
    /// `#[tool(sequential)]`: runs alone, never concurrently with the other calls of a turn.
    pub sequential: bool,
    /// `#[tool(timeout_ms = N)]`: the call fails after N milliseconds (an `async fn` or a
    /// plain `fn` on the blocking pool: with `inline` the option is a compile error).
    pub timeout_ms: Option<u64>,
    /// `#[tool(strict)]` / `#[tool(strict = false)]`: the OpenAI strict-mode wish.
    pub strict: Option<bool>,
    /// `#[tool(tags(read_only, external))]`.
    pub tags: &'static [&'static str],
    /// `#[tool(defer)]`: the tool is deferred, listed only through tool search (see
    /// [`Tool::deferred`]).
    pub defer: bool,
    /// `#[tool(callers = code | both)]`: who may call the tool ([`ToolDefinition::callers`](field@ToolDefinition::callers)).
    pub callers: Callers,
}

impl ToolMeta {
    /// No option set.
    pub const DEFAULT: ToolMeta = ToolMeta {
        blocking: false,
        sequential: false,
        timeout_ms: None,
        strict: None,
        tags: &[],
        defer: false,
        callers: Callers::Direct,
    };

    /// Used by `#[tool]`.
    #[doc(hidden)]
    pub const fn new(
        blocking: bool,
        sequential: bool,
        timeout_ms: Option<u64>,
        strict: Option<bool>,
        tags: &'static [&'static str],
    ) -> Self {
        Self { blocking, sequential, timeout_ms, strict, tags, defer: false, callers: Callers::Direct }
    }

    /// Used by `#[tool(callers = ...)]`.
    #[doc(hidden)]
    #[must_use]
    pub const fn with_callers(mut self, callers: Callers) -> Self {
        self.callers = callers;
        self
    }
}

impl Default for ToolMeta {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A tool the registry can dispatch to. Object safe: the registry holds `Arc<dyn Tool>`.
///
/// `#[tool]` implements it for you (through [`ToolSpec`]); implement it by hand for tools whose
/// schema is only known at run time.
pub trait Tool: Send + Sync + 'static {
    /// The tool's definition, built once.
    fn definition(&self) -> &ToolDefinition;

    /// The tool name (the definition's, unless the tool knows it without building the schema).
    fn name(&self) -> &str {
        &self.definition().name
    }

    /// The tool's set, if any.
    fn set(&self) -> Option<&str> {
        self.definition().set.as_deref()
    }

    /// Where the tool is defined, for error messages such as duplicate names. Default: nothing
    /// known ([`ToolOrigin::default`]); the registry then names the place the tool was
    /// registered.
    fn origin(&self) -> ToolOrigin {
        ToolOrigin::default()
    }

    /// `true` when the tool must run alone, not concurrently with the other calls of a turn.
    fn sequential(&self) -> bool {
        false
    }

    /// The resources the tool's calls hold while they run, and its concurrency limits
    /// (`#[tool(resource ..)]`, `#[tool(concurrency ..)]`; see [`Resource`]). Default: none, and
    /// the calls take no lock.
    fn resources(&self) -> &[Resource] {
        &[]
    }

    /// The tool's own time limit, if any.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// The argument (its property name in the arguments object) whose value is the call's
    /// idempotency key (`#[tool(idempotency_key = "request_id")]`; the rules:
    /// [`crate::idempotency`]). Default: none, only the call's own key counts.
    fn idempotency_key_argument(&self) -> Option<&str> {
        None
    }

    /// `true` when the tool asks to be deferred (`#[tool(defer)]`): a registry then lists it only
    /// through tool search ([`Registry::search`](crate::Registry::search) and the projections of
    /// [`crate::provider::Deferral`]), and still calls it by name like any other. A registry may
    /// defer more tools ([`RegistryBuilder::defer_sets`](crate::RegistryBuilder::defer_sets),
    /// [`defer_tools`](crate::RegistryBuilder::defer_tools)). Default `false`.
    fn deferred(&self) -> bool {
        false
    }

    /// `false` when the tool never reads the context it is called with (no `&ToolContext`
    /// parameter and no dependency): the registry then calls it with the caller's context as it
    /// is, instead of deriving a per-call context (an `Arc` holding a copy of the call id, made
    /// and dropped on every call). Default `true`, which is always correct.
    fn reads_context(&self) -> bool {
        true
    }

    /// What a call with `arguments` (the raw JSON text) would do, for the person asked to approve
    /// it: the preview hook of a tool that needs approval ([`CONFIRM_TAG`](crate::talk::CONFIRM_TAG)
    /// or a [`confirm_tag`](crate::RegistryBuilder::confirm_tag)). The registry calls it before it
    /// asks, in the call's own context (dependencies resolve as for the call), and shows its text in place of the tool and its arguments: in the approval question,
    /// and in the preview of an [approval token](crate::approvals)'s refusal. A preview must change
    /// nothing; an `Err` refuses the call with that error (what the call itself would have met,
    /// such as a path outside the workspace). A tool with [secret](crate::Secret) arguments gets
    /// them redacted. `#[tool(preview = path)]` sets it to a [`PreviewFn`]. Default: `None`, the
    /// tool and its arguments are shown ([`shown_arguments`](crate::talk::shown_arguments)).
    fn preview<'a>(
        &'a self,
        arguments: &'a str,
        ctx: &'a ToolContext,
    ) -> Option<BoxFuture<'a, Result<String, ToolError>>> {
        let _ = (arguments, ctx);
        None
    }

    /// Decodes `arguments` (raw JSON text) as [`call`](Tool::call) would, without running the
    /// tool: `Some(Ok(()))` when `call` would get past decoding, `Some(Err(e))` with the error
    /// `call` would return ([`ToolError::InvalidArguments`]), `None` (the default) when the tool
    /// decodes only inside `call` (a tool written by hand, an imported tool whose server decodes).
    ///
    /// The registry asks it before it asks for approval ("Approval" on
    /// [`Registry`](crate::Registry)), so that no person approves, and no approval token is minted
    /// or spent on, a call whose arguments the tool would refuse. `#[tool]` answers with the
    /// strict decoding of [`crate::decode`]; a [`DynamicTool`](crate::DynamicTool) with its
    /// [`validate`](crate::DynamicTool::validate). It must change nothing and be what `call`
    /// decides: a tool that answers `Some(Ok(()))` and then refuses the same arguments in `call`
    /// has its approval spent on a call that did not run.
    fn check_arguments(&self, arguments: &str) -> Option<Result<(), ToolError>> {
        let _ = arguments;
        None
    }

    /// Decodes `arguments` (raw JSON text, see [`crate::decode`]) and runs the tool.
    ///
    /// # Errors
    /// Any [`ToolError`]; the registry turns it into an error result for the model.
    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>>;

    /// Runs the call to its end on the calling thread, without a future, when the tool's work is
    /// synchronous: `Some` with the outcome, which must be what [`call`](Tool::call)'s future
    /// gives for the same arguments and context. `None` (the default) when the tool has no
    /// synchronous form; the registry then polls `call`'s future.
    ///
    /// `#[tool]` answers here for an `#[tool(inline)]` plain `fn` that takes no dependency. The registry calls it only on its fast path, where it would poll
    /// `call`'s future once, inline, anyway (see "How a call runs" on
    /// [`Registry`](crate::Registry)): an admitted call of a tool that does not [read its
    /// context](Tool::reads_context), with no time limit, no argument repair, no `tracing`
    /// subscriber recording it, a caller's token that is not cancelled, a permission policy that
    /// answers through [`check_now`](crate::PermissionPolicy::check_now) and an output store that
    /// needs nothing that waits. Elsewhere it polls `call`'s future. A panic here is caught like a
    /// panic in `call`'s future.
    ///
    /// # Errors
    /// As [`call`](Tool::call).
    fn call_now(&self, arguments: &str, ctx: &ToolContext) -> Option<Result<ToolResult, ToolError>> {
        let _ = (arguments, ctx);
        None
    }

    /// Releases what the tool holds (a connection, a child process). A registry calls it once,
    /// when it is closed or dropped ([`Registry::close`](crate::Registry::close)); a tool shared by
    /// several registries is closed by each. Default: nothing to release.
    ///
    /// # Errors
    /// Any error; the registry reports it and still closes its other resources.
    fn close(&self) -> BoxFuture<'_, Result<(), BoxError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

impl<T: Tool + ?Sized> Tool for &'static T {
    fn definition(&self) -> &ToolDefinition {
        (**self).definition()
    }

    fn name(&self) -> &str {
        (**self).name()
    }

    fn set(&self) -> Option<&str> {
        (**self).set()
    }

    fn origin(&self) -> ToolOrigin {
        (**self).origin()
    }

    fn sequential(&self) -> bool {
        (**self).sequential()
    }

    fn resources(&self) -> &[Resource] {
        (**self).resources()
    }

    fn timeout(&self) -> Option<Duration> {
        (**self).timeout()
    }

    fn idempotency_key_argument(&self) -> Option<&str> {
        (**self).idempotency_key_argument()
    }

    fn deferred(&self) -> bool {
        (**self).deferred()
    }

    fn reads_context(&self) -> bool {
        (**self).reads_context()
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        (**self).call(arguments, ctx)
    }

    fn check_arguments(&self, arguments: &str) -> Option<Result<(), ToolError>> {
        (**self).check_arguments(arguments)
    }

    fn preview<'a>(
        &'a self,
        arguments: &'a str,
        ctx: &'a ToolContext,
    ) -> Option<BoxFuture<'a, Result<String, ToolError>>> {
        (**self).preview(arguments, ctx)
    }

    fn call_now(&self, arguments: &str, ctx: &ToolContext) -> Option<Result<ToolResult, ToolError>> {
        (**self).call_now(arguments, ctx)
    }

    fn close(&self) -> BoxFuture<'_, Result<(), BoxError>> {
        (**self).close()
    }
}

/// The signature of a tool's preview hook, `#[tool(preview = path)]` ([`Tool::preview`]): given
/// a call's raw arguments and its context, the text a person reads before approving it (a file
/// tool's unified diff), computed without changing anything.
pub type PreviewFn = for<'a> fn(&'a str, &'a ToolContext) -> BoxFuture<'a, Result<String, ToolError>>;

/// What `#[tool]` hands [`ToolSpec::with_check`]: decodes a call's raw arguments into the tool's
/// arguments and drops them ([`Tool::check_arguments`]).
#[doc(hidden)]
pub type CheckFn = fn(&str) -> Result<(), ToolError>;

/// The signature of the function `#[tool]` generates to decode arguments and call the user's
/// function.
pub type InvokeFn = for<'a> fn(&'a str, &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>>;

/// The signature of the function `#[tool]` generates for a synchronous tool (an `inline` plain
/// `fn` without dependencies): decodes the arguments and calls the user's function, with no
/// future ([`Tool::call_now`]).
pub type SyncInvokeFn = fn(&str, &ToolContext) -> Result<ToolResult, ToolError>;

/// How a [`ToolSpec`] runs a call: through a future, or synchronously. Used by `#[tool]`.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum Invoke {
    /// An `async` call (an `async fn`, a dependency to resolve, a plain `fn` run on the blocking
    /// pool).
    Async(InvokeFn),
    /// A synchronous call: [`Tool::call`] runs it when its future is first polled, and
    /// [`Tool::call_now`] runs it at once.
    Sync(SyncInvokeFn),
}

/// A tool defined at compile time by `#[tool]`: a `static` with everything the registry needs.
/// The definition (with the canonical schema) is built on first use and kept for the process.
///
/// `#[tool] fn read(..)` makes it reachable as `read::TOOL` (a `&'static ToolSpec`), for
/// [`RegistryBuilder::tool`](crate::RegistryBuilder::tool).
pub struct ToolSpec {
    name: &'static str,
    description: &'static str,
    set: Option<&'static str>,
    module_path: &'static str,
    /// The source file and 1-based line of the `#[tool]` ([`ToolSpec::defined_at`]).
    file: Option<&'static str>,
    line: u32,
    meta: ToolMeta,
    schema: SchemaFn,
    output_schema: Option<fn() -> Value>,
    invoke: Invoke,
    /// See [`Tool::reads_context`].
    reads_context: bool,
    /// The keys of its `#[depends(KEY)]` parameters ([`ToolSpec::with_dependencies`]).
    dependencies: &'static [fn() -> crate::depends::DependencyUse],
    /// See [`Tool::resources`].
    resources: &'static [Resource],
    /// See [`Tool::idempotency_key_argument`].
    idempotency_key: Option<&'static str>,
    /// See [`Tool::preview`].
    preview: Option<PreviewFn>,
    /// See [`Tool::check_arguments`].
    check: Option<CheckFn>,
    definition: OnceLock<ToolDefinition>,
    decoding: OnceLock<Decoding>,
}

/// Where a [`ToolSpec`]'s schemas come from.
#[derive(Clone, Copy)]
enum SchemaFn {
    /// The canonical input schema, also decoded against ([`ToolSpec::new`]).
    Canonical(fn() -> Value),
    /// The decoding schema; the input schema is its [`hoist_union`](crate::schema::hoist_union)
    /// ([`ToolSpec::decoded`]).
    Decoding(DecodingSchema),
}

/// Where the decoding schema of a `#[tool]` function comes from. Used by `#[tool]`.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum DecodingSchema {
    /// An `#[input]` type's: its [`decoding_schema`](crate::schema::decoding_schema).
    Type(fn() -> Value),
    /// The generated arguments struct's, argument by argument
    /// ([`arguments_decoding_schema`](crate::schema::arguments_decoding_schema)).
    Arguments(&'static [crate::schema::ArgumentSchema]),
}

impl ToolSpec {
    /// A spec whose `schema` gives the canonical input schema, which arguments are also decoded
    /// against. Not meant to be called by hand.
    #[doc(hidden)]
    pub const fn new(
        name: &'static str,
        description: &'static str,
        set: Option<&'static str>,
        module_path: &'static str,
        meta: ToolMeta,
        schema: fn() -> Value,
        invoke: InvokeFn,
    ) -> Self {
        Self::with_schema(name, description, set, module_path, meta, SchemaFn::Canonical(schema), Invoke::Async(invoke))
    }

    /// Used by `#[tool]`: a spec whose `decoding_schema` gives the schema arguments are decoded
    /// against ([`crate::schema::decoding_schema`] or
    /// [`crate::schema::arguments_decoding_schema`], which keep a union root per variant); the
    /// input schema is built from it by [`hoist_union`](crate::schema::hoist_union), so the type's
    /// schema is generated once. Not meant to be called by hand.
    #[doc(hidden)]
    pub const fn decoded(
        name: &'static str,
        description: &'static str,
        set: Option<&'static str>,
        module_path: &'static str,
        meta: ToolMeta,
        decoding_schema: DecodingSchema,
        invoke: Invoke,
    ) -> Self {
        Self::with_schema(name, description, set, module_path, meta, SchemaFn::Decoding(decoding_schema), invoke)
    }

    const fn with_schema(
        name: &'static str,
        description: &'static str,
        set: Option<&'static str>,
        module_path: &'static str,
        meta: ToolMeta,
        schema: SchemaFn,
        invoke: Invoke,
    ) -> Self {
        Self {
            name,
            description,
            set,
            module_path,
            file: None,
            line: 0,
            meta,
            schema,
            output_schema: None,
            invoke,
            reads_context: true,
            dependencies: &[],
            resources: &[],
            idempotency_key: None,
            preview: None,
            check: None,
            definition: OnceLock::new(),
            decoding: OnceLock::new(),
        }
    }

    /// Used by `#[tool]`: the source file (as `file!()` writes it) and the 1-based line of the
    /// function, which [`Tool::origin`] reports; not meant to be called by hand.
    #[doc(hidden)]
    #[must_use]
    pub const fn defined_at(mut self, file: &'static str, line: u32) -> Self {
        self.file = Some(file);
        self.line = line;
        self
    }

    /// Used by `#[tool(defer)]`: the tool asks to be deferred ([`Tool::deferred`]); not meant to
    /// be called by hand.
    #[doc(hidden)]
    #[must_use]
    pub const fn deferred(mut self) -> Self {
        self.meta.defer = true;
        self
    }

    /// Used by `#[tool(output_schema)]`: the function giving the result's schema
    /// ([`ToolDefinition::output_schema`]); not meant to be called by hand.
    #[doc(hidden)]
    #[must_use]
    pub const fn with_output_schema(mut self, output_schema: fn() -> Value) -> Self {
        self.output_schema = Some(output_schema);
        self
    }

    /// Used by `#[tool]` for a function that takes neither a `&ToolContext` nor a dependency
    /// ([`Tool::reads_context`] is then `false`); not meant to be called by hand.
    #[doc(hidden)]
    #[must_use]
    pub const fn context_free(mut self) -> Self {
        self.reads_context = false;
        self
    }

    /// Used by `#[tool]`: the keys of the function's `#[depends(KEY)]` parameters, which
    /// [`RegistryBuilder::build`](crate::RegistryBuilder::build) checks for provided keys without
    /// a value; not meant to be called by hand.
    #[doc(hidden)]
    #[must_use]
    pub const fn with_dependencies(mut self, dependencies: &'static [fn() -> crate::depends::DependencyUse]) -> Self {
        self.dependencies = dependencies;
        self
    }

    /// Used by `#[tool(resource ..)]` and `#[tool(concurrency ..)]`: the resources the tool's calls
    /// hold ([`Tool::resources`]); not meant to be called by hand.
    #[doc(hidden)]
    #[must_use]
    pub const fn with_resources(mut self, resources: &'static [Resource]) -> Self {
        self.resources = resources;
        self
    }

    /// Used by `#[tool(idempotency_key = "..")]`: the argument whose value is the call's
    /// idempotency key ([`Tool::idempotency_key_argument`]); not meant to be called by hand.
    #[doc(hidden)]
    #[must_use]
    pub const fn idempotency_key_argument(mut self, argument: &'static str) -> Self {
        self.idempotency_key = Some(argument);
        self
    }

    /// Used by `#[tool(preview = path)]`: the tool's preview hook ([`Tool::preview`]); not meant
    /// to be called by hand.
    #[doc(hidden)]
    #[must_use]
    pub const fn with_preview(mut self, preview: PreviewFn) -> Self {
        self.preview = Some(preview);
        self
    }

    /// Used by `#[tool]`: the decoding of the tool's arguments alone ([`Tool::check_arguments`]);
    /// not meant to be called by hand.
    #[doc(hidden)]
    #[must_use]
    pub const fn with_check(mut self, check: CheckFn) -> Self {
        self.check = Some(check);
        self
    }

    /// The [provided](crate::DependencyKey::provided) keys the tool's `#[depends]` parameters
    /// ask for, as `(id, the key as written)`, in parameter order.
    pub(crate) fn provided_keys(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        self.dependencies.iter().map(|of| of()).filter(|used| used.provided).map(|used| (used.id, used.name))
    }

    /// The keys of the tool's `#[depends]` parameters, as `(id, the key as written, type_name of
    /// the value type)`, in parameter order.
    pub(crate) fn key_types(&self) -> impl Iterator<Item = (&'static str, &'static str, &'static str)> + '_ {
        self.dependencies.iter().map(|of| of()).map(|used| (used.id, used.name, (used.value_type)()))
    }

    /// The model arguments the registry compares with the dependency keys' types, as
    /// `(property name, type_name of the decoded type)`, in argument order: none for a tool of
    /// an `#[input]` type or a hand-written schema.
    pub(crate) fn compared_arguments(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        let arguments = match self.schema {
            SchemaFn::Decoding(DecodingSchema::Arguments(arguments)) => arguments,
            SchemaFn::Canonical(_) | SchemaFn::Decoding(DecodingSchema::Type(_)) => &[],
        };
        arguments.iter().filter_map(|argument| argument.model_type().map(|ty| (argument.name(), ty)))
    }

    /// The options the tool was declared with.
    pub const fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    /// The tool name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The tool's set, if any.
    pub const fn set(&self) -> Option<&'static str> {
        self.set
    }

    /// The canonical input schema (built once).
    pub fn input_schema(&self) -> &Value {
        &self.definition().input_schema
    }

    /// The schema arguments are decoded against, with what the decoder knows of it (built once).
    pub(crate) fn decoding(&self) -> &Decoding {
        self.decoding.get_or_init(|| {
            Decoding::new(match self.schema {
                // (An `#[input]` type's keys are always checked, so whether it is flat is moot.)
                SchemaFn::Canonical(schema) | SchemaFn::Decoding(DecodingSchema::Type(schema)) => {
                    crate::schema::Canonical::made_elsewhere(schema())
                }
                SchemaFn::Decoding(DecodingSchema::Arguments(arguments)) => {
                    crate::schema::arguments_decoding(arguments)
                }
            })
        })
    }
}

impl Tool for ToolSpec {
    fn definition(&self) -> &ToolDefinition {
        self.definition.get_or_init(|| ToolDefinition {
            name: self.name.to_owned(),
            description: crate::rustdoc::reflow(self.description),
            input_schema: match self.schema {
                SchemaFn::Canonical(schema) => schema(),
                SchemaFn::Decoding(_) => crate::schema::hoist_union(self.decoding().schema.clone()),
            },
            set: self.set.map(str::to_owned),
            tags: self.meta.tags.iter().map(|t| (*t).to_owned()).collect(),
            strict: self.meta.strict,
            output_schema: self.output_schema.map(|schema| schema()),
            callers: self.meta.callers,
        })
    }

    fn name(&self) -> &str {
        self.name
    }

    fn set(&self) -> Option<&str> {
        self.set
    }

    fn origin(&self) -> ToolOrigin {
        ToolOrigin { module_path: Some(self.module_path), file: self.file, line: self.line }
    }

    fn sequential(&self) -> bool {
        self.meta.sequential
    }

    fn resources(&self) -> &[Resource] {
        self.resources
    }

    fn timeout(&self) -> Option<Duration> {
        self.meta.timeout_ms.map(Duration::from_millis)
    }

    fn idempotency_key_argument(&self) -> Option<&str> {
        self.idempotency_key
    }

    fn deferred(&self) -> bool {
        self.meta.defer
    }

    fn reads_context(&self) -> bool {
        self.reads_context
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        match self.invoke {
            Invoke::Async(invoke) => invoke(arguments, ctx),
            // Runs when first polled, as an `async` tool's body does.
            Invoke::Sync(invoke) => Box::pin(futures::future::lazy(move |_| invoke(arguments, ctx))),
        }
    }

    fn preview<'a>(
        &'a self,
        arguments: &'a str,
        ctx: &'a ToolContext,
    ) -> Option<BoxFuture<'a, Result<String, ToolError>>> {
        self.preview.map(|preview| preview(arguments, ctx))
    }

    fn check_arguments(&self, arguments: &str) -> Option<Result<(), ToolError>> {
        self.check.map(|check| check(arguments))
    }

    fn call_now(&self, arguments: &str, ctx: &ToolContext) -> Option<Result<ToolResult, ToolError>> {
        match self.invoke {
            Invoke::Async(_) => None,
            Invoke::Sync(invoke) => Some(invoke(arguments, ctx)),
        }
    }
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec").field("name", &self.name).field("set", &self.set).finish_non_exhaustive()
    }
}

/// What `#[tool]` submits to `inventory`; [`Registry::discover`](crate::Registry::discover) collects
/// every one linked into the binary.
#[derive(Debug)]
pub struct ToolRegistration {
    spec: &'static ToolSpec,
}

impl ToolRegistration {
    /// Used by `#[tool]`.
    #[doc(hidden)]
    pub const fn new(spec: &'static ToolSpec) -> Self {
        Self { spec }
    }

    /// The registered tool.
    pub const fn spec(&self) -> &'static ToolSpec {
        self.spec
    }
}

inventory::collect!(ToolRegistration);

/// Every tool registration linked into this binary, in unspecified order.
pub(crate) fn registrations() -> impl Iterator<Item = &'static ToolSpec> {
    inventory::iter::<ToolRegistration>().map(ToolRegistration::spec)
}
