//! Output stores stay bounded: a time to live since last use and a size cap, least recently used
//! first out; a ref of the caller's scope that went reads as expired, with what to do.

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use tool_runtime::output::{
    DEFAULT_OUTPUT_LIMITS, Expiry, FILE_ENTRY_OVERHEAD, FileStore, MEMORY_ENTRY_OVERHEAD, MemoryStore, OutputScope,
    OutputStore, ScopedStore, StoreError, StoreLimits, StoredInfo,
};
use tool_runtime::{Clock, ContentPart, FixedClock};

const MIB: u64 = 1024 * 1024;

fn clock() -> Arc<FixedClock> {
    Arc::new(FixedClock::new(UNIX_EPOCH + Duration::from_secs(1_800_000_000)))
}

/// A store of each kind with these limits and clock: its name, the store, how many bytes it holds
/// by its own count, and (for the file store) its root.
struct Bounded {
    kind: &'static str,
    store: Arc<dyn OutputStore>,
    total: Box<dyn Fn() -> u64>,
    root: Option<std::path::PathBuf>,
}

fn bounded(limits: StoreLimits, clock: &Arc<FixedClock>, dir: &tempfile::TempDir) -> Vec<Bounded> {
    let memory = Arc::new(MemoryStore::with_limits(limits, clock.clone()));
    let root = dir.path().join("cache");
    let files = Arc::new(FileStore::open(&root, limits, clock.clone()).unwrap());
    let (m, f) = (memory.clone(), files.clone());
    vec![
        Bounded { kind: "memory", store: memory, total: Box::new(move || m.total_bytes()), root: None },
        Bounded { kind: "file", store: files, total: Box::new(move || f.total_bytes()), root: Some(root) },
    ]
}

fn put(store: &dyn OutputStore, scope: OutputScope<'_>, ref_id: &str, text: &str) {
    store.put_scoped(scope, ref_id, &mut text.as_bytes(), &[]).unwrap();
}

fn read(store: &dyn OutputStore, ref_id: &str) -> Result<String, StoreError> {
    let mut text = String::new();
    store.open_at(ref_id, 0)?.read_to_string(&mut text).unwrap();
    Ok(text)
}

/// The bytes of every file under `root` (the file store's entries), and
/// [`FILE_ENTRY_OVERHEAD`] per entry.
fn bytes_on_disk(root: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        total += FILE_ENTRY_OVERHEAD;
        for file in std::fs::read_dir(&path).unwrap() {
            total += file.unwrap().metadata().unwrap().len();
        }
    }
    total
}

const ALICE: OutputScope<'static> = OutputScope { session: Some("s1"), principal: Some("alice") };
const BOB: OutputScope<'static> = OutputScope { session: Some("s1"), principal: Some("bob") };

/// A temp dir in memory when the system has one (`/dev/shm`): the file store flushes every output
/// to disk, which on a disk makes 2,000 writes take most of a minute; the bounds are the same.
fn memory_backed_tempdir() -> tempfile::TempDir {
    match std::path::Path::new("/dev/shm") {
        shm if shm.is_dir() => tempfile::tempdir_in(shm).unwrap(),
        _ => tempfile::tempdir().unwrap(),
    }
}

#[test]
fn two_thousand_outputs_into_a_store_capped_at_1_mib_never_exceed_the_cap_plus_one_entry() {
    let dir = memory_backed_tempdir();
    let clock = clock();
    for b in bounded(StoreLimits::new(Duration::from_secs(3600), MIB), &clock, &dir) {
        let mut largest = 0u64;
        for i in 0..2_000u64 {
            // 1 to 4 KiB of lines each, so that entries differ in size.
            let text: String =
                (0..(16 + i % 48)).map(|l| format!("output {i:04} line {l:03} {}\n", "x".repeat(40))).collect();
            // The bytes an entry adds beside its text: index (32), parts (`[]`, 2), scope (under
            // 64) and the store's own per entry.
            let entry = text.len() as u64 + 32 + 2 + 64 + FILE_ENTRY_OVERHEAD.max(MEMORY_ENTRY_OVERHEAD);
            largest = largest.max(entry);
            put(&*b.store, ALICE, &format!("r{i}"), &text);
            let total = (b.total)();
            assert!(total <= MIB + entry, "{}: {total} bytes after output {i}", b.kind);
            // The disk holds what the store counts (looked at every 25th output: a full listing each).
            if let Some(root) = b.root.as_ref().filter(|_| i % 25 == 24) {
                assert_eq!(bytes_on_disk(root), total, "{}: after output {i}", b.kind);
            }
        }
        assert!(largest < 8 * 1024);
        // The newest outputs, the last 100 (at most 800 KiB), are all there, whole.
        for i in 1_900..2_000u64 {
            let text = read(&*b.store, &format!("r{i}")).unwrap();
            assert!(text.starts_with(&format!("output {i:04} line 000 ")), "{}: r{i}", b.kind);
            assert_eq!(text.lines().count() as u64, 16 + i % 48);
        }
        // The oldest went first.
        assert_eq!(read(&*b.store, "r0"), Err(StoreError::NotFound { ref_id: "r0".to_owned() }), "{}", b.kind);
    }
}

