//! A [`FileSet`] in memory, for tests, fuzzing and callers that keep files themselves.

use std::collections::BTreeMap;

use super::plan::{Entry, FileSet, PatchPlan};

/// Files in memory: `/`-separated relative paths to bytes. Directories exist implicitly (the
/// parents of files).
///
/// Paths are normalised: `.` and empty components vanish, `..` removes the previous component;
/// a path that is empty after that, that is absolute, or whose `..` climbs above the root is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryFiles {
    files: BTreeMap<String, Vec<u8>>,
}

impl MemoryFiles {
    /// An empty file set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the bytes of the file at `path` (normalised as above).
    ///
    /// # Errors
    /// The text of a refused path (see the type's docs).
    pub fn insert(&mut self, path: &str, bytes: impl Into<Vec<u8>>) -> Result<(), String> {
        let key = normalise(path)?;
        self.files.insert(key, bytes.into());
        Ok(())
    }

    /// The bytes of the file at `path`, if there is one.
    pub fn get(&self, path: &str) -> Option<&[u8]> {
        normalise(path).ok().and_then(|key| self.files.get(&key)).map(Vec::as_slice)
    }

    /// The files, by normalised path.
    pub fn files(&self) -> &BTreeMap<String, Vec<u8>> {
        &self.files
    }

    /// Applies a plan made against this file set (see [`plan_patch`](super::plan_patch)), change by
    /// change. Cannot fail: the plan was checked against these files.
    pub fn apply(&mut self, plan: PatchPlan<String>) {
        for change in plan.changes {
            if change.move_key.is_some() || change.new.is_none() {
                self.files.remove(&change.key);
            }
            if let Some(new) = change.new {
                self.files.insert(change.move_key.unwrap_or(change.key), new);
            }
        }
    }
}

fn normalise(path: &str) -> Result<String, String> {
    if path.starts_with('/') {
        return Err(format!("{path} is absolute; give a path relative to the root"));
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!("Path escapes workspace: {path}"));
                }
            }
            name => parts.push(name),
        }
    }
    if parts.is_empty() {
        return Err(format!("{path:?} names no file; give a file path"));
    }
    Ok(parts.join("/"))
}

impl FileSet for MemoryFiles {
    type Key = String;

    fn key(&self, path: &str) -> Result<String, String> {
        normalise(path)
    }

    fn read(&self, key: &String) -> Result<Entry, String> {
        if let Some(bytes) = self.files.get(key) {
            return Ok(Entry::File(bytes.clone()));
        }
        let prefix = format!("{key}/");
        let is_dir = self.files.range(prefix.clone()..).next().is_some_and(|(path, _)| path.starts_with(&prefix));
        Ok(if is_dir { Entry::Directory } else { Entry::Missing })
    }

    fn check_creatable(&self, key: &String) -> Result<(), String> {
        let mut end = 0;
        while let Some(slash) = key[end..].find('/') {
            let parent = &key[..end + slash];
            if self.files.contains_key(parent) {
                return Err(format!("{parent} is a file, so {key} cannot be created below it"));
            }
            end += slash + 1;
        }
        Ok(())
    }
}
