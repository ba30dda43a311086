//! The one path generated code uses (`#[tool]`, `#[tools]`). Not public API: it may change in any
//! release.

pub use futures::future::BoxFuture;
pub use inventory;
pub use schemars;
pub use serde;
pub use serde_json;

pub use crate::depends::DependencyUse;
pub use crate::methods::MethodsRegistration;
pub use crate::schema::{ArgumentBound, ArgumentSchema, ArgumentSchemaFn, BoundNumber, argument_schema};
pub use crate::schema::{DefaultJson, DefaultJsonNone, DefaultJsonSerialize};
pub use crate::tool::{CheckFn, DecodingSchema, Invoke, SyncInvokeFn};
pub use crate::{
    Callers, IntoToolResult, Resource, Tool, ToolContext, ToolError, ToolMeta, ToolRegistration, ToolResult, ToolSpec,
};
pub use crate::{DependencyKey, ToolMethods};

/// [`decode`] or [`decode_input`] for one type, as generated code holds it.
pub type DecodeFn<T> = fn(&'static ToolSpec, &str) -> Result<T, ToolError>;

/// Decodes a call's arguments for the tool `spec` into its generated arguments struct, which
/// refuses unknown fields itself (`#[serde(deny_unknown_fields)]`): for a flat schema the
/// key-check pass is skipped.
pub fn decode<T: serde::de::DeserializeOwned>(spec: &'static ToolSpec, raw: &str) -> Result<T, ToolError> {
    // The fast path calls `from_str` itself, as hand-written code does. (`decode_input` repeats
    // these lines on purpose: a shared generic body would be one more function compiled per
    // tool, which showed in incremental builds of 100 tools.)
    if let Some(text) = fast_text(spec, raw, false)
        && let Ok(decoded) = serde_json::from_str(text)
    {
        return Ok(decoded);
    }
    let mut decoded = None;
    decode_full(spec, raw, &mut |text| {
        decoded = Some(serde_json::from_str(text)?);
        Ok(())
    })?;
    decoded.ok_or_else(|| not_decoded(spec))
}

/// Decodes a call's arguments for the tool `spec` into its `#[input]` type (the user's own,
/// which may ignore unknown fields: the keys are always checked against the schema).
pub fn decode_input<T: serde::de::DeserializeOwned>(spec: &'static ToolSpec, raw: &str) -> Result<T, ToolError> {
    if let Some(text) = fast_text(spec, raw, true)
        && let Ok(decoded) = serde_json::from_str(text)
    {
        return Ok(decoded);
    }
    let mut decoded = None;
    decode_full(spec, raw, &mut |text| {
        decoded = Some(serde_json::from_str(text)?);
        Ok(())
    })?;
    decoded.ok_or_else(|| not_decoded(spec))
}

/// The text [`decode`] (or, with `input`, [`decode_input`]) decodes straight away when the
/// fast path applies; compiled once.
fn fast_text<'r>(spec: &'static ToolSpec, raw: &'r str, input: bool) -> Option<&'r str> {
    spec.decoding().fast_text(raw, input)
}

/// The full path [`decode`] and [`decode_input`] share, compiled once: `parse` (the one part
/// compiled per type) runs `from_str` on the text to decode and keeps the value; `Ok` means it
/// did.
fn decode_full(
    spec: &'static ToolSpec,
    raw: &str,
    parse: &mut dyn FnMut(&str) -> Result<(), serde_json::Error>,
) -> Result<(), ToolError> {
    let decoding = spec.decoding();
    crate::decode::decode_full(raw, &decoding.schema, Some(decoding.ranges()), parse)
        .map_err(|error| invalid(spec, error))
}

/// Cannot happen: [`decode_full`] returns `Ok` only after a `parse` that kept its value.
fn not_decoded(spec: &ToolSpec) -> ToolError {
    invalid(spec, crate::ArgumentError::Syntax { message: "the arguments could not be decoded".to_owned() })
}

fn invalid(spec: &ToolSpec, error: crate::ArgumentError) -> ToolError {
    ToolError::InvalidArguments { tool: spec.name().to_owned(), error }
}

/// The decoding schema of a tool's generated arguments struct (or its `#[input]` type): see
/// [`ToolSpec::decoded`].
pub fn schema<T: schemars::JsonSchema>() -> serde_json::Value {
    crate::schema::decoding_schema::<T>()
}

/// The [`ArgumentSchemaFn`] of a defaulted argument's type `T` (a generic argument's comes
/// from `#[tool]`'s check of all of them at once), checked with [`ArgumentDecode`]'s and
/// [`ArgumentSchemaOf`]'s messages.
pub const fn argument<T: ArgumentDecode + ArgumentSchemaOf>() -> ArgumentSchemaFn {
    argument_schema::<T>
}

/// The schema of a `#[tool(output_schema)]` tool's result type.
pub fn output_schema<T: ToolOutput>() -> serde_json::Value {
    crate::schema::output_schema::<T>()
}

/// What the result type of a `#[tool(output_schema)]` tool must be: serialisable and
/// describable as JSON Schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the result of a `#[tool(output_schema)]` function: it must implement `serde::Serialize` and `schemars::JsonSchema`",
    label = "not `Serialize + JsonSchema`",
    note = "derive both (`#[derive(Serialize, JsonSchema)]`), or remove `output_schema` from the `#[tool]` options"
)]
pub trait ToolOutput: serde::Serialize + schemars::JsonSchema {}

