//! Peak memory of cache-grepping a 1 GB output stored in Redis (Linux only: reads `/proc/self`).
//!
//! Starts a redis-server of its own (free loopback port, no persistence), streams 1 GB (10^9
//! bytes) of generated lines into a `RedisStore` (256 KiB chunks), resets the peak-RSS counter
//! (`/proc/self/clear_refs`), greps the output (literal and regex, as `tool_output_cache_grep`
//! does) and reads a line near its end, and prints the peak RSS (`VmHWM`) of this process.
//! redis-server itself holds the gigabyte (about 1.1 GB of its own memory).
//!
//! `cargo bench -p tool-runtime --features redis --bench redis_grep_memory`

use test_support::redis_server;

#[path = "common/lines.rs"]
mod lines;

#[path = "common/search_memory.rs"]
mod search_memory;

use std::sync::Arc;
use std::time::{Duration, Instant};

use lines::Lines;
use search_memory::{search_and_report, status_kib};
use tool_runtime::SystemClock;
use tool_runtime::output::{OutputStore, StoreLimits};
use tool_runtime::redis::{RedisConnection, RedisStore};

fn main() {
    // `cargo bench` passes `--bench`; a filter that does not name this bench skips it.
    if std::env::args().skip(1).any(|a| !a.starts_with('-') && !"redis_grep_memory".contains(a.as_str())) {
        return;
    }
    let server = redis_server::RedisServer::start();
    let limits = StoreLimits::new(Duration::from_secs(3600), 2 << 30);
    let store = RedisStore::with_limits(
        RedisConnection::open(&server.url(0)).unwrap(),
        "tool:out",
        limits,
        Arc::new(SystemClock),
    );
    let started = Instant::now();
    let info = store.put("huge", &mut Lines::new(1_000_000_000, 5_000_000), &[]).unwrap();
    println!(
        "stored {} bytes, {} lines in {:.1?}; peak RSS so far {} KiB",
        info.bytes,
        info.lines,
        started.elapsed(),
        status_kib("VmHWM:")
    );
    search_and_report(&store, "huge", info);
}