#[test]
fn a_read_makes_an_output_the_last_to_be_evicted() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    // Three outputs of 20,000 bytes fit in either store (with its bytes per entry), four do not.
    for b in bounded(StoreLimits::new(Duration::from_secs(3600), 75_000), &clock, &dir) {
        let text = "y".repeat(20_000);
        for r in ["a", "b", "c"] {
            put(&*b.store, ALICE, r, &text);
        }
        read(&*b.store, "a").unwrap();
        put(&*b.store, ALICE, "d", &text);
        let kept: Vec<bool> = ["a", "b", "c", "d"].iter().map(|r| read(&*b.store, r).is_ok()).collect();
        assert_eq!(kept, [true, false, true, true], "{}", b.kind);
    }
}

#[test]
fn an_output_larger_than_the_cap_stays_while_smaller_outputs_come_and_go_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    // A cap of 20,000 bytes: an output of 50,000 is larger, one of 500 (with the store's bytes
    // per entry, up to 4,096 for a file) is not.
    for b in bounded(StoreLimits::new(Duration::from_secs(3600), 20_000), &clock, &dir) {
        put(&*b.store, ALICE, "small", "s\n");
        put(&*b.store, ALICE, "big", &"b".repeat(50_000));
        let with_big = (b.total)();
        // What the calls that page the big output store: each small, together over the cap.
        for i in 0..60 {
            put(&*b.store, ALICE, &format!("page{i}"), &"p".repeat(500));
            assert!((b.total)() <= 20_000 + with_big, "{}: {} bytes after page {i}", b.kind, (b.total)());
        }
        assert_eq!(read(&*b.store, "big").unwrap().len(), 50_000, "{}", b.kind);
        assert_eq!(read(&*b.store, "page59").unwrap().len(), 500, "{}", b.kind);
        // The small outputs were evicted among themselves, oldest first.
        let error = ScopedStore::new(&*b.store, ALICE).info("small").unwrap_err();
        assert_eq!(error, StoreError::Expired { ref_id: "small".to_owned(), why: Expiry::SizeCap }, "{}", b.kind);
        assert!(read(&*b.store, "page0").is_err(), "{}", b.kind);
    }
}

#[test]
fn a_second_output_larger_than_the_cap_replaces_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    for b in bounded(StoreLimits::new(Duration::from_secs(3600), 20_000), &clock, &dir) {
        put(&*b.store, ALICE, "first", &"1".repeat(50_000));
        put(&*b.store, ALICE, "small", "s\n");
        put(&*b.store, ALICE, "second", &"2".repeat(30_000));
        let error = ScopedStore::new(&*b.store, ALICE).info("first").unwrap_err();
        assert_eq!(error, StoreError::Expired { ref_id: "first".to_owned(), why: Expiry::SizeCap }, "{}", b.kind);
        assert_eq!(read(&*b.store, "second").unwrap().len(), 30_000, "{}", b.kind);
        assert_eq!(read(&*b.store, "small").unwrap(), "s\n", "{}", b.kind);
        // The disk holds the second and the small one only.
        if let Some(root) = &b.root {
            assert_eq!(bytes_on_disk(root), (b.total)(), "{}", b.kind);
        }
    }
}

