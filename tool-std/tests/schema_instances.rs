//! Schema and runtime agree: for every standard tool, at least 200 instances generated from its
//! canonical schema by hypothesis-jsonschema (`conformance/instances.py`, run with the venv's
//! python that `scripts/test.sh` sets up) are called in a temp workspace, and none is answered
//! with an "invalid arguments" error (a state error such as a missing file is fine); and for
//! every bound the schema states, the value one step outside it is refused at decode. The test
//! prints the counts. Nothing outside loopback is contacted: host names resolve to nothing, an
//! http(s) URL is sent to a closed port on 127.0.0.1, and search backends point there too.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::DefaultPolicy;
use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputStore};
use tool_runtime::prelude::*;
use tool_std::sandbox::{SANDBOX, Sandbox};
use tool_std::web::{NetworkPolicy, SearchConfig, StaticHosts, WEB_CONFIG, WebConfig};

/// Instances per tool.
const INSTANCES: usize = 200;
/// A port on 127.0.0.1 nothing listens on (the discard port; refused at once).
const CLOSED: &str = "http://127.0.0.1:9";

fn python() -> PathBuf {
    std::env::var_os("TOOL_CONFORMANCE_PYTHON").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/conformance-venv/bin/python"),
        PathBuf::from,
    )
}

fn registry(root: &std::path::Path) -> Registry {
    let web = WebConfig {
        network: NetworkPolicy::allow(["127.0.0.1".parse().unwrap()]),
        resolver: Arc::new(StaticHosts::new()),
        search: SearchConfig {
            ddg_base_url: CLOSED.to_owned(),
            brave_base_url: CLOSED.to_owned(),
            ..SearchConfig::default()
        },
        ..WebConfig::default()
    };
    tool_std::registry_builder()
        .override_dependency(&SANDBOX, Sandbox::new(root).unwrap())
        .override_dependency(&OUTPUT_STORE, Arc::new(MemoryStore::new()) as Arc<dyn OutputStore>)
        .override_dependency(&WEB_CONFIG, web)
        .policy(DefaultPolicy::new().allow_all_external())
        .build()
        .unwrap()
}

/// `webfetch`'s `url` pointed at the closed loopback port when it would reach a host.
fn contained(tool: &str, mut instance: Value) -> Value {
    if tool == "webfetch"
        && let Some(url) = instance.get("url").and_then(Value::as_str)
        && (url.to_ascii_lowercase().starts_with("http://") || url.to_ascii_lowercase().starts_with("https://"))
    {
        instance["url"] = json!(format!("{CLOSED}/"));
    }
    instance
}

/// Every bound at the top level of `schema` or on the items' properties of a top-level array,
/// as `(path, value one step outside)`; `path` is the property, or `property[].field`.
fn outside_values(schema: &Value) -> Vec<(Vec<String>, Value)> {
    fn of(node: &Value) -> Vec<Value> {
        let mut out = Vec::new();
        let int = |k: &str| node.get(k).and_then(Value::as_i64);
        if let Some(min) = int("minimum") {
            out.push(json!(min - 1));
        }
        if let Some(max) = int("maximum") {
            out.push(json!(max + 1));
        }
        if let Some(min) = int("minLength").filter(|m| *m > 0) {
            out.push(json!("a".repeat(min as usize - 1)));
        }
        if let Some(max) = int("maxLength") {
            out.push(json!("a".repeat(max as usize + 1)));
        }
        if let Some(min) = int("minItems").filter(|m| *m > 0) {
            out.push(json!(vec![Value::Null; min as usize - 1]));
        }
        out
    }
    let mut found = Vec::new();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        for value in of(property) {
            found.push((vec![name.clone()], value));
        }
        for (field, inner) in property.pointer("/items/properties").and_then(Value::as_object).into_iter().flatten() {
            for value in of(inner) {
                found.push((vec![name.clone(), field.clone()], value));
            }
        }
    }
    found
}

/// `base` with the value at `path` replaced (for `property[].field`, in a one-item list made
/// from the first item, or an object holding the required fields only).
fn with_value(base: &Value, path: &[String], value: Value) -> Value {
    let mut out = base.clone();
    match path {
        [name] => out[name] = value,
        [name, field] => {
            let mut item = base.get(name).and_then(|l| l.get(0)).cloned().unwrap_or_else(|| json!({}));
            item[field] = value;
            out[name] = json!([item]);
        }
        _ => {}
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_schema_valid_instance_decodes_and_every_bound_is_refused_one_step_outside() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let registry = registry(&root);
    let tools: Vec<Value> =
        registry.definitions().iter().map(|d| json!({"tool": d.name, "schema": d.input_schema})).collect();
    let (source, target) = (root.join("schemas.json"), root.join("instances.json"));
    std::fs::write(&source, serde_json::to_vec(&tools).unwrap()).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance/instances.py");
    // Run in the temp dir: hypothesis keeps its caches in `.hypothesis` under the working one.
    let status = std::process::Command::new(python())
        .current_dir(&root)
        .arg(&script)
        .args([&source, &target])
        .arg(INSTANCES.to_string())
        .status()
        .unwrap_or_else(|e| panic!("no python at {} ({e}): run scripts/test.sh", python().display()));
    assert!(status.success(), "instances.py failed: run scripts/test.sh, which installs conformance/requirements.txt");
    let generated: BTreeMap<String, Vec<Value>> = serde_json::from_slice(&std::fs::read(&target).unwrap()).unwrap();

    let (mut calls, mut refused, mut bounds) = (0, Vec::new(), 0);
    for definition in registry.definitions() {
        let name = &definition.name;
        let instances = &generated[name];
        // A tool without arguments has one instance (`{}`); every other one gets its 200.
        let no_arguments = definition.input_schema["properties"].as_object().is_some_and(|p| p.is_empty());
        assert!(no_arguments || instances.len() >= INSTANCES, "{name}: {} instances", instances.len());
        let workspace = tempfile::tempdir_in(&root).unwrap();
        let tool_registry = registry_for(workspace.path());
        let mut invalid = 0;
        for (index, instance) in instances.iter().enumerate() {
            let instance = contained(name, instance.clone());
            let call = ToolCall::new(format!("c{index}"), name.clone(), instance.to_string());
            let answer = tool_registry.call(&call, &ToolContext::new()).await;
            calls += 1;
            if answer.text().starts_with("invalid arguments") {
                invalid += 1;
                println!("refused: {name} {instance}: {}", answer.text());
                refused.push(format!("{name} {instance}: {}", answer.text()));
            }
        }
        let base = instances.first().cloned().unwrap_or_else(|| json!({}));
        let outside = outside_values(&definition.input_schema);
        for (path, value) in &outside {
            let instance = with_value(&base, path, value.clone());
            let answer =
                tool_registry.call(&ToolCall::new("b", name.clone(), instance.to_string()), &ToolContext::new()).await;
            assert!(
                answer.text().starts_with("invalid arguments"),
                "{name}: {} = {value} is outside its bound but was not refused at decode: {}",
                path.join("[]."),
                answer.text()
            );
        }
        bounds += outside.len();
        println!(
            "{name:<24} {:>4} instances, {invalid} refused as invalid arguments, {:>2} bounds checked",
            instances.len(),
            outside.len()
        );
    }
    println!(
        "{calls} schema-valid calls, {} refused as invalid arguments; {bounds} bounds refused one step outside",
        refused.len()
    );
    assert_eq!(refused, Vec::<String>::new());
}

fn registry_for(root: &std::path::Path) -> Registry {
    registry(&std::fs::canonicalize(root).unwrap())
}
