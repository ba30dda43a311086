//! A text file as lines: what matching sees (lines without endings) and what writing keeps
//! (each line's own ending, the byte order mark, the final-newline state).

/// A UTF-8 file split into lines.
#[derive(Debug)]
pub(crate) struct TextFile<'a> {
    /// `true` when the file starts with a UTF-8 byte order mark (not part of any line).
    pub(crate) bom: bool,
    /// The lines without their endings (`\r\n` or `\n`).
    pub(crate) lines: Vec<&'a str>,
    /// Each line's ending: `"\r\n"`, `"\n"`, or `""` for a last line without one.
    pub(crate) endings: Vec<&'a str>,
    /// The ending of inserted lines: `"\r\n"` when more lines end with CRLF than with a bare LF.
    pub(crate) eol: &'static str,
    /// `true` when the file ends with a line ending, or is empty.
    pub(crate) final_newline: bool,
}

impl<'a> TextFile<'a> {
    pub(crate) fn split(text: &'a str) -> Self {
        let (bom, body) = match text.strip_prefix('\u{feff}') {
            Some(body) => (true, body),
            None => (false, text),
        };
        let mut lines = Vec::new();
        let mut endings = Vec::new();
        let (mut crlf, mut lf) = (0usize, 0usize);
        for piece in body.split_inclusive('\n') {
            if let Some(line) = piece.strip_suffix("\r\n") {
                crlf += 1;
                lines.push(line);
                endings.push("\r\n");
            } else if let Some(line) = piece.strip_suffix('\n') {
                lf += 1;
                lines.push(line);
                endings.push("\n");
            } else {
                lines.push(piece);
                endings.push("");
            }
        }
        let final_newline = body.is_empty() || body.ends_with('\n');
        Self { bom, lines, endings, eol: if crlf > lf { "\r\n" } else { "\n" }, final_newline }
    }
}

/// Builds a file's new text line by line: kept lines bring their own ending, inserted ones get the
/// file's; the last line ends as the original file's last line did, except that an empty last
/// line always gets an ending (without one it would vanish). Lines are written as they come, one
/// behind, so that the last one is known when it is finished.
pub(crate) struct TextBuilder<'a> {
    eol: &'static str,
    final_newline: bool,
    out: String,
    /// The line before the current end, and its ending (`""`: the file's, unless it is last).
    pending: Option<(&'a str, &'a str)>,
}

impl<'a> TextBuilder<'a> {
    pub(crate) fn new(file: &TextFile<'a>, capacity: usize) -> Self {
        let mut out = String::with_capacity(capacity + 3);
        if file.bom {
            out.push('\u{feff}');
        }
        Self { eol: file.eol, final_newline: file.final_newline, out, pending: None }
    }

    fn push(&mut self, line: &'a str, ending: &'a str) {
        if let Some((previous, previous_ending)) = self.pending.replace((line, ending)) {
            self.out.push_str(previous);
            self.out.push_str(if previous_ending.is_empty() { self.eol } else { previous_ending });
        }
    }

    pub(crate) fn keep(&mut self, line: &'a str, ending: &'a str) {
        self.push(line, ending);
    }

    pub(crate) fn insert(&mut self, line: &'a str) {
        self.push(line, "");
    }

    pub(crate) fn finish(mut self) -> String {
        if let Some((line, ending)) = self.pending.take() {
            self.out.push_str(line);
            // An empty last line only exists with an ending, so it gets one even in a file
            // without a final newline.
            if self.final_newline || line.is_empty() {
                self.out.push_str(if ending.is_empty() { self.eol } else { ending });
            }
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_endings_and_the_final_newline_state() {
        let file = TextFile::split("a\r\nb\nc");
        assert_eq!(file.lines, ["a", "b", "c"]);
        assert_eq!(file.endings, ["\r\n", "\n", ""]);
        assert!(!file.final_newline);
        assert_eq!(file.eol, "\n");
    }

    #[test]
    fn an_empty_file_has_no_lines_and_counts_as_ending_with_a_newline() {
        let file = TextFile::split("");
        assert!(file.lines.is_empty());
        assert!(file.final_newline);
    }

    #[test]
    fn an_empty_last_line_keeps_an_ending_in_a_file_without_a_final_newline() {
        let file = TextFile::split("a\n\nb");
        let mut builder = TextBuilder::new(&file, 0);
        builder.keep(file.lines[0], file.endings[0]);
        builder.keep(file.lines[1], file.endings[1]);
        assert_eq!(builder.finish(), "a\n\n");
    }

    #[test]
    fn rebuilding_every_line_gives_back_the_same_bytes() {
        for text in ["", "\n", "a", "a\n", "\u{feff}x\r\ny\r\n", "a\r\nb", "\n\n"] {
            let file = TextFile::split(text);
            let mut builder = TextBuilder::new(&file, 0);
            for (line, ending) in file.lines.iter().zip(&file.endings) {
                builder.keep(line, ending);
            }
            assert_eq!(builder.finish(), text);
        }
    }
}
