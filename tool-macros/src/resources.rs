//! `#[tool(resource ..)]` and `#[tool(concurrency ..)]`: parsing, and the
//! `ToolSpec::with_resources(&[..])` they generate (their checks against the function's
//! arguments are `expand/checks.rs`'s `resources`, so that this room knows no function).

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Lit, Meta};

/// One declared resource as written: the kind, the argument naming it (`None` for the whole kind),
/// the span to point errors at.
#[derive(Debug, Clone)]
pub(crate) struct Declared {
    pub(crate) kind: String,
    pub(crate) argument: Option<String>,
    pub(crate) span: Span,
}

/// `resource` (the whole tool), `resource = "arg"`, or `resource(kind = "arg", kind2 = "arg2",
/// named_kind)`.
#[derive(Debug, Clone)]
pub(crate) enum ResourceOption {
    /// `resource`: one call of the whole tool at a time.
    WholeTool(Span),
    /// The listed resources.
    Listed(Vec<Declared>),
}

/// `concurrency = N` or `concurrency(limit = N, per = "arg")`.
#[derive(Debug, Clone)]
pub(crate) struct ConcurrencyOption {
    pub(crate) limit: syn::LitInt,
    pub(crate) per: Option<syn::LitStr>,
}

/// The inside of `concurrency(limit = N, per = "arg")`.
#[derive(Debug, FromMeta)]
struct ConcurrencyList {
    limit: syn::LitInt,
    per: Option<syn::LitStr>,
}

const RESOURCE_FORMS: &str =
    "write `resource` (the whole tool), `resource = \"argument\"`, or `resource(kind = \"argument\", other_kind)`";

impl FromMeta for ResourceOption {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let span = syn::spanned::Spanned::span(item);
        match item {
            Meta::Path(_) => Ok(ResourceOption::WholeTool(span)),
            Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: Lit::Str(argument), .. }) => {
                    Ok(ResourceOption::Listed(vec![Declared {
                        kind: argument.value(),
                        argument: Some(argument.value()),
                        span: argument.span(),
                    }]))
                }
                _ => Err(darling::Error::custom(RESOURCE_FORMS).with_span(&nv.value)),
            },
            Meta::List(list) => {
                let items = NestedMeta::parse_meta_list(list.tokens.clone())?;
                if items.is_empty() {
                    return Err(darling::Error::custom(RESOURCE_FORMS).with_span(item));
                }
                items.iter().map(declared).collect::<darling::Result<Vec<_>>>().map(ResourceOption::Listed)
            }
        }
    }
}

/// One item of `resource(...)`: `kind = "argument"`, or a bare `kind`.
fn declared(item: &NestedMeta) -> darling::Result<Declared> {
    let span = syn::spanned::Spanned::span(item);
    let kind_of = |path: &syn::Path| path.get_ident().map(ToString::to_string);
    match item {
        NestedMeta::Meta(Meta::Path(path)) if let Some(kind) = kind_of(path) => {
            Ok(Declared { kind, argument: None, span })
        }
        NestedMeta::Meta(Meta::NameValue(nv))
            if let Some(kind) = kind_of(&nv.path)
                && let syn::Expr::Lit(syn::ExprLit { lit: Lit::Str(argument), .. }) = &nv.value =>
        {
            Ok(Declared { kind, argument: Some(argument.value()), span: argument.span() })
        }
        _ => Err(darling::Error::custom(RESOURCE_FORMS).with_span(&span)),
    }
}

impl FromMeta for ConcurrencyOption {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        match item {
            Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: Lit::Int(limit), .. }) => {
                    Ok(ConcurrencyOption { limit: limit.clone(), per: None })
                }
                _ => Err(darling::Error::custom(CONCURRENCY_FORMS).with_span(&nv.value)),
            },
            Meta::List(_) => {
                let list = ConcurrencyList::from_meta(item)?;
                Ok(ConcurrencyOption { limit: list.limit, per: list.per })
            }
            Meta::Path(_) => Err(darling::Error::custom(CONCURRENCY_FORMS).with_span(item)),
        }
    }
}

const CONCURRENCY_FORMS: &str = "write `concurrency = N` (at most N calls at once) or `concurrency(limit = N, per = \"argument\")` (at most N per value of the argument)";

/// `.with_resources(&[..])` for the spec's builder chain, or nothing when the tool declares none.
/// Run after the checks passed.
pub(crate) fn builder(
    resource: Option<&ResourceOption>,
    concurrency: Option<&ConcurrencyOption>,
    private: &TokenStream,
) -> TokenStream {
    let mut items = Vec::new();
    match resource {
        None => {}
        Some(ResourceOption::WholeTool(_)) => items.push(quote!(#private::Resource::WHOLE_TOOL)),
        Some(ResourceOption::Listed(declared)) => {
            for Declared { kind, argument, .. } in declared {
                let argument = match argument {
                    Some(argument) => quote!(::core::option::Option::Some(#argument)),
                    None => quote!(::core::option::Option::None),
                };
                items.push(quote!(#private::Resource::lock(#kind, #argument)));
            }
        }
    }
    if let Some(ConcurrencyOption { limit, per }) = concurrency {
        let limit = limit.base10_parse::<u32>().unwrap_or(1);
        let per = match per {
            Some(per) => quote!(::core::option::Option::Some(#per)),
            None => quote!(::core::option::Option::None),
        };
        items.push(quote!(#private::Resource::limit(#limit, #per)));
    }
    if items.is_empty() {
        return quote!();
    }
    quote!(.with_resources(&[#(#items),*]))
}
