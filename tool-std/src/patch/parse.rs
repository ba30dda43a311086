//! The patch grammar: text in, [`Patch`] out. No file is read here.

use std::fmt;

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// A parsed patch: its file sections in the order they were written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// The sections, at least one.
    pub sections: Vec<Section>,
}

/// One `*** Add File:`, `*** Delete File:` or `*** Update File:` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// 1-based line of the section header in the patch text (prose before the envelope counted).
    pub line: usize,
    /// The path after the header, trimmed.
    pub path: String,
    /// What the section does.
    pub kind: SectionKind,
}

/// What a [`Section`] does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionKind {
    /// Create a file that must not exist. The lines are the text after each `+` (none for an empty
    /// file); every line, the last included, ends with `\n`.
    Add {
        /// The new file's lines, without the `+` and without line endings.
        lines: Vec<String>,
    },
    /// Delete a file that must exist.
    Delete,
    /// Change a file that must exist, optionally renaming it.
    Update {
        /// The path of `*** Move to:`, trimmed.
        move_to: Option<String>,
        /// The chunks, in file order.
        chunks: Vec<Chunk>,
    },
}

/// One chunk of an Update section: optional `@@` context lines to seek first, then the lines to
/// find and what to put in their place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// 1-based line of the chunk's first line (its first `@@`, or its first body line) in the patch.
    pub line: usize,
    /// The text of each `@@ text` line, in order: each is a whole line of the file to find (after
    /// the previous one) before the chunk's own lines are searched.
    pub anchors: Vec<String>,
    /// The body: context, removed and added lines, at least one.
    pub lines: Vec<ChunkLine>,
    /// `true` when the chunk ends with `*** End of File`: its lines must be the file's last lines.
    pub end_of_file: bool,
}

/// One body line of a [`Chunk`], without its one-character prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkLine {
    /// ` text`, or a truly empty line (empty context): must be in the file, is kept as the file has it.
    Context(String),
    /// `-text`: must be in the file, is removed.
    Remove(String),
    /// `+text`: is inserted.
    Add(String),
}

impl ChunkLine {
    /// The line's text, without its prefix.
    pub fn text(&self) -> &str {
        match self {
            Self::Context(text) | Self::Remove(text) | Self::Add(text) => text,
        }
    }
}

/// A patch that does not follow the grammar. `Display`: `patch line {line}: {message}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("patch line {line}: {message}")]
pub struct ParseError {
    /// 1-based line of the patch text where the problem is (prose before the envelope counted).
    pub line: usize,
    /// What was found and what was expected instead.
    pub message: String,
}

/// Parses the text of a patch. The grammar, and how loosely it is read:
///
/// ```text
/// *** Begin Patch
/// *** Add File: <path>          then lines `+text` (none for an empty file)
/// *** Delete File: <path>       no body
/// *** Update File: <path>
/// *** Move to: <path>           optional, right after Update File
/// @@ <optional context line>    one or more; the first chunk of a section may omit it
///  context / -removed / +added  a truly empty line is an empty context line
/// *** End of File               optional, last line of a chunk
/// *** End Patch
/// ```
///
/// - `\r\n` is read as `\n` (so is any run of `\r` at the end of a line). Everything before the
///   first line that is `*** Begin Patch` (spaces around it allowed) is ignored: prose, a
///   markdown fence. Everything after `*** End Patch` is ignored too, except a second
///   `*** Begin Patch`, which is an error.
/// - Headers start in column 0; spaces after them are ignored, and so is a missing space after the
///   colon. Paths are trimmed and must not be empty.
/// - Blank lines between sections are ignored, and so are blank lines right after an Update
///   header (or its Move to) when an `@@` or a header follows them. Inside a chunk a truly empty
///   line is an empty context line, except at the chunk's end: empty lines followed by `@@`, a
///   header or the end of the text separate, they do not match (a line holding one space is an
///   empty context line anywhere).
/// - An `@@ -12,7 +12,8 @@ text` header (unified-diff numbers) is accepted: the numbers are
///   ignored and `text`, if any, is the context line.
/// - An Update section needs at least one chunk or a `*** Move to:`, and when it has no move, at
///   least one `-` or `+` line.
///
/// # Errors
/// A [`ParseError`] naming the first line that breaks the grammar and what was expected there.
pub fn parse_patch(text: &str) -> Result<Patch, ParseError> {
    // `\r\n` (and any run of `\r` before a `\n`) ends a line like `\n`: no file line can end
    // with `\r`, since a file's `\r\n` is its line ending.
    let mut lines: Vec<&str> = text.split('\n').map(|line| line.trim_end_matches('\r')).collect();
    if text.ends_with('\n') {
        lines.pop();
    }
    let Some(begin) = lines.iter().position(|line| line.trim() == BEGIN) else {
        return Err(ParseError {
            line: 1,
            message: format!(
                "no `{BEGIN}` line; the patch must be wrapped in `{BEGIN}` ... `{END}`, each on its own line"
            ),
        });
    };
    Parser { lines, pos: begin + 1 }.patch()
}

