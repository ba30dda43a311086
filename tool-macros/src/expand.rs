//! Code generation for `#[tool]`: parse the options and the function, check them, then generate.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ItemFn;
use syn::spanned::Spanned;

use crate::docs::{Doc, DocPart};
use crate::model::{Arg, BoundKind, Errors, Number, Output, Param, ToolFn, classify, unraw};
use crate::options::ToolOptions;

/// The safe intersection of the tool-name rules of every provider: `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_')
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

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
fn json_result_type(output: &syn::ReturnType) -> Option<&syn::Type> {
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

pub(crate) fn private_path(options: &ToolOptions) -> TokenStream {
    match &options.krate {
        Some(path) => quote!(#path::__private),
        None => quote!(::tool_runtime::__private),
    }
}

/// `f::TOOL`: a braced struct named like the function (the type namespace; the function is in
/// the value namespace) with an associated `TOOL`. Unlike a module, it works for functions
/// declared inside a function body.
fn handle(item: &ItemFn, spec: &TokenStream, name: &str, private: &TokenStream) -> TokenStream {
    let vis = &item.vis;
    let fn_ident = &item.sig.ident;
    let struct_doc = format!("The registration of the `{name}` tool: `{fn_ident}::TOOL`.");
    let const_doc = format!("The `{name}` tool, for `Registry::builder().tool({fn_ident}::TOOL)`.");
    quote! {
        #[doc = #struct_doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #fn_ident {}

        #[allow(dead_code)]
        impl #fn_ident {
            #[doc = #const_doc]
            #vis const TOOL: &'static #private::ToolSpec = #spec;
        }
    }
}

/// A `#[tool]` method of a `#[tools]` impl block: the type, and the static of its instance key.
pub(crate) struct Method<'a> {
    pub(crate) self_ty: &'a syn::Type,
    /// The type's name, which prefixes the generated items (`__TOOL_Notes_add`).
    pub(crate) type_name: String,
    pub(crate) instance_key: &'a syn::Ident,
}

/// The registration of a tool: the hidden `static __TOOL_<fn>: ToolSpec` (for a method,
/// `__TOOL_<Type>_<method>`) with the items its definition needs, the module of its arguments
/// struct when it has one of its own, and for a free function its submission to discovery and
/// its handle (`f::TOOL`). Each part is generated by its own function, in the order it appears.
pub(crate) fn registration(
    model: &ToolFn,
    options: &ToolOptions,
    name: &str,
    private: &TokenStream,
    method: Option<&Method<'_>>,
) -> TokenStream {
    let params = Parameters::new(model, options, private, method);
    let decoding = decoding(&params);
    let arguments_struct = arguments_struct(&params, &decoding);
    let schema = schema(&params, &decoding);
    let argument_fns = argument_fns(&params, &decoding, &arguments_struct, &schema);
    // The compile-time checks of the arguments' types (`const _: () = range_bound::<T>();`, ..).
    let argument_checks = argument_checks(model, private);
    let dependencies = dependencies(&params);
    let invoke = invoke(&params, &arguments_struct.destructure);
    let output_schema = output_schema(&params);
    let spec = spec(&params, name, &schema.decoding_schema, &output_schema, &dependencies);
    let discovery = discovery(&params, name);

    let (vis, static_ident) = (&model.item.vis, &params.static_ident);
    let ArgumentsStruct { module, item, .. } = arguments_struct;
    let (arguments_static, dependencies_static, output_schema_fn) =
        (schema.arguments_static, dependencies.item, output_schema.item);
    quote! {
        #module

        #[doc(hidden)]
        // `deprecated`: the registration calls the function, which may be `#[deprecated]` (a tool
        // kept for old prompts); the user's own calls still warn.
        #[allow(non_upper_case_globals, deprecated)]
        #vis static #static_ident: #private::ToolSpec = {
            #item

            #argument_fns

            #arguments_static

            #dependencies_static

            #argument_checks

            #invoke

            #output_schema_fn

            #spec
        };

        #discovery
    }
}

/// What every part of a registration reads: the tool, the names of its generated items, and how
/// its call runs, decided once.
struct Parameters<'a> {
    model: &'a ToolFn,
    options: &'a ToolOptions,
    /// The runtime's `__private` path (see [`private_path`]).
    private: &'a TokenStream,
    /// The `#[tools]` block of a method; `None` for a free function.
    method: Option<&'a Method<'a>>,
    /// `__TOOL_<fn>`, or `__TOOL_<Type>_<method>`: the spec's static.
    static_ident: syn::Ident,
    /// `__tool_args_<fn>`, or `__tool_args_<Type>_<method>`: the module of the arguments struct.
    module_ident: syn::Ident,
    /// A plain `fn` that runs on the blocking pool: not `inline` (`blocking` says the default).
    blocking: bool,
    /// The call has something to await, so its invoke is `async` (`Invoke::Async`).
    awaits: bool,
    /// An `async fn` the runtime's `finish` awaits, without an `async` block of its own.
    plain_async: bool,
    /// The arguments struct goes into a module of its own beside the function.
    in_module: bool,
}

