//! What the standard tools cost in a request: the byte sizes the README reports, kept from
//! growing by accident, and no noise (`title`, `default`, `$schema`) in any definition.

use std::path::Path;

use serde_json::Value;
use tool_runtime::provider::Target;

/// The compact JSON size in bytes of every tool-std entry for `target`, as one array.
fn size(target: Target) -> usize {
    let registry = tool_std::registry_builder().build().unwrap();
    let entries: Vec<Value> = registry.definitions().iter().map(|d| d.for_provider(target).unwrap()).collect();
    serde_json::to_string(&entries).unwrap().len()
}

fn readme_rows() -> Vec<(String, usize)> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let section = readme.split("## Definition sizes").nth(1).expect("the README has a `## Definition sizes` section");
    section
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
            let [target, bytes] = cells[..] else { return None };
            Some((target.trim_matches('`').to_owned(), bytes.parse().ok()?))
        })
        .collect()
}

#[test]
fn the_readme_reports_the_byte_size_of_the_standard_tools_for_every_target() {
    let actual: Vec<(String, usize)> = Target::ALL.iter().map(|t| (t.id().to_owned(), size(*t))).collect();
    let table: String = actual.iter().map(|(t, n)| format!("| `{t}` | {n} |\n")).collect();
    assert_eq!(readme_rows(), actual, "update the README's table (after checking the growth is wanted):\n{table}");
}

fn noise(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let here = format!("{path}/{key}");
                // `properties` maps names to schemas: a property may be called `title`.
                if key == "properties" {
                    if let Value::Object(properties) = child {
                        for (name, schema) in properties {
                            noise(schema, &format!("{here}/{name}"), found);
                        }
                    }
                    continue;
                }
                if ["title", "default", "$schema", "writeOnly", "readOnly", "examples"].contains(&key.as_str()) {
                    found.push(here.clone());
                }
                noise(child, &here, found);
            }
        }
        Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| noise(v, &format!("{path}/{i}"), found)),
        _ => {}
    }
}

#[test]
fn no_standard_definition_carries_title_or_default_noise() {
    let registry = tool_std::registry_builder().build().unwrap();
    let mut found = Vec::new();
    for definition in registry.definitions() {
        noise(&definition.input_schema, &definition.name, &mut found);
    }
    assert_eq!(found, Vec::<String>::new());
}
