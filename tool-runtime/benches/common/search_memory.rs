//! The search phase of the memory benches: greps a stored output and reads a line near its end,
//! printing the peak RSS (`VmHWM`, Linux only: `/proc/self`) after each step.

use std::time::Instant;

use tool_runtime::output::{GrepQuery, OutputStore, StoredInfo, grep_stored, open_lines};

/// A field of `/proc/self/status` in KiB (0 where there is none).
pub(crate) fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Resets the peak-RSS counter, greps `ref_id` (a literal and a regex, two lines of context),
/// reads its tenth line from the end, and prints each step's time and the peak RSS.
pub(crate) fn search_and_report(store: &dyn OutputStore, ref_id: &str, info: StoredInfo) {
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    println!("peak RSS reset: {reset}; RSS now {} KiB", status_kib("VmRSS:"));
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
        let hits = grep_stored(store, ref_id, &query).unwrap();
        println!(
            "grep {pattern:?} (regex={regex}): {} matches in {:.2?}; peak RSS {} KiB",
            hits.matches,
            started.elapsed(),
            status_kib("VmHWM:")
        );
    }
    let started = Instant::now();
    let line = open_lines(store, ref_id, info.lines - 10).unwrap().next_line(200).unwrap().unwrap();
    println!(
        "line {} ({} bytes) read in {:.2?}; peak RSS {} KiB",
        line.line + 1,
        line.len,
        started.elapsed(),
        status_kib("VmHWM:")
    );
    println!("peak RSS of the search and line phase: {} KiB", status_kib("VmHWM:"));
}
