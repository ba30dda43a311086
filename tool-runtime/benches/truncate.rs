//! `truncate_head` / `truncate_tail` over a 100 MB output, beside a bare `memchr` newline count over
//! the same buffer (the floor any line-aware cut pays: both need the total line count).
//!
//! Run: `cargo bench -p tool-runtime --bench truncate`

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tool_runtime::output::{OutputLimits, truncate_head, truncate_tail};

/// 100 MB (100 * 1000 * 1000 bytes) of log-like lines of varying length.
fn output() -> String {
    let mut text = String::with_capacity(100_000_000 + 200);
    let mut i = 0u64;
    while text.len() < 100_000_000 {
        let pad = (i * 7919 % 60) as usize;
        text.push_str(&format!("2026-11-29T19:00:00Z INFO worker={} step={i} {}\n", i % 16, "x".repeat(pad)));
        i += 1;
    }
    text.truncate(100_000_000);
    // Keep it valid UTF-8 and ending on a line.
    text.push('\n');
    text
}

fn bench(c: &mut Criterion) {
    let text = output();
    let limits = OutputLimits::default();
    let mut group = c.benchmark_group("truncate_100MB");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(20);
    group.bench_function("memchr_newline_count", |b| {
        b.iter(|| memchr::memchr_iter(b'\n', black_box(text.as_bytes())).count())
    });
    group.bench_function("truncate_head", |b| b.iter(|| truncate_head(black_box(&text), limits).output_bytes));
    group.bench_function("truncate_tail", |b| b.iter(|| truncate_tail(black_box(&text), limits).output_bytes));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
