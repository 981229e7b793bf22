//! The read-write lock through the tokio client: readers share, a writer excludes everyone else,
//! a release wakes the side that waits, a writer may read (the downgrade) but a reader may not
//! write, and the watchdog keeps a read hold, its timeout keys included, past its lease.
//!
//! Each case runs on the fake (tokio's paused time, one engine on a `TokioClock`) and on the real
//! Redis of `REDIS_URL` (real time, a 3 s watchdog, its own key prefix), against a raw connection
//! that reads the lock's hash and its read holds' timeout keys.

use crate::common;
use crate::support;

use bytes::Bytes;
use lock_core::script::rw;
use lock_core::{
    Backend, KeyLayout, LockClient, LockConfig, Millis, Owner, ReadWriteKeys, RedisBackend, Reply,
    RwSide, UnlockOutcome,
};
use std::time::Duration;
use tokio::time::Instant;

async fn query<B: Backend>(raw: &B, argv: &[&[u8]]) -> Reply {
    let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
    raw.command(&argv).await.expect("a plain read")
}

/// The lock's `mode` field, if any.
async fn mode<B: Backend>(raw: &B, keys: &ReadWriteKeys) -> Option<String> {
    match query(raw, &[b"HGET", &keys.lock.lock, b"mode"]).await {
        Reply::Nil => None,
        Reply::Bulk(b) => Some(String::from_utf8(b.to_vec()).unwrap()),
        other => panic!("HGET gave {other}"),
    }
}

async fn pttl<B: Backend>(raw: &B, key: &[u8]) -> i64 {
    query(raw, &[b"PTTL", key]).await.as_int().unwrap()
}

/// The owner string of a guard's owner on its client.
fn owner_of(client: &LockClient, guard: &lock_core::LockGuard) -> Owner {
    Owner::new(client.client_id(), guard.owner().id().0)
}

