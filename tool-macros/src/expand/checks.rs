//! The checks of a tool's options against its function, and the compile-time checks of its
//! arguments' types that the generated code carries.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::docs::Doc;
use crate::model::{Arg, BoundKind, Errors, Output, Param, ToolFn, classify, unraw};
use crate::options::ToolOptions;
use crate::resources::{ConcurrencyOption, ResourceOption};

/// The safe intersection of the tool-name rules of every provider: `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`.
pub(super) fn valid_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_')
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Checks the options against the function; returns the tool name.
pub(crate) fn check_options(model: &ToolFn, options: &ToolOptions, errors: &mut Errors) -> String {
    let sig = &model.item.sig;
    let (name, span) = match &options.name {
        Some(name) => (name.value(), name.span()),
        None => (unraw(&sig.ident), sig.ident.span()),
    };
    if !valid_tool_name(&name) {
        errors.push(
            span,
            format!(
                "tool name `{name}` is not accepted by every provider: it must match `^[A-Za-z_][A-Za-z0-9_-]{{0,63}}$` (a letter or `_`, then at most 63 letters, digits, `_` or `-`); set `#[tool(name = \"...\")]`"
            ),
        );
    }
    // The registration's items (`__tool_invoke`, `__tool_fns`, ...) would shadow the function.
    if unraw(&sig.ident).starts_with("__") {
        errors.push(
            sig.ident.span(),
            format!(
                "function names starting with `__` are reserved for the code `#[tool]` generates; rename `{ident}` (the tool's name can stay: `#[tool(name = \"{ident}\")]`)",
                ident = unraw(&sig.ident)
            ),
        );
    }
    if let Some(asyncness) = &sig.asyncness {
        if options.blocking.is_present() {
            errors.push(
                asyncness.span,
                "`#[tool(blocking)]` runs a sync function on the blocking thread pool: remove `async` (or `blocking`)",
            );
        }
        if options.inline.is_present() {
            errors.push(
                options.inline.span(),
                "`#[tool(inline)]` is for a plain `fn`: an `async fn` always runs on the async worker between its `.await`s; remove `inline`",
            );
        }
    }
    if options.inline.is_present() && options.blocking.is_present() {
        errors.push(
            options.blocking.span(),
            "`inline` and `blocking` contradict each other: a plain `fn` runs on the blocking pool unless it is `inline`; remove one of them",
        );
    }
    if let Some(ms) = &options.timeout_ms
        && !matches!(ms.base10_parse::<u64>(), Ok(1..))
    {
        errors.push(ms.span(), "`timeout_ms` must be a whole number of milliseconds, at least 1");
    }
    // An `inline` function runs to its end on the thread that polls the call: no time limit can
    // stop it, so one would be a promise the registry cannot keep.
    if let Some(ms) = &options.timeout_ms
        && sig.asyncness.is_none()
        && options.inline.is_present()
    {
        errors.push(
            ms.span(),
            "`timeout_ms` cannot stop an `inline` tool: once started it runs to its end on the thread that polls the call; remove `inline` (a plain `fn` then runs on the blocking pool and the call times out) or remove `timeout_ms`",
        );
    }
    resources(model, options.resource.as_ref(), options.concurrency.as_ref(), errors);
    if let (Some(option), Some(Err(message))) = (&options.idempotency_key, idempotency_key_property(model, options)) {
        errors.push(option.span(), message);
    }
    if options.output_schema.is_present() && json_result_type(&sig.output).is_none() {
        errors.push(
            options.output_schema.span(),
            "`#[tool(output_schema)]` needs a result serialised as JSON: return a struct deriving `Serialize` and `JsonSchema` (or a `Result` of one), not text; or remove `output_schema`",
        );
    }
    match &options.description {
        Some(description) if description.value().trim().is_empty() => {
            errors.push(description.span(), "the `description` option is empty; say what the tool does");
        }
        Some(_) => {}
        None if matches!(&model.doc, Doc::Text(text) if text.trim().is_empty()) => errors.push(
            sig.ident.span(),
            "a tool needs a description: models choose tools by it; add a doc comment (`/// What the tool does.`) or `#[tool(description = \"...\")]`",
        ),
        None => {}
    }
    name
}

