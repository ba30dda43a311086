//! The import rules of ARCHITECTURE.md, checked on the sources: a room of `tool-runtime/src`
//! imports only rooms of its floor or below, no two rooms import each other in a circle but
//! `context` and `depends`, and `output/` imports neither `provider/` nor `registry/`.
//!
//! A reference is every `crate::ROOM` path and every `crate::Name` that `lib.rs` re-exports from
//! a room, outside comments and the `#[cfg(test)] mod tests` at the end of a file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, bottom first, as ARCHITECTURE.md lists them.
const FLOORS: &[&[&str]] = &[
    &[
        "error",
        "result",
        "call",
        "client",
        "clock",
        "ref_id",
        "rustdoc",
        "pattern_syntax",
        "lifecycle",
        "progress",
        "waits",
        "worker",
    ],
    &["schema"],
    &["decode"],
    &["talk", "context", "depends"],
    &["tool", "methods", "policy", "dynamic"],
    &["output", "search"],
    &["registry"],
    &["provider"],
    &["lib", "private"],
];

/// The one circle the rules allow.
const ALLOWED_CIRCLE: (&str, &str) = ("context", "depends");

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The room of a source file: its first component below `src`, without `.rs`.
fn room_of(path: &Path) -> String {
    let relative = path.strip_prefix(src()).unwrap();
    let first = relative.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.strip_suffix(".rs").map_or(first.clone(), str::to_owned)
}

/// The code of a file without its line comments and its trailing test module.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
    text.lines().map(|line| line.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// The first segment of each path after `crate::`, brace groups opened.
fn crate_segments(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(group.len(), |(i, _)| i);
            let mut level = 0;
            let mut entry = String::new();
            for c in group[..end].chars().chain(std::iter::once(',')) {
                match c {
                    '{' => level += 1,
                    '}' => level -= 1,
                    ',' if level == 0 => {
                        out.push(leading_ident(entry.trim()));
                        entry.clear();
                        continue;
                    }
                    _ => {}
                }
                entry.push(c);
            }
        } else {
            out.push(leading_ident(rest));
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

fn leading_ident(text: &str) -> String {
    text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// What `lib.rs` re-exports from a room: name -> room.
fn reexports(lib: &str, rooms: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in code(lib).split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else { continue };
        let Some((room, items)) = path.split_once("::") else { continue };
        if !rooms.contains(room) {
            continue;
        }
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let name = item.rsplit("::").next().unwrap_or_default().trim().to_owned();
            if !name.is_empty() {
                names.insert(name, room.to_owned());
            }
        }
    }
    names
}

/// Every import between two rooms: from -> {to}.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let rooms: BTreeSet<String> = files.iter().map(|f| room_of(f)).collect();
    let names = reexports(&std::fs::read_to_string(src().join("lib.rs")).unwrap(), &rooms);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let from = room_of(file);
        let text = std::fs::read_to_string(file).unwrap();
        for segment in crate_segments(&code(&text)) {
            let to = if rooms.contains(&segment) { Some(segment) } else { names.get(&segment).cloned() };
            if let Some(to) = to.filter(|to| *to != from) {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    edges
}

fn floor_of(room: &str) -> usize {
    FLOORS
        .iter()
        .position(|floor| floor.contains(&room))
        .unwrap_or_else(|| panic!("the room `{room}` is on no floor: add it to ARCHITECTURE.md and to FLOORS here"))
}

#[test]
fn every_room_imports_only_its_floor_and_those_below() {
    let upward: Vec<String> = imports()
        .iter()
        .flat_map(|(from, tos)| tos.iter().map(move |to| (from, to)))
        .filter(|(from, to)| floor_of(to) > floor_of(from))
        .map(|(from, to)| format!("{from} (floor {}) imports {to} (floor {})", floor_of(from) + 1, floor_of(to) + 1))
        .collect();
    assert_eq!(upward, Vec::<String>::new());
}

#[test]
fn no_rooms_import_each_other_in_a_circle_but_context_and_depends() {
    let mut edges = imports();
    edges.get_mut(ALLOWED_CIRCLE.1).map(|tos| tos.remove(ALLOWED_CIRCLE.0));
    // A room is in a circle when it reaches itself.
    let mut circles = Vec::new();
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = edges[start].iter().collect();
        while let Some(room) = stack.pop() {
            if room == start {
                circles.push(start.clone());
                break;
            }
            if seen.insert(room) {
                stack.extend(edges.get(room).into_iter().flatten());
            }
        }
    }
    assert_eq!(circles, Vec::<String>::new());
    assert!(imports()["context"].contains("depends") && imports()["depends"].contains("context"));
}

#[test]
fn output_imports_neither_the_providers_nor_the_registry() {
    let output = imports().get("output").cloned().unwrap_or_default();
    assert!(!output.contains("registry") && !output.contains("provider"), "output imports: {output:?}");
}
