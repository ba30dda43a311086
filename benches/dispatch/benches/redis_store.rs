//! A 1 MB output put into the Redis output store and read back, beside the same commands sent
//! through the bare `redis` crate, in one run against one redis-server (started here on a free
//! loopback port, no persistence).
//!
//! - `store`: `put_scoped` (four 256 KiB chunk `SET`s, up to four at once, then the line index
//!   and parts `SET`s and the publishing script), then a scoped read as the cache tools do it:
//!   one scope check (the use script: the view checks a ref once), then `info` and `open_at(0)`
//!   read to the end, each reading the entry's fields (`HMGET`), then four chunk `GET`s (the
//!   next fetched while one is read).
//! - `bare`: the same commands on a `ConnectionManager`, awaited one after the other on a tokio
//!   runtime: the six `SET`s, then `HSET`, `PEXPIRE`, `ZADD`, `HSET`, `INCRBY` in one pipeline
//!   (the publishing script's writes), then `HMGET` + `PEXPIRE` ×6 + `ZADD` in one pipeline (the
//!   use script's), twice an `HMGET`, then four `GET`s.
//!
//! Criterion's two rows, and before them 400 alternating pairs (the median of each side and of
//! the pairs' ratios: on a shared machine the load falls on both sides of a pair alike).
//!
//! `cargo bench -p tool-benches --features redis --bench redis_store`

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use test_support::redis_server;

use std::hint::black_box;
use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use redis::aio::ConnectionManager;
use tool_runtime::SystemClock;
use tool_runtime::output::{OutputScope, OutputStore, ScopedStore, StoreLimits};
use tool_runtime::redis::{REDIS_CHUNK_BYTES, RedisConnection, RedisStore};

const SCOPE: OutputScope<'static> = OutputScope { session: Some("bench"), principal: None };

/// 1 MB (10^6 bytes) of 100-byte lines.
fn text() -> Vec<u8> {
    let line = format!("{}\n", "y".repeat(99));
    line.repeat(10_000).into_bytes()
}

fn store_round_trip(store: &RedisStore, text: &[u8]) -> usize {
    store.put_scoped(SCOPE, "one", &mut &text[..], &[]).unwrap();
    let scoped = ScopedStore::new(store, SCOPE);
    let info = scoped.info("one").unwrap();
    let mut back = Vec::with_capacity(info.bytes as usize);
    scoped.open_at("one", 0).unwrap().read_to_end(&mut back).unwrap();
    back.len()
}

async fn bare_round_trip(con: &mut ConnectionManager, text: &[u8]) -> usize {
    let ttl = 86_400_000u64;
    let chunks: Vec<&[u8]> = text.chunks(REDIS_CHUNK_BYTES).collect();
    for (k, chunk) in chunks.iter().enumerate() {
        let _: () = redis::cmd("SET")
            .arg(format!("b:one:g:{}", k + 2))
            .arg(*chunk)
            .arg("PX")
            .arg(ttl)
            .query_async(con)
            .await
            .unwrap();
    }
    for (k, value) in [(0, &b""[..]), (1, &b"[]"[..])] {
        let _: () =
            redis::cmd("SET").arg(format!("b:one:g:{k}")).arg(value).arg("PX").arg(ttl).query_async(con).await.unwrap();
    }
    let mut publish = redis::pipe();
    publish
        .cmd("HSET")
        .arg("b:one")
        .arg("owner")
        .arg("{}")
        .arg("gen")
        .arg("g")
        .arg("subs")
        .arg(chunks.len() + 2)
        .arg("rev")
        .arg(1)
        .arg("data")
        .arg("1000000 10000 0 9")
        .ignore()
        .cmd("PEXPIRE")
        .arg("b:one")
        .arg(ttl)
        .ignore()
        .cmd("ZADD")
        .arg("b-lru")
        .arg(1)
        .arg("one")
        .ignore()
        .cmd("HSET")
        .arg("b-entries")
        .arg("one")
        .arg("1000328\t{}")
        .ignore()
        .cmd("INCRBY")
        .arg("b-total")
        .arg(1_000_328)
        .ignore();
    let _: () = publish.query_async(con).await.unwrap();
    // A scoped read: one scope check (the use script's commands), then `info` and `open_at`,
    // each reading the entry's fields.
    let mut touch = redis::pipe();
    touch.cmd("HMGET").arg("b:one").arg("owner").arg("gen").arg("subs").arg("rev").arg("data");
    for k in 0..chunks.len() + 2 {
        touch.cmd("PEXPIRE").arg(format!("b:one:g:{k}")).arg(ttl).ignore();
    }
    touch.cmd("ZADD").arg("b-lru").arg(2).arg("one").ignore();
    let _: (Vec<Option<Vec<u8>>>,) = touch.query_async(con).await.unwrap();
    for _ in 0..2 {
        let _: Vec<Option<Vec<u8>>> = redis::cmd("HMGET")
            .arg("b:one")
            .arg("rev")
            .arg("gen")
            .arg("subs")
            .arg("data")
            .query_async(con)
            .await
            .unwrap();
    }
    let mut back = Vec::with_capacity(text.len());
    for k in 0..chunks.len() {
        let chunk: Vec<u8> = redis::cmd("GET").arg(format!("b:one:g:{}", k + 2)).query_async(con).await.unwrap();
        back.extend_from_slice(&chunk);
    }
    back.len()
}

fn bench(c: &mut Criterion) {
    let server = redis_server::RedisServer::start();
    let text = text();
    let limits = StoreLimits::new(Duration::from_secs(86_400), 1 << 30);
    let store = RedisStore::with_limits(
        RedisConnection::open(&server.url(0)).unwrap(),
        "tool:out",
        limits,
        Arc::new(SystemClock),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let client = redis::Client::open(server.url(0)).unwrap();
    let mut con = runtime.block_on(ConnectionManager::new(client)).unwrap();
    assert_eq!(store_round_trip(&store, &text), text.len());
    assert_eq!(runtime.block_on(bare_round_trip(&mut con, &text)), text.len());

    // Back to back, alternating, so that the load of a shared machine falls on both alike: 400
    // pairs, the median of each side and the median of the pairs' ratios.
    let (mut store_times, mut bare_times, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..400 {
        let started = std::time::Instant::now();
        black_box(store_round_trip(&store, &text));
        let store_time = started.elapsed();
        let started = std::time::Instant::now();
        black_box(runtime.block_on(bare_round_trip(&mut con, &text)));
        let bare_time = started.elapsed();
        ratios.push(store_time.as_secs_f64() / bare_time.as_secs_f64());
        store_times.push(store_time);
        bare_times.push(bare_time);
    }
    store_times.sort();
    bare_times.sort();
    ratios.sort_by(f64::total_cmp);
    println!(
        "alternating, 400 pairs: store median {:.2?}, bare median {:.2?}, median of the pair ratios {:.2}",
        store_times[200], bare_times[200], ratios[200]
    );
    if std::env::var_os("REDIS_BENCH_STATS").is_some() {
        println!("{}", server.cli(&["INFO", "commandstats"]).join("\n"));
    }
    let mut group = c.benchmark_group("redis_put_read_1mb");
    group.sample_size(50);
    group.bench_function("store", |b| b.iter(|| black_box(store_round_trip(&store, black_box(&text)))));
    group.bench_function("bare", |b| {
        b.iter(|| black_box(runtime.block_on(bare_round_trip(&mut con, black_box(&text)))))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
