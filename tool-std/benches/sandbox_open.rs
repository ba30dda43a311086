//! Reading and writing a 4 KiB file (4096 bytes) in the workspace, two ways, in one run:
//!
//! - `handle`: through the sandbox's root handle, as the file tools do now
//!   ([`Sandbox::open_read`]: check, `openat2(RESOLVE_BENEATH)` with `O_NONBLOCK | O_NOFOLLOW`,
//!   `fstat`, clear `O_NONBLOCK`, read; [`Sandbox::replace_file`]: check, parent handle, `openat`
//!   of a temporary file with `O_CREAT | O_EXCL`, write, `fsync`, `renameat`).
//! - `path`: by name, as the tools did before (`Sandbox::resolve`, which canonicalises, then
//!   `std::fs` by the resolved path: `metadata` and `File::open` to read; `create_dir_all`,
//!   `metadata`, a `tempfile` in the directory, write, `fsync` and a rename to write).
//! - `handle_walk`: `handle` with the component walk used where the kernel lacks `openat2`.
//!
//! The workspace is on tmpfs (`/dev/shm`) when there is one: `fsync` costs nothing there, so the
//! write rows compare the opens, renames and checks rather than the disk (on a shared disk the
//! `fsync` of both ways varies by milliseconds from run to run).
//!
//! ```text
//! cargo bench -p tool-std --bench sandbox_open -- --warm-up-time 1 --measurement-time 3
//! ```

use std::io::{Read as _, Write as _};

use criterion::Criterion;
use tool_std::sandbox::Sandbox;

const SIZE: usize = 4096;

/// Reads the file by its resolved path, as `read` did before.
fn read_by_path(sandbox: &Sandbox, path: &str) -> Vec<u8> {
    let real = sandbox.resolve(path).unwrap();
    let metadata = std::fs::metadata(&real).unwrap();
    assert!(metadata.is_file());
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    std::fs::File::open(&real).unwrap().read_to_end(&mut bytes).unwrap();
    bytes
}

/// Replaces the file by its resolved path, as `write` did before.
fn write_by_path(sandbox: &Sandbox, path: &str, bytes: &[u8]) {
    let real = sandbox.resolve(path).unwrap();
    let parent = real.parent().unwrap();
    std::fs::create_dir_all(parent).unwrap();
    let permissions = std::fs::metadata(&real).ok().map(|m| m.permissions());
    let mut temp = tempfile::Builder::new().prefix(".f.").suffix(".tmp").tempfile_in(parent).unwrap();
    temp.write_all(bytes).unwrap();
    if let Some(permissions) = permissions {
        temp.as_file().set_permissions(permissions).unwrap();
    }
    temp.as_file().sync_all().unwrap();
    temp.persist(&real).unwrap();
}

fn read_by_handle(sandbox: &Sandbox, path: &str) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(SIZE);
    sandbox.open_read(path).unwrap().take(SIZE as u64 + 1).read_to_end(&mut bytes).unwrap();
    bytes
}

fn bench(c: &mut Criterion) {
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.unwrap();
    let sandbox = Sandbox::new(dir.path()).unwrap();
    assert!(sandbox.uses_openat2(), "this kernel has no openat2: the `handle` rows would measure the walk");
    let walk = sandbox.clone().without_openat2();
    let content = vec![b'x'; SIZE];
    let path = "src/module/file.txt";
    std::fs::create_dir_all(dir.path().join("src/module")).unwrap();
    std::fs::write(dir.path().join(path), &content).unwrap();
    // The rows measure what they claim: each way reads the same bytes.
    assert_eq!(read_by_handle(&sandbox, path), content);
    assert_eq!(read_by_handle(&walk, path), content);
    assert_eq!(read_by_path(&sandbox, path), content);

    let mut group = c.benchmark_group("sandbox_read_4k");
    group.bench_function("handle", |b| b.iter(|| read_by_handle(&sandbox, path)));
    group.bench_function("handle_walk", |b| b.iter(|| read_by_handle(&walk, path)));
    group.bench_function("path", |b| b.iter(|| read_by_path(&sandbox, path)));
    group.finish();

    let mut group = c.benchmark_group("sandbox_write_4k");
    group.sample_size(30);
    group.bench_function("handle", |b| b.iter(|| sandbox.replace_file(path, &content).unwrap()));
    group.bench_function("handle_walk", |b| b.iter(|| walk.replace_file(path, &content).unwrap()));
    group.bench_function("path", |b| b.iter(|| write_by_path(&sandbox, path, &content)));
    group.finish();
    assert_eq!(std::fs::read(dir.path().join(path)).unwrap(), content);
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