struct Parser<'a> {
    lines: Vec<&'a str>,
    /// 0-based index of the next line to read.
    pos: usize,
}

fn error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError { line, message: message.into() }
}

/// `Some(path)` when `line` is the header `name` (e.g. `*** Add File:`); the path is trimmed.
/// Every path a patch may change, read from its section and `*** Move to:` headers without parsing
/// the rest, in patch order, repeats kept: what `apply_patch` locks ([`crate::resources`]). It
/// reads more than [`parse_patch`] accepts (any line that is a header once trimmed, in or out of
/// the envelope), so that every path the patch changes is in it; a path that is not changed is
/// only locked for nothing.
pub fn patch_paths(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            [ADD, DELETE, UPDATE, MOVE].into_iter().find_map(|name| header(line, name))
        })
        .filter(|path| !path.is_empty())
        .collect()
}

fn header<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.strip_prefix(name).map(str::trim)
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// Shows a patch line in an error message, cut to 80 characters.
fn quote(line: &str) -> String {
    let mut shown: String = line.chars().take(80).collect();
    if shown.len() < line.len() {
        shown.push_str("...");
    }
    format!("`{shown}`")
}

/// The text after a unified-diff hunk header's numbers (`-a[,b] +c[,d] @@`), if `rest` is one.
fn unified_tail(rest: &str) -> Option<&str> {
    fn numbers(s: &str) -> Option<&str> {
        let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return None;
        }
        let s = &s[digits..];
        match s.strip_prefix(',') {
            Some(more) => {
                let digits = more.len() - more.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                (digits > 0).then(|| &more[digits..])
            }
            None => Some(s),
        }
    }
    let s = numbers(rest.trim_start().strip_prefix('-')?)?;
    let trimmed = s.trim_start_matches(' ');
    if trimmed.len() == s.len() {
        return None;
    }
    let s = numbers(trimmed.strip_prefix('+')?)?;
    s.trim_start_matches(' ').strip_prefix("@@")
}

/// The context line of an `@@` header (`rest` is the text after `@@`), `None` when it has none.
fn anchor_of(rest: &str) -> Option<String> {
    let text = unified_tail(rest).unwrap_or(rest);
    let text = text.strip_prefix(' ').unwrap_or(text);
    (!is_blank(text)).then(|| text.to_owned())
}

