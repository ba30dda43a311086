//! The canonical JSON Schema of a tool's arguments.
//!
//! schemars (1.x) gives the starting point; [`canonicalize`] then owns every rule of the canonical
//! form (see `provider-schemas.md` in the project's docs):
//!
//! - the root is an object with `properties` (empty for a tool with no arguments) and no
//!   `$schema` or `title`;
//! - `Option<T>` fields are the schema of `T` and not required (no `["T","null"]` type arrays, no
//!   `null` branch); `#[serde(default)]` fields are not required;
//! - `format` values outside the JSON Schema vocabulary (`uint32`, `int64`, `double`, ...) are
//!   removed at every depth; unsigned integers keep `minimum: 0`. The pass tells decoding which
//!   `minimum`/`maximum` only restate an integer type's own range: those do not cost a tool the
//!   decoder's flat path, since serde refuses what they refuse;
//! - `title` is folded into `description`, and `default` values are removed (they cost tokens and
//!   OpenAI strict mode refuses them); descriptions are reflowed as rustdoc renders them
//!   ([`crate::rustdoc::reflow`]: a paragraph's lines joined, list items and code kept); a
//!   type's own doc comment describes a property only when the use site has none (also the
//!   items of a described list);
//! - unit-only enums are `{"type":"string","enum":[...]}` with variant docs in the description;
//! - every struct node has `additionalProperties: false` (maps keep their value schema);
//! - subschemas are inlined; `$defs` and `$ref` remain only for recursive types;
//! - `writeOnly` / `readOnly` (from `#[serde(skip_serializing)]` and friends) are removed: a tool's
//!   arguments are only ever written by the model; a [`Secret<T>`](crate::Secret) node alone is
//!   `writeOnly: true`, the mark that keeps its value out of every sink;
//! - a tuple (`items` as an array, draft-07) becomes `prefixItems` with `minItems`/`maxItems`, the
//!   form valid under both 2020-12 and draft-07;
//! - the root has no `description` (the tool's description is the definition's own);
//! - a root that is a union (`oneOf`/`anyOf` of objects, such as an internally tagged
//!   `#[serde(tag = "op")]` enum, a "union tool") is hoisted into one plain object, since Anthropic
//!   and Gemini refuse a root `oneOf`: see [`hoist_union`]. [`decoding_schema`] keeps the union, so
//!   decoding stays strict per variant.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// Formats of the JSON Schema vocabulary (2020-12, section 7.3); any other `format` is removed.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose value is a map from names to subschemas.
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
/// Keywords whose value is one subschema.
const SCHEMA_VALUES: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
];
/// Keywords whose value is an array of subschemas.
const SCHEMA_ARRAYS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];

/// The canonical schema of `T` as tool arguments (an object root): what a model is shown.
pub fn arguments_schema<T: JsonSchema>() -> Value {
    hoist_union(decoding_schema::<T>())
}

/// The schema arguments of `T` are checked against when decoding: the canonical rules without
/// [`hoist_union`], so that a union root keeps one closed object per variant (decoding is strict
/// per variant).
pub fn decoding_schema<T: JsonSchema>() -> Value {
    // Only `into_root_schema_for` is generic: the rest is compiled once, not per type.
    canonicalize_union(decoding_generator().into_root_schema_for::<T>().to_value())
}

/// One model argument of a `#[tool]` function, as the schema of its arguments object needs it.
/// `#[tool]` describes its arguments with these instead of deriving `JsonSchema` for the struct
/// it decodes them into: that derive, on a struct generic over the argument types, was the
/// largest part of what `#[tool]` cost a build (benches/HISTORY.md, "Compile time of 100
/// tools"). Not meant to be built by hand.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct ArgumentSchema {
    /// The property name (the parameter's name, or its `#[arg(rename)]`).
    name: &'static str,
    /// The description as written in the struct field's `#[doc]`.
    doc: &'static str,
    /// `#[arg(default)]`: never required.
    has_default: bool,
    schema: ArgumentSchemaFn,
    /// The bounds of `#[arg(range(..), length(..), pattern = "..")]`.
    bounds: &'static [ArgumentBound],
    /// The default value as JSON, for the schema's `default`: `None` when the argument has no
    /// default, or its type is not `Serialize`.
    default: Option<fn() -> Option<Value>>,
    /// `std::any::type_name` of the decoded type, for the registry's check that no model
    /// argument has the type of a dependency key: `None` for an argument with
    /// `#[arg(from_model)]` or whose written type is named like plain data (`String`, `u32`,
    /// `PathBuf`, ..., without generic arguments).
    model_type: Option<fn() -> &'static str>,
}

