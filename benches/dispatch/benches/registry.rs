//! `definitions()` for 100 tools, cold (first call: every schema built from schemars' type
//! information and canonicalised) and warm (the cached slice), and how dispatch and cold
//! definitions grow from 10 to 1,000 registered tools.
//!
//! `cargo bench -p tool-benches --bench registry`

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use tool_benches::{SEARCH_ARGUMENTS, fresh_specs, registry_of};
use tool_runtime::prelude::*;

fn definitions(c: &mut Criterion) {
    // The tools are described as `#[tool]` describes `search`, so they get its schema.
    let spec = fresh_specs(1).pop().expect("one tool");
    assert_eq!(spec.definition().input_schema, *tool_benches::search::TOOL.input_schema());
    let mut group = c.benchmark_group("definitions_100");
    group.bench_function("cold", |b| {
        b.iter_batched_ref(|| registry_of(fresh_specs(100)), |r| r.definitions().len(), BatchSize::SmallInput);
    });
    let warm = registry_of(fresh_specs(100));
    let first = warm.definitions().as_ptr();
    group.bench_function("warm", |b| {
        b.iter(|| {
            let definitions = black_box(&warm).definitions();
            assert_eq!(definitions.as_ptr(), first, "warm definitions are the cached slice");
            definitions.len()
        });
    });
    group.finish();
}

fn growth(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let ctx = ToolContext::new();
    let mut group = c.benchmark_group("growth_dispatch");
    for n in [10, 100, 1000] {
        let registry = registry_of(fresh_specs(n));
        // The last name in sorted order: a scan would pay the most for it.
        let call = ToolCall::new("call_1", format!("tool_{:04}", n - 1), SEARCH_ARGUMENTS);
        assert!(!rt.block_on(registry.call(&call, &ctx)).is_error);
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        black_box(registry.call(black_box(&call), &ctx).await);
                    }
                    start.elapsed()
                })
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("growth_definitions_cold");
    for n in [10, 100, 1000] {
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched_ref(|| registry_of(fresh_specs(n)), |r| r.definitions().len(), BatchSize::PerIteration);
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = definitions, growth
}
criterion_main!(benches);
