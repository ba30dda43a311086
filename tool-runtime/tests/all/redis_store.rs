//! The Redis output store against a real `redis-server` (started by each test on a free loopback
//! port, stopped when the test ends): chunked texts with their line index, scopes, the time to live
//! on every key of an entry, the size cap, and a Redis that is down.

use crate::redis_server;

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use redis_server::{RedisServer, closed_port};
use tool_runtime::SystemClock;
use tool_runtime::output::{
    Expiry, GrepQuery, OutputScope, OutputStore, ScopedStore, StoreError, StoreLimits, grep_stored, open_lines,
    put_text,
};
use tool_runtime::redis::{REDIS_CHUNK_BYTES, RedisConnection, RedisStore};

const NS: &str = "t:out";

fn store_with(url: &str, limits: StoreLimits) -> RedisStore {
    RedisStore::with_limits(RedisConnection::open(url).unwrap(), NS, limits, Arc::new(SystemClock))
}

fn store(server: &RedisServer) -> RedisStore {
    store_with(&server.url(0), StoreLimits::new(Duration::from_secs(3600), 1 << 30))
}

/// `line 000000\n` ... : 12 bytes a line.
fn numbered(lines: usize) -> String {
    (0..lines).map(|i| format!("line {i:06}\n")).collect()
}

fn read_all(store: &dyn OutputStore, ref_id: &str, offset: u64) -> String {
    let mut text = String::new();
    store.open_at(ref_id, offset).unwrap().read_to_string(&mut text).unwrap();
    text
}

fn keys_of(server: &RedisServer, ref_id: &str) -> Vec<String> {
    let mut keys = server.cli(&["--raw", "KEYS", &format!("{NS}:{ref_id}*")]);
    keys.retain(|k| !k.is_empty());
    keys.sort();
    keys
}

const ALICE: OutputScope<'static> = OutputScope { session: Some("s1"), principal: Some("alice") };
const BOB: OutputScope<'static> = OutputScope { session: Some("s1"), principal: Some("bob") };

#[test]
fn a_text_of_five_chunks_reads_back_whole_and_from_an_offset_inside_a_chunk() {
    let server = RedisServer::start();
    let store = store(&server);
    let text = numbered(100_000);
    let info = put_text(&store, "big", &text, &[]).unwrap();
    assert_eq!((info.bytes, info.lines, info.parts), (1_200_000, 100_000, 0));
    // The hash, the line index, the parts, and ceil(1,200,000 / 262,144) = 5 chunks.
    assert_eq!(keys_of(&server, "big").len(), 1 + 2 + 5);
    assert_eq!(read_all(&store, "big", 0), text);
    assert_eq!(read_all(&store, "big", 300_001), text[300_001..]);
    assert_eq!(read_all(&store, "big", 1_200_000), "");
}

#[test]
fn a_line_read_starts_at_its_checkpoint_and_a_line_across_two_chunks_reads_whole() {
    let server = RedisServer::start();
    let store = store(&server);
    put_text(&store, "big", &numbered(100_000), &[]).unwrap();
    // Line 77,777 is after checkpoint 75 (line 76,800 at byte 921,600).
    assert_eq!(store.checkpoint("big", 77_777).unwrap(), (76_800, 921_600));
    let mut cursor = open_lines(&store, "big", 77_777).unwrap();
    assert_eq!(cursor.next_line(100).unwrap().unwrap().text, "line 077777");
    // Line 21,845 starts at byte 262,140 and ends in the second chunk.
    assert_eq!(21_845 * 12 / REDIS_CHUNK_BYTES, 0);
    let query = GrepQuery {
        pattern: "line 021845".to_owned(),
        regex: false,
        before: 0,
        after: 0,
        max_matches: 10,
        max_line_bytes: 100,
    };
    let hits = grep_stored(&store, "big", &query).unwrap();
    assert_eq!(hits.matches, 1);
    assert_eq!((hits.blocks[0][0].number, hits.blocks[0][0].text.as_str()), (21_846, "line 021845"));
}

#[test]
fn typed_parts_and_an_empty_text_are_kept() {
    let server = RedisServer::start();
    let store = store(&server);
    let parts = vec![tool_runtime::ContentPart::Text { text: "a part".to_owned() }];
    let info = store.put("empty", &mut &b""[..], &parts).unwrap();
    assert_eq!((info.bytes, info.lines, info.parts), (0, 0, 1));
    assert_eq!(store.parts("empty").unwrap(), parts);
    assert_eq!(read_all(&store, "empty", 0), "");
}

#[test]
fn another_principal_or_session_reads_exactly_like_an_unknown_ref() {
    let server = RedisServer::start();
    let store = store(&server);
    let carol = OutputScope { session: Some("s2"), principal: Some("alice") };
    ScopedStore::new(&store, ALICE).put("mine", &mut &b"secret\n"[..], &[]).unwrap();
    assert_eq!(read_all(&ScopedStore::new(&store, ALICE), "mine", 0), "secret\n");
    for other in [BOB, carol, OutputScope::NONE] {
        let seen = ScopedStore::new(&store, other);
        assert_eq!(seen.info("mine").unwrap_err(), StoreError::NotFound { ref_id: "mine".to_owned() });
        assert_eq!(
            seen.open_at("mine", 0).err().unwrap().to_string(),
            seen.open_at("unknown", 0).err().unwrap().to_string().replace("unknown", "mine")
        );
    }
}

