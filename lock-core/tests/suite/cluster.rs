//! The lock on a real Redis Cluster of 3 primaries and 3 replicas, in real time.
//!
//! The cluster comes from `REDIS_CLUSTER_URLS` (comma-separated node URLs; `scripts/test` starts
//! one and exports it); without it these tests fail, never skip. Each test uses lock names of its
//! own, placed on every shard, and never flushes, fails over or reshards the shared cluster. Unlock
//! messages travel on shard channels (Redis 7.0's sharded pub/sub) unless a test turns them off.
//! Timings are generous, as in `standalone.rs`.

use crate::common;

use common::cluster::{self as topology, client, cluster_urls};
use common::{checks, short_watchdog as config, unique_prefix};
use lock_core::cluster_backend::key_slot;
use lock_core::{
    ClusterBackend, KeyLayout, LockClient, LockConfig, Millis, ShardedPubSub, UnlockOutcome,
};
use proptest::prelude::*;
use redis::AsyncCommands;
use std::time::Duration;

/// The slot ranges each primary serves now, from `CLUSTER SLOTS` on the first node.
async fn shard_ranges() -> Vec<(u16, u16)> {
    let node = redis::Client::open(cluster_urls()[0].as_str()).unwrap();
    let mut conn = node.get_multiplexed_async_connection().await.unwrap();
    let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut ranges: Vec<(u16, u16)> = slots
        .iter()
        .map(|entry| match entry {
            redis::Value::Array(items) => match (&items[0], &items[1]) {
                (redis::Value::Int(start), redis::Value::Int(end)) => (*start as u16, *end as u16),
                other => panic!("unexpected CLUSTER SLOTS range {other:?}"),
            },
            other => panic!("unexpected CLUSTER SLOTS entry {other:?}"),
        })
        .collect();
    ranges.sort_unstable();
    ranges
}

