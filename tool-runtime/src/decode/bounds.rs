//! The bounds a schema states on a value (`minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `minLength`, `maxLength`, `pattern`, `minItems`, `maxItems`), as decoding
//! enforces them: whatever states a bound (`#[arg(range(..))]`, `#[schemars(length(..))]`, a
//! hand-written schema) states it in the schema, and decoding refuses a value outside it.
//!
//! Lengths of strings count Unicode code points, as JSON Schema (2020-12, section 6.3.1) does.
//! Numbers are compared as `f64` (exact for every integer up to 2^53). A `pattern` is searched
//! unanchored, as JSON Schema reads it, with the `regex-lite` engine; the patterns of `#[tool]`
//! schemas are held to the part of ECMA-262's syntax that both read alike (the `tool-pattern` crate, at
//! compile time for `#[arg(pattern)]`, at registry build for `#[input]` types), so what decoding
//! enforces is what the schema says. Hand-written schemas decoded here (a `Canonical` made
//! elsewhere) are not checked: a pattern of theirs that does not compile bounds nothing.

use serde_json::Value;

use crate::schema::BOUND_KEYWORDS;

/// The bounds of one schema node.
#[derive(Debug, Default)]
pub(crate) struct Bounds {
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<regex_lite::Regex>,
    min_items: Option<u64>,
    max_items: Option<u64>,
}

impl Bounds {
    /// The bounds `node` states; `None` when it states none (the common case, kept cheap).
    pub(crate) fn of(node: &Value) -> Option<Self> {
        let map = node.as_object()?;
        if !BOUND_KEYWORDS.iter().any(|k| map.contains_key(*k)) {
            return None;
        }
        let number = |key: &str| map.get(key).and_then(Value::as_f64);
        let count = |key: &str| map.get(key).and_then(Value::as_u64);
        Some(Self {
            minimum: number("minimum"),
            maximum: number("maximum"),
            exclusive_minimum: number("exclusiveMinimum"),
            exclusive_maximum: number("exclusiveMaximum"),
            min_length: count("minLength"),
            max_length: count("maxLength"),
            pattern: map.get("pattern").and_then(Value::as_str).and_then(|p| regex_lite::Regex::new(p).ok()),
            min_items: count("minItems"),
            max_items: count("maxItems"),
        })
    }

    /// What is wrong with `value` against these bounds (`must be at most 1000; got 5000`), or
    /// `None` when it fits. A value of a kind a bound does not apply to fits it (its type is
    /// checked by decoding).
    pub(crate) fn check(&self, value: &Value) -> Option<String> {
        match value {
            Value::Number(n) => self.number(n.as_f64()?, n),
            Value::String(text) => self.string(text),
            Value::Array(items) => self.items(items.len()),
            _ => None,
        }
    }

    /// [`check`](Self::check) for a number; `shown` is how the value is written in the message.
    pub(crate) fn number(&self, n: f64, shown: &dyn std::fmt::Display) -> Option<String> {
        let show = number_text;
        if let Some(min) = self.minimum
            && n < min
        {
            return Some(format!("must be at least {}; got {shown}", show(min)));
        }
        if let Some(max) = self.maximum
            && n > max
        {
            return Some(format!("must be at most {}; got {shown}", show(max)));
        }
        if let Some(min) = self.exclusive_minimum
            && n <= min
        {
            return Some(format!("must be greater than {}; got {shown}", show(min)));
        }
        if let Some(max) = self.exclusive_maximum
            && n >= max
        {
            return Some(format!("must be less than {}; got {shown}", show(max)));
        }
        None
    }

    /// [`check`](Self::check) for a string.
    pub(crate) fn string(&self, text: &str) -> Option<String> {
        if self.min_length.is_some() || self.max_length.is_some() {
            let length = text.chars().count() as u64;
            if let Some(min) = self.min_length
                && length < min
            {
                return Some(format!("must be at least {min} {}; got {length}", characters(min)));
            }
            if let Some(max) = self.max_length
                && length > max
            {
                return Some(format!("must be at most {max} {}; got {length}", characters(max)));
            }
        }
        if let Some(pattern) = &self.pattern
            && !pattern.is_match(text)
        {
            return Some(format!("must match the pattern `{}`; got {}", pattern.as_str(), Value::from(text)));
        }
        None
    }

