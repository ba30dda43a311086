//! The `#[tool]` attribute macro. Use it through `tool_runtime::tool` (or the prelude): the
//! generated code names only `::tool_runtime::__private` (or the `crate = path` option's), so a
//! user crate needs no direct dependency on serde, schemars, tokio or inventory.
//!
//! The work is in plain `proc_macro2` modules: `options` and `model` parse and check,
//! `expand` generates code; errors from every step are collected and reported together, and the
//! user's function is always emitted so that one mistake does not cascade.

mod docs;
mod expand;
mod methods;
mod model;
mod options;
mod position;
mod resources;

use proc_macro::TokenStream;

/// Turns a function into a tool an LLM can call.
///
/// ```ignore
/// /// Read a UTF-8 file and return it with line numbers.
/// #[tool(set = "fs")]
/// async fn read(
///     /// Path relative to the workspace root.
///     file_path: String,
///     /// 0-based line to start at.
///     offset: Option<usize>,
///     #[depends(SANDBOX)] sandbox: Sandbox,
///     ctx: &ToolContext,
/// ) -> Result<String, ToolError> { ... }
/// ```
///
/// Parameters, in any order:
/// - a model argument (the default): any `Deserialize + JsonSchema` type, one property of the JSON
///   Schema. `&str` and `&[T]` are decoded as `String` and `Vec<T>` and passed borrowed.
///   `Option<T>` is not required (absent or `null` is `None`). `#[arg(default)]` (the type's
///   `Default`) or `#[arg(default = expr)]` makes it not required, with that value when absent or
///   `null` (a string literal is converted with `From`), shown in the schema as the property's
///   `default` when the type is `Serialize` (the value as serde writes it; a default of a type
///   that is not `Serialize` is not shown); `#[arg(rename = "...")]` sets the
///   property name; `#[arg(description = "...")]` its description.
///   Bounds, written as schemars writes them on a field (`#[schemars(range(..), length(..))]`),
///   go into the schema and are refused at decode with an error naming the argument, the bound
///   and the value: `#[arg(range(min = 1, max = 1000))]` on a number (`minimum`/`maximum`, both
///   inclusive, either may be left out; integer or float literals, `-1` allowed);
///   `#[arg(length(min = 1, max = 80))]` or `length(equal = N)` on a string (`minLength`/
///   `maxLength`, in Unicode code points) or a sequence (`minItems`/`maxItems`);
///   `#[arg(pattern = "^[a-z]+$")]` on a string (unanchored, as JSON Schema reads it; the
///   part of ECMA-262's syntax that the decoder's engine, `regex-lite`, reads alike: classes,
///   anchors, groups `(..)`, `(?:..)`, `(?<name>..)`, repetition; `\d`, `\w`, `\s` and `\b`
///   ASCII; no `\p{..}` classes, look-around, backreferences, inline flags such as `(?i)`,
///   POSIX classes, `\A`/`\z`, nor escapes of characters that need none, such as `\-` outside
///   a class, which ECMA-262 refuses in the Unicode mode JSON Schema asks for). A bound on a
///   type it cannot apply to, `min` above `max`, or a pattern outside that syntax is a compile
///   error that says what to write instead. On an `#[input]` type, state bounds with schemars' own
///   attributes; decoding enforces every bound the schema states.
///   A parameter whose type is state the program hands in, not data a model sends (`Arc`, `Rc`,
///   `Weak`, `Mutex`, `RwLock`, `RefCell`, `Cell`, `OnceCell`, `OnceLock`, `LazyLock`, atomics,
///   channel `Sender`/`Receiver` types, `JoinHandle`, or an `Option` of one, recognised by the
///   last segment of the type's path) is a compile error saying to mark it `#[depends(KEY)]`;
///   so is a type alias of one the `tool_runtime` check of the named type sees (`type Notes =
///   Arc<Mutex<..>>`: `Arc`, `Rc`, `Weak`, `Mutex`, `RwLock`, `RefCell`, `Cell`, atomics, or an
///   `Option` of one), an error on the type naming the type it stands for. A model argument
///   of another type that is a dependency key's value type fails `RegistryBuilder::build`
///   instead (`RegistryError::ArgumentsOfKeyTypes`).
///   `#[arg(from_model)]` keeps it a model argument.
/// - `#[input]`: one parameter whose type's fields are the top-level properties (then no other
///   model argument).
/// - `#[depends(KEY)]`: a dependency, resolved from a `DependencyKey<T>` whose `T` is the
///   parameter's type (any number); the key's constructor says how long the value lives
///   (`shared`, `per_call`, `provided`).
/// - `&ToolContext`: the call context (at most one).
///
/// Descriptions: the function's doc comment is the tool description (`#[doc =
/// include_str!("tool.md")]` allowed), reflowed as rustdoc renders it: the lines of a paragraph
/// are joined with a space, a blank line separates paragraphs, list items and fenced code blocks
/// keep their lines (`tool_runtime::rustdoc::reflow`; the same rule for every property's
/// description). A rustdoc `# Arguments`
/// section (`` * `name` - text ``) describes parameters and is removed from the description. A
/// parameter's doc comment wins over the section, and `#[arg(description)]` over both.
///
/// Options of `#[tool(...)]`:
/// - `name = "..."`: the tool name (default: the function name; a string literal, as for every
///   option below that takes text); must match
///   `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`, what every provider accepts.
/// - `description = "..."`: the description (default: the doc comment). A tool without any is
///   refused.
/// - `set = "..."`: a group such as `"fs"`, for `RegistryBuilder::sets`.
/// - `inline`: a plain `fn` cheap enough to run on the async worker thread that polls its call
///   (a few microseconds of computing, no I/O), skipping the hop to the blocking pool (not with
///   `async`, `blocking` or `timeout_ms`; see "How it runs").
/// - `blocking`: says explicitly what a plain `fn` does without `inline`: it runs on tokio's
///   blocking thread pool (not with `async` or `inline`).
/// - `sequential`: runs alone, never concurrently with the other calls of a turn.
/// - `timeout_ms = N`: the call fails after N milliseconds (N at least 1): an `async fn` is
///   stopped at its next `.await`, a plain `fn` (on the blocking pool) is left to finish on its
///   thread. With `inline` it is a compile error: an inline function cannot be stopped once it
///   has started (see "How it runs"); remove `inline` or `timeout_ms`.
/// - `strict` / `strict = false`: the OpenAI strict-mode wish, in `ToolDefinition::strict`.
/// - `tags(read_only, destructive, ...)`: free-form tags in `ToolDefinition::tags`, for
///   permission policies and MCP annotations.
/// - `crate = path`: where `tool_runtime` is, for re-exports (default `::tool_runtime`).
/// - `defer`: the tool is deferred, listed only through tool search and called by name like any
///   other (`Tool::deferred`; a registry may defer more tools by set or name).
/// - `callers = direct | code | both`: who may call the tool, the model directly or a program it
///   wrote (code mode); default `direct`. Sets the field `ToolDefinition::callers`
///   (`tool_runtime::Callers`); another value is a compile error naming the three.
/// - `resource`, `resource = "arg"`, `resource(kind = "arg", other_kind)`: resource locks (the
///   whole tool; the value of an argument, its name the kind; the value of `arg` as a resource of
///   `kind`, shared by every tool naming the kind; the one resource of `other_kind`). Every named
///   argument must be a model argument of the tool (`tool_runtime::Resource`).
/// - `concurrency = N`, `concurrency(limit = N, per = "arg")`: at most N (at least 1) calls at
///   once, or per value of `arg`; not with `resource` on the whole tool.
/// - `idempotency_key = "arg"`: on a registry with idempotent retries, the value of model
///   argument `arg` (its parameter name or its `rename`) is the call's idempotency key, winning
///   over the call's own (`tool_runtime::idempotency`). An `arg` that is no model argument is a
///   compile error listing the ones there are.
/// - `preview = path`: for a tool that needs approval (tag `confirm`), the function that says what
///   a call would do before the person is asked (`tool_runtime::Tool::preview`): a
///   `tool_runtime::PreviewFn`, `fn(&str, &ToolContext) -> BoxFuture<'_, Result<String,
///   ToolError>>` given the call's raw arguments; it must change nothing. Without it the
///   question shows the tool and its arguments.
///
/// Returns: `String`, `&'static str`, `()` (empty text), `ToolResult`, `Vec<ContentPart>`, any
/// `Serialize` type (sent as JSON), or `Result<T, E: Display>` of these (`Err` becomes an error
/// result with `E`'s alternate `Display` text, so `anyhow` chains are kept). The kind is read from
/// the return type's syntax: a type alias of `Vec<ContentPart>` is sent as JSON.
///
/// How it runs: an `async fn` runs in a future the registry polls, on the async worker thread
/// that polls the call. A plain `fn` runs on tokio's blocking thread pool (`spawn_blocking`), with
/// its own clone of the context, after its `#[depends]` parameters are resolved: however long it
/// computes or waits, the worker goes on with the other calls, `ping`, cancellation and progress,
/// and a time limit or a cancellation ends the call (the thread finishes on its own). The hop to
/// the pool and back costs microseconds per call (BENCHMARKS.md, dispatch); `inline` skips it for
/// a function of a few microseconds of computing: it then runs on the thread that polls the call,
/// in one go, called directly (`Tool::call_now`, no future) where nothing has to happen around
/// the call (see "How a call runs" on `Registry`). Once started, an `inline` function runs to its
/// end: neither a time limit nor the caller's cancellation can stop it (the cancellation is
/// checked before it starts), and while it runs nothing else runs on that thread. In a debug
/// build, a stretch of a call that held the polling thread for more than 10 ms (an `inline`
/// function, or one poll of an `async fn`) logs a `tracing` warning naming the tool, seen only
/// where a `tracing` subscriber is installed.
///
/// Generated beside the function: a hidden `static __TOOL_<fn>`, its `inventory` submission for
/// `Registry::discover()`, and a braced struct named like the function whose associated `TOOL`
/// (`&'static ToolSpec`) is for `Registry::builder().tool(read::TOOL)`. The function stays
/// callable as written.
///
/// Methods: in an `impl` block marked [`#[tools]`](macro@tools), `#[tool]` goes on methods taking
/// `&self`, with every option and parameter form above. Elsewhere `#[tool]` works on free
/// functions (in a module or a function body). Any mistake is a compile error on the token at
/// fault; all of them are reported at once.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(attr.into(), item.into()).into()
}