#[test]
fn every_key_of_an_entry_has_the_time_to_live_and_a_use_sets_it_again_on_all() {
    let server = RedisServer::start();
    let store = store_with(&server.url(0), StoreLimits::new(Duration::from_secs(100), 1 << 30));
    ScopedStore::new(&store, ALICE).put("ttl", &mut numbered(50_000).as_bytes(), &[]).unwrap();
    let keys = keys_of(&server, "ttl");
    assert_eq!(keys.len(), 1 + 2 + 3);
    let pttl = |key: &str| server.cli(&["PTTL", key])[0].parse::<i64>().unwrap();
    for key in &keys {
        assert!((1..=100_000).contains(&pttl(key)), "{key}: {}", pttl(key));
        server.cli(&["PEXPIRE", key, "5000"]);
    }
    // A reader of another scope does not count as a use.
    let _ = ScopedStore::new(&store, BOB).info("ttl");
    assert!(keys.iter().all(|k| pttl(k) <= 5000));
    ScopedStore::new(&store, ALICE).info("ttl").unwrap();
    for key in &keys {
        assert!(pttl(key) > 5000, "{key} was not touched: {}", pttl(key));
    }
}

#[test]
fn an_output_whose_keys_expired_reads_as_expired_to_its_scope_and_unknown_to_others() {
    let server = RedisServer::start();
    let store = store(&server);
    ScopedStore::new(&store, ALICE).put("old", &mut &b"x\n"[..], &[]).unwrap();
    for key in keys_of(&server, "old") {
        server.cli(&["PEXPIRE", &key, "1"]);
    }
    for _ in 0..400 {
        if keys_of(&server, "old").is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(keys_of(&server, "old"), Vec::<String>::new());
    assert_eq!(
        ScopedStore::new(&store, BOB).info("old").unwrap_err(),
        StoreError::NotFound { ref_id: "old".to_owned() }
    );
    assert_eq!(
        ScopedStore::new(&store, ALICE).info("old").unwrap_err(),
        StoreError::Expired { ref_id: "old".to_owned(), why: Expiry::TimeToLive }
    );
    assert_eq!(store.entries().count().unwrap(), 0);
    assert_eq!(store.entries().total_bytes().unwrap(), 0);
}

#[test]
fn a_store_capped_at_1_mib_holds_at_most_the_cap_plus_one_entry_and_keeps_the_newest() {
    let server = RedisServer::start();
    let cap = 1024 * 1024;
    let store = store_with(&server.url(0), StoreLimits::new(Duration::from_secs(3600), cap));
    let text = "y".repeat(2000) + "\n";
    let mut largest_entry = 0;
    for i in 0..2000 {
        let before = store.entries().total_bytes().unwrap();
        ScopedStore::new(&store, ALICE).put(&format!("o{i}"), &mut text.as_bytes(), &[]).unwrap();
        let after = store.entries().total_bytes().unwrap();
        largest_entry = largest_entry.max(after.saturating_sub(before));
        assert!(after <= cap + largest_entry.max(2001 + 256 + 64), "{after} bytes after output {i}");
    }
    for i in 1990..2000 {
        assert_eq!(read_all(&ScopedStore::new(&store, ALICE), &format!("o{i}"), 0), text);
    }
    assert_eq!(
        ScopedStore::new(&store, ALICE).info("o0").unwrap_err(),
        StoreError::Expired { ref_id: "o0".to_owned(), why: Expiry::SizeCap }
    );
    assert_eq!(ScopedStore::new(&store, BOB).info("o0").unwrap_err(), StoreError::NotFound { ref_id: "o0".to_owned() });
    // The keys of evicted outputs are gone, not only their bookkeeping.
    assert_eq!(keys_of(&server, "o0"), Vec::<String>::new());
}

#[test]
fn a_replaced_output_reads_as_the_new_one_and_its_old_chunks_are_deleted() {
    let server = RedisServer::start();
    let store = store(&server);
    put_text(&store, "r", &numbered(50_000), &[]).unwrap();
    put_text(&store, "r", "new\n", &[]).unwrap();
    assert_eq!(read_all(&store, "r", 0), "new\n");
    assert_eq!(keys_of(&server, "r").len(), 1 + 2 + 1);
    assert_eq!(store.entries().count().unwrap(), 1);
}

#[test]
fn a_ref_id_with_a_slash_is_refused_before_redis_is_asked() {
    let store =
        store_with(&format!("redis://127.0.0.1:{}/0", closed_port()), StoreLimits::new(Duration::from_secs(1), 1));
    assert_eq!(store.info("a/b").unwrap_err(), StoreError::InvalidRefId { ref_id: "a/b".to_owned() });
}

#[test]
fn a_redis_that_is_down_is_an_error_naming_the_store_and_what_to_check() {
    let url = format!("redis://127.0.0.1:{}/0", closed_port());
    let store = store_with(&url, StoreLimits::new(Duration::from_secs(60), 1 << 20));
    let StoreError::Io { ref_id, message } = put_text(&store, "x", "text", &[]).unwrap_err() else {
        panic!("not an I/O error")
    };
    assert_eq!(ref_id, "x");
    let prefix = format!("the redis output store at {url} failed (");
    let suffix = "); check that redis-server runs there and accepts connections, or choose another store with \
                  `--store` or `TOOL_STORE`";
    assert!(message.starts_with(&prefix) && message.ends_with(suffix), "{message}");
    assert!(ScopedStore::new(&store, ALICE).info("x").unwrap_err().to_string().contains(&prefix));
}

#[test]
fn a_url_that_is_not_a_redis_url_is_refused_with_the_form_to_use() {
    let message = RedisConnection::open("redis://host:notaport/0").unwrap_err();
    assert!(message.starts_with("`redis://host:notaport/0` is not a redis url ("), "{message}");
    assert!(message.ends_with("); write it as redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0"), "{message}");
}
