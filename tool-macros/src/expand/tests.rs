//! Unit tests of the expansion: what `#[tool]` generates, part by part.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote};

use super::checks::valid_tool_name;
use super::registration::{call, conversion, field};
use super::tool;
use crate::model::{Arg, Errors, Output, Param, ToolFn};

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
                || ::tool_runtime::__private::key_use_named(&K, "K")
            ];

            #[allow(clippy::used_underscore_binding, clippy::unit_arg, clippy::let_unit_value)]
            fn __tool_invoke<'__a>(
                __raw: &'__a str,
                __ctx: &'__a ::tool_runtime::__private::ToolContext,
            ) -> ::tool_runtime::__private::BoxFuture<'__a, ::core::result::Result<::tool_runtime::__private::ToolResult, ::tool_runtime::__private::ToolError>> {
                let __tool_fn = add;
                ::std::boxed::Box::pin(async move {
                    let __ToolArgs { a, } = (__TOOL_FNS.1)(&__TOOL_add, __raw)?;
                    let k: u8 = ::tool_runtime::__private::resolve::<u8, _>(__ctx, &K, "K").await?;
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
            .with_check(|__raw| (__TOOL_FNS.1)(&__TOOL_add, __raw).map(|_| ()))
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
    assert!(actual.contains(&quote!(::tool_runtime::__private::Invoke::Sync(__tool_invoke)).to_string()), "{actual}");
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
    let actual =
        call(&model, true, &format_ident!("__TOOL_hash"), &[quote!(__ctx)], &quote!(::p::text(__out)), &quote!(::p));
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
    assert_tokens(&call(&synchronous, false, &ident, &[quote!(&a)], &quote!(), &quote!(::p)), &quote!(__tool_fn(&a)));
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
    // Probed in `__TOOL_FNS`, through its kind; no separate check.
    let probe = quote! {
        <::tool_runtime::__private::ArgumentKinds>::of(&|| (&::tool_runtime::__private::ArgumentProbe::<Notes>::NEW).kind())
    };
    assert_eq!(actual.matches("ArgumentProbe").count(), 1, "{actual}");
    assert!(actual.contains(&probe.to_string()), "{actual}");
    assert_eq!(actual.matches(":: model_argument ::").count(), 0, "{actual}");
    let kinds = quote!(__K0: ::tool_runtime::__private::ModelArgument<__A0, Type = __A0>);
    assert!(actual.contains(&kinds.to_string()), "{actual}");
    assert_eq!(actual.matches("__K1").count(), 0, "{actual}");
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
    let actual = conversion(&Output::Result(Box::new(Output::Json)), &quote!(v), &private, Span::call_site(), false);
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
    let (field, default_fn) = field(first_arg(&model), Some(&format_ident!("__A0")), &quote!(pub(super)), &quote!(::p));
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
    let argument = quote!(::tool_runtime::__private::ArgumentSchema::new("page", "The page.", false, __TOOL_FNS.0[0]));
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