    /// [`check`](Self::check) for an array of `count` items.
    pub(crate) fn items(&self, count: usize) -> Option<String> {
        let count = count as u64;
        let noun = |n: u64| if n == 1 { "item" } else { "items" };
        if let Some(min) = self.min_items
            && count < min
        {
            return Some(format!("must hold at least {min} {}; got {count}", noun(min)));
        }
        if let Some(max) = self.max_items
            && count > max
        {
            return Some(format!("must hold at most {max} {}; got {count}", noun(max)));
        }
        None
    }
}

fn characters(n: u64) -> &'static str {
    if n == 1 { "character" } else { "characters" }
}

/// A bound as the schema writes it: `1000`, `0.5`.
fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        // An integral bound below 2^53 converts exactly.
        #[allow(clippy::cast_possible_truncation)]
        let integral = n as i64;
        integral.to_string()
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::schema::patterns;

    use super::*;

    fn check(schema: Value, value: Value) -> Option<String> {
        Bounds::of(&schema).and_then(|b| b.check(&value))
    }

    #[test]
    fn a_node_without_bounds_has_none() {
        assert!(Bounds::of(&json!({"type": "integer"})).is_none());
    }

    #[test]
    fn numbers_outside_an_inclusive_range_name_the_bound_and_the_value() {
        let schema = json!({"minimum": 1, "maximum": 1000});
        assert_eq!(check(schema.clone(), json!(0)), Some("must be at least 1; got 0".to_owned()));
        assert_eq!(check(schema.clone(), json!(1001)), Some("must be at most 1000; got 1001".to_owned()));
        assert_eq!(check(schema.clone(), json!(1)), None);
        assert_eq!(check(schema, json!(1000)), None);
    }

    #[test]
    fn exclusive_bounds_refuse_the_bound_itself() {
        let schema = json!({"exclusiveMinimum": 0.5, "exclusiveMaximum": 2});
        assert_eq!(check(schema.clone(), json!(0.5)), Some("must be greater than 0.5; got 0.5".to_owned()));
        assert_eq!(check(schema, json!(2)), Some("must be less than 2; got 2".to_owned()));
    }

    #[test]
    fn string_lengths_count_code_points() {
        let schema = json!({"minLength": 2, "maxLength": 3});
        assert_eq!(check(schema.clone(), json!("é")), Some("must be at least 2 characters; got 1".to_owned()));
        assert_eq!(check(schema.clone(), json!("ééé")), None);
        assert_eq!(check(schema, json!("abcd")), Some("must be at most 3 characters; got 4".to_owned()));
    }

    #[test]
    fn a_pattern_is_searched_unanchored() {
        let schema = json!({"pattern": "[0-9]+"});
        assert_eq!(check(schema.clone(), json!("ab12")), None);
        assert_eq!(check(schema, json!("ab")), Some("must match the pattern `[0-9]+`; got \"ab\"".to_owned()));
    }

    #[test]
    fn array_sizes_count_items() {
        let schema = json!({"minItems": 1, "maxItems": 2});
        assert_eq!(check(schema.clone(), json!([])), Some("must hold at least 1 item; got 0".to_owned()));
        assert_eq!(check(schema, json!([1, 2, 3])), Some("must hold at most 2 items; got 3".to_owned()));
    }

    #[test]
    fn a_bound_does_not_apply_to_another_kind_of_value() {
        assert_eq!(check(json!({"maximum": 3, "maxLength": 1}), json!(true)), None);
        assert_eq!(check(json!({"maximum": 3}), json!("12345")), None);
    }

    #[test]
    fn patterns_are_found_at_every_depth_with_their_pointer_and_names_are_not_keywords() {
        let schema = json!({
            "properties": {
                "pattern": {"type": "string", "pattern": "^a$"},
                "a/b": {"items": {"pattern": "^b$"}},
                "c": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/C"}]},
                "d": {"type": "string", "default": {"pattern": "not a keyword"}, "enum": [{"pattern": "no"}]}
            },
            "$defs": {"C": {"properties": {"e": {"pattern": "^e$"}}}}
        });
        let mut found = Vec::new();
        patterns(&schema, "", &mut found);
        found.sort();
        assert_eq!(
            found,
            [
                ("/$defs/C/properties/e/pattern".to_owned(), "^e$"),
                ("/properties/a~1b/items/pattern".to_owned(), "^b$"),
                ("/properties/pattern/pattern".to_owned(), "^a$"),
            ]
        );
    }

    /// The rule of the `tool-pattern` crate: each pattern with what it says of it.
    #[test]
    fn patterns_are_held_to_what_ecma_262_and_regex_lite_read_alike() {
        use tool_pattern::pattern_problem;
        let fine = [
            r"^[a-z]+$",
            r"\d{4}-\d{2}",
            r"(?:ab)+",
            r"(?<year>\d{4})",
            r"a*?b+?c??d{2,}?",
            r"(a+)+",
            r"[^\]a-z]",
            r"[\[]",
            r"\bword\b",
            r"\x41\u0041",
            r"^[a-z0-9_-]+$",
            r"^\S+@\S+$",
            r"^https?://",
            r"[\w.-]+",
            r"^(foo|bar)$",
            r"\.rs$",
            r"\{\}\[\]\/",
            r"[\]\-]",
            r"a|",
            r"^$",
            // The forms the refusals below suggest.
            r"[A-Za-z\u00C0-\u024F]",
            r"^(?:aa|bb)$",
            r"[a-z-]",
            r"(?:ab){2}",
            r"[a-zA-Z0-9]",
            r"a{2,5}",
        ];
        for pattern in fine {
            assert_eq!(pattern_problem(pattern), None, "{pattern}");
        }
        let flag = "uses `(?` followed by an inline flag or a group form of its own (`(?i)`, `(?P<name>..)`), which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; write the group as `(..)`, `(?:..)` or `(?<name>..)`, and the letters of both cases in a class (`[aA]`)";
        let posix = "uses a `[` inside a character class (a POSIX class such as `[[:alpha:]]`, or a nested class), which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; list the characters or ranges (`[a-zA-Z]`), or escape the bracket as `\\[`";
        let twice = "uses a quantifier applied to a quantifier, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; group the repeated part: `(?:a+)+`";
        let refused = [
            (r"(?i)^[a-z]+$", flag.to_owned()),
            (r"(?P<n>a)", flag.to_owned()),
            (r"(?s:.)", flag.to_owned()),
            (r"^[[:alpha:]]+$", posix.to_owned()),
            (r"[^[:digit:]]", posix.to_owned()),
            (r"a++", twice.to_owned()),
            (r"a*?+", twice.to_owned()),
            (r"\d{2}+", twice.to_owned()),
            (r"a{2}{3}", twice.to_owned()),
            (r"[]a]", "uses a `]` first in a character class, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; escape it as `\\]`".to_owned()),
            (r"[^]a]", "uses a `]` first in a character class, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; escape it as `\\]`".to_owned()),
            (r"\Aab\z", "uses `\\A`, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; anchor with `^` and `$`".to_owned()),
            (r"ab\z", "uses `\\z`, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; anchor with `^` and `$`".to_owned()),
            (r"\<a", "uses `\\<`, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; write the word boundary as `\\b`".to_owned()),
            (r"\b{start}a", "uses `\\b{..}`, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; write the word boundary as `\\b`".to_owned()),
            (r"\x{41}", "uses `\\x{..}`, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; write the character as `\\xHH` or `\\uHHHH`".to_owned()),
            (r"\u{41}", "uses `\\u{..}`, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; write the character as `\\xHH` or `\\uHHHH`".to_owned()),
            (r"\a", "uses `\\a`, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; write the bell character as `\\x07`".to_owned()),
            (r"\U00000041", "uses `\\U`, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; write the character itself".to_owned()),
            (r"a{ 2}", "uses spaces inside a counted repetition (`a{ 2}`), which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; write it without them: `a{2}`".to_owned()),
            (r"^*", "uses a quantifier on an anchor or a word boundary, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; remove the quantifier".to_owned()),
            (r"\b?", "uses a quantifier on an anchor or a word boundary, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; remove the quantifier".to_owned()),
            (r"(?<a.b>x)", "uses a group name that is not an identifier (`a.b`), which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; name the group with letters, digits and `_` (`(?<year>..)`)".to_owned()),
            (r"a]", "uses a `]` that closes nothing, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; escape it as `\\]`".to_owned()),
            (r"a}", "uses a `}` that closes nothing, which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; escape it as `\\}`".to_owned()),
            (r"^\d{3}\-\d{4}$", "uses `\\-`, an escape of a character that needs none, which ECMA-262 in Unicode mode (the syntax of JSON Schema's `pattern`) refuses; write `-` alone".to_owned()),
            (r"\#", "uses `\\#`, an escape of a character that needs none, which ECMA-262 in Unicode mode (the syntax of JSON Schema's `pattern`) refuses; write `#` alone".to_owned()),
            (r"^\p{L}+$", "is not a valid regular expression: Unicode character classes are not supported; list the characters in a class instead: `[A-Za-z]` for ASCII letters, ranges such as `[A-Za-z\\u00C0-\\u024F]` for more, or remove `pattern` and check the value in the tool's body (`char::is_alphabetic`)".to_owned()),
            (r"(?=a)", "is not a valid regular expression: look-around is not supported; match the text itself instead of looking ahead or behind (`^foo` rather than `^(?=foo)`), or remove `pattern` and check the value in the tool's body (where a value that must not contain something, what `(?!..)` would say, is refused)".to_owned()),
            (r"(a)\1", "is not a valid regular expression: backreferences are not supported; a pattern cannot ask for a repeat of what a group matched: list the repeats as alternatives (`^(?:aa|bb)$`), or remove `pattern` and check the value in the tool's body".to_owned()),
            (r"[a-z", "is not a valid regular expression: found unclosed character class; close the character class with `]`, or escape a literal bracket as `\\[`".to_owned()),
            (r"(ab", "is not a valid regular expression: found open group without closing ')'; close every group `(` with a `)`, or escape a literal parenthesis as `\\(` or `\\)`".to_owned()),
            (r"[z-a]", "is not a valid regular expression: invalid range in character class; write a range low to high between two characters (`[a-z]`), or put a literal `-` last in the class (`[a-z-]`)".to_owned()),
            (r"*a", "is not a valid regular expression: uncounted repetition operator must be applied to a sub-expression; put the quantifier after what it repeats (`a+`, `(?:ab){2}`), or escape a literal `*`, `+`, `?` or `{` with `\\`".to_owned()),
            (r"a{5,2}", "is not a valid regular expression: found counted repetition with a min bigger than its max; write the smaller count first: `{2,5}`".to_owned()),
            (r"\q", "is not a valid regular expression: unrecognized escape sequence; use an escape ECMA-262 reads too (`\\d \\w \\s \\b \\n \\t \\xHH \\uHHHH`, or a backslash before punctuation such as `\\.`), and write a literal backslash as `\\\\`".to_owned()),
            (r"(?<a>x)(?<a>y)", "is not a valid regular expression: duplicate capture group name; name each group once, with letters, digits and `_` (`(?<year>..)`), or leave it unnamed: `(?:..)`".to_owned()),
        ];
        for (pattern, problem) in refused {
            assert_eq!(pattern_problem(pattern), Some(problem), "{pattern}");
        }
    }
}