#[test]
fn an_output_larger_than_the_cap_expires_after_its_time_to_live() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    for b in bounded(StoreLimits::new(Duration::from_secs(60), 20_000), &clock, &dir) {
        let start = clock.now();
        put(&*b.store, ALICE, "big", &"b".repeat(50_000));
        clock.set(start + Duration::from_secs(61));
        let error = ScopedStore::new(&*b.store, ALICE).info("big").unwrap_err();
        assert_eq!(error, StoreError::Expired { ref_id: "big".to_owned(), why: Expiry::TimeToLive }, "{}", b.kind);
        assert_eq!((b.total)(), 0, "{}", b.kind);
        // The next output larger than the cap is held again.
        put(&*b.store, ALICE, "big2", &"c".repeat(50_000));
        put(&*b.store, ALICE, "small", "s\n");
        assert_eq!(read(&*b.store, "big2").unwrap().len(), 50_000, "{}", b.kind);
    }
}

#[test]
fn an_evicted_ref_of_the_callers_scope_reads_as_evicted_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    for b in bounded(StoreLimits::new(Duration::from_secs(3600), 1500), &clock, &dir) {
        put(&*b.store, ALICE, "old", &"o".repeat(1000));
        put(&*b.store, ALICE, "new", &"n".repeat(1000));
        let error = ScopedStore::new(&*b.store, ALICE).info("old").unwrap_err();
        assert_eq!(error, StoreError::Expired { ref_id: "old".to_owned(), why: Expiry::SizeCap }, "{}", b.kind);
        assert_eq!(
            error.to_string(),
            "the tool output under ref_id `old` is no longer cached (evicted as the least recently used when the \
             store was full); call the tool again to get it"
        );
    }
}

#[test]
fn an_evicted_ref_of_another_scope_reads_exactly_as_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    for b in bounded(StoreLimits::new(Duration::from_secs(3600), 1500), &clock, &dir) {
        put(&*b.store, ALICE, "old", &"o".repeat(1000));
        put(&*b.store, ALICE, "new", &"n".repeat(1000));
        let empty = MemoryStore::new();
        let unknown = ScopedStore::new(&empty, BOB).info("old").unwrap_err();
        let as_bob = ScopedStore::new(&*b.store, BOB).info("old").unwrap_err();
        assert_eq!((as_bob.to_string(), &as_bob), (unknown.to_string(), &unknown), "{}", b.kind);
    }
}

#[test]
fn an_output_not_used_for_longer_than_the_time_to_live_expires() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    for b in bounded(StoreLimits::new(Duration::from_secs(60), MIB), &clock, &dir) {
        let start = clock.now();
        put(&*b.store, ALICE, "t", "kept\n");
        clock.set(start + Duration::from_secs(50));
        // A use at 50 s: the time to live counts from here.
        assert_eq!(ScopedStore::new(&*b.store, ALICE).info("t").unwrap().bytes, 5, "{}", b.kind);
        clock.set(start + Duration::from_secs(110));
        assert_eq!(read(&*b.store, "t").unwrap(), "kept\n", "{}: 60 s after its last use", b.kind);
        clock.set(start + Duration::from_secs(171));
        let error = ScopedStore::new(&*b.store, ALICE).info("t").unwrap_err();
        assert_eq!(error, StoreError::Expired { ref_id: "t".to_owned(), why: Expiry::TimeToLive }, "{}", b.kind);
        assert_eq!(
            error.to_string(),
            "the tool output under ref_id `t` is no longer cached (not used for longer than its time to live); call \
             the tool again to get it"
        );
        assert_eq!((b.total)(), 0, "{}", b.kind);
    }
}

#[test]
fn expired_outputs_are_dropped_by_the_next_write_without_being_read() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    for b in bounded(StoreLimits::new(Duration::from_secs(60), MIB), &clock, &dir) {
        put(&*b.store, ALICE, "a", "a\n");
        let one = (b.total)();
        put(&*b.store, ALICE, "b", "b\n");
        clock.advance(Duration::from_secs(61));
        put(&*b.store, ALICE, "c", "c\n");
        assert_eq!((b.total)(), one, "{}: only c is left", b.kind);
        if let Some(root) = &b.root {
            let mut left: Vec<String> =
                std::fs::read_dir(root).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
            left.sort();
            assert_eq!(left, ["c"]);
        }
    }
}

