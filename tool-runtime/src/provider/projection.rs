//! One tool definition, projected for each consumer: [`Provider::render_tool`] (and
//! [`Provider::render_tools`]) for a provider's request, [`ToolDefinition::mcp_entry`] for an MCP
//! `tools/list` reply.
//!
//! Every projection starts from the canonical schema (see [`crate::schema`]) and is a separate,
//! fail-loud pass: a schema a consumer cannot take is a [`ProjectionError`] naming the tool and
//! the JSON Pointer of the offending schema node, never a request the provider refuses later.
//! The rules come from the providers' references and the request errors users reported, and are
//! checked against the providers' own client libraries by `conformance/check.py`.

use std::fmt;

use serde_json::{Map, Value, json};

use super::gemini::gemini_schema;
use super::notes::{bound_note, note_in_description};
use super::{GeminiParameters, Provider, Rendering, Strict};
use crate::ToolDefinition;
use crate::schema::pointer_escape;

/// The `format` values OpenAI strict mode accepts (Structured Outputs, "Supported schemas").
const STRICT_FORMATS: &[&str] = &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];
/// Keywords OpenAI strict mode refuses.
const STRICT_FORBIDDEN: &[&str] = &[
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "prefixItems",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
];
/// OpenAI strict limits: object nesting depth, total properties, total enum values.
const STRICT_MAX_DEPTH: usize = 10;
const STRICT_MAX_PROPERTIES: usize = 5000;
const STRICT_MAX_ENUM_VALUES: usize = 1000;

/// Who a definition is for: one entry of a provider's request `tools` array, or an MCP
/// `tools/list` entry.
#[deprecated(
    note = "use `Provider::render_tool` / `Provider::render_tools` (`render_tools_with` and a `Rendering` for `OpenAiStrict` and `GeminiJsonSchema`) or `ToolDefinition::mcp_entry`"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// OpenAI Chat Completions: `{"type":"function","function":{"name","description","parameters","strict"}}`.
    /// Non-strict (`strict: false`, the canonical schema) unless the tool asks for strict mode
    /// (`#[tool(strict)]`), then as [`Target::OpenAiStrict`] decides for such a tool.
    OpenAiChat,
    /// OpenAI Responses: `{"type":"function","name","description","parameters","strict"}`; strict
    /// mode as for [`Target::OpenAiChat`].
    OpenAiResponses,
    /// OpenAI Chat Completions with strict mode wherever it is possible ("auto"): a tool that
    /// asks for strict mode gets it or the projection fails; a tool that refuses it
    /// (`#[tool(strict = false)]`) is sent non-strict; any other tool is strict when its schema
    /// complies and non-strict otherwise. See [`openai_strict_schema`] for the strict form.
    OpenAiStrict,
    /// Anthropic Messages: `{"name","description","input_schema"}`.
    Anthropic,
    /// Gemini: one `functionDeclarations[]` entry, `{"name","description","parameters"}`, the
    /// parameters being [`gemini_schema`] of the canonical schema (left out when the tool has no
    /// properties): the OpenAPI 3.0 subset, for the Live API and older models.
    Gemini,
    /// Gemini with full JSON Schema: `{"name","description","parametersJsonSchema"}`, the
    /// canonical schema as it is (`anyOf`, `$ref` and recursion, `additionalProperties`, every
    /// bound; left out when the tool has no properties). What gemini-cli sends for every tool;
    /// `parametersJsonSchema` and `parameters` are mutually exclusive.
    GeminiJsonSchema,
    /// An MCP `tools/list` entry:
    /// `{"name","description","inputSchema","outputSchema"?,"annotations"?}`. `outputSchema` is
    /// the tool's [output schema](ToolDefinition::output_schema) when it has one that is an object
    /// schema (`"type": "object"`, which MCP requires of it); another one is left out. The
    /// annotations come from the tool's tags, as [`mcp_annotations`](super::mcp_annotations)
    /// gives them.
    Mcp,
}

