//! The Redis lock store against a real `redis-server`: two stores on one Redis stand for two
//! workers; one holder at a time, waiters in ticket order, limits of N, a dead holder's place free
//! once its lease lapses, hashed keys, and a Redis that is down.

use crate::redis_server;

use std::time::Duration;

use redis_server::{RedisServer, closed_port};
use tool_runtime::locks::{LockGuard, LockStore, RedisLocks};
use tool_runtime::redis::RedisConnection;

const NS: &str = "t:lock";

fn store(server: &RedisServer, lease: Duration) -> RedisLocks {
    RedisLocks::with_lease(RedisConnection::open(&server.url(0)).unwrap(), NS, lease)
}

/// The number of members of the sorted set `part` (`held`, `queue`) of every lock key.
fn count(server: &RedisServer, part: &str) -> usize {
    server
        .cli(&["--scan", "--pattern", &format!("{NS}:*:{part}")])
        .iter()
        .map(|key| server.cli(&["ZCARD", key])[0].parse::<usize>().unwrap())
        .sum()
}

/// Yields (and sleeps 10 ms a round, for Redis to answer) until `done`, at most 500 rounds.
async fn until(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..500 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}

/// Acquires `key` on a task of its own.
fn spawn_acquire(store: &RedisLocks, key: &'static str, permits: u32) -> tokio::task::JoinHandle<LockGuard> {
    let store = store.clone();
    tokio::spawn(async move { store.acquire(key, permits).await.unwrap() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_place_held_on_one_worker_makes_the_other_wait_until_it_is_given_back() {
    let server = RedisServer::start();
    let (a, b) = (store(&server, Duration::from_secs(10)), store(&server, Duration::from_secs(10)));
    let held = a.acquire("path:/w/a.txt", 1).await.unwrap();
    let waiting = spawn_acquire(&b, "path:/w/a.txt", 1);
    assert!(until(|| count(&server, "queue") == 1).await);
    assert_eq!((count(&server, "held"), waiting.is_finished()), (1, false));
    drop(held);
    let second = waiting.await.unwrap();
    assert_eq!((count(&server, "held"), count(&server, "queue")), (1, 0));
    drop(second);
    assert!(until(|| count(&server, "held") == 0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_on_two_workers_are_served_in_ticket_order() {
    let server = RedisServer::start();
    let (a, b) = (store(&server, Duration::from_secs(10)), store(&server, Duration::from_secs(10)));
    let held = a.acquire("k", 1).await.unwrap();
    let first = spawn_acquire(&b, "k", 1);
    assert!(until(|| count(&server, "queue") == 1).await);
    let second = spawn_acquire(&a, "k", 1);
    assert!(until(|| count(&server, "queue") == 2).await);
    drop(held);
    let first = first.await.unwrap();
    assert!(until(|| count(&server, "queue") == 1).await);
    assert!(!second.is_finished());
    drop(first);
    drop(second.await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_of_two_lets_two_workers_in_and_queues_the_third() {
    let server = RedisServer::start();
    let (a, b) = (store(&server, Duration::from_secs(10)), store(&server, Duration::from_secs(10)));
    let one = a.acquire("tool:send", 2).await.unwrap();
    let two = b.acquire("tool:send", 2).await.unwrap();
    let three = spawn_acquire(&a, "tool:send", 2);
    assert!(until(|| count(&server, "queue") == 1).await);
    assert_eq!(count(&server, "held"), 2);
    drop(one);
    drop(three.await.unwrap());
    drop(two);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_place_held_by_a_worker_that_died_is_free_once_its_lease_lapses() {
    let server = RedisServer::start();
    let url = server.url(0);
    // The dying worker: a runtime of its own that takes the place and is then torn down without
    // giving it back (the guard is leaked, the renewal task dies with the runtime).
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let dying = RedisLocks::with_lease(RedisConnection::open(&url).unwrap(), NS, Duration::from_millis(300));
        std::mem::forget(runtime.block_on(dying.acquire("k", 1)).unwrap());
    })
    .join()
    .unwrap();
    assert_eq!(count(&server, "held"), 1);
    let survivor = store(&server, Duration::from_secs(10));
    let held = tokio::time::timeout(Duration::from_secs(20), survivor.acquire("k", 1)).await;
    assert!(matches!(held, Ok(Ok(_))), "the lapsed lease was not freed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_place_outlives_its_lease_while_it_is_renewed() {
    let server = RedisServer::start();
    let (a, b) = (store(&server, Duration::from_secs(1)), store(&server, Duration::from_secs(1)));
    let held = a.acquire("k", 1).await.unwrap();
    let waiting = spawn_acquire(&b, "k", 1);
    // Two and a half leases pass; the holder renews, so the waiter still waits.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!((count(&server, "held"), count(&server, "queue"), waiting.is_finished()), (1, 1, false));
    drop(held);
    drop(waiting.await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_stored_hashed_never_as_the_arguments_value() {
    let server = RedisServer::start();
    let a = store(&server, Duration::from_secs(10));
    let _held = a.acquire("user:sk-live-MARKER", 1).await.unwrap();
    let keys = server.cli(&["--scan", "--pattern", "*"]);
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys.iter().all(|key| !key.contains("MARKER") && key.starts_with("t:lock:")), "{keys:?}");
}

#[tokio::test]
async fn a_redis_that_is_down_fails_the_acquire_with_the_store_named() {
    let url = format!("redis://127.0.0.1:{}/0", closed_port());
    let locks = RedisLocks::new(RedisConnection::open(&url).unwrap());
    let error = locks.acquire("k", 1).await.unwrap_err();
    assert!(
        error.message.starts_with(&format!("the redis lock store at {url} cannot be reached: ")),
        "{}",
        error.message
    );
}