/// A bound stated on a model argument with `#[arg(...)]`, written into its schema (and so
/// enforced by decoding, which checks every bound the schema states). Not meant to be built by
/// hand.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ArgumentBound {
    /// `range(min = N)`: `minimum` (the larger of N and the type's own, such as 0 for `u32`).
    Minimum(BoundNumber),
    /// `range(max = N)`: `maximum` (the smaller of N and the type's own, such as 255 for `u8`).
    Maximum(BoundNumber),
    /// `length(min = N)`: `minLength` of a string (Unicode code points, as JSON Schema counts),
    /// `minItems` of an array.
    MinLength(u64),
    /// `length(max = N)`: `maxLength` of a string, `maxItems` of an array.
    MaxLength(u64),
    /// `pattern = "regex"`: `pattern` of a string (unanchored, as JSON Schema reads it).
    Pattern(&'static str),
}

/// A number of an [`ArgumentBound`], kept an integer when written as one.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BoundNumber {
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
}

impl BoundNumber {
    fn to_value(self) -> Value {
        match self {
            Self::Int(n) => Value::from(n),
            Self::Float(n) => Value::from(n),
        }
    }

    fn to_f64(self) -> f64 {
        match self {
            // Bounds are far below 2^53.
            #[allow(clippy::cast_precision_loss)]
            Self::Int(n) => n as f64,
            Self::Float(n) => n,
        }
    }
}

/// Writes `bounds` into an argument's schema `node`: `minimum`/`maximum` (keeping the type's own
/// where it is the tighter one), `minLength`/`maxLength` on a string and `minItems`/`maxItems` on
/// an array, `pattern`.
fn apply_bounds(node: &mut schemars::Schema, bounds: &[ArgumentBound]) {
    let has_type = |node: &schemars::Schema, kind: &str| match node.get("type") {
        Some(Value::String(t)) => t == kind,
        Some(Value::Array(types)) => types.iter().any(|t| t == kind),
        _ => false,
    };
    for bound in bounds {
        let (key, value) = match *bound {
            ArgumentBound::Minimum(n) => {
                let tighter = node.get("minimum").and_then(Value::as_f64).is_none_or(|own| n.to_f64() > own);
                if !tighter {
                    continue;
                }
                ("minimum", n.to_value())
            }
            ArgumentBound::Maximum(n) => {
                let tighter = node.get("maximum").and_then(Value::as_f64).is_none_or(|own| n.to_f64() < own);
                if !tighter {
                    continue;
                }
                ("maximum", n.to_value())
            }
            ArgumentBound::MinLength(n) if has_type(node, "array") => ("minItems", Value::from(n)),
            ArgumentBound::MinLength(n) => ("minLength", Value::from(n)),
            ArgumentBound::MaxLength(n) if has_type(node, "array") => ("maxItems", Value::from(n)),
            ArgumentBound::MaxLength(n) => ("maxLength", Value::from(n)),
            ArgumentBound::Pattern(pattern) => ("pattern", Value::from(pattern)),
        };
        node.insert(key.to_owned(), value);
    }
}

/// The subschema of one argument's type, and whether the type is an `Option` (schemars' own test,
/// the one its derive asks).
#[doc(hidden)]
pub type ArgumentSchemaFn = fn(&mut schemars::SchemaGenerator) -> (schemars::Schema, bool);

impl ArgumentSchema {
    /// Used by `#[tool]`.
    pub const fn new(name: &'static str, doc: &'static str, has_default: bool, schema: ArgumentSchemaFn) -> Self {
        Self { name, doc, has_default, schema, bounds: &[], default: None, model_type: None }
    }

    /// Used by `#[tool]` for an argument that the registry compares with the dependency keys'
    /// types (not `#[arg(from_model)]`, not plain data): `type_name` is
    /// `std::any::type_name::<T>` of its decoded type.
    #[must_use]
    pub const fn compared_with_keys(self, type_name: fn() -> &'static str) -> Self {
        Self { model_type: Some(type_name), ..self }
    }

    /// The property name.
    pub(crate) const fn name(&self) -> &'static str {
        self.name
    }

    /// The decoded type's name, when the registry compares it with the keys' types.
    pub(crate) fn model_type(&self) -> Option<&'static str> {
        self.model_type.map(|name| name())
    }

    /// Used by `#[tool]` for an argument with `#[arg(default)]`: `value` gives the default as
    /// JSON (`None` when its type is not `Serialize`), written as the property's `default`.
    #[must_use]
    pub const fn with_default(self, value: fn() -> Option<Value>) -> Self {
        Self { default: Some(value), ..self }
    }

    /// Used by `#[tool]` for an argument with `#[arg(range(..), length(..), pattern = "..")]`.
    #[must_use]
    pub const fn with_bounds(self, bounds: &'static [ArgumentBound]) -> Self {
        Self { bounds, ..self }
    }
}

