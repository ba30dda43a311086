//! HTML: parsing, removing what is not content, and the three output forms.

use std::rc::Rc;

use htmd::{HtmlToMarkdown, Node};
use markup5ever_rcdom::{NodeData, SerializableHandle};

/// Elements whose content is never page text.
const REMOVED: [&str; 4] = ["script", "style", "noscript", "template"];

/// Elements that start a new line in the text form.
const BLOCKS: [&str; 32] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "td",
    "tr",
    "ul",
];

/// A parsed HTML document with scripts, styles, `noscript`, templates and comments removed.
pub(crate) struct Document {
    root: Rc<Node>,
}

impl Document {
    /// Parses `html` (never fails: HTML parsing recovers from any input) and removes the
    /// non-content nodes.
    pub(crate) fn parse(html: &str) -> Self {
        let converter = HtmlToMarkdown::new();
        let root = converter.html_to_tree(html).unwrap_or_else(|_| Node::new(NodeData::Document));
        strip(&root);
        Self { root }
    }

    /// A document made of the subtree at `node` (already cleaned).
    pub(crate) fn from_node(node: &Rc<Node>) -> Self {
        Self { root: node.clone() }
    }

    /// The text of the first `<title>`, whitespace collapsed; `None` when absent or empty.
    pub(crate) fn title(&self) -> Option<String> {
        let title = find_all(&self.root, &|n| tag(n) == Some("title")).into_iter().next()?;
        let text = collapse(&text_of(&title));
        (!text.is_empty()).then_some(text)
    }

    /// The page as Markdown (`htmd`), without the `<head>`.
    pub(crate) fn markdown(&self) -> String {
        HtmlToMarkdown::builder().skip_tags(vec!["head"]).build().tree_to_markdown(&self.root)
    }

    /// The page as HTML, serialised from the cleaned tree.
    pub(crate) fn html(&self) -> String {
        let mut out = Vec::new();
        let handle = SerializableHandle::from(self.root.clone());
        match html5ever::serialize(&mut out, &handle, html5ever::serialize::SerializeOpts::default()) {
            Ok(()) => String::from_utf8_lossy(&out).into_owned(),
            Err(_) => String::new(),
        }
    }

    /// The visible text of the `<body>`: whitespace collapsed, one line per block element, no
    /// empty lines in a row, `<pre>` kept as is.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        write_text(&self.root, &mut out, false);
        let mut lines: Vec<&str> = Vec::new();
        for line in out.lines().map(str::trim_end) {
            if line.trim().is_empty() && lines.last().is_none_or(|l| l.trim().is_empty()) {
                continue;
            }
            lines.push(line);
        }
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        lines.join("\n")
    }

    /// Every element matching `matches`, in document order.
    pub(crate) fn select(&self, matches: &dyn Fn(&Rc<Node>) -> bool) -> Vec<Rc<Node>> {
        find_all(&self.root, matches)
    }
}

/// The element's tag name (lowercase for HTML), `None` for other nodes.
pub(crate) fn tag(node: &Node) -> Option<&str> {
    match &node.data {
        NodeData::Element { name, .. } => Some(&name.local),
        _ => None,
    }
}

/// The value of the element's attribute `name`.
pub(crate) fn attr(node: &Node, name: &str) -> Option<String> {
    match &node.data {
        NodeData::Element { attrs, .. } => {
            attrs.borrow().iter().find(|a| &*a.name.local == name).map(|a| a.value.to_string())
        }
        _ => None,
    }
}

/// `true` when the element's `class` attribute lists `class`.
pub(crate) fn has_class(node: &Node, class: &str) -> bool {
    attr(node, "class").is_some_and(|c| c.split_ascii_whitespace().any(|c| c == class))
}

/// All text below `node`, concatenated.
pub(crate) fn text_of(node: &Node) -> String {
    let mut out = String::new();
    collect_text(node, &mut out);
    out
}

/// Whitespace runs as one space, trimmed.
pub(crate) fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn collect_text(node: &Node, out: &mut String) {
    if let NodeData::Text { contents } = &node.data {
        out.push_str(&contents.borrow());
    }
    for child in node.children.borrow().iter() {
        collect_text(child, out);
    }
}

fn find_all(node: &Rc<Node>, matches: &dyn Fn(&Rc<Node>) -> bool) -> Vec<Rc<Node>> {
    let mut found = Vec::new();
    let mut stack = vec![node.clone()];
    while let Some(current) = stack.pop() {
        if matches(&current) {
            found.push(current.clone());
        }
        stack.extend(current.children.borrow().iter().rev().cloned());
    }
    found
}

fn strip(node: &Node) {
    node.children.borrow_mut().retain(|child| match &child.data {
        NodeData::Comment { .. } => false,
        NodeData::Element { name, .. } => !REMOVED.contains(&&*name.local),
        _ => true,
    });
    for child in node.children.borrow().iter() {
        strip(child);
    }
}

fn write_text(node: &Node, out: &mut String, in_pre: bool) {
    match &node.data {
        NodeData::Text { contents } => {
            let text = contents.borrow();
            if in_pre {
                out.push_str(&text);
            } else {
                let collapsed = collapse(&text);
                let starts_space = text.starts_with(char::is_whitespace);
                let ends_space = text.ends_with(char::is_whitespace);
                if (starts_space || collapsed.is_empty()) && !out.ends_with([' ', '\n']) && !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(&collapsed);
                if ends_space && !collapsed.is_empty() {
                    out.push(' ');
                }
            }
        }
        NodeData::Element { name, .. } => {
            let name = &*name.local;
            if name == "head" {
                return;
            }
            let block = BLOCKS.contains(&name);
            if block && !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            for child in node.children.borrow().iter() {
                write_text(child, out, in_pre || name == "pre");
            }
            if block && !out.ends_with('\n') {
                out.push('\n');
            }
        }
        _ => {
            for child in node.children.borrow().iter() {
                write_text(child, out, in_pre);
            }
        }
    }
}
