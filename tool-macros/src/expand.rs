//! Code generation for `#[tool]`: parse the options and the function, check them, then generate.
//!
//! `checks` holds the checks of the options and the compile-time checks of the arguments' types;
//! `registration` generates a tool's `ToolSpec` static, one function per part.

mod checks;
mod registration;
#[cfg(test)]
mod tests;

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::ItemFn;

pub(crate) use checks::{check_options, checks_beside_errors};
use registration::handle;
pub(crate) use registration::registration;

use crate::model::{Errors, ToolFn};
use crate::options::ToolOptions;

/// The whole expansion: the user's function, always, plus either the registration or the errors
/// with the arguments' type checks (so that a bound on the wrong type is reported in the same
/// compile) and a stand-in `TOOL` (so that code naming `f::TOOL` reports nothing more).
pub(crate) fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    if attr.to_string() == METHOD_DONE {
        return method_done(item);
    }
    let mut errors = Errors::default();
    let options = ToolOptions::parse(attr).unwrap_or_else(|errs| {
        errors.extend(errs);
        ToolOptions::default()
    });
    let item: ItemFn = match syn::parse2(item.clone()) {
        Ok(item) => item,
        Err(_) => {
            let error =
                syn::Error::new(Span::call_site(), "`#[tool]` can only be applied to a function (`fn` or `async fn`)")
                    .to_compile_error();
            return quote! { #error #item };
        }
    };
    if item.sig.receiver().is_none() && crate::position::in_impl_block(item.sig.fn_token.span) {
        let error = syn::Error::new(item.sig.ident.span(), ASSOCIATED_FN).to_compile_error();
        return quote! { #item #error };
    }
    let model = ToolFn::from_item(item, &mut errors);
    let name = check_options(&model, &options, &mut errors);
    let private = private_path(&options);
    let item = &model.item;
    if !errors.is_empty() {
        let errors = errors.to_compile_errors();
        let has_receiver = matches!(item.sig.inputs.first(), Some(syn::FnArg::Receiver(_)));
        let stand_in = (!has_receiver).then(|| handle(item, &quote!(&#private::UNAVAILABLE), &name, &private));
        let checks = checks_beside_errors(&model, &private);
        return quote! { #item #errors #checks #stand_in };
    }
    let registration = registration(&model, &options, &name, &private, None);
    quote! { #item #registration }
}

/// The option `#[tools]` leaves on a method it has registered (`#[tool(__method)]`), so that the
/// user's `tool` import is used; reserved, like every name starting with `__`.
const METHOD_DONE: &str = "__method";

/// `#[tool(__method)]`: the method as it is (its `#[tools]` block registered it); on anything but
/// a method taking `self`, an error.
fn method_done(item: TokenStream) -> TokenStream {
    match syn::parse2::<syn::ImplItemFn>(item.clone()) {
        Ok(method) if method.sig.receiver().is_some() => item,
        _ => {
            let message = "`__method` is reserved for the methods of a `#[tools]` block; remove it";
            let error = syn::Error::new(Span::call_site(), message).to_compile_error();
            quote! { #error #item }
        }
    }
}

/// The error for `#[tool]` on an associated function: the forms `#[tool]` supports.
const ASSOCIATED_FN: &str = "`#[tool]` cannot register an associated function of an `impl` or `trait` block; it goes on a free function (`#[tool] async fn add(..)`, in a module or a function body) or on a method taking `&self` in an `impl` block marked `#[tools]` (`#[tools] impl Server { #[tool] async fn add(&self, ..) }`): move this function out of the block, or give it `&self` and mark the block `#[tools]`";

/// The path the generated code reaches the runtime through: the `crate = path` option's
/// `__private` module, or `::tool_runtime::__private`.
pub(crate) fn private_path(options: &ToolOptions) -> TokenStream {
    match &options.krate {
        Some(path) => quote!(#path::__private),
        None => quote!(::tool_runtime::__private),
    }
}

/// A `#[tool]` method of a `#[tools]` impl block: the type, and the static of its instance key.
pub(crate) struct Method<'a> {
    pub(crate) self_ty: &'a syn::Type,
    /// The type's name, which prefixes the generated items (`__TOOL_Notes_add`).
    pub(crate) type_name: String,
    pub(crate) instance_key: &'a syn::Ident,
}
