//! The tokio client against a real Redis, in real time.
//!
//! The server comes from `REDIS_URL` (`scripts/test` starts one and exports it); without it the
//! suite starts a redis-server of its own (`scripts/servers.rs`). Each test uses its own key prefix and lock names and never flushes.
//! Timings are generous (a loaded 2-core machine): `watchdog_timeout` 3 s, `response_timeout`
//! 500 ms, and no assertion on how fast anything happened beyond "well before it could have
//! happened another way".

use crate::common;

use lock_core::{
    KeyLayout, LockClient, LockConfig, LockError, Millis, RedisBackend, UnlockOutcome,
};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn redis_url() -> String {
    crate::common::redis_url()
}

/// A prefix no other test run uses.
fn unique(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("lockcore-test-{test}-{nanos}-{}", std::process::id())
}

fn config(prefix: &str) -> LockConfig {
    LockConfig {
        watchdog_timeout: Millis(3000),
        response_timeout: Some(Millis(500)),
        key_layout: KeyLayout::new(prefix),
        ..LockConfig::default()
    }
}

async fn client(config: LockConfig) -> LockClient {
    let backend = RedisBackend::connect(&redis_url(), Duration::from_millis(500))
        .await
        .expect("connect to REDIS_URL");
    LockClient::new(backend, config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_keeps_a_lock_past_its_lease() {
    let prefix = unique("watchdog");
    let name = format!("{prefix}:orders");
    let a = client(config(&prefix)).await;
    let guard = a.lock(&name).await.unwrap();
    // Three leases long.
    tokio::time::sleep(Duration::from_secs(9)).await;
    assert!(a.is_locked(&name).await.unwrap());
    assert_eq!(guard.hold_count().await.unwrap(), 1);
    assert!(guard.is_valid());
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    assert!(!a.is_locked(&name).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_message_wakes_a_waiter() {
    let prefix = unique("pubsub");
    let name = format!("{prefix}:orders");
    let a = client(config(&prefix)).await;
    // The waiter's rounds are a minute long, and the holder's lease too: only the message can
    // wake it within the test's bound.
    let b = client(LockConfig {
        wait_round_cap: Some(Millis(60_000)),
        ..config(&prefix)
    })
    .await;
    common::checks::an_unlock_message_wakes_the_waiter(&a, std::sync::Arc::new(b), &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_holders_lock_expires() {
    let prefix = unique("crash");
    let name = format!("{prefix}:orders");
    let a = client(config(&prefix)).await;
    let b = client(config(&prefix)).await;
    let guard = a.lock(&name).await.unwrap();
    a.abort();
    assert_eq!(guard.lost().await, lock_core::HoldState::ClientStopped);
    // The lease is 3 s; allow a loaded machine plenty more.
    let taken = tokio::time::timeout(Duration::from_secs(20), b.lock(&name))
        .await
        .expect("the crashed holder's lock expired")
        .unwrap();
    assert_eq!(taken.hold_count().await.unwrap(), 1);
    taken.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlocking_a_lock_not_held_names_lock_client_and_owner() {
    let prefix = unique("notheld");
    let name = format!("{prefix}:orders");
    let a = client(config(&prefix)).await;
    let b = client(config(&prefix)).await;
    let guard = a
        .lock_with_lease(&name, Duration::from_secs(30))
        .await
        .unwrap();
    let owner = guard.owner().id();
    assert!(b.force_unlock(&name).await.unwrap());
    let err = guard.unlock().await.unwrap_err();
    assert!(matches!(err, LockError::NotLocked { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("attempt to unlock lock"), "{text}");
    assert!(text.contains(&name), "{text}");
    assert!(
        text.contains(&format!("node id: {}", a.client_id())),
        "{text}"
    );
    assert!(text.contains(&format!("owner-id: {owner}")), "{text}");
}
