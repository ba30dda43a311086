//! Peak memory of reading and searching a 1 GB stored output (Linux only: reads `/proc/self`).
//!
//! Stores 1 GB (10^9 bytes) of generated lines in a `FileStore` in a temp dir (streaming), resets
//! the peak-RSS counter (`/proc/self/clear_refs`), then greps the output (literal and regex) and
//! reads one line near its end, and prints the peak RSS (`VmHWM`) of that phase and of the whole run.
//!
//! Run: `cargo bench -p tool-runtime --bench grep_memory`

use std::time::Instant;

use tool_runtime::output::{FileStore, GrepQuery, OutputStore, grep_stored, open_lines};

#[path = "common/lines.rs"]
mod lines;
use lines::Lines;

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
    if std::env::args().skip(1).any(|a| !a.starts_with('-') && !"grep_memory".contains(a.as_str())) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path()).unwrap();
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
    let target = info.lines - 10;
    let line = open_lines(dyn_store, "huge", target).unwrap().next_line(200).unwrap().unwrap();
    println!(
        "line {} ({} bytes) read in {:.2?}; peak RSS {} KiB",
        line.line + 1,
        line.len,
        started.elapsed(),
        status_kib("VmHWM:")
    );
    println!("peak RSS of the search and line phase: {} KiB", status_kib("VmHWM:"));
}
