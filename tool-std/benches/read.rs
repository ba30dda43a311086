//! `read` of the first page of files of 1, 10 and 50 MB, side by side with reading the whole file
//! into memory first (what `read` did before it streamed: `std::fs::read`, split into lines,
//! SHA-256 of the bytes).
//!
//! Both must still hash the whole file for the `content_sha256` footer and count its lines for
//! the `[showing lines a-b of n]` footer, so neither can be independent of the file's size; the
//! streamed one keeps memory at one 64 KiB chunk plus the page.
//!
//! ```text
//! cargo bench -p tool-std --bench read
//! ```

use std::io::Write as _;

use criterion::{BenchmarkId, Criterion};
use sha2::{Digest as _, Sha256};
use tool_std::fs::{FsLimits, read};
use tool_std::sandbox::Sandbox;

const MB: usize = 1_000_000;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(dir.path()).unwrap();
    let mut group = c.benchmark_group("read_first_page");
    group.sample_size(20);
    for size in [MB, 10 * MB, 50 * MB] {
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

        group.bench_with_input(BenchmarkId::new("streamed", &name), &name, |b, name| {
            b.iter(|| read(name.clone(), None, None, sandbox.clone(), FsLimits::default()).unwrap())
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
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
