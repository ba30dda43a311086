//! Whether a `#[tool]` function is an associated function of an `impl` (or `trait`) block.
//!
//! An attribute macro sees only its item, not where the item is; but the registration it adds
//! beside the function (a static, a struct, an `inventory` submission) cannot live in an `impl`
//! block, and rustc reports each of those items with its own error in generated names. So the
//! macro looks at the source: the file and position of the `fn` token (`proc_macro::Span`), and
//! the blocks that enclose that position, found by a scan of the file that skips comments,
//! strings and character literals. When anything is unknown (no file, a position that is not an
//! `fn` token, as in code a `macro_rules!` wrote), the answer is "not in a block" and the
//! expansion is as before.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

thread_local! {
    /// The files read so far by this compilation's expansions, by path.
    static FILES: RefCell<HashMap<PathBuf, Option<Rc<str>>>> = RefCell::new(HashMap::new());
}

/// `true` when the `fn` token at `span` is directly inside the body of an `impl` or `trait`
/// block of its source file.
pub(crate) fn in_impl_block(span: proc_macro2::Span) -> bool {
    if !proc_macro::is_available() {
        return false;
    }
    let span = span.unwrap();
    let Some(path) = span.local_file() else {
        return false;
    };
    let text = FILES.with(|files| {
        files
            .borrow_mut()
            .entry(path.clone())
            .or_insert_with(|| std::fs::read_to_string(&path).ok().map(Rc::from))
            .clone()
    });
    text.is_some_and(|text| enclosing_block(&text, span.line(), span.column()) == Some(Block::Impl))
}

/// What a `{` opens, from the first item keyword since the previous `;`, `{` or `}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Block {
    /// `impl ... {` or `trait ... {`.
    Impl,
    /// A function body, a module, a type's fields, an expression block.
    Other,
}

/// The block that directly encloses the `fn` token at the 1-based `line` and 1-based `column`
/// (in characters) of `text`; `None` when no `fn` token is there or it is at the top level.
pub(crate) fn enclosing_block(text: &str, line: usize, column: usize) -> Option<Block> {
    let line_start: usize = text.split_inclusive('\n').take(line.checked_sub(1)?).map(str::len).sum();
    let target =
        line_start + text[line_start..].chars().take(column.checked_sub(1)?).map(char::len_utf8).sum::<usize>();
    if !text.get(target..)?.starts_with("fn") {
        return None;
    }
    let bytes = text.as_bytes();
    let mut stack: Vec<Block> = Vec::new();
    let mut keyword: Option<Block> = None;
    let mut i = 0;
    while i < target {
        let c = bytes[i];
        match c {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = text[i..].find('\n').map_or(bytes.len(), |end| i + end);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = skip_block_comment(bytes, i);
                continue;
            }
            b'"' => {
                i = skip_string(bytes, i + 1, 0);
                continue;
            }
            b'r' if !ident_before(bytes, i) && matches!(bytes.get(i + 1), Some(b'"' | b'#')) => {
                let hashes = bytes[i + 1..].iter().take_while(|&&b| b == b'#').count();
                if bytes.get(i + 1 + hashes) == Some(&b'"') {
                    i = skip_string(bytes, i + 2 + hashes, hashes);
                    continue;
                }
            }
            b'\'' => {
                i = skip_char(text, i);
                continue;
            }
            b'{' => {
                stack.push(keyword.take().unwrap_or(Block::Other));
            }
            b'}' => {
                stack.pop();
                keyword = None;
            }
            b';' => keyword = None,
            c if (c.is_ascii_alphabetic() || c == b'_') && !ident_before(bytes, i) => {
                let end = i + bytes[i..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
                if keyword.is_none() {
                    keyword = match &text[i..end] {
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
    stack.last().copied()
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

    fn at_fn(text: &str, nth: usize) -> Option<Block> {
        let offset = text.match_indices("fn ").nth(nth).unwrap().0;
        let line = text[..offset].matches('\n').count() + 1;
        let column = text[..offset].rsplit('\n').next().unwrap().chars().count() + 1;
        enclosing_block(text, line, column)
    }

    #[test]
    fn a_function_of_a_module_is_in_no_impl_block() {
        let text = "use x;\n\n#[tool]\nasync fn add() {}\nmod m {\n    fn inner() {}\n}\n";
        assert_eq!(at_fn(text, 0), None);
        assert_eq!(at_fn(text, 1), Some(Block::Other));
    }

    #[test]
    fn an_associated_function_is_in_its_impl_or_trait_block() {
        let text = "impl<T> Notes<T> where T: Clone {\n    fn first() -> impl Iterator { a }\n    #[tool]\n    fn count() {}\n}\ntrait T { fn d() {} }\n";
        assert_eq!(at_fn(text, 0), Some(Block::Impl));
        assert_eq!(at_fn(text, 1), Some(Block::Impl));
        assert_eq!(at_fn(text, 2), Some(Block::Impl));
    }

    #[test]
    fn a_function_in_a_method_body_or_returning_impl_trait_is_not_associated() {
        let text = "impl Notes {\n    fn outer(&self) {\n        fn inner() {}\n    }\n}\nfn free() -> impl Fn() { || {} }\nfn after() {}\n";
        assert_eq!(at_fn(text, 1), Some(Block::Other));
        assert_eq!(at_fn(text, 3), None);
    }

    #[test]
    fn braces_in_comments_strings_and_chars_are_skipped() {
        let text = "// impl X {\n/* { /* nested } */ */\nconst A: &str = \"impl {\\\" {\";\nconst B: &str = r#\"}\" {\"#;\nconst C: char = '{';\nconst D: char = '\\'';\nfn f<'a>(x: &'a str) {}\nfn g() {}\n";
        assert_eq!(at_fn(text, 0), None);
        assert_eq!(at_fn(text, 1), None);
    }

    #[test]
    fn a_position_without_an_fn_token_is_unknown() {
        assert_eq!(enclosing_block("impl X {\n    const A: u8 = 0;\n}\n", 2, 5), None);
        assert_eq!(enclosing_block("fn a() {}\n", 9, 1), None);
    }
}
