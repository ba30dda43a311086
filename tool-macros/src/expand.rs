//! Code generation for `#[tool]`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{ItemFn, Visibility};

use crate::model::{Errors, Output, Param, ToolFn};
use crate::options::ToolOptions;

/// The safe intersection of the tool-name rules of every provider: `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`.
fn valid_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_')
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The whole expansion: the user's function, always, plus either the registration or the errors.
pub(crate) fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let options = match ToolOptions::parse(attr) {
        Ok(options) => options,
        Err(error) => {
            errors.push_error(error.into());
            ToolOptions::default()
        }
    };
    let item: ItemFn = match syn::parse2(item.clone()) {
        Ok(item) => item,
        Err(_) => {
            let error = syn::Error::new(Span::call_site(), "`#[tool]` can only be applied to a function");
            let error = error.to_compile_error();
            return quote! { #error #item };
        }
    };
    let model = ToolFn::from_item(item, &mut errors);
    let name = match &options.name {
        Some(name) => (name.value(), name.span()),
        None => (model.item.sig.ident.unraw_string(), model.item.sig.ident.span()),
    };
    if !valid_tool_name(&name.0) {
        errors.push(
            name.1,
            format!(
                "tool name `{}` is not accepted by every provider: it must match `^[A-Za-z_][A-Za-z0-9_-]{{0,63}}$`",
                name.0
            ),
        );
    }
    let item = &model.item;
    if !errors.is_empty() {
        let errors = errors.to_compile_errors();
        return quote! { #item #errors };
    }
    let registration = registration(&model, &options, &name.0);
    quote! { #item #registration }
}

trait UnrawString {
    fn unraw_string(&self) -> String;
}

impl UnrawString for syn::Ident {
    fn unraw_string(&self) -> String {
        let s = self.to_string();
        s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
    }
}

fn registration(model: &ToolFn, options: &ToolOptions, name: &str) -> TokenStream {
    let krate: TokenStream = match &options.krate {
        Some(path) => quote!(#path),
        None => quote!(::tool_runtime),
    };
    let private = quote!(#krate::__private);
    let serde_path = format!("{}", quote!(#private::serde)).replace(' ', "");
    let schemars_path = format!("{}", quote!(#private::schemars)).replace(' ', "");

    let fn_ident = &model.item.sig.ident;
    let vis = &model.item.vis;
    let static_ident = format_ident!("__TOOL_{}", fn_ident.unraw_string());
    let description = options.description.as_ref().map(syn::LitStr::value).unwrap_or_else(|| model.doc.clone());
    let sequential = options.sequential.is_present();
    let timeout_ms = match &options.timeout_ms {
        Some(ms) => quote!(::core::option::Option::Some(#ms)),
        None => quote!(::core::option::Option::None),
    };
    let strict = match &options.strict {
        Some(darling::util::Override::Inherit) => quote!(::core::option::Option::Some(true)),
        Some(darling::util::Override::Explicit(value)) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    };
    let tags: Vec<String> = options.tags.iter().map(|p| quote!(#p).to_string().replace(' ', "")).collect();
    let set = match &options.set {
        Some(set) => quote!(::core::option::Option::Some(#set)),
        None => quote!(::core::option::Option::None),
    };

    let mut fields = Vec::new();
    let mut arg_idents = Vec::new();
    let mut resolves = Vec::new();
    let mut call_args = Vec::new();
    for param in &model.params {
        match param {
            Param::Arg { ident, ty, doc } => {
                let doc_attr = (!doc.is_empty()).then(|| quote!(#[doc = #doc]));
                fields.push(quote!(#doc_attr #ident: #ty));
                arg_idents.push(ident);
                call_args.push(quote!(#ident));
            }
            Param::Depends { ident, ty, key } => {
                resolves.push(quote_spanned! {ty_span(ty)=>
                    let #ident: #ty = __ctx.resolve(&#key).await?;
                });
                call_args.push(quote!(#ident));
            }
            Param::Context => call_args.push(quote!(__ctx)),
        }
    }
    let await_call = model.item.sig.asyncness.map(|_| quote!(.await));
    let convert = conversion(&model.output, quote!(__out), &private, model.output_span);
    let handle_vis = child_visibility(vis);
    let handle_doc = format!("The registration of the `{name}` tool, for `RegistryBuilder::tool({fn_ident}::TOOL)`.");
    let module_doc = format!("Generated by `#[tool]`: the registration of the `{name}` tool.");

    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #vis static #static_ident: #private::ToolSpec = {
            #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
            #[serde(crate = #serde_path)]
            #[schemars(crate = #schemars_path)]
            struct __ToolArgs {
                #(#fields,)*
            }

            fn __tool_schema() -> #private::serde_json::Value {
                #private::schema::<__ToolArgs>()
            }

            fn __tool_invoke<'__a>(
                __raw: &'__a str,
                __ctx: &'__a #private::ToolContext,
            ) -> #private::BoxFuture<'__a, ::core::result::Result<#private::ToolResult, #private::ToolError>> {
                ::std::boxed::Box::pin(async move {
                    let __ToolArgs { #(#arg_idents,)* } = #private::decode::<__ToolArgs>(&#static_ident, __raw)?;
                    #(#resolves)*
                    let __out = #fn_ident(#(#call_args),*) #await_call;
                    #convert
                })
            }

            #private::ToolSpec::new(
                #name,
                #description,
                #set,
                ::core::module_path!(),
                #private::ToolMeta::new(false, #sequential, #timeout_ms, #strict, &[#(#tags),*]),
                __tool_schema,
                __tool_invoke,
            )
        };

        #private::inventory::submit! {
            #private::ToolRegistration::new(&#static_ident)
        }

        #[doc = #module_doc]
        #vis mod #fn_ident {
            #[doc = #handle_doc]
            #handle_vis static TOOL: &#private::ToolSpec = &super::#static_ident;
        }
    }
}

fn ty_span(ty: &syn::Type) -> Span {
    syn::spanned::Spanned::span(ty)
}

/// The expression turning `value` (of the return type's kind) into
/// `Result<ToolResult, ToolError>`.
fn conversion(output: &Output, value: TokenStream, private: &TokenStream, span: Span) -> TokenStream {
    match output {
        Output::Text => quote_spanned!(span=> #private::text(#value)),
        Output::Json => quote_spanned!(span=> #private::json(&#value)),
        Output::Result(ok) => {
            let ok = conversion(ok, quote!(__ok), private, span);
            quote! {
                match #value {
                    ::core::result::Result::Ok(__ok) => #ok,
                    ::core::result::Result::Err(__err) => ::core::result::Result::Err(#private::failed(__err)),
                }
            }
        }
    }
}

/// The visibility, seen from inside the generated child module, that matches `vis` seen from the
/// function's own module.
fn child_visibility(vis: &Visibility) -> TokenStream {
    match vis {
        Visibility::Public(_) => quote!(pub),
        Visibility::Inherited => quote!(pub(super)),
        Visibility::Restricted(restricted) => {
            let path = &restricted.path;
            if path.is_ident("crate") {
                quote!(pub(crate))
            } else if path.is_ident("self") {
                quote!(pub(super))
            } else if path.is_ident("super") {
                quote!(pub(in super::super))
            } else if path.segments.first().is_some_and(|s| s.ident == "crate") {
                quote!(#vis)
            } else {
                quote!(pub(super))
            }
        }
    }
}
