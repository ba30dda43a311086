//! The diff preview of a patch: a unified diff per file (3 lines of context), the whole capped
//! at 120 lines and 16 KiB. Kept private to this module so that it can give way to a preview
//! shared by every file tool.

use similar::{Algorithm, TextDiff};

/// Lines of context around each change.
pub(crate) const PREVIEW_CONTEXT_LINES: usize = 3;
/// Most lines a preview keeps (the omission marker included).
pub(crate) const PREVIEW_MAX_LINES: usize = 120;
/// Most bytes a preview keeps (16 KiB, the omission marker included).
pub(crate) const PREVIEW_MAX_BYTES: usize = 16 * 1024;

/// The unified diff of one file from `old` to `new` (`None`: the file does not exist on that
/// side, shown as `/dev/null`). `old_name` and `new_name` are shown after `a/` and `b/`.
/// Content that is not UTF-8 is shown as `Binary files ... differ`. The diff is computed with the
/// patience algorithm of `similar` on lines, with `\ No newline at end of file` where it applies.
pub(crate) fn file_diff(old_name: &str, old: Option<&[u8]>, new_name: &str, new: Option<&[u8]>) -> String {
    let a = if old.is_some() { format!("a/{old_name}") } else { "/dev/null".to_owned() };
    let b = if new.is_some() { format!("b/{new_name}") } else { "/dev/null".to_owned() };
    let mut out = format!("--- {a}\n+++ {b}\n");
    let (Ok(old_text), Ok(new_text)) =
        (std::str::from_utf8(old.unwrap_or_default()), std::str::from_utf8(new.unwrap_or_default()))
    else {
        out.push_str(&format!("Binary files {a} and {b} differ\n"));
        return out;
    };
    let diff = TextDiff::configure().algorithm(Algorithm::Patience).diff_lines(old_text, new_text);
    let mut unified = diff.unified_diff();
    unified.context_radius(PREVIEW_CONTEXT_LINES).missing_newline_hint(true);
    for hunk in unified.iter_hunks() {
        out.push_str(&hunk.to_string());
    }
    out
}

/// `text` cut to at most [`PREVIEW_MAX_LINES`] lines and [`PREVIEW_MAX_BYTES`] bytes: whole lines
/// from the head and from the tail (about half the room each) around a line
/// `...[N lines omitted]...`. Returns the text and whether anything was cut.
pub(crate) fn cap_preview(text: &str) -> (String, bool) {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if lines.len() <= PREVIEW_MAX_LINES && text.len() <= PREVIEW_MAX_BYTES {
        return (text.to_owned(), false);
    }
    // Room left for the kept lines once the marker (at most ~40 bytes) is in.
    let max_lines = PREVIEW_MAX_LINES - 1;
    let max_bytes = PREVIEW_MAX_BYTES - 64;
    let (mut head, mut head_bytes) = (0, 0);
    while head < max_lines.div_ceil(2) && head_bytes + lines[head].len() <= max_bytes / 2 {
        head_bytes += lines[head].len();
        head += 1;
    }
    let (mut tail, mut tail_bytes) = (0, 0);
    while head + tail < max_lines.min(lines.len())
        && tail_bytes + lines[lines.len() - 1 - tail].len() <= max_bytes - head_bytes
        && lines.len() - 1 - tail >= head
    {
        tail_bytes += lines[lines.len() - 1 - tail].len();
        tail += 1;
    }
    let omitted = lines.len() - head - tail;
    let mut out = String::with_capacity(head_bytes + tail_bytes + 40);
    out.extend(lines[..head].iter().copied());
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("...[{omitted} lines omitted]...\n"));
    out.extend(lines[lines.len() - tail..].iter().copied());
    (out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_diff_is_kept_whole() {
        let diff = file_diff("a.txt", Some(b"x\ny\n"), "a.txt", Some(b"x\nz\n"));
        assert_eq!(diff, "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n");
        assert_eq!(cap_preview(&diff), (diff.clone(), false));
    }

    #[test]
    fn a_long_diff_keeps_head_and_tail_around_the_marker() {
        let text: String = (1..=300).map(|i| format!("line {i}\n")).collect();
        let (capped, cut) = cap_preview(&text);
        assert!(cut);
        let lines: Vec<&str> = capped.lines().collect();
        assert_eq!(lines.len(), PREVIEW_MAX_LINES);
        assert_eq!(lines[0], "line 1");
        assert_eq!(lines[59], "line 60");
        assert_eq!(lines[60], "...[181 lines omitted]...");
        assert_eq!(lines[119], "line 300");
    }

    #[test]
    fn a_wide_diff_is_capped_in_bytes() {
        let text: String = (1..=40).map(|i| format!("{i:04} {}\n", "x".repeat(995))).collect();
        let (capped, cut) = cap_preview(&text);
        assert!(cut);
        assert!(capped.len() <= PREVIEW_MAX_BYTES, "{}", capped.len());
        assert!(capped.starts_with("0001 "));
        assert!(capped.ends_with(&format!("0040 {}\n", "x".repeat(995))));
        assert!(capped.contains("...[24 lines omitted]...\n"), "{capped}");
    }
}
