//! Which regular expressions a schema's `pattern` may be: those that `regex-lite` (the engine
//! decoding enforces patterns with) and ECMA-262 (the dialect JSON Schema's `pattern` is written
//! in, so the one a model and a validator read it in) read alike.
//!
//! The one source of this rule, a crate of its own so that both sides hold patterns to it:
//! `tool-macros` checks `#[arg(pattern)]` at compile time, and `tool-runtime` checks at
//! `RegistryBuilder::build` the patterns of `#[input]` types and `#[schemars(regex(..))]`
//! attributes. Not meant to be used directly.

/// Why `pattern` cannot be enforced as JSON Schema reads it, as a lowercase phrase that says
/// what to write instead (`` uses `(?i)` ... ``); `None` when it can. ECMA-262 is read with the
/// `u` flag (Unicode mode), as JSON Schema 2020-12 (section 6.4) asks of `pattern`. Refused:
/// - what `regex-lite` does not compile (`\p{..}` classes, look-around, backreferences, ...),
///   with its reason and what to write instead (an explicit class, a form without the
///   construct, or checking the value in the tool's body);
/// - what it compiles and ECMA-262 reads otherwise or refuses: inline flags and groups other
///   than `(?:..)` and `(?<name>..)` (`(?i)`, `(?P<name>..)`), a group name that is not an
///   identifier, the escapes `\A`, `\z`, `\<`, `\>`, `\a`, `\U..`, `\b{..}`, `\x{..}`, `\u{..}`
///   and any other letter escape but `\d \D \w \W \s \S \b \B \n \r \t \f \v \xHH \uHHHH`, an
///   escaped character that needs no escape (`\#`, `\_`, `\-` outside a class), a `[` inside a
///   character class (POSIX classes `[[:alpha:]]`, nested classes), a `]` first in a class
///   (`[]a]`), a `]` or `}` that closes nothing, spaces inside a counted repetition (`a{ 2}`), a
///   quantifier on a quantifier (`a++`, `a{2}{3}`; a lazy `a*?` is fine) or on an anchor or word
///   boundary (`^*`, `\b?`).
///
/// What stays different, and is documented where patterns are described: `\d`, `\w`, `\s` and
/// `\b` are ASCII (ECMA-262's `\s` also matches Unicode spaces), and `.` matches `\r`, U+2028
/// and U+2029 (ECMA-262's does not).
pub fn pattern_problem(pattern: &str) -> Option<String> {
    if let Err(error) = regex_lite::Regex::new(pattern) {
        let text = error.to_string();
        let reason = text.lines().rfind(|l| !l.trim().is_empty()).unwrap_or_default().trim();
        return Some(format!("is not a valid regular expression: {reason}; {}", instead_of_invalid(reason)));
    }
    let chars: Vec<char> = pattern.chars().collect();
    let not_ecma = |what: &str, instead: &str| {
        Some(format!("uses {what}, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; {instead}"))
    };
    // What the last token was, for the quantifier that may follow it.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Last {
        /// A character, a class, a group: a quantifier may follow.
        Atom,
        /// `^`, `$`, `\b`, `\B`: nothing may repeat them.
        Assertion,
        /// A quantifier, and whether it already took its lazy `?`.
        Quantifier { lazy: bool },
        /// The start, `(` or `|`.
        Start,
    }
    let mut last = Last::Start;
    let mut i = 0;
    // Inside `[..]`, and whether the next character is the class's first (after `[` or `[^`).
    let (mut in_class, mut class_first) = (false, false);
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\\' {
            let after = chars.get(i + 2).copied();
            let escaped = next.unwrap_or_default();
            let shown = format!("`\\{escaped}`");
            match escaped {
                'A' | 'z' => return not_ecma(&shown, "anchor with `^` and `$`"),
                '<' | '>' => return not_ecma(&shown, "write the word boundary as `\\b`"),
                'b' if after == Some('{') && !in_class => {
                    return not_ecma("`\\b{..}`", "write the word boundary as `\\b`");
                }
                'x' | 'u' if after == Some('{') => {
                    return not_ecma(&format!("`\\{escaped}{{..}}`"), "write the character as `\\xHH` or `\\uHHHH`");
                }
                'd' | 'D' | 'w' | 'W' | 's' | 'S' | 'n' | 'r' | 't' | 'f' | 'v' | 'x' | 'u' => last = Last::Atom,
                'b' | 'B' => last = if in_class { Last::Atom } else { Last::Assertion },
                'a' => return not_ecma(&shown, "write the bell character as `\\x07`"),
                e if e.is_ascii_alphanumeric() => return not_ecma(&shown, "write the character itself"),
                '^' | '$' | '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '/' => {
                    last = Last::Atom;
                }
                '-' if in_class => last = Last::Atom,
                e => {
                    return Some(format!(
                        "uses {shown}, an escape of a character that needs none, which ECMA-262 in Unicode mode (the syntax of JSON Schema's `pattern`) refuses; write `{e}` alone"
                    ));
                }
            }
            i += 2;
            class_first = false;
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
        let quantifier = |last: Last| match last {
            Last::Assertion => not_ecma("a quantifier on an anchor or a word boundary", "remove the quantifier"),
            Last::Quantifier { .. } => {
                not_ecma("a quantifier applied to a quantifier", "group the repeated part: `(?:a+)+`")
            }
            Last::Atom | Last::Start => None,
        };
        match c {
            '[' => {
                // A negated class's first character comes after its `^`.
                if next == Some('^') {
                    i += 1;
                }
                (in_class, class_first, last) = (true, true, Last::Atom);
            }
            '(' => {
                if next == Some('?') {
                    let named = chars.get(i + 2) == Some(&'<') && !matches!(chars.get(i + 3), Some('=' | '!'));
                    if chars.get(i + 2) != Some(&':') && !named {
                        return not_ecma(
                            "`(?` followed by an inline flag or a group form of its own (`(?i)`, `(?P<name>..)`)",
                            "write the group as `(..)`, `(?:..)` or `(?<name>..)`, and the letters of both cases in a class (`[aA]`)",
                        );
                    }
                    if named {
                        let name: String = chars[i + 3..].iter().take_while(|c| **c != '>').collect();
                        let identifier = name.chars().enumerate().all(|(n, c)| {
                            c == '_' || c == '$' || c.is_ascii_alphabetic() || (n > 0 && c.is_ascii_digit())
                        });
                        if !identifier {
                            return not_ecma(
                                &format!("a group name that is not an identifier (`{name}`)"),
                                "name the group with letters, digits and `_` (`(?<year>..)`)",
                            );
                        }
                    }
                }
                last = Last::Start;
            }
            '|' => last = Last::Start,
            '^' | '$' => last = Last::Assertion,
            '*' | '+' | '?' => match last {
                Last::Quantifier { lazy: false } if c == '?' => last = Last::Quantifier { lazy: true },
                _ => {
                    if let Some(problem) = quantifier(last) {
                        return Some(problem);
                    }
                    last = Last::Quantifier { lazy: false };
                }
            },
            '{' => {
                let inside: String = chars[i + 1..].iter().take_while(|c| **c != '}').collect();
                if inside.contains(char::is_whitespace) {
                    return not_ecma("spaces inside a counted repetition (`a{ 2}`)", "write it without them: `a{2}`");
                }
                if let Some(problem) = quantifier(last) {
                    return Some(problem);
                }
                i += inside.chars().count() + 1;
                last = Last::Quantifier { lazy: false };
            }
            ']' | '}' => {
                return not_ecma(&format!("a `{c}` that closes nothing"), &format!("escape it as `\\{c}`"));
            }
            _ => last = Last::Atom,
        }
        i += 1;
    }
    None
}

