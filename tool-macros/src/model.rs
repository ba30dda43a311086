//! The model of a `#[tool]` function, built from its syntax; every node keeps the syntax it came
//! from so that errors point at the right token.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, FnArg, Ident, ItemFn, Pat, ReturnType, Type};

use crate::docs::{doc_text, is_doc};

/// Collects every error instead of stopping at the first.
#[derive(Default)]
pub(crate) struct Errors(Vec<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        self.0.push(syn::Error::new(span, message));
    }

    pub(crate) fn push_error(&mut self, error: syn::Error) {
        self.0.push(error);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn to_compile_errors(&self) -> proc_macro2::TokenStream {
        self.0.iter().map(syn::Error::to_compile_error).collect()
    }
}

/// One parameter of the tool function.
pub(crate) enum Param {
    /// A model argument: a property of the JSON Schema.
    Arg { ident: Ident, ty: Type, doc: String },
    /// `#[depends(KEY)]`: resolved from the context.
    Depends { ident: Ident, ty: Type, key: Expr },
    /// `&ToolContext`.
    Context,
}

/// How the return value becomes a `ToolResult`.
pub(crate) enum Output {
    /// A text-like type with an `IntoToolResult` impl.
    Text,
    /// Any other type: serialised as JSON.
    Json,
    /// `Result<T, E>`: `T` by its own kind, `E` by `Display`.
    Result(Box<Output>),
}

/// A parsed `#[tool]` function.
pub(crate) struct ToolFn {
    /// The function as the user wrote it, with the helper attributes removed from its parameters.
    pub(crate) item: ItemFn,
    pub(crate) params: Vec<Param>,
    pub(crate) output: Output,
    pub(crate) output_span: Span,
    pub(crate) doc: String,
}

impl ToolFn {
    /// Builds the model, stripping helper attributes from `item` (so that it can always be emitted).
    pub(crate) fn from_item(mut item: ItemFn, errors: &mut Errors) -> Self {
        let doc = doc_text(&item.attrs);
        let mut params = Vec::new();
        let mut context_seen = false;
        for input in &mut item.sig.inputs {
            let typed = match input {
                FnArg::Receiver(receiver) => {
                    errors.push(receiver.span(), "`#[tool]` functions cannot take `self`");
                    continue;
                }
                FnArg::Typed(typed) => typed,
            };
            let param_doc = doc_text(&typed.attrs);
            let mut depends: Option<Expr> = None;
            let mut kept: Vec<Attribute> = Vec::new();
            for attr in std::mem::take(&mut typed.attrs) {
                if is_doc(&attr) {
                    continue;
                }
                if attr.path().is_ident("depends") {
                    match attr.parse_args::<Expr>() {
                        Ok(key) => depends = Some(key),
                        Err(_) => errors.push(attr.span(), "expected `#[depends(KEY)]` with one dependency key"),
                    }
                    continue;
                }
                kept.push(attr);
            }
            typed.attrs = kept;

            if is_context(&typed.ty) {
                if let Some(key) = &depends {
                    errors.push(key.span(), "the `&ToolContext` parameter cannot be a dependency");
                }
                if context_seen {
                    errors.push(typed.ty.span(), "a `#[tool]` function takes at most one `&ToolContext` parameter");
                }
                context_seen = true;
                params.push(Param::Context);
                continue;
            }
            let ident = match &*typed.pat {
                Pat::Ident(pat) if pat.subpat.is_none() && pat.by_ref.is_none() => pat.ident.clone(),
                other => {
                    errors.push(other.span(), "`#[tool]` parameters must be plain names (no patterns)");
                    continue;
                }
            };
            let ty = (*typed.ty).clone();
            params.push(match depends {
                Some(key) => Param::Depends { ident, ty, key },
                None => Param::Arg { ident, ty, doc: param_doc },
            });
        }
        if !item.sig.generics.params.is_empty() {
            errors.push(item.sig.generics.span(), "`#[tool]` functions cannot be generic");
        }
        let (output, output_span) = match &item.sig.output {
            ReturnType::Default => (Output::Text, item.sig.ident.span()),
            ReturnType::Type(_, ty) => (classify(ty), ty.span()),
        };
        Self { item, params, output, output_span, doc }
    }
}

fn is_context(ty: &Type) -> bool {
    let Type::Reference(reference) = ty else {
        return false;
    };
    let Type::Path(path) = &*reference.elem else {
        return false;
    };
    path.path.segments.last().is_some_and(|s| s.ident == "ToolContext")
}

fn classify(ty: &Type) -> Output {
    match ty {
        Type::Tuple(tuple) if tuple.elems.is_empty() => Output::Text,
        Type::Reference(_) => Output::Text,
        Type::Paren(inner) => classify(&inner.elem),
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
