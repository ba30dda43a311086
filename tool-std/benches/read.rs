//! `read` of the first page (default arguments: 2000 lines) of files of 1, 8, 10, 50 and 500 MB
//! of 111-byte lines, three ways:
//!
//! - `first_page`: `read` with the default limits. Files over the whole-file scan limit
//!   (8 MiB = 8,388,608 bytes) are read only up to the page; smaller ones are read to the end for
//!   the `content_sha256` footer and the line count.
//! - `first_page_whole_scan`: `read` with that limit raised above every file, so every file is
//!   read to the end (what `read` did for every file before the limit).
//! - `whole_file_in_memory`: `std::fs::read`, split into lines, SHA-256 of the bytes (what `read`
//!   did before it streamed).
//!
//! Each file is written to a temp directory before its rows and removed after them (at most
//! 500 MB on disk at a time).
//!
//! ```text
//! cargo bench -p tool-std --bench read -- --warm-up-time 1 --measurement-time 4
//! ```

use std::io::Write as _;

use criterion::{BenchmarkId, Criterion};
use sha2::{Digest as _, Sha256};
use tool_runtime::ToolContext;
use tool_std::fs::{FsLimits, read};
use tool_std::sandbox::Sandbox;

const MB: usize = 1_000_000;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(dir.path()).unwrap();
    let whole_scan = FsLimits { read_whole_file_scan_max_bytes: u64::MAX, ..FsLimits::default() };
    let mut group = c.benchmark_group("read_first_page");
    group.sample_size(20);
    for size in [MB, 8 * MB, 10 * MB, 50 * MB, 500 * MB] {
        let name = format!("{}mb.txt", size / MB);
        let path = dir.path().join(&name);
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let line = format!("{}\n", "the quick brown fox jumps over the lazy dog 0123456789 ".repeat(2));
        let mut written = 0;
        while written < size {
            file.write_all(line.as_bytes()).unwrap();
            written += line.len();
        }
        file.flush().unwrap();
        drop(file);
        // The rows measure what they claim: a file over the limit gets the page without a hash.
        let page = read(name.clone(), None, None, sandbox.clone(), FsLimits::default(), &ToolContext::new()).unwrap();
        let over = size as u64 > FsLimits::default().read_whole_file_scan_max_bytes;
        assert_eq!(page.contains("content_sha256 not computed"), over, "{name}");

        group.bench_with_input(BenchmarkId::new("first_page", &name), &name, |b, name| {
            b.iter(|| {
                read(name.clone(), None, None, sandbox.clone(), FsLimits::default(), &ToolContext::new()).unwrap()
            })
        });
        group.bench_with_input(BenchmarkId::new("first_page_whole_scan", &name), &name, |b, name| {
            b.iter(|| read(name.clone(), None, None, sandbox.clone(), whole_scan.clone(), &ToolContext::new()).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("whole_file_in_memory", &name), &path, |b, path| {
            b.iter(|| {
                let bytes = std::fs::read(path).unwrap();
                let text = String::from_utf8_lossy(&bytes);
                let lines: Vec<&str> = text.lines().collect();
                let page: String =
                    lines.iter().take(2000).enumerate().map(|(i, l)| format!("{:>5}  {l}\n", i + 1)).collect();
                (page, lines.len(), format!("{:x}", Sha256::digest(&bytes)))
            })
        });
        std::fs::remove_file(&path).unwrap();
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