/// What to write instead of a pattern `regex-lite` does not compile, by its reason (the messages of
/// `regex-lite` 0.1; a reason not listed gets the general advice). What `regex-lite` cannot read is
/// also outside the syntax both engines share, so the advice is a form of that syntax, or to check
/// the value in the tool's body instead of with `pattern`.
fn instead_of_invalid(reason: &str) -> &'static str {
    match reason {
        "Unicode character classes are not supported" => {
            "list the characters in a class instead: `[A-Za-z]` for ASCII letters, ranges such as `[A-Za-z\\u00C0-\\u024F]` for more, or remove `pattern` and check the value in the tool's body (`char::is_alphabetic`)"
        }
        "look-around is not supported" => {
            "match the text itself instead of looking ahead or behind (`^foo` rather than `^(?=foo)`), or remove `pattern` and check the value in the tool's body (where a value that must not contain something, what `(?!..)` would say, is refused)"
        }
        "backreferences are not supported" => {
            "a pattern cannot ask for a repeat of what a group matched: list the repeats as alternatives (`^(?:aa|bb)$`), or remove `pattern` and check the value in the tool's body"
        }
        "unrecognized POSIX character class"
        | "nested character classes are not supported"
        | "character class intersection is not supported"
        | "character class difference is not supported"
        | "character class symmetric difference is not supported" => {
            "list the characters or ranges in one class (`[a-zA-Z0-9]`), or escape a literal bracket as `\\[`"
        }
        "non-empty character class has no closing bracket"
        | "non-empty character class has no closing bracket after dash"
        | "negated character class has no closing bracket"
        | "character class begins with literal ']' but has no closing bracket"
        | "found unclosed character class" => {
            "close the character class with `]`, or escape a literal bracket as `\\[`"
        }
        "invalid range in character class" | "character class ranges must start and end with a single character" => {
            "write a range low to high between two characters (`[a-z]`), or put a literal `-` last in the class (`[a-z-]`)"
        }
        "invalid escape sequence in character class" | "unrecognized escape sequence" => {
            "use an escape ECMA-262 reads too (`\\d \\w \\s \\b \\n \\t \\xHH \\uHHHH`, or a backslash before punctuation such as `\\.`), and write a literal backslash as `\\\\`"
        }
        "found open group without closing ')'"
        | "expected closing ')', but got end of pattern"
        | "found closing ')' without matching '('" => {
            "close every group `(` with a `)`, or escape a literal parenthesis as `\\(` or `\\)`"
        }
        "empty flag directive '(?)' is not allowed"
        | "unrecognized inline flag"
        | "inline flag negation cannot be repeated"
        | "duplicate inline flag is not allowed"
        | "expected ':' or ')' to end inline flags, but got end of pattern"
        | "inline flags cannot end with negation directive" => {
            "write the group as `(..)`, `(?:..)` or `(?<name>..)`, and the letters of both cases in a class (`[aA]`)"
        }
        "expected capture group name, but got end of pattern"
        | "invalid group name"
        | "expected end of capture group name, but got end of pattern"
        | "empty capture group names are not allowed"
        | "duplicate capture group name" => {
            "name each group once, with letters, digits and `_` (`(?<year>..)`), or leave it unnamed: `(?:..)`"
        }
        "uncounted repetition operator must be applied to a sub-expression"
        | "counted repetition operator must be applied to a sub-expression" => {
            "put the quantifier after what it repeats (`a+`, `(?:ab){2}`), or escape a literal `*`, `+`, `?` or `{` with `\\`"
        }
        "found unclosed counted repetition operator"
        | "found incomplete and unclosed counted repetition operator"
        | "found counted repetition operator with a comma that is unclosed"
        | "found counted repetition with min and max that is unclosed"
        | "expected closing brace for counted repetition, but got something else"
        | "expected decimal number, but found no digits"
        | "got invalid decimal number"
        | "found start of special word boundary or repetition without an end" => {
            "write a counted repetition as `{N}`, `{N,}` or `{N,M}`, or escape a literal brace as `\\{`"
        }
        "found counted repetition with a min bigger than its max" => "write the smaller count first: `{2,5}`",
        "saw start of escape sequence, but saw end of pattern before it finished" => {
            "finish the escape, or write a literal backslash as `\\\\`"
        }
        "pattern has too much nesting" | "too many capture groups" => {
            "make the pattern flatter (fewer nested groups, `(?:..)` where nothing needs capturing), or remove `pattern` and check the value in the tool's body"
        }
        reason if reason.contains("hexadecimal") => "write the character as `\\xHH` or `\\uHHHH`",
        reason if reason.contains("word boundary") => "write the word boundary as `\\b`",
        _ => {
            "write it in the syntax `pattern` takes (classes, anchors, groups `(..)`, `(?:..)`, `(?<name>..)`, repetition), or remove `pattern` and check the value in the tool's body"
        }
    }
}
