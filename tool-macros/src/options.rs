//! The options of `#[tool(...)]` and `#[arg(...)]`, parsed with darling; darling's messages are
//! restyled to the framework's ("unknown `#[tool]` option `nmae`, did you mean `name`").

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::TokenStream;
use syn::{Expr, Meta};

/// `#[tool(name = "...", description = "...", set = "...", crate = path, inline, blocking,
/// sequential, timeout_ms = N, strict, tags(...), output_schema, defer, callers = ...,
/// idempotency_key = "...", preview = path)]`.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct ToolOptions {
    /// The tool name; default: the function name.
    pub(crate) name: Option<syn::LitStr>,
    /// The description; default: the function's doc comment.
    pub(crate) description: Option<syn::LitStr>,
    /// The set the tool belongs to.
    pub(crate) set: Option<syn::LitStr>,
    /// The path of the runtime crate; default `::tool_runtime`.
    #[darling(rename = "crate")]
    pub(crate) krate: Option<syn::Path>,
    /// A sync function run inline, on the async worker thread that polls the call.
    pub(crate) inline: darling::util::Flag,
    /// A sync function run on tokio's blocking pool: what a plain `fn` does without `inline`.
    pub(crate) blocking: darling::util::Flag,
    /// Run alone, not concurrently with the other calls of a turn.
    pub(crate) sequential: darling::util::Flag,
    /// Fail the call after this many milliseconds.
    pub(crate) timeout_ms: Option<syn::LitInt>,
    /// The OpenAI strict-mode wish: `strict` or `strict = false`.
    pub(crate) strict: Option<darling::util::Override<syn::LitBool>>,
    /// Free-form tags: `tags(read_only, external)`.
    #[darling(default)]
    pub(crate) tags: darling::util::PathList,
    /// Record the JSON Schema of the (Ok) return type as the definition's `output_schema`.
    pub(crate) output_schema: darling::util::Flag,
    /// Deferred: listed only through tool search, called by name like any other.
    pub(crate) defer: darling::util::Flag,
    /// Who may call the tool: `callers = direct`, `code` or `both` (checked by [`callers_variant`]).
    pub(crate) callers: Option<syn::Ident>,
    /// What the calls lock: `resource`, `resource = "arg"`, `resource(kind = "arg", kind2)`.
    pub(crate) resource: Option<crate::resources::ResourceOption>,
    /// `concurrency = N` or `concurrency(limit = N, per = "arg")`.
    pub(crate) concurrency: Option<crate::resources::ConcurrencyOption>,
    /// `idempotency_key = "arg"`: the argument whose value is the call's idempotency key.
    pub(crate) idempotency_key: Option<syn::LitStr>,
    /// `preview = path`: the function giving a call's preview (`tool_runtime::PreviewFn`).
    pub(crate) preview: Option<syn::Path>,
}

/// The `tool_runtime::Callers` variant `callers = code` or `callers = both` sets in the tool's
/// definition (`Code`, `Both`); `None` for `direct` and for no option (the default, `Direct`).
///
/// # Errors
/// Any other value, on its token.
pub(crate) fn callers_variant(callers: Option<&syn::Ident>) -> Result<Option<&'static str>, syn::Error> {
    match callers.map(ToString::to_string).as_deref() {
        None | Some("direct") => Ok(None),
        Some("code") => Ok(Some("Code")),
        Some("both") => Ok(Some("Both")),
        Some(other) => Err(syn::Error::new(
            callers.map_or_else(proc_macro2::Span::call_site, syn::Ident::span),
            format!("`callers` is `direct`, `code` or `both`, not `{other}`"),
        )),
    }
}

/// The option names of `#[tool(...)]`, in the order the docs list them.
pub(crate) const TOOL_OPTIONS: &[&str] = &[
    "name",
    "description",
    "set",
    "crate",
    "inline",
    "blocking",
    "sequential",
    "timeout_ms",
    "strict",
    "tags",
    "output_schema",
    "defer",
    "callers",
    "resource",
    "concurrency",
    "idempotency_key",
    "preview",
];

/// The options of `#[tool(...)]` and `#[arg(...)]` whose value is a string literal.
const STRING_OPTIONS: &[&str] = &["name", "description", "set", "rename", "pattern", "idempotency_key"];

/// The option names of `#[arg(...)]`.
pub(crate) const ARG_OPTIONS: &[&str] =
    &["default", "rename", "description", "range", "length", "pattern", "from_model"];

