//! The measurement of code mode (shared by `tests/context.rs` and `benches/context.rs`): ten
//! multi-step tasks over the standard file tools on a generated fixture repository, each done
//! once by direct tool calls (a scripted trajectory, as a careful model would call) and once by
//! one program (as a careful model would write it), counting what enters the model's context.
//!
//! What is counted, for both: the tool definitions the model is sent (Anthropic's projection),
//! every tool call the model writes (`{"name","input"}` JSON) and every tool result it reads.
//! Direct: the six `fs` tools' definitions, then each call and result. Code mode: the three
//! meta-tools' definitions, a `tool_signatures` call and its result (the `fs` tools' declarations,
//! read once per task), then the `run_program` call with the program and its result.

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_code::{CodeMode, RUN_PROGRAM, TOOL_SIGNATURES};
use tool_runtime::provider::Provider;
use tool_runtime::{Registry, ToolCall, ToolContext};
use tool_std::sandbox::{SANDBOX, Sandbox};

/// The fixture repository: 14 Rust files under `src/`, made from a fixed seed.
pub fn write_fixture(root: &Path) {
    let modules = [
        "src/lib.rs",
        "src/config.rs",
        "src/parser.rs",
        "src/lexer.rs",
        "src/net/client.rs",
        "src/net/server.rs",
        "src/net/retry.rs",
        "src/store/cache.rs",
        "src/store/disk.rs",
        "src/store/index.rs",
        "src/cli.rs",
        "src/report.rs",
        "src/metrics.rs",
        "src/util.rs",
    ];
    let mut seed: u64 = 0x5eed_c0de;
    let mut next = move |n: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    for (m, path) in modules.iter().enumerate() {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let stem = Path::new(path).file_stem().unwrap().to_str().unwrap();
        let mut text = String::new();
        if next(4) != 0 {
            text.push_str(&format!("//! The {stem} module: what it owns and how it is used.\n\n"));
        }
        text.push_str("use std::collections::HashMap;\nuse crate::config::parse_config;\n\n");
        let functions = 5 + next(8);
        for f in 0..functions {
            let name = format!("{stem}_step_{f}");
            let long = next(5) == 0;
            let length = if long { 51 + next(30) } else { 4 + next(30) };
            text.push_str(&format!("/// Runs step {f} of {stem}.\npub fn {name}(input: &str) -> usize {{\n"));
            for line in 0..length {
                match next(12) {
                    0 => text.push_str(&format!("    // TODO: handle the {line}th case of {name}\n")),
                    1 => text.push_str(&format!("    let cfg{line} = parse_config(input).unwrap();\n")),
                    2 => text.push_str(&format!("    let v{line} = input.len().checked_add({line}).unwrap();\n")),
                    _ => text.push_str(&format!("    let x{line} = input.len() * {} + {line};\n", m + 1)),
                }
            }
            text.push_str("    input.len()\n}\n\n");
        }
        if *path == "src/config.rs" {
            text.push_str("/// Parses a configuration text.\npub fn parse_config(input: &str) -> Result<HashMap<String, String>, String> {\n    let _ = input;\n    Ok(HashMap::new())\n}\n\n");
        }
        text.push_str("#[cfg(test)]\nmod tests {\n    use super::*;\n\n");
        for t in 0..(1 + next(3)) {
            text.push_str(&format!("    #[test]\n    fn {stem}_step_{t}_counts_the_input() {{\n        assert_eq!({stem}_step_{t}(\"abc\"), 3);\n    }}\n\n"));
        }
        text.push_str("}\n");
        std::fs::write(file, text).unwrap();
    }
}

/// One task: its name, the direct trajectory, and the program.
pub struct Task {
    pub name: &'static str,
    pub direct: fn(&mut Direct<'_>) -> String,
    pub program: &'static str,
}

/// The context a run fills, in bytes and in text (for the tokenizer).
#[derive(Default)]
pub struct Context {
    pub texts: Vec<String>,
    pub calls: usize,
}

impl Context {
    pub fn bytes(&self) -> usize {
        self.texts.iter().map(String::len).sum()
    }

    fn add(&mut self, text: String) {
        self.texts.push(text);
    }
}

/// A direct trajectory's session: each call is written by the model and its result read.
pub struct Direct<'a> {
    pub registry: &'a Registry,
    pub runtime: &'a tokio::runtime::Runtime,
    pub context: Context,
}

impl Direct<'_> {
    pub fn call(&mut self, name: &str, input: Value) -> String {
        self.context.calls += 1;
        let id = format!("toolu_{}", self.context.calls);
        self.context.add(json!({"name": name, "input": input}).to_string());
        let call = ToolCall::new(id, name, input.to_string());
        let message = self.runtime.block_on(self.registry.call(&call, &ToolContext::new()));
        let text = message.text().into_owned();
        self.context.add(text.clone());
        text
    }
}