impl Parser<'_> {
    fn line_no(&self) -> usize {
        self.pos + 1
    }

    fn current(&self) -> Option<&str> {
        self.lines.get(self.pos).copied()
    }

    /// Index of the first non-blank line at or after `from`.
    fn next_non_blank(&self, from: usize) -> Option<usize> {
        (from..self.lines.len()).find(|&i| !is_blank(self.lines[i]))
    }

    fn patch(mut self) -> Result<Patch, ParseError> {
        let mut sections = Vec::new();
        loop {
            let Some(line) = self.current() else {
                return Err(error(
                    self.lines.len().max(1),
                    format!("the patch ends without `{END}`; it may have been cut off. Send the whole patch"),
                ));
            };
            let header_line = line.trim_end();
            if header_line == END {
                if sections.is_empty() {
                    return Err(error(
                        self.line_no(),
                        "the patch has no sections; add `*** Add File:`, `*** Delete File:` or `*** Update File:`",
                    ));
                }
                if let Some(offset) = self.lines[self.pos + 1..].iter().position(|l| l.trim() == BEGIN) {
                    return Err(error(
                        self.pos + offset + 2,
                        format!("a second `{BEGIN}` after `{END}`; send one patch per call, or merge the sections"),
                    ));
                }
                return Ok(Patch { sections });
            }
            if is_blank(line) {
                self.pos += 1;
                continue;
            }
            let line_no = self.line_no();
            if let Some(path) = header(header_line, ADD) {
                let path = self.path(path, ADD)?;
                self.pos += 1;
                let lines = self.add_body(&path)?;
                sections.push(Section { line: line_no, path, kind: SectionKind::Add { lines } });
            } else if let Some(path) = header(header_line, DELETE) {
                let path = self.path(path, DELETE)?;
                self.pos += 1;
                self.delete_body(&path)?;
                sections.push(Section { line: line_no, path, kind: SectionKind::Delete });
            } else if let Some(path) = header(header_line, UPDATE) {
                let path = self.path(path, UPDATE)?;
                self.pos += 1;
                let kind = self.update_body(&path, line_no)?;
                sections.push(Section { line: line_no, path, kind });
            } else {
                return Err(error(
                    line_no,
                    format!(
                        "expected a section header (`{ADD} <path>`, `{DELETE} <path>`, `{UPDATE} <path>`) or \
                         `{END}`, got {}",
                        quote(line)
                    ),
                ));
            }
        }
    }

    fn path(&self, path: &str, header: &str) -> Result<String, ParseError> {
        if path.is_empty() {
            return Err(error(self.line_no(), format!("`{header}` needs a path after the colon")));
        }
        Ok(path.to_owned())
    }

    fn add_body(&mut self, path: &str) -> Result<Vec<String>, ParseError> {
        let mut lines = Vec::new();
        while let Some(line) = self.current() {
            if let Some(text) = line.strip_prefix('+') {
                lines.push(text.to_owned());
                self.pos += 1;
            } else if line.starts_with("***") {
                break;
            } else if is_blank(line) {
                match self.next_non_blank(self.pos) {
                    Some(next) if !self.lines[next].starts_with("***") => {
                        return Err(error(
                            self.line_no(),
                            format!(
                                "empty line in `{ADD} {path}`; every line of a new file starts with `+` (a lone `+` \
                                 for an empty line)"
                            ),
                        ));
                    }
                    next => self.pos = next.unwrap_or(self.lines.len()),
                }
            } else {
                return Err(error(
                    self.line_no(),
                    format!(
                        "expected a line starting with `+` in `{ADD} {path}`, or the next `***` header; got {}",
                        quote(line)
                    ),
                ));
            }
        }
        Ok(lines)
    }

    fn delete_body(&mut self, path: &str) -> Result<(), ParseError> {
        match self.next_non_blank(self.pos) {
            Some(next) if !self.lines[next].starts_with("***") => Err(error(
                next + 1,
                format!(
                    "`{DELETE} {path}` takes no lines; expected the next `***` header, got {}",
                    quote(self.lines[next])
                ),
            )),
            next => {
                self.pos = next.unwrap_or(self.lines.len());
                Ok(())
            }
        }
    }

    fn update_body(&mut self, path: &str, header_line: usize) -> Result<SectionKind, ParseError> {
        let mut move_to = None;
        if let Some(target) = self.current().and_then(|line| header(line.trim_end(), MOVE)) {
            move_to = Some(self.path(target, MOVE)?);
            self.pos += 1;
        }
        if let Some(next) = self.next_non_blank(self.pos)
            && (self.lines[next].starts_with("@@")
                || (self.lines[next].starts_with("***") && self.lines[next].trim_end() != END_OF_FILE))
        {
            self.pos = next;
        }
        let mut chunks: Vec<Chunk> = Vec::new();
        while let Some(line) = self.current() {
            if line.starts_with("***") && line.trim_end() != END_OF_FILE {
                if header(line.trim_end(), MOVE).is_some() {
                    return Err(error(
                        self.line_no(),
                        format!("`{MOVE}` must come right after `{UPDATE} {path}`, before its chunks"),
                    ));
                }
                break;
            }
            chunks.push(self.chunk(path)?);
        }
        let changes = chunks.iter().flat_map(|c| &c.lines).any(|l| !matches!(l, ChunkLine::Context(_)));
        if chunks.is_empty() && move_to.is_none() {
            return Err(error(
                header_line,
                format!(
                    "`{UPDATE} {path}` has no chunks; add one (`@@`, then lines starting with ' ', '-' or '+'), or a \
                     `{MOVE}` line"
                ),
            ));
        }
        if !changes && move_to.is_none() {
            return Err(error(
                header_line,
                format!("`{UPDATE} {path}` changes nothing: no line of its chunks starts with `-` or `+`"),
            ));
        }
        Ok(SectionKind::Update { move_to, chunks })
    }

    fn chunk(&mut self, path: &str) -> Result<Chunk, ParseError> {
        let start = self.line_no();
        let mut anchors = Vec::new();
        while let Some(rest) = self.current().and_then(|line| line.strip_prefix("@@")) {
            anchors.extend(anchor_of(rest));
            self.pos += 1;
        }
        let mut lines = Vec::new();
        let mut end_of_file = false;
        // Truly empty lines at the end of the body so far: separators when an `@@`, a header or
        // the end of the text follows them (not when `*** End of File` does).
        let mut trailing_empty = 0;
        while let Some(line) = self.current() {
            let body = match line.chars().next() {
                None => ChunkLine::Context(String::new()),
                Some(' ') => ChunkLine::Context(line[1..].to_owned()),
                Some('-') => ChunkLine::Remove(line[1..].to_owned()),
                Some('+') => ChunkLine::Add(line[1..].to_owned()),
                _ if line.starts_with("@@") => break,
                _ if line.trim_end() == END_OF_FILE => {
                    if lines.is_empty() {
                        return Err(error(
                            self.line_no(),
                            format!("`{END_OF_FILE}` ends a chunk but the chunk has no lines before it"),
                        ));
                    }
                    end_of_file = true;
                    self.pos += 1;
                    if let Some(next) = self.next_non_blank(self.pos) {
                        let next_line = self.lines[next];
                        if !next_line.starts_with("@@") && !next_line.starts_with("***") {
                            return Err(error(
                                next + 1,
                                format!(
                                    "`{END_OF_FILE}` must be the last line of its chunk; start the next chunk with \
                                     `@@`, got {}",
                                    quote(next_line)
                                ),
                            ));
                        }
                        self.pos = next;
                    }
                    break;
                }
                _ if line.starts_with("***") => break,
                Some('\\') => {
                    return Err(error(
                        self.line_no(),
                        format!(
                            "{} is not part of this format; remove it (each file keeps its own final-newline state)",
                            quote(line)
                        ),
                    ));
                }
                _ => {
                    return Err(error(
                        self.line_no(),
                        format!(
                            "expected a chunk line starting with ' ' (context), '-' (remove) or '+' (add), an `@@` \
                             line, or a `***` header in `{UPDATE} {path}`; got {}",
                            quote(line)
                        ),
                    ));
                }
            };
            trailing_empty = if line.is_empty() { trailing_empty + 1 } else { 0 };
            lines.push(body);
            self.pos += 1;
        }
        if !end_of_file {
            lines.truncate(lines.len() - trailing_empty);
        }
        if lines.is_empty() {
            return Err(error(start, format!("a chunk of `{UPDATE} {path}` has no lines after its `@@`")));
        }
        Ok(Chunk { line: start, anchors, lines, end_of_file })
    }
}