#[test]
fn a_file_store_opened_again_counts_what_is_on_disk_and_prunes_what_expired_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let limits = StoreLimits::new(Duration::from_secs(60), MIB);
    let first = FileStore::open(dir.path(), limits, clock.clone()).unwrap();
    put(&first, ALICE, "old", "old\n");
    clock.advance(Duration::from_secs(40));
    put(&first, ALICE, "new", "new\n");
    let held = first.total_bytes();
    drop(first);

    let again = FileStore::open(dir.path(), limits, clock.clone()).unwrap();
    assert_eq!((again.len(), again.total_bytes()), (2, held));
    assert_eq!(ScopedStore::new(&again, ALICE).info("old").unwrap().bytes, 4);
    assert_eq!(ScopedStore::new(&again, BOB).info("old"), Err(StoreError::NotFound { ref_id: "old".to_owned() }));

    clock.advance(Duration::from_secs(70));
    let later = FileStore::open(dir.path(), limits, clock.clone()).unwrap();
    assert_eq!(later.len(), 0);
    assert!(!dir.path().join("new").exists());
}

#[test]
fn an_output_another_process_wrote_is_adopted_on_first_read() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let ours = FileStore::open(dir.path(), DEFAULT_OUTPUT_LIMITS, clock.clone()).unwrap();
    let theirs = FileStore::open(dir.path(), DEFAULT_OUTPUT_LIMITS, clock.clone()).unwrap();
    put(&theirs, ALICE, "shared", "from the other\n");
    assert_eq!(ScopedStore::new(&ours, BOB).info("shared"), Err(StoreError::NotFound { ref_id: "shared".to_owned() }));
    assert_eq!(read(&ScopedStore::new(&ours, ALICE), "shared").unwrap(), "from the other\n");
    assert_eq!(ours.total_bytes(), theirs.total_bytes());
}

#[test]
fn the_default_limits_are_24_hours_and_256_mib() {
    assert_eq!(DEFAULT_OUTPUT_LIMITS, StoreLimits::new(Duration::from_secs(86_400), 268_435_456));
}

#[test]
fn a_temp_directory_left_by_a_write_that_never_finished_is_deleted_once_older_than_the_time_to_live() {
    let dir = tempfile::tempdir().unwrap();
    let limits = StoreLimits::new(Duration::from_secs(60), MIB);
    let left = dir.path().join(".tmp-r1-1-1");
    std::fs::create_dir(&left).unwrap();
    let written = std::fs::metadata(&left).unwrap().modified().unwrap();
    let clock = Arc::new(FixedClock::new(written + Duration::from_secs(30)));
    FileStore::open(dir.path(), limits, clock.clone()).unwrap();
    assert!(left.exists(), "30 s old: it may still be being written");
    clock.set(written + Duration::from_secs(61));
    FileStore::open(dir.path(), limits, clock).unwrap();
    assert!(!left.exists());
}

#[test]
fn reads_from_another_scope_do_not_keep_an_output_alive() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    for b in bounded(StoreLimits::new(Duration::from_secs(60), MIB), &clock, &dir) {
        put(&*b.store, ALICE, "mine", "mine\n");
        for _ in 0..3 {
            clock.advance(Duration::from_secs(25));
            let error = ScopedStore::new(&*b.store, BOB).info("mine").unwrap_err();
            assert_eq!(error, StoreError::NotFound { ref_id: "mine".to_owned() }, "{}", b.kind);
        }
        // 75 s after Alice's last use, whatever Bob did.
        let error = ScopedStore::new(&*b.store, ALICE).info("mine").unwrap_err();
        assert_eq!(error, StoreError::Expired { ref_id: "mine".to_owned(), why: Expiry::TimeToLive }, "{}", b.kind);
    }
}

#[test]
fn the_least_recently_used_of_several_scopes_goes_first_whatever_its_scope() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    // Two outputs of 20,000 bytes fit in either store (with its bytes per entry), three do not.
    for b in bounded(StoreLimits::new(Duration::from_secs(3600), 50_000), &clock, &dir) {
        put(&*b.store, ALICE, "a", &"a".repeat(20_000));
        put(&*b.store, BOB, "b", &"b".repeat(20_000));
        put(&*b.store, ALICE, "c", &"c".repeat(20_000));
        assert!(ScopedStore::new(&*b.store, ALICE).info("a").is_err(), "{}", b.kind);
        assert_eq!(ScopedStore::new(&*b.store, BOB).info("b").unwrap().bytes, 20_000, "{}", b.kind);
        assert_eq!(ScopedStore::new(&*b.store, ALICE).info("c").unwrap().bytes, 20_000, "{}", b.kind);
    }
}

/// A memory store that counts the scope checks asked of it.
struct CountingChecks {
    inner: MemoryStore,
    checks: std::sync::atomic::AtomicUsize,
}