impl<T: serde::Serialize + schemars::JsonSchema + ?Sized> ToolOutput for T {}

/// What a model argument's type must be: decodable from JSON (this trait) and describable as
/// JSON Schema ([`ArgumentSchemaOf`]).
/// The generated schema and decoder are generic over the argument types with both bounds and
/// are instantiated with the user's types, spanned on them: a wrong type is reported there,
/// once per missing trait, with its message. `do_not_recommend` keeps the error on this trait
/// (with the one note saying what to derive) instead of serde's `Deserialize` and rustc's list
/// of the types that implement it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a `#[tool]` argument: it does not implement `serde::Deserialize`",
    label = "not `Deserialize`",
    note = "add `#[derive(serde::Deserialize)]` to `{Self}` (a type of another crate: wrap it in a newtype that derives it), or mark the parameter `#[depends(KEY)]` if the program hands the value in"
)]
pub trait ArgumentDecode: serde::de::DeserializeOwned {}

#[diagnostic::do_not_recommend]
impl<T: serde::de::DeserializeOwned> ArgumentDecode for T {}

/// A model argument's type has a JSON Schema (see [`ArgumentDecode`] for the diagnostic).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a `#[tool]` argument: it does not implement `schemars::JsonSchema`",
    label = "not `JsonSchema`",
    note = "add `#[derive(schemars::JsonSchema)]` to `{Self}` (a type of another crate: wrap it in a newtype that derives it), or mark the parameter `#[depends(KEY)]` if the program hands the value in"
)]
pub trait ArgumentSchemaOf: schemars::JsonSchema {}

#[diagnostic::do_not_recommend]
impl<T: schemars::JsonSchema> ArgumentSchemaOf for T {}

/// The probe of `#[tool]`'s check that a model argument's type is data a model sends, not
/// state the program hands in (`Arc`, `Mutex`, ..., named through a type alias, which the
/// macro's check of the syntax cannot see). Written
/// `model_argument::<T, _>((&ArgumentProbe::<T>::NEW).kind())`: method lookup tries
/// [`ProbeSharedState`] on the probe (implemented for the state types) before
/// [`ProbeModelData`] on a reference to it (for every type), so the kind is [`SharedState`]
/// exactly for those types, and [`model_argument`] refuses it with [`ModelArgument`]'s message.
pub struct ArgumentProbe<T: ?Sized>(core::marker::PhantomData<T>);

