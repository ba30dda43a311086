//! `grep_stored` (the engine of `tool_output_cache_grep`) over a 100 MB output in a `FileStore`,
//! beside `rg` (ripgrep) searching the same stored file. The pattern occurs a few times, so both scan
//! the whole file. The input is generated in a temp dir at bench time and deleted after.
//!
//! Needs `rg` on PATH (Debian: `apt-get install ripgrep`); without it only `grep_stored` runs.
//! Run: `cargo bench -p tool-runtime --bench cache_grep`

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::process::{Command, Stdio};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tool_runtime::output::{FileStore, GrepQuery, OutputStore, grep_stored};

#[path = "common/lines.rs"]
mod lines;
use lines::Lines;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path()).unwrap();
    let mut input = Lines::new(100_000_000, 2_000_000);
    let info = store.put("big", &mut input, &[]).unwrap();
    let path = dir.path().join("big").join("text");
    let has_rg = Command::new("rg").arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success());

    let mut group = c.benchmark_group("cache_grep_100MB");
    group.throughput(Throughput::Bytes(info.bytes));
    group.sample_size(10);
    for (name, pattern, regex) in [("literal", "NEEDLE_7f3a", false), ("regex", r"ERR[0-9]{4}Z", true)] {
        let query = GrepQuery {
            pattern: pattern.to_owned(),
            regex,
            before: 0,
            after: 0,
            max_matches: 50,
            max_line_bytes: 1000,
        };
        let expected = grep_stored(&store, "big", &query).unwrap().matches;
        group.bench_function(format!("grep_stored_{name}"), |b| {
            b.iter(|| grep_stored(black_box(&store as &dyn OutputStore), "big", &query).unwrap().matches)
        });
        if has_rg {
            let mut args = vec!["--no-config", "-n"];
            if !regex {
                args.push("-F");
            }
            let count = || {
                let out = Command::new("rg").args(&args).arg(pattern).arg(&path).output().unwrap();
                out.stdout.iter().filter(|&&b| b == b'\n').count()
            };
            assert_eq!(count(), expected, "rg and grep_stored disagree on {pattern}");
            group.bench_function(format!("rg_{name}"), |b| b.iter(count));
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