/// One lock name per shard (per slot range), each under `prefix`.
async fn names_on_every_shard(prefix: &str) -> Vec<String> {
    let ranges = shard_ranges().await;
    assert!(
        ranges.len() >= 3,
        "a cluster of 3 primaries serves at least 3 ranges"
    );
    ranges
        .iter()
        .map(|&(start, end)| {
            (0..)
                .map(|i| format!("{prefix}:lock{i}"))
                .find(|name| (start..=end).contains(&key_slot(name.as_bytes())))
                .unwrap()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Every key a lock's scripts touch together (the lock, its channel, its token counter, its
    /// latches) hashes to the lock key's slot, for a name with no braces, or one whose first `{`
    /// opens a non-empty tag. The other names are laid out as Redisson lays them out, and their
    /// keys are spread: a `}` with no `{` before it ends the tag the helper keys wrap the name in,
    /// and an empty or unclosed first tag makes Redis hash each whole key. A cluster answers
    /// CROSSSLOT for those, on both sides of a mixed fleet.
    #[test]
    fn every_key_of_every_lock_shape_shares_one_slot(
        name in prop_oneof!["[a-z:]{1,12}", "[a-z:]{0,4}\\{[a-z:]{1,4}\\}[a-z:{}]{0,4}"],
        prefix in "[a-z]{1,8}",
        request in any::<u128>(),
    ) {
        let keys = KeyLayout::new(prefix).lock(&name);
        let request = lock_core::RequestId(request);
        let slot = key_slot(&keys.lock);
        for other in [
            keys.channel.clone(),
            keys.token.clone(),
            keys.unlock_latch(&request),
            keys.acquire_latch(&request),
        ] {
            prop_assert_eq!(key_slot(&other), slot, "{:?}", other);
        }
    }
}

#[test]
fn names_with_a_stray_brace_are_spread_as_redisson_spreads_them() {
    for name in ["}", "a}b", "a{}b", "a{b"] {
        let keys = KeyLayout::default().lock(name);
        assert_ne!(key_slot(&keys.lock), key_slot(&keys.channel), "{name:?}");
    }
}

#[test]
fn key_slots_are_the_clusters() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let node = redis::Client::open(cluster_urls()[0].as_str()).unwrap();
        let mut conn = node.get_multiplexed_async_connection().await.unwrap();
        for key in [
            "foo",
            "123456789",
            "{user1000}.following",
            "a{}b",
            "",
            "x{y}z{w}",
        ] {
            let theirs: u16 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(key)
                .query_async(&mut conn)
                .await
                .unwrap();
            assert_eq!(key_slot(key.as_bytes()), theirs, "{key:?}");
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_on_every_shard_reenter_release_and_fence() {
    let prefix = unique_prefix("cluster-basic");
    let a = client(config(&prefix)).await;
    let b = client(config(&prefix)).await;
    for name in names_on_every_shard(&prefix).await {
        checks::holds_reenters_fences_and_force_unlocks(&a, &b, &name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_watchdog_pass_renews_holds_on_every_shard() {
    let prefix = unique_prefix("cluster-watchdog");
    let a = client(config(&prefix)).await;
    let names = names_on_every_shard(&prefix).await;
    let mut guards = Vec::new();
    for name in &names {
        guards.push(a.lock(name).await.unwrap());
    }
    // Over two leases long: only renewals (batched across slots) keep them.
    tokio::time::sleep(Duration::from_secs(7)).await;
    for (name, guard) in names.iter().zip(&guards) {
        assert!(a.is_locked(name).await.unwrap(), "{name} expired");
        assert!(guard.is_valid(), "{name} is no longer valid");
    }
    for guard in guards {
        assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_message_on_any_shard_wakes_a_waiter() {
    let prefix = unique_prefix("cluster-wake");
    let a = client(config(&prefix)).await;
    // Rounds of a minute, and a lease of a minute: only the message can wake the waiter in time.
    let b = client(LockConfig {
        wait_round_cap: Some(Millis(60_000)),
        ..config(&prefix)
    })
    .await;
    let b = std::sync::Arc::new(b);
    for name in names_on_every_shard(&prefix).await {
        checks::an_unlock_message_wakes_the_waiter(&a, std::sync::Arc::clone(&b), &name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_writes_only_its_own_slot() {
    // The keys a hold leaves on the cluster all live on the lock key's node: a plain GET routed
    // by the cluster client finds the hash where the lock said it is.
    let prefix = unique_prefix("cluster-keys");
    let a = client(config(&prefix)).await;
    let name = names_on_every_shard(&prefix).await.remove(1);
    let guard = a.lock(&name).await.unwrap();
    let cluster = redis::cluster::ClusterClient::new(cluster_urls()).unwrap();
    let mut conn = cluster.get_async_connection().await.unwrap();
    let held: std::collections::HashMap<String, i64> = conn.hgetall(&name).await.unwrap();
    assert_eq!(held.len(), 1, "one owner holds {name}: {held:?}");
    assert_eq!(held.values().copied().collect::<Vec<_>>(), vec![1]);
    guard.unlock().await.unwrap();
    let gone: bool = conn.exists(&name).await.unwrap();
    assert!(!gone);
}

/// How many subscribers `channel` has on the server at `addr`: as a shard channel
/// (`PUBSUB SHARDNUMSUB`) and as a plain one (`PUBSUB NUMSUB`).
async fn subscribers(addr: &str, channel: &[u8]) -> (i64, i64) {
    let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let count = |kind: &str| {
        let mut cmd = redis::cmd("PUBSUB");
        cmd.arg(kind).arg(channel);
        cmd
    };
    let (_, sharded): (Vec<u8>, i64) = count("SHARDNUMSUB").query_async(&mut conn).await.unwrap();
    let (_, plain): (Vec<u8>, i64) = count("NUMSUB").query_async(&mut conn).await.unwrap();
    (sharded, plain)
}

/// A waiter of `name` on `b`, granted (then unlocked) once `a`'s guard unlocks; checks where it
/// listened meanwhile with `listening(sharded, plain)` on the lock's primary.
async fn wait_behind(
    a: &LockClient,
    b: std::sync::Arc<LockClient>,
    prefix: &str,
    name: &str,
    listening: (i64, i64),
) {
    let guard = a.lock(name).await.unwrap();
    let waiter = {
        let (b, name) = (std::sync::Arc::clone(&b), name.to_owned());
        tokio::spawn(async move { b.try_lock(&name, Duration::from_secs(30), None).await })
    };
    tokio::time::sleep(Duration::from_millis(800)).await;
    let channel = lock_core::KeyLayout::new(prefix).lock(name).channel;
    let (primary, _) = topology::shard_of(key_slot(name.as_bytes())).await;
    assert_eq!(subscribers(&primary.addr, &channel).await, listening);
    guard.unlock().await.unwrap();
    let granted = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the unlock message woke the waiter")
        .unwrap()
        .unwrap()
        .expect("granted");
    granted.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_listens_on_its_lock_s_shard_channel_where_the_lock_lives() {
    let prefix = unique_prefix("cluster-sharded");
    let a = client(config(&prefix)).await;
    let b = std::sync::Arc::new(
        client(LockConfig {
            wait_round_cap: Some(Millis(60_000)),
            ..config(&prefix)
        })
        .await,
    );
    for name in names_on_every_shard(&prefix).await {
        // Redis 7.0 has sharded pub/sub: the waiter's SSUBSCRIBE is on the lock's primary, and
        // the release's SPUBLISH wakes it there.
        wait_behind(&a, std::sync::Arc::clone(&b), &prefix, &name, (1, 0)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_sharded_pub_sub_off_unlock_messages_travel_on_plain_channels() {
    let prefix = unique_prefix("cluster-plain");
    let off = |config| async move {
        let backend = ClusterBackend::connect_with(
            &cluster_urls(),
            Duration::from_millis(800),
            ShardedPubSub::Off,
        )
        .await
        .unwrap();
        LockClient::new(backend, config).unwrap()
    };
    let a = off(config(&prefix)).await;
    let b = std::sync::Arc::new(
        off(LockConfig {
            wait_round_cap: Some(Millis(60_000)),
            ..config(&prefix)
        })
        .await,
    );
    let name = names_on_every_shard(&prefix).await.remove(0);
    // No shard channel subscriber; the plain one is on whichever node the subscriber chose.
    let (primary, _) = topology::shard_of(key_slot(name.as_bytes())).await;
    let subscribed_here = cluster_urls()[0].contains(&primary.addr);
    wait_behind(&a, b, &prefix, &name, (0, i64::from(subscribed_here))).await;
}
