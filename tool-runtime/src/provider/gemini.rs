//! Google Gemini API `generateContent`.
//!
//! Sources: the Gemini API "Function calling" guide and reference (`functionCall`,
//! `functionResponse` with its `output` / `error` keys and its media `parts` ("Multimodal
//! function responses"), `functionDeclarations`), the `Schema`
//! reference (an OpenAPI 3.0 subset), and the request errors users reported for schemas outside
//! it; checked against `gemini-*.json` in the fixtures.

use serde_json::{Map, Number, Value, json};

use super::{At, ProviderError};
use crate::schema::is_null_schema;
use crate::{ContentPart, MessageContent, ResourceContents, ToolCall, ToolMessage};

/// The prefix of the call ids generated for calls the model sent without one.
const GENERATED_ID_PREFIX: &str = "gemini_";

/// The keys Gemini's `Schema` accepts; any other key fails the whole request.
const ALLOWED_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// `candidates[0].content.parts[].functionCall`: `{name, args?, id?}`.
pub(super) fn parse_tool_calls(response: &Value) -> Result<Vec<ToolCall>, ProviderError> {
    let root = At::root(response);
    let response_id = root.optional("responseId").map(|id| id.str()).transpose()?;
    let candidate = root.field("candidates")?.first()?.object()?;
    let Some(content) = candidate.optional("content") else {
        return Ok(Vec::new());
    };
    let Some(parts) = content.object()?.optional("parts") else {
        return Ok(Vec::new());
    };
    let mut calls = Vec::new();
    // Made once per response, for the calls that come without an id.
    let mut generated: Option<String> = None;
    for part in parts.elements()? {
        let Some(call) = part.object()?.optional("functionCall") else {
            continue;
        };
        let call = call.object()?;
        let name = call.field("name")?.str()?;
        let arguments = match call.optional("args") {
            Some(args) => args.object()?.value.to_string(),
            None => "{}".to_owned(),
        };
        let id = match call.optional("id") {
            Some(id) => id.str()?.to_owned(),
            None => {
                let stem = generated.get_or_insert_with(|| match response_id {
                    Some(response_id) => response_id.to_owned(),
                    None => response_stem(),
                });
                format!("{GENERATED_ID_PREFIX}{stem}_{}", calls.len())
            }
        };
        calls.push(ToolCall::new(id, name, arguments));
    }
    Ok(calls)
}

