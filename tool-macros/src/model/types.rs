//! What a type's syntax says: the type decoded for an argument, whether it holds state or is plain
//! data, and how a return type becomes a tool result.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Ident, Type};

use super::{Errors, Output};

/// The span of an `impl Trait` anywhere in `ty`.
pub(super) fn impl_trait_span(ty: &Type) -> Option<Span> {
    match ty {
        Type::ImplTrait(t) => Some(t.span()),
        Type::Reference(r) => impl_trait_span(&r.elem),
        Type::Paren(p) => impl_trait_span(&p.elem),
        Type::Slice(s) => impl_trait_span(&s.elem),
        Type::Array(a) => impl_trait_span(&a.elem),
        Type::Tuple(t) => t.elems.iter().find_map(impl_trait_span),
        Type::Path(p) => p.path.segments.iter().find_map(|s| match &s.arguments {
            syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
                syn::GenericArgument::Type(t) => impl_trait_span(t),
                _ => None,
            }),
            _ => None,
        }),
        _ => None,
    }
}

/// The type decoded for a model argument and whether the function borrows it: `&str` is decoded
/// as `String`, `&[T]` as `Vec<T>`; other references are refused.
pub(super) fn decoded_type(ty: &Type, errors: &mut Errors) -> Option<(Type, bool)> {
    let Type::Reference(reference) = ty else {
        // A reference inside the type (`Option<&str>`) cannot be decoded for each call either.
        let mut owned = ty.clone();
        let mut first = None;
        make_owned(&mut owned, &mut first);
        if let Some(span) = first {
            errors.push(
                span,
                format!("`#[tool]` arguments are decoded into owned values: take `{}` instead of `{}` (only a whole `&str` or `&[T]` argument is decoded owned and passed borrowed)", type_text(&owned), type_text(ty)),
            );
            return None;
        }
        return Some((ty.clone(), false));
    };
    if reference.mutability.is_some() {
        errors.push(reference.span(), "`#[tool]` arguments cannot be `&mut`: take the value");
        return None;
    }
    if let Some(lifetime) = &reference.lifetime
        && lifetime.ident != "_"
    {
        errors.push(
            lifetime.span(),
            format!("a `#[tool]` argument is decoded for each call and cannot borrow for `{lifetime}`; write `&str` or take an owned type"),
        );
        return None;
    }
    match &*reference.elem {
        Type::Path(path) if path.qself.is_none() && path.path.is_ident("str") => {
            Some((syn::parse_quote!(::std::string::String), true))
        }
        Type::Slice(slice) => {
            let elem = &slice.elem;
            Some((syn::parse_quote!(::std::vec::Vec<#elem>), true))
        }
        _ => {
            let mut owned = ty.clone();
            make_owned(&mut owned, &mut None);
            errors.push(
                reference.span(),
                format!("`#[tool]` arguments are decoded into owned values: take `{}` instead of a reference (only `&str` and `&[T]` are decoded owned and passed borrowed)", type_text(&owned)),
            );
            None
        }
    }
}

/// Replaces every reference in `ty` by the owned type a user would take instead (`&str` by
/// `String`, `&[T]` by `Vec<T>`, `&Path` by `PathBuf`, `&OsStr` by `OsString`, `&T` by `T`), for
/// the suggestion of an error; `first` gets the span of the first reference found.
fn make_owned(ty: &mut Type, first: &mut Option<Span>) {
    match ty {
        Type::Reference(reference) => {
            first.get_or_insert(reference.span());
            let mut elem = (*reference.elem).clone();
            make_owned(&mut elem, first);
            let owned_name = match &elem {
                Type::Path(path) if path.qself.is_none() => {
                    path.path.segments.last().and_then(|last| match last.ident.to_string().as_str() {
                        "str" => Some(quote::format_ident!("String")),
                        "Path" => Some(quote::format_ident!("PathBuf")),
                        "OsStr" => Some(quote::format_ident!("OsString")),
                        "CStr" => Some(quote::format_ident!("CString")),
                        _ => None,
                    })
                }
                _ => None,
            };
            *ty = match (owned_name, elem) {
                (Some(name), _) => syn::parse_quote!(#name),
                (None, Type::Slice(slice)) => {
                    let item = &slice.elem;
                    syn::parse_quote!(Vec<#item>)
                }
                (None, elem) => elem,
            };
        }
        Type::Path(path) => {
            for segment in &mut path.path.segments {
                if let syn::PathArguments::AngleBracketed(args) = &mut segment.arguments {
                    for arg in &mut args.args {
                        if let syn::GenericArgument::Type(inner) = arg {
                            make_owned(inner, first);
                        }
                    }
                }
            }
        }
        Type::Slice(slice) => make_owned(&mut slice.elem, first),
        Type::Array(array) => make_owned(&mut array.elem, first),
        Type::Paren(paren) => make_owned(&mut paren.elem, first),
        Type::Group(group) => make_owned(&mut group.elem, first),
        Type::Tuple(tuple) => tuple.elems.iter_mut().for_each(|elem| make_owned(elem, first)),
        _ => {}
    }
}

/// A type (or a path, such as a dependency key) as a user writes it: `Vec<i64>`, not
/// `Vec < i64 >`.
pub(crate) fn type_text(ty: &impl quote::ToTokens) -> String {
    let text = quote::quote!(#ty).to_string();
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let prev = out.chars().last();
        let skip = c == ' '
            && (matches!(next, Some('<' | '>' | ',' | ';' | ':' | ')' | ']'))
                || matches!(prev, Some('<' | '&' | ':' | '(' | '[')));
        if !skip {
            out.push(c);
        }
    }
    out
}

/// The types a model cannot send, recognised by the last segment of their path (of the type, or of
/// the type inside an `Option`): shared or interior-mutable state, channels, handles. A
/// parameter of such a type is almost always a forgotten `#[depends(KEY)]`.
const STATE_TYPES: &[&str] = &[
    "Arc",
    "Rc",
    "Weak",
    "Mutex",
    "RwLock",
    "RefCell",
    "Cell",
    "OnceCell",
    "OnceLock",
    "LazyLock",
    "LazyCell",
    "Sender",
    "SyncSender",
    "Receiver",
    "UnboundedSender",
    "UnboundedReceiver",
    "WeakSender",
    "WeakUnboundedSender",
    "JoinHandle",
    "AtomicBool",
    "AtomicU8",
    "AtomicU16",
    "AtomicU32",
    "AtomicU64",
    "AtomicUsize",
    "AtomicI8",
    "AtomicI16",
    "AtomicI32",
    "AtomicI64",
    "AtomicIsize",
    "AtomicPtr",
];

/// The name of the state type `ty` is (see [`STATE_TYPES`]), if it is one.
pub(super) fn state_type(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Paren(inner) => state_type(&inner.elem),
        Type::Group(inner) => state_type(&inner.elem),
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            if last.ident == "Option"
                && let syn::PathArguments::AngleBracketed(args) = &last.arguments
                && let Some(syn::GenericArgument::Type(inner)) = args.args.first()
            {
                return state_type(inner);
            }
            STATE_TYPES.iter().find(|name| last.ident == name).copied()
        }
        _ => None,
    }
}

/// The types a type alias of shared state cannot be (std's names of plain data, without generic
/// arguments): their arguments need no check that they are not state (see `argument_checks`).
const PLAIN_TYPES: &[&str] = &[
    "String", "str", "bool", "char", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128",
    "isize", "f32", "f64", "PathBuf",
];

/// Whether `ty` is named like plain data ([`PLAIN_TYPES`]), so that it cannot be an alias of state.
pub(crate) fn is_plain_data(ty: &Type) -> bool {
    match ty {
        Type::Paren(inner) => is_plain_data(&inner.elem),
        Type::Group(inner) => is_plain_data(&inner.elem),
        Type::Path(path) if path.qself.is_none() => path.path.segments.last().is_some_and(|last| {
            matches!(last.arguments, syn::PathArguments::None) && PLAIN_TYPES.iter().any(|name| last.ident == name)
        }),
        _ => false,
    }
}

pub(super) fn is_option(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Option"))
}

/// The identifier without a leading `r#`.
pub(crate) fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

/// The kind of a return type, read from its syntax.
pub(crate) fn classify(ty: &Type) -> Output {
    match ty {
        Type::Tuple(tuple) if tuple.elems.is_empty() => Output::Text,
        Type::Reference(_) => Output::Text,
        Type::Paren(inner) => classify(&inner.elem),
        Type::Group(inner) => classify(&inner.elem),
        Type::Path(path) if path.qself.is_none() => {
            let Some(last) = path.path.segments.last() else {
                return Output::Json;
            };
            let first_type_arg = || match &last.arguments {
                syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
                    syn::GenericArgument::Type(t) => Some(t),
                    _ => None,
                }),
                _ => None,
            };
            match last.ident.to_string().as_str() {
                "String" | "ToolResult" | "ContentPart" | "Cow" => Output::Text,
                "Vec" if first_type_arg().is_some_and(is_content_part) => Output::Text,
                "Result" => match first_type_arg() {
                    Some(ok) => Output::Result(Box::new(classify(ok))),
                    // A `Result` alias with the error fixed, such as `anyhow::Result<T>` or `io::Result<T>`.
                    None => Output::Json,
                },
                _ => Output::Json,
            }
        }
        _ => Output::Json,
    }
}

fn is_content_part(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "ContentPart"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_written_without_token_spacing() {
        let ty: Type = syn::parse_quote!(&std::collections::HashMap<String, Vec<(u8, [i64; 2])>>);
        assert_eq!(type_text(&ty), "&std::collections::HashMap<String, Vec<(u8, [i64; 2])>>");
    }

    #[test]
    fn state_types_are_recognised_by_the_last_segment_of_their_path() {
        let state: Vec<Type> = vec![
            syn::parse_quote!(Arc<Mutex<HashMap<u64, String>>>),
            syn::parse_quote!(std::rc::Rc<str>),
            syn::parse_quote!(tokio::sync::mpsc::UnboundedSender<Job>),
            syn::parse_quote!(Option<std::sync::atomic::AtomicUsize>),
            syn::parse_quote!((RefCell<u8>)),
        ];
        let names: Vec<_> = state.iter().map(state_type).collect();
        assert_eq!(names, [Some("Arc"), Some("Rc"), Some("UnboundedSender"), Some("AtomicUsize"), Some("RefCell")]);
        let data: Vec<Type> = vec![
            syn::parse_quote!(Vec<Arc<str>>),
            syn::parse_quote!(String),
            syn::parse_quote!(my::Archive),
            syn::parse_quote!(Option<u32>),
        ];
        assert!(data.iter().all(|ty| state_type(ty).is_none()));
    }

    #[test]
    fn plain_data_is_a_std_name_of_data_without_generic_arguments() {
        let plain: Vec<Type> = vec![
            syn::parse_quote!(String),
            syn::parse_quote!(::std::string::String),
            syn::parse_quote!(u64),
            syn::parse_quote!(std::path::PathBuf),
        ];
        assert!(plain.iter().all(is_plain_data));
        let other: Vec<Type> = vec![
            syn::parse_quote!(Notes),
            syn::parse_quote!(Vec<String>),
            syn::parse_quote!(Option<u8>),
            syn::parse_quote!(my::String<u8>),
        ];
        assert!(!other.iter().any(is_plain_data));
    }

    #[test]
    fn return_types_are_classified_by_their_syntax() {
        let cases: Vec<(Type, Output)> = vec![
            (syn::parse_quote!(String), Output::Text),
            (syn::parse_quote!(&'static str), Output::Text),
            (syn::parse_quote!(()), Output::Text),
            (syn::parse_quote!(Vec<ContentPart>), Output::Text),
            (syn::parse_quote!(Vec<u8>), Output::Json),
            (syn::parse_quote!(serde_json::Value), Output::Json),
            (syn::parse_quote!(Result<String, ToolError>), Output::Result(Box::new(Output::Text))),
            (syn::parse_quote!(anyhow::Result<Point>), Output::Result(Box::new(Output::Json))),
        ];
        for (ty, expected) in cases {
            assert_eq!(classify(&ty), expected, "{}", quote::quote!(#ty));
        }
    }
}
