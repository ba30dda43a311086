//! The model of a `#[tool]` function, built from its syntax and checked; every node keeps the
//! syntax it came from so that errors point at the right token.

use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, FnArg, Ident, ItemFn, Lit, LitStr, Meta, Pat, ReturnType, Type};

use crate::docs::{Doc, doc_of, doc_text, is_doc, split_arguments};
use crate::options::{ArgOptions, DefaultValue};

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

/// A model argument: one property of the JSON Schema.
pub(crate) struct Arg {
    pub(crate) ident: Ident,
    /// The type decoded: the parameter's type, or `String` for `&str` and `Vec<T>` for `&[T]`.
    pub(crate) decoded: Type,
    /// The parameter's type as written (for spans).
    pub(crate) written: Type,
    /// `true` when the function takes a borrow of the decoded value (`&str`, `&[T]`).
    pub(crate) borrowed: bool,
    /// The property description (may be empty).
    pub(crate) doc: String,
    pub(crate) rename: Option<LitStr>,
    pub(crate) default: Option<DefaultValue>,
    /// The bounds of `#[arg(range(..), length(..), pattern = "..")]`, checked.
    pub(crate) bounds: Vec<Bound>,
    /// `#[arg(from_model)]`: the model sends it although its type looks like state.
    pub(crate) from_model: bool,
    /// An error already says that the argument is a forgotten `#[depends(KEY)]` (in a `#[tools]`
    /// block, see `methods`): the shared-state probe of its type would say it again.
    pub(crate) state_reported: bool,
}

/// One bound of `#[arg(...)]`, with the span of the option that states it.
pub(crate) struct Bound {
    pub(crate) kind: BoundKind,
    pub(crate) span: Span,
}

/// What a [`Bound`] states.
pub(crate) enum BoundKind {
    /// `range(min = ..)`: the number as written (`-1`, `0.5`) and its value.
    Minimum(Number),
    /// `range(max = ..)`.
    Maximum(Number),
    /// `length(min = ..)` (or `equal`).
    MinLength(u64),
    /// `length(max = ..)` (or `equal`).
    MaxLength(u64),
    /// `pattern = ".."`.
    Pattern(String),
}

/// A number literal of `range(..)`.
#[derive(Clone, Copy)]
pub(crate) enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    fn value(self) -> f64 {
        match self {
            #[allow(clippy::cast_precision_loss)]
            Self::Int(n) => n as f64,
            Self::Float(n) => n,
        }
    }
}

/// Reads a `range` bound: an integer or float literal, optionally negated.
fn number(expr: &Expr, errors: &mut Errors) -> Option<Number> {
    let (negative, lit) = match expr {
        Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => (true, &**expr),
        other => (false, other),
    };
    let parsed = match lit {
        Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => {
            int.base10_parse::<i64>().ok().map(|n| Number::Int(if negative { -n } else { n }))
        }
        Expr::Lit(ExprLit { lit: Lit::Float(float), .. }) => float
            .base10_parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(|n| Number::Float(if negative { -n } else { n })),
        _ => None,
    };
    if parsed.is_none() {
        errors.push(
            expr.span(),
            "a `range` bound is a number literal that fits an `i64` or an `f64`: `range(min = 1, max = 1000)`",
        );
    }
    parsed
}

/// The checked bounds of `options`: number literals, `min` at most `max`, a pattern that is a
/// valid regular expression.
fn bounds_of(options: &ArgOptions, errors: &mut Errors) -> Vec<Bound> {
    let mut bounds = Vec::new();
    if let Some(range) = &options.range {
        let min = range.min.as_ref().and_then(|e| Some((number(e, errors)?, e.span())));
        let max = range.max.as_ref().and_then(|e| Some((number(e, errors)?, e.span())));
        if let (Some((low, _)), Some((high, span))) = (min, max)
            && low.value() > high.value()
        {
            errors.push(span, "`range(..)` has `min` above `max`, so no value fits; swap them or fix one");
        }
        if range.min.is_none() && range.max.is_none() {
            errors.push(Span::call_site(), "`range(..)` needs `min = N`, `max = N` or both");
        }
        bounds.extend(min.map(|(n, span)| Bound { kind: BoundKind::Minimum(n), span }));
        bounds.extend(max.map(|(n, span)| Bound { kind: BoundKind::Maximum(n), span }));
    }
    if let Some(length) = &options.length {
        let read = |lit: &Option<syn::LitInt>, errors: &mut Errors| {
            let lit = lit.as_ref()?;
            match lit.base10_parse::<u64>() {
                Ok(n) => Some((n, lit.span())),
                Err(_) => {
                    errors.push(lit.span(), "a `length` bound is a count: a non-negative integer literal");
                    None
                }
            }
        };
        let (mut min, mut max) = (read(&length.min, errors), read(&length.max, errors));
        if let Some(equal) = read(&length.equal, errors) {
            if min.is_some() || max.is_some() {
                errors.push(
                    equal.1,
                    "`length(equal = N)` is `min` and `max` at once; remove `min` and `max`, or `equal`",
                );
            }
            (min, max) = (Some(equal), Some(equal));
        }
        if let (Some((low, _)), Some((high, span))) = (min, max)
            && low > high
        {
            errors.push(span, "`length(..)` has `min` above `max`, so no value fits; swap them or fix one");
        }
        if length.min.is_none() && length.max.is_none() && length.equal.is_none() {
            errors.push(Span::call_site(), "`length(..)` needs `min = N`, `max = N`, both, or `equal = N`");
        }
        bounds.extend(min.map(|(n, span)| Bound { kind: BoundKind::MinLength(n), span }));
        bounds.extend(max.map(|(n, span)| Bound { kind: BoundKind::MaxLength(n), span }));
    }
    if let Some(pattern) = &options.pattern {
        // The rule decoding's check is held to at registry build, from the same source file.
        match crate::pattern_syntax::pattern_problem(&pattern.value()) {
            None => bounds.push(Bound { kind: BoundKind::Pattern(pattern.value()), span: pattern.span() }),
            Some(problem) => errors.push(pattern.span(), format!("`pattern` {problem}")),
        }
    }
    bounds
}