/// The stem of the ids of one response that has no `responseId`: a new
/// [`mint_ref_id`](crate::ref_id::mint_ref_id), so ids never repeat across turns. Should the random
/// source fail, the time in nanoseconds and a process-wide count stand in (unique, if guessable:
/// call ids are the provider's, they guard nothing).
fn response_stem() -> String {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    crate::ref_id::mint_ref_id().unwrap_or_else(|_| {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        format!("t{nanos}n{}", COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    })
}

/// One `{"role":"user","parts":[{"functionResponse":..}, ...]}` content; none for no results.
///
/// The function response carries the message's text projection ([`ToolMessage::text`]) under
/// `output` (or `error`), every part included (an image as `[image]`, an embedded PDF as
/// `[resource <uri>]`), so the text says where each attachment stood. The parts Gemini takes as
/// media also go, in their order, into the function response's `parts` as
/// `{"inlineData":{"mimeType","data"}}` (base64 data as it is, not capped); see
/// [`inline_data`] for which. A response with no such part has no `parts` key. The guide documents
/// these media parts for Gemini 3 models; a result of text only is the same for every model.
pub(super) fn render_tool_results(messages: &[ToolMessage]) -> Vec<Value> {
    if messages.is_empty() {
        return Vec::new();
    }
    let parts: Vec<Value> = messages
        .iter()
        .map(|message| {
            let mut response = Map::new();
            response.insert("name".to_owned(), json!(message.tool_name));
            if !message.tool_call_id.starts_with(GENERATED_ID_PREFIX) {
                response.insert("id".to_owned(), json!(message.tool_call_id));
            }
            let key = if message.is_error { "error" } else { "output" };
            response.insert("response".to_owned(), json!({ key: message.text() }));
            if let MessageContent::Parts(parts) = &message.content {
                let media: Vec<Value> = parts.iter().filter_map(inline_data).collect();
                if !media.is_empty() {
                    response.insert("parts".to_owned(), Value::Array(media));
                }
            }
            json!({"functionResponse": response})
        })
        .collect();
    vec![json!({"role": "user", "parts": parts})]
}

/// The MIME types a function response takes as inline data: the images and documents the Gemini
/// API "Function calling" guide lists under "Multimodal function responses" (`image/png`,
/// `image/jpeg`, `image/webp`, `application/pdf`, `text/plain`).
const INLINE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"];

/// A part as one `FunctionResponsePart` (Gemini API reference, `FunctionResponse.parts`:
/// `{"inlineData": FunctionResponseBlob{mimeType, data}}`), when Gemini takes it there: an image,
/// or an embedded binary resource, of one of the [`INLINE_TYPES`]. `None` for every other part,
/// which then stands only as its text projection in `output`:
///
/// - text and embedded text resources (the `FunctionResponseBlob` reference says text goes as
///   text, not as raw bytes);
/// - audio: the guide's list of media for function responses has no audio type;
/// - an image or binary resource of another MIME type, or a binary resource without one;
/// - resource links (`FunctionResponseFileData`, the by-URI form, is not supported by the
///   Gemini API, only by Vertex AI).
fn inline_data(part: &ContentPart) -> Option<Value> {
    let (media_type, data) = match part {
        ContentPart::Image { data, media_type, .. } => (media_type.as_str(), data),
        ContentPart::Resource { media_type: Some(media_type), contents: ResourceContents::Blob(data), .. } => {
            (media_type.as_str(), data)
        }
        _ => return None,
    };
    INLINE_TYPES.contains(&media_type).then(|| json!({"inlineData": {"mimeType": media_type, "data": data}}))
}

/// Projects a JSON Schema (the canonical schema of a tool's arguments) onto the OpenAPI 3.0
/// subset that Gemini's `functionDeclarations[].parameters` accepts.
///
/// Gemini validates every declaration of a request and refuses the whole request for one key it
/// does not know, so the projection never emits one. The rules, applied at every depth (the
/// schema, and recursively its `properties`, `items` and `anyOf`):
///
/// - Only these keys are kept: `type`, `format`, `title`, `description`, `nullable`, `enum`,
///   `minItems`, `maxItems`, `properties`, `required`, `minProperties`, `maxProperties`,
///   `minLength`, `maxLength`, `pattern`, `example`, `anyOf`, `propertyOrdering`, `default`,
///   `items`, `minimum`, `maximum` (Gemini API `Schema` reference). Everything else is dropped,
///   `additionalProperties`, `$defs` and `$schema` included.
/// - `$ref` (a local pointer such as `#/$defs/Node`) is replaced by its target; keys written
///   next to the `$ref` win over the target's, so the use-site description is the one kept. A
///   `$ref` back into a schema that is being inlined (recursion) becomes `{"type":"object"}`,
///   keeping only the use-site `description`.
/// - `const: x` becomes `enum: [x]`.
/// - A tuple (`prefixItems`) becomes `items` of an `anyOf` of its element schemas.
/// - A type array drops `"null"` for `nullable: true`: `["string","null"]` becomes
///   `type: "string", nullable: true`; several other types become an `anyOf` of `{"type": ..}`.
///   An `anyOf` branch that only allows `null` likewise becomes `nullable: true`, and an `anyOf`
///   left with one branch is merged into the node (the node's own keys win). `oneOf` is read as
///   `anyOf`; the branches of `allOf` are merged into the node.
/// - Enums must be strings (Gemini API `Schema.enum`): `null` values become `nullable: true`;
///   integer values become `type: "integer"` with `minimum`/`maximum` of the values, other
///   numbers `type: "number"` likewise, booleans `type: "boolean"`, and the values are listed in
///   the description (`Allowed values: 1, 2, 4`).
/// - `format` is kept only where Gemini supports it (`enum` and `date-time` for strings,
///   `int32`/`int64` for integers, `float`/`double` for numbers); another string format is noted
///   in the description (`(format: email)`).
/// - `required` keeps only names listed in `properties` (Gemini refuses the others).
/// - A node left without `type` (and without `anyOf`) gets one, since Gemini refuses a typeless
///   schema: `string` when it has string `enum` values, `array` when it has `items`, else `object`
///   (also for an unconstrained schema such as `true` or `{}`).
pub fn gemini_schema(schema: &Value) -> Value {
    // The root counts as being inlined: `#` inside it is recursion.
    let mut inlining = vec!["#".to_owned()];
    Value::Object(project(schema, schema, &mut inlining))
}

/// Projects one node; `inlining` holds the `$ref`s being inlined on the path to it.
fn project(node: &Value, root: &Value, inlining: &mut Vec<String>) -> Map<String, Value> {
    let mut node = match node {
        Value::Object(node) => node.clone(),
        // `true` (anything) and `false` (nothing) have no OpenAPI form; both become unconstrained.
        _ => Map::new(),
    };

    if let Some(Value::String(reference)) = node.remove("$ref") {
        if inlining.contains(&reference) {
            let mut cut = Map::new();
            cut.insert("type".to_owned(), json!("object"));
            if let Some(description) = node.remove("description") {
                cut.insert("description".to_owned(), description);
            }
            object_as_text(&mut cut);
            return cut;
        }
        if let Some(target) = reference.strip_prefix('#').and_then(|pointer| root.pointer(pointer)) {
            let mut merged = match target {
                Value::Object(target) => target.clone(),
                _ => Map::new(),
            };
            // The use site wins (its description, its nullability).
            merged.extend(node);
            inlining.push(reference);
            let projected = project(&Value::Object(merged), root, inlining);
            inlining.pop();
            return projected;
        }
    }

    let mut out = Map::new();
    let mut nullable = node.get("nullable") == Some(&Value::Bool(true));
    let mut notes: Vec<String> = Vec::new();

    // const -> a one-value enum.
    if let Some(value) = node.remove("const") {
        node.entry("enum").or_insert_with(|| Value::Array(vec![value]));
    }

    // anyOf / oneOf branches (projected below); type arrays may add to them.
    let mut branches: Vec<Value> = Vec::new();
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(items)) = node.remove(key) {
            branches.extend(items);
        }
    }

    match node.remove("type") {
        Some(Value::String(kind)) if kind == "null" => nullable = true,
        Some(Value::String(kind)) => {
            out.insert("type".to_owned(), Value::String(kind));
        }
        Some(Value::Array(kinds)) => {
            let count = kinds.len();
            let kinds: Vec<Value> = kinds.into_iter().filter(|k| k != "null").collect();
            nullable |= kinds.len() < count;
            match kinds.len() {
                0 => {}
                1 => {
                    out.insert("type".to_owned(), kinds.into_iter().next().unwrap_or_default());
                }
                _ if branches.is_empty() => branches.extend(kinds.into_iter().map(|kind| json!({ "type": kind }))),
                _ => {}
            }
        }
        _ => {}
    }

    if let Some(Value::Array(values)) = node.remove("enum") {
        let count = values.len();
        let values: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
        nullable |= values.len() < count;
        project_enum(values, &mut out, &mut notes);
    }

    if let Some(Value::String(format)) = node.remove("format") {
        let supported = match out.get("type").and_then(Value::as_str) {
            Some("string") => matches!(format.as_str(), "enum" | "date-time"),
            Some("integer") => matches!(format.as_str(), "int32" | "int64"),
            Some("number") => matches!(format.as_str(), "float" | "double"),
            _ => false,
        };
        if supported {
            out.insert("format".to_owned(), Value::String(format));
        } else if out.get("type").and_then(Value::as_str) == Some("string") {
            notes.push(format!("(format: {format})"));
        }
    }

    if let Some(Value::Object(properties)) = node.remove("properties") {
        let projected: Map<String, Value> = properties
            .iter()
            .map(|(name, property)| (name.clone(), Value::Object(project(property, root, inlining))))
            .collect();
        out.insert("properties".to_owned(), Value::Object(projected));
    }

    // A tuple (`prefixItems`, 2020-12) has no OpenAPI form: its items become an `anyOf`.
    if let Some(Value::Array(tuple)) = node.remove("prefixItems") {
        node.insert("items".to_owned(), Value::Array(tuple));
    }
    match node.remove("items") {
        Some(Value::Array(mut tuple)) if tuple.len() == 1 => {
            let only = tuple.remove(0);
            out.insert("items".to_owned(), Value::Object(project(&only, root, inlining)));
        }
        Some(Value::Array(tuple)) if !tuple.is_empty() => {
            let any_of: Vec<Value> = tuple.iter().map(|item| Value::Object(project(item, root, inlining))).collect();
            out.insert("items".to_owned(), json!({ "anyOf": any_of }));
        }
        Some(items @ (Value::Object(_) | Value::Bool(_))) => {
            out.insert("items".to_owned(), Value::Object(project(&items, root, inlining)));
        }
        _ => {}
    }

    // The remaining allowed keys are copied as they are.
    for (key, value) in &node {
        if ALLOWED_KEYS.contains(&key.as_str()) && !out.contains_key(key) && key != "nullable" && key != "required" {
            out.insert(key.clone(), value.clone());
        }
    }

    let mut any_of: Vec<Value> = Vec::new();
    for branch in &branches {
        if is_null_schema(branch) {
            nullable = true;
        } else {
            any_of.push(Value::Object(project(branch, root, inlining)));
        }
    }
    match any_of.len() {
        0 => {}
        1 => {
            if let Some(Value::Object(only)) = any_of.pop() {
                merge(&mut out, only);
            }
        }
        _ => {
            out.insert("anyOf".to_owned(), Value::Array(any_of));
        }
    }

    if let Some(Value::Array(all_of)) = node.get("allOf") {
        for branch in all_of {
            merge(&mut out, project(branch, root, inlining));
        }
    }

    if let Some(Value::Array(required)) = node.get("required") {
        let properties = out.get("properties").and_then(Value::as_object);
        let mut kept: Vec<Value> = required
            .iter()
            .filter(|name| name.as_str().is_some_and(|name| properties.is_some_and(|p| p.contains_key(name))))
            .cloned()
            .collect();
        // Merged branches may have brought their own names: the node's come first.
        if let Some(Value::Array(merged)) = out.remove("required") {
            kept.extend(merged.into_iter().filter(|name| !required.contains(name)));
        }
        if !kept.is_empty() {
            out.insert("required".to_owned(), Value::Array(kept));
        }
    }

    if nullable {
        out.insert("nullable".to_owned(), Value::Bool(true));
    }
    if !notes.is_empty() {
        let notes = notes.join("\n");
        let description = match out.get("description").and_then(Value::as_str) {
            Some(description) if !description.is_empty() => format!("{description}\n{notes}"),
            _ => notes,
        };
        out.insert("description".to_owned(), Value::String(description));
    }

    // Bounds outside the subset, said in words.
    let bounds: Vec<String> = ["exclusiveMinimum", "exclusiveMaximum", "multipleOf"]
        .iter()
        .filter_map(|k| super::notes::bound_note(k, node.get(*k)?))
        .collect();
    super::notes::note_in_description(&mut out, &bounds);

    if !out.contains_key("type") && !out.contains_key("anyOf") {
        let kind = if out.contains_key("items") { "array" } else { "object" };
        out.insert("type".to_owned(), json!(kind));
    }
    object_as_text(&mut out);
    out
}