async fn readers_share_and_a_writer_waits_for_both<B: Backend>(
    clients: &[LockClient],
    raw: &B,
    keys: &ReadWriteKeys,
) {
    let name = keys.lock.name();
    let first = clients[0].read_write(&name).read().await.unwrap();
    let second = clients[1].read_write(&name).read().await.unwrap();
    assert_eq!(first.read_write_side(), Some(RwSide::Read));
    assert_eq!(mode(raw, keys).await.as_deref(), Some("read"));
    for (client, guard) in [(&clients[0], &first), (&clients[1], &second)] {
        let timeout = rw::read_acquire::timeout_key(keys, &owner_of(client, guard), 1);
        assert!(
            pttl(raw, &timeout).await > 0,
            "each read hold has its timeout key"
        );
    }
    // A writer is refused while anyone reads.
    let refused = clients[2].read_write(&name).write().wait(Duration::ZERO);
    assert!(refused.await.unwrap().is_none());
    let writer = {
        let client = clients[2].clone();
        let name = name.clone();
        tokio::spawn(async move { client.read_write(&name).write().await.unwrap() })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(first.unlock().await.unwrap(), UnlockOutcome::Released);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!writer.is_finished(), "one reader is still in");
    let released = Instant::now();
    assert_eq!(second.unlock().await.unwrap(), UnlockOutcome::Released);
    let writing = writer.await.unwrap();
    // Woken by the last reader's message, not by a round running out.
    assert!(released.elapsed() < Duration::from_secs(2));
    assert_eq!(mode(raw, keys).await.as_deref(), Some("write"));
    assert_eq!(writing.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(mode(raw, keys).await, None);
}

async fn a_write_release_wakes_every_waiting_reader<B: Backend>(
    clients: &[LockClient],
    raw: &B,
    keys: &ReadWriteKeys,
) {
    let name = keys.lock.name();
    let writing = clients[0].read_write(&name).write().await.unwrap();
    let again = writing.reenter(None).await.unwrap();
    let readers: Vec<_> = clients[1..3]
        .iter()
        .map(|client| {
            let (client, name) = (client.clone(), name.clone());
            tokio::spawn(async move { client.read_write(&name).read().await.unwrap() })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(again.unlock().await.unwrap(), UnlockOutcome::StillHeld);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        readers.iter().all(|r| !r.is_finished()),
        "the write is still held"
    );
    let released = Instant::now();
    assert_eq!(writing.unlock().await.unwrap(), UnlockOutcome::Released);
    let mut guards = Vec::new();
    for reader in readers {
        guards.push(reader.await.unwrap());
    }
    assert!(released.elapsed() < Duration::from_secs(2));
    assert_eq!(mode(raw, keys).await.as_deref(), Some("read"));
    for guard in guards {
        guard.unlock().await.unwrap();
    }
    assert_eq!(mode(raw, keys).await, None);
}

async fn a_writer_may_read_and_its_reads_outlive_its_write<B: Backend>(
    clients: &[LockClient],
    raw: &B,
    keys: &ReadWriteKeys,
) {
    let name = keys.lock.name();
    let lock = clients[0].read_write(&name);
    let writing = lock.write().await.unwrap();
    let owner = writing.owner();
    let reading = lock.read().owner(&owner).await.unwrap();
    // Another client can neither read nor write meanwhile.
    let other = clients[1].read_write(&name);
    assert!(other.read().wait(Duration::ZERO).await.unwrap().is_none());
    assert_eq!(writing.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(mode(raw, keys).await.as_deref(), Some("read"), "downgraded");
    let shared = other.read().wait(Duration::ZERO).await.unwrap();
    let shared = shared.expect("a reader comes in after the downgrade");
    assert!(other.write().wait(Duration::ZERO).await.unwrap().is_none());
    shared.unlock().await.unwrap();
    assert_eq!(reading.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(mode(raw, keys).await, None);
}

async fn a_reader_cannot_upgrade<B: Backend>(
    clients: &[LockClient],
    raw: &B,
    keys: &ReadWriteKeys,
) {
    let name = keys.lock.name();
    let lock = clients[0].read_write(&name);
    let reading = lock.read().await.unwrap();
    let owner = reading.owner();
    let upgrade = lock.write().owner(&owner).wait(Duration::from_millis(300));
    assert!(upgrade.await.unwrap().is_none());
    assert_eq!(mode(raw, keys).await.as_deref(), Some("read"));
    assert_eq!(reading.unlock().await.unwrap(), UnlockOutcome::Released);
    // A force unlock deletes the lock only in its own mode.
    let writing = lock.write().await.unwrap();
    assert!(!lock.force_unlock_read().await.unwrap());
    assert!(
        clients[1]
            .read_write(&name)
            .force_unlock_write()
            .await
            .unwrap()
    );
    assert_eq!(mode(raw, keys).await, None);
    drop(writing);
}

/// With a 3 s watchdog, a read hold and its timeout keys live on well past 3 s.
async fn the_watchdog_keeps_a_read_hold_past_its_lease<B: Backend>(
    clients: &[LockClient],
    raw: &B,
    keys: &ReadWriteKeys,
) {
    let name = keys.lock.name();
    let reading = clients[0].read_write(&name).read().await.unwrap();
    let again = reading.reenter(None).await.unwrap();
    let owner = owner_of(&clients[0], &reading);
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert!(reading.is_valid());
    assert!(pttl(raw, &keys.lock.lock).await > 0);
    for count in 1..=2 {
        let timeout = rw::read_acquire::timeout_key(keys, &owner, count);
        assert!(
            pttl(raw, &timeout).await > 0,
            "count {count} is renewed too"
        );
    }
    assert_eq!(again.unlock().await.unwrap(), UnlockOutcome::StillHeld);
    assert_eq!(reading.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(pttl(raw, &keys.lock.lock).await, -2);
}

/// Three clients (a 3 s watchdog) and a raw connection on the fake, on tokio's paused time.
fn on_the_fake() -> (Vec<LockClient>, lock_core::fake::FakeBackend, ReadWriteKeys) {
    let world = support::World::new();
    let config = LockConfig {
        watchdog_timeout: Millis(3000),
        ..LockConfig::default()
    };
    let clients = (0..3)
        .map(|_| world.client_with(config.clone()).0)
        .collect();
    let (raw, _) = world.backend();
    (clients, raw, KeyLayout::default().read_write("prices"))
}

/// Three clients and a raw connection on the real Redis, under a prefix of the test's own.
async fn on_redis(test: &str) -> (Vec<LockClient>, RedisBackend, ReadWriteKeys) {
    let prefix = common::unique_prefix(&format!("rw-{test}"));
    let config = common::short_watchdog(&prefix);
    let url = common::redis_url();
    let connect = || RedisBackend::connect(&url, Duration::from_millis(800));
    let mut clients = Vec::new();
    for _ in 0..3 {
        let backend = connect().await.expect("connect to REDIS_URL");
        clients.push(LockClient::new(backend, config.clone()).unwrap());
    }
    let raw = connect().await.expect("connect to REDIS_URL");
    let keys = KeyLayout::new(&prefix).read_write(&format!("{prefix}:prices"));
    (clients, raw, keys)
}

macro_rules! on_both {
    ($($case:ident),* $(,)?) => {
        mod fake {
            $(
                #[tokio::test(start_paused = true)]
                async fn $case() {
                    let (clients, raw, keys) = super::on_the_fake();
                    super::$case(&clients, &raw, &keys).await;
                }
            )*
        }
        mod redis {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let (clients, raw, keys) = super::on_redis(stringify!($case)).await;
                    super::$case(&clients, &raw, &keys).await;
                }
            )*
        }
    };
}

on_both!(
    readers_share_and_a_writer_waits_for_both,
    a_write_release_wakes_every_waiting_reader,
    a_writer_may_read_and_its_reads_outlive_its_write,
    a_reader_cannot_upgrade,
    the_watchdog_keeps_a_read_hold_past_its_lease,
);
