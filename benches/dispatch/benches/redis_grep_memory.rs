//! Peak memory of cache-grepping a 1 GB output stored in Redis (Linux only: reads `/proc/self`).
//!
//! Starts a redis-server of its own (free loopback port, no persistence), streams 1 GB (10^9
//! bytes) of generated lines into a `RedisStore` (256 KiB chunks), resets the peak-RSS counter
//! (`/proc/self/clear_refs`), greps the output (literal and regex, as `tool_output_cache_grep`
//! does) and reads a line near its end, and prints the peak RSS (`VmHWM`) of this process.
//! redis-server itself holds the gigabyte (about 1.1 GB of its own memory).
//!
//! `cargo bench -p tool-benches --features redis --bench redis_grep_memory`

#[path = "../../../tool-runtime/tests/support/redis_server.rs"]
mod redis_server;

#[path = "../../../tool-runtime/benches/common/lines.rs"]
mod lines;

use std::sync::Arc;
use std::time::{Duration, Instant};

use lines::Lines;
use tool_runtime::SystemClock;
use tool_runtime::output::{GrepQuery, OutputStore, StoreLimits, grep_stored, open_lines};
use tool_runtime::redis::{RedisConnection, RedisStore};

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

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
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    println!("peak RSS reset: {reset}; RSS now {} KiB", status_kib("VmRSS:"));
    let dyn_store: &dyn OutputStore = &store;
    for (pattern, regex) in [("NEEDLE_7f3a", false), (r"ERR[0-9]{4}Z", true)] {
        let query = GrepQuery {
            pattern: pattern.to_owned(),
            regex,
            before: 2,
            after: 2,
            max_matches: 50,
            max_line_bytes: 1000,
        };
        let started = Instant::now();
        let hits = grep_stored(dyn_store, "huge", &query).unwrap();
        println!(
            "grep {pattern:?} (regex={regex}): {} matches in {:.2?}; peak RSS {} KiB",
            hits.matches,
            started.elapsed(),
            status_kib("VmHWM:")
        );
    }
    let started = Instant::now();
    let line = open_lines(dyn_store, "huge", info.lines - 10).unwrap().next_line(200).unwrap().unwrap();
    println!(
        "line {} ({} bytes) read in {:.2?}; peak RSS {} KiB",
        line.line + 1,
        line.len,
        started.elapsed(),
        status_kib("VmHWM:")
    );
    println!("peak RSS of the search and line phase: {} KiB", status_kib("VmHWM:"));
}