#[allow(deprecated)]
impl Target {
    /// Every target, in declaration order.
    pub const ALL: [Target; 7] = [
        Target::OpenAiChat,
        Target::OpenAiResponses,
        Target::OpenAiStrict,
        Target::Anthropic,
        Target::Gemini,
        Target::GeminiJsonSchema,
        Target::Mcp,
    ];

    /// `"openai-chat"`, `"openai-responses"`, `"openai-strict"`, `"anthropic"`, `"gemini"`,
    /// `"gemini-json-schema"` or `"mcp"`.
    pub const fn id(self) -> &'static str {
        match self {
            Self::OpenAiChat => "openai-chat",
            Self::OpenAiResponses => "openai-responses",
            Self::OpenAiStrict => "openai-strict",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::GeminiJsonSchema => "gemini-json-schema",
            Self::Mcp => "mcp",
        }
    }
}

#[allow(deprecated)]
impl Target {
    /// The form of [`project`] this target names.
    fn form(self) -> Form {
        match self {
            Self::OpenAiChat => Form::OpenAi(Provider::OpenAiChat, Strict::AsDeclared),
            Self::OpenAiResponses => Form::OpenAi(Provider::OpenAiResponses, Strict::AsDeclared),
            Self::OpenAiStrict => Form::OpenAi(Provider::OpenAiChat, Strict::WherePossible),
            Self::Anthropic => Form::Anthropic,
            Self::Gemini => Form::Gemini(GeminiParameters::OpenApiSubset),
            Self::GeminiJsonSchema => Form::Gemini(GeminiParameters::JsonSchema),
            Self::Mcp => Form::Mcp,
        }
    }
}

/// One entry shape [`project`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// An OpenAI provider (Chat Completions or Responses), with its strict-mode choice.
    OpenAi(Provider, Strict),
    Anthropic,
    Gemini(GeminiParameters),
    Mcp,
}

impl Form {
    /// The form of `provider`'s entries.
    pub(super) fn of(provider: Provider, rendering: Rendering) -> Self {
        match provider {
            Provider::OpenAiChat | Provider::OpenAiResponses => Self::OpenAi(provider, rendering.strict),
            Provider::Anthropic => Self::Anthropic,
            Provider::Gemini => Self::Gemini(rendering.gemini),
        }
    }

    /// The consumer's id, as [`ProjectionError::target`] names it.
    fn id(self) -> &'static str {
        match self {
            Self::OpenAi(provider, _) => provider.id(),
            Self::Anthropic => Provider::Anthropic.id(),
            Self::Gemini(_) => Provider::Gemini.id(),
            Self::Mcp => "mcp",
        }
    }
}

#[allow(deprecated)]
impl fmt::Display for Target {
    /// Writes the target's [`id`](Target::id).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A schema node a consumer cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{path}`: {message}")]
pub struct SchemaError {
    /// The JSON Pointer of the node in the canonical schema (`/properties/meta/additionalProperties`;
    /// empty for the root).
    pub path: String,
    /// What is wrong and what to change.
    pub message: String,
}

/// A definition that cannot be sent to a target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}` cannot be sent to {target}: {error}")]
pub struct ProjectionError {
    /// The tool's name.
    pub tool: String,
    /// Where it was to be sent: a [`Provider::id`] (`openai-chat`, ...) or `mcp`.
    pub target: &'static str,
    /// The node and the reason.
    pub error: SchemaError,
}

impl ToolDefinition {
    /// This definition as `target` takes it: the whole tool entry (see [`Target`] for each
    /// shape), not just the schema.
    ///
    /// # Errors
    /// As [`Provider::render_tool`].
    #[deprecated(
        note = "use `Provider::render_tool` (`render_tool_with` and a `Rendering` for `Target::OpenAiStrict` and `Target::GeminiJsonSchema`) or `ToolDefinition::mcp_entry`"
    )]
    #[allow(deprecated)]
    pub fn for_provider(&self, target: Target) -> Result<Value, ProjectionError> {
        project(self, target.form())
    }

    /// The entry of this tool in an MCP `tools/list` reply:
    /// `{"name","description","inputSchema","outputSchema"?,"annotations"?}`. `outputSchema` is
    /// the tool's [output schema](ToolDefinition::output_schema) when it has one that is an object
    /// schema (`"type": "object"`, which MCP requires of it); another one is left out. The
    /// annotations come from the tool's tags, as [`mcp_annotations`](super::mcp_annotations)
    /// gives them.
    ///
    /// # Errors
    /// A [`ProjectionError`] when the input schema is not an object schema.
    pub fn mcp_entry(&self) -> Result<Value, ProjectionError> {
        project(self, Form::Mcp)
    }

    /// `true` when [`Strict::WherePossible`] sends this tool with `strict: true`.
    pub fn is_openai_strict(&self) -> bool {
        match self.strict {
            Some(false) => false,
            _ => openai_strict_schema(&self.input_schema).is_ok(),
        }
    }
}