impl<'a> Parameters<'a> {
    fn new(
        model: &'a ToolFn,
        options: &'a ToolOptions,
        private: &'a TokenStream,
        method: Option<&'a Method<'a>>,
    ) -> Self {
        let fn_ident = &model.item.sig.ident;
        let prefix = method.map_or_else(String::new, |m| format!("{}_", m.type_name));
        let static_ident = format_ident!("__TOOL_{}{}", prefix, unraw(fn_ident));
        let module_ident = format_ident!("__tool_args_{}{}", prefix, unraw(fn_ident));
        // A plain `fn` runs on the blocking pool unless it is `inline` (`blocking` says the default).
        let blocking = model.item.sig.asyncness.is_none() && !options.inline.is_present();
        // A sync function with nothing to await gets no `async` block: no state machine to compile.
        let awaits = model.item.sig.asyncness.is_some()
            || blocking
            || model.params.iter().any(|p| matches!(p, Param::Depends { .. } | Param::Receiver));
        // An `async fn` with nothing else to await (no dependency, no receiver, not blocking) and
        // no borrowed argument: the runtime's one generic `async` body (`finish`) runs a closure that
        // decodes the arguments and calls the function, awaits its future and converts its output,
        // so the tool has no `async` block of its own.
        let plain_async = model.item.sig.asyncness.is_some()
            && !blocking
            && model.params.iter().all(|p| match p {
                Param::Arg(arg) => !arg.borrowed,
                Param::Input { .. } | Param::Context => true,
                Param::Depends { .. } | Param::Receiver => false,
            });
        // When the call has an `async` block of its own, with every argument generic (none has a default, which
        // names the user's type) and a runtime path that resolves from any module, the arguments
        // struct goes into a module of its own beside the function: rustc codegens its `Deserialize`
        // code in a codegen unit of that module (when it is not nested in a function
        // body), which an edit of a tool's body leaves as it is, so an incremental build re-optimises
        // only the tools' own code and their state machines. A codegen unit costs time of its own in
        // a cold build: without an `async` block, the unit an edit re-optimises is small enough, and
        // the struct stays in the function's module (see BENCHMARKS.md, "Compile time"). An `async fn`
        // awaited by the runtime's `finish` has no `async` block here: its struct stays too, which
        // builds 100 such tools cold in 1.15x the time of hand-written dispatch instead of 1.31x, and
        // an edit of one body in 1.32x instead of 1.10x.
        // A runtime path resolves from the module beside the function only when it is absolute
        // (`::tool_runtime`, `crate::..`, `$crate::..`): a name such as `rt` may be a `use` alias of
        // the function's module, which a child module does not see.
        let absolute_runtime = options.krate.as_ref().is_none_or(|path| {
            path.leading_colon.is_some()
                || path.segments.first().is_some_and(|first| first.ident == "crate" || first.ident == "$crate")
        });
        let in_module = awaits
            && !plain_async
            && absolute_runtime
            && model.params.iter().all(|p| match p {
                Param::Arg(arg) => arg.default.is_none(),
                Param::Input { .. } => false,
                Param::Depends { .. } | Param::Context | Param::Receiver => true,
            });
        Self { model, options, private, method, static_ident, module_ident, blocking, awaits, plain_async, in_module }
    }
}

/// The decoding description of the model arguments, in order: the type parameters of the
/// arguments struct and the user's types they stand for, its fields, the functions of the
/// arguments' defaults, the names the invoke binds, and each argument's `ArgumentSchema`; or the
/// one `#[input]` parameter.
struct Decoding<'a> {
    /// `__A0`, `__A1`, ..: one per argument without a default (or `__A0` for an `#[input]` type).
    generics: Vec<syn::Ident>,
    /// The decoded type each of `generics` is instantiated with, spanned on the written type.
    instances: Vec<TokenStream>,
    fields: Vec<TokenStream>,
    /// `__default_<arg>`, `__null_default_<arg>` and `__default_json_<arg>` of each argument
    /// with a default.
    defaults: Vec<TokenStream>,
    /// The names the invoke binds from the decoded struct.
    idents: Vec<&'a syn::Ident>,
    /// The schema of each model argument, in order (`ArgumentSchema`s).
    schemas: Vec<TokenStream>,
    /// The `#[input]` parameter: its name and type.
    input: Option<(&'a syn::Ident, &'a syn::Type)>,
}

