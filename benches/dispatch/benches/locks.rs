//! What an uncontended call pays for its resource lock: one `async fn` tool called through
//! `Registry::call`, without a declared resource, with `#[tool(resource = "id")]` on the
//! in-process store (`LocalLocks`), and (feature `redis`) on the Redis store (`RedisLocks`,
//! against a redis-server started here on a free loopback port). Each call takes and gives back
//! its place; no other call waits.
//!
//! The other side effects a framework vouches for, in the same way: an idempotent call (a fresh
//! idempotency key each call: the claim, the run and the kept message) on the memory store and
//! (feature `redis`) the Redis store, beside the same call without a key; and a call of a
//! `confirm` tool that carries a valid approval token (its check: the MACs and the single use
//! recorded), on the memory store and on Redis. Keys and tokens are made before the timed loop.
//!
//! `cargo bench -p tool-benches --bench locks` (`--features redis` for the Redis rows)

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tokio::runtime::Runtime;
use tool_runtime::ApprovalTokens;
use tool_runtime::idempotency::{Idempotency, IdempotencyStore, MemoryIdempotencyStore};
use tool_runtime::prelude::*;

/// Looks a record up.
#[tool]
async fn lookup(
    /// The record.
    id: String,
) -> String {
    id
}

/// Looks a record up, holding it while it runs.
#[tool(resource = "id")]
async fn lookup_locked(
    /// The record.
    id: String,
) -> String {
    id
}

/// Looks a record up, once the user approved the call.
#[tool(tags(confirm))]
async fn lookup_approved(
    /// The record.
    id: String,
) -> String {
    id
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime")
}

/// Times `iters` calls of `call` through `registry` inside one `block_on`.
fn time_calls(rt: &Runtime, registry: &Registry, call: &ToolCall, iters: u64) -> Duration {
    let ctx = ToolContext::new();
    rt.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(registry.call(black_box(call), &ctx).await);
        }
        start.elapsed()
    })
}