/// `definition` as the consumer of `form` takes it: the whole tool entry.
///
/// # Errors
/// See [`Provider::render_tool`] and [`ToolDefinition::mcp_entry`].
pub(super) fn project(definition: &ToolDefinition, form: Form) -> Result<Value, ProjectionError> {
    let this = definition;
    let fail = |error: SchemaError| ProjectionError { tool: this.name.clone(), target: form.id(), error };
    check_object_root(&this.input_schema).map_err(fail)?;
    match form {
        Form::OpenAi(provider, choice) => {
            let strict_schema = || openai_strict_schema(&this.input_schema);
            let (parameters, strict) = match (this.strict, choice) {
                (Some(true), _) => (strict_schema().map_err(fail)?, true),
                (None, Strict::WherePossible) => match strict_schema() {
                    Ok(strict) => (strict, true),
                    Err(_) => (this.input_schema.clone(), false),
                },
                _ => (this.input_schema.clone(), false),
            };
            Ok(openai_entry(this, provider == Provider::OpenAiChat, parameters, strict))
        }
        Form::Anthropic => {
            check_anthropic(&this.input_schema).map_err(fail)?;
            let mut entry =
                json!({"name": this.name, "description": this.description, "input_schema": this.input_schema});
            if let Some(callers) = allowed_callers(this, ANTHROPIC_PROGRAM_CALLER) {
                entry["allowed_callers"] = callers;
            }
            Ok(entry)
        }
        Form::Gemini(form) => {
            let (key, parameters) = match form {
                GeminiParameters::OpenApiSubset => {
                    let parameters = gemini_schema(&this.input_schema);
                    check_gemini(&parameters, &mut String::new()).map_err(fail)?;
                    ("parameters", parameters)
                }
                GeminiParameters::JsonSchema => ("parametersJsonSchema", this.input_schema.clone()),
            };
            let mut entry = Map::new();
            entry.insert("name".to_owned(), json!(this.name));
            entry.insert("description".to_owned(), json!(this.description));
            if parameters.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty()) {
                entry.insert(key.to_owned(), parameters);
            }
            Ok(Value::Object(entry))
        }
        Form::Mcp => {
            let mut entry = Map::new();
            entry.insert("name".to_owned(), json!(this.name));
            entry.insert("description".to_owned(), json!(this.description));
            entry.insert("inputSchema".to_owned(), this.input_schema.clone());
            if let Some(output) = &this.output_schema
                && output.get("type").and_then(Value::as_str) == Some("object")
            {
                entry.insert("outputSchema".to_owned(), output.clone());
            }
            entry.insert("annotations".to_owned(), Value::Object(mcp_annotations(this)));
            Ok(Value::Object(entry))
        }
    }
}

