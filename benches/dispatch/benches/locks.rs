//! What an uncontended call pays for its resource lock: one `async fn` tool called through
//! `Registry::call`, without a declared resource, with `#[tool(resource = "id")]` on the
//! in-process store (`LocalLocks`), and (feature `redis`) on the Redis store (`RedisLocks`,
//! against a redis-server started here on a free loopback port). Each call takes and gives back
//! its place; no other call waits.
//!
//! `cargo bench -p tool-benches --bench locks` (`--features redis` for the Redis row)

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tokio::runtime::Runtime;
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

criterion_group!(benches, locks);
criterion_main!(benches);
