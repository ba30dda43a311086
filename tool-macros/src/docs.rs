//! Doc comments: `/// text` reaches a macro as `#[doc = " text"]`; `#[doc = include_str!(..)]`
//! reaches it as an expression the macro cannot read.

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// A function's doc comment, as far as the macro can read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Doc {
    /// Every `#[doc]` is a string literal: the text, normalised by [`doc_text`].
    Text(String),
    /// Some `#[doc]` is an expression (`include_str!(..)`): the pieces in order, literal text
    /// normalised line by line, expressions kept for `concat!`.
    Parts(Vec<DocPart>),
}

/// One piece of a [`Doc::Parts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DocPart {
    /// Normalised literal text.
    Text(String),
    /// An expression such as `include_str!("tool.md")`.
    Expr(Expr),
}

/// Reads the `#[doc]` attributes of a function.
pub(crate) fn doc_of(attrs: &[Attribute]) -> Doc {
    if attrs.iter().filter(|a| is_doc(a)).all(|a| doc_literal(a).is_some()) {
        return Doc::Text(doc_text(attrs));
    }
    let mut parts = Vec::new();
    for attr in attrs.iter().filter(|a| is_doc(a)) {
        match (doc_literal(attr), &attr.meta) {
            (Some(text), _) => parts.push(DocPart::Text(normalise_lines(&text).join("\n"))),
            (None, Meta::NameValue(nv)) => parts.push(DocPart::Expr(nv.value.clone())),
            (None, _) => {}
        }
    }
    Doc::Parts(parts)
}

/// The text of the `#[doc = "..."]` attributes: one leading space stripped from each line, lines
/// joined with `\n`, leading and trailing blank lines removed. Markdown is kept as written.
pub(crate) fn doc_text(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if let Some(text) = doc_literal(attr) {
            lines.extend(normalise_lines(&text));
        }
    }
    trim_blank_lines(lines).join("\n")
}

fn normalise_lines(text: &str) -> Vec<String> {
    text.split('\n')
        .map(|line| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned()
        })
        .collect()
}

fn trim_blank_lines(mut lines: Vec<String>) -> Vec<String> {
    while lines.first().is_some_and(String::is_empty) {
        lines.remove(0);
    }
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
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

/// A rustdoc `# Arguments` section, split out of a description.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ArgumentsSection {
    /// The description without the section.
    pub(crate) description: String,
    /// `(name, text)` for each `* `name` - text` item, in order.
    pub(crate) arguments: Vec<(String, String)>,
}

/// Splits the rustdoc `# Arguments` section (any heading level) out of `doc`.
///
/// The section runs to the next heading of the same or a higher level; a deeper heading inside it
/// ends the item before it. Its items are
/// `` * `name` - text `` (also `-` bullets and `:` separators); indented lines continue the item
/// before them and are joined with a space. The section is removed from the description whether
/// or not its items could be read.
pub(crate) fn split_arguments(doc: &str) -> ArgumentsSection {
    let lines: Vec<&str> = doc.lines().collect();
    let Some((start, level)) = lines.iter().enumerate().find_map(|(i, l)| {
        let level = heading_level(l)?;
        (l[level..].trim().eq_ignore_ascii_case("arguments")).then_some((i, level))
    }) else {
        return ArgumentsSection { description: doc.to_owned(), arguments: Vec::new() };
    };
    let end = lines[start + 1..]
        .iter()
        .position(|l| heading_level(l).is_some_and(|h| h <= level))
        .map_or(lines.len(), |p| start + 1 + p);

    let mut arguments: Vec<(String, String)> = Vec::new();
    let mut open = false;
    for line in &lines[start + 1..end] {
        let trimmed = line.trim_start();
        if heading_level(line).is_some() {
            open = false;
            continue;
        }
        let item = trimmed.strip_prefix("* ").or_else(|| trimmed.strip_prefix("- "));
        if let Some(item) = item.filter(|_| line.len() - trimmed.len() < 2)
            && let Some(rest) = item.strip_prefix('`')
            && let Some((name, text)) = rest.split_once('`')
        {
            let text = text.trim_start();
            let text = text.strip_prefix('-').or_else(|| text.strip_prefix(':')).unwrap_or(text);
            arguments.push((name.to_owned(), text.trim().to_owned()));
            open = true;
            continue;
        }
        if let Some((_, text)) = arguments.last_mut()
            && open
            && !trimmed.is_empty()
        {
            text.push(' ');
            text.push_str(trimmed.trim_end());
        }
    }
    let mut kept: Vec<String> = lines[..start].iter().map(|l| (*l).to_owned()).collect();
    kept = trim_blank_lines(kept);
    let rest = trim_blank_lines(lines[end..].iter().map(|l| (*l).to_owned()).collect());
    if !kept.is_empty() && !rest.is_empty() {
        kept.push(String::new());
    }
    kept.extend(rest);
    ArgumentsSection { description: kept.join("\n"), arguments }
}

