//! The generated 1,000-tool registry of the tool-search tests and bench: every verb of
//! `fixtures/tool-search/words.txt` paired with every noun (25 x 40), the tool `<verb>_<noun>` in
//! the set `<noun>`, and the 50 queries of `fixtures/tool-search/queries.txt`.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tool_runtime::{DynamicTool, RegistryBuilder, Tool, ToolResult};

/// The folder of the word list and the queries: `fixtures/tool-search` in the workspace root,
/// the first folder above the compiling package that has it.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|dir| dir.join("fixtures/tool-search"))
        .find(|dir| dir.is_dir())
        .expect("fixtures/tool-search in a folder above the package")
}

struct Verb {
    name: String,
    does: String,
    parameter: String,
    kind: String,
    parameter_description: String,
    takes_id: bool,
}

struct Noun {
    name: String,
    is: String,
    article: String,
}

fn read(file: &str) -> String {
    let path = fixtures().join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The `|`-separated fields of the lines of `file` that start with `kind ` (comments and blank
/// lines skipped).
fn rows(text: &str, kind: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter_map(|line| line.strip_prefix(kind).and_then(|rest| rest.strip_prefix(' ')))
        .map(|rest| rest.split('|').map(|field| field.trim().to_owned()).collect())
        .collect()
}

fn words() -> (Vec<Verb>, Vec<Noun>) {
    let text = read("words.txt");
    let verbs = rows(&text, "verb")
        .into_iter()
        .map(|f| {
            let (parameter, kind) = f[2].split_once(':').expect("`parameter:kind`");
            Verb {
                name: f[0].clone(),
                does: f[1].clone(),
                parameter: parameter.to_owned(),
                kind: kind.to_owned(),
                parameter_description: f[3].clone(),
                takes_id: f[4] == "id",
            }
        })
        .collect();
    let nouns = rows(&text, "noun")
        .into_iter()
        .map(|f| Noun { name: f[0].clone(), is: f[1].clone(), article: f[2].clone() })
        .collect();
    (verbs, nouns)
}

fn schema(verb: &Verb, noun: &Noun) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    if verb.takes_id {
        let id = format!("{}_id", noun.name);
        properties
            .insert(id.clone(), json!({"type": "string", "description": format!("The id of the {}.", noun.name)}));
        required.push(Value::String(id));
    }
    let parameter = match verb.kind.as_str() {
        "integer" => json!({"type": "integer", "minimum": 1}),
        "boolean" => json!({"type": "boolean"}),
        "labels" => json!({"type": "array", "items": {"type": "string"}}),
        _ => json!({"type": "string"}),
    };
    let mut parameter = parameter.as_object().cloned().unwrap_or_default();
    parameter.insert("description".to_owned(), Value::String(format!("{}.", verb.parameter_description)));
    properties.insert(verb.parameter.clone(), Value::Object(parameter));
    required.push(Value::String(verb.parameter.clone()));
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn description(verb: &Verb, noun: &Noun) -> String {
    let does = verb.does.replace("{}", &format!("{} {}", noun.article, noun.name));
    let mut article = noun.article.clone();
    article[..1].make_ascii_uppercase();
    format!("{does}. {article} {} is {}.", noun.name, noun.is)
}

/// The 1,000 tools, sorted by name; each answers `<name> ran` with its arguments.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    let (verbs, nouns) = words();
    let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(verbs.len() * nouns.len());
    for verb in &verbs {
        for noun in &nouns {
            let name = format!("{}_{}", verb.name, noun.name);
            let ran = name.clone();
            let tool = DynamicTool::new(name, description(verb, noun), schema(verb, noun), move |arguments, _ctx| {
                let text = format!("{ran} ran with {arguments}");
                async move { Ok(ToolResult::Text(text)) }
            })
            .expect("a valid generated tool")
            .with_set(noun.name.clone());
            tools.push(Arc::new(tool));
        }
    }
    tools.sort_by(|a, b| a.name().cmp(b.name()));
    tools
}

/// A builder holding the 1,000 tools.
pub fn builder() -> RegistryBuilder {
    tools().into_iter().fold(tool_runtime::Registry::builder(), |builder, tool| builder.tool_dyn(tool))
}

/// The sets (nouns), in the word list's order.
pub fn sets() -> Vec<String> {
    words().1.into_iter().map(|noun| noun.name).collect()
}

/// The 50 queries: `(intended tool, query)`.
pub fn queries() -> Vec<(String, String)> {
    read("queries.txt")
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (tool, query) = line.split_once('|').expect("`tool | query`");
            (tool.trim().to_owned(), query.trim().to_owned())
        })
        .collect()
}