/// Writes the patch in the canonical form of the grammar, which [`parse_patch`] reads back to an
/// equal [`Patch`] (line numbers aside).
impl fmt::Display for Patch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{BEGIN}")?;
        for section in &self.sections {
            match &section.kind {
                SectionKind::Add { lines } => {
                    writeln!(f, "{ADD} {}", section.path)?;
                    for line in lines {
                        writeln!(f, "+{line}")?;
                    }
                }
                SectionKind::Delete => writeln!(f, "{DELETE} {}", section.path)?,
                SectionKind::Update { move_to, chunks } => {
                    writeln!(f, "{UPDATE} {}", section.path)?;
                    if let Some(target) = move_to {
                        writeln!(f, "{MOVE} {target}")?;
                    }
                    for chunk in chunks {
                        if chunk.anchors.is_empty() {
                            writeln!(f, "@@")?;
                        }
                        for anchor in &chunk.anchors {
                            // An anchor that itself looks like unified numbers is written after
                            // a pair of them, so that it is read back whole.
                            if unified_tail(anchor).is_some() {
                                writeln!(f, "@@ -1 +1 @@ {anchor}")?;
                            } else {
                                writeln!(f, "@@ {anchor}")?;
                            }
                        }
                        for line in &chunk.lines {
                            match line {
                                ChunkLine::Context(text) => writeln!(f, " {text}")?,
                                ChunkLine::Remove(text) => writeln!(f, "-{text}")?,
                                ChunkLine::Add(text) => writeln!(f, "+{text}")?,
                            }
                        }
                        if chunk.end_of_file {
                            writeln!(f, "{END_OF_FILE}")?;
                        }
                    }
                }
            }
        }
        writeln!(f, "{END}")
    }
}
