//! Whether a `#[tool]` function is an associated function of an `impl` (or `trait`) block.
//!
//! An attribute macro sees only its item, not where the item is; but the registration it adds
//! beside the function (a static, a struct, an `inventory` submission) cannot live in an `impl`
//! block, and rustc reports each of those items with its own error in generated names. So the
//! macro looks at the source: the file and position of the `fn` token (`proc_macro::Span`), and
//! the positions of the file's associated functions, found once per file by a scan that tracks
//! the blocks `{ .. }` open and skips comments, strings and character literals. When anything is
//! unknown (no file, a position that is not one of those `fn` tokens, as in code a
//! `macro_rules!` wrote), the answer is "not in a block" and the expansion is as before.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::rc::Rc;

/// What identifies one version of a file: its path, length and modification time. A long-lived
/// expansion process (an editor's) sees edited files again.
type FileVersion = (PathBuf, u64, Option<std::time::SystemTime>);

thread_local! {
    /// For each file version scanned by this process's expansions, the positions of its
    /// associated functions ([`associated_fns`]); `None` for a file that could not be read.
    static FILES: RefCell<HashMap<FileVersion, Option<Rc<HashSet<Position>>>>> = RefCell::new(HashMap::new());
}

/// A 1-based line and a 1-based column, in characters, as `proc_macro::Span` gives them.
type Position = (usize, usize);

/// `true` when the `fn` token at `span` is directly inside the body of an `impl` or `trait`
/// block of its source file. Each version of a file is read and scanned once per process.
pub(crate) fn in_impl_block(span: proc_macro2::Span) -> bool {
    if !proc_macro::is_available() {
        return false;
    }
    let span = span.unwrap();
    let Some(path) = span.local_file() else {
        return false;
    };
    let Ok(metadata) = std::fs::metadata(&path) else {
        return false;
    };
    let version = (path, metadata.len(), metadata.modified().ok());
    let associated = FILES.with(|files| {
        let mut files = files.borrow_mut();
        if let Some(found) = files.get(&version) {
            return found.clone();
        }
        let scanned = std::fs::read_to_string(&version.0).ok().map(|text| Rc::new(associated_fns(&text)));
        files.retain(|(path, _, _), _| *path != version.0);
        files.insert(version, scanned.clone());
        scanned
    });
    associated.is_some_and(|positions| positions.contains(&(span.line(), span.column())))
}

/// What a `{` opens, from the first item keyword since the previous `;`, `{` or `}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// `impl ... {` or `trait ... {`.
    Impl,
    /// A function body, a module, a type's fields, an expression block.
    Other,
    /// A block inside an item's header, before the item's own `{` (a const generic argument,
    /// `impl X<{ N }>`): the header's keyword still holds after it.
    InHeader,
}

