//! One parameter of a `#[tool]` function at a time ([`Params::read`]): its attributes
//! (`#[depends]`, `#[arg]`, `#[input]`, at most one), then what it is: the `&self` of a method, the
//! `&ToolContext`, a `#[depends]` value, the `#[input]` object or a model argument.

use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, FnArg, Ident, LitStr, Meta, Pat, PatType, Type};

use super::arg::bounds_of;
use super::types::{decoded_type, impl_trait_span, is_option, state_type};
use super::{Arg, Errors, Param, type_text, unraw};
use crate::docs::{doc_text, is_doc};
use crate::options::ArgOptions;

/// The parameter attributes `#[tool]` reads.
const PARAM_ATTRIBUTES: &[&str] = &["depends", "arg", "input"];

/// The parameters read so far, with what the rules across parameters need.
pub(super) struct Params<'a> {
    params: Vec<Param>,
    /// The `# Arguments` section of the doc comment: `(name, description)`.
    section: &'a [(String, String)],
    /// Inside a `#[tools]` impl block (`&self` allowed).
    method: bool,
    /// A `&ToolContext` parameter was read.
    context_seen: bool,
    /// The property names taken so far (an `#[input]` takes an empty one).
    names: Vec<String>,
}

/// The attributes of one parameter, with the span of each.
#[derive(Default)]
struct Marks {
    depends: Option<(Expr, Span)>,
    arg: Option<(ArgOptions, Span)>,
    input: Option<Span>,
}

impl<'a> Params<'a> {
    pub(super) fn new(section: &'a [(String, String)], method: bool) -> Self {
        Self { params: Vec::new(), section, method, context_seen: false, names: Vec::new() }
    }

    pub(super) fn into_params(self) -> Vec<Param> {
        self.params
    }

    /// Reads one parameter, stripping the attributes `#[tool]` reads from it.
    pub(super) fn read(&mut self, input: &mut FnArg, errors: &mut Errors) {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                if let Some(message) = receiver_error(receiver, self.method) {
                    errors.push(receiver.span(), message);
                } else {
                    self.params.push(Param::Receiver);
                }
                return;
            }
            FnArg::Typed(typed) => typed,
        };
        let param_doc = doc_text(&typed.attrs);
        let marks = take_marks(typed, errors);
        if let Some(context) = context_kind(&typed.ty) {
            self.context(context, typed, &marks, errors);
            return;
        }
        let ident = match &*typed.pat {
            Pat::Ident(pat) if pat.subpat.is_none() && pat.by_ref.is_none() => pat.ident.clone(),
            other => {
                errors.push(
                    other.span(),
                    "`#[tool]` parameters must be plain names (no patterns): bind a name and destructure in the body",
                );
                return;
            }
        };
        if unraw(&ident).starts_with("__") {
            errors.push(
                ident.span(),
                format!(
                    "parameter names starting with `__` are reserved for the code `#[tool]` generates; rename `{ident}`"
                ),
            );
        }
        let ty = (*typed.ty).clone();
        if let Some(span) = impl_trait_span(&ty) {
            errors.push(span, "`#[tool]` parameters cannot be `impl Trait`; name a concrete type");
            return;
        }
        if let Some((key, _)) = marks.depends {
            if let Type::Reference(reference) = &ty {
                errors.push(
                    reference.span(),
                    "a `#[depends]` parameter receives its own clone of the value: take the value type, not a reference",
                );
            }
            self.params.push(Param::Depends { ident, ty, key });
            return;
        }
        if let Some(span) = marks.input {
            if matches!(ty, Type::Reference(_)) {
                errors.push(
                    ty.span(),
                    "an `#[input]` parameter is decoded into an owned value: take the type, not a reference",
                );
            }
            if self.params.iter().any(|p| matches!(p, Param::Input { .. })) {
                errors.push(span, "a `#[tool]` function takes at most one `#[input]` parameter");
            }
            self.names.push(String::new());
            self.params.push(Param::Input { ident, ty });
            return;
        }
        let options = marks.arg.map(|a| a.0).unwrap_or_default();
        self.model_arg(typed, ident, ty, options, param_doc, errors);
    }

    /// The `&ToolContext` parameter: no attribute, at most one, taken by shared reference.
    fn context(&mut self, context: ContextKind, typed: &PatType, marks: &Marks, errors: &mut Errors) {
        for (attribute, span) in [
            ("depends", marks.depends.as_ref().map(|d| d.1)),
            ("arg", marks.arg.as_ref().map(|a| a.1)),
            ("input", marks.input),
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
                if self.context_seen {
                    errors.push(
                        typed.pat.span(),
                        "a `#[tool]` function takes at most one `&ToolContext` parameter; remove this one",
                    );
                }
                self.context_seen = true;
                self.params.push(Param::Context);
            }
            ContextKind::Mutable => errors.push(
                typed.ty.span(),
                "the context is shared by the call: take `&ToolContext`, not `&mut ToolContext`",
            ),
            ContextKind::Owned => errors
                .push(typed.ty.span(), "take the context by reference: `&ToolContext` (it is not a model argument)"),
        }
    }

    /// A model argument: its decoded type, its description (`#[arg(description)]`, else its doc
    /// comment, else its item in the `# Arguments` section), its bounds, and a property name no
    /// other argument has.
    fn model_arg(
        &mut self,
        typed: &PatType,
        ident: Ident,
        ty: Type,
        options: ArgOptions,
        param_doc: String,
        errors: &mut Errors,
    ) {
        let Some((decoded, borrowed)) = decoded_type(&ty, errors) else {
            return;
        };
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
            return;
        }
        if let Some(default) = &options.default
            && is_option(&ty)
        {
            errors.push(
                default.span,
                "`#[arg(default)]` has no effect on an `Option`: it is already optional and `None` when absent; remove `default`",
            );
        }
        let section_doc = self.section.iter().find(|(name, _)| *name == unraw(&ident)).map(|(_, text)| text.clone());
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
        if self.names.contains(&wire) {
            let span = arg.rename.as_ref().map_or_else(|| arg.ident.span(), LitStr::span);
            errors.push(span, format!("two arguments are named `{wire}`; rename one with `#[arg(rename = \"...\")]`"));
        }
        self.names.push(wire);
        self.params.push(Param::Arg(Box::new(arg)));
    }
}

/// Removes the doc comment and the attributes `#[tool]` reads from a parameter and parses the
/// latter; a second one of them is an error naming the first.
fn take_marks(typed: &mut PatType, errors: &mut Errors) -> Marks {
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
    let mut marks = Marks::default();
    for attr in &marked {
        let span = attr.path().span();
        if let Some(kind) = PARAM_ATTRIBUTES.iter().find(|h| attr.path().is_ident(h))
            && [marks.depends.is_some(), marks.arg.is_some(), marks.input.is_some()].into_iter().any(|seen| seen)
        {
            let first = if marks.depends.is_some() {
                "depends"
            } else if marks.arg.is_some() {
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
                marks.depends = Some((key, span));
            }
        } else if attr.path().is_ident("arg") {
            match ArgOptions::parse(&attr.meta) {
                Ok(options) => marks.arg = Some((options, span)),
                Err(errs) => errors.extend(errs),
            }
        } else {
            if !matches!(attr.meta, Meta::Path(_)) {
                errors.push(attr.meta.span(), "`#[input]` takes no options: write `#[input]`");
            }
            marks.input = Some(span);
        }
    }
    marks
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
