//! `#[tools]` on an `impl` block: its `#[tool]` methods, taking `&self`, become tools of an
//! instance that the registry holds (`RegistryBuilder::tools_of`).

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::{Group, TokenStream, TokenTree};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{ImplItem, ItemFn, ItemImpl, Meta, Type};

use crate::expand::{Method, check_options, checks_beside_errors, private_path, registration};
use crate::model::{Errors, Param, ToolFn, is_plain_data, type_text, unraw};
use crate::options::{ToolOptions, restyle};

/// `#[tools(crate = path)]`.
#[derive(Debug, Default, FromMeta)]
struct ToolsOptions {
    /// The path of the runtime crate; default `::tool_runtime`.
    #[darling(rename = "crate")]
    krate: Option<syn::Path>,
}

const FORM: &str = "`#[tools] impl Server { #[tool] async fn add(&self, ..) }`";

/// The whole expansion: the impl block without the `#[tool]` attributes, always, then the errors,
/// one tool spec per method without errors, the instance key and the type's `ToolMethods`.
pub(crate) fn tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let tools_options = NestedMeta::parse_meta_list(attr)
        .map_err(|e| vec![e])
        .and_then(|items| ToolsOptions::from_list(&items).map_err(|e| restyle(e, "#[tools]", &["crate"])))
        .unwrap_or_else(|errs| {
            errors.extend(errs);
            ToolsOptions::default()
        });
    let mut block: ItemImpl = match syn::parse2(item.clone()) {
        Ok(block) => block,
        Err(_) => {
            let message = format!("`#[tools]` goes on an `impl` block whose methods are tools: {FORM}");
            let error = syn::Error::new(proc_macro2::Span::call_site(), message).to_compile_error();
            return quote! { #error #item };
        }
    };
    if let Some((path, _)) = &block.trait_ {
        errors.push(
            path.span(),
            format!("`#[tools]` goes on an inherent `impl` block, not on an implementation of a trait: {FORM}"),
        );
    }
    if !block.generics.params.is_empty() || block.generics.where_clause.is_some() {
        errors.push(
            block.generics.span(),
            "a `#[tools]` impl block cannot be generic: each tool's schema is built from concrete types",
        );
    }
    let type_name = match &*block.self_ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last().map(|s| unraw(&s.ident)),
        _ => None,
    };
    if type_name.is_none() {
        errors.push(block.self_ty.span(), format!("`#[tools]` goes on the `impl` block of a named type: {FORM}"));
    }
    let Some(type_name) = type_name.filter(|_| errors.is_empty()) else {
        // The block as written, without the attributes that would report more errors.
        for impl_item in &mut block.items {
            if let ImplItem::Fn(function) = impl_item {
                function.attrs.retain(|attribute| !is_tool_attribute(attribute));
            }
        }
        let errors = errors.to_compile_errors();
        return quote! { #block #errors };
    };
    let private = private_path(&ToolOptions { krate: tools_options.krate.clone(), ..ToolOptions::default() });
    let instance_key = format_ident!("__TOOLS_INSTANCE_{}", type_name);
    let self_ty = (*block.self_ty).clone();
    let method = Method { self_ty: &self_ty, type_name: type_name.clone(), instance_key: &instance_key };
    // Each `#[tool]` method, parsed and checked on its own, then registered once every method is
    // known (a forgotten `#[depends]` is found against the whole block).
    let mut parsed = Vec::new();
    let mut found = false;
    for impl_item in &mut block.items {
        let ImplItem::Fn(function) = impl_item else {
            continue;
        };
        let Some(position) = function.attrs.iter().position(is_tool_attribute) else {
            continue;
        };
        found = true;
        let attribute = function.attrs.remove(position);
        // The attribute stays on the emitted method, marked as done, so that the user's import of
        // `tool` is used; `#[tool(__method)]` expands to the method unchanged.
        let path = attribute.path().clone();
        let done: syn::Attribute = syn::parse_quote!(#[#path(__method)]);
        let mut method_errors = Errors::default();
        let tokens = match &attribute.meta {
            Meta::Path(_) => TokenStream::new(),
            Meta::List(list) => list.tokens.clone(),
            Meta::NameValue(value) => {
                method_errors.push(value.span(), "expected `#[tool]` or `#[tool(...)]`");
                TokenStream::new()
            }
        };
        let mut options = ToolOptions::parse(tokens).unwrap_or_else(|errs| {
            method_errors.extend(errs);
            ToolOptions::default()
        });
        if options.krate.is_none() {
            options.krate.clone_from(&tools_options.krate);
        }
        let item = ItemFn {
            attrs: function.attrs.clone(),
            vis: function.vis.clone(),
            modifiers: function.modifiers.clone(),
            sig: function.sig.clone(),
            block: Box::new(function.block.clone()),
        };
        let model = ToolFn::from_method(item, &mut method_errors);
        if function.sig.receiver().is_none() {
            method_errors.push(
                function.sig.ident.span(),
                format!(
                    "a `#[tool]` in a `#[tools]` impl block is a method taking `&self`: {FORM}; move an associated function without `self` out of the block, as a free `#[tool]` function"
                ),
            );
        }
        let name = check_options(&model, &options, &mut method_errors);
        // The method as emitted: its parameters without the attributes `#[tool]` reads.
        function.sig.inputs = model.item.sig.inputs.clone();
        if function.sig.receiver().is_some() {
            function.attrs.insert(position, done);
        }
        parsed.push(ParsedMethod { model, options, name, errors: method_errors });
    }
    let dependencies = block_dependencies(&parsed);
    let mut registrations = Vec::new();
    // The type checks of the arguments of methods with errors (see `checks_beside_errors`).
    let mut method_checks = Vec::new();
    let mut statics = Vec::new();
    for ParsedMethod { mut model, options, name, errors: mut method_errors } in parsed {
        forgotten_depends(&mut model, &dependencies, &mut method_errors);
        replace_self(&mut model, &self_ty);
        if method_errors.is_empty() {
            statics.push(format_ident!("__TOOL_{}_{}", type_name, unraw(&model.item.sig.ident)));
            registrations.push(registration(&model, &options, &name, &private, Some(&method)));
        } else {
            method_checks.push(checks_beside_errors(&model, &private));
            errors.extend(method_errors.into_errors());
        }
    }
    if !found {
        errors.push(
            block.impl_token.span,
            format!("this `#[tools]` impl block has no `#[tool]` method: mark each tool method `#[tool]`: {FORM}"),
        );
    }
    let errors = errors.to_compile_errors();
    let count = statics.len();
    let key_doc = format!("The instance of `{type_name}` whose `#[tool]` methods a registry serves.");
    quote! {
        #block

        #errors

        #(#method_checks)*

        #[doc = #key_doc]
        #[allow(non_upper_case_globals)]
        static #instance_key: #private::DependencyKey<::std::sync::Arc<#self_ty>> =
            #private::DependencyKey::provided(::core::concat!(::core::module_path!(), "::", #type_name));

        #(#registrations)*

        #private::inventory::submit! {
            #private::MethodsRegistration::new(#type_name, ::core::file!(), ::core::line!())
        }

        impl #private::ToolMethods for #self_ty {
            fn tools() -> &'static [&'static #private::ToolSpec] {
                static __TOOLS: [&'static #private::ToolSpec; #count] = [#(&#statics),*];
                &__TOOLS
            }

            fn instance_key() -> &'static #private::DependencyKey<::std::sync::Arc<Self>> {
                &#instance_key
            }
        }
    }
}