/// The positions of the `fn` tokens of `text` directly inside an `impl` or `trait` block: a
/// function inside a method's body, or one returning `impl Trait`, is not one of them.
pub(crate) fn associated_fns(text: &str) -> HashSet<Position> {
    let bytes = text.as_bytes();
    let mut found = HashSet::new();
    let mut stack: Vec<Block> = Vec::new();
    let mut keyword: Option<Block> = None;
    // The `(`, `[` and (in an `impl` or `trait` header) `<` open since `keyword`: a `;` or `{`
    // inside them (`impl S<[u8; 4]>`, `impl S<{ N }>`) does not end the header.
    let mut nest = 0usize;
    let (mut line, mut line_start) = (1, 0);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                line += 1;
                line_start = i + 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = text[i..].find('\n').map_or(bytes.len(), |end| i + end);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = skip_block_comment(bytes, i);
                (line, line_start) = count_lines(text, i, end, line, line_start);
                i = end;
                continue;
            }
            b'"' => {
                let end = skip_string(bytes, i + 1, 0);
                (line, line_start) = count_lines(text, i, end, line, line_start);
                i = end;
                continue;
            }
            b'\'' => {
                i = skip_char(text, i);
                continue;
            }
            b'{' if keyword.is_some() && nest > 0 => stack.push(Block::InHeader),
            b'{' => {
                stack.push(keyword.take().unwrap_or(Block::Other));
                nest = 0;
            }
            b'}' => {
                let closed = stack.pop();
                if closed != Some(Block::InHeader) {
                    (keyword, nest) = (None, 0);
                }
            }
            b'(' | b'[' if keyword.is_some() => nest += 1,
            // Angle brackets of the header's generics; inside a block of the header (`{ N < 1 }`)
            // they are comparisons and shifts.
            b'<' if keyword == Some(Block::Impl) && stack.last() != Some(&Block::InHeader) => nest += 1,
            b')' | b']' => nest = nest.saturating_sub(1),
            // `->` in a header (`impl X for Y where F: Fn() -> u8`) closes nothing.
            b'>' if keyword == Some(Block::Impl)
                && stack.last() != Some(&Block::InHeader)
                && i > 0
                && bytes[i - 1] != b'-' =>
            {
                nest = nest.saturating_sub(1);
            }
            b';' if nest == 0 => keyword = None,
            c if (c.is_ascii_alphabetic() || c == b'_') && !ident_before(bytes, i) => {
                let end = i + bytes[i..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
                let word = &text[i..end];
                // A raw string: `r"..."`, `br#"..."#`, `cr"..."`.
                let hashes = bytes[end..].iter().take_while(|&&b| b == b'#').count();
                if matches!(word, "r" | "br" | "cr") && bytes.get(end + hashes) == Some(&b'"') {
                    let after = skip_string(bytes, end + hashes + 1, hashes);
                    (line, line_start) = count_lines(text, i, after, line, line_start);
                    i = after;
                    continue;
                }
                if word == "fn" && keyword.is_none() && stack.last() == Some(&Block::Impl) {
                    found.insert((line, text[line_start..i].chars().count() + 1));
                }
                if keyword.is_none() {
                    keyword = match word {
                        "impl" | "trait" => Some(Block::Impl),
                        "fn" | "mod" | "struct" | "enum" | "union" => Some(Block::Other),
                        _ => None,
                    };
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The line and line start after the text from `from` to `to`, which may span lines.
fn count_lines(text: &str, from: usize, to: usize, line: usize, line_start: usize) -> (usize, usize) {
    let skipped = &text[from..to.min(text.len())];
    match skipped.rfind('\n') {
        Some(last) => (line + skipped.matches('\n').count(), from + last + 1),
        None => (line, line_start),
    }
}

/// `true` when the byte before `i` continues an identifier (so `i` is not the start of a word).
fn ident_before(bytes: &[u8], i: usize) -> bool {
    i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
}

/// The index after the block comment starting at `start` (nested comments included).
fn skip_block_comment(bytes: &[u8], start: usize) -> usize {
    let (mut depth, mut i) = (0usize, start);
    while i + 1 < bytes.len() {
        if bytes[i] == b'/' && bytes[i + 1] == b'*' {
            depth += 1;
            i += 2;
        } else if bytes[i] == b'*' && bytes[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    bytes.len()
}

/// The index after the string whose contents start at `start`: a raw string with `hashes`
/// `#`s, or (with `hashes == 0`) a string with escapes.
fn skip_string(bytes: &[u8], start: usize, hashes: usize) -> usize {
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if hashes == 0 => i += 2,
            b'"' if bytes[i + 1..].iter().take(hashes).filter(|&&b| b == b'#').count() == hashes => {
                return i + 1 + hashes;
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The index after the character literal at `start`, or after the `'` of a lifetime or label.
fn skip_char(text: &str, start: usize) -> usize {
    let rest = &text[start + 1..];
    let mut chars = rest.char_indices();
    match chars.next() {
        Some((_, '\\')) => rest.find('\'').map_or(text.len(), |end| {
            // `'\''`: the quote right after the backslash is escaped.
            let end = if end == 1 { rest[2..].find('\'').map_or(rest.len(), |e| e + 2) } else { end };
            start + 1 + end + 1
        }),
        Some((_, c)) => match chars.next() {
            Some((i, '\'')) => start + 1 + i + 1,
            _ => start + 1 + c.len_utf8(),
        },
        None => text.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The position of the `nth` `fn ` of `text`.
    fn fn_at(text: &str, nth: usize) -> Position {
        let offset = text.match_indices("fn ").nth(nth).unwrap().0;
        let line = text[..offset].matches('\n').count() + 1;
        (line, text[..offset].rsplit('\n').next().unwrap().chars().count() + 1)
    }

    fn associated(text: &str) -> Vec<Position> {
        let mut positions: Vec<Position> = associated_fns(text).into_iter().collect();
        positions.sort_unstable();
        positions
    }

    #[test]
    fn a_function_of_a_module_or_a_function_body_is_not_associated() {
        let text = "use x;\n\n#[tool]\nasync fn add() {}\nmod m {\n    fn inner() {}\n}\nfn f() { fn g() {} }\n";
        assert_eq!(associated(text), []);
    }

    #[test]
    fn an_associated_function_is_found_in_its_impl_or_trait_block() {
        let text = "impl<T> Notes<T> where T: Clone {\n    fn first() -> impl Iterator { a }\n    #[tool]\n    fn count() {}\n}\ntrait T { fn d() {} }\n";
        assert_eq!(associated(text), [fn_at(text, 0), fn_at(text, 1), fn_at(text, 2)]);
        assert_eq!(fn_at(text, 1), (4, 5));
    }

    #[test]
    fn a_function_in_a_method_body_or_returning_impl_trait_is_not_associated() {
        let text = "impl Notes {\n    fn outer(&self) {\n        fn inner() {}\n    }\n}\nfn free() -> impl Fn() { || {} }\nfn after() {}\n";
        assert_eq!(associated(text), [fn_at(text, 0)]);
    }

    #[test]
    fn braces_in_comments_strings_and_chars_are_skipped_and_lines_still_counted() {
        let text = "// impl X {\n/* { /* nested\n } */ */\nconst A: &str = \"impl {\\\" {\n\";\nconst B: &[u8] = br#\"}\\\" {\"#;\nconst C: char = '{';\nconst D: char = '\\'';\nimpl Y {\n    fn f<'a>(x: &'a str) {}\n}\n";
        assert_eq!(associated(text), [(10, 5)]);
    }

    #[test]
    fn a_semicolon_or_a_block_inside_an_impl_header_does_not_end_it() {
        let text = "impl Server<[u8; 4]> {\n    fn a() {}\n}\nimpl<const N: usize> S<{ N + 1 }> where F: Fn([u8; 2]) -> u8 {\n    fn b() {}\n}\nfn f(x: [u8; 4]) { fn g() {} }\ntrait T { fn c() -> [u8; 2]; fn d() {} }\n";
        assert_eq!(associated(text), [fn_at(text, 0), fn_at(text, 1), fn_at(text, 4), fn_at(text, 5)]);
        // Comparisons and shifts inside a block of the header are not angle brackets.
        let text = "impl S<{ N < 1 }> { fn a() {} }\nimpl S<{ 1 << N }> { fn b() {} }\nimpl S<{ if N > 1 { 2 } else { 3 } }> { fn c() {} }\nimpl T { fn d() {} }\nfn e() {}\n";
        assert_eq!(associated(text), [fn_at(text, 0), fn_at(text, 1), fn_at(text, 2), fn_at(text, 3)]);
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let text = "impl Ünïcode { /* é */ fn a() {} }\n";
        assert_eq!(associated(text), [(1, 24)]);
    }
}
