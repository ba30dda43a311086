//! Heap allocations per call of every dispatch benchmark, and the heap a registry holds for 10 to
//! 1,000 tools. Counts with a global allocator, so it runs apart from the timed benches.
//!
//! `cargo bench -p tool-benches --features rmcp --bench allocations`

use std::alloc::System;
use std::hint::black_box;

use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tool_benches::{
    NESTED_ARGUMENTS, SEARCH_ARGUMENTS, configure_by_hand, core_registry, fresh_specs, output_registry, registry_of,
    search_by_hand,
};
use tool_runtime::prelude::*;

mod rmcp_server;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const ROUNDS: usize = 1000;

/// Allocations (and reallocations) per run of `f`, averaged over `ROUNDS` runs after one warm-up.
fn per_call(mut f: impl FnMut()) -> f64 {
    f();
    let region = Region::new(GLOBAL);
    for _ in 0..ROUNDS {
        f();
    }
    let change = region.change();
    (change.allocations + change.reallocations) as f64 / ROUNDS as f64
}

/// Bytes allocated and not freed since `region` started.
fn live_bytes(region: &Region<'_, System>) -> isize {
    let change = region.change();
    change.bytes_allocated as isize - change.bytes_deallocated as isize + change.bytes_reallocated
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let rmcp = rt.block_on(async { rmcp_server::RmcpDispatch::new() });
    let core = core_registry();
    let output = output_registry();
    let ctx = ToolContext::new();

    println!("| tool | hand-written | rmcp | ours core | ours + output layer |");
    println!("|---|---|---|---|---|");
    // (row, our tool, rmcp's tool, arguments, hand-written dispatch)
    for (label, tool, rmcp_tool, arguments, by_hand) in [
        ("search", "search", "search", SEARCH_ARGUMENTS, search_by_hand as fn(&str) -> _),
        ("search, a plain `fn` (`search_fn`)", "search_fn", "search", SEARCH_ARGUMENTS, search_by_hand),
        ("configure (20 nested)", "configure", "configure", NESTED_ARGUMENTS, configure_by_hand),
    ] {
        let call = ToolCall::new("call_1", tool, arguments);
        let hand = per_call(|| {
            black_box(by_hand(black_box(arguments)).expect("decodes"));
        });
        let rmcp = per_call(|| {
            black_box(rt.block_on(rmcp.call(rmcp_tool, arguments)));
        });
        let ours = per_call(|| {
            black_box(rt.block_on(core.call(&call, &ctx)));
        });
        let layered = per_call(|| {
            black_box(rt.block_on(output.call(&call, &ctx)));
        });
        println!("| {label} | {hand:.1} | {rmcp:.1} | {ours:.1} | {layered:.1} |");
    }
    let calls: Vec<ToolCall> = (0..8).map(|i| ToolCall::new(format!("call_{i}"), "search", SEARCH_ARGUMENTS)).collect();
    let hand = per_call(|| {
        black_box((0..8).map(|_| search_by_hand(SEARCH_ARGUMENTS).expect("decodes")).collect::<Vec<_>>());
    });
    let rmcp_batch = per_call(|| {
        black_box(rt.block_on(futures::future::join_all((0..8).map(|_| rmcp.call("search", SEARCH_ARGUMENTS)))));
    });
    let ours = per_call(|| {
        black_box(rt.block_on(core.call_batch(&calls, &ctx)));
    });
    let layered = per_call(|| {
        black_box(rt.block_on(output.call_batch(&calls, &ctx)));
    });
    println!("| batch of 8 `search` | {hand:.1} | {rmcp_batch:.1} | {ours:.1} | {layered:.1} |");
    let sync_calls: Vec<ToolCall> =
        (0..8).map(|i| ToolCall::new(format!("call_{i}"), "search_fn", SEARCH_ARGUMENTS)).collect();
    let ours = per_call(|| {
        black_box(rt.block_on(core.call_batch(&sync_calls, &ctx)));
    });
    let layered = per_call(|| {
        black_box(rt.block_on(output.call_batch(&sync_calls, &ctx)));
    });
    println!("| batch of 8 `search_fn` | {hand:.1} | {rmcp_batch:.1} | {ours:.1} | {layered:.1} |");

    println!();
    println!(
        "| tools | registry heap after build (bytes) | after `definitions()` (bytes) | per tool after `definitions()` |"
    );
    println!("|---|---|---|---|");
    for n in [10, 100, 1000] {
        let region = Region::new(GLOBAL);
        let registry = registry_of(fresh_specs(n));
        let built = live_bytes(&region);
        black_box(registry.definitions());
        let defined = live_bytes(&region);
        println!("| {n} | {built} | {defined} | {} |", defined / n as isize);
    }
}
