//! The configurable limits of the fs tools.

use tool_runtime::{DependencyError, DependencyKey, ToolContext};

/// The environment variable that sets [`FsLimits::read_max_output_bytes`] (a positive integer,
/// in bytes).
pub const READ_MAX_OUTPUT_BYTES_ENV: &str = "TOOL_READ_MAX_OUTPUT_BYTES";

/// The environment variable that sets [`FsLimits::read_whole_file_scan_max_bytes`] (a positive
/// integer, in bytes).
pub const READ_WHOLE_FILE_SCAN_MAX_BYTES_ENV: &str = "TOOL_READ_WHOLE_FILE_SCAN_MAX_BYTES";

/// Limits of the fs tools. The defaults are those of `tools-spec.md`; change them in code by
/// overriding [`FS_LIMITS`]:
///
/// ```
/// use tool_std::fs::{FS_LIMITS, FsLimits};
///
/// let builder = tool_std::registry_builder()
///     .override_dependency(&FS_LIMITS, FsLimits { read_max_output_bytes: 16 * 1024, ..FsLimits::default() });
/// # let _ = builder;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsLimits {
    /// `read`: lines shown when the call gives no `limit` (default 1500: a page and its footers
    /// stay under the output layer's 2000-line cut).
    pub read_default_lines: usize,
    /// `read`: lines longer than this many grapheme clusters are cut (default 1000).
    pub read_max_line_graphemes: usize,
    /// `read`: cap of the numbered lines in bytes, footers not counted (default 40 KiB = 40960,
    /// so that a page and its footers stay under the output layer's 50 KiB cut and its
    /// continuation survives; env `TOOL_READ_MAX_OUTPUT_BYTES`). At least one line is always shown.
    pub read_max_output_bytes: usize,
    /// `read` and `read_line`: the whole-file scan limit, in bytes (default 8 MiB = 8388608; env
    /// `TOOL_READ_WHOLE_FILE_SCAN_MAX_BYTES`). A file of at most this many bytes is read to its
    /// end on every call, for its `content_sha256` and its total line count. A larger file is read
    /// only as far as the call shows (plus at most one more line and the rest of its 64 KiB chunk,
    /// to know whether more follow):
    /// its output names its size in bytes instead of its line count and carries no hash, unless
    /// the call reached its end. 0 treats every non-empty file as larger.
    pub read_whole_file_scan_max_bytes: u64,
    /// `read_line`: graphemes shown when the call gives no `char_limit` (default 10000).
    pub read_line_default_graphemes: usize,
    /// `read_line`: the largest `char_limit` a call may ask for, in graphemes (default 100000).
    pub read_line_max_graphemes: usize,
    /// `grep`: lines longer than this many graphemes are shown as a window (default 500).
    pub grep_max_line_graphemes: usize,
    /// `grep`: cap of a page in bytes, its footer not counted (default 40 KiB = 40960, under the
    /// output layer's 50 KiB cut, so that `[showing N of M matching lines]` survives it). At
    /// least one line is always shown.
    pub grep_max_output_bytes: usize,
    /// `grep`: the width of that window in graphemes, around the first match of the line (default 200).
    pub grep_window_graphemes: usize,
    /// Diff previews of `write` and `edit`: at most this many lines (default 120).
    pub diff_max_lines: usize,
    /// Diff previews of `write` and `edit`: at most this many bytes (default 16 KiB = 16384).
    pub diff_max_bytes: usize,
    /// `glob` and `grep`: results shown when the call gives no `limit` (default 100).
    pub search_default_limit: usize,
    /// `glob` and `grep`: the largest `limit` a call may ask for (default 1000).
    pub search_max_limit: usize,
    /// `grep`: the largest `before` / `after` a call may ask for, in lines (default 50).
    pub grep_max_context: usize,
}

