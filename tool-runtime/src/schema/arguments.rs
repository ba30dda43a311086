//! The arguments of a `#[tool]` function: each argument's schema ([`ArgumentSchema`]), built
//! into one arguments object without deriving `JsonSchema` for the struct the macro decodes into.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use super::canonical::{Canonical, canonical};

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
pub(super) fn decoding_generator() -> schemars::SchemaGenerator {
    SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
            s.definitions_path = "/$defs".into();
        })
        .into_generator()
}
