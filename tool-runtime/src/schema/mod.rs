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

mod arguments;
mod bounds;
mod canonical;
mod paths;
mod union;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

pub(crate) use arguments::arguments_decoding;
use arguments::decoding_generator;
pub use arguments::{
    ArgumentBound, ArgumentSchema, ArgumentSchemaFn, BoundNumber, DefaultJson, DefaultJsonNone, DefaultJsonSerialize,
    argument_schema, arguments_decoding_schema,
};
pub(crate) use bounds::{BOUND_KEYWORDS, patterns};
pub(crate) use canonical::{Canonical, IntegerRange, canonical, is_null_schema};
#[cfg(feature = "dynamic")]
pub(crate) use paths::accepted_fields;
pub(crate) use paths::{Segment, format_path, pointer_escape, resolve};
pub use union::hoist_union;
pub(crate) use union::union_tag;

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
