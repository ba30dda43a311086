//! The `glob` tool.

use globset::GlobBuilder;
use tool_runtime::{ToolContext, tool};

use super::error::FsError;
use super::limits::{FS_LIMITS, FsLimits};
use super::walk::{files, relative_slash_path, search_base};
use crate::sandbox::{SANDBOX, Sandbox};

/// Find files by glob pattern (`**/*.rs`, `src/*.{ts,tsx}`); grep searches their contents.
#[tool(set = "fs", blocking, tags(read_only))]
pub fn glob(
    /// Glob relative to path; `**/` matches any number of directories.
    pattern: String,
    /// Directory to search (default: the workspace root).
    path: Option<String>,
    /// Files to show (default 100).
    #[arg(range(min = 1, max = 1000))]
    limit: Option<usize>,
    /// Also list files .gitignore or .ignore excludes.
    include_ignored: Option<bool>,
    #[depends(SANDBOX)] sandbox: Sandbox,
    #[depends(FS_LIMITS)] limits: FsLimits,
    ctx: &ToolContext,
) -> Result<String, FsError> {
    let limit = checked_limit(limit, &limits)?;
    let trimmed = pattern.strip_prefix("./").unwrap_or(&pattern);
    let matcher = GlobBuilder::new(trimmed)
        .literal_separator(true)
        .build()
        .map_err(|e| FsError::InvalidGlob { pattern: pattern.clone(), message: e.kind().to_string() })?
        .compile_matcher();
    let (base, is_dir) = search_base(&sandbox, path.as_deref(), include_ignored.unwrap_or(false))?;
    if !is_dir {
        return Err(FsError::NotADirectory { path: path.unwrap_or_default() });
    }
    let mut matches: Vec<String> = Vec::new();
    for (entry, _) in files(&sandbox, &base, None, include_ignored.unwrap_or(false), false) {
        if ctx.is_cancelled() {
            return Err(FsError::Cancelled { tool: "glob" });
        }
        if matcher.is_match(relative_slash_path(&base, entry.path())) {
            matches.push(sandbox.display_path(entry.path()));
        }
    }
    if matches.is_empty() {
        return Ok(format!("No matches for: {pattern}"));
    }
    let mut out = matches.iter().take(limit).map(String::as_str).collect::<Vec<_>>().join("\n");
    if matches.len() > limit {
        out.push_str(&format!(
            "\n\n[showing {limit} of {} files] Narrow the pattern or path, or raise limit (max {}).",
            matches.len(),
            limits.search_max_limit
        ));
    }
    Ok(out)
}

/// The `limit` argument of `glob` and `grep`: the default when absent, else 1..=max.
pub(crate) fn checked_limit(limit: Option<usize>, limits: &FsLimits) -> Result<usize, FsError> {
    match limit {
        None => Ok(limits.search_default_limit),
        Some(value) if (1..=limits.search_max_limit).contains(&value) => Ok(value),
        Some(value) => Err(FsError::OutOfRange { field: "limit", value, min: 1, max: limits.search_max_limit }),
    }
}