impl<T: ?Sized> ArgumentProbe<T> {
    /// The probe.
    pub const NEW: Self = Self(core::marker::PhantomData);
}

/// The kind of an argument type that is state the program hands in (see [`ArgumentProbe`]).
pub struct SharedState<T: ?Sized>(core::marker::PhantomData<T>);

/// The kind of an argument type that is data a model sends (see [`ArgumentProbe`]).
pub struct ModelData;

/// See [`ArgumentProbe`]: implemented for the probes of state types.
pub trait ProbeSharedState {
    /// [`SharedState`] of the type.
    type Kind;
    /// The kind.
    fn kind(&self) -> Self::Kind;
}

/// See [`ArgumentProbe`]: implemented for every probe, behind a reference.
pub trait ProbeModelData {
    /// [`ModelData`].
    fn kind(&self) -> ModelData {
        ModelData
    }
}

impl<T: ?Sized> ProbeModelData for &ArgumentProbe<T> {}

macro_rules! shared_state {
    ($([$($generics:tt)*] $ty:ty),* $(,)?) => {$(
        impl<$($generics)*> ProbeSharedState for ArgumentProbe<$ty> {
            type Kind = SharedState<$ty>;
            fn kind(&self) -> Self::Kind {
                SharedState(core::marker::PhantomData)
            }
        }
        impl<$($generics)*> ProbeSharedState for ArgumentProbe<Option<$ty>> {
            type Kind = SharedState<Option<$ty>>;
            fn kind(&self) -> Self::Kind {
                SharedState(core::marker::PhantomData)
            }
        }
    )*};
}
// The state types serde can decode (so that nothing else refuses them as arguments); the
// others (channels, `OnceLock`, tokio's locks, ...) are refused as not `Deserialize`, with a
// note saying to mark the parameter `#[depends(KEY)]`.
shared_state!(
    [T: ?Sized] std::sync::Arc<T>,
    [T: ?Sized] std::rc::Rc<T>,
    [T: ?Sized] std::sync::Weak<T>,
    [T: ?Sized] std::rc::Weak<T>,
    [T] std::sync::Mutex<T>,
    [T] std::sync::RwLock<T>,
    [T] std::cell::RefCell<T>,
    [T] std::cell::Cell<T>,
    [] std::sync::atomic::AtomicBool,
    [] std::sync::atomic::AtomicU8,
    [] std::sync::atomic::AtomicU16,
    [] std::sync::atomic::AtomicU32,
    [] std::sync::atomic::AtomicUsize,
    [] std::sync::atomic::AtomicI8,
    [] std::sync::atomic::AtomicI16,
    [] std::sync::atomic::AtomicI32,
    [] std::sync::atomic::AtomicIsize,
);
#[cfg(target_has_atomic = "64")]
shared_state!([] std::sync::atomic::AtomicU64, [] std::sync::atomic::AtomicI64);

/// What the kind of a model argument's type `T` must be: [`ModelData`], not [`SharedState`].
#[diagnostic::on_unimplemented(
    message = "`{T}` is state the program hands in, not data a model sends: as a `#[tool]` argument, the schema would ask the model for it",
    label = "shared state, not a model argument",
    note = "mark the parameter `#[depends(KEY)]` with the `DependencyKey<{T}>` static that holds the value (a type alias of the key's type is the same type), or add `#[arg(from_model)]` if the model does send it"
)]
pub trait ModelArgument<T: ?Sized> {
    /// `T`: what `#[tool]`'s check of the argument types asks `Deserialize` and `JsonSchema` of,
    /// so that a [`SharedState`] kind, which has no `Type`, is this trait's error alone.
    type Type: ?Sized;
}

#[diagnostic::do_not_recommend]
impl<T: ?Sized> ModelArgument<T> for ModelData {
    type Type = T;
}

/// The kind of a model argument's type (see [`ArgumentProbe`]), as a type.
pub struct ArgumentKinds;