/// The type a function's result is serialised from as JSON: the return type itself, or the `Ok`
/// type of a `Result` (nested `Result`s included), when [`classify`] makes it JSON; `None` for
/// text-like results and `Result` aliases that do not name their `Ok` type.
pub(super) fn json_result_type(output: &syn::ReturnType) -> Option<&syn::Type> {
    fn ok_type(ty: &syn::Type) -> Option<&syn::Type> {
        match ty {
            syn::Type::Paren(inner) => ok_type(&inner.elem),
            syn::Type::Group(inner) => ok_type(&inner.elem),
            syn::Type::Path(path) if path.qself.is_none() => {
                let last = path.path.segments.last()?;
                if last.ident != "Result" {
                    return (classify(ty) == Output::Json).then_some(ty);
                }
                match &last.arguments {
                    syn::PathArguments::AngleBracketed(args) => args
                        .args
                        .iter()
                        .find_map(|a| match a {
                            syn::GenericArgument::Type(t) => Some(t),
                            _ => None,
                        })
                        .and_then(ok_type),
                    _ => None,
                }
            }
            _ => (classify(ty) == Output::Json).then_some(ty),
        }
    }
    match output {
        syn::ReturnType::Default => None,
        syn::ReturnType::Type(_, ty) => ok_type(ty),
    }
}

