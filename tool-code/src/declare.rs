//! Typed signatures: a TypeScript declaration of each tool, from its input and output schemas.

use serde_json::{Map, Value};
use tool_runtime::ToolDefinition;

/// The declaration of `definition` as a function of the `tools` object, with its description and
/// each parameter's doc as JSDoc:
///
/// ```text
/// /** Read a UTF-8 text file ...
///  * @param args.file_path Relative to the workspace root. */
/// read(args: { file_path: string; offset?: number }): Promise<string>;
/// ```
///
/// The argument type is the input schema's; the result type is the output schema's for a tool
/// that declares one (its value arrives as a JSON value), else `string` (its text). Types map as
/// JSON Schema reads them: `string`, `number`/`integer` -> `number`, `boolean`, `null`, arrays as
/// `T[]`, objects as `{ ... }` (optional properties with `?`), `enum` and `const` as literal
/// unions, `anyOf`/`oneOf` as unions, local `$ref`s by their definition, anything else `unknown`.
pub(crate) fn declaration(definition: &ToolDefinition) -> String {
    let schema = &definition.input_schema;
    let mut doc = vec![first_paragraph(&definition.description)];
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, property) in properties {
            if let Some(text) = property.get("description").and_then(Value::as_str) {
                doc.push(format!("@param args.{name} {}", one_line(text)));
            }
        }
    }
    let arguments = type_of(schema, schema, 0);
    let result = match &definition.output_schema {
        Some(output) => type_of(output, output, 0),
        None => "string".to_owned(),
    };
    let name = if is_identifier(&definition.name) { definition.name.clone() } else { format!("{:?}", definition.name) };
    format!("/** {} */\n{name}(args: {arguments}): Promise<{result}>;", doc.join("\n * "))
}

/// The description up to its first blank line, on one line.
fn first_paragraph(text: &str) -> String {
    one_line(text.split("\n\n").next().unwrap_or_default())
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").replace("*/", "* /")
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// The TypeScript type of `schema` (a part of `root`, whose `$defs` local `$ref`s name).
fn type_of(schema: &Value, root: &Value, depth: usize) -> String {
    if depth > 8 {
        return "unknown".to_owned();
    }
    let Some(map) = schema.as_object() else {
        return if schema == &Value::Bool(false) { "never".to_owned() } else { "unknown".to_owned() };
    };
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix("#/$defs/")
            .and_then(|name| root.get("$defs").and_then(|defs| defs.get(name)))
            .or_else(|| reference.strip_prefix("#/definitions/").and_then(|name| root.get("definitions")?.get(name)));
        return match target {
            Some(target) => type_of(target, root, depth + 1),
            None if reference == "#" => "unknown".to_owned(),
            None => "unknown".to_owned(),
        };
    }
    if let Some(value) = map.get("const") {
        return value.to_string();
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return values.iter().map(Value::to_string).collect::<Vec<_>>().join(" | ");
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(variants)) = map.get(union) {
            return variants.iter().map(|v| type_of(v, root, depth + 1)).collect::<Vec<_>>().join(" | ");
        }
    }
    match map.get("type") {
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .map(|ty| simple_type(ty, map, root, depth))
            .collect::<Vec<_>>()
            .join(" | "),
        Some(Value::String(ty)) => simple_type(ty, map, root, depth),
        _ if map.contains_key("properties") => object_type(map, root, depth),
        _ => "unknown".to_owned(),
    }
}

fn simple_type(ty: &str, map: &Map<String, Value>, root: &Value, depth: usize) -> String {
    match ty {
        "string" => "string".to_owned(),
        "integer" | "number" => "number".to_owned(),
        "boolean" => "boolean".to_owned(),
        "null" => "null".to_owned(),
        "array" => match map.get("items") {
            Some(items) => {
                let item = type_of(items, root, depth + 1);
                if item.contains(' ') { format!("({item})[]") } else { format!("{item}[]") }
            }
            None => "unknown[]".to_owned(),
        },
        "object" => object_type(map, root, depth),
        _ => "unknown".to_owned(),
    }
}

fn object_type(map: &Map<String, Value>, root: &Value, depth: usize) -> String {
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(Value::Object(properties)) = map.get("properties") else {
        return match map.get("additionalProperties") {
            Some(values @ Value::Object(_)) => format!("Record<string, {}>", type_of(values, root, depth + 1)),
            _ => "Record<string, unknown>".to_owned(),
        };
    };
    if properties.is_empty() {
        return "{}".to_owned();
    }
    let fields: Vec<String> = properties
        .iter()
        .map(|(name, property)| {
            let optional = if required.contains(&name.as_str()) { "" } else { "?" };
            let key = if is_identifier(name) { name.clone() } else { format!("{name:?}") };
            format!("{key}{optional}: {}", type_of(property, root, depth + 1))
        })
        .collect();
    format!("{{ {} }}", fields.join("; "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_runtime::ToolDefinition;

    use super::declaration;

    fn definition(input: serde_json::Value, output: Option<serde_json::Value>) -> ToolDefinition {
        let mut definition: ToolDefinition = serde_json::from_value(json!({
            "name": "read", "description": "Read a file.\n\nMore text.", "input_schema": input,
        }))
        .unwrap();
        definition.output_schema = output;
        definition
    }

    #[test]
    fn a_declaration_has_the_description_the_parameter_docs_and_the_types() {
        let schema = json!({"type": "object", "properties": {
            "file_path": {"type": "string", "description": "Relative to the root."},
            "limit": {"type": ["integer", "null"]},
            "mode": {"enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}}
        }, "required": ["file_path"]});
        assert_eq!(
            declaration(&definition(schema, None)),
            "/** Read a file.\n * @param args.file_path Relative to the root. */\n\
             read(args: { file_path: string; limit?: number | null; mode?: \"a\" | \"b\"; tags?: string[] }): Promise<string>;"
        );
    }

    #[test]
    fn a_tool_with_an_output_schema_promises_its_type() {
        let output = json!({"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]});
        let declared = declaration(&definition(json!({"type": "object", "properties": {}}), Some(output)));
        assert_eq!(declared, "/** Read a file. */\nread(args: {}): Promise<{ bytes: number }>;");
    }

    #[test]
    fn local_refs_are_followed() {
        let schema = json!({"type": "object", "properties": {"at": {"$ref": "#/$defs/P"}}, "required": ["at"],
            "$defs": {"P": {"type": "object", "properties": {"line": {"type": "integer"}}, "required": ["line"]}}});
        assert_eq!(
            declaration(&definition(schema, None)),
            "/** Read a file. */\nread(args: { at: { line: number } }): Promise<string>;"
        );
    }
}