/// The [`Decoding`] of a tool's parameters: a generic field for each model argument without a
/// default (its schema function comes from `__tool_fns`, see [`argument_fns`]), a field of its
/// own type for one with a default (whose schema function is taken here, spanned on the type),
/// with the default's functions.
fn decoding<'a>(params: &Parameters<'a>) -> Decoding<'a> {
    let (model, private) = (params.model, params.private);
    let field_vis = if params.in_module { quote!(pub(super)) } else { quote!() };
    let mut decoding = Decoding {
        generics: Vec::new(),
        instances: Vec::new(),
        fields: Vec::new(),
        defaults: Vec::new(),
        idents: Vec::new(),
        schemas: Vec::new(),
        input: None,
    };
    for param in &model.params {
        match param {
            Param::Arg(arg) => {
                let decoded = &arg.decoded;
                let generic = arg.default.is_none().then(|| {
                    let param = format_ident!("__A{}", decoding.generics.len());
                    decoding.generics.push(param.clone());
                    decoding.instances.push(quote_spanned!(arg.written.span()=> #decoded));
                    param
                });
                // A generic argument's schema function comes from the check below; a defaulted
                // one (its type is written in its default's function) is checked here.
                let schema_fn = match &generic {
                    Some(_) => {
                        let index = proc_macro2::Literal::usize_unsuffixed(decoding.generics.len() - 1);
                        quote!(__TOOL_FNS.0[#index])
                    }
                    None => quote_spanned!(arg.written.span()=> #private::argument::<#decoded>()),
                };
                let (wire_name, doc, has_default) = (arg.wire_name(), &arg.doc, arg.default.is_some());
                let with_bounds = bounds(arg, private);
                let with_default = arg.default.as_ref().map(|_| {
                    let ident = unraw(&arg.ident);
                    let (value_fn, json_fn) =
                        (format_ident!("__default_{}", ident), format_ident!("__default_json_{}", ident));
                    decoding.defaults.push(quote! {
                        fn #json_fn() -> ::core::option::Option<#private::serde_json::Value> {
                            #[allow(unused_imports)]
                            use #private::{DefaultJsonNone as _, DefaultJsonSerialize as _};
                            (&#private::DefaultJson(#value_fn as fn() -> #decoded)).json()
                        }
                    });
                    quote!(.with_default(#json_fn))
                });
                decoding.schemas.push(
                    quote!(#private::ArgumentSchema::new(#wire_name, #doc, #has_default, #schema_fn) #with_bounds #with_default),
                );
                let (field, default) = field(arg, generic.as_ref(), &field_vis, private);
                decoding.fields.push(field);
                decoding.defaults.extend(default);
                decoding.idents.push(&arg.ident);
            }
            Param::Input { ident, ty } => decoding.input = Some((ident, ty)),
            Param::Depends { .. } | Param::Context | Param::Receiver => {}
        }
    }
    if let Some((_, ty)) = decoding.input {
        decoding.generics = vec![format_ident!("__A0")];
        decoding.instances = vec![quote_spanned!(ty.span()=> #ty)];
    }
    decoding
}

/// The type the raw arguments decode into, and how the invoke binds it.
struct ArgumentsStruct {
    /// The module holding the struct, beside the function (see [`Parameters::in_module`]); empty
    /// when the struct stays in the spec's block.
    module: TokenStream,
    /// The item in the spec's block: the struct with its defaults' functions, or the `use` of the
    /// module's struct; empty for an `#[input]` type.
    item: TokenStream,
    /// The type with its type parameters (`__ToolArgs<__A0, ..>`, or `__A0`).
    generic: TokenStream,
    /// The type with the user's types (`__ToolArgs<i64, ..>`, or the `#[input]` type).
    concrete: TokenStream,
    /// The runtime's decoder: `decode`, or `decode_input` for an `#[input]` type.
    decode_fn: TokenStream,
    /// The pattern of the invoke's `let` that binds the decoded value.
    destructure: TokenStream,
}

/// The arguments struct `__ToolArgs`, one generic field per model argument, deriving only
/// `Deserialize`: its schema is built at run time from the arguments' own (`ArgumentSchema`), so
/// that no `JsonSchema` impl, generic over the argument types, is compiled per tool. It refuses
/// unknown fields itself, so that for a flat schema the decoder can skip its key-check pass; an
/// `#[input]` type is the user's own, always checked, and needs no struct.
fn arguments_struct(params: &Parameters<'_>, decoding: &Decoding<'_>) -> ArgumentsStruct {
    let private = params.private;
    if let Some((ident, ty)) = decoding.input {
        return ArgumentsStruct {
            module: quote!(),
            item: quote!(),
            generic: quote!(__A0),
            concrete: quote!(#ty),
            decode_fn: quote!(decode_input),
            destructure: quote!(let #ident),
        };
    }
    let serde_path = format!("{}", quote!(#private::serde)).replace(' ', "");
    let Decoding { generics, instances, fields, defaults, idents, .. } = decoding;
    let derives = quote! {
        #[derive(#private::serde::Deserialize)]
        #[serde(crate = #serde_path, deny_unknown_fields)]
    };
    let (module, item) = if params.in_module {
        let module_ident = &params.module_ident;
        (
            quote! {
                #[doc(hidden)]
                #[allow(non_snake_case)]
                mod #module_ident {
                    #derives
                    pub(super) struct __ToolArgs<#(#generics),*> {
                        #(#fields,)*
                    }
                }
            },
            quote!(use #module_ident::__ToolArgs;),
        )
    } else {
        (
            quote!(),
            quote! {
                #derives
                struct __ToolArgs<#(#generics),*> {
                    #(#fields,)*
                }
                #(#defaults)*
            },
        )
    };
    ArgumentsStruct {
        module,
        item,
        generic: quote!(__ToolArgs<#(#generics),*>),
        concrete: quote!(__ToolArgs<#(#instances),*>),
        decode_fn: quote!(decode),
        destructure: quote!(let __ToolArgs { #(#idents,)* }),
    }
}

/// The definition's input schema: the type of the schema functions `__tool_fns` hands out and
/// those functions, the static of the arguments' `ArgumentSchema`s, and the spec's
/// `DecodingSchema` expression. An `#[input]` type's schema is its own `JsonSchema`; the
/// generated struct's is assembled at run time from each argument's (`__TOOL_ARGUMENTS`).
struct Schema {
    fns_type: TokenStream,
    fns: TokenStream,
    arguments_static: TokenStream,
    decoding_schema: TokenStream,
}

/// The [`Schema`] of a tool's arguments.
fn schema(params: &Parameters<'_>, decoding: &Decoding<'_>) -> Schema {
    let private = params.private;
    if decoding.input.is_some() {
        return Schema {
            fns_type: quote!(fn() -> #private::serde_json::Value),
            fns: quote!(#private::schema::<__A0>),
            arguments_static: quote!(),
            decoding_schema: quote!(#private::DecodingSchema::Type(__TOOL_FNS.0)),
        };
    }
    let (generics, arguments) = (&decoding.generics, &decoding.schemas);
    let (count, arguments_count) = (generics.len(), arguments.len());
    Schema {
        fns_type: quote!([#private::ArgumentSchemaFn; #count]),
        fns: quote!([#(#private::argument_schema::<#generics>),*]),
        arguments_static: quote! {
            static __TOOL_ARGUMENTS: [#private::ArgumentSchema; #arguments_count] = [#(#arguments),*];
        },
        decoding_schema: quote!(#private::DecodingSchema::Arguments(&__TOOL_ARGUMENTS)),
    }
}

/// `__tool_fns` and `__TOOL_FNS`, the one place the argument types are checked: `__tool_fns` is
/// generic over the argument types, bounded by `ArgumentDecode` and `ArgumentSchemaOf`, and hands
/// out the runtime's schema functions of those types and its decoder of the arguments struct, as
/// function pointers; `__TOOL_FNS` instantiates it with the user's types, spanned on them. A type
/// that is not `Deserialize + JsonSchema` is reported there, once per missing trait, with that
/// trait's message, and the derive never sees it.
fn argument_fns(
    params: &Parameters<'_>,
    decoding: &Decoding<'_>,
    arguments_struct: &ArgumentsStruct,
    schema: &Schema,
) -> TokenStream {
    let private = params.private;
    let (generics, instances) = (&decoding.generics, &decoding.instances);
    let ArgumentsStruct { generic, concrete, decode_fn, .. } = arguments_struct;
    let Schema { fns_type, fns, .. } = schema;
    quote! {
        const fn __tool_fns<#(#generics: #private::ArgumentDecode + #private::ArgumentSchemaOf),*>() -> (
            #fns_type,
            #private::DecodeFn<#generic>,
        ) {
            (#fns, #private::#decode_fn::<#generic>)
        }

        const __TOOL_FNS: (
            #fns_type,
            #private::DecodeFn<#concrete>,
        ) = __tool_fns::<#(#instances),*>();
    }
}

/// An item in the spec's block and the builder call that attaches it to the spec (both empty
/// when the tool has nothing of the kind).
struct SpecPart {
    item: TokenStream,
    builder: TokenStream,
}

/// The dependency list: `__TOOL_DEPENDENCIES`, what each `#[depends(KEY)]` (and a method's
/// instance key) records of its key, in parameter order, for the registry's check of provided
/// keys, and `.with_dependencies(..)`.
fn dependencies(params: &Parameters<'_>) -> SpecPart {
    let private = params.private;
    let mut key_uses = Vec::new();
    for param in &params.model.params {
        match param {
            Param::Depends { key, .. } => key_uses.push(quote!(|| #private::key_use(&#key))),
            Param::Receiver => {
                // Checked by `#[tools]`: only methods have a receiver.
                if let Some(method) = params.method {
                    let key = method.instance_key;
                    key_uses.push(quote!(|| #private::key_use(&#key)));
                }
            }
            Param::Arg(_) | Param::Input { .. } | Param::Context => {}
        }
    }
    if key_uses.is_empty() {
        return SpecPart { item: quote!(), builder: quote!() };
    }
    let count = key_uses.len();
    SpecPart {
        item: quote! {
            static __TOOL_DEPENDENCIES: [fn() -> #private::DependencyUse; #count] = [#(#key_uses),*];
        },
        builder: quote!(.with_dependencies(&__TOOL_DEPENDENCIES)),
    }
}

/// What the invoke passes to the user's function, one expression per parameter in order, and the
/// statements before the call that resolve the `#[depends]` values and a method's instance.
fn call_arguments(params: &Parameters<'_>) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let private = params.private;
    let mut resolves = Vec::new();
    let mut call_args = Vec::new();
    for param in &params.model.params {
        match param {
            Param::Arg(arg) => {
                let ident = &arg.ident;
                call_args.push(if arg.borrowed { quote!(&#ident) } else { quote!(#ident) });
            }
            Param::Input { ident, .. } => call_args.push(quote!(#ident)),
            Param::Depends { ident, ty, key } => {
                let resolve = quote_spanned! {ty.span()=>
                    #private::resolve::<#ty, _>(__ctx, &#key)
                };
                resolves.push(quote!(let #ident: #ty = #resolve.await?;));
                call_args.push(quote!(#ident));
            }
            Param::Context => call_args.push(quote!(__ctx)),
            Param::Receiver => {
                // Checked by `#[tools]`: only methods have a receiver.
                if let Some(method) = params.method {
                    let (self_ty, key) = (method.self_ty, method.instance_key);
                    resolves.push(quote! {
                        let __self: ::std::sync::Arc<#self_ty> = #private::resolve::<::std::sync::Arc<#self_ty>, _>(__ctx, &#key).await?;
                    });
                    call_args.push(quote!(&*__self));
                }
            }
        }
    }
    (resolves, call_args)
}

/// The invoke function `__tool_invoke(__raw, __ctx)`: decodes the raw arguments (`destructure`
/// binds them), resolves the dependencies, calls the user's function (see [`call`]) and converts
/// its result (see [`conversion`]). An `async fn` awaited by the runtime's `finish` gets a
/// closure for it; a call with something else to await an `async` block, boxed; a sync function
/// with nothing to await a sync invoke (`Invoke::Sync`): no future, no box in the generated code;
/// the registry calls it at once (`Tool::call_now`) or, elsewhere, through `ToolSpec::call`,
/// whose future (one piece of runtime code for every such tool) runs it on its first poll.
fn invoke(params: &Parameters<'_>, destructure: &TokenStream) -> TokenStream {
    let Parameters { model, options, private, static_ident, blocking, .. } = params;
    let (resolves, call_args) = call_arguments(params);
    let out = quote_spanned!(model.output_span=> __out);
    let convert = conversion(&model.output, &out, private, model.output_span, options.output_schema.is_present());
    let call = call(model, *blocking, static_ident, &call_args, &convert, private);
    // A blocking call converts its result on the blocking thread (see `call`).
    let convert = if *blocking { quote!(__out) } else { convert };
    let fn_ident = &model.item.sig.ident;
    let fn_path = match params.method {
        Some(method) => {
            let self_ty = method.self_ty;
            quote!(<#self_ty>::#fn_ident)
        }
        None => quote!(#fn_ident),
    };
    let body = quote! {
        #destructure = (__TOOL_FNS.1)(&#static_ident, __raw)?;
        #(#resolves)*
        let __out = #call;
        #convert
    };
    let (signature, body) = if params.plain_async {
        let call_now = quote!(__tool_fn(#(#call_args),*));
        (
            quote! {
                fn __tool_invoke<'__a>(
                    __raw: &'__a str,
                    __ctx: &'__a #private::ToolContext,
                ) -> #private::BoxFuture<'__a, ::core::result::Result<#private::ToolResult, #private::ToolError>>
            },
            quote! {
                #private::finish(
                    move || {
                        #destructure = (__TOOL_FNS.1)(&#static_ident, __raw)?;
                        ::core::result::Result::Ok(#call_now)
                    },
                    |__out| #convert,
                )
            },
        )
    } else if params.awaits {
        (
            quote! {
                fn __tool_invoke<'__a>(
                    __raw: &'__a str,
                    __ctx: &'__a #private::ToolContext,
                ) -> #private::BoxFuture<'__a, ::core::result::Result<#private::ToolResult, #private::ToolError>>
            },
            quote!(::std::boxed::Box::pin(async move { #body })),
        )
    } else {
        (
            quote! {
                fn __tool_invoke(
                    __raw: &str,
                    __ctx: &#private::ToolContext,
                ) -> ::core::result::Result<#private::ToolResult, #private::ToolError>
            },
            body,
        )
    };
    quote! {
        #[allow(clippy::used_underscore_binding, clippy::unit_arg, clippy::let_unit_value)]
        #signature {
            // Taken before the parameters are bound: a parameter may share the function's name.
            let __tool_fn = #fn_path;
            #body
        }
    }
}

/// With `#[tool(output_schema)]`: `__tool_output_schema`, the JSON Schema of the result type,
/// spanned on that type (a type that is not `Serialize + JsonSchema` is reported there), and
/// `.with_output_schema(..)`.
fn output_schema(params: &Parameters<'_>) -> SpecPart {
    let private = params.private;
    match json_result_type(&params.model.item.sig.output) {
        Some(ty) if params.options.output_schema.is_present() => SpecPart {
            item: quote_spanned! {ty.span()=>
                fn __tool_output_schema() -> #private::serde_json::Value {
                    #private::output_schema::<#ty>()
                }
            },
            builder: quote!(.with_output_schema(__tool_output_schema)),
        },
        _ => SpecPart { item: quote!(), builder: quote!() },
    }
}

/// The spec expression, the static's value: `ToolSpec::decoded(..)` with the name, description,
/// set, module, `ToolMeta` (blocking, sequential, time limit, strict, tags), decoding schema and
/// invoke, then its builder chain: where it is defined, the output schema, `deferred`, the
/// dependency list, and `context_free` for a function that takes neither the context nor a
/// dependency.
fn spec(
    params: &Parameters<'_>,
    name: &str,
    decoding_schema: &TokenStream,
    output_schema: &SpecPart,
    dependencies: &SpecPart,
) -> TokenStream {
    let Parameters { model, options, private, blocking, .. } = params;
    let description = description(model, options, private);
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
    let invoke_kind = if params.awaits { quote!(Async) } else { quote!(Sync) };
    // The line of the `#[tool]` attribute; of a method's name (the attribute's span would be the
    // `#[tools]` block's).
    let line = match params.method {
        Some(_) => quote_spanned!(model.item.sig.ident.span()=> ::core::line!()),
        None => quote!(::core::line!()),
    };
    let deferred = if options.defer.is_present() { quote!(.deferred()) } else { quote!() };
    // A function that takes neither the context nor a dependency never reads the context: the
    // registry then skips deriving a per-call one.
    let context_free =
        model.params.iter().all(|p| matches!(p, Param::Arg(_) | Param::Input { .. })).then(|| quote!(.context_free()));
    let (with_output_schema, with_dependencies) = (&output_schema.builder, &dependencies.builder);
    quote! {
        #private::ToolSpec::decoded(
            #name,
            #description,
            #set,
            ::core::module_path!(),
            #private::ToolMeta::new(#blocking, #sequential, #timeout_ms, #strict, &[#(#tags),*]),
            #decoding_schema,
            #private::Invoke::#invoke_kind(__tool_invoke),
        )
        .defined_at(::core::file!(), #line)
        #with_output_schema
        #deferred
        #with_dependencies
        #context_free
    }
}

/// For a free function, its `inventory` submission for `Registry::discover()` and its handle
/// (`f::TOOL`, see [`handle`]). A method's tool is reached through its type's `ToolMethods`, and
/// found only with an instance: no handle, no submission to discovery.
fn discovery(params: &Parameters<'_>, name: &str) -> TokenStream {
    if params.method.is_some() {
        return quote!();
    }
    let (private, static_ident) = (params.private, &params.static_ident);
    let handle = handle(&params.model.item, &quote!(&#static_ident), name, private);
    quote! {
        #private::inventory::submit! {
            #private::ToolRegistration::new(&#static_ident)
        }

        #handle
    }
}

/// The call of the user's function: awaited when `async`, on the blocking pool (with its own
/// clone of the context) when `blocking`. A blocking call gives the converted result (`convert`
/// of `__out`, run in the closure, where a result that borrows an argument, `-> &str`, is alive).
fn call(
    model: &ToolFn,
    blocking: bool,
    static_ident: &syn::Ident,
    call_args: &[TokenStream],
    convert: &TokenStream,
    private: &TokenStream,
) -> TokenStream {
    if blocking {
        quote! {
            {
                let __ctx = ::core::clone::Clone::clone(__ctx);
                #private::run_blocking(&#static_ident, move || {
                    let __ctx = &__ctx;
                    let __out = __tool_fn(#(#call_args),*);
                    #convert
                })
                .await?
            }
        }
    } else {
        let await_call = model.item.sig.asyncness.map(|_| quote!(.await));
        quote!(__tool_fn(#(#call_args),*) #await_call)
    }
}

/// One field of the generated arguments struct (of the type `generic` or, for an argument with a
/// default, its own type), and the function giving its default value when it has
/// `#[arg(default = expr)]`.
fn field(
    arg: &Arg,
    generic: Option<&syn::Ident>,
    vis: &TokenStream,
    private: &TokenStream,
) -> (TokenStream, Option<TokenStream>) {
    let ident = &arg.ident;
    let decoded = &arg.decoded;
    let ty = match generic {
        Some(generic) => quote!(#generic),
        None => quote!(#decoded),
    };
    let rename = arg.rename.as_ref().map(|rename| quote!(#[serde(rename = #rename)]));
    // `null` reads as the default, as an absent argument does (decoding drops a `null` for an
    // argument that is not required; this keeps the same for the one pass over the text).
    let null_fn = format_ident!("__null_default_{}", unraw(ident));
    let null_fn_name = null_fn.to_string();
    let null_default = |fallback: TokenStream| {
        quote! {
            fn #null_fn<'de, __D: #private::serde::Deserializer<'de>>(
                __deserializer: __D,
            ) -> ::core::result::Result<#ty, __D::Error> {
                ::core::result::Result::Ok(
                    <::core::option::Option<#ty> as #private::serde::Deserialize>::deserialize(__deserializer)?
                        .#fallback,
                )
            }
        }
    };
    let (default, default_fn) = match &arg.default {
        None => (None, None),
        Some(default) => {
            let fn_ident = format_ident!("__default_{}", unraw(ident));
            let fn_name = fn_ident.to_string();
            let value = match &default.expr {
                // The type's `Default`, through a trait whose message says what to do, spanned on
                // the type: one error there when it has none.
                None => quote_spanned!(decoded.span()=> <#decoded as #private::ArgumentDefault>::argument_default()),
                // A string literal converts into the argument's type (`String`, `PathBuf`, ...).
                Some(expr @ syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(_), .. })) => {
                    quote_spanned!(expr.span()=> ::core::convert::From::from(#expr))
                }
                Some(expr) => quote!(#expr),
            };
            let null_default = null_default(quote!(unwrap_or_else(#fn_ident)));
            (
                Some(quote!(#[serde(default = #fn_name, deserialize_with = #null_fn_name)])),
                Some(quote! {
                    fn #fn_ident() -> #ty {
                        #value
                    }
                    #null_default
                }),
            )
        }
    };
    (quote!(#rename #default #vis #ident: #ty), default_fn)
}

/// `.with_bounds(&[..])` for an argument with bounds (nothing for one without).
fn bounds(arg: &Arg, private: &TokenStream) -> TokenStream {
    if arg.bounds.is_empty() {
        return quote!();
    }
    let number = |n: Number| match n {
        Number::Int(n) => quote!(#private::BoundNumber::Int(#n)),
        Number::Float(n) => quote!(#private::BoundNumber::Float(#n)),
    };
    let items = arg.bounds.iter().map(|bound| match &bound.kind {
        BoundKind::Minimum(n) => {
            let n = number(*n);
            quote!(#private::ArgumentBound::Minimum(#n))
        }
        BoundKind::Maximum(n) => {
            let n = number(*n);
            quote!(#private::ArgumentBound::Maximum(#n))
        }
        BoundKind::MinLength(n) => quote!(#private::ArgumentBound::MinLength(#n)),
        BoundKind::MaxLength(n) => quote!(#private::ArgumentBound::MaxLength(#n)),
        BoundKind::Pattern(p) => quote!(#private::ArgumentBound::Pattern(#p)),
    });
    quote!(.with_bounds(&[#(#items),*]))
}

/// The compile-time checks of the model arguments' types, as items: for each argument, one check
/// per kind of bound that its type takes it (`const _: () = range_bound::<T>();`, spanned on the
/// option), and that its type is not shared state the program hands in (`Arc`, `Mutex`, ...)
/// seen through a type alias, which the check of the syntax (`state_type`) cannot see: an
/// autoref probe (`ArgumentProbe`) spanned on the type, in a function nothing calls, for each
/// argument without `#[arg(from_model)]` whose type is not named like plain data. They name
/// nothing else of the tool, so a tool with errors gets them too ([`checks_beside_errors`]): a
/// bound on the wrong type is reported in the same compile as the macro's own errors.
pub(crate) fn argument_checks(model: &ToolFn, private: &TokenStream) -> TokenStream {
    let mut checks = Vec::new();
    let mut probes = Vec::new();
    for param in &model.params {
        let Param::Arg(arg) = param else {
            continue;
        };
        let decoded = &arg.decoded;
        if !arg.from_model && !crate::model::is_plain_data(decoded) {
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
    let checks = argument_checks(model, private);
    if checks.is_empty() {
        return quote!();
    }
    quote!(const _: () = { #checks };)
}

/// The description expression: the option, the doc text, or `concat!` of the doc's pieces when
/// one of them is an expression such as `include_str!(..)`.
fn description(model: &ToolFn, options: &ToolOptions, private: &TokenStream) -> TokenStream {
    if let Some(description) = &options.description {
        let text = description.value();
        return quote!(#text);
    }
    match &model.doc {
        Doc::Text(text) => quote!(#text),
        Doc::Parts(parts) => {
            let mut pieces = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    pieces.push(quote!("\n"));
                }
                pieces.push(match part {
                    DocPart::Text(text) => quote!(#text),
                    DocPart::Expr(expr) => quote!(#expr),
                });
            }
            quote!(#private::trim_doc(::core::concat!(#(#pieces),*)))
        }
    }
}

/// The expression turning `value` (of the return type's kind) into
/// `Result<ToolResult, ToolError>`, spanned on the return type so that a type error points there.
/// A JSON result is serialised straight to text, or kept as a value too when the tool declares
/// an output schema (`structured`).
fn conversion(
    output: &Output,
    value: &TokenStream,
    private: &TokenStream,
    span: Span,
    structured: bool,
) -> TokenStream {
    match output {
        Output::Text => quote_spanned!(span=> #private::text(#value)),
        Output::Json if structured => quote_spanned!(span=> #private::structured(&#value)),
        Output::Json => quote_spanned!(span=> #private::json(&#value)),
        Output::Result(ok) => {
            let ok = conversion(ok, &quote_spanned!(span=> __ok), private, span, structured);
            let failed = quote_spanned!(span=> #private::failed(__err));
            quote! {
                match #value {
                    ::core::result::Result::Ok(__ok) => #ok,
                    ::core::result::Result::Err(__err) => ::core::result::Result::Err(#failed),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::ToTokens;

    use super::*;

    fn assert_tokens(actual: &TokenStream, expected: &TokenStream) {
        assert_eq!(actual.to_string(), expected.to_string());
    }

    #[test]
    fn a_deferred_tool_marks_its_spec_deferred_and_another_does_not() {
        let item = quote! {
            /// Hi.
            fn hi() -> String { String::new() }
        };
        let deferred = tool(quote!(defer), item.clone()).to_string();
        let plain = tool(quote!(), item).to_string();
        assert_eq!((deferred.matches(". deferred ()").count(), plain.matches(". deferred ()").count()), (1, 0));
    }

    #[test]
    fn a_tool_expands_to_its_function_its_spec_its_submission_and_its_handle() {
        let actual = tool(
            quote!(set = "demo", inline),
            quote! {
                /// Add.
                pub fn add(/// First.
                    a: i64, #[depends(K)] k: u8, ctx: &ToolContext) -> String { a.to_string() }
            },
        );
        let expected = quote! {
            /// Add.
            pub fn add(a: i64, k: u8, ctx: &ToolContext) -> String { a.to_string() }

            #[doc(hidden)]
            #[allow(non_snake_case)]
            mod __tool_args_add {
                #[derive(::tool_runtime::__private::serde::Deserialize)]
                #[serde(crate = "::tool_runtime::__private::serde", deny_unknown_fields)]
                pub(super) struct __ToolArgs<__A0> {
                    pub(super) a: __A0,
                }
            }

            #[doc(hidden)]
            #[allow(non_upper_case_globals, deprecated)]
            pub static __TOOL_add: ::tool_runtime::__private::ToolSpec = {
                use __tool_args_add::__ToolArgs;

                const fn __tool_fns<__A0: ::tool_runtime::__private::ArgumentDecode + ::tool_runtime::__private::ArgumentSchemaOf>() -> (
                    [::tool_runtime::__private::ArgumentSchemaFn; 1usize],
                    ::tool_runtime::__private::DecodeFn<__ToolArgs<__A0> >,
                ) {
                    ([::tool_runtime::__private::argument_schema::<__A0>], ::tool_runtime::__private::decode::<__ToolArgs<__A0> >)
                }

                const __TOOL_FNS: (
                    [::tool_runtime::__private::ArgumentSchemaFn; 1usize],
                    ::tool_runtime::__private::DecodeFn<__ToolArgs<i64> >,
                ) = __tool_fns::<i64>();

                static __TOOL_ARGUMENTS: [::tool_runtime::__private::ArgumentSchema; 1usize] = [
                    ::tool_runtime::__private::ArgumentSchema::new("a", "First.", false, __TOOL_FNS.0[0])
                ];

                static __TOOL_DEPENDENCIES: [fn() -> ::tool_runtime::__private::DependencyUse; 1usize] = [
                    || ::tool_runtime::__private::key_use(&K)
                ];

                #[allow(clippy::used_underscore_binding, clippy::unit_arg, clippy::let_unit_value)]
                fn __tool_invoke<'__a>(
                    __raw: &'__a str,
                    __ctx: &'__a ::tool_runtime::__private::ToolContext,
                ) -> ::tool_runtime::__private::BoxFuture<'__a, ::core::result::Result<::tool_runtime::__private::ToolResult, ::tool_runtime::__private::ToolError>> {
                    let __tool_fn = add;
                    ::std::boxed::Box::pin(async move {
                        let __ToolArgs { a, } = (__TOOL_FNS.1)(&__TOOL_add, __raw)?;
                        let k: u8 = ::tool_runtime::__private::resolve::<u8, _>(__ctx, &K).await?;
                        let __out = __tool_fn(a, k, __ctx);
                        ::tool_runtime::__private::text(__out)
                    })
                }

                ::tool_runtime::__private::ToolSpec::decoded(
                    "add",
                    "Add.",
                    ::core::option::Option::Some("demo"),
                    ::core::module_path!(),
                    ::tool_runtime::__private::ToolMeta::new(false, false, ::core::option::Option::None, ::core::option::Option::None, &[]),
                    ::tool_runtime::__private::DecodingSchema::Arguments(&__TOOL_ARGUMENTS),
                    ::tool_runtime::__private::Invoke::Async(__tool_invoke),
                )
                .defined_at(::core::file!(), ::core::line!())
                .with_dependencies(&__TOOL_DEPENDENCIES)
            };

            ::tool_runtime::__private::inventory::submit! {
                ::tool_runtime::__private::ToolRegistration::new(&__TOOL_add)
            }

            #[doc = "The registration of the `add` tool: `add::TOOL`."]
            #[allow(non_camel_case_types, dead_code)]
            pub struct add {}

            #[allow(dead_code)]
            impl add {
                #[doc = "The `add` tool, for `Registry::builder().tool(add::TOOL)`."]
                pub const TOOL: &'static ::tool_runtime::__private::ToolSpec = &__TOOL_add;
            }
        };
        assert_tokens(&actual, &expected);
    }

    #[test]
    fn an_inline_sync_tool_with_nothing_to_await_gets_a_sync_invoke_beside_its_arguments_struct() {
        let actual = tool(
            quote!(inline),
            quote! {
                /// Echo.
                fn echo(text: String) -> String { text }
            },
        )
        .to_string();
        let invoke = quote! {
            fn __tool_invoke(
                __raw: &str,
                __ctx: &::tool_runtime::__private::ToolContext,
            ) -> ::core::result::Result<::tool_runtime::__private::ToolResult, ::tool_runtime::__private::ToolError> {
                let __tool_fn = echo;
                let __ToolArgs { text, } = (__TOOL_FNS.1)(&__TOOL_echo, __raw)?;
                let __out = __tool_fn(text);
                ::tool_runtime::__private::text(__out)
            }
        };
        assert!(actual.contains(&invoke.to_string()), "{actual}");
        assert!(
            actual.contains(&quote!(::tool_runtime::__private::Invoke::Sync(__tool_invoke)).to_string()),
            "{actual}"
        );
        assert!(!actual.contains("async"), "{actual}");
        assert!(!actual.contains("Box"), "{actual}");
        assert!(!actual.contains("mod __tool_args_echo"), "{actual}");
    }

    #[test]
    fn a_plain_fn_runs_on_the_blocking_pool_unless_it_is_inline_and_blocking_says_the_default() {
        let item = quote! {
            /// Echo.
            fn echo(text: String) -> String { text }
        };
        let [default, blocking, inline] =
            [quote!(), quote!(blocking), quote!(inline)].map(|attr| tool(attr, item.clone()).to_string());
        assert_eq!(default, blocking);
        assert!(default.contains(":: run_blocking (& __TOOL_echo , move ||"), "{default}");
        assert!(default.contains(":: Invoke :: Async (__tool_invoke)"), "{default}");
        assert!(default.contains(":: ToolMeta :: new (true ,"), "{default}");
        assert!(!inline.contains("run_blocking"), "{inline}");
        assert!(inline.contains(":: Invoke :: Sync (__tool_invoke)"), "{inline}");
        assert!(inline.contains(":: ToolMeta :: new (false ,"), "{inline}");
    }

    fn model(item: TokenStream) -> ToolFn {
        let mut errors = Errors::default();
        let model = ToolFn::from_item(syn::parse2(item).unwrap(), &mut errors);
        assert!(errors.is_empty());
        model
    }

    #[test]
    fn a_blocking_tool_calls_its_function_on_the_blocking_pool_with_a_cloned_context() {
        let model = model(quote!(
            fn hash(ctx: &ToolContext) -> String {
                String::new()
            }
        ));
        let actual = call(
            &model,
            true,
            &format_ident!("__TOOL_hash"),
            &[quote!(__ctx)],
            &quote!(::p::text(__out)),
            &quote!(::p),
        );
        let expected = quote! {
            {
                let __ctx = ::core::clone::Clone::clone(__ctx);
                ::p::run_blocking(&__TOOL_hash, move || {
                    let __ctx = &__ctx;
                    let __out = __tool_fn(__ctx);
                    ::p::text(__out)
                })
                .await?
            }
        };
        assert_tokens(&actual, &expected);
    }

    #[test]
    fn an_async_fn_with_nothing_else_to_await_is_awaited_by_the_runtime_without_an_async_block_of_its_own() {
        let plain = tool(
            quote!(),
            quote!(
                /// F.
                async fn f(a: u8) -> String {
                    a.to_string()
                }
            ),
        )
        .to_string();
        assert!(plain.contains(":: core :: result :: Result :: Ok (__tool_fn (a))"), "{plain}");
        assert!(plain.contains(":: finish (move || {"), "{plain}");
        assert!(!plain.contains("async move"), "{plain}");
        assert!(!plain.contains("mod __tool_args_f"), "{plain}");
        for other in [
            quote!(
                /// F.
                async fn f(#[depends(K)] k: u8) -> String {
                    k.to_string()
                }
            ),
            quote!(
                /// F.
                async fn f(a: &str) -> String {
                    a.to_owned()
                }
            ),
        ] {
            let expanded = tool(quote!(), other).to_string();
            assert!(expanded.contains("async move"), "{expanded}");
            assert!(!expanded.contains(":: finish ("), "{expanded}");
        }
    }

    #[test]
    fn an_async_tool_is_awaited_and_a_sync_one_called_inline() {
        let ident = format_ident!("__TOOL_f");
        let asynchronous = model(quote!(
            async fn f(a: u8) {}
        ));
        assert_tokens(
            &call(&asynchronous, false, &ident, &[quote!(a)], &quote!(), &quote!(::p)),
            &quote!(__tool_fn(a).await),
        );
        let synchronous = model(quote!(
            fn f(a: &str) {}
        ));
        assert_tokens(
            &call(&synchronous, false, &ident, &[quote!(&a)], &quote!(), &quote!(::p)),
            &quote!(__tool_fn(&a)),
        );
    }

    #[test]
    fn a_tool_with_errors_expands_to_its_function_without_parameter_attributes_the_errors_and_a_stand_in() {
        let actual = tool(
            quote!(),
            quote!(
                fn echo(__raw: String, #[depends] k: u8) {}
            ),
        );
        let expected = quote! {
            fn echo(__raw: String, k: u8) {}
            ::core::compile_error! { "parameter names starting with `__` are reserved for the code `#[tool]` generates; rename `__raw`" }
            ::core::compile_error! { "`#[depends]` needs a dependency key: `#[depends(KEY)]` with a `DependencyKey<T>` static" }
            ::core::compile_error! { "a tool needs a description: models choose tools by it; add a doc comment (`/// What the tool does.`) or `#[tool(description = \"...\")]`" }
            #[doc = "The registration of the `echo` tool: `echo::TOOL`."]
            #[allow(non_camel_case_types, dead_code)]
            struct echo {}

            #[allow(dead_code)]
            impl echo {
                #[doc = "The `echo` tool, for `Registry::builder().tool(echo::TOOL)`."]
                const TOOL: &'static ::tool_runtime::__private::ToolSpec = &::tool_runtime::__private::UNAVAILABLE;
            }
        };
        assert_tokens(&actual, &expected);
    }

    #[test]
    fn a_tool_with_errors_keeps_the_type_checks_of_its_arguments_bounds() {
        let actual = tool(
            quote!(),
            quote!(
                /// Label.
                fn label(#[arg(pattern = "(")] text: String, #[arg(range(min = 1))] width: String) {}
            ),
        )
        .to_string();
        let checks = quote! {
            const _: () = { const _: () = ::tool_runtime::__private::range_bound::<String>(); };
        };
        assert!(actual.contains(&checks.to_string()), "{actual}");
        assert_eq!(actual.matches("compile_error").count(), 1, "{actual}");
    }

    #[test]
    fn an_argument_whose_type_may_be_an_alias_of_state_is_probed_and_plain_data_and_from_model_are_not() {
        let actual = tool(
            quote!(),
            quote!(
                /// Add.
                fn add(notes: Notes, text: &str, count: u32, #[arg(from_model)] start: Cell<u32>) {}
            ),
        )
        .to_string();
        let probe = quote! {
            ::tool_runtime::__private::model_argument::<Notes, _>((&::tool_runtime::__private::ArgumentProbe::<Notes>::NEW).kind());
        };
        assert_eq!(actual.matches(":: model_argument ::").count(), 1, "{actual}");
        assert!(actual.contains(&probe.to_string()), "{actual}");
    }

    #[test]
    fn a_method_with_errors_gets_no_stand_in() {
        let actual = tool(
            quote!(),
            quote!(
                /// Count.
                fn count(&self) {}
            ),
        );
        let expected = quote! {
            /// Count.
            fn count(&self) {}
            ::core::compile_error! { "`#[tool]` on a method needs its `impl` block marked `#[tools]` (`#[tools] impl Server { #[tool] async fn add(&self, ..) }`), whose instance a registry takes with `RegistryBuilder::tools_of`; or make it a free function" }
        };
        assert_tokens(&actual, &expected);
    }

    #[test]
    fn a_method_its_tools_block_registered_is_emitted_unchanged() {
        let method = quote!(
            /// Count.
            fn count(&self) -> usize {
                0
            }
        );
        assert_tokens(&tool(quote!(__method), method.clone()), &method);
    }

    #[test]
    fn the_method_marker_on_a_free_function_is_an_error() {
        let actual = tool(
            quote!(__method),
            quote!(
                fn count() {}
            ),
        );
        let expected = quote! {
            ::core::compile_error! { "`__method` is reserved for the methods of a `#[tools]` block; remove it" }
            fn count() {}
        };
        assert_tokens(&actual, &expected);
    }

    #[test]
    fn an_item_that_is_not_a_function_is_emitted_unchanged_after_the_error() {
        let actual = tool(
            quote!(),
            quote!(
                struct Search;
            ),
        );
        let expected = quote! {
            ::core::compile_error! { "`#[tool]` can only be applied to a function (`fn` or `async fn`)" }
            struct Search;
        };
        assert_tokens(&actual, &expected);
    }

    #[test]
    fn a_result_return_converts_ok_by_its_kind_and_err_by_display() {
        let private = quote!(::p);
        let actual =
            conversion(&Output::Result(Box::new(Output::Json)), &quote!(v), &private, Span::call_site(), false);
        let expected = quote! {
            match v {
                ::core::result::Result::Ok(__ok) => ::p::json(&__ok),
                ::core::result::Result::Err(__err) => ::core::result::Result::Err(::p::failed(__err)),
            }
        };
        assert_tokens(&actual, &expected);
    }

    fn first_arg(model: &ToolFn) -> &Arg {
        match &model.params[0] {
            Param::Arg(arg) => arg,
            _ => panic!("the first parameter is not a model argument"),
        }
    }

    #[test]
    fn a_default_expression_becomes_a_serde_default_function_that_null_also_reads_as() {
        let model = model(quote!(
            fn page(#[arg(default = "x", rename = "p")] p: String) -> String {
                p
            }
        ));
        let (field, default_fn) = field(first_arg(&model), None, &quote!(), &quote!(::p));
        assert_tokens(
            &field,
            &quote!(#[serde(rename = "p")] #[serde(default = "__default_p", deserialize_with = "__null_default_p")] p: String),
        );
        let expected = quote! {
            fn __default_p() -> String {
                ::core::convert::From::from("x")
            }
            fn __null_default_p<'de, __D: ::p::serde::Deserializer<'de>>(
                __deserializer: __D,
            ) -> ::core::result::Result<String, __D::Error> {
                ::core::result::Result::Ok(
                    <::core::option::Option<String> as ::p::serde::Deserialize>::deserialize(__deserializer)?
                        .unwrap_or_else(__default_p),
                )
            }
        };
        assert_tokens(&default_fn.unwrap(), &expected);
    }

    #[test]
    fn an_argument_without_default_is_a_generic_field_its_description_kept_for_the_schema() {
        let model = model(quote!(
            fn f(#[arg(description = "The page.")] page: &str) {}
        ));
        let (field, default_fn) =
            field(first_arg(&model), Some(&format_ident!("__A0")), &quote!(pub(super)), &quote!(::p));
        assert_tokens(&field, &quote!(pub(super) page: __A0));
        assert!(default_fn.is_none());
        let actual = tool(
            quote!(),
            quote!(
                /// Page.
                fn f(#[arg(description = "The page.")] page: &str) {}
            ),
        )
        .to_string();
        let argument =
            quote!(::tool_runtime::__private::ArgumentSchema::new("page", "The page.", false, __TOOL_FNS.0[0]));
        assert!(actual.contains(&argument.to_string()), "{actual}");
    }

    #[test]
    fn a_borrowed_str_argument_is_decoded_as_a_string() {
        let model = model(quote!(
            fn f(page: &str) {}
        ));
        let arg = first_arg(&model);
        assert!(arg.borrowed);
        assert_tokens(&arg.decoded.to_token_stream(), &quote!(::std::string::String));
    }

    #[test]
    fn tool_names_follow_the_provider_rule() {
        assert!(valid_tool_name("read_file"));
        assert!(valid_tool_name("_x-1"));
        assert!(valid_tool_name(&"a".repeat(64)));
        assert!(!valid_tool_name(&"a".repeat(65)));
        assert!(!valid_tool_name("1read"));
        assert!(!valid_tool_name("read file"));
        assert!(!valid_tool_name(""));
    }
}
