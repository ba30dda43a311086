//! Descriptions from doc comments, reflowed as rustdoc (CommonMark) renders them: a model reads
//! the text, not the source's line wraps.
//!
//! - The lines of a paragraph are one line, joined with a space.
//! - A blank line separates paragraphs (runs of blank lines become one).
//! - List items (`- `, `* `, `+ `, `1. `, `1) `), headings (`# `), table rows (`|`) and block
//!   quotes (`>`) start a line of their own; a line under a list item that starts no block joins
//!   the item, as CommonMark's lazy continuation does.
//! - Fenced code blocks (```` ``` ```` or `~~~`) and indented code blocks (4 spaces after a blank
//!   line) keep their lines as written.
//! - A line ending in a hard break (`\`) keeps its line break.

/// `text` reflowed by the module's rules; leading and trailing blank lines removed.
pub fn reflow(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    // The open fence (its marker), while inside a fenced code block.
    let mut fence: Option<&str> = None;
    let mut in_indented_code = false;
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let trimmed = line.trim_start();
        if let Some(marker) = fence {
            if trimmed.starts_with(marker) {
                fence = None;
            }
            out.push(line.trim_end().to_owned());
            continue;
        }
        if let Some(marker) = FENCES.into_iter().find(|m| trimmed.starts_with(m)) {
            fence = Some(marker);
            in_indented_code = false;
            out.push(line.trim_end().to_owned());
            continue;
        }
        if trimmed.is_empty() {
            if out.last().is_some_and(|l| !l.is_empty()) {
                out.push(String::new());
            }
            continue;
        }
        let indent = line.len() - trimmed.len();
        let after_blank = out.last().is_none_or(String::is_empty);
        if indent >= 4 && (after_blank || in_indented_code) && !out.last().is_some_and(|l| is_list_item(l)) {
            in_indented_code = true;
            out.push(line.trim_end().to_owned());
            continue;
        }
        in_indented_code = false;
        let joins = match out.last() {
            Some(last) => {
                !last.is_empty()
                    && !starts_block(trimmed)
                    && !is_heading(last.trim_start())
                    && !last.trim_start().starts_with('|')
                    && !is_fence(last)
                    && !last.ends_with('\\')
            }
            None => false,
        };
        match out.last_mut() {
            Some(last) if joins => {
                last.push(' ');
                last.push_str(trimmed.trim_end());
            }
            _ => out.push(line.trim_end().to_owned()),
        }
    }
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out.join("\n")
}

const FENCES: [&str; 2] = ["```", "~~~"];

fn is_fence(line: &str) -> bool {
    FENCES.iter().any(|m| line.trim_start().starts_with(m))
}

/// Whether a line (without its indentation) starts a block of its own.
fn starts_block(line: &str) -> bool {
    is_list_item(line) || is_heading(line) || line.starts_with('|') || line.starts_with('>')
}

fn is_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes) && line[hashes..].starts_with(' ')
}

fn is_list_item(line: &str) -> bool {
    let line = line.trim_start();
    if ["- ", "* ", "+ "].iter().any(|m| line.starts_with(m)) {
        return true;
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    (1..=9).contains(&digits) && (line[digits..].starts_with(". ") || line[digits..].starts_with(") "))
}

#[cfg(test)]
mod tests {
    use super::reflow;

    #[test]
    fn the_lines_of_a_paragraph_are_joined_with_a_space() {
        assert_eq!(reflow("Reads a file\nfrom the workspace."), "Reads a file from the workspace.");
    }

    #[test]
    fn a_blank_line_separates_paragraphs() {
        assert_eq!(reflow("One\nline.\n\n\nTwo\nlines."), "One line.\n\nTwo lines.");
    }

    #[test]
    fn list_items_keep_their_lines_and_take_their_continuations() {
        assert_eq!(
            reflow("Modes:\n- `a`: the first,\n  wrapped.\n- `b`: the second.\n1. one\n2) two"),
            "Modes:\n- `a`: the first, wrapped.\n- `b`: the second.\n1. one\n2) two"
        );
    }

    #[test]
    fn fenced_code_keeps_its_lines() {
        let text = "Example:\n```\n*** Begin Patch\n  kept\n\n```\nAfter\nit.";
        assert_eq!(reflow(text), "Example:\n```\n*** Begin Patch\n  kept\n\n```\nAfter it.");
    }

    #[test]
    fn indented_code_after_a_blank_line_keeps_its_lines() {
        assert_eq!(reflow("Run:\n\n    a\n    b\n\nDone."), "Run:\n\n    a\n    b\n\nDone.");
    }

    #[test]
    fn headings_tables_and_hard_breaks_keep_their_lines() {
        assert_eq!(reflow("# Title\ntext\n| a |\n| b |\nend\\\nnext"), "# Title\ntext\n| a |\n| b |\nend\\\nnext");
    }

    #[test]
    fn reflowing_twice_changes_nothing_more() {
        let once = reflow("A\nb.\n\n- c\n  d\n```\nx\n y\n```");
        assert_eq!(reflow(&once), once);
    }
}