/// An argument's default function, asked for its value as JSON (`#[tool]`'s schema `default`):
/// through [`DefaultJsonSerialize`] when the type is `Serialize`, else through
/// [`DefaultJsonNone`], which gives `None`. Written `(&DefaultJson(f)).json()`: method lookup
/// tries the first trait on the value before the second on a reference to it.
#[doc(hidden)]
pub struct DefaultJson<T>(pub fn() -> T);

/// See [`DefaultJson`].
#[doc(hidden)]
pub trait DefaultJsonSerialize {
    /// The default as JSON.
    fn json(&self) -> Option<Value>;
}

impl<T: serde::Serialize> DefaultJsonSerialize for DefaultJson<T> {
    fn json(&self) -> Option<Value> {
        serde_json::to_value((self.0)()).ok()
    }
}

/// See [`DefaultJson`].
#[doc(hidden)]
pub trait DefaultJsonNone {
    /// `None`: the type is not `Serialize`.
    fn json(&self) -> Option<Value>;
}

impl<T> DefaultJsonNone for &DefaultJson<T> {
    fn json(&self) -> Option<Value> {
        None
    }
}

/// The [`ArgumentSchemaFn`] of `T`: instantiated once per argument type, not once per tool.
#[doc(hidden)]
pub fn argument_schema<T: JsonSchema>(generator: &mut schemars::SchemaGenerator) -> (schemars::Schema, bool) {
    // `_schemars_private_is_option` is what `#[derive(JsonSchema)]` asks of a field's type to
    // leave an `Option` out of `required` (a type alias of `Option` included).
    (generator.subschema_for::<T>(), T::_schemars_private_is_option())
}

/// The decoding schema of the arguments object that `arguments` describe, in order: the schema
/// `#[derive(JsonSchema)]` gives a struct with these fields and `#[serde(deny_unknown_fields)]`
/// (each property's subschema, its description split into `title` and `description` as schemars
/// splits a doc comment, `required` unless the type is an `Option` or the argument has a
/// default), made with schemars' own handling of a root schema, then the canonical rules of
/// [`decoding_schema`].
#[doc(hidden)]
pub fn arguments_decoding_schema(arguments: &'static [ArgumentSchema]) -> Value {
    arguments_decoding(arguments).schema
}

/// [`arguments_decoding_schema`], with what the pass knew of its bounds.
pub(crate) fn arguments_decoding(arguments: &'static [ArgumentSchema]) -> Canonical {
    /// Puts the arguments of an enclosing call back (an argument type's schema could, in
    /// principle, ask for another tool's).
    struct Restore(&'static [ArgumentSchema]);
    impl Drop for Restore {
        fn drop(&mut self) {
            ARGUMENTS.set(self.0);
        }
    }
    let _restore = Restore(ARGUMENTS.replace(arguments));
    canonical(decoding_generator().into_root_schema_for::<GeneratedArguments>().to_value())
}

thread_local! {
    /// The arguments [`GeneratedArguments::json_schema`] describes: set by
    /// [`arguments_decoding_schema`] for the time of one call (a `JsonSchema` impl takes no
    /// value, and schemars' root handling is only reachable through one).
    static ARGUMENTS: std::cell::Cell<&'static [ArgumentSchema]> = const { std::cell::Cell::new(&[]) };
}

/// The arguments object of a `#[tool]` function, as [`ARGUMENTS`] describes it.
struct GeneratedArguments;

impl JsonSchema for GeneratedArguments {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        // The name the derived struct had (the root's `title`, which the canonical rules drop).
        "__ToolArgs".into()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        concat!(module_path!(), "::GeneratedArguments").into()
    }

    fn inline_schema() -> bool {
        false
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        use schemars::_private::{
            get_title_and_description, insert_metadata_property_if_nonempty, insert_object_property,
        };

        let mut root = Map::new();
        root.insert("type".to_owned(), Value::from("object"));
        root.insert("additionalProperties".to_owned(), Value::Bool(false));
        let mut schema = schemars::Schema::from(root);
        // The same calls, in the same order, as `#[derive(JsonSchema)]` makes for each field (its
        // support functions are schemars' own, so that the output cannot drift from the derive's).
        for argument in ARGUMENTS.get() {
            let optional = generator.contract().is_deserialize();
            let (mut subschema, is_option) = (argument.schema)(generator);
            apply_bounds(&mut subschema, argument.bounds);
            if let Some(value) = argument.default.and_then(|default| default()) {
                subschema.insert("default".to_owned(), value);
            }
            // (The derive also drops a doc attribute's one leading space; this trims it anyway.)
            let (title, description) = get_title_and_description(argument.doc);
            if !argument.doc.trim().is_empty() {
                // The use site describes the argument: the type's own title does not.
                subschema.remove("title");
            }
            insert_metadata_property_if_nonempty(&mut subschema, "title", title);
            insert_metadata_property_if_nonempty(&mut subschema, "description", description);
            insert_object_property(
                &mut schema,
                argument.name,
                optional && (argument.has_default || is_option),
                subschema,
            );
        }
        schema
    }
}