impl ToolOptions {
    /// Parses the tokens inside `#[tool(...)]`.
    pub(crate) fn parse(attr: TokenStream) -> Result<Self, Vec<syn::Error>> {
        let items = NestedMeta::parse_meta_list(attr).map_err(|e| vec![e])?;
        let options = Self::from_list(&items).map_err(|e| restyle(e, "#[tool]", TOOL_OPTIONS))?;
        callers_variant(options.callers.as_ref()).map_err(|e| vec![e])?;
        Ok(options)
    }
}

/// `#[arg(default, default = expr, rename = "...", description = "...")]` on a model argument.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct ArgOptions {
    /// `default` (the type's `Default`) or `default = expr`.
    pub(crate) default: Option<DefaultValue>,
    /// The property name the model sees.
    pub(crate) rename: Option<syn::LitStr>,
    /// The property description; wins over the parameter's doc comment.
    pub(crate) description: Option<syn::LitStr>,
    /// `range(min = N, max = N)`: the schema's `minimum`/`maximum`, both inclusive.
    pub(crate) range: Option<RangeOption>,
    /// `length(min = N, max = N)` or `length(equal = N)`: `minLength`/`maxLength` of a string,
    /// `minItems`/`maxItems` of an array.
    pub(crate) length: Option<LengthOption>,
    /// `pattern = "regex"`: the schema's `pattern` (unanchored, as JSON Schema reads it).
    pub(crate) pattern: Option<syn::LitStr>,
    /// `from_model`: the model sends this argument although its type (`Arc`, `Mutex`, ...) looks
    /// like state the program hands in.
    pub(crate) from_model: darling::util::Flag,
}

/// `range(min = N, max = N)`, the spelling of schemars' own `#[schemars(range(..))]`; each bound
/// inclusive and optional, a number literal (`-1`, `0.5`).
#[derive(Debug, Default, FromMeta)]
pub(crate) struct RangeOption {
    pub(crate) min: Option<Expr>,
    pub(crate) max: Option<Expr>,
}

/// `length(min = N, max = N, equal = N)`, the spelling of schemars' `#[schemars(length(..))]`.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct LengthOption {
    pub(crate) min: Option<syn::LitInt>,
    pub(crate) max: Option<syn::LitInt>,
    pub(crate) equal: Option<syn::LitInt>,
}

impl ArgOptions {
    /// Parses one `#[arg(...)]` attribute.
    pub(crate) fn parse(meta: &Meta) -> Result<Self, Vec<syn::Error>> {
        match meta {
            Meta::List(_) => Self::from_meta(meta).map_err(|e| restyle(e, "#[arg]", ARG_OPTIONS)),
            _ => Err(vec![syn::Error::new_spanned(
                meta,
                "expected `#[arg(...)]` with at least one of `default`, `default = expr`, `rename = \"...\"`, `description = \"...\"`, `range(min = .., max = ..)`, `length(min = .., max = ..)`, `pattern = \"...\"`, `from_model`",
            )]),
        }
    }
}

/// The value of `default`: `None` for the bare word (the type's `Default`), else the expression,
/// kept as written (darling would parse a string literal as an expression).
#[derive(Debug, Clone)]
pub(crate) struct DefaultValue {
    pub(crate) expr: Option<Expr>,
    pub(crate) span: proc_macro2::Span,
}

impl FromMeta for DefaultValue {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let span = syn::spanned::Spanned::span(item);
        match item {
            Meta::Path(_) => Ok(Self { expr: None, span }),
            Meta::NameValue(nv) => Ok(Self { expr: Some(nv.value.clone()), span }),
            Meta::List(_) => Err(darling::Error::custom("expected `default` or `default = expr`").with_span(item)),
        }
    }
}

/// Turns darling's errors into one `syn::Error` each, in the framework's style.
pub(crate) fn restyle(error: darling::Error, what: &str, known: &[&str]) -> Vec<syn::Error> {
    error.into_iter().map(|e| syn::Error::new(e.span(), restyle_message(&e.to_string(), what, known))).collect()
}