/// The compile-time checks of the model arguments' types, as items: for each argument, one check
/// per kind of bound that its type takes it (`const _: () = range_bound::<T>();`, spanned on the
/// option), and that its type is not shared state the program hands in (`Arc`, `Mutex`, ...)
/// seen through a type alias, which the check of the syntax (`state_type`) cannot see: an
/// autoref probe (`ArgumentProbe`) spanned on the type, in a function nothing calls, for each
/// argument without `#[arg(from_model)]` whose type is not named like plain data (and is not
/// reported already as a forgotten `#[depends(KEY)]` of its `#[tools]` block). They name
/// nothing else of the tool, so a tool with errors gets them too ([`checks_beside_errors`]): a
/// bound on the wrong type is reported in the same compile as the macro's own errors.
///
/// With `in_fns` (a tool whose registration is generated), an argument without a default is
/// probed by `__TOOL_FNS` instead (see `argument_fns`), so that the probe's error stands in for
/// the type's `Deserialize` and `JsonSchema` errors rather than coming after them.
pub(super) fn argument_checks(model: &ToolFn, private: &TokenStream, in_fns: bool) -> TokenStream {
    let mut checks = Vec::new();
    let mut probes = Vec::new();
    for param in &model.params {
        let Param::Arg(arg) = param else {
            continue;
        };
        let decoded = &arg.decoded;
        if probed(arg) && !(in_fns && arg.default.is_none()) {
            probes.push(quote_spanned! {arg.written.span()=>
                #private::model_argument::<#decoded, _>((&#private::ArgumentProbe::<#decoded>::NEW).kind());
            });
        }
        let mut checked = Vec::new();
        for bound in &arg.bounds {
            let check = match &bound.kind {
                BoundKind::Minimum(_) | BoundKind::Maximum(_) => "range_bound",
                BoundKind::MinLength(_) | BoundKind::MaxLength(_) => "length_bound",
                BoundKind::Pattern(_) => "pattern_bound",
            };
            if !checked.contains(&check) {
                checked.push(check);
                let check = format_ident!("{check}");
                checks.push(quote_spanned!(bound.span=> const _: () = #private::#check::<#decoded>();));
            }
        }
    }
    if !probes.is_empty() {
        checks.push(quote! {
            #[allow(dead_code)]
            fn __tool_model_arguments() {
                #[allow(unused_imports)]
                use #private::{ProbeModelData as _, ProbeSharedState as _};
                #(#probes)*
            }
        });
    }
    quote!(#(#checks)*)
}

/// [`argument_checks`] for a tool with errors, which gets no spec: in an anonymous constant of
/// their own (nothing when there is none).
pub(crate) fn checks_beside_errors(model: &ToolFn, private: &TokenStream) -> TokenStream {
    let checks = argument_checks(model, private, false);
    if checks.is_empty() {
        return quote!();
    }
    quote!(const _: () = { #checks };)
}

/// The property name of the argument `#[tool(idempotency_key = "..")]` names (by its parameter
/// name or its `rename`); `None` without the option.
///
/// # Errors
/// The name is no model argument of the function: the message lists the ones there are.
pub(crate) fn idempotency_key_property(model: &ToolFn, options: &ToolOptions) -> Option<Result<String, String>> {
    let wanted = options.idempotency_key.as_ref()?.value();
    let args: Vec<_> =
        model.params.iter().filter_map(|p| if let Param::Arg(arg) = p { Some(arg) } else { None }).collect();
    if let Some(arg) = args.iter().find(|arg| unraw(&arg.ident) == wanted || arg.wire_name() == wanted) {
        return Some(Ok(arg.wire_name()));
    }
    let names = args.iter().map(|arg| format!("`{}`", unraw(&arg.ident))).collect::<Vec<_>>().join(", ");
    Some(Err(if names.is_empty() {
        format!(
            "`idempotency_key` names `{wanted}`, but this tool has no argument the model sends (an `#[input]` struct \
             or `#[depends]` parameters only); name a parameter of the function, or remove `idempotency_key`"
        )
    } else {
        format!("`idempotency_key` names `{wanted}`, which is no argument of this tool; name one of {names}")
    }))
}

/// Checks `resource` and `concurrency` against the function: every named argument is a model
/// argument of it (by the name the model sends), a limit is a whole number from 1 to 4294967295,
/// and `resource` on the whole tool does not meet `concurrency = N` (one call at a time, or N).
fn resources(
    model: &ToolFn,
    resource: Option<&ResourceOption>,
    concurrency: Option<&ConcurrencyOption>,
    errors: &mut Errors,
) {
    let arguments: Vec<String> = model
        .params
        .iter()
        .filter_map(|p| match p {
            Param::Arg(arg) => Some(arg.wire_name()),
            _ => None,
        })
        .collect();
    let whole_input = model.params.iter().any(|p| matches!(p, Param::Input { .. }));
    let mut check_argument = |name: &str, span: Span| {
        // An `#[input]` struct's fields are not known to the macro.
        if !whole_input && !arguments.iter().any(|a| a == name) {
            let known = if arguments.is_empty() {
                "the tool has no model argument".to_owned()
            } else {
                format!(
                    "its arguments are {}",
                    arguments.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
                )
            };
            errors.push(span, format!("`{name}` is not an argument of this tool ({known}); name the argument whose value identifies the resource, as the model sends it"));
        }
    };
    if let Some(ResourceOption::Listed(declared)) = resource {
        for item in declared {
            if let Some(argument) = &item.argument {
                check_argument(argument, item.span);
            }
        }
    }
    if let Some(concurrency) = concurrency {
        if let Some(per) = &concurrency.per {
            check_argument(&per.value(), per.span());
        }
        if !matches!(concurrency.limit.base10_parse::<u32>(), Ok(n) if n >= 1) {
            errors.push(
                concurrency.limit.span(),
                "the concurrency limit must be a whole number from 1 to 4294967295: how many calls may run at once",
            );
        }
        if concurrency.per.is_none()
            && let Some(ResourceOption::WholeTool(span)) = resource
        {
            errors.push(
                *span,
                "`resource` on the whole tool already allows one call at a time, which contradicts `concurrency = N`; keep one of them",
            );
        }
    }
}

/// Whether a model argument's type is checked for shared state the program hands in (`Arc`,
/// `Mutex`, ... behind a type alias): not for `#[arg(from_model)]`, a type named like plain data,
/// or one a `#[tools]` block reported already as a forgotten `#[depends(KEY)]`.
pub(super) fn probed(arg: &Arg) -> bool {
    !arg.from_model && !arg.state_reported && !crate::model::is_plain_data(&arg.decoded)
}