/// The generator of [`decoding_schema`]: draft-07, subschemas inlined, no `$schema`.
fn decoding_generator() -> schemars::SchemaGenerator {
    SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
            s.definitions_path = "/$defs".into();
        })
        .into_generator()
}

/// The JSON Schema of a tool's result value `T` (`#[tool(output_schema)]`): what the value
/// serialises to, so schemars' serialization contract (an `Option` field may be `null`), with
/// subschemas inlined (`$defs` only for recursive types) and no `$schema` or root `title`;
/// descriptions stay. Unlike the arguments schema, no other canonical rule applies: nothing here is
/// shown to a model as a form to fill, and a validator checks real values against it.
pub fn output_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
            s.definitions_path = "/$defs".into();
        })
        .for_serialize()
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(root) = &mut schema {
        root.remove("$schema");
        root.remove("title");
    }
    schema
}

/// Applies the canonical rules (see the module docs) to a schema whose root describes the
/// arguments object, [`hoist_union`] included. A root that is not an object schema gets
/// `type: object` and empty `properties`, so that every provider accepts it.
pub fn canonicalize(schema: Value) -> Value {
    hoist_union(canonicalize_union(schema))
}

/// [`canonicalize`] without [`hoist_union`]: a union root keeps its `oneOf`/`anyOf`.
pub fn canonicalize_union(schema: Value) -> Value {
    canonical(schema).schema
}

/// A canonical decoding schema, with what the schema pass knew of its bounds that the schema no
/// longer says.
#[derive(Debug)]
pub(crate) struct Canonical {
    pub(crate) schema: Value,
    /// Whether `schema` states a bound (`#[arg(range(..))]`, `length`, `pattern`, a schemars
    /// attribute, a hand-written schema) beyond what the Rust type of the value refuses by itself.
    /// The pass removes an integer type's `format` (`uint32`, `int8`, ...): the `minimum: 0` of an
    /// unsigned integer and schemars' full range of an `i8`, `i16`, `u8` or `u16` are implied by
    /// that format ([`integer_range`]) and do not count. The format is read as the type's own
    /// statement: a hand-written `JsonSchema` that says `uint32` must refuse what `u32` refuses.
    pub(crate) states_bounds: bool,
    /// The inclusive range of each integer node whose `format` the pass removed (`uint32`: 0 to
    /// 4294967295), by the node's JSON Pointer in `schema`: what decoding the Rust type refuses,
    /// which the schema no longer says in full (a `u32` keeps only `minimum: 0`). Decoding names
    /// it in an error that the schema alone words (an `also:` line), as serde names it on its own.
    pub(crate) integer_ranges: Vec<(String, IntegerRange)>,
}

/// The inclusive range of an integer type: `(min, max)`.
pub(crate) type IntegerRange = (i128, i128);

impl Canonical {
    /// A schema the pass did not make (already canonical, or written by hand): its integer types
    /// are not known, so every bound it states counts.
    pub(crate) fn made_elsewhere(schema: Value) -> Self {
        let states_bounds = states_any(&schema);
        Self { schema, states_bounds, integer_ranges: Vec::new() }
    }
}

/// [`canonicalize_union`], with what the pass knew of the schema's bounds.
pub(crate) fn canonical(mut schema: Value) -> Canonical {
    if let Value::Bool(_) = schema {
        schema = Value::Object(Map::new());
    }
    if let Value::Object(root) = &mut schema {
        root.remove("$schema");
        root.remove("title");
        root.remove("description");
        root.entry("type").or_insert_with(|| Value::String("object".to_owned()));
        let union = root.contains_key("oneOf") || root.contains_key("anyOf");
        if !union || root.contains_key("properties") {
            root.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        }
        if union && root.get("properties").and_then(Value::as_object).is_some_and(Map::is_empty) {
            // schemars adds an empty `properties` beside a root `oneOf`; the branches hold them.
            root.remove("properties");
            root.remove("additionalProperties");
        }
    }
    let mut pass = Pass::default();
    visit(&mut schema, &mut pass);
    if let Value::Object(root) = &mut schema
        && (root.contains_key("oneOf") || root.contains_key("anyOf"))
        && !root.contains_key("properties")
    {
        root.remove("additionalProperties");
    }
    if let Value::Object(root) = &mut schema {
        // A tool with no arguments: exactly `{"type":"object","properties":{},"additionalProperties":false}`.
        if root.get("required").and_then(Value::as_array).is_some_and(Vec::is_empty) {
            root.remove("required");
        }
    }
    Canonical { schema, states_bounds: pass.states_bounds, integer_ranges: pass.integer_ranges }
}