impl Default for FsLimits {
    fn default() -> Self {
        Self {
            read_default_lines: 1500,
            read_max_line_graphemes: 1000,
            read_max_output_bytes: 40 * 1024,
            read_whole_file_scan_max_bytes: 8 * 1024 * 1024,
            read_line_default_graphemes: 10_000,
            read_line_max_graphemes: 100_000,
            grep_max_line_graphemes: 500,
            grep_max_output_bytes: 40 * 1024,
            grep_window_graphemes: 200,
            diff_max_lines: 120,
            diff_max_bytes: 16 * 1024,
            search_default_limit: 100,
            search_max_limit: 1000,
            grep_max_context: 50,
        }
    }
}

impl FsLimits {
    /// The defaults, with `read_max_output_bytes` taken from `TOOL_READ_MAX_OUTPUT_BYTES` and
    /// `read_whole_file_scan_max_bytes` from `TOOL_READ_WHOLE_FILE_SCAN_MAX_BYTES` when set.
    ///
    /// # Errors
    /// A message naming the variable when one is set but not a positive integer.
    pub fn from_env() -> Result<Self, String> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`FsLimits::from_env`] with the variables looked up by `var`.
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut limits = Self::default();
        if let Some(value) = var(READ_MAX_OUTPUT_BYTES_ENV) {
            limits.read_max_output_bytes = positive(READ_MAX_OUTPUT_BYTES_ENV, &value)?;
        }
        if let Some(value) = var(READ_WHOLE_FILE_SCAN_MAX_BYTES_ENV) {
            limits.read_whole_file_scan_max_bytes = positive(READ_WHOLE_FILE_SCAN_MAX_BYTES_ENV, &value)?;
        }
        Ok(limits)
    }
}

/// `value` of the variable `name` as a positive integer of bytes.
fn positive<T: std::str::FromStr + Default + PartialOrd>(name: &str, value: &str) -> Result<T, String> {
    value
        .trim()
        .parse::<T>()
        .ok()
        .filter(|n| *n > T::default())
        .ok_or_else(|| format!("{name} must be a positive integer (bytes), got `{value}`"))
}

/// The limits the fs tools use: [`FsLimits::from_env`], created once per registry.
pub static FS_LIMITS: DependencyKey<FsLimits> = DependencyKey::shared("fs_limits", limits_from_env);

fn limits_from_env(_ctx: &ToolContext) -> Result<FsLimits, DependencyError> {
    FsLimits::from_env().map_err(DependencyError)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<FsLimits, String> {
        FsLimits::from_vars(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn without_variables_the_limits_are_the_defaults() {
        assert_eq!(from(&[]), Ok(FsLimits::default()));
        assert_eq!(FsLimits::default().read_whole_file_scan_max_bytes, 8_388_608);
    }

    #[test]
    fn the_whole_file_scan_limit_comes_from_its_variable() {
        let limits = from(&[("TOOL_READ_WHOLE_FILE_SCAN_MAX_BYTES", " 1048576 ")]).unwrap();
        assert_eq!(limits, FsLimits { read_whole_file_scan_max_bytes: 1_048_576, ..FsLimits::default() });
    }

    #[test]
    fn the_output_cap_comes_from_its_variable() {
        let limits = from(&[("TOOL_READ_MAX_OUTPUT_BYTES", "4096")]).unwrap();
        assert_eq!(limits, FsLimits { read_max_output_bytes: 4096, ..FsLimits::default() });
    }

    #[test]
    fn a_variable_that_is_not_a_positive_integer_is_an_error_naming_it() {
        assert_eq!(
            from(&[("TOOL_READ_WHOLE_FILE_SCAN_MAX_BYTES", "8MiB")]),
            Err("TOOL_READ_WHOLE_FILE_SCAN_MAX_BYTES must be a positive integer (bytes), got `8MiB`".to_owned())
        );
        assert_eq!(
            from(&[("TOOL_READ_WHOLE_FILE_SCAN_MAX_BYTES", "0")]),
            Err("TOOL_READ_WHOLE_FILE_SCAN_MAX_BYTES must be a positive integer (bytes), got `0`".to_owned())
        );
        assert_eq!(
            from(&[("TOOL_READ_MAX_OUTPUT_BYTES", "-1")]),
            Err("TOOL_READ_MAX_OUTPUT_BYTES must be a positive integer (bytes), got `-1`".to_owned())
        );
    }
}