/// A `#[tool]` method of the block, parsed: its model, options, tool name and errors so far.
struct ParsedMethod {
    model: ToolFn,
    options: ToolOptions,
    name: String,
    errors: Errors,
}

/// One `#[depends(KEY)]` parameter of a block's methods: its type and key as written, and the
/// method's name.
struct DependencyOf {
    ty: String,
    key: String,
    method: String,
}

/// Every `#[depends(KEY)]` parameter of the block's `#[tool]` methods, in the block's order.
fn block_dependencies(parsed: &[ParsedMethod]) -> Vec<DependencyOf> {
    let mut dependencies = Vec::new();
    for ParsedMethod { model, .. } in parsed {
        for param in &model.params {
            if let Param::Depends { ty, key, .. } = param {
                dependencies.push(DependencyOf {
                    ty: quote!(#ty).to_string(),
                    key: type_text(key),
                    method: unraw(&model.item.sig.ident),
                });
            }
        }
    }
    dependencies
}

/// The error on a model argument whose type is written token for token like the type of a
/// `#[depends(KEY)]` parameter of the block (of another method or the same): a forgotten
/// `#[depends(KEY)]`, named with every key of that type and the first method using each. Only
/// the arguments the shared-state probe would check are compared (not `#[arg(from_model)]`, not
/// plain data such as `String`); the probe of an argument reported here is left out, so the
/// argument gets this one error.
fn forgotten_depends(model: &mut ToolFn, dependencies: &[DependencyOf], errors: &mut Errors) {
    for param in &mut model.params {
        let Param::Arg(arg) = param else {
            continue;
        };
        if arg.from_model || is_plain_data(&arg.decoded) {
            continue;
        }
        let written = &arg.written;
        let ty = quote!(#written).to_string();
        let mut uses: Vec<&DependencyOf> = Vec::new();
        for dependency in dependencies.iter().filter(|d| d.ty == ty) {
            if !uses.iter().any(|u| u.key == dependency.key) {
                uses.push(dependency);
            }
        }
        if uses.is_empty() {
            continue;
        }
        // The keys by method, each method once, in the block's order.
        let mut methods: Vec<(&str, Vec<String>)> = Vec::new();
        for u in &uses {
            let attribute = format!("`#[depends({})]`", u.key);
            match methods.iter_mut().find(|(method, _)| *method == u.method) {
                Some((_, keys)) => keys.push(attribute),
                None => methods.push((&u.method, vec![attribute])),
            }
        }
        let gets = methods
            .iter()
            .enumerate()
            .map(|(i, (method, keys))| {
                let got = if i == 0 { " gets" } else { "" };
                format!("`{method}`{got} with {}", and_list(keys))
            })
            .collect::<Vec<_>>();
        let attributes = uses.iter().map(|u| format!("`#[depends({})]`", u.key)).collect::<Vec<_>>();
        let add = match attributes.as_slice() {
            [one] => one.clone(),
            more => format!("the `#[depends(..)]` it needs ({})", or_list(more)),
        };
        errors.push(
            arg.written.span(),
            format!(
                "`{}` has the type `{}` that {}; add {add} to it, or `#[arg(from_model)]` if the model does send it",
                unraw(&arg.ident),
                type_text(written),
                and_list(&gets)
            ),
        );
        arg.state_reported = true;
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    join_last(items, " and ")
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(items: &[String]) -> String {
    join_last(items, " or ")
}

fn join_last(items: &[String], last: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., end] => format!("{}{last}{end}", init.join(", ")),
    }
}

/// `#[tool]` or a path ending in `tool` (`#[tool_runtime::tool]`).
fn is_tool_attribute(attribute: &syn::Attribute) -> bool {
    attribute.path().segments.last().is_some_and(|segment| segment.ident == "tool")
}

/// Replaces `Self` by the block's type in every type the registration names, which is generated
/// outside the impl block.
fn replace_self(model: &mut ToolFn, self_ty: &Type) {
    let replace = |ty: &mut Type| {
        if let Ok(replaced) = syn::parse2(replace_tokens(quote!(#ty), self_ty)) {
            *ty = replaced;
        }
    };
    for param in &mut model.params {
        match param {
            Param::Arg(arg) => {
                replace(&mut arg.decoded);
                replace(&mut arg.written);
            }
            Param::Input { ty, .. } | Param::Depends { ty, .. } => replace(ty),
            Param::Context | Param::Receiver => {}
        }
    }
    if let syn::ReturnType::Type(_, ty) = &mut model.item.sig.output {
        replace(ty);
    }
}

fn replace_tokens(tokens: TokenStream, self_ty: &Type) -> TokenStream {
    tokens
        .into_iter()
        .flat_map(|token| match token {
            TokenTree::Ident(ident) if ident == "Self" => quote!(#self_ty).into_iter().collect::<Vec<_>>(),
            TokenTree::Group(group) => {
                let mut replaced = Group::new(group.delimiter(), replace_tokens(group.stream(), self_ty));
                replaced.set_span(group.span());
                vec![TokenTree::Group(replaced)]
            }
            other => vec![other],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::tools;

    /// The messages of the `compile_error!`s of an expansion, in order.
    fn errors(expanded: &str) -> Vec<String> {
        expanded
            .split(":: core :: compile_error ! { \"")
            .skip(1)
            .map(|rest| rest.split("\" }").next().unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn a_model_argument_of_the_type_of_a_depends_parameter_of_the_block_is_one_error_naming_the_key() {
        let expanded = tools(
            quote!(),
            quote! {
                impl Server {
                    /// Add.
                    #[tool]
                    fn add(&self, notes: Notes) {}
                    /// List.
                    #[tool]
                    fn list_notes(&self, #[depends(NOTES)] notes: Notes) {}
                }
            },
        )
        .to_string();
        assert_eq!(
            errors(&expanded),
            [
                "`notes` has the type `Notes` that `list_notes` gets with `#[depends(NOTES)]`; add `#[depends(NOTES)]` to it, or `#[arg(from_model)]` if the model does send it"
            ]
        );
        assert!(!expanded.contains(":: model_argument ::"), "{expanded}");
    }

    #[test]
    fn every_key_of_the_type_is_named_with_the_first_method_using_it() {
        let expanded = tools(
            quote!(),
            quote! {
                impl Server {
                    /// Move.
                    #[tool]
                    fn archive(&self, #[depends(NOTES)] a: crate::Notes, #[depends(crate::ARCHIVE)] b: crate::Notes) {}
                    /// Count.
                    #[tool]
                    fn count(&self, #[depends(NOTES)] a: crate::Notes, c: crate::Notes) {}
                }
            },
        )
        .to_string();
        assert_eq!(
            errors(&expanded),
            [
                "`c` has the type `crate::Notes` that `archive` gets with `#[depends(NOTES)]` and `#[depends(crate::ARCHIVE)]`; add the `#[depends(..)]` it needs (`#[depends(NOTES)]` or `#[depends(crate::ARCHIVE)]`) to it, or `#[arg(from_model)]` if the model does send it"
            ]
        );
    }

    #[test]
    fn from_model_arguments_plain_data_and_other_written_types_are_not_compared() {
        let expanded = tools(
            quote!(),
            quote! {
                impl Server {
                    /// Label.
                    #[tool]
                    fn label(&self, #[depends(STYLE)] style: Style, #[depends(PREFIX)] prefix: String) {}
                    /// Styled.
                    #[tool]
                    fn styled(&self, #[arg(from_model)] style: Style, prefix: String, other: crate::Style) {}
                }
            },
        )
        .to_string();
        assert_eq!(errors(&expanded), Vec::<String>::new());
    }
}