/// The inclusive range of the integer type a schemars `format` names (`uint8`: 0 to 255; `uint`
/// and `int` are `usize` and `isize`), as decoding that type enforces it; an end is infinite
/// where the type's is beyond what an `f64` bound compares exactly (64 and 128 bits). `None` for
/// any other format.
pub(crate) fn integer_range(format: &str) -> Option<(f64, f64)> {
    Some(match format {
        "uint8" => (0.0, f64::from(u8::MAX)),
        "uint16" => (0.0, f64::from(u16::MAX)),
        "uint32" => (0.0, f64::from(u32::MAX)),
        "uint64" | "uint128" | "uint" => (0.0, f64::INFINITY),
        "int8" => (f64::from(i8::MIN), f64::from(i8::MAX)),
        "int16" => (f64::from(i16::MIN), f64::from(i16::MAX)),
        "int32" => (f64::from(i32::MIN), f64::from(i32::MAX)),
        "int64" | "int128" | "int" => (f64::NEG_INFINITY, f64::INFINITY),
        _ => return None,
    })
}

/// `true` for the pointer of a root property, `/properties/<name>`.
fn is_root_property(pointer: &str) -> bool {
    pointer.strip_prefix("/properties/").is_some_and(|name| !name.contains('/'))
}

/// Applies the canonical rules to one node and, through the subschemas, to all below it; sets
/// `states_bounds` when a node states a bound beyond its type (see [`Canonical::states_bounds`]).
fn visit(schema: &mut Value, pass: &mut Pass) {
    let Value::Object(node) = schema else { return };

    let mut range = None;
    if let Some(format) = node.get("format").and_then(Value::as_str)
        && !STANDARD_FORMATS.contains(&format)
    {
        let unsigned = format.starts_with("uint");
        range = integer_range(format);
        if let Some(exact) = integer_bounds(format) {
            pass.integer_ranges.push((pass.pointer.clone(), exact));
        }
        node.remove("format");
        if unsigned && !node.contains_key("minimum") {
            node.insert("minimum".to_owned(), Value::from(0));
        }
    }
    pass.states_bounds = pass.states_bounds || states_beyond(node, range);
    // A default is shown where the model reads it, on an argument (a root property); below that
    // it only says what serde fills in, which no provider needs.
    if !is_root_property(&pass.pointer) {
        node.remove("default");
    }
    node.remove("writeOnly");
    node.remove("readOnly");
    if node.remove(crate::secret::SECRET_MARK) == Some(Value::Bool(true)) {
        node.insert("writeOnly".to_owned(), Value::Bool(true));
    }
    if let Some(Value::Array(tuple)) = node.get("items")
        && !node.contains_key("prefixItems")
    {
        let tuple = tuple.clone();
        node.remove("items");
        node.insert("prefixItems".to_owned(), Value::Array(tuple));
    }
    if let Some(Value::String(title)) = node.remove("title") {
        let description = match node.remove("description") {
            Some(Value::String(d)) if !d.is_empty() => format!("{title}\n\n{d}"),
            _ => title,
        };
        node.insert("description".to_owned(), Value::String(description));
    }
    fold_unit_enum(node);
    if let Some(Value::String(description)) = node.get_mut("description") {
        *description = crate::rustdoc::reflow(description);
    }
    // An item schema's description is its type's doc comment (a use site cannot describe the
    // items of a `Vec<T>`): the list's own description, when it has one, is what the model reads.
    if node.get("description").and_then(Value::as_str).is_some_and(|d| !d.is_empty())
        && let Some(Value::Object(items)) = node.get_mut("items")
    {
        items.remove("description");
    }

    if node.contains_key("properties") && !node.contains_key("additionalProperties") {
        node.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    let required: Vec<String> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if !required.contains(name) {
                strip_null(property);
            }
        }
    }

    for key in SCHEMA_MAPS {
        if let Some(Value::Object(map)) = node.get_mut(*key) {
            for (name, v) in map.iter_mut() {
                pass.below(&[key, name], |pass| visit(v, pass));
            }
        }
    }
    for key in SCHEMA_VALUES.iter().chain(SCHEMA_ARRAYS) {
        match node.get_mut(*key) {
            Some(Value::Array(items)) => {
                for (index, v) in items.iter_mut().enumerate() {
                    pass.below(&[key, &index.to_string()], |pass| visit(v, pass));
                }
            }
            Some(other) if SCHEMA_VALUES.contains(key) => pass.below(&[key], |pass| visit(other, pass)),
            _ => {}
        }
    }
}

/// What [`visit`] learns of a schema as it walks it.
#[derive(Default)]
struct Pass {
    /// See [`Canonical::states_bounds`].
    states_bounds: bool,
    /// See [`Canonical::integer_ranges`].
    integer_ranges: Vec<(String, IntegerRange)>,
    /// The JSON Pointer of the node being visited.
    pointer: String,
}