/// An OBJECT without `properties` (an open map, `serde_json::Value`, a recursion cut) is refused
/// by the API ("should be non-empty for OBJECT type"): it becomes a string that holds the object
/// as JSON text, said in the description. The canonical schema still wants the object, so
/// [`RepairPolicy::nested_strings`](crate::decode::RepairPolicy::nested_strings) decodes what the
/// model sends.
fn object_as_text(out: &mut Map<String, Value>) {
    let is_object = out.get("type").and_then(Value::as_str) == Some("object");
    if !is_object || out.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty()) {
        return;
    }
    out.remove("properties");
    out.remove("required");
    out.remove("minProperties");
    out.remove("maxProperties");
    out.insert("type".to_owned(), json!("string"));
    super::notes::note_in_description(out, &["a JSON object, written as a string".to_owned()]);
}

/// Enum values without `null`: strings stay an enum; others become a type, bounds and a note.
fn project_enum(values: Vec<Value>, out: &mut Map<String, Value>, notes: &mut Vec<String>) {
    if values.is_empty() {
        return;
    }
    if values.iter().all(Value::is_string) {
        out.entry("type").or_insert_with(|| json!("string"));
        out.insert("enum".to_owned(), Value::Array(values));
        return;
    }
    let listed = values.iter().map(Value::to_string).collect::<Vec<_>>().join(", ");
    notes.push(format!("Allowed values: {listed}"));
    let numbers: Option<Vec<&Number>> = values.iter().map(Value::as_number).collect();
    if let Some(numbers) = numbers {
        let integer = numbers.iter().all(|n| n.is_i64() || n.is_u64());
        let as_f64 = |n: &&Number| n.as_f64().unwrap_or(f64::NAN);
        let min = numbers.iter().min_by(|a, b| as_f64(a).total_cmp(&as_f64(b)));
        let max = numbers.iter().max_by(|a, b| as_f64(a).total_cmp(&as_f64(b)));
        out.insert("type".to_owned(), json!(if integer { "integer" } else { "number" }));
        if let (Some(min), Some(max)) = (min, max) {
            out.insert("minimum".to_owned(), Value::Number((*min).clone()));
            out.insert("maximum".to_owned(), Value::Number((*max).clone()));
        }
    } else if values.iter().all(Value::is_boolean) {
        out.insert("type".to_owned(), json!("boolean"));
    }
}

/// Merges a projected branch into a node: the node's keys win, `properties` are united.
fn merge(out: &mut Map<String, Value>, branch: Map<String, Value>) {
    for (key, value) in branch {
        match (out.get_mut(&key), value) {
            (Some(Value::Object(mine)), Value::Object(theirs)) if key == "properties" => {
                for (name, property) in theirs {
                    mine.entry(name).or_insert(property);
                }
            }
            (Some(Value::Array(mine)), Value::Array(theirs)) if key == "required" => {
                for name in theirs {
                    if !mine.contains(&name) {
                        mine.push(name);
                    }
                }
            }
            (Some(_), _) => {}
            (None, value) => {
                out.insert(key, value);
            }
        }
    }
}
