//! The model of a `#[tool]` function, built from its syntax and checked; every node keeps the
//! syntax it came from so that errors point at the right token.
//!
//! - [`ToolFn::from_item`] / [`ToolFn::from_method`]: the function as a whole (its doc comment,
//!   its signature's rules, its return type);
//! - `params`: one parameter at a time (its attributes, the context, `#[depends]`, `#[input]`, a
//!   model argument);
//! - `arg`: a model argument and its checked bounds;
//! - `types`: what a type's syntax says (decoded form, state types, plain data, return kinds).

mod arg;
mod params;
mod types;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, FnArg, Ident, ItemFn, Pat, ReturnType, Signature, Type};

pub(crate) use arg::{Arg, BoundKind, Number};
pub(crate) use types::{classify, is_plain_data, type_text, unraw};

use crate::docs::{Doc, doc_of, split_arguments};
use params::Params;

/// Collects every error instead of stopping at the first.
#[derive(Default)]
pub(crate) struct Errors(Vec<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        self.0.push(syn::Error::new(span, message));
    }

    pub(crate) fn extend(&mut self, errors: impl IntoIterator<Item = syn::Error>) {
        self.0.extend(errors);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn into_errors(self) -> Vec<syn::Error> {
        self.0
    }

    pub(crate) fn to_compile_errors(&self) -> proc_macro2::TokenStream {
        self.0.iter().map(syn::Error::to_compile_error).collect()
    }
}

/// One parameter of the tool function.
pub(crate) enum Param {
    /// A model argument.
    Arg(Box<Arg>),
    /// `#[input]`: the whole arguments object.
    Input { ident: Ident, ty: Type },
    /// `#[depends(KEY)]`: resolved from the context.
    Depends { ident: Ident, ty: Type, key: Expr },
    /// `&ToolContext`.
    Context,
    /// `&self` of a method in a `#[tools]` impl block: the instance, resolved from the registry.
    Receiver,
}

/// How the return value becomes a `ToolResult`.
#[derive(Debug, PartialEq, Eq)]
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
    /// The function as the user wrote it, with the parameter attributes removed from its parameters.
    pub(crate) item: ItemFn,
    pub(crate) params: Vec<Param>,
    pub(crate) output: Output,
    pub(crate) output_span: Span,
    /// The description from the doc comment (the `# Arguments` section removed).
    pub(crate) doc: Doc,
}

impl ToolFn {
    /// Builds the model, stripping parameter attributes from `item` (so that it can always be emitted).
    pub(crate) fn from_item(item: ItemFn, errors: &mut Errors) -> Self {
        Self::build(item, false, errors)
    }

    /// [`ToolFn::from_item`] for a method of a `#[tools]` impl block, which takes `&self`.
    pub(crate) fn from_method(item: ItemFn, errors: &mut Errors) -> Self {
        Self::build(item, true, errors)
    }

    /// The model of `item` (`method`: inside a `#[tools]` impl block): the doc comment split from
    /// its `# Arguments` section, each parameter read by [`Params::read`], then the rules that
    /// hold across parameters and of the signature as a whole.
    fn build(mut item: ItemFn, method: bool, errors: &mut Errors) -> Self {
        let mut doc = doc_of(&item.attrs);
        let mut section = Vec::new();
        if let Doc::Text(text) = &doc {
            let split = split_arguments(text);
            section = split.arguments;
            doc = Doc::Text(split.description);
        }
        let mut params = Params::new(&section, method);
        for input in &mut item.sig.inputs {
            params.read(input, errors);
        }
        let params = params.into_params();
        input_alone(&params, errors);
        section_names(&item.sig, &section, errors);
        signature_rules(&item.sig, errors);
        let (output, output_span) = match &item.sig.output {
            ReturnType::Default => (Output::Text, item.sig.ident.span()),
            ReturnType::Type(_, ty) => (classify(ty), ty.span()),
        };
        Self { item, params, output, output_span, doc }
    }
}

/// An `#[input]` parameter is the whole arguments object: no model argument beside it.
fn input_alone(params: &[Param], errors: &mut Errors) {
    let input = params.iter().find_map(|p| match p {
        Param::Input { ident, .. } => Some(ident),
        _ => None,
    });
    let Some(input) = input else { return };
    for param in params {
        if let Param::Arg(arg) = param {
            errors.push(
                arg.ident.span(),
                format!("`{input}` is the `#[input]` of this tool, so `{}` cannot be a model argument beside it; make it a field of the input type, or a `#[depends]` parameter", arg.ident),
            );
        }
    }
}

/// Every item of the doc comment's `# Arguments` section names a parameter.
fn section_names(sig: &Signature, section: &[(String, String)], errors: &mut Errors) {
    let all_names: Vec<String> = sig
        .inputs
        .iter()
        .filter_map(|i| match i {
            FnArg::Typed(t) => match &*t.pat {
                Pat::Ident(p) => Some(unraw(&p.ident)),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .collect();
    for (name, _) in section {
        if !all_names.contains(name) {
            errors.push(
                sig.ident.span(),
                format!("the `# Arguments` section of the doc comment describes `{name}`, which is not a parameter; fix the name or remove the item"),
            );
        }
    }
}

/// A tool function is not generic, `unsafe` or variadic.
fn signature_rules(sig: &Signature, errors: &mut Errors) {
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(
            sig.generics.span(),
            "`#[tool]` functions cannot be generic: the schema is built from concrete types",
        );
    }
    if let syn::Safety::Unsafe(unsafety) = &sig.safety {
        errors.push(
            unsafety.span,
            "`#[tool]` functions cannot be `unsafe`: a model calls them; move the unsafe code into the body",
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(variadic.span(), "`#[tool]` functions cannot be variadic");
    }
}