impl Pass {
    /// Runs `then` with the pointer extended by `tokens` (escaped), then restores it.
    fn below(&mut self, tokens: &[&str], then: impl FnOnce(&mut Self)) {
        let len = self.pointer.len();
        for token in tokens {
            self.pointer.push('/');
            self.pointer.push_str(&pointer_escape(token));
        }
        then(self);
        self.pointer.truncate(len);
    }
}

/// The exact inclusive range of the integer type a schemars `format` names, up to 64 bits
/// (`usize` and `isize` as 64 bits, the targets this runs on); `None` for 128 bits (serde names
/// those `i128`/`u128`, which decoding leaves in its words) and any other format.
pub(crate) fn integer_bounds(format: &str) -> Option<IntegerRange> {
    Some(match format {
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        "uint64" | "uint" => (0, u64::MAX.into()),
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    })
}

/// An optional property: the schema of `T`, not `T | null` (a `null` sent for it still decodes,
/// as absent).
fn strip_null(schema: &mut Value) {
    let Value::Object(node) = schema else { return };
    if let Some(Value::Array(types)) = node.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            node.insert("type".to_owned(), only);
        }
    }
    if let Some(Value::Array(values)) = node.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = node.get_mut(key) else {
            continue;
        };
        branches.retain(|b| !is_null_schema(b));
        if branches.len() == 1 {
            let Some(Value::Object(only)) = node.remove(key).and_then(|b| match b {
                Value::Array(mut b) => Some(b.remove(0)),
                _ => None,
            }) else {
                continue;
            };
            // The use site (the property's own description) wins over the type's.
            for (k, v) in only {
                node.entry(k).or_insert(v);
            }
        }
    }
}

/// `true` for a schema that only allows `null` (`"type": "null"`, `"const": null`, or `"enum": [null]`).
pub(crate) fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const").is_some_and(Value::is_null)
        || schema.get("enum").and_then(Value::as_array).is_some_and(|e| e.len() == 1 && e[0].is_null())
}

/// `oneOf` of string constants (a unit-only enum whose variants carry docs) becomes one string
/// enum; the variant docs are listed in the description as `- value: doc`.
fn fold_unit_enum(node: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = node.get("oneOf").or_else(|| node.get("anyOf")) else {
        return;
    };
    let mut values = Vec::new();
    let mut docs = Vec::new();
    for branch in branches {
        let Value::Object(b) = branch else { return };
        let value = match (b.get("const"), b.get("enum").and_then(Value::as_array)) {
            (Some(Value::String(c)), _) => c.clone(),
            (None, Some(e)) if e.len() == 1 && e[0].is_string() => e[0].as_str().unwrap_or_default().to_owned(),
            _ => return,
        };
        if b.keys().any(|k| !matches!(k.as_str(), "const" | "enum" | "type" | "description" | "title")) {
            return;
        }
        let doc = b.get("description").or_else(|| b.get("title")).and_then(Value::as_str).map(str::to_owned);
        if let Some(doc) = doc {
            docs.push(format!("- {value}: {doc}"));
        }
        values.push(Value::String(value));
    }
    node.remove("oneOf");
    node.remove("anyOf");
    node.insert("type".to_owned(), Value::String("string".to_owned()));
    node.insert("enum".to_owned(), Value::Array(values));
    if !docs.is_empty() {
        let listed = docs.join("\n");
        let description = match node.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{d}\n{listed}"),
            _ => listed,
        };
        node.insert("description".to_owned(), Value::String(description));
    }
}