impl CountingChecks {
    fn new() -> Self {
        Self::with_limits(DEFAULT_OUTPUT_LIMITS)
    }

    fn with_limits(limits: StoreLimits) -> Self {
        Self { inner: MemoryStore::with_limits(limits, clock()), checks: 0.into() }
    }

    fn checks(&self) -> usize {
        self.checks.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl OutputStore for CountingChecks {
    fn put_scoped(
        &self,
        scope: OutputScope<'_>,
        ref_id: &str,
        text: &mut dyn Read,
        parts: &[ContentPart],
    ) -> Result<StoredInfo, StoreError> {
        self.inner.put_scoped(scope, ref_id, text, parts)
    }

    fn check_scope(&self, ref_id: &str, scope: OutputScope<'_>) -> Result<(), StoreError> {
        self.checks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.check_scope(ref_id, scope)
    }

    fn info(&self, ref_id: &str) -> Result<StoredInfo, StoreError> {
        self.inner.info(ref_id)
    }

    fn open_at(&self, ref_id: &str, offset: u64) -> Result<Box<dyn Read + Send>, StoreError> {
        self.inner.open_at(ref_id, offset)
    }

    fn checkpoint(&self, ref_id: &str, line: u64) -> Result<(u64, u64), StoreError> {
        self.inner.checkpoint(ref_id, line)
    }

    fn parts(&self, ref_id: &str) -> Result<Vec<ContentPart>, StoreError> {
        self.inner.parts(ref_id)
    }
}

#[test]
fn a_view_checks_a_ref_once_however_many_reads_it_makes_of_it() {
    let store = CountingChecks::new();
    put(&store, ALICE, "a", "one\ntwo\n");
    put(&store, ALICE, "b", "three\n");
    let view = ScopedStore::new(&store, ALICE);
    assert_eq!(view.info("a").unwrap().lines, 2);
    assert_eq!(view.checkpoint("a", 1).unwrap(), (0, 0));
    assert_eq!(read(&view, "a").unwrap(), "one\ntwo\n");
    assert_eq!(store.checks(), 1);
    assert_eq!(read(&view, "b").unwrap(), "three\n");
    assert_eq!(store.checks(), 2);
    // A new view (the next tool call) checks again: that check is the ref's use.
    assert_eq!(ScopedStore::new(&store, ALICE).info("a").unwrap().bytes, 8);
    assert_eq!(store.checks(), 3);
}

#[test]
fn a_view_never_remembers_a_failed_check() {
    let store = CountingChecks::new();
    put(&store, ALICE, "a", "mine\n");
    let view = ScopedStore::new(&store, BOB);
    for _ in 0..2 {
        assert_eq!(view.info("a"), Err(StoreError::NotFound { ref_id: "a".to_owned() }));
    }
    assert_eq!(store.checks(), 2);
}

#[test]
fn a_view_remembers_at_most_eight_refs_and_checks_the_others_each_time() {
    let store = CountingChecks::new();
    let ids: Vec<String> = (0..10).map(|i| format!("r{i}")).collect();
    for id in &ids {
        put(&store, ALICE, id, "x\n");
    }
    let view = ScopedStore::new(&store, ALICE);
    for _ in 0..2 {
        for id in &ids {
            assert_eq!(view.info(id).unwrap().bytes, 2);
        }
    }
    assert_eq!(ScopedStore::REMEMBERED, 8);
    // 10 checks on the first pass, then 2 for the refs beyond the eight remembered.
    assert_eq!(store.checks(), 12);
}

#[test]
fn a_ref_let_go_after_its_check_reads_as_expired_in_the_same_view() {
    // Room for one 10-byte output: the second evicts the first.
    let cap = MEMORY_ENTRY_OVERHEAD + 10 + ALICE.session.unwrap().len() as u64 + ALICE.principal.unwrap().len() as u64;
    let store = CountingChecks::with_limits(StoreLimits::new(Duration::from_secs(3600), cap));
    put(&store, ALICE, "a", "gone soon\n");
    let view = ScopedStore::new(&store, ALICE);
    assert_eq!(view.info("a").unwrap().bytes, 10);
    put(&store, ALICE, "b", "the next\n\n");
    assert_eq!(view.info("a"), Err(StoreError::Expired { ref_id: "a".to_owned(), why: Expiry::SizeCap }));
    assert_eq!(store.checks(), 1);
}
