//! The lock on a real Sentinel-watched primary with one replica, in real time.
//!
//! The group comes from `REDIS_SENTINEL_URLS` (the sentinels' URLs) and `REDIS_SENTINEL_MASTER`
//! (the name they watch); `scripts/test` starts a primary, a replica and 3 sentinels and exports
//! both. Without them these tests fail, never skip. Each test uses lock names of its own and never
//! flushes, fails over or stops the shared group. Timings are generous, as in `standalone.rs`.

use crate::common;

use common::{checks, short_watchdog as config, unique_prefix};
use lock_core::{LockClient, LockConfig, Millis, SentinelBackend, UnlockOutcome};
use std::time::Duration;

fn sentinel_urls() -> Vec<String> {
    common::servers::sentinel().0
}

fn master_name() -> String {
    common::servers::sentinel().1
}

async fn client(config: LockConfig) -> LockClient {
    let backend = SentinelBackend::connect_sentinel(
        &sentinel_urls(),
        &master_name(),
        Duration::from_millis(800),
    )
    .await
    .expect("connect through REDIS_SENTINEL_URLS");
    LockClient::new(backend, config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_primary_found_through_the_sentinels_holds_the_lock() {
    let prefix = unique_prefix("sentinel-basic");
    let name = format!("{prefix}:orders");
    let a = client(config(&prefix)).await;
    let b = client(config(&prefix)).await;
    checks::holds_reenters_fences_and_force_unlocks(&a, &b, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_renews_on_the_primary() {
    let prefix = unique_prefix("sentinel-watchdog");
    let name = format!("{prefix}:orders");
    let a = client(config(&prefix)).await;
    let guard = a.lock(&name).await.unwrap();
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert!(a.is_locked(&name).await.unwrap());
    assert!(guard.is_valid());
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_message_wakes_a_waiter() {
    let prefix = unique_prefix("sentinel-wake");
    let name = format!("{prefix}:orders");
    let a = client(config(&prefix)).await;
    let b = client(LockConfig {
        wait_round_cap: Some(Millis(60_000)),
        ..config(&prefix)
    })
    .await;
    checks::an_unlock_message_wakes_the_waiter(&a, std::sync::Arc::new(b), &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sentinel_settings_are_clear_errors() {
    let Err(err) = SentinelBackend::connect_sentinel(
        &sentinel_urls(),
        "no-such-master",
        Duration::from_millis(800),
    )
    .await
    else {
        panic!("connected to a master name the sentinels do not watch");
    };
    let text = err.to_string();
    assert!(text.contains("cannot connect"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_refuses_unrun_so_the_lock_counts_it_not_applied() {
    use bytes::Bytes;
    use lock_core::{Backend, BackendError, RedisBackend};
    // Ask a sentinel where the replica is, and talk to it directly.
    let sentinel = redis::Client::open(sentinel_urls()[0].as_str()).unwrap();
    let mut conn = sentinel.get_multiplexed_async_connection().await.unwrap();
    let replicas: Vec<std::collections::HashMap<String, String>> = redis::cmd("SENTINEL")
        .arg("REPLICAS")
        .arg(master_name())
        .query_async(&mut conn)
        .await
        .unwrap();
    let replica = &replicas[0];
    let url = format!("redis://{}:{}/", replica["ip"], replica["port"]);
    let backend = RedisBackend::connect(&url, Duration::from_millis(800))
        .await
        .unwrap();
    let key = Bytes::from(unique_prefix("sentinel-readonly"));
    let argv = |parts: &[&[u8]]| {
        parts
            .iter()
            .map(|p| Bytes::copy_from_slice(p))
            .collect::<Vec<_>>()
    };
    for call in [
        argv(&[b"HINCRBY", &key, b"owner", b"1"]),
        // A script's first write is refused the same way (with the script's suffix): nothing ran.
        argv(&[
            b"EVAL",
            b"if redis.call('exists', KEYS[1]) == 0 then redis.call('hincrby', KEYS[1], 'o', 1) end",
            b"1",
            &key,
        ]),
    ] {
        match backend.command(&call).await {
            Err(BackendError::NotApplied(text)) => assert!(text.starts_with("READONLY"), "{text}"),
            other => panic!("a replica's READONLY must be not-applied, got {other:?}"),
        }
    }
}
