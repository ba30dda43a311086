//! The import rules of ARCHITECTURE.md, checked on a crate's sources by one function,
//! [`violations`], which each crate's `tests/.../architecture.rs` calls with its [`Rules`].
//!
//! # Rooms and files
//! A room is a file or a folder directly under `src`, named without `.rs`; the crate root
//! (`lib.rs`, or `main.rs` for a binary) is the room `lib` or `main`. Inside a folder, each file
//! and sub-folder is a unit of that folder (`provider/gemini`); `mod.rs` is the folder itself.
//!
//! # What counts as an import
//! Outside line comments and the `#[cfg(test)] mod tests` at the end of a file:
//! - between rooms: every `crate::ROOM` path, and every `crate::Name` where `Name` is re-exported
//!   by the crate root from a room (that room) or defined in the crate root (the root's room);
//! - between the units of one folder: a file's `super::UNIT` paths, its `super::Name` paths where
//!   the folder's `mod.rs` imports `Name` from a unit, and its `crate::FOLDER::UNIT` paths.
//!   `mod.rs` may use its units (it declares and re-exports them), and a unit may use its
//!   folder's own items: neither is an edge between units.
//!
//! # The rules
//! 1. A room imports only rooms of its floor or of the floors below ([`Rules::floors`]).
//! 2. No circle, neither between rooms nor between the units of a folder, but the ones
//!    [`Rules::circles`] allows.
//! 3. A room named in [`Rules::only`] imports only the rooms listed for it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The import rules of one crate.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    /// The crate's rooms by floor, bottom first; every room must be on one.
    pub floors: &'a [&'a [&'a str]],
    /// The circles allowed, each as two rooms (`("context", "depends")`) or two units of one
    /// folder (`("provider/a", "provider/b")`).
    pub circles: &'a [(&'a str, &'a str)],
    /// Rooms that may import only the rooms listed beside them (e.g. a client side that shares
    /// only the leaves of the server side).
    pub only: &'a [(&'a str, &'a [&'a str])],
}

/// Edges from an importer to what it imports (rooms, or `folder/unit` names).
pub type Edges = BTreeMap<String, BTreeSet<String>>;

/// Every rule `rules` states that the sources under `src` break, one sentence each, sorted;
/// empty when all hold.
///
/// # Panics
/// When `src` or a file under it cannot be read.
pub fn violations(src: &Path, rules: &Rules<'_>) -> Vec<String> {
    let rooms = room_imports(src);
    let mut out = Vec::new();
    let floor_of = |room: &str| rules.floors.iter().position(|floor| floor.contains(&room));
    for room in rooms_of(src) {
        if floor_of(&room).is_none() {
            out.push(format!("the room `{room}` is on no floor: add it to ARCHITECTURE.md and to the test's floors"));
        }
    }
    for (from, tos) in &rooms {
        for to in tos {
            if let (Some(a), Some(b)) = (floor_of(from), floor_of(to))
                && b > a
            {
                out.push(format!("`{from}` (floor {}) imports `{to}` (floor {}), a floor above", a + 1, b + 1));
            }
        }
    }
    for (room, allowed) in rules.only {
        for to in rooms.get(*room).into_iter().flatten() {
            if !allowed.contains(&to.as_str()) {
                out.push(format!("`{room}` imports `{to}`; it may import only {allowed:?}"));
            }
        }
    }
    for edges in [rooms, unit_imports(src)] {
        for member in circles(edges, rules.circles) {
            out.push(format!("`{member}` is on a circle of imports"));
        }
    }
    out.sort();
    out
}