fn locks(c: &mut Criterion) {
    let rt = runtime();
    let plain = Registry::builder().tool(lookup::TOOL).build().unwrap();
    let local = Registry::builder().tool(lookup_locked::TOOL).build().unwrap();
    let (call, locked_call) =
        (ToolCall::new("c", "lookup", r#"{"id":"r1"}"#), ToolCall::new("c", "lookup_locked", r#"{"id":"r1"}"#));
    assert_eq!(rt.block_on(local.call(&locked_call, &ToolContext::new())).text(), "r1");

    let mut group = c.benchmark_group("locks");
    group.bench_function("no_resource", |b| b.iter_custom(|iters| time_calls(&rt, &plain, &call, iters)));
    group.bench_function("local_lock", |b| b.iter_custom(|iters| time_calls(&rt, &local, &locked_call, iters)));
    #[cfg(feature = "redis")]
    {
        let server = test_support::redis_server::RedisServer::start();
        let conn = tool_runtime::redis::RedisConnection::open(&server.url(0)).unwrap();
        let redis = Registry::builder()
            .tool(lookup_locked::TOOL)
            .locks(tool_runtime::locks::RedisLocks::new(conn))
            .build()
            .unwrap();
        assert_eq!(rt.block_on(redis.call(&locked_call, &ToolContext::new())).text(), "r1");
        group.bench_function("redis_lock", |b| b.iter_custom(|iters| time_calls(&rt, &redis, &locked_call, iters)));
    }
    group.finish();
}

/// Times the calls `setup(iters)` makes, through the registry it makes with them (for this
/// sample: its store fresh), one after the other; the setup is not timed.
fn time_fresh(rt: &Runtime, setup: impl Fn(u64) -> (Registry, Vec<ToolCall>), iters: u64) -> Duration {
    let (registry, calls) = setup(iters);
    let ctx = ToolContext::new();
    rt.block_on(async {
        let start = Instant::now();
        for call in &calls {
            black_box(registry.call(black_box(call), &ctx).await);
        }
        start.elapsed()
    })
}

/// `iters` calls of `lookup`, each with an idempotency key of its own, through a registry with
/// idempotency on `store`, whose kept messages live `ttl`.
fn keyed(store: impl IdempotencyStore, ttl: Duration, iters: u64) -> (Registry, Vec<ToolCall>) {
    let registry =
        Registry::builder().tool(lookup::TOOL).idempotency(Idempotency::new(store).ttl(ttl)).build().unwrap();
    let call = ToolCall::new("c", "lookup", r#"{"id":"r1"}"#);
    (registry, (0..iters).map(|i| call.clone().with_idempotency_key(format!("k{i}"))).collect())
}

/// `iters` calls of `lookup_approved`, each with a token of its own, through a registry whose
/// approval tokens' uses are kept in `store` (minted as the registry would for the host).
fn approved(store: impl IdempotencyStore, iters: u64) -> (Registry, Vec<ToolCall>) {
    let tokens = ApprovalTokens::new(store);
    let registry = Registry::builder().tool(lookup_approved::TOOL).approval_tokens(tokens.clone()).build().unwrap();
    let call = ToolCall::new("c", "lookup_approved", r#"{"id":"r1"}"#);
    let calls = (0..iters)
        .map(|_| call.clone().with_approval_token(tokens.mint("lookup_approved", &call.arguments, None)))
        .collect();
    (registry, calls)
}

/// A memory store that never refuses for its caps: the timed calls measure the work, not the
/// quota (each sample has a fresh one).
fn unbounded() -> MemoryIdempotencyStore {
    MemoryIdempotencyStore::with_caps(usize::MAX, usize::MAX, usize::MAX)
}

fn side_effects(c: &mut Criterion) {
    let rt = runtime();
    let day = Duration::from_secs(24 * 60 * 60);
    let (plain, _) = keyed(unbounded(), day, 0);
    let call = ToolCall::new("c", "lookup", r#"{"id":"r1"}"#);
    for (registry, calls) in [keyed(unbounded(), day, 1), approved(unbounded(), 1)] {
        assert_eq!(rt.block_on(registry.call(&calls[0], &ToolContext::new())).text(), "r1");
    }

    let mut group = c.benchmark_group("side_effects");
    group.bench_function("no_key", |b| b.iter_custom(|iters| time_calls(&rt, &plain, &call, iters)));
    group.bench_function("memory_key", |b| {
        b.iter_custom(|iters| time_fresh(&rt, |n| keyed(unbounded(), day, n), iters))
    });
    group.bench_function("memory_token", |b| {
        b.iter_custom(|iters| time_fresh(&rt, |n| approved(unbounded(), n), iters))
    });
    #[cfg(feature = "redis")]
    {
        use tool_runtime::idempotency::RedisIdempotencyStore;
        let server = test_support::redis_server::RedisServer::start();
        let conn = tool_runtime::redis::RedisConnection::open(&server.url(0)).unwrap();
        let sample = std::sync::atomic::AtomicU64::new(0);
        // A namespace of its own each sample; kept messages live a second.
        let store = |kind: &str| {
            let n = sample.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            RedisIdempotencyStore::with_caps(conn.clone(), &format!("bench-{kind}-{n}"), usize::MAX, 1 << 20)
        };
        let second = Duration::from_secs(1);
        for (registry, calls) in [keyed(store("check"), second, 1), approved(store("check"), 1)] {
            assert_eq!(rt.block_on(registry.call(&calls[0], &ToolContext::new())).text(), "r1");
        }
        group.bench_function("redis_key", |b| {
            b.iter_custom(|iters| time_fresh(&rt, |n| keyed(store("key"), second, n), iters))
        });
        group.bench_function("redis_token", |b| {
            b.iter_custom(|iters| time_fresh(&rt, |n| approved(store("token"), n), iters))
        });
    }
    group.finish();
}

criterion_group!(benches, locks, side_effects);
criterion_main!(benches);
