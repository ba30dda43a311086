//! Which regular expressions a schema's `pattern` may be: those that `regex-lite` (the engine
//! decoding enforces patterns with) and ECMA-262 (the dialect JSON Schema's `pattern` is written
//! in, so the one a model and a validator read it in) read alike.
//!
//! The one source of this rule: `tool-runtime` compiles it for `RegistryBuilder::build` (the
//! patterns of `#[input]` types and `#[schemars(regex(..))]` attributes), and `tool-macros`
//! compiles the same file for `#[arg(pattern)]` at compile time.

/// Why `pattern` cannot be enforced as JSON Schema reads it, as a lowercase phrase that says
/// what to write instead (`` `(?i)` (an inline flag) is not ECMA-262 syntax, ... ``); `None`
/// when it can. Refused:
/// - what `regex-lite` does not compile (`\p{..}` classes, look-around, backreferences, ...),
///   with its reason;
/// - what it compiles and ECMA-262 reads otherwise or refuses: inline flags and groups other
///   than `(?:..)` and `(?<name>..)` (`(?i)`, `(?P<name>..)`), the escapes `\A`, `\z`, `\<`,
///   `\>`, `\b{..}`, `\x{..}` and `\u{..}`, a `[` inside a character class (POSIX classes
///   `[[:alpha:]]`, nested classes), a `]` first in a class (`[]a]`), and a quantifier applied
///   to a quantifier (`a++`, `a{2}{3}`; a lazy `a*?` is fine).
///
/// What stays different, and is documented where patterns are described: `\d`, `\w`, `\s` and
/// `\b` are ASCII (ECMA-262's `\s` also matches Unicode spaces), and `.` matches `\r`, U+2028
/// and U+2029 (ECMA-262's does not).
pub(crate) fn pattern_problem(pattern: &str) -> Option<String> {
    if let Err(error) = regex_lite::Regex::new(pattern) {
        let text = error.to_string();
        let reason = text.lines().rfind(|l| !l.trim().is_empty()).unwrap_or_default().trim();
        return Some(format!("is not a valid regular expression: {reason}"));
    }
    let chars: Vec<char> = pattern.chars().collect();
    let not_ecma = |what: &str, instead: &str| {
        Some(format!("uses {what}, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; {instead}"))
    };
    let mut i = 0;
    // Inside `[..]`, and whether the next character is the class's first (after `[` or `[^`).
    let (mut in_class, mut class_first) = (false, false);
    // The last token was a quantifier, and whether it already took its lazy `?`.
    let (mut quantified, mut lazy) = (false, false);
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\\' {
            let after = chars.get(i + 2).copied();
            match next {
                Some(e @ ('A' | 'z')) => {
                    return not_ecma(&format!("`\\{e}`"), "anchor with `^` and `$`");
                }
                Some(e @ ('<' | '>')) => {
                    return not_ecma(&format!("`\\{e}`"), "write the word boundary as `\\b`");
                }
                Some('b') if after == Some('{') && !in_class => {
                    return not_ecma("`\\b{..}`", "write the word boundary as `\\b`");
                }
                Some(e @ ('x' | 'u')) if after == Some('{') => {
                    return not_ecma(&format!("`\\{e}{{..}}`"), "write the character as `\\xHH` or `\\uHHHH`");
                }
                _ => {}
            }
            i += 2;
            (quantified, class_first) = (false, false);
            continue;
        }
        if in_class {
            if c == '[' {
                return not_ecma(
                    "a `[` inside a character class (a POSIX class such as `[[:alpha:]]`, or a nested class)",
                    "list the characters or ranges (`[a-zA-Z]`), or escape the bracket as `\\[`",
                );
            }
            if c == ']' && class_first {
                return not_ecma("a `]` first in a character class", "escape it as `\\]`");
            }
            (in_class, class_first) = (c != ']', false);
            i += 1;
            continue;
        }
        let counted = c == '{' && chars[i + 1..].iter().take_while(|d| d.is_ascii_digit() || **d == ',').count() > 0;
        match c {
            '[' => {
                // A negated class's first character comes after its `^`.
                if next == Some('^') {
                    i += 1;
                }
                (in_class, class_first, quantified) = (true, true, false);
            }
            '(' if next == Some('?') => {
                let named = chars.get(i + 2) == Some(&'<') && !matches!(chars.get(i + 3), Some('=' | '!'));
                if chars.get(i + 2) != Some(&':') && !named {
                    return not_ecma(
                        "`(?` followed by an inline flag or a group form of its own (`(?i)`, `(?P<name>..)`)",
                        "write the group as `(..)`, `(?:..)` or `(?<name>..)`, and the letters of both cases in a class (`[aA]`)",
                    );
                }
                quantified = false;
            }
            '*' | '+' | '?' => {
                if quantified && c == '?' && !lazy {
                    lazy = true;
                } else if quantified {
                    return not_ecma("a quantifier applied to a quantifier", "group the repeated part: `(?:a+)+`");
                } else {
                    (quantified, lazy) = (true, false);
                }
            }
            '{' if counted => {
                if quantified {
                    return not_ecma("a quantifier applied to a quantifier", "group the repeated part: `(?:a{2}){3}`");
                }
                while i < chars.len() && chars[i] != '}' {
                    i += 1;
                }
                (quantified, lazy) = (true, false);
            }
            _ => quantified = false,
        }
        i += 1;
    }
    None
}