/// Every import between two rooms of the crate under `src`.
///
/// # Panics
/// When `src` or a file under it cannot be read.
pub fn room_imports(src: &Path) -> Edges {
    let root = root_of(src);
    let rooms = rooms_of(src);
    let root_text = read(&src.join(format!("{root}.rs")));
    let names = root_names(&root_text, &root, &rooms);
    let mut edges = Edges::new();
    for file in rust_files(src) {
        let from = room_of(src, &file);
        for path in paths_after(&code(&read(&file)), "crate::") {
            let first = &path[0];
            let to = if rooms.contains(first) { Some(first.clone()) } else { names.get(first).cloned() };
            if let Some(to) = to.filter(|to| *to != from) {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    edges
}

/// Every import between two units of one folder, as `folder/unit` names.
///
/// # Panics
/// When `src` or a file under it cannot be read.
pub fn unit_imports(src: &Path) -> Edges {
    let mut edges = Edges::new();
    for dir in folders(src) {
        let units = units_of(&dir);
        let relative: Vec<String> = dir
            .strip_prefix(src)
            .unwrap_or(&dir)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let folder = relative.join("/");
        let mod_names = dir.join("mod.rs").exists().then(|| mod_imports(&read(&dir.join("mod.rs")), &units));
        for unit in &units {
            let file = dir.join(format!("{unit}.rs"));
            if !file.is_file() {
                continue;
            }
            let text = code(&read(&file));
            let mut targets = BTreeSet::new();
            for path in paths_after(&text, "super::") {
                if units.contains(&path[0]) {
                    targets.insert(path[0].clone());
                } else if let Some(unit) = mod_names.as_ref().and_then(|names| names.get(&path[0])) {
                    targets.insert(unit.clone());
                }
            }
            for path in paths_after(&text, "crate::") {
                if path.len() > relative.len() && path[..relative.len()] == relative[..] {
                    let next = &path[relative.len()];
                    if units.contains(next) {
                        targets.insert(next.clone());
                    }
                }
            }
            targets.remove(unit);
            for target in targets {
                edges.entry(format!("{folder}/{unit}")).or_default().insert(format!("{folder}/{target}"));
            }
        }
    }
    edges
}

/// The members of every circle of `edges` once the second of each allowed pair's import of the
/// first is taken out.
fn circles(mut edges: Edges, allowed: &[(&str, &str)]) -> Vec<String> {
    for (a, b) in allowed {
        if let Some(tos) = edges.get_mut(*b) {
            tos.remove(*a);
        }
    }
    let mut out = Vec::new();
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = edges[start].iter().collect();
        while let Some(node) = stack.pop() {
            if node == start {
                out.push(start.clone());
                break;
            }
            if seen.insert(node) {
                stack.extend(edges.get(node).into_iter().flatten());
            }
        }
    }
    out
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every file and every folder below `dir` (not `dir` itself), each list sorted.
fn walk(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut files, mut folders) = (Vec::new(), Vec::new());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                folders.push(path.clone());
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    folders.sort();
    (files, folders)
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    walk(dir).0.into_iter().filter(|path| path.extension().is_some_and(|e| e == "rs")).collect()
}

fn folders(dir: &Path) -> Vec<PathBuf> {
    walk(dir).1
}

/// `lib` or `main`.
fn root_of(src: &Path) -> String {
    if src.join("lib.rs").exists() { "lib" } else { "main" }.to_owned()
}

fn stem(path: &Path) -> String {
    let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
    name.strip_suffix(".rs").map_or(name.clone(), str::to_owned)
}

fn rooms_of(src: &Path) -> BTreeSet<String> {
    rust_files(src).iter().map(|f| room_of(src, f)).collect()
}

/// The units of a folder: its files but `mod.rs`, and its sub-folders.
fn units_of(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_dir() || path.extension().is_some_and(|e| e == "rs"))
        .map(|path| stem(&path))
        .filter(|name| name != "mod")
        .collect()
}

/// The room of a source file: its first component below `src`, without `.rs`.
fn room_of(src: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(src).unwrap_or(path);
    let first = relative.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned()).unwrap_or_default();
    first.strip_suffix(".rs").map_or(first.clone(), str::to_owned)
}

/// The code of a file without its line comments and its trailing test module.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
    text.lines().map(|line| line.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

fn leading_ident(text: &str) -> String {
    text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The length of `text` up to the brace that closes one already open.
fn group_end(text: &str) -> usize {
    let mut depth = 1;
    for (i, c) in text.char_indices() {
        depth += match c {
            '{' => 1,
            '}' => -1,
            _ => 0,
        };
        if depth == 0 {
            return i;
        }
    }
    text.len()
}

/// The entries of a brace group's inside, split at its top-level commas.
fn entries(group: &str) -> Vec<&str> {
    let (mut out, mut level, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => level += 1,
            '}' => level -= 1,
            ',' if level == 0 => {
                out.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&group[start..]);
    out
}

/// The paths a use tree (or path expression) at the start of `text` names, each as its
/// segments: `a::{b, c::d}` is `[a, b]` and `[a, c, d]`.
fn tree(text: &str) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    let mut rest = text.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let inside = &group[..group_end(group)];
            return entries(inside)
                .into_iter()
                .flat_map(tree)
                .map(|path| prefix.iter().cloned().chain(path).collect())
                .collect();
        }
        let ident = leading_ident(rest);
        if ident.is_empty() {
            break;
        }
        rest = &rest[ident.len()..];
        prefix.push(ident);
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    if prefix.is_empty() { Vec::new() } else { vec![prefix] }
}

/// Every path that follows `prefix` (`crate::`, `super::`) in `code`, without the prefix.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
            continue;
        }
        out.extend(tree(rest));
    }
    out
}

