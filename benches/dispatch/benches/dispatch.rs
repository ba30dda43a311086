//! One tool call, three ways, in the same run: hand-written (`from_str`, the function,
//! `to_string`), rmcp's `#[tool]`/`#[tool_router]` through a stored `ToolRouter`, and ours
//! through `Registry::call` (core path, and with the output layer on an in-memory store), for the
//! tool as an `async fn`, (`_fn` rows) as an `#[tool(inline)]` plain `fn`, and (`_blocking` row,
//! core path) as a plain `fn` without `inline`, which hops to tokio's blocking pool and back. Then the
//! 20-argument nested tool the same ways, and a batch of 8 calls.
//!
//! `cargo bench -p tool-benches --features rmcp --bench dispatch`

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tokio::runtime::Runtime;
use tool_benches::{
    NESTED_ARGUMENTS, SEARCH_ARGUMENTS, configure_by_hand, core_registry, output_registry, search_by_hand,
};
use tool_runtime::prelude::*;
use tool_runtime::{Tool, ToolSpec};

mod rmcp_server;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

/// Times `iters` awaits of `f` inside one `block_on`, so that entering the runtime is not counted.
fn time_async<F, Fut>(rt: &Runtime, iters: u64, f: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: Future,
{
    rt.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(f().await);
        }
        start.elapsed()
    })
}

fn one_tool(
    c: &mut Criterion,
    group_name: &str,
    spec: &'static ToolSpec,
    sync_spec: Option<&'static ToolSpec>,
    blocking_spec: Option<&'static ToolSpec>,
    arguments: &'static str,
    by_hand: fn(&str) -> Result<String, serde_json::Error>,
) {
    let tool = spec.name();
    let rt = runtime();
    let rmcp = rt.block_on(async { rmcp_server::RmcpDispatch::new() });
    let core = core_registry();
    let output = output_registry();
    let ctx = ToolContext::new();
    let call = ToolCall::new("call_1", tool, arguments);

    // Every way returns the same text.
    let expected = by_hand(arguments).expect("decodes");
    assert_eq!(rt.block_on(core.call(&call, &ctx)).text(), expected);
    assert_eq!(rt.block_on(Tool::call(spec, arguments, &ctx)).expect("runs"), ToolResult::Text(expected.clone()));
    assert_eq!(rt.block_on(output.call(&call, &ctx)).text(), expected);
    assert!(rt.block_on(rmcp.call(tool, arguments)).contains(&expected.replace('"', "\\\"")));

    let mut group = c.benchmark_group(group_name);
    group.bench_function("hand_written", |b| b.iter(|| by_hand(black_box(arguments)).expect("decodes")));
    group.bench_function("rmcp_tool_router", |b| {
        b.iter_custom(|iters| time_async(&rt, iters, || rmcp.call(tool, black_box(arguments))));
    });
    // The `#[tool]` function's generated code alone (decode, call, encode), without the registry.
    group.bench_function("ours_tool_spec", |b| {
        b.iter_custom(|iters| time_async(&rt, iters, || Tool::call(spec, black_box(arguments), &ctx)));
    });
    group.bench_function("ours_core", |b| {
        b.iter_custom(|iters| time_async(&rt, iters, || core.call(black_box(&call), &ctx)))
    });
    // The same tool as a plain `fn` (as the hand-written one is): no future.
    let sync_call = sync_spec.map(|sync_spec| ToolCall::new("call_1", sync_spec.name(), arguments));
    if let Some(sync_call) = &sync_call {
        assert_eq!(rt.block_on(core.call(sync_call, &ctx)).text(), expected);
        assert_eq!(rt.block_on(output.call(sync_call, &ctx)).text(), expected);
        group.bench_function("ours_core_fn", |b| {
            b.iter_custom(|iters| time_async(&rt, iters, || core.call(black_box(sync_call), &ctx)));
        });
    }
    // The same plain `fn` without `inline`: the hop to the blocking pool and back.
    if let Some(blocking_spec) = blocking_spec {
        let blocking_call = ToolCall::new("call_1", blocking_spec.name(), arguments);
        assert_eq!(rt.block_on(core.call(&blocking_call, &ctx)).text(), expected);
        group.bench_function("ours_core_blocking", |b| {
            b.iter_custom(|iters| time_async(&rt, iters, || core.call(black_box(&blocking_call), &ctx)));
        });
    }
    // The output layer's rows last: each of their calls stores a new entry, and the store grows to
    // its size cap (hundreds of MiB) over a row, which weighed on the rows measured after it.
    group.bench_function("ours_output_layer", |b| {
        b.iter_custom(|iters| time_async(&rt, iters, || output.call(black_box(&call), &ctx)));
    });
    if let Some(sync_call) = &sync_call {
        group.bench_function("ours_output_layer_fn", |b| {
            b.iter_custom(|iters| time_async(&rt, iters, || output.call(black_box(sync_call), &ctx)));
        });
    }
    group.finish();
}

fn search(c: &mut Criterion) {
    one_tool(
        c,
        "search",
        tool_benches::search::TOOL,
        Some(tool_benches::search_fn::TOOL),
        Some(tool_benches::search_blocking::TOOL),
        SEARCH_ARGUMENTS,
        search_by_hand,
    );
}

fn nested(c: &mut Criterion) {
    one_tool(c, "configure_20_nested", tool_benches::configure::TOOL, None, None, NESTED_ARGUMENTS, configure_by_hand);
}

fn batch(c: &mut Criterion) {
    let rt = runtime();
    let rmcp = rt.block_on(async { rmcp_server::RmcpDispatch::new() });
    let core = core_registry();
    let output = output_registry();
    let ctx = ToolContext::new();
    let calls: Vec<ToolCall> = (0..8).map(|i| ToolCall::new(format!("call_{i}"), "search", SEARCH_ARGUMENTS)).collect();
    assert_eq!(rt.block_on(core.call_batch(&calls, &ctx)).into_messages().len(), 8);

    let mut group = c.benchmark_group("batch_of_8");
    group.bench_function("hand_written", |b| {
        b.iter(|| (0..8).map(|_| search_by_hand(black_box(SEARCH_ARGUMENTS)).expect("decodes")).collect::<Vec<_>>());
    });
    group.bench_function("rmcp_tool_router", |b| {
        b.iter_custom(|iters| {
            time_async(&rt, iters, || futures::future::join_all((0..8).map(|_| rmcp.call("search", SEARCH_ARGUMENTS))))
        });
    });
    group.bench_function("ours_core", |b| {
        b.iter_custom(|iters| time_async(&rt, iters, || core.call_batch(black_box(&calls), &ctx)));
    });
    group.bench_function("ours_output_layer", |b| {
        b.iter_custom(|iters| time_async(&rt, iters, || output.call_batch(black_box(&calls), &ctx)));
    });
    let sync_calls: Vec<ToolCall> =
        (0..8).map(|i| ToolCall::new(format!("call_{i}"), "search_fn", SEARCH_ARGUMENTS)).collect();
    group.bench_function("ours_core_fn", |b| {
        b.iter_custom(|iters| time_async(&rt, iters, || core.call_batch(black_box(&sync_calls), &ctx)));
    });
    group.bench_function("ours_output_layer_fn", |b| {
        b.iter_custom(|iters| time_async(&rt, iters, || output.call_batch(black_box(&sync_calls), &ctx)));
    });
    group.finish();
}

criterion_group!(benches, search, nested, batch);
criterion_main!(benches);