/// The framework's wording of one darling message (lowercase, no trailing period, what was
/// expected).
pub(crate) fn restyle_message(message: &str, what: &str, known: &[&str]) -> String {
    let message = match message.find(" at ") {
        Some(i) if message.starts_with("Unknown field") || message.starts_with("Duplicate field") => &message[..i],
        _ => message,
    };
    let expected = known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
    if let Some(rest) = message.strip_prefix("Unknown field: ")
        && what == "#[arg]"
        && ["`minimum`", "`maximum`", "`min`", "`max`"].iter().any(|name| rest.starts_with(name))
    {
        let field = rest.split(['.', ' ']).next().unwrap_or(rest);
        return format!(
            "unknown `#[arg]` option {field}; write a range as `range(min = 1, max = 1000)` (both bounds inclusive, either may be left out)"
        );
    }
    if let Some(rest) = message.strip_prefix("Unknown field: ") {
        let (field, suggestion) = match rest.split_once(". Did you mean ") {
            Some((field, alt)) => (field, Some(alt.trim_end_matches('?'))),
            None => (rest.split(". ").next().unwrap_or(rest), None),
        };
        return match suggestion {
            Some(alt) => format!("unknown `{what}` option {field}, did you mean {alt}"),
            None => format!("unknown `{what}` option {field}; expected one of {expected}"),
        };
    }
    // An option that takes a string, given a path or another literal: `name = read_file`.
    if let Some(rest) =
        message.strip_prefix("Unexpected type `").or_else(|| message.strip_prefix("Unexpected literal type `"))
        && let Some((_, field)) = rest.split_once("` at ")
        && STRING_OPTIONS.contains(&field)
    {
        return format!("expected a string literal: write `{field} = \"...\"`");
    }
    if let Some(field) = message.strip_prefix("Duplicate field ") {
        return format!("the `{what}` option {field} is given twice; keep one");
    }
    // A custom message of one option, which darling ends with ` at <option>`.
    let message = match message.rsplit_once(" at ") {
        Some((text, field)) if known.contains(&field) && !text.starts_with("Unexpected") => text,
        _ => message,
    };
    let mut chars = message.trim_end_matches('.').chars();
    match chars.next() {
        Some(first) => format!("invalid `{what}` option: {}{}", first.to_lowercase(), chars.as_str()),
        None => format!("invalid `{what}` option"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_option_with_a_close_name_gets_did_you_mean() {
        assert_eq!(
            restyle_message("Unknown field: `nmae`. Did you mean `name`?", "#[tool]", TOOL_OPTIONS),
            "unknown `#[tool]` option `nmae`, did you mean `name`"
        );
    }

    #[test]
    fn an_unknown_option_without_a_close_name_lists_the_options() {
        assert_eq!(
            restyle_message("Unknown field: `zzz`", "#[arg]", ARG_OPTIONS),
            "unknown `#[arg]` option `zzz`; expected one of `default`, `rename`, `description`, `range`, `length`, `pattern`, `from_model`"
        );
    }

    #[test]
    fn a_string_option_given_a_path_asks_for_a_string_literal() {
        assert_eq!(
            restyle_message("Unexpected type `path` at name", "#[tool]", TOOL_OPTIONS),
            "expected a string literal: write `name = \"...\"`"
        );
        assert_eq!(
            restyle_message("Unexpected literal type `int` at set", "#[tool]", TOOL_OPTIONS),
            "expected a string literal: write `set = \"...\"`"
        );
    }

    #[test]
    fn a_duplicate_option_says_to_keep_one() {
        assert_eq!(
            restyle_message("Duplicate field `name`", "#[tool]", TOOL_OPTIONS),
            "the `#[tool]` option `name` is given twice; keep one"
        );
    }

    #[test]
    fn other_messages_are_lowercased_without_the_trailing_period() {
        assert_eq!(
            restyle_message("Unexpected literal type `int`.", "#[tool]", TOOL_OPTIONS),
            "invalid `#[tool]` option: unexpected literal type `int`"
        );
    }
}

#[cfg(test)]
mod callers_tests {
    use super::{ToolOptions, callers_variant};

    #[test]
    fn callers_code_and_both_name_their_variant_and_direct_is_the_default() {
        let variant = |tokens: proc_macro2::TokenStream| {
            callers_variant(ToolOptions::parse(tokens).unwrap().callers.as_ref()).unwrap()
        };
        assert_eq!(variant(quote::quote!(callers = code)), Some("Code"));
        assert_eq!(variant(quote::quote!(callers = both)), Some("Both"));
        assert_eq!(variant(quote::quote!(callers = direct)), None);
        assert_eq!(variant(quote::quote!()), None);
    }

    #[test]
    fn another_callers_value_is_an_error_naming_the_three() {
        let errors = ToolOptions::parse(quote::quote!(callers = everyone)).unwrap_err();
        assert_eq!(errors[0].to_string(), "`callers` is `direct`, `code` or `both`, not `everyone`");
    }
}
