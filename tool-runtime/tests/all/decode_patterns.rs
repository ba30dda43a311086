//! A `pattern` of an `#[input]` type (schemars' `#[schemars(regex(pattern = ..))]`) is held to the
//! rule `#[arg(pattern)]` is held to at compile time: the part of ECMA-262's syntax that the
//! decoder's engine reads alike. One outside it fails the registry's build, so no schema says a
//! bound that decoding does not enforce.

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;
use tool_runtime::{RegistryError, UnsupportedPattern};

#[derive(Deserialize, JsonSchema)]
struct Name {
    /// A name in any script.
    #[schemars(regex(pattern = r"^\p{L}+$"))]
    name: String,
}

/// Looks a name up.
#[tool]
fn lookup(#[input] query: Name) -> String {
    query.name
}

#[derive(Deserialize, JsonSchema)]
struct Word {
    /// The word.
    #[schemars(regex(pattern = r"(?i)^[a-z]+$"))]
    word: String,
}

#[derive(Deserialize, JsonSchema)]
struct Words {
    /// The first word.
    first: Word,
    /// A code.
    #[schemars(regex(pattern = r"^[[:alpha:]]{3}$"))]
    code: String,
}

/// Spells words.
#[tool]
fn spell(#[input] words: Words) -> String {
    format!("{} {}", words.first.word, words.code)
}

#[derive(Deserialize, JsonSchema)]
struct Code {
    /// A code: a year then a lowercase word.
    #[schemars(regex(pattern = r"^(?<year>\d{4})-[a-z]+(?:-[a-z]+)*$"))]
    code: String,
}

/// Checks a code.
#[tool]
fn check(#[input] code: Code) -> String {
    code.code
}

#[test]
fn patterns_outside_the_shared_syntax_fail_the_build_each_named_with_its_tool_and_pointer() {
    let error = Registry::builder().tool(spell::TOOL).tool(check::TOOL).tool(lookup::TOOL).build().unwrap_err();
    let pattern = |tool: &str, path: &str, pattern: &str, problem: &str| UnsupportedPattern {
        tool: tool.to_owned(),
        path: path.to_owned(),
        pattern: pattern.to_owned(),
        problem: problem.to_owned(),
    };
    let flag = "uses `(?` followed by an inline flag or a group form of its own (`(?i)`, `(?P<name>..)`), which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; write the group as `(..)`, `(?:..)` or `(?<name>..)`, and the letters of both cases in a class (`[aA]`)";
    let posix = "uses a `[` inside a character class (a POSIX class such as `[[:alpha:]]`, or a nested class), which ECMA-262 (the syntax of JSON Schema's `pattern`) reads otherwise; list the characters or ranges (`[a-zA-Z]`), or escape the bracket as `\\[`";
    let unicode = "is not a valid regular expression: Unicode character classes are not supported; list the characters in a class instead: `[A-Za-z]` for ASCII letters, ranges such as `[A-Za-z\\u00C0-\\u024F]` for more, or remove `pattern` and check the value in the tool's body (`char::is_alphabetic`)";
    let expected = vec![
        pattern("lookup", "/properties/name/pattern", r"^\p{L}+$", unicode),
        pattern("spell", "/properties/code/pattern", r"^[[:alpha:]]{3}$", posix),
        pattern("spell", "/properties/first/properties/word/pattern", r"(?i)^[a-z]+$", flag),
    ];
    assert_eq!(error, RegistryError::UnsupportedPatterns { patterns: expected });
    assert_eq!(
        error.to_string(),
        format!(
            "schemas state patterns decoding cannot enforce as JSON Schema reads them: tool `lookup`, `/properties/name/pattern`: `^\\p{{L}}+$` {unicode}; tool `spell`, `/properties/code/pattern`: `^[[:alpha:]]{{3}}$` {posix}; tool `spell`, `/properties/first/properties/word/pattern`: `(?i)^[a-z]+$` {flag}"
        )
    );
}

#[tokio::test]
async fn a_pattern_inside_the_shared_syntax_builds_and_is_enforced() {
    let registry = Registry::builder().tool(check::TOOL).build().unwrap();
    let call = |arguments: &'static str| {
        let registry = &registry;
        async move { registry.call(&ToolCall::new("c1", "check", arguments), &ToolContext::new()).await }
    };
    let taken = call(r#"{"code":"2026-tool-search"}"#).await;
    assert_eq!((taken.is_error, &*taken.text()), (false, "2026-tool-search"));
    let refused = call(r#"{"code":"26-Tool"}"#).await;
    assert_eq!(
        (refused.is_error, &*refused.text()),
        (
            true,
            r#"invalid arguments for `check`: `code`: must match the pattern `^(?<year>\d{4})-[a-z]+(?:-[a-z]+)*$`; got "26-Tool""#
        )
    );
}