/// The level of a markdown ATX heading (`# x` is 1), or `None`.
fn heading_level(line: &str) -> Option<usize> {
    let level = line.bytes().take_while(|&b| b == b'#').count();
    (level > 0 && line[level..].starts_with(' ')).then_some(level)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(doc: &str) -> (String, Vec<(String, String)>) {
        let split = split_arguments(doc);
        (split.description, split.arguments)
    }

    fn items(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(n, t)| ((*n).to_owned(), (*t).to_owned())).collect()
    }

    #[test]
    fn a_doc_without_an_arguments_section_is_kept_whole() {
        assert_eq!(
            section("Read a file.\n\n# Errors\nNone."),
            ("Read a file.\n\n# Errors\nNone.".to_owned(), items(&[]))
        );
    }

    #[test]
    fn the_arguments_section_fills_parameters_and_leaves_the_description() {
        let doc = "Read a file.\n\n# Arguments\n\n* `path` - Where the file is.\n* `limit`: How many\n  lines at most.\n\n# Errors\nWhen missing.";
        assert_eq!(
            section(doc),
            (
                "Read a file.\n\n# Errors\nWhen missing.".to_owned(),
                items(&[("path", "Where the file is."), ("limit", "How many lines at most.")])
            )
        );
    }

    #[test]
    fn a_section_at_the_end_is_removed_with_the_blank_lines_before_it() {
        assert_eq!(section("Sum.\n\n## Arguments\n- `a` - First.\n"), ("Sum.".to_owned(), items(&[("a", "First.")])));
    }

    #[test]
    fn a_deeper_heading_stays_inside_the_section_and_ends_the_item() {
        assert_eq!(
            section("Sum.\n# Arguments\n* `a` - First.\n## Note\ntext\n# Returns\nThe sum."),
            ("Sum.\n\n# Returns\nThe sum.".to_owned(), items(&[("a", "First.")]))
        );
    }

    #[test]
    fn literal_docs_are_normalised_and_trimmed() {
        let attrs: Vec<Attribute> = vec![
            syn::parse_quote!(#[doc = ""]),
            syn::parse_quote!(#[doc = " Adds."]),
            syn::parse_quote!(#[doc = ""]),
            syn::parse_quote!(#[doc = "  Indented **markdown**.  "]),
        ];
        assert_eq!(doc_of(&attrs), Doc::Text("Adds.\n\n Indented **markdown**.".to_owned()));
    }

    #[test]
    fn an_include_str_doc_is_kept_as_an_expression() {
        let attrs: Vec<Attribute> =
            vec![syn::parse_quote!(#[doc = " Intro."]), syn::parse_quote!(#[doc = include_str!("x.md")])];
        assert_eq!(
            doc_of(&attrs),
            Doc::Parts(vec![
                DocPart::Text("Intro.".to_owned()),
                DocPart::Expr(syn::parse_quote!(include_str!("x.md")))
            ])
        );
    }
}
