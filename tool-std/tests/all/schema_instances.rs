//! Schema and runtime agree: for every standard tool but the exec set (whose arguments are shell
//! commands, not run here), at least 200 instances generated from its canonical schema by
//! hypothesis-jsonschema (`conformance/instances.py`, run with the venv's
//! python that `scripts/test.sh` sets up) are called in a temp workspace, and none is answered
//! with an "invalid arguments" error (a state error such as a missing file is fine); and for
//! every bound the schema states, the value one step outside it is refused at decode. The test
//! prints the counts. Nothing outside loopback is contacted: host names resolve to nothing, an
//! http(s) URL is sent to a closed port on 127.0.0.1, and search backends point there too.
//!
//! A second test needs no Python: for every standard tool, the exec set included (its `command`
//! is replaced by `true` before it runs), instances made by a seeded generator
//! (`tool-runtime/tests/support/instances.rs`) that the `jsonschema` crate accepts are decoded,
//! and one mutation of each, of every kind the generator makes (a type change, an extra key, a
//! struct as an array, a unit variant as an object, a missing required key, a number out of
//! range), that `jsonschema` refuses is refused at decode.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::DefaultPolicy;
use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputStore};
use tool_runtime::prelude::*;
use tool_std::sandbox::{SANDBOX, Sandbox};
use tool_std::web::{NetworkPolicy, SearchConfig, StaticHosts, WEB_CONFIG, WebConfig};

use crate::instances;

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
    registry_with(root, DefaultPolicy::new().allow_all_external())
}

fn registry_with(root: &std::path::Path, policy: DefaultPolicy) -> Registry {
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
        .policy(policy)
        .build()
        .unwrap()
}

/// `webfetch`'s `url` pointed at the closed loopback port when it would reach a host; `bash`'s
/// `command`, when it is a string, replaced by `true`.
fn contained(tool: &str, mut instance: Value) -> Value {
    if tool == "bash" && instance.get("command").is_some_and(Value::is_string) {
        instance["command"] = json!("true");
    }
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
    // The exec set runs its arguments as shell commands: generated commands are not run (its
    // decoding is the registry's, and its own checks are in tests/exec.rs).
    let checked: Vec<&ToolDefinition> =
        registry.definitions().iter().filter(|d| d.set.as_deref() != Some("exec")).collect();
    let tools: Vec<Value> = checked.iter().map(|d| json!({"tool": d.name, "schema": d.input_schema})).collect();
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
    for definition in checked {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_instances_and_their_mutations_get_the_same_verdict_from_jsonschema_and_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let registry = registry_with(&root, DefaultPolicy::new().allow_all_external().allow_all_exec());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut found = instances::Agreement::default();
    for (index, definition) in registry.definitions().iter().enumerate() {
        let name = definition.name.clone();
        let registry = &registry;
        let seed = 0x5eed + index as u64;
        instances::agree(&mut found, &name, &definition.input_schema, seed, deadline, |arguments: Value| {
            let call = ToolCall::new("c", name.clone(), contained(&name, arguments).to_string());
            async move { registry.call(&call, &ToolContext::new()).await.text().into_owned() }
        })
        .await;
    }
    let (valid, mutations) = (found.valid, found.mutations);
    println!("{valid} schema-valid instances, {mutations} schema-invalid mutations");
    assert!(registry.definitions().iter().any(|d| d.name == "bash"), "the exec set is checked");
    assert!(valid >= 200 && mutations >= 400, "{valid} valid, {mutations} mutations");
    assert_eq!(found.disagreements, Vec::<String>::new());
}