impl ArgumentKinds {
    /// The kind `probe` returns: `#[tool]` passes `&|| (&ArgumentProbe::<T>::NEW).kind()`,
    /// never called.
    pub const fn of<K, F: Fn() -> K>(_probe: &F) -> core::marker::PhantomData<K> {
        core::marker::PhantomData
    }
}

/// Checks that a model argument of type `T` is data a model sends (see [`ArgumentProbe`]).
pub fn model_argument<T: ?Sized, K: ModelArgument<T>>(_kind: K) {}

/// What `#[arg(default)]` (without a value) takes the default of: a type with `Default`.
#[diagnostic::on_unimplemented(
    message = "`#[arg(default)]` takes the argument's `Default` value, and `{Self}` does not implement `Default`",
    label = "not `Default`",
    note = "derive or implement `Default` for `{Self}`, or give the value: `#[arg(default = expr)]`"
)]
pub trait ArgumentDefault: Sized {
    /// `Default::default()`.
    fn argument_default() -> Self;
}

#[diagnostic::do_not_recommend]
impl<T: Default> ArgumentDefault for T {
    fn argument_default() -> Self {
        T::default()
    }
}

/// What `#[arg(range(..))]` bounds: a number (or an `Option` of one).
#[diagnostic::on_unimplemented(
    message = "`#[arg(range(..))]` bounds a number, and `{Self}` is not an integer or float type",
    label = "not a number",
    note = "bound a string's or an array's length with `#[arg(length(min = .., max = ..))]`"
)]
pub trait RangeBound {}

/// What `#[arg(length(..))]` bounds: a string (its length in Unicode code points) or a
/// sequence (its number of items), or an `Option` of one.
#[diagnostic::on_unimplemented(
    message = "`#[arg(length(..))]` bounds a string or an array, and `{Self}` is neither",
    label = "not a string or a sequence",
    note = "bound a number with `#[arg(range(min = .., max = ..))]`"
)]
pub trait LengthBound {}

/// What `#[arg(pattern = "..")]` bounds: a string (or an `Option` of one).
#[diagnostic::on_unimplemented(
    message = "`#[arg(pattern = \"..\")]` bounds a string, and `{Self}` is not one",
    label = "not a string"
)]
pub trait PatternBound {}

macro_rules! bound_impls {
    ($bound:ident: $($ty:ty),*) => { $(impl $bound for $ty {})* };
}
bound_impls!(RangeBound: u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);
impl LengthBound for String {}
impl LengthBound for Box<str> {}
impl LengthBound for std::path::PathBuf {}
impl PatternBound for String {}
impl PatternBound for Box<str> {}
impl PatternBound for std::path::PathBuf {}
impl<T> LengthBound for Vec<T> {}
impl<T> LengthBound for std::collections::VecDeque<T> {}
impl<T> LengthBound for std::collections::BTreeSet<T> {}
impl<T, S> LengthBound for std::collections::HashSet<T, S> {}
impl<T: RangeBound> RangeBound for Option<T> {}
impl<T: LengthBound> LengthBound for Option<T> {}
impl<T: PatternBound> PatternBound for Option<T> {}

/// Checks at compile time that `#[arg(range(..))]` is on a number.
pub const fn range_bound<T: RangeBound>() {}
/// Checks at compile time that `#[arg(length(..))]` is on a string or a sequence.
pub const fn length_bound<T: LengthBound>() {}
/// Checks at compile time that `#[arg(pattern = "..")]` is on a string.
pub const fn pattern_bound<T: PatternBound>() {}

/// A `#[depends(KEY)]` parameter of type `Self` resolved with a key of type `K`.
#[diagnostic::on_unimplemented(
    message = "a `#[depends]` parameter of type `{Self}` cannot take its value from a `{K}`",
    label = "the key gives another type",
    note = "a `DependencyKey<T>` gives a `T`: make the parameter's type the key's value type, or use another key"
)]
pub trait FromDependency<K>: Sized {
    /// Resolves the value through the call's context; `name` is the key as the `#[depends(..)]`
    /// wrote it (`DB`), which the errors name.
    fn from_dependency<'a>(
        ctx: &'a ToolContext,
        key: &'a K,
        name: &'static str,
    ) -> BoxFuture<'a, Result<Self, ToolError>>;
}

