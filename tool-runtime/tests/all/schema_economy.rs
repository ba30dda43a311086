//! What the standard tools cost in a request: the byte sizes the crate docs report
//! (`docs/providers.md`, "Definition sizes"), kept from
//! growing by accident, and no noise (`title`, `default`, `$schema`) in any definition.

use std::path::Path;

use serde_json::Value;

use crate::forms;

use forms::{Entry, FORMS};

/// The compact JSON size in bytes of every tool-std entry for `target`, as one array.
fn size(target: &str) -> usize {
    let registry = tool_std::registry_builder().build().unwrap();
    let entries: Vec<Value> = registry.definitions().iter().map(|d| d.entry(target).unwrap()).collect();
    serde_json::to_string(&entries).unwrap().len()
}

fn documented_rows() -> Vec<(String, usize)> {
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/providers.md")).unwrap();
    let section =
        docs.split("\n# Definition sizes\n").nth(1).expect("docs/providers.md has a `# Definition sizes` section");
    section
        .lines()
        .take_while(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
            let [target, bytes] = cells[..] else { return None };
            Some((target.trim_matches('`').to_owned(), bytes.parse().ok()?))
        })
        .collect()
}

#[test]
fn the_crate_docs_report_the_byte_size_of_the_standard_tools_for_every_target() {
    let actual: Vec<(String, usize)> = FORMS.iter().map(|t| ((*t).to_owned(), size(t))).collect();
    let table: String = actual.iter().map(|(t, n)| format!("| `{t}` | {n} |\n")).collect();
    assert_eq!(
        documented_rows(),
        actual,
        "update the table of docs/providers.md (after checking the growth is wanted):\n{table}"
    );
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

/// The compact JSON of a definition's name, description and canonical parameters, in bytes.
fn canonical_bytes(definition: &tool_runtime::ToolDefinition) -> usize {
    let entry = serde_json::json!({
        "name": definition.name,
        "description": definition.description,
        "parameters": definition.input_schema,
    });
    serde_json::to_string(&entry).unwrap().len()
}

/// Each standard tool's budget in bytes (`canonical_bytes`), and whether other agent tool sets
/// have the same tool (the 17 compared side by side; `glob` and `grep` are ours alone, and the
/// exec set, off unless allowed, is not among the 17). The budgets of the 17 add up to at most
/// [`SHARED_MAX`], those of the 19 (with `glob` and `grep`) to at most [`NINETEEN_MAX`].
const BUDGETS: [(&str, usize, Kind); 22] = [
    ("read", 550, Kind::Shared),
    ("read_line", 620, Kind::Shared),
    ("write", 520, Kind::Shared),
    ("edit", 1300, Kind::Shared),
    ("apply_patch", 850, Kind::Shared),
    ("todo_read", 140, Kind::Shared),
    ("todo_new", 920, Kind::Shared),
    ("todo_append", 890, Kind::Shared),
    ("todo_patch", 960, Kind::Shared),
    ("todo_clear", 160, Kind::Shared),
    ("tool_output_cache", 470, Kind::Shared),
    ("tool_output_cache_grep", 780, Kind::Shared),
    ("tool_output_cache_line", 580, Kind::Shared),
    ("search", 620, Kind::Shared),
    ("webfetch", 760, Kind::Shared),
    ("view_image", 570, Kind::Shared),
    ("done", 310, Kind::Shared),
    ("glob", 620, Kind::Ours),
    ("grep", 1050, Kind::Ours),
    ("bash", 1150, Kind::Exec),
    ("bash_output", 400, Kind::Exec),
    ("bash_kill", 400, Kind::Exec),
];

/// Where a standard tool stands in the comparison with other agent tool sets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// One of the 17 tools other tool sets have too.
    Shared,
    /// `glob` and `grep`: with the 17, the 19 file, plan, cache, web, media and control tools.
    Ours,
    /// The exec set, off unless allowed.
    Exec,
}

/// The most bytes the 17 shared tools may take together.
const SHARED_MAX: usize = 11_000;
/// The most bytes the 19 (the 17 with `glob` and `grep`) may take together.
const NINETEEN_MAX: usize = 13_000;

#[test]
fn the_byte_budgets_add_up_to_the_totals_the_definitions_are_held_to() {
    let sum = |kinds: &[Kind]| BUDGETS.iter().filter(|(_, _, k)| kinds.contains(k)).map(|(_, b, _)| b).sum::<usize>();
    let (shared, nineteen) = (sum(&[Kind::Shared]), sum(&[Kind::Shared, Kind::Ours]));
    assert!(shared <= SHARED_MAX, "the budgets of the 17 shared tools add up to {shared}, over {SHARED_MAX}");
    assert!(nineteen <= NINETEEN_MAX, "the budgets of the 19 tools add up to {nineteen}, over {NINETEEN_MAX}");
}

#[test]
fn every_standard_tool_definition_stays_within_its_byte_budget() {
    let registry = tool_std::registry_builder().build().unwrap();
    let mut sizes = Vec::new();
    for definition in registry.definitions() {
        let bytes = canonical_bytes(definition);
        println!("{:<24} {bytes:>6} bytes", definition.name);
        sizes.push((definition.name.clone(), bytes));
    }
    let (mut shared, mut nineteen, mut all) = (0, 0, 0);
    let mut over = Vec::new();
    for (name, budget, kind) in BUDGETS {
        let bytes = sizes.iter().find(|(n, _)| n == name).map(|(_, b)| *b).unwrap_or_else(|| panic!("no tool {name}"));
        if bytes > budget {
            over.push(format!("{name}: {bytes} bytes, budget {budget}"));
        }
        all += bytes;
        if kind != Kind::Exec {
            nineteen += bytes;
        }
        if kind == Kind::Shared {
            shared += bytes;
        }
    }
    println!("the 17 shared tools: {shared} bytes; the 19 with glob and grep: {nineteen} bytes; all 22: {all} bytes");
    assert_eq!(sizes.len(), BUDGETS.len(), "every standard tool has a budget");
    assert_eq!(over, Vec::<String>::new(), "definitions over their budget");
    assert!(shared <= SHARED_MAX, "the 17 shared tools take {shared} bytes, over {SHARED_MAX}");
    assert!(nineteen <= NINETEEN_MAX, "the 19 tools take {nineteen} bytes, over {NINETEEN_MAX}");
}
