//! URI templates of RFC 6570 level 1 (`{var}`, simple string expansion), read the other way:
//! from a URI to the values of its variables.

use std::collections::BTreeMap;

/// Why a URI template was refused by [`ResourceTemplate::new`](super::ResourceTemplate::new).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateError {
    /// A `{` with no `}` after it, or a `}` with no `{` before it, at this byte offset.
    Unbalanced {
        /// The template as given.
        template: String,
        /// The byte offset of the brace.
        at: usize,
    },
    /// An expression that is not a level-1 variable name (`{+path}`, `{a,b}`, `{}`, `{x*}`):
    /// names are ASCII letters, digits and `_`.
    Expression {
        /// The template as given.
        template: String,
        /// The text between the braces.
        expression: String,
    },
    /// Two variables with no literal text between them (`{a}{b}`): the URI could be split in
    /// more than one way.
    Adjacent {
        /// The template as given.
        template: String,
    },
    /// The same variable twice.
    Repeated {
        /// The template as given.
        template: String,
        /// The variable.
        name: String,
    },
    /// A template with no variable: declare a [`Resource`](super::Resource) instead.
    NoVariable {
        /// The template as given.
        template: String,
    },
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unbalanced { template, at } => {
                write!(f, "URI template `{template}` has an unbalanced brace at byte {at}; close every `{{name}}`")
            }
            Self::Expression { template, expression } => write!(
                f,
                "URI template `{template}` has the expression `{{{expression}}}`; only level-1 variables are \
                 served: `{{name}}` with ASCII letters, digits and `_`"
            ),
            Self::Adjacent { template } => write!(
                f,
                "URI template `{template}` has two variables with nothing between them; put literal text (such \
                 as `/`) between variables"
            ),
            Self::Repeated { template, name } => {
                write!(f, "URI template `{template}` names the variable `{name}` twice; name each variable once")
            }
            Self::NoVariable { template } => write!(
                f,
                "URI template `{template}` has no variable; declare it as a resource (`McpServerBuilder::resource`)"
            ),
        }
    }
}

impl std::error::Error for TemplateError {}

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Variable(String),
}

/// A parsed level-1 URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    pieces: Vec<Piece>,
}