/// The MCP `annotations` of a tool, from its tags (the one mapping: [`ToolDefinition::mcp_entry`]
/// and an MCP server's `tools/list` both use it):
/// - `readOnlyHint: true` for a tool tagged `read_only`;
/// - `destructiveHint: true` for one tagged `destructive`, `false` for any other tool that is not
///   read-only (MCP's default for an absent `destructiveHint` is `true`, so a tool that only adds
///   would read as destructive);
/// - `idempotentHint: true` for one tagged `idempotent`;
/// - `openWorldHint`, always given: `true` exactly for a tool tagged `external` (the tag that marks
///   a tool reaching outside the machine; MCP's default for an absent hint is `true`).
///
/// An absent `readOnlyHint` or `idempotentHint` means `false`, as in MCP.
pub fn mcp_annotations(definition: &ToolDefinition) -> Map<String, Value> {
    let has = |tag: &str| definition.tags.iter().any(|t| t == tag);
    let mut annotations = Map::new();
    if has("read_only") {
        annotations.insert("readOnlyHint".to_owned(), Value::Bool(true));
    }
    if has("destructive") {
        annotations.insert("destructiveHint".to_owned(), Value::Bool(true));
    } else if !has("read_only") {
        annotations.insert("destructiveHint".to_owned(), Value::Bool(false));
    }
    if has("idempotent") {
        annotations.insert("idempotentHint".to_owned(), Value::Bool(true));
    }
    annotations.insert("openWorldHint".to_owned(), Value::Bool(has("external")));
    annotations
}

/// The tags of a tool imported from an MCP server, from its `annotations` (the way back of
/// [`mcp_annotations`]), with MCP's defaults for absent hints (MCP specification, `ToolAnnotations`:
/// `readOnlyHint` false, `destructiveHint` true, `idempotentHint` false, `openWorldHint` true):
/// - `read_only` when `readOnlyHint` is `true`;
/// - `destructive` when the tool is not read-only and `destructiveHint` is `true` or absent (MCP
///   reads `destructiveHint` only for tools that are not read-only);
/// - `idempotent` when `idempotentHint` is `true`;
/// - `external` (the tag the [`DefaultPolicy`](crate::DefaultPolicy) refuses) when `openWorldHint`
///   is `true` or absent: a tool that does not say it stays on this machine is taken to reach
///   outside it.
///
/// A hint that is not a boolean counts as absent. The tags come in this order; for the tags of a
/// tool that has any of the four, `tags_from_mcp_annotations(&mcp_annotations(d))` gives them back.
pub fn tags_from_mcp_annotations(annotations: &Map<String, Value>) -> Vec<String> {
    let hint = |name: &str, default: bool| annotations.get(name).and_then(Value::as_bool).unwrap_or(default);
    let read_only = hint("readOnlyHint", false);
    let mut tags = Vec::new();
    if read_only {
        tags.push("read_only".to_owned());
    } else if hint("destructiveHint", true) {
        tags.push("destructive".to_owned());
    }
    if hint("idempotentHint", false) {
        tags.push("idempotent".to_owned());
    }
    if hint("openWorldHint", true) {
        tags.push(crate::EXTERNAL_TAG.to_owned());
    }
    tags
}

fn openai_entry(definition: &ToolDefinition, chat: bool, parameters: Value, strict: bool) -> Value {
    if chat {
        json!({
            "type": "function",
            "function": {
                "name": definition.name,
                "description": definition.description,
                "parameters": parameters,
                "strict": strict,
            },
        })
    } else {
        let mut entry = json!({
            "type": "function",
            "name": definition.name,
            "description": definition.description,
            "parameters": parameters,
            "strict": strict,
        });
        if let Some(callers) = allowed_callers(definition, OPENAI_PROGRAM_CALLER) {
            entry["allowed_callers"] = callers;
        }
        entry
    }
}

/// The caller Anthropic's `allowed_callers` names for a program of its code execution tool.
pub(super) const ANTHROPIC_PROGRAM_CALLER: &str = "code_execution_20250825";
/// The caller OpenAI Responses' `allowed_callers` names for a program (programmatic tool calling).
pub(super) const OPENAI_PROGRAM_CALLER: &str = "programmatic";