/// The names of the properties accepted at `path` (segments: object keys, or `None` for an array
/// element), following `$ref`s into `$defs`. Empty when the path leaves the schema.
#[cfg(feature = "dynamic")]
pub(crate) fn accepted_fields(root: &Value, path: &[Segment]) -> Vec<String> {
    let mut node = resolve(root, root);
    for segment in path {
        let Some(current) = node else {
            return Vec::new();
        };
        node = match segment {
            Segment::Key(key) => current.get("properties").and_then(|p| p.get(key.as_str())),
            Segment::Index(_) => current.get("items"),
        }
        .and_then(|n| resolve(root, n));
    }
    node.and_then(|n| n.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// An object key.
    Key(String),
    /// An array index (0-based).
    Index(usize),
}

/// `key` as one reference token of a JSON Pointer (RFC 6901, section 3): `~` as `~0`, `/` as
/// `~1`.
pub(crate) fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Formats a path as `filter.name`, `items[2].id`; a key holding `.`, `[`, `]`, `"`, a backtick or a
/// control character (or empty)
/// is written as a quoted JSON string in brackets: `files["a.rs"].id`.
pub(crate) fn format_path(path: &[Segment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            // A key that could read as more than one segment (`a.b`, `a[0]`, empty) is quoted.
            Segment::Key(key)
                if key.is_empty() || key.contains(['.', '[', ']', '"', '`']) || key.contains(char::is_control) =>
            {
                out.push('[');
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(']');
            }
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// Follows a local `$ref` (`#/$defs/Name`), at most a few hops.
pub(crate) fn resolve<'a>(root: &'a Value, mut node: &'a Value) -> Option<&'a Value> {
    for _ in 0..8 {
        match node.get("$ref").and_then(Value::as_str) {
            Some(reference) => node = root.pointer(reference.strip_prefix('#')?)?,
            None => return Some(node),
        }
    }
    None
}

/// Hoists a union root (`oneOf`/`anyOf` whose branches are all object schemas) into one plain
/// object, the only root shape every provider accepts (Anthropic and Gemini refuse a root
/// `oneOf`). Any other schema is returned unchanged.
///
/// - The tag of an internally tagged enum (a property that every branch fixes to one string with
///   `const` or a one-value `enum`, such as `op` of `#[serde(tag = "op")]`) becomes one required
///   `{"type":"string","enum":[..variants]}`, whose description lists each variant's doc
///   (`- Read: Read a file.`).
/// - Every other property of every branch is hoisted. Its description says which variants take
///   it, with each variant's own doc (`Used when op is Read: the file to read; Write (required): the
///   file to write`), unless every variant takes it with the same schema, when it is kept as it is. A
///   property whose schema differs between variants becomes an `anyOf` of the distinct schemas.
/// - `required` keeps the tag and the properties every variant requires.
/// - The root is closed (`additionalProperties: false`); the per-variant rules are enforced by
///   decoding (see [`decoding_schema`]).
pub fn hoist_union(schema: Value) -> Value {
    let Value::Object(mut root) = schema else { return schema };
    let key = if root.contains_key("oneOf") { "oneOf" } else { "anyOf" };
    let Some(Value::Array(branches)) = root.get(key) else {
        return Value::Object(root);
    };
    let objects: Vec<&Map<String, Value>> = branches.iter().filter_map(Value::as_object).collect();
    if objects.is_empty()
        || objects.len() != branches.len()
        || objects.iter().any(|b| !b.get("properties").is_some_and(Value::is_object))
    {
        return Value::Object(root);
    }
    let tag = union_tag(&objects);
    let mut variant_docs = Vec::new();
    // property name -> (variant label, required there, schema), in first-seen order
    let mut order: Vec<String> = Vec::new();
    let mut uses: std::collections::HashMap<String, Vec<(String, bool, Value)>> = Default::default();
    for (index, branch) in objects.iter().enumerate() {
        let label = match &tag {
            Some((_, values)) => values[index].clone(),
            None => format!("variant {}", index + 1),
        };
        if let Some(doc) = branch.get("description").and_then(Value::as_str) {
            variant_docs.push(format!("- {label}: {doc}"));
        }
        let required: Vec<&str> = branch
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (name, property) in branch["properties"].as_object().into_iter().flatten() {
            if tag.as_ref().is_some_and(|(t, _)| t == name) {
                continue;
            }
            if !uses.contains_key(name) {
                order.push(name.clone());
            }
            uses.entry(name.clone()).or_default().push((
                label.clone(),
                required.contains(&name.as_str()),
                property.clone(),
            ));
        }
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    if let Some((name, values)) = &tag {
        let mut tag_schema = Map::new();
        tag_schema.insert("type".to_owned(), Value::from("string"));
        tag_schema.insert("enum".to_owned(), Value::from(values.clone()));
        let mut description = format!("The action: one of {}.", values.join(", "));
        if !variant_docs.is_empty() {
            description = format!("{description}\n{}", variant_docs.join("\n"));
        }
        tag_schema.insert("description".to_owned(), Value::String(description));
        properties.insert(name.clone(), Value::Object(tag_schema));
        required.push(Value::String(name.clone()));
    }
    for name in order {
        let used = &uses[&name];
        let without_doc = |v: &Value| {
            let mut v = v.clone();
            if let Value::Object(m) = &mut v {
                m.remove("description");
            }
            v
        };
        let everywhere = used.len() == objects.len();
        let same = used.windows(2).all(|w| w[0].2 == w[1].2);
        if everywhere && used.iter().all(|u| u.1) {
            required.push(Value::String(name.clone()));
        }
        if everywhere && same {
            properties.insert(name, used[0].2.clone());
            continue;
        }
        let mut distinct: Vec<Value> = Vec::new();
        for (_, _, schema) in used {
            let bare = without_doc(schema);
            if !distinct.contains(&bare) {
                distinct.push(bare);
            }
        }
        let mut schema = if distinct.len() == 1 {
            distinct.remove(0)
        } else {
            let mut any = Map::new();
            any.insert("anyOf".to_owned(), Value::Array(distinct));
            Value::Object(any)
        };
        let description = used
            .iter()
            .map(|(label, req, s)| {
                let mut text = label.clone();
                if *req {
                    text.push_str(" (required)");
                }
                match s.get("description").and_then(Value::as_str) {
                    Some(doc) => format!("{text}: {doc}"),
                    None => format!("{text}."),
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        let description = match &tag {
            Some((t, _)) => format!("Used when {t} is {}", description),
            None => format!("Used by {description}"),
        };
        if let Value::Object(m) = &mut schema {
            m.insert("description".to_owned(), Value::String(description));
        }
        properties.insert(name, schema);
    }
    let defs = root.remove("$defs");
    let mut out = Map::new();
    out.insert("type".to_owned(), Value::from("object"));
    out.insert("properties".to_owned(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".to_owned(), Value::Array(required));
    }
    out.insert("additionalProperties".to_owned(), Value::Bool(false));
    if let Some(defs) = defs {
        out.insert("$defs".to_owned(), defs);
    }
    Value::Object(out)
}

/// The tag of an internally tagged union: the property every branch fixes to one string, with
/// the branches' values in order.
pub(crate) fn union_tag(branches: &[&Map<String, Value>]) -> Option<(String, Vec<String>)> {
    let first = branches.first()?.get("properties")?.as_object()?;
    'names: for name in first.keys() {
        let mut values = Vec::new();
        for branch in branches {
            let Some(value) = branch.get("properties").and_then(|p| p.get(name)).and_then(fixed_string) else {
                continue 'names;
            };
            values.push(value);
        }
        return Some((name.clone(), values));
    }
    None
}

/// The one string a schema allows (`const`, or a one-value `enum`).
pub(crate) fn fixed_string(schema: &Value) -> Option<String> {
    if let Some(Value::String(c)) = schema.get("const") {
        return Some(c.clone());
    }
    match schema.get("enum").and_then(Value::as_array).map(Vec::as_slice) {
        Some([Value::String(only)]) => Some(only.clone()),
        _ => None,
    }
}

// The bounds and patterns a schema states, which decoding enforces (`decode::bounds`).

/// The keywords read here.
pub(crate) const BOUND_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
];

/// Whether `node` (one schema node) states a bound that a value of its Rust type could break.
/// `range` is the inclusive range of the node's integer type (see
/// [`integer_range`](crate::schema::integer_range)), `None` when its type is not known to be an
/// integer type: a `minimum` at or below the range's start and a `maximum` at or above its end say
/// only what decoding the type refuses anyway (serde refuses `-1` for a `u32`, `256` for a `u8`);
/// every other bound keyword counts.
pub(crate) fn states_beyond(node: &serde_json::Map<String, Value>, range: Option<(f64, f64)>) -> bool {
    BOUND_KEYWORDS.iter().any(|&keyword| match (node.get(keyword), range) {
        (None, _) => false,
        (Some(bound), Some((min, _))) if keyword == "minimum" => bound.as_f64().is_none_or(|b| b > min),
        (Some(bound), Some((_, max))) if keyword == "maximum" => bound.as_f64().is_none_or(|b| b < max),
        (Some(_), _) => true,
    })
}

/// Whether `node` (a schema whose integer types are not known, such as one written by hand)
/// states a bound at any depth: every bound keyword counts.
pub(crate) fn states_any(node: &Value) -> bool {
    match node {
        Value::Object(map) => {
            states_beyond(map, None)
                || map.iter().any(|(k, v)| match k.as_str() {
                    // Maps of names to schemas: a property named `minimum` is not a bound.
                    "properties" | "patternProperties" | "$defs" | "definitions" => {
                        v.as_object().is_some_and(|m| m.values().any(states_any))
                    }
                    "enum" | "const" | "examples" => false,
                    _ => states_any(v),
                })
        }
        Value::Array(items) => items.iter().any(states_any),
        _ => false,
    }
}

/// Every `pattern` keyword of the schema `node` at any depth, with its JSON Pointer below `path`
/// (the pointer of `node` itself), in schema order. Names of properties and definitions, and the
/// values of `enum`, `const`, `default` and `examples`, are not keywords.
pub(crate) fn patterns<'a>(node: &'a Value, path: &str, out: &mut Vec<(String, &'a str)>) {
    let pointer = |key: &str| format!("{path}/{}", pointer_escape(key));
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                match key.as_str() {
                    "pattern" => {
                        if let Some(pattern) = value.as_str() {
                            out.push((pointer(key), pattern));
                        }
                    }
                    "properties" | "patternProperties" | "$defs" | "definitions" => {
                        for (name, schema) in value.as_object().into_iter().flatten() {
                            patterns(schema, &format!("{}/{}", pointer(key), pointer_escape(name)), out);
                        }
                    }
                    "enum" | "const" | "default" | "examples" => {}
                    _ => patterns(value, &pointer(key), out),
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                patterns(item, &format!("{path}/{index}"), out);
            }
        }
        _ => {}
    }
}