/// Makes the `#[tool]` methods of an inherent `impl` block tools of an instance.
///
/// ```ignore
/// #[derive(Default)]
/// struct NotesServer {
///     notes: Mutex<Vec<String>>,
/// }
///
/// #[tools]
/// impl NotesServer {
///     /// Add a note; returns its 1-based number.
///     #[tool]
///     async fn add(&self, /// The note.
///         text: String) -> String { ... }
/// }
///
/// let registry = Registry::builder().tools_of(Arc::new(NotesServer::default())).build()?;
/// ```
///
/// Each `#[tool]` method takes `&self` first, then any parameters a `#[tool]` function takes
/// (model arguments, `#[input]`, `#[depends(KEY)]`, `&ToolContext`), with every `#[tool(...)]`
/// option. The block stays as written (without the `#[tool]` attributes), so the methods remain
/// callable. Generated beside it: one `ToolSpec` static per method and an implementation of
/// `tool_runtime::ToolMethods` for the type, whose `tools()` lists them in the block's order. A
/// type has one `#[tools]` block (a second would implement `ToolMethods` twice); its other
/// `impl` blocks are plain.
///
/// The registry keeps the instance (an `Arc<Self>`, under a provided dependency key named after
/// the type's module path and name) and lends it to every call: `RegistryBuilder::tools_of`.
/// The methods are not submitted to discovery: `Registry::discover()` cannot call a method
/// without an instance, so it never finds them.
///
/// Errors, one each: `&mut self` (calls of one instance run at the same time: keep what changes
/// behind a `Mutex`), `self` by value or `self: Arc<Self>` (take `&self`), a `#[tool]` associated
/// function without `self` (make it a free function), a generic block or one implementing a
/// trait, a block without `#[tool]` method; and a `#[tool]` method whose block is not marked
/// `#[tools]`. A model argument whose type is written token for token like the type of a
/// `#[depends(KEY)]` parameter of the block (of any of its methods, `notes: Notes` beside
/// `#[depends(NOTES)] notes: Notes`) is an error on its type that names each such key and a
/// method using it: add the `#[depends(KEY)]`, or `#[arg(from_model)]` if the model does send it
/// (arguments of plain data types such as `String`, numbers or `bool` are not compared). Option:
/// `crate = path`, as for `#[tool]`.
#[proc_macro_attribute]
pub fn tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    methods::tools(attr.into(), item.into()).into()
}
