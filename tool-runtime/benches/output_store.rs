//! What the output layer pays per message to keep it: minting its ref id (beside the alternative
//! of a keyed SHA-256 over a count, which needs no random draw per id), and storing a small
//! text in a `MemoryStore` under a new ref id each time (the store grows to its cap, as it does in
//! use) beside storing it under one ref id again and again (the store stays at one entry).
//!
//! Run: `cargo bench -p tool-runtime --bench output_store -- --warm-up-time 1 --measurement-time 3`

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;

use base64::Engine as _;
use criterion::{Criterion, criterion_group, criterion_main};
use sha2::{Digest, Sha256};
use tool_runtime::output::{MemoryStore, OutputScope, OutputStore, mint_ref_id};

const TEXT: &str = r#"{"count":10,"first":"rust tool macros 0"}"#;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("output_store");
    group.bench_function("mint_ref_id", |b| b.iter(|| mint_ref_id().unwrap()));
    // The alternative: the first 16 bytes of SHA-256 over a 32-byte key and a count.
    let key = [7u8; 32];
    let mut count = 0u64;
    group.bench_function("keyed_sha256_of_a_count", |b| {
        b.iter(|| {
            count += 1;
            let digest = Sha256::new().chain_update(key).chain_update(count.to_le_bytes()).finalize();
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..16])
        })
    });
    let scope = OutputScope { session: Some("s1"), principal: None };
    let same = MemoryStore::new();
    group.bench_function("put_under_one_ref", |b| {
        b.iter(|| same.put_scoped(scope, "r1", &mut black_box(TEXT).as_bytes(), &[]).unwrap())
    });
    let growing = MemoryStore::new();
    group.bench_function("put_under_new_refs", |b| {
        b.iter(|| {
            let ref_id = mint_ref_id().unwrap();
            growing.put_scoped(scope, &ref_id, &mut black_box(TEXT).as_bytes(), &[]).unwrap()
        })
    });
    group.finish();
    println!("entries held at the end: {}", growing.len());
}

criterion_group!(benches, bench);
criterion_main!(benches);