/// The registry of the fs tools confined to `root`.
pub fn registry(root: &Path) -> Registry {
    tool_std::registry_builder()
        .sets(["fs"])
        .override_dependency(&SANDBOX, Sandbox::new(root).unwrap())
        .build()
        .unwrap()
}

fn definitions_bytes(registry: &Registry) -> String {
    serde_json::to_string(&Provider::Anthropic.render_tools(registry.definitions()).unwrap()).unwrap()
}

/// Runs `task` directly in a fresh fixture: the context and the model-visible answer (the last
/// result's derived text).
pub fn run_direct(task: &Task, runtime: &tokio::runtime::Runtime) -> (Context, String) {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let registry = registry(dir.path());
    let mut session = Direct { registry: &registry, runtime, context: Context::default() };
    session.context.add(definitions_bytes(&registry));
    let answer = (task.direct)(&mut session);
    (session.context, answer)
}

/// Runs `task` as one program in a fresh fixture: the context and the program's output.
pub fn run_code(task: &Task, runtime: &tokio::runtime::Runtime) -> (Context, String) {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let code = CodeMode::new(Arc::new(registry(dir.path()))).callable(|_| true);
    let outer = code.registry_builder().build().unwrap();
    let mut context = Context::default();
    context.add(definitions_bytes(&outer));
    let mut call = |name: &str, input: Value| {
        context.calls += 1;
        context.add(json!({"name": name, "input": input}).to_string());
        let call = ToolCall::new(format!("toolu_{}", context.calls), name, input.to_string());
        let message = runtime.block_on(outer.call(&call, &ToolContext::new()));
        assert!(!message.is_error, "{}: {}", name, message.text());
        let text = message.text().into_owned();
        context.add(text.clone());
        text
    };
    call(TOOL_SIGNATURES, json!({}));
    let output = call(RUN_PROGRAM, json!({"code": task.program}));
    (context, output)
}

/// The files of the fixture (a careful model globs once).
fn files(s: &mut Direct<'_>) -> Vec<String> {
    s.call("glob", json!({"pattern": "**/*.rs", "limit": 1000}))
        .lines()
        .map(str::to_owned)
        .filter(|l| l.ends_with(".rs"))
        .collect()
}

