//! Tools whose schema arrives as JSON at run time: proxied from another server, written by hand,
//! or given by a client.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use serde_json::Value;

use crate::context::ToolContext;
use crate::error::ToolOrigin;
use crate::error::{ArgumentError, ToolError};
use crate::result::ToolResult;
use crate::schema::{Segment, accepted_fields, canonicalize, canonicalize_union, format_path};
use crate::tool::{Tool, ToolDefinition, is_valid_tool_name};

type Handler = dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolResult, ToolError>> + Send + Sync;

/// A tool defined at run time: a name, a description, a JSON Schema (as JSON) and a handler
/// closure. It registers in the same [`Registry`](crate::Registry) as `#[tool]` functions
/// (through [`RegistryBuilder::tool_dyn`](crate::RegistryBuilder::tool_dyn)).
///
/// Needs the cargo feature `dynamic` (off by default; `tool-mcp` turns it on), which brings the
/// `jsonschema` crate; without it this type and [`DynamicToolError`] are absent.
///
/// - The definition's schema is the given schema through the canonical passes
///   ([`crate::schema::canonicalize`]), so every projection
///   ([`Provider::render_tool`](crate::provider::Provider::render_tool)) treats it like a `#[tool]`'s.
/// - Arguments are decoded by the rules of [`crate::decode`] (`""` is `{}`; one JSON object and
///   nothing after it; `null` for a property that is not required is dropped), then validated
///   against the canonical schema before the union hoisting (compiled once, with the `jsonschema`
///   crate, draft 2020-12 unless the schema's `$schema` says otherwise). An object with declared
///   `properties` is closed, as for `#[tool]`: undeclared fields are refused, not passed on.
/// - Every violation is reported in the error style of `#[tool]`: unknown fields with the fields
///   accepted there, the missing fields of an object together by their paths, any other violated constraint (`minimum`,
///   `maxLength`, `enum`, `pattern`, ...) as `` `path`: <what the validator says> ``. All
///   violations are listed, one per line (`also: ...`), in the order of the schema's properties.
pub struct DynamicTool {
    definition: ToolDefinition,
    validated: Value,
    /// `validated` compiled for decoding's key-check pass.
    keys: crate::decode::KeyTree,
    validator: jsonschema::Validator,
    handler: Arc<Handler>,
    /// Where [`DynamicTool::new`] was called.
    origin: ToolOrigin,
}

/// A schema [`DynamicTool::new`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DynamicToolError {
    /// The name is outside `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`.
    #[error("tool name `{name}` is not accepted by every provider; use `^[A-Za-z_][A-Za-z0-9_-]{{0,63}}$`")]
    InvalidName {
        /// The name as given.
        name: String,
    },
    /// The schema does not describe an object (`"type": "object"`).
    #[error("the input schema of `{tool}` must be a JSON object schema with `\"type\": \"object\"`")]
    NotAnObject {
        /// The tool's name.
        tool: String,
    },
    /// The schema is not a valid JSON Schema.
    #[error("the input schema of `{tool}` is not a valid JSON Schema: {message}")]
    InvalidSchema {
        /// The tool's name.
        tool: String,
        /// The validator's message, with the schema path.
        message: String,
    },
}