/// No bound on `T`: the key's constructor checked [`DependencyValue`](crate::DependencyValue),
/// so a key of a type that is not `Clone + Send + Sync` is reported once, where it is declared.
impl<T: 'static> FromDependency<DependencyKey<T>> for T {
    fn from_dependency<'a>(
        ctx: &'a ToolContext,
        key: &'a DependencyKey<T>,
        name: &'static str,
    ) -> BoxFuture<'a, Result<Self, ToolError>> {
        key.resolve_in(ctx, name)
    }
}

/// A key named through a reference (`#[depends(&KEY)]`, or a `&'static DependencyKey<T>`
/// constant). A second impl also keeps the compiler from inferring `K` from the impls alone,
/// so a mismatched key is reported with this trait's message.
impl<'k, T: 'static> FromDependency<&'k DependencyKey<T>> for T {
    fn from_dependency<'a>(
        ctx: &'a ToolContext,
        key: &'a &'k DependencyKey<T>,
        name: &'static str,
    ) -> BoxFuture<'a, Result<Self, ToolError>> {
        key.resolve_in(ctx, name)
    }
}

/// A dependency key, named directly or through references, as `#[tool]` records it
/// ([`DependencyUse`]).
pub trait KeyUse {
    /// The use of the key.
    fn key_use(&self) -> DependencyUse;
}

impl<T> KeyUse for DependencyKey<T> {
    fn key_use(&self) -> DependencyUse {
        DependencyUse::of(self)
    }
}

impl<K: KeyUse + ?Sized> KeyUse for &K {
    fn key_use(&self) -> DependencyUse {
        (**self).key_use()
    }
}

/// What a `#[depends(KEY)]` parameter records of its key.
pub fn key_use<K: KeyUse>(key: &K) -> DependencyUse {
    key.key_use()
}

/// What a `#[depends(KEY)]` parameter records of its key, with the key as the user wrote it
/// (`name`), which the registry's errors name.
pub fn key_use_named<K: KeyUse>(key: &K, name: &'static str) -> DependencyUse {
    key.key_use().named(name)
}

/// Resolves a `#[depends(KEY)]` parameter of type `T`, written `name` (`KEY`): `K` is inferred
/// from the key, so that a key of another value type is reported through [`FromDependency`]'s
/// message.
pub fn resolve<'a, T: FromDependency<K>, K>(
    ctx: &'a ToolContext,
    key: &'a K,
    name: &'static str,
) -> BoxFuture<'a, Result<T, ToolError>> {
    T::from_dependency(ctx, key, name)
}

/// The call of an `async fn` tool: on its first poll, `start` decodes the arguments and
/// calls the user's function, whose future is then awaited and its output `convert`ed. One
/// generic `async` body in this crate for every such tool, so a tool's own code has no `async`
/// block of its own (no second state machine to check and build per tool); the arguments are
/// decoded when the call's future is first polled, as in a tool with an `async` block.
pub fn finish<'a, S, F, C>(start: S, convert: C) -> BoxFuture<'a, Result<ToolResult, ToolError>>
where
    S: FnOnce() -> Result<F, ToolError> + Send + 'a,
    F: std::future::Future + Send + 'a,
    C: FnOnce(F::Output) -> Result<ToolResult, ToolError> + Send + 'a,
{
    Box::pin(async move { convert(start()?.await) })
}

/// Runs a plain `fn` tool (not `inline`) on tokio's blocking thread pool. A panic becomes
/// [`ToolError::Panicked`] with the tool's name, as for any tool.
pub async fn run_blocking<F, R>(spec: &'static ToolSpec, f: F) -> Result<R, ToolError>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    tokio::task::spawn_blocking(f).await.map_err(|error| {
        let tool = spec.name().to_owned();
        if error.is_panic() {
            let payload = error.into_panic();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "Box<dyn Any>".to_owned());
            ToolError::Panicked { tool, message }
        } else {
            ToolError::Failed(format!("tool `{tool}` was cancelled: the runtime is shutting down"))
        }
    })
}