/// The ten tasks.
pub fn tasks() -> Vec<Task> {
    vec![
        Task {
            name: "count TODOs per file",
            direct: |s| s.call("grep", json!({"pattern": "TODO", "limit": 1000})),
            program: r##"const out = await tools.grep({pattern: "TODO", limit: 1000});
const counts = {};
for (const line of out.split("\n")) {
  const m = line.match(/^([^:]+\.rs):\d+:/);
  if (m) counts[m[1]] = (counts[m[1]] || 0) + 1;
}
return counts;"##,
        },
        Task {
            name: "functions over 50 lines, by file",
            // The starts and ends of the top-level functions, with their line numbers, in one grep.
            direct: |s| s.call("grep", json!({"pattern": "^pub fn |^}$", "limit": 1000})),
            program: r##"const files = (await tools.glob({pattern: "**/*.rs", limit: 1000})).split("\n").filter(f => f.endsWith(".rs"));
const long = {};
for (const file of files) {
  const lines = (await tools.read({file_path: file})).split("\n").filter(l => /^ *\d+  /.test(l)).map(l => l.slice(7));
  let name = null, start = 0;
  lines.forEach((l, i) => {
    const m = l.match(/^pub fn (\w+)/);
    if (m) { name = m[1]; start = i; }
    else if (name && l === "}") { if (i - start - 1 > 50) (long[file] ||= []).push(name); name = null; }
  });
}
return long;"##,
        },
        Task {
            name: "rename parse_config to load_config, show the diff",
            direct: |s| {
                let hits = s.call("grep", json!({"pattern": "parse_config", "limit": 1000}));
                let mut files: Vec<String> = hits
                    .lines()
                    .filter_map(|l| l.split(':').next())
                    .filter(|f| f.ends_with(".rs"))
                    .map(str::to_owned)
                    .collect();
                files.dedup();
                // The grep showed every occurrence: no read is needed before the edits.
                for f in &files {
                    s.call("edit", json!({"file_path": f, "old_string": "parse_config", "new_string": "load_config", "replace_all": true}));
                }
                s.call("grep", json!({"pattern": "parse_config", "limit": 10}))
            },
            program: r##"const hits = await tools.grep({pattern: "parse_config", limit: 1000});
const files = [...new Set(hits.split("\n").map(l => l.split(":")[0]).filter(f => f.endsWith(".rs")))];
const summary = [];
for (const file of files) {
  const out = JSON.parse(await tools.edit({file_path: file, old_string: "parse_config", new_string: "load_config", replace_all: true}));
  summary.push(out.diff);
}
const left = await tools.grep({pattern: "parse_config", limit: 10});
summary.push("occurrences left: " + (left.startsWith("No matches") ? 0 : left.split("\n").length));
return summary.join("\n");"##,
        },
        Task {
            name: "summarise the three largest files",
            direct: |s| {
                let files = files(s);
                files.iter().map(|f| s.call("read", json!({"file_path": f}))).collect::<Vec<_>>().join("\n")
            },
            program: r##"const files = (await tools.glob({pattern: "**/*.rs", limit: 1000})).split("\n").filter(f => f.endsWith(".rs"));
const sizes = [];
for (const file of files) {
  const lines = (await tools.read({file_path: file})).split("\n").filter(l => /^ *\d+  /.test(l)).map(l => l.slice(7));
  const fns = lines.filter(l => l.startsWith("pub fn ")).length;
  const tests = lines.filter(l => l.trim() === "#[test]").length;
  const doc = (lines.find(l => l.startsWith("//!")) || "(no module doc)").replace(/^\/\/! ?/, "");
  sizes.push({file, lines: lines.length, fns, tests, doc});
}
return sizes.sort((a, b) => b.lines - a.lines).slice(0, 3);"##,
        },
        Task {
            name: "public functions per module",
            direct: |s| s.call("grep", json!({"pattern": "^pub fn", "limit": 1000})),
            program: r##"const out = await tools.grep({pattern: "^pub fn", limit: 1000});
const byFile = {};
for (const line of out.split("\n")) {
  const m = line.match(/^([^:]+):\d+: pub fn (\w+)/);
  if (m) (byFile[m[1]] ||= []).push(m[2]);
}
return Object.entries(byFile).map(([f, names]) => `${f}: ${names.length}`).join("\n");"##,
        },
        Task {
            name: "files without a module doc comment",
            direct: |s| {
                let files = files(s);
                let documented = s.call("grep", json!({"pattern": "^//!", "limit": 1000}));
                format!("{}\n{documented}", files.join("\n"))
            },
            program: r##"const files = (await tools.glob({pattern: "**/*.rs", limit: 1000})).split("\n").filter(f => f.endsWith(".rs"));
const documented = new Set((await tools.grep({pattern: "^//!", limit: 1000})).split("\n").map(l => l.split(":")[0]));
return files.filter(f => !documented.has(f));"##,
        },
        Task {
            name: "lines of code per directory",
            direct: |s| {
                let files = files(s);
                files.iter().map(|f| s.call("read", json!({"file_path": f}))).collect::<Vec<_>>().join("\n")
            },
            program: r##"const files = (await tools.glob({pattern: "**/*.rs", limit: 1000})).split("\n").filter(f => f.endsWith(".rs"));
const dirs = {};
await Promise.all(files.map(async (file) => {
  const n = (await tools.read({file_path: file})).split("\n").filter(l => /^ *\d+  /.test(l)).length;
  const dir = file.split("/").slice(0, -1).join("/");
  dirs[dir] = (dirs[dir] || 0) + n;
}));
return Object.fromEntries(Object.entries(dirs).sort(([a], [b]) => (a < b ? -1 : 1)));"##,
        },
        Task {
            name: "unwrap calls per function, top five",
            direct: |s| s.call("grep", json!({"pattern": "unwrap\\(\\)|^pub fn", "limit": 1000})),
            program: r##"const out = await tools.grep({pattern: "unwrap\\(\\)|^pub fn", limit: 1000});
const counts = {};
let current = null;
for (const line of out.split("\n")) {
  const m = line.match(/^([^:]+):\d+: pub fn (\w+)/);
  if (m) { current = m[2]; continue; }
  if (current && line.includes("unwrap()")) counts[current] = (counts[current] || 0) + 1;
}
return Object.entries(counts).sort((a, b) => b[1] - a[1]).slice(0, 5);"##,
        },
        Task {
            name: "test functions per file",
            direct: |s| s.call("grep", json!({"pattern": "#\\[test\\]", "after": 1, "limit": 1000})),
            program: r##"const out = await tools.grep({pattern: "#\\[test\\]", limit: 1000});
const byFile = {};
for (const line of out.split("\n")) {
  const m = line.match(/^([^:]+):\d+: /);
  if (m) byFile[m[1]] = (byFile[m[1]] || 0) + 1;
}
return byFile;"##,
        },
        Task {
            name: "the longest function and its length",
            direct: |s| s.call("grep", json!({"pattern": "^pub fn |^}$", "limit": 1000})),
            program: r##"const files = (await tools.glob({pattern: "**/*.rs", limit: 1000})).split("\n").filter(f => f.endsWith(".rs"));
let best = {lines: 0};
for (const file of files) {
  const lines = (await tools.read({file_path: file})).split("\n").filter(l => /^ *\d+  /.test(l)).map(l => l.slice(7));
  let name = null, start = 0;
  lines.forEach((l, i) => {
    const m = l.match(/^pub fn (\w+)/);
    if (m) { name = m[1]; start = i; }
    else if (name && l === "}") { if (i - start - 1 > best.lines) best = {file, name, lines: i - start - 1}; name = null; }
  });
}
return best;"##,
        },
    ]
}