impl DynamicTool {
    /// A tool named `name`, described by `description`, taking arguments that `schema` (a JSON
    /// Schema with an object root) describes. `handler` receives the validated arguments (with
    /// `null`s of optional properties removed) and a clone of the call's context.
    ///
    /// # Errors
    /// [`DynamicToolError`] when the name is not accepted by every provider, the root is not an
    /// object schema, or the schema does not compile.
    #[track_caller]
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        schema: Value,
        handler: F,
    ) -> Result<Self, DynamicToolError>
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResult, ToolError>> + Send + 'static,
    {
        let origin = ToolOrigin::of_caller(std::panic::Location::caller());
        let name = name.into();
        if !is_valid_tool_name(&name) {
            return Err(DynamicToolError::InvalidName { name });
        }
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(DynamicToolError::NotAnObject { tool: name });
        }
        let meta_schema = schema.get("$schema").cloned();
        // A run-time schema's `writeOnly` is its author's: it marks a secret, kept by the pass.
        let mut schema = schema;
        crate::secret::mark_write_only(&mut schema);
        let mut validated = canonicalize_union(schema);
        if let (Some(meta), Value::Object(map)) = (meta_schema, &mut validated) {
            map.insert("$schema".to_owned(), meta);
        }
        let validator = jsonschema::validator_for(&validated)
            .map_err(|e| DynamicToolError::InvalidSchema { tool: name.clone(), message: e.to_string() })?;
        if let Value::Object(map) = &mut validated {
            map.remove("$schema");
        }
        let handler: Arc<Handler> = Arc::new(move |arguments, ctx| Box::pin(handler(arguments, ctx)));
        let definition = ToolDefinition {
            name,
            description: description.into(),
            input_schema: canonicalize({
                let mut schema = validated.clone();
                crate::secret::mark_write_only(&mut schema);
                schema
            }),
            set: None,
            tags: Vec::new(),
            strict: None,
            output_schema: None,
            callers: crate::Callers::Direct,
        };
        let keys = crate::decode::KeyTree::compile(&validated);
        Ok(Self { definition, validated, keys, validator, handler, origin })
    }

    /// Puts the tool in a set (`"fs"`, ...), for [`RegistryBuilder::sets`](crate::RegistryBuilder::sets).
    #[must_use]
    pub fn with_set(mut self, set: impl Into<String>) -> Self {
        self.definition.set = Some(set.into());
        self
    }

    /// Adds tags (`read_only`, `destructive`, `idempotent`, `external`, ...).
    #[must_use]
    pub fn with_tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.definition.tags.extend(tags.into_iter().map(Into::into));
        self
    }

    /// Declares the JSON Schema of the tool's results (see [`ToolDefinition::output_schema`]): MCP
    /// serves it as `outputSchema` when it is an object schema, and a [`ToolResult::Json`] object
    /// the handler returns is then sent as `structuredContent`. It is not checked here: it
    /// describes what the handler returns.
    #[must_use]
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.definition.output_schema = Some(schema);
        self
    }

    /// Sets who may call the tool (see [`ToolDefinition::callers`](field@ToolDefinition::callers); default
    /// [`Callers::Direct`](crate::Callers::Direct)).
    #[must_use]
    pub fn with_callers(mut self, callers: crate::Callers) -> Self {
        self.definition.callers = callers;
        self
    }

    /// Sets the OpenAI strict-mode wish (see [`ToolDefinition::strict`]).
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.definition.strict = Some(strict);
        self
    }

    /// Decodes and validates `raw` arguments by the rules of the type docs.
    ///
    /// # Errors
    /// An [`ArgumentError`] naming the path of the first violation (and listing the others).
    pub fn validate(&self, raw: &str) -> Result<Value, ArgumentError> {
        let mut value: Value = crate::decode::decode_with(raw, &self.validated, Some(&self.keys))?;
        crate::decode::drop_nulls(&mut value, &self.validated);
        let mut errors: Vec<ArgumentError> = Vec::new();
        // The missing fields of each object: its path, the index of its error, the field names.
        let mut missing: Vec<(String, usize, Vec<String>)> = Vec::new();
        for error in self.validator.iter_errors(&value) {
            let path: Vec<Segment> = error
                .instance_path()
                .iter()
                .map(|segment| match segment {
                    LocationSegment::Property(key) => Segment::Key(key.into_owned()),
                    LocationSegment::Index(index) => Segment::Index(index),
                })
                .collect();
            let converted = match error.kind() {
                ValidationErrorKind::AdditionalProperties { unexpected } => ArgumentError::UnknownFields {
                    fields: unexpected
                        .iter()
                        .map(|field| {
                            let mut at = path.clone();
                            at.push(Segment::Key(field.clone()));
                            format_path(&at)
                        })
                        .collect(),
                    accepted: accepted_fields(&self.validated, &path),
                },
                ValidationErrorKind::Required { property } => {
                    let at = format_path(&path);
                    let field = property.as_str().unwrap_or_default().to_owned();
                    match missing.iter_mut().find(|(p, _, _)| *p == at) {
                        Some((_, index, fields)) => {
                            fields.push(field);
                            errors[*index] = missing_error(&at, fields);
                            continue;
                        }
                        None => {
                            missing.push((at.clone(), errors.len(), vec![field]));
                            missing_error(&at, &missing[missing.len() - 1].2)
                        }
                    }
                }
                _ => ArgumentError::Invalid { path: format_path(&path), message: error.to_string() },
            };
            errors.push(converted);
        }
        crate::decode::all_of(errors).map(|()| value)
    }
}

/// The error of an object at `path` that lacks `fields` (one or more, in the schema's order):
/// ``missing field `a` `` or ``missing fields `a`, `b` ``.
fn missing_error(path: &str, fields: &[String]) -> ArgumentError {
    let names: Vec<String> = fields.iter().map(|f| format!("`{f}`")).collect();
    let noun = if fields.len() == 1 { "missing field" } else { "missing fields" };
    ArgumentError::Invalid { path: path.to_owned(), message: format!("{noun} {}", names.join(", ")) }
}

impl Tool for DynamicTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// [`DynamicTool::validate`], as [`call`](Tool::call) runs it.
    fn check_arguments(&self, arguments: &str) -> Option<Result<(), ToolError>> {
        Some(
            self.validate(arguments)
                .map(drop)
                .map_err(|error| ToolError::InvalidArguments { tool: self.definition.name.clone(), error }),
        )
    }

    /// The file and line of the [`DynamicTool::new`] call that made it.
    fn origin(&self) -> ToolOrigin {
        self.origin
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        match self.validate(arguments) {
            Ok(value) => (self.handler)(value, ctx.clone()),
            Err(error) => {
                let error = ToolError::InvalidArguments { tool: self.definition.name.clone(), error };
                Box::pin(async move { Err(error) })
            }
        }
    }
}

impl std::fmt::Debug for DynamicTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicTool").field("definition", &self.definition).finish_non_exhaustive()
    }
}