impl UriTemplate {
    /// Parses `template` (see [`TemplateError`] for what is refused).
    pub(crate) fn parse(template: &str) -> Result<Self, TemplateError> {
        let mut pieces = Vec::new();
        let mut rest = template;
        let mut offset = 0;
        let unbalanced = |at| TemplateError::Unbalanced { template: template.to_owned(), at };
        while !rest.is_empty() {
            let open = rest.find('{');
            let close = rest.find('}');
            match (open, close) {
                (None, None) => {
                    pieces.push(Piece::Literal(rest.to_owned()));
                    break;
                }
                (None, Some(close)) => return Err(unbalanced(offset + close)),
                (Some(open), Some(close)) if close < open => return Err(unbalanced(offset + close)),
                (Some(open), None) => return Err(unbalanced(offset + open)),
                (Some(open), Some(close)) => {
                    let name = &rest[open + 1..close];
                    if name.contains('{') {
                        return Err(unbalanced(offset + open));
                    }
                    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        return Err(TemplateError::Expression {
                            template: template.to_owned(),
                            expression: name.to_owned(),
                        });
                    }
                    if open > 0 {
                        pieces.push(Piece::Literal(rest[..open].to_owned()));
                    } else if matches!(pieces.last(), Some(Piece::Variable(_))) {
                        return Err(TemplateError::Adjacent { template: template.to_owned() });
                    }
                    if pieces.iter().any(|p| matches!(p, Piece::Variable(v) if v == name)) {
                        return Err(TemplateError::Repeated { template: template.to_owned(), name: name.to_owned() });
                    }
                    pieces.push(Piece::Variable(name.to_owned()));
                    offset += close + 1;
                    rest = &rest[close + 1..];
                }
            }
        }
        if !pieces.iter().any(|p| matches!(p, Piece::Variable(_))) {
            return Err(TemplateError::NoVariable { template: template.to_owned() });
        }
        Ok(Self { pieces })
    }

    /// The variables, in the order the template names them.
    pub(crate) fn variables(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Variable(name) => Some(name.as_str()),
            Piece::Literal(_) => None,
        })
    }

    /// The values of the variables when `uri` is an expansion of the template, percent-decoded;
    /// `None` when it is not. A value is at least one character and holds no `/`, `?` or `#`
    /// (simple string expansion encodes them), so each literal after a variable is found at its
    /// first place; decoded, it holds no `/` or `\` and no control character (NUL included), and
    /// is neither `.` nor `..`, so that a handler may use it as one file or key name (a URI whose
    /// value decodes otherwise expands no template).
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut values = BTreeMap::new();
        let mut rest = uri;
        let mut pieces = self.pieces.iter().peekable();
        while let Some(piece) = pieces.next() {
            match piece {
                Piece::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Piece::Variable(name) => {
                    let end = match pieces.peek() {
                        Some(Piece::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains(['/', '?', '#']) {
                        return None;
                    }
                    let value = percent_decode(value)?;
                    let unsafe_name = value == "." || value == ".." || value.contains(['/', '\\']);
                    if unsafe_name || value.chars().any(char::is_control) {
                        return None;
                    }
                    values.insert(name.clone(), value);
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

/// `text` with its `%XX` escapes decoded; `None` when an escape is broken or the bytes are not
/// UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(template).unwrap().matches(uri).map(|v| v.into_iter().collect())
    }

    #[test]
    fn a_uri_gives_the_value_of_each_variable() {
        assert_eq!(
            values("test://template/{id}/data", "test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(
            values("repo://{owner}/{name}", "repo://ana/notes"),
            Some(vec![("name".into(), "notes".into()), ("owner".into(), "ana".into())])
        );
    }

    #[test]
    fn values_are_percent_decoded() {
        assert_eq!(values("file:///{name}", "file:///a%20b"), Some(vec![("name".into(), "a b".into())]));
        assert_eq!(values("file:///{name}", "file:///a%2"), None);
    }

    #[test]
    fn a_value_that_decodes_to_a_path_or_a_control_character_expands_nothing() {
        for uri in [
            "files://doc/..%2F..%2Fetc%2Fpasswd",
            "files://doc/a%00b",
            "files://doc/..",
            "files://doc/%2E%2E",
            "files://doc/a%5Cb",
            "files://doc/.",
        ] {
            assert_eq!(values("files://doc/{name}", uri), None, "{uri}");
        }
        assert_eq!(values("files://doc/{name}", "files://doc/a.b"), Some(vec![("name".into(), "a.b".into())]));
    }

    #[test]
    fn a_uri_that_is_not_an_expansion_matches_nothing() {
        assert_eq!(values("test://template/{id}/data", "test://template/123/other"), None);
        assert_eq!(values("test://template/{id}/data", "test://template//data"), None);
        assert_eq!(values("test://template/{id}/data", "test://template/1/2/data"), None);
        assert_eq!(values("test://template/{id}", "test://template/1/2"), None);
        assert_eq!(values("test://template/{id}", "other://template/1"), None);
    }

    #[test]
    fn templates_beyond_level_one_are_refused_saying_what_is_served() {
        assert_eq!(
            UriTemplate::parse("file:///{+path}").unwrap_err().to_string(),
            "URI template `file:///{+path}` has the expression `{+path}`; only level-1 variables are served: \
             `{name}` with ASCII letters, digits and `_`"
        );
        assert_eq!(
            UriTemplate::parse("x://{a}{b}").unwrap_err(),
            TemplateError::Adjacent { template: "x://{a}{b}".into() }
        );
        assert_eq!(
            UriTemplate::parse("x://{a}/{a}").unwrap_err(),
            TemplateError::Repeated { template: "x://{a}/{a}".into(), name: "a".into() }
        );
        assert_eq!(
            UriTemplate::parse("x://{a").unwrap_err(),
            TemplateError::Unbalanced { template: "x://{a".into(), at: 4 }
        );
        assert_eq!(
            UriTemplate::parse("x://a}").unwrap_err(),
            TemplateError::Unbalanced { template: "x://a}".into(), at: 5 }
        );
        assert_eq!(UriTemplate::parse("x://a").unwrap_err(), TemplateError::NoVariable { template: "x://a".into() });
    }
}
