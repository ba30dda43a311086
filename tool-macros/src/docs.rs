//! Doc comments: `/// text` reaches a macro as `#[doc = " text"]`.

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The text of the `#[doc = "..."]` attributes: one leading space stripped from each line, lines
/// joined with `\n`, leading and trailing blank lines removed. Markdown is kept as written.
pub(crate) fn doc_text(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if let Some(text) = doc_literal(attr) {
            for line in text.split('\n') {
                let line = line.strip_suffix('\r').unwrap_or(line);
                lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
            }
        }
    }
    while lines.first().is_some_and(String::is_empty) {
        lines.remove(0);
    }
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines.join("\n")
}

/// `true` for `#[doc = ...]`.
pub(crate) fn is_doc(attr: &Attribute) -> bool {
    attr.path().is_ident("doc")
}

fn doc_literal(attr: &Attribute) -> Option<String> {
    if !is_doc(attr) {
        return None;
    }
    match &attr.meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    }
}