impl Arg {
    /// The property name the model sees.
    pub(crate) fn wire_name(&self) -> String {
        self.rename.as_ref().map_or_else(|| unraw(&self.ident), LitStr::value)
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

/// The parameter attributes `#[tool]` reads.
const PARAM_ATTRIBUTES: &[&str] = &["depends", "arg", "input"];

impl ToolFn {
    /// Builds the model, stripping parameter attributes from `item` (so that it can always be emitted).
    pub(crate) fn from_item(item: ItemFn, errors: &mut Errors) -> Self {
        Self::build(item, false, errors)
    }

    /// [`ToolFn::from_item`] for a method of a `#[tools]` impl block, which takes `&self`.
    pub(crate) fn from_method(item: ItemFn, errors: &mut Errors) -> Self {
        Self::build(item, true, errors)
    }

    fn build(mut item: ItemFn, method: bool, errors: &mut Errors) -> Self {
        let mut doc = doc_of(&item.attrs);
        let mut section = Vec::new();
        if let Doc::Text(text) = &doc {
            let split = split_arguments(text);
            section = split.arguments;
            doc = Doc::Text(split.description);
        }
        let mut params = Vec::new();
        let mut context_seen = false;
        let mut names: Vec<String> = Vec::new();
        for input in &mut item.sig.inputs {
            let typed = match input {
                FnArg::Receiver(receiver) => {
                    if let Some(message) = receiver_error(receiver, method) {
                        errors.push(receiver.span(), message);
                    } else {
                        params.push(Param::Receiver);
                    }
                    continue;
                }
                FnArg::Typed(typed) => typed,
            };
            let param_doc = doc_text(&typed.attrs);
            let mut marked = Vec::new();
            typed.attrs.retain(|attr| {
                if is_doc(attr) {
                    return false;
                }
                if PARAM_ATTRIBUTES.iter().any(|h| attr.path().is_ident(h)) {
                    marked.push(attr.clone());
                    return false;
                }
                true
            });
            let mut depends: Option<(Expr, Span)> = None;
            let mut arg: Option<(ArgOptions, Span)> = None;
            let mut input_attr: Option<Span> = None;
            for attr in &marked {
                let span = attr.path().span();
                if let Some(kind) = PARAM_ATTRIBUTES.iter().find(|h| attr.path().is_ident(h))
                    && [depends.is_some(), arg.is_some(), input_attr.is_some()].into_iter().any(|seen| seen)
                {
                    let first = if depends.is_some() {
                        "depends"
                    } else if arg.is_some() {
                        "arg"
                    } else {
                        "input"
                    };
                    errors.push(
                        span,
                        format!("a parameter takes one of `#[depends]`, `#[arg]`, `#[input]`; it already has `#[{first}]`, remove `#[{kind}]`"),
                    );
                    continue;
                }
                if attr.path().is_ident("depends") {
                    if let Some(key) = depends_key(attr, errors) {
                        depends = Some((key, span));
                    }
                } else if attr.path().is_ident("arg") {
                    match ArgOptions::parse(&attr.meta) {
                        Ok(options) => arg = Some((options, span)),
                        Err(errs) => errors.extend(errs),
                    }
                } else {
                    if !matches!(attr.meta, Meta::Path(_)) {
                        errors.push(attr.meta.span(), "`#[input]` takes no options: write `#[input]`");
                    }
                    input_attr = Some(span);
                }
            }

            if let Some(context) = context_kind(&typed.ty) {
                for (attribute, span) in [
                    ("depends", depends.as_ref().map(|d| d.1)),
                    ("arg", arg.as_ref().map(|a| a.1)),
                    ("input", input_attr),
                ] {
                    if let Some(span) = span {
                        errors.push(
                            span,
                            format!("the `&ToolContext` parameter cannot be `#[{attribute}]`; remove the attribute"),
                        );
                    }
                }
                match context {
                    ContextKind::Shared => {
                        if context_seen {
                            errors.push(
                                typed.pat.span(),
                                "a `#[tool]` function takes at most one `&ToolContext` parameter; remove this one",
                            );
                        }
                        context_seen = true;
                        params.push(Param::Context);
                    }
                    ContextKind::Mutable => errors.push(
                        typed.ty.span(),
                        "the context is shared by the call: take `&ToolContext`, not `&mut ToolContext`",
                    ),
                    ContextKind::Owned => errors.push(
                        typed.ty.span(),
                        "take the context by reference: `&ToolContext` (it is not a model argument)",
                    ),
                }
                continue;
            }
            let ident = match &*typed.pat {
                Pat::Ident(pat) if pat.subpat.is_none() && pat.by_ref.is_none() => pat.ident.clone(),
                other => {
                    errors.push(
                        other.span(),
                        "`#[tool]` parameters must be plain names (no patterns): bind a name and destructure in the body",
                    );
                    continue;
                }
            };
            if unraw(&ident).starts_with("__") {
                errors.push(
                    ident.span(),
                    format!("parameter names starting with `__` are reserved for the code `#[tool]` generates; rename `{ident}`"),
                );
            }
            let ty = (*typed.ty).clone();
            if let Some(span) = impl_trait_span(&ty) {
                errors.push(span, "`#[tool]` parameters cannot be `impl Trait`; name a concrete type");
                continue;
            }

            if let Some((key, _)) = depends {
                if let Type::Reference(reference) = &ty {
                    errors.push(
                        reference.span(),
                        "a `#[depends]` parameter receives its own clone of the value: take the value type, not a reference",
                    );
                }
                params.push(Param::Depends { ident, ty, key });
                continue;
            }
            if let Some(span) = input_attr {
                if matches!(ty, Type::Reference(_)) {
                    errors.push(
                        ty.span(),
                        "an `#[input]` parameter is decoded into an owned value: take the type, not a reference",
                    );
                }
                if params.iter().any(|p| matches!(p, Param::Input { .. })) {
                    errors.push(span, "a `#[tool]` function takes at most one `#[input]` parameter");
                }
                names.push(String::new());
                params.push(Param::Input { ident, ty });
                continue;
            }

            let Some((decoded, borrowed)) = decoded_type(&ty, errors) else {
                continue;
            };
            let options = arg.map(|a| a.0).unwrap_or_default();
            if !options.from_model.is_present()
                && let Some(kind) = state_type(&ty)
            {
                errors.push(
                    typed.span(),
                    format!(
                        "`{ident}` cannot come from the model: `{kind}` holds state the program hands in; mark the parameter `#[depends(KEY)]` with a `DependencyKey<{}>`, or add `#[arg(from_model)]` if the model does send it",
                        type_text(&ty)
                    ),
                );
                continue;
            }
            if let Some(default) = &options.default
                && is_option(&ty)
            {
                errors.push(
                    default.span,
                    "`#[arg(default)]` has no effect on an `Option`: it is already optional and `None` when absent; remove `default`",
                );
            }
            let section_doc = section.iter().find(|(name, _)| *name == unraw(&ident)).map(|(_, text)| text.clone());
            let doc = match (&options.description, param_doc.is_empty()) {
                (Some(description), _) => description.value(),
                (None, false) => param_doc,
                (None, true) => section_doc.unwrap_or_default(),
            };
            let bounds = bounds_of(&options, errors);
            let arg = Arg {
                ident,
                decoded,
                written: ty,
                borrowed,
                doc,
                rename: options.rename,
                default: options.default,
                bounds,
                from_model: options.from_model.is_present(),
                state_reported: false,
            };
            let wire = arg.wire_name();
            if names.contains(&wire) {
                let span = arg.rename.as_ref().map_or_else(|| arg.ident.span(), LitStr::span);
                errors.push(
                    span,
                    format!("two arguments are named `{wire}`; rename one with `#[arg(rename = \"...\")]`"),
                );
            }
            names.push(wire);
            params.push(Param::Arg(Box::new(arg)));
        }
        let input = params.iter().find_map(|p| match p {
            Param::Input { ident, .. } => Some(ident),
            _ => None,
        });
        if let Some(input) = input {
            for param in &params {
                if let Param::Arg(arg) = param {
                    errors.push(
                        arg.ident.span(),
                        format!("`{input}` is the `#[input]` of this tool, so `{}` cannot be a model argument beside it; make it a field of the input type, or a `#[depends]` parameter", arg.ident),
                    );
                }
            }
        }
        let all_names: Vec<String> = item
            .sig
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
        for (name, _) in &section {
            if !all_names.contains(name) {
                errors.push(
                    item.sig.ident.span(),
                    format!("the `# Arguments` section of the doc comment describes `{name}`, which is not a parameter; fix the name or remove the item"),
                );
            }
        }
        if !item.sig.generics.params.is_empty() || item.sig.generics.where_clause.is_some() {
            errors.push(
                item.sig.generics.span(),
                "`#[tool]` functions cannot be generic: the schema is built from concrete types",
            );
        }
        if let syn::Safety::Unsafe(unsafety) = &item.sig.safety {
            errors.push(
                unsafety.span,
                "`#[tool]` functions cannot be `unsafe`: a model calls them; move the unsafe code into the body",
            );
        }
        if let Some(variadic) = &item.sig.variadic {
            errors.push(variadic.span(), "`#[tool]` functions cannot be variadic");
        }
        let (output, output_span) = match &item.sig.output {
            ReturnType::Default => (Output::Text, item.sig.ident.span()),
            ReturnType::Type(_, ty) => (classify(ty), ty.span()),
        };
        Self { item, params, output, output_span, doc }
    }
}

/// What is wrong with a `self` parameter: anything outside a `#[tools]` impl block, and there
/// anything but `&self`.
fn receiver_error(receiver: &syn::Receiver, method: bool) -> Option<&'static str> {
    if !method {
        return Some(
            "`#[tool]` on a method needs its `impl` block marked `#[tools]` (`#[tools] impl Server { #[tool] async fn add(&self, ..) }`), whose instance a registry takes with `RegistryBuilder::tools_of`; or make it a free function",
        );
    }
    match &receiver.kind {
        syn::ReceiverKind::Reference(_, _, None) => None,
        syn::ReceiverKind::Reference(_, _, Some(_)) => Some(
            "a tool method takes `&self`, not `&mut self`: calls of one instance run at the same time; keep what changes behind a `Mutex` or an atomic in a field",
        ),
        syn::ReceiverKind::Value => Some(
            "a tool method takes `&self`, not `self`: the registry keeps the instance in an `Arc` that every call shares, so no call can take it by value",
        ),
        _ => Some(
            "a tool method takes `&self`: the registry keeps the instance in an `Arc` and lends it to each call; write `&self`",
        ),
    }
}

/// Reads `#[depends(KEY)]`; reports a missing key or more than one.
fn depends_key(attr: &Attribute, errors: &mut Errors) -> Option<Expr> {
    const NEEDS_KEY: &str = "`#[depends]` needs a dependency key: `#[depends(KEY)]` with a `DependencyKey<T>` static";
    let Meta::List(list) = &attr.meta else {
        errors.push(attr.meta.span(), NEEDS_KEY);
        return None;
    };
    match list.parse_args_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated) {
        Ok(keys) if keys.is_empty() => {
            errors.push(list.span(), NEEDS_KEY);
            None
        }
        Ok(keys) if keys.len() > 1 => {
            errors
                .push(keys[1].span(), "`#[depends]` takes one dependency key; give each dependency its own parameter");
            None
        }
        Ok(keys) => keys.into_iter().next(),
        Err(error) => {
            errors.push(error.span(), format!("expected `#[depends(KEY)]` with one dependency key: {error}"));
            None
        }
    }
}

enum ContextKind {
    Shared,
    Mutable,
    Owned,
}

fn is_context_path(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none() && path.path.segments.last().is_some_and(|s| s.ident == "ToolContext"))
}

fn context_kind(ty: &Type) -> Option<ContextKind> {
    match ty {
        Type::Reference(reference) if is_context_path(&reference.elem) => {
            Some(if reference.mutability.is_some() { ContextKind::Mutable } else { ContextKind::Shared })
        }
        Type::Paren(inner) => context_kind(&inner.elem),
        ty if is_context_path(ty) => Some(ContextKind::Owned),
        _ => None,
    }
}

/// The span of an `impl Trait` anywhere in `ty`.
fn impl_trait_span(ty: &Type) -> Option<Span> {
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
fn decoded_type(ty: &Type, errors: &mut Errors) -> Option<(Type, bool)> {
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
fn state_type(ty: &Type) -> Option<&'static str> {
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

fn is_option(ty: &Type) -> bool {
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