/// The `allowed_callers` of a tool that declares [`Callers`](crate::Callers) `code` or `both`
/// (`["program"]`, `["direct", "program"]`, `program` being the provider's name for a program's
/// call); `None` for a tool that does not, which the providers read as direct calls only.
fn allowed_callers(definition: &ToolDefinition, program: &str) -> Option<Value> {
    match definition.callers {
        crate::Callers::Direct => None,
        crate::Callers::Code => Some(json!([program])),
        crate::Callers::Both => Some(json!(["direct", program])),
    }
}

fn check_object_root(schema: &Value) -> Result<(), SchemaError> {
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => Ok(()),
        _ => Err(SchemaError {
            path: String::new(),
            message: "the root of a tool's input schema must be `{\"type\":\"object\", ...}`".to_owned(),
        }),
    }
}

/// Anthropic: no root `oneOf`/`anyOf`/`allOf`, property names `^[a-zA-Z0-9_.-]{1,64}$`, no
/// OpenAPI `nullable`.
fn check_anthropic(schema: &Value) -> Result<(), SchemaError> {
    for key in ["oneOf", "anyOf", "allOf"] {
        if schema.get(key).is_some() {
            return Err(SchemaError {
                path: format!("/{key}"),
                message: format!(
                    "Anthropic refuses a root `{key}`; make the input one object (see `schema::hoist_union`)"
                ),
            });
        }
    }
    fn walk(node: &Value, path: &mut String) -> Result<(), SchemaError> {
        match node {
            Value::Object(map) => {
                if map.contains_key("nullable") {
                    return Err(SchemaError {
                        path: format!("{path}/nullable"),
                        message: "`nullable` is OpenAPI, not JSON Schema 2020-12; leave the property out of `required` instead".to_owned(),
                    });
                }
                if let Some(Value::Object(properties)) = map.get("properties") {
                    for name in properties.keys() {
                        let valid = (1..=64).contains(&name.len())
                            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
                        if !valid {
                            return Err(SchemaError {
                                path: format!("{path}/properties/{}", pointer_escape(name)),
                                message: format!(
                                    "property name `{name}` is not accepted by Anthropic (`^[a-zA-Z0-9_.-]{{1,64}}$`); rename it"
                                ),
                            });
                        }
                    }
                }
                for (key, child) in map {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&pointer_escape(key));
                    walk(child, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{index}"));
                    walk(item, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
    walk(schema, &mut String::new())
}

/// Gemini: a required property is never an empty schema.
fn check_gemini(node: &Value, path: &mut String) -> Result<(), SchemaError> {
    let Some(map) = node.as_object() else { return Ok(()) };
    if let (Some(Value::Object(properties)), Some(Value::Array(required))) =
        (map.get("properties"), map.get("required"))
    {
        for name in required.iter().filter_map(Value::as_str) {
            if properties.get(name).and_then(Value::as_object).is_none_or(Map::is_empty) {
                return Err(SchemaError {
                    path: format!("{path}/properties/{}", pointer_escape(name)),
                    message: "a required property has no schema; Gemini refuses it: give the property a type"
                        .to_owned(),
                });
            }
        }
    }
    for (key, child) in map {
        let len = path.len();
        path.push('/');
        path.push_str(&pointer_escape(key));
        match child {
            Value::Object(children) if key == "properties" => {
                for (name, property) in children {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&pointer_escape(name));
                    check_gemini(property, path)?;
                    path.truncate(len);
                }
            }
            Value::Object(_) => check_gemini(child, path)?,
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{index}"));
                    check_gemini(item, path)?;
                    path.truncate(len);
                }
            }
            _ => {}
        }
        path.truncate(len);
    }
    Ok(())
}

/// The OpenAI strict-mode form of a canonical schema (Structured Outputs, "Supported schemas").
///
/// - Every object node gets `additionalProperties: false` and lists every property in
///   `required`, in the order of `properties`; a property that was optional becomes nullable:
///   `"type": "T"` becomes `"type": ["T","null"]`, any other schema becomes
///   `{"anyOf":[<schema>, {"type":"null"}]}` with the description kept outside. A `null` sent for
///   it decodes as absent (see [`crate::decode`]).
/// - `oneOf` becomes `anyOf` (strict mode has no `oneOf`; the branches of a serde enum are
///   disjoint, so the meaning is kept).
/// - A `$ref` with sibling keywords (a use-site description) becomes
///   `{"anyOf":[{"$ref":..}], <siblings>}`, so that the reference stays a reference.
/// - A `format` strict mode does not know (anything but date-time, time, date, duration, email,
///   hostname, ipv4, ipv6, uuid) is removed: it is a hint, and the value's type is kept.
/// - `writeOnly` (the mark of a [`Secret<T>`](crate::Secret) argument) is removed: strict mode's
///   supported keywords do not list it. The registry still finds the call's secrets by the
///   canonical schema. (Gemini's projection drops it too, as every key outside its `Schema`;
///   Anthropic and MCP keep it, as JSON Schema 2020-12 allows.)
///
/// # Errors
/// A [`SchemaError`] with the JSON Pointer of the first node strict mode cannot take: a root that
/// is not a plain object, `allOf`, `not`, `if`/`then`/`else`, `dependent*`, `patternProperties`,
/// a tuple (`prefixItems`), `default`, an open map (`additionalProperties` with a schema), a node
/// without any type (such as `serde_json::Value`'s `{}`), more than 10 levels of nested objects,
/// more than 5000 properties or more than 1000 enum values in all.
pub fn openai_strict_schema(schema: &Value) -> Result<Value, SchemaError> {
    for key in ["anyOf", "oneOf", "allOf", "$ref"] {
        if schema.get(key).is_some() {
            return Err(SchemaError {
                path: format!("/{key}"),
                message: format!("strict mode needs a plain object root, not a root `{key}`"),
            });
        }
    }
    let mut counts = (0usize, 0usize);
    let mut out = strict_node(schema, &mut String::new(), 0, &mut counts)?;
    if let Some(Value::Object(defs)) = schema.get("$defs") {
        let mut converted = Map::new();
        for (name, def) in defs {
            let mut path = format!("/$defs/{}", pointer_escape(name));
            converted.insert(name.clone(), strict_node(def, &mut path, 0, &mut counts)?);
        }
        out.as_object_mut().map(|m| m.insert("$defs".to_owned(), Value::Object(converted)));
    }
    Ok(out)
}

fn strict_error(path: &str, message: impl Into<String>) -> SchemaError {
    SchemaError { path: path.to_owned(), message: message.into() }
}

/// One node of [`openai_strict_schema`]; `depth` counts enclosing objects, `counts` the
/// properties and enum values seen so far.
fn strict_node(
    node: &Value,
    path: &mut String,
    depth: usize,
    counts: &mut (usize, usize),
) -> Result<Value, SchemaError> {
    let Some(map) = node.as_object() else {
        return Err(strict_error(path, "a boolean schema has no strict form; give the value a type"));
    };
    for key in STRICT_FORBIDDEN {
        if map.contains_key(*key) {
            return Err(strict_error(&format!("{path}/{key}"), format!("strict mode does not support `{key}`")));
        }
    }
    let typed = ["type", "anyOf", "oneOf", "$ref", "enum", "const"].iter().any(|k| map.contains_key(*k));
    if !typed {
        return Err(strict_error(path, "a value of any JSON type has no strict form; give it a type"));
    }
    if let Some(additional) = map.get("additionalProperties")
        && additional != &Value::Bool(false)
    {
        return Err(strict_error(
            &format!("{path}/additionalProperties"),
            "strict mode refuses an open map (an object with `additionalProperties`); use a list of key/value objects",
        ));
    }
    let mut out = Map::new();
    if map.contains_key("$ref") && map.len() > 1 {
        let mut reference = Map::new();
        reference.insert("$ref".to_owned(), map["$ref"].clone());
        out.insert("anyOf".to_owned(), Value::Array(vec![Value::Object(reference)]));
    }
    for (key, value) in map {
        match key.as_str() {
            "$ref" if map.len() > 1 => {}
            "$defs" => {}
            "format" => {
                if value.as_str().is_some_and(|f| STRICT_FORMATS.contains(&f)) {
                    out.insert(key.clone(), value.clone());
                }
            }
            "enum" => {
                counts.1 += value.as_array().map_or(0, Vec::len);
                if counts.1 > STRICT_MAX_ENUM_VALUES {
                    return Err(strict_error(
                        &format!("{path}/enum"),
                        "strict mode allows at most 1000 enum values in all",
                    ));
                }
                out.insert(key.clone(), value.clone());
            }
            "properties" => {
                let Some(properties) = value.as_object() else { continue };
                if depth + 1 > STRICT_MAX_DEPTH {
                    return Err(strict_error(path, "strict mode allows at most 10 levels of nested objects"));
                }
                counts.0 += properties.len();
                if counts.0 > STRICT_MAX_PROPERTIES {
                    return Err(strict_error(path, "strict mode allows at most 5000 properties in all"));
                }
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut converted = Map::new();
                for (name, property) in properties {
                    let len = path.len();
                    path.push_str("/properties/");
                    path.push_str(&pointer_escape(name));
                    let strict = strict_node(property, path, depth + 1, counts)?;
                    path.truncate(len);
                    let strict = if required.contains(&name.as_str()) { strict } else { nullable(strict) };
                    converted.insert(name.clone(), strict);
                }
                out.insert(
                    "required".to_owned(),
                    Value::Array(converted.keys().map(|k| Value::String(k.clone())).collect()),
                );
                out.insert(key.clone(), Value::Object(converted));
                out.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
            "required" | "additionalProperties" => {}
            // Not in strict mode's supported keywords (Structured Outputs, "Supported
            // properties": strings take `pattern` and `format` only): said in the description.
            "minLength" | "maxLength" => {}
            // Not a supported keyword either: the description says it, and `null` reads as it.
            "default" => {}
            // An annotation strict mode does not list (a `Secret<T>`'s mark): the model need not
            // know, and the runtime finds the call's secrets by the canonical schema.
            "writeOnly" => {}
            "items" => {
                let len = path.len();
                path.push_str("/items");
                out.insert(key.clone(), strict_node(value, path, depth, counts)?);
                path.truncate(len);
            }
            "anyOf" | "oneOf" => {
                let Some(branches) = value.as_array() else { continue };
                let mut converted = Vec::new();
                for (index, branch) in branches.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{key}/{index}"));
                    converted.push(strict_node(branch, path, depth, counts)?);
                    path.truncate(len);
                }
                out.insert("anyOf".to_owned(), Value::Array(converted));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if out.get("type").and_then(Value::as_str) == Some("object") && !out.contains_key("properties") {
        return Err(strict_error(path, "strict mode refuses an object without declared properties"));
    }
    let mut notes: Vec<String> =
        ["minLength", "maxLength"].iter().filter_map(|k| bound_note(k, map.get(*k)?)).collect();
    if let Some(default) = map.get("default") {
        notes.push(format!("default {default}"));
    }
    note_in_description(&mut out, &notes);
    Ok(Value::Object(out))
}

/// `schema` that also allows `null` (see [`openai_strict_schema`]).
fn nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else { return schema };
    let plain = !map.contains_key("enum") && !map.contains_key("const") && !map.contains_key("anyOf");
    match map.get_mut("type") {
        Some(Value::String(kind)) if plain => {
            let kind = std::mem::take(kind);
            map.insert("type".to_owned(), json!([kind, "null"]));
            Value::Object(map)
        }
        Some(Value::Array(kinds)) if plain => {
            if !kinds.iter().any(|k| k == "null") {
                kinds.push(json!("null"));
            }
            Value::Object(map)
        }
        _ => {
            let description = map.remove("description");
            let mut out = Map::new();
            out.insert("anyOf".to_owned(), json!([Value::Object(map), {"type": "null"}]));
            if let Some(description) = description {
                out.insert("description".to_owned(), description);
            }
            Value::Object(out)
        }
    }
}