/// The `use` declarations of `text` (one per line start, any visibility), each as the paths it
/// names.
fn uses(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset + (line.len() - line.trim_start().len());
        offset += line.len();
        let mut rest = &text[start..];
        if let Some(after) = rest.strip_prefix("pub") {
            rest = after.strip_prefix(' ').unwrap_or(after);
            if rest.starts_with('(') {
                rest = rest.split_once(')').map_or("", |(_, after)| after.trim_start());
            }
        }
        if let Some(tree_text) = rest.strip_prefix("use ") {
            out.extend(tree(tree_text));
        }
    }
    out
}

/// What the crate root names that belongs to a room: names it re-exports from a room (that
/// room) and items it defines (the root's own room).
fn root_names(root_text: &str, root: &str, rooms: &BTreeSet<String>) -> BTreeMap<String, String> {
    let code = code(root_text);
    let mut names = BTreeMap::new();
    for path in uses(&code) {
        let path: Vec<&String> = path.iter().skip_while(|s| *s == "crate" || *s == "self").collect();
        if path.len() >= 2 && rooms.contains(path[0]) {
            names.insert(path[path.len() - 1].clone(), path[0].clone());
        }
    }
    for line in code.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2) {
            if ["fn", "struct", "enum", "const", "static", "type", "trait"].contains(&pair[0]) {
                let name = leading_ident(pair[1]);
                if !name.is_empty() && !rooms.contains(&name) {
                    names.entry(name).or_insert_with(|| root.to_owned());
                }
            }
        }
    }
    names
}

/// What a folder's `mod.rs` imports from its units: name -> unit.
fn mod_imports(text: &str, units: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for path in uses(&code(text)) {
        let path: Vec<&String> = path.iter().skip_while(|s| *s == "self").collect();
        if path.len() >= 2 && units.contains(path[0]) {
            names.insert(path[path.len() - 1].clone(), path[0].clone());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(paths: &[&[&str]]) -> Vec<Vec<String>> {
        paths.iter().map(|p| p.iter().map(|s| (*s).to_owned()).collect()).collect()
    }

    #[test]
    fn a_use_tree_names_every_path_it_opens() {
        assert_eq!(tree("a::{b, c::{d, e}}, f;"), strings(&[&["a", "b"], &["a", "c", "d"], &["a", "c", "e"]]));
    }

    #[test]
    fn paths_after_skip_a_longer_name_ending_in_the_prefix_and_macro_crate() {
        let code = "use crate::x::Y; my_crate::z(); $crate::w; crate::{v, u::t};";
        assert_eq!(paths_after(code, "crate::"), strings(&[&["x", "Y"], &["v"], &["u", "t"]]));
    }

    #[test]
    fn a_circle_is_found_unless_it_is_the_allowed_pair() {
        let edges = |pairs: &[(&str, &str)]| -> Edges {
            let mut edges = Edges::new();
            for (from, to) in pairs {
                edges.entry((*from).to_owned()).or_default().insert((*to).to_owned());
            }
            edges
        };
        let pair = edges(&[("a", "b"), ("b", "a"), ("c", "d")]);
        assert_eq!(circles(pair.clone(), &[]), ["a", "b"]);
        assert_eq!(circles(pair, &[("a", "b")]), Vec::<String>::new());
        let three = edges(&[("a", "b"), ("b", "c"), ("c", "a")]);
        assert_eq!(circles(three, &[("a", "b")]), ["a", "b", "c"]);
    }

    #[test]
    fn the_root_names_its_re_exports_and_its_own_items() {
        let rooms = BTreeSet::from(["server".to_owned(), "content".to_owned()]);
        let names = root_names(
            "pub use crate::server::{McpServer, CallRequest};\npub use content::tool_entry;\npub fn runtime() {}",
            "lib",
            &rooms,
        );
        assert_eq!(names["McpServer"], "server");
        assert_eq!(names["tool_entry"], "content");
        assert_eq!(names["runtime"], "lib");
    }
}