/// A description assembled by `concat!` (a doc comment with `#[doc = include_str!(..)]`),
/// without the surrounding whitespace.
pub const fn trim_doc(text: &'static str) -> &'static str {
    text.trim_ascii()
}

/// A return value of a text-like type.
pub fn text<T: IntoToolResult>(value: T) -> Result<ToolResult, ToolError> {
    Ok(value.into_tool_result())
}

/// A return type sent to the model as JSON.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a `#[tool]` function",
    label = "not a supported return type",
    note = "return `String`, `&'static str`, `()`, `ToolResult`, `Vec<ContentPart>`, a `serde::Serialize` type (sent as JSON), or `Result<T, E: Display>` of one of these"
)]
pub trait JsonOutput {
    /// The JSON value.
    fn to_json(&self) -> Result<serde_json::Value, serde_json::Error>;

    /// The compact JSON text.
    fn to_json_text(&self) -> Result<String, serde_json::Error>;
}

impl<T: serde::Serialize + ?Sized> JsonOutput for T {
    fn to_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }

    fn to_json_text(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

/// A return value of any `Serialize` type, serialised straight to its compact JSON text
/// (fields in the type's order): a [`ToolResult::Text`], with no `serde_json::Value` built.
pub fn json<T: JsonOutput + ?Sized>(value: &T) -> Result<ToolResult, ToolError> {
    value.to_json_text().map(ToolResult::Text).map_err(not_serialised)
}

/// The return value of a tool with an output schema (`#[tool(output_schema)]`): a
/// [`ToolResult::Structured`] whose one text part is the value serialised straight to compact
/// JSON text (fields in the type's order, whatever `serde_json`'s features: the text never goes
/// through a `serde_json::Map`, whose order `preserve_order` decides), so that the message shows
/// that text and keeps the value as `structured_content` (MCP's `structuredContent`).
pub fn structured<T: JsonOutput + ?Sized>(value: &T) -> Result<ToolResult, ToolError> {
    let text = value.to_json_text().map_err(not_serialised)?;
    let value = value.to_json().map_err(not_serialised)?;
    Ok(ToolResult::Structured { content: vec![crate::ContentPart::text(text)], value })
}

fn not_serialised(error: serde_json::Error) -> ToolError {
    ToolError::Failed(format!("the tool's result could not be serialised as JSON: {error}"))
}

/// The error type of a tool returning `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error type of a `#[tool]` function: it must implement `std::fmt::Display`",
    label = "not `Display`",
    note = "the `Err` value becomes the error result's text: implement `Display`, or map the error (`ToolError::failed`)"
)]
pub trait ErrorText {
    /// The error as a [`ToolError`].
    fn into_tool_error(self) -> ToolError;
}

impl<E: std::fmt::Display> ErrorText for E {
    fn into_tool_error(self) -> ToolError {
        ToolError::failed(self)
    }
}

/// The `Err` of a tool returning `Result<T, E: Display>`.
pub fn failed<E: ErrorText>(error: E) -> ToolError {
    error.into_tool_error()
}

fn unavailable_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
}

fn unavailable_invoke<'a>(_: &'a str, _: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
    Box::pin(async { Err(ToolError::Failed("this tool did not compile".to_owned())) })
}

/// The stand-in `f::TOOL` of a `#[tool]` function with errors, so that code naming it reports
/// nothing more than the errors themselves. A crate with such errors does not build, so it is
/// never called.
pub static UNAVAILABLE: ToolSpec =
    ToolSpec::new("unavailable", "", None, module_path!(), ToolMeta::DEFAULT, unavailable_schema, unavailable_invoke);
