//! A real `CLUSTER FAILOVER` under a held lock, on the cluster `scripts/test` starts.
//!
//! In a test binary of its own, so that no other test's locks are on the shard while it changes
//! hands (cargo runs test binaries one after another). It fails the shard of its own lock over to
//! the replica and back, so the cluster has its first shape again when the test ends, and it never
//! flushes anything. A coordinated failover (`CLUSTER FAILOVER` without FORCE) waits until the
//! replica has every write, so the lock must survive it: the holder keeps renewing through the
//! redirection, a waiter on the shard is woken by the unlock message after it, and the tokens keep
//! growing.

mod common;

use common::cluster::{cluster_urls, fail_over_to, nodes, shard_of};
use common::unique_prefix;
use lock_core::cluster_backend::key_slot;
use lock_core::{ClusterBackend, KeyLayout, LockClient, LockConfig, Millis, UnlockOutcome};
use std::time::Duration;

fn config(prefix: &str) -> LockConfig {
    LockConfig {
        watchdog_timeout: Millis(3000),
        response_timeout: Some(Millis(800)),
        key_layout: KeyLayout::new(prefix),
        ..LockConfig::default()
    }
}

async fn client(config: LockConfig) -> LockClient {
    let backend = ClusterBackend::connect(&cluster_urls(), Duration::from_millis(800))
        .await
        .expect("connect to REDIS_CLUSTER_URLS");
    LockClient::new(backend, config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinated_failover_under_a_hold_keeps_the_lock_and_wakes_the_waiter() {
    let prefix = unique_prefix("cluster-failover");
    let name = format!("{prefix}:orders");
    let (primary, replica) = shard_of(key_slot(name.as_bytes())).await;

    let a = client(config(&prefix)).await;
    let b = client(LockConfig {
        wait_round_cap: Some(Millis(60_000)),
        ..config(&prefix)
    })
    .await;
    let (guard, first_token) = a.lock_fenced(&name).await.unwrap();
    let waiter = {
        let name = name.clone();
        tokio::spawn(async move { b.lock_fenced(&name).await.map(|held| (held, b)) })
    };

    fail_over_to(&replica).await;
    // Two leases after the failover: only renewals through the new primary keep the lock.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert!(
        a.is_locked(&name).await.unwrap(),
        "the lock expired across the failover"
    );
    assert!(
        guard.is_valid(),
        "renewals on the new primary were not confirmed"
    );
    assert!(!waiter.is_finished(), "the waiter got a held lock");

    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    let ((second, second_token), b) = tokio::time::timeout(Duration::from_secs(20), waiter)
        .await
        .expect("the waiter was not woken after the failover")
        .unwrap()
        .unwrap();
    assert!(
        second_token > first_token,
        "tokens grow across the failover ({first_token} then {second_token})"
    );
    second.unlock().await.unwrap();
    drop(b);

    // Give the cluster its first shape back.
    let back = nodes()
        .await
        .into_iter()
        .find(|n| n.id == primary.id)
        .unwrap();
    fail_over_to(&back).await;
}
